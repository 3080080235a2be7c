"""The lab's FLOP and byte formulas, the thresholds and the roofline arithmetic, by hand."""
import json

import pytest

import perf


def test_cost_model_by_hand_T64():
    c = perf.op_cost(64, 64, 4)
    assert c["qkv_proj"] == (3 * 2 * 64 * 64 * 64, 3 * (4 * 64 * 64 + 4 * 64 * 64))  # 1572864, 98304
    assert c["scores"] == (4 * 2 * 64 * 64 * 16, 4 * (8 * 64 * 16 + 4 * 64 * 64)) == (524_288, 98_304)
    assert c["softmax"] == (81_920, 131_072)
    assert c["av"] == c["scores"]
    assert c["out_proj"] == (524_288, 32_768)


def test_cost_model_by_hand_T512_and_lab_intensities():
    c = perf.op_cost(512, 64, 4)
    assert c["scores"] == (33_554_432, 4_456_448)
    assert c["softmax"] == (5_242_880, 8_388_608)
    assert c["qkv_proj"] == (12_582_912, 442_368)
    T, d, d_k = 512, 64, 16
    I = {op: f / b for op, (f, b) in c.items()}
    assert I["qkv_proj"] == pytest.approx(T * d / (2 * T + 2 * d))        # 28.44
    assert I["scores"] == pytest.approx(T * d_k / (4 * d_k + 2 * T))      # 7.53
    assert I["softmax"] == pytest.approx(0.625)
    assert I["out_proj"] == pytest.approx(I["qkv_proj"])


def test_thresholds_at_the_ridge():
    # d_k = 16: a ridge of 11.13 lies above both asymptotes, no T; one of 7.47 gives, by the lab's
    # formula, 4 * 16 * 7.47 / (16 - 2 * 7.47) = 451.0, and by the inequality as written none.
    t = perf.thresholds(16, 11.13)
    f = t["from_intensity_formula"]
    assert f["T_threshold"] is None and t["from_inequality_as_written"]["T_threshold"] is None
    low = perf.thresholds(16, 7.47)
    assert low["from_intensity_formula"]["T_threshold"] == pytest.approx(478.08 / 1.06)
    assert low["from_inequality_as_written"]["T_threshold"] is None
    assert (f["asymptotic_intensity"], t["from_inequality_as_written"]["asymptotic_intensity"]) == (8, 4)


def test_thresholds_both_forms():
    # I_crit = 2, d_k = 16: formula T*16 > 2*(64 + 2T) -> T > 128/12; inequality 16T > 8(16+T) -> T > 16
    assert perf.threshold_T(16, 2.0, 2) == pytest.approx(128 / 12)
    assert perf.threshold_T(16, 2.0, 4) == pytest.approx(16)
    # I_crit = 5: the inequality's intensity tends to d_k/4 = 4 < 5, the formula's to 8 > 5
    assert perf.threshold_T(16, 5.0, 4) is None
    assert perf.threshold_T(16, 5.0, 2) == pytest.approx(4 * 16 * 5 / 6)
    # I_crit = 9 is above both asymptotes: memory-bound for every T
    assert perf.threshold_T(16, 9.0, 2) is None and perf.threshold_T(16, 8.0, 2) is None


CEILINGS = {"beta_peak_GBps": 20.0, "pi_peak_GFLOPS": 100.0, "ridge_range": [4.0, 6.0],
            "levels": {"L2": {"capacity_bytes": 1 << 20, "GBps": 100.0},
                       "L3": {"capacity_bytes": 32 << 20, "GBps": 50.0},
                       "DRAM": {"capacity_bytes": None, "GBps": 20.0}}}


