"""The softmax model (Block E's second answer) by hand: the per-pass costs fitted on small arrays,
the prediction from them and the byte model, and that the prediction never moves with the times
it is judged against (the sweep's and the anatomy's at the sweep's T)."""
import copy

import pytest

import perf

C0, C_ROW, C_EL, GBPS = 1e-6, 10e-9, 0.2e-9, 50.0  # a call, a row, an element; a copy's GB/s


def batch(seconds):
    return {"seconds": seconds, "batch_s": 0.05, "canary_ratio": 1.0}


def workers(T=64, pass_s=7e-6):
    """Two warm workers: every pass on every fit shape exactly C0 + C_ROW rows + C_EL elements
    (h = 4), each pass at T taking pass_s, every copy at GBPS."""
    fit = {f"{r}x{L}": {f"softmax/{p}": batch(C0 + C_ROW * 4 * r + C_EL * 4 * r * L)
                        for p in perf.PASSES} for r, L in perf.FIT_SHAPES}
    at_T = {str(T): {f"softmax/{p}": batch(pass_s) for p in perf.PASSES}}
    copies = {str(b): [{"rate": GBPS, "canary_ratio": 1.0}]
              for step, b in perf.pass_bytes(T, 64, 4).items() if step.startswith("softmax/")}
    return [copy.deepcopy({"anatomy": {**fit, **at_T}, "pass_copies": copies}) for _ in range(2)]


def row(T=64, time_s=50e-6):
    return {"T": T, "ops": {"softmax": {"time_s": time_s,
                                       "time_s_interval": [0.9 * time_s, 1.1 * time_s]}}}


def model(w, r):
    costs = perf.pass_costs([x["anatomy"] for x in w], [x["pass_copies"] for x in w], 4)
    return costs, perf.softmax_model([r], [x["anatomy"] for x in w], costs, 64, 4)[0]


def test_the_fit_recovers_a_call_a_row_and_an_element():
    costs, _ = model(workers(), row())
    for p in perf.PASSES:
        f = costs["fits"][p]
        assert (f["per_call_s"], f["per_row_s"], f["per_element_s"]) == pytest.approx(
            (C0, C_ROW, C_EL), rel=1e-6)
        assert [pt["batches"] for pt in f["points"]] == [2] * len(perf.FIT_SHAPES)
    assert set(costs["copy_GBps"].values()) == {GBPS}


def test_the_prediction_by_hand_at_T64():
    _, m = model(workers(), row())
    # exp at T = 64, h = 4: 256 rows, 16,384 elements in core: 2.56 + 3.2768 us; its bytes, D read
    # and E written (2 x 64 KiB), at 50 GB/s: 2.62144 us. Overlapped: 1 + max(5.8368, 2.62144) us.
    exp = m["passes"]["exp"]
    assert exp["core_s"] == pytest.approx(5.8368e-6) and exp["memory_s"] == pytest.approx(
        2.62144e-6)
    assert exp["predicted_s"] == pytest.approx(6.8368e-6)
    assert exp["predicted_no_overlap_s"] == pytest.approx(1e-6 + 5.8368e-6 + 2.62144e-6)
    assert m["predicted_s"] == pytest.approx(sum(q["predicted_s"] for q in m["passes"].values()))
    assert m["calls_s"] == pytest.approx(6 * C0)
    # Measured 50 us, predicted 6 x 6.8368 = 41.02 us: 8.98 us unexplained, outside [45, 55].
    assert m["predicted_s"] == pytest.approx(6 * 6.8368e-6)
    assert m["unexplained_s"] == pytest.approx(50e-6 - 6 * 6.8368e-6)
    assert m["within_noise"] is False and m["nearer_rule"] == "summed"


def test_the_prediction_never_moves_with_the_times_it_is_judged_against():
    w, r = workers(), row()
    _, before = model(w, r)
    slower = copy.deepcopy(w)  # the passes at T = 64 and the softmax in the sweep twice as slow
    for x in slower:
        for b in x["anatomy"]["64"].values():
            b["seconds"] *= 2
    _, after = model(slower, row(time_s=100e-6))
    assert after["predicted_s"] == before["predicted_s"]
    assert after["predicted_no_overlap_s"] == before["predicted_no_overlap_s"]
    assert after["measured_s"] == 2 * before["measured_s"]
    assert after["passes"]["exp"]["measured_s"] == 2 * before["passes"]["exp"]["measured_s"]
    # The fits are its inputs: slower small-array calls do move it.
    dearer = copy.deepcopy(w)
    for x in dearer:
        for shape in (f"{r}x{L}" for r, L in perf.FIT_SHAPES):
            for b in x["anatomy"][shape].values():
                b["seconds"] += 1e-6
    assert model(dearer, r)[1]["predicted_s"] == pytest.approx(before["predicted_s"] + 6e-6)