def test_phase_27_bytes_from_the_lab_notation():
    # T = 512, d_k = 16, h = 4. FLOPs of scores + av: 2 * h * 2 T^2 d_k; softmax 5 h T^2.
    flops = 2 * 4 * 2 * 512**2 * 16 + 5 * 4 * 512**2                  # 72,351,744
    lab_bytes = 2 * 4 * (8 * 512 * 16 + 4 * 512**2) + 4 * 8 * 512**2  # 17,301,504
    fused = 4 * 4 * (4 * 512 * 16)  # Q, K, V read and out_h written, 4 T d_k fp32 each per head
    row = {"T": 512, "forward_s": len(perf.OPS) * 1e-3,
           "ops": {op: {"time_s": 1e-3} for op in perf.OPS}}
    perf.place_on_roofline(row, 64, 4, CEILINGS)
    pv = perf.phase_27_preview(row, 64, 4, {**CEILINGS, "ridge": 5.0})
    assert pv["flops"] == flops and pv["naive"]["bytes"] == lab_bytes
    assert pv["without_materialising_A"]["bytes"] == fused
    assert pv["bytes_reduction"] == pytest.approx(33.0)  # 17,301,504 / 524,288
    assert pv["without_materialising_A"]["intensity"] == pytest.approx(138.0, abs=0.01)
    assert pv["without_materialising_A"]["roof_GFLOPS"] == 100.0  # past the ridge: pi


def test_working_sets_by_hand_at_T64():
    # fp32 arrays naive numpy reads or writes, d = 64, h = 4, T = 64 (4096 floats each (T, d)):
    assert perf.working_set(64, 64, 4) == {
        "qkv_proj": 4 * 7 * 4096,          # x, three weights, Q, K, V: 114,688
        "scores": 4 * (2 * 4096 + 2 * 16384),  # Q, K, Q K^T, S: 163,840
        "softmax": 4 * (5 * 16384 + 4096 + 2 * 256),  # S, Z, D, E, A, the mask, m and s: 346,112
        "av": 4 * (16384 + 2 * 4096),       # A, V, out_h: 98,304
        "out_proj": 4 * (3 * 4096 + 4096)}  # out_h, its concat copy, out, W_O: 65,536


def test_the_manifest_s_phase_27_figure_uses_each_op_s_own_level():
    # A laptop-like case where the two rules disagree: scores at I = 7.5 is compute-bound against
    # the L2 (ridge 100 / 80 = 1.25) but memory-bound against DRAM (ridge 100 / 10 = 10).
    ceilings = {"beta_peak_GBps": 10.0, "pi_peak_GFLOPS": 100.0, "ridge_range": [10.0, 10.0],
                "levels": {"L2": {"capacity_bytes": 64 << 20, "GBps": 80.0},
                           "DRAM": {"capacity_bytes": None, "GBps": 10.0}}}
    # Seconds: 1 + 2 + 3 + 4 + 5 = 15 for the lab's five ops; an op this test does not name takes
    # a nanosecond, too little to move a figure below.
    times = {"qkv_proj": 1.0, "scores": 2.0, "softmax": 3.0, "av": 4.0, "out_proj": 5.0}
    times = {op: times.get(op, 1e-9) for op in perf.OPS}
    row = {"T": 512, "forward_s": sum(times.values()),
           "ops": {op: {"time_s": t} for op, t in times.items()}}
    perf.place_on_roofline(row, 64, 4, ceilings)
    assert [row["ops"][op]["level"] for op in perf.OPS] == ["L2"] * len(perf.OPS)
    res = {"config": {k: 0 for k in ("d_model", "n_heads", "T_sweep", "d_head", "samples_per_T",
                                     "min_time_s", "quick", "blas_threads", "workers", "seed")},
           "sweep": [row], "date": "", "versions": {}, "hardware": {}, "threads": {},
           "environment": {}, "heap": {"mode": "warm"}, "conditions": {"verdict": "quiet",
                                                                       "failed": []},
           "ceilings": {**ceilings, "ridge": 10.0, "source": "measured", "depends_on": None}}
    summary = perf.make_manifest(res)["results_summary"]
    # Level rule: of the five only the softmax (I = 0.625 < 1.25) is memory-bound: 3 of 15 s, 20 %.
    # The DRAM rule would add scores and av (I < 10): 9 of 15 s = 60 %.
    assert summary["phase_27_motivation_pct_memory"] == pytest.approx(20.0)
    assert summary["softmax_pct_of_total_at_T_512"] == pytest.approx(20.0)


def test_place_on_roofline_arithmetic():
    n = len(perf.OPS)  # each op 10 us: forward_s, the ops' sum, n * 10 us
    row = {"T": 64, "forward_s": n * 1e-5, "ops": {op: {"time_s": 1e-5} for op in perf.OPS}}
    perf.place_on_roofline(row, 64, 4, CEILINGS)  # ridge 5 FLOP/byte, interval 4 to 6
    qkv, sm, sc = row["ops"]["qkv_proj"], row["ops"]["softmax"], row["ops"]["scores"]
    assert qkv["intensity"] == pytest.approx(16.0) and qkv["dram_bound"] == "compute"
    assert qkv["GFLOPS"] == pytest.approx(1_572_864 / 1e-5 / 1e9)
    assert sm["dram_bound"] == "memory"
    # scores at T=64: I = 5.33, inside the ridge's range: too close to call
    assert sc["intensity"] == pytest.approx(64 * 16 / (64 + 128)) and sc["dram_bound"] == "near_ridge"
    assert sm["time_share"] == pytest.approx(1 / n)
    assert sum(row["ops"][op]["flop_share"] for op in perf.OPS) == pytest.approx(1)
    # Its working set at T=64 (by hand in test_working_sets_by_hand_at_T64) fits the 1 MiB L2.
    assert sm["working_set_bytes"] == perf.working_set(64, 64, 4)["softmax"] < 1 << 20
    assert sm["level"] == "L2"
    assert sm["level_roof_GFLOPS"] == pytest.approx(100 * 0.625)  # L2: 100 GB/s
    assert sm["level_bound"] == "memory" and sc["level_bound"] == "compute"  # L2 ridge 1.0


def caches(**sizes):
    return {"caches": {name: {"size": size} for name, size in sizes.items()}}


def test_copy_working_sets_fit_their_level_and_the_memory():
    # The lab's laptop: half of each data cache (not of the instruction cache), and DRAM at
    # 128 MiB, far past its 6 MiB L3.
    lap = perf.copy_levels(caches(L1d="32K", L1i="32K", L2="256K", L3="6144K"))
    assert [(n, lv["bytes"]) for n, lv in lap.items()] == [
        ("L1d", 16 << 10), ("L2", 128 << 10), ("L3", 3 << 20), ("DRAM", 128 << 20)]
    assert lap["DRAM"]["past_llc"] is True
    # A 64 MiB L3: DRAM four times past it.
    assert perf.copy_levels(caches(L3="65536K"))["DRAM"]["bytes"] == 256 << 20
    # A server's 480 MiB L3: four times past it would need 2 GiB. Every copy stays within
    # COPY_MAX_BYTES, and the DRAM copy says that it is not past the last level.
    srv = perf.copy_levels(caches(L1d="48K", L2="2048K", L3="491520K"))
    assert srv["L3"]["bytes"] == 240 << 20 and srv["DRAM"]["bytes"] == perf.COPY_MAX_BYTES
    assert srv["DRAM"]["past_llc"] is False
    # What the cap is for: a default run's worker on that server, its 2048² matmul included,
    # stays under 512 MiB.
    spec = {"levels": srv, "matmul_n": 2048}
    assert perf.worker_memory_bytes(list(perf.T_SWEEP), 64, 4, spec) < 1 << 29
    # No cache described: DRAM alone, and nobody saw whether its copy passes the largest cache
    # (not assumed: the roofline then says nothing of it); --quick's small DRAM copy, checked at
    # half its size.
    alone = perf.copy_levels({"caches": {}})
    assert list(alone) == ["DRAM"] and alone["DRAM"]["past_llc"] is None
    quick = perf.copy_levels(caches(L3="6144K"), dram_bytes=32 << 20)["DRAM"]
    assert (quick["bytes"], quick["half_bytes"], quick["past_llc"]) == (32 << 20, 16 << 20, True)
    # copy_levels takes the largest data cache as shared by every core (assumed), and copies it on
    # all of them.
    assert [lv["shared"] for lv in lap.values()] == [False, False, True, True]


def test_levels_and_the_lab_laptop():
    # The softmax's working set, 4 (21 T^2 + 8 T) bytes: 346,112 at T = 64 (the 1 MiB L2),
    # 1,380,352 at T = 128 (past it, in the 32 MiB L3), 88 MB at T = 1024 (past every level: DRAM).
    # Against the laptop's 6 MiB L3 (6,291,456): 5.25 MiB at T = 256 fit, 21 MiB at T = 512 do
    # not; 6,269,172 at T = 273 fit, 6,315,152 at 274 do not.
    lap = perf.on_lab_laptop(64, 4)
    assert lap["softmax_spills_from_T"] == 274
    assert perf.working_set(256, 64, 4)["softmax"] < 6 << 20 < perf.working_set(512, 64, 4)["softmax"]
    # Each op's level: the smallest whose capacity holds its working set.
    level = {}
    for T in (64, 128, 1024):
        row = {"T": T, "forward_s": len(perf.OPS) * 1e-3,
               "ops": {op: {"time_s": 1e-3} for op in perf.OPS}}
        perf.place_on_roofline(row, 64, 4, CEILINGS)
        level[T] = row["ops"]["softmax"]["level"]
    assert level == {64: "L2", 128: "L3", 1024: "DRAM"}
    # An L3 on DRAM's roof (its copy within SAME_ROOF of beta: the picture draws it no roof) is
    # no op's level: the softmax at T = 128 goes under DRAM's roof, beta's 20 GB/s.
    same = {**CEILINGS, "levels": {**CEILINGS["levels"], "L3": {
        **CEILINGS["levels"]["L3"], "GBps": 21.0, "same_roof_as_DRAM": True}}}
    row = {"T": 128, "forward_s": 1.0, "ops": {op: {"time_s": 0.2} for op in perf.OPS}}
    perf.place_on_roofline(row, 64, 4, same)
    assert row["ops"]["softmax"]["level"] == "DRAM"
    assert row["ops"]["softmax"]["level_roof_GFLOPS"] == pytest.approx(20.0 * 0.625)
    # The curriculum's pi 250 GFLOPS over beta 15-19 GB/s: a ridge of 13.2-16.7, beyond the
    # 8 FLOP/byte that scores and av tend to: no threshold on the laptop either.
    assert lap["ridge_range"] == pytest.approx([250 / 19, 250 / 15])
    assert perf.threshold_T(16, lap["ridge_range"][0], 2) is None


@pytest.mark.parametrize("doc,expect", [
    ({"beta_peak_GBps": 17.5, "pi_peak_GFLOPS": 250}, (17.5, 250.0)),
    ({"results_summary": {"beta_peak_GBps": 19, "pi_peak_GFLOPS": 240.5}}, (19.0, 240.5)),
])
def test_read_ceilings(tmp_path, doc, expect):
    f = tmp_path / "m.json"
    f.write_text(json.dumps(doc))
    c = perf.read_ceilings(f)  # as --roofline gives it
    assert (c["beta_peak_GBps"], c["pi_peak_GFLOPS"]) == expect


@pytest.mark.parametrize("text", ["{", "[]", '{"beta_peak_GBps": 10}',
                                  '{"beta_peak_GBps": -1, "pi_peak_GFLOPS": 5}',
                                  '{"beta_peak_GBps": "10", "pi_peak_GFLOPS": 5}'])
def test_read_ceilings_rejects(tmp_path, text):
    f = tmp_path / "m.json"
    f.write_text(text)
    with pytest.raises(perf.UsageError):
        perf.read_ceilings(f)


def test_the_lab_s_expected_observations_by_hand():
    # Shares by hand, in OPS's order (qkv_proj, scores, softmax, av, out_proj). At T = 64 the
    # projections take 0.35 + 0.20 = 0.55: they dominate. At T = 512 the T² ops take 0.15 + 0.20
    # + 0.10 = 0.45: they do not. At T = 512 the softmax (0.20) is not the smallest (av, 0.10).
    def row(T, shares):
        return {"T": T, "ops": {op: {"time_share": s} for op, s in zip(perf.OPS, shares)}}
    rows = [row(64, [0.35, 0.15, 0.20, 0.10, 0.20]), row(512, [0.35, 0.15, 0.20, 0.10, 0.20])]
    assert [o["held"] for o in perf.expected_observations(rows)] == [True, False, True]
    assert "T=64" in perf.expected_observations(rows)[0]["claim"]
    # The softmax the smallest at one T: the third fails; more T² time: the second holds.
    rows[1] = row(512, [0.10, 0.40, 0.05, 0.35, 0.10])
    assert [o["held"] for o in perf.expected_observations(rows)] == [True, True, False]
