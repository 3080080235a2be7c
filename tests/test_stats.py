"""The statistics the headline and the findings rest on, each against values worked out by hand
in the test: the 25th percentile, the slow fraction, the environment tax, the spread between
workers, the timer-overhead interval, the one-thread windows, calibration, the copy ceilings and
the plateau rule."""
import pytest

import perf


def test_summarize_by_hand():
    # 8 samples from two workers. numpy's linear percentiles: p25 = 1 + 0.25 * 7 = 2.75,
    # median 4.5, p75 6.25; slow: above 1.25 * 2.75 = 3.4375 -> 4, 5, 6, 7, 8: 5 of 8.
    s = perf.summarize([1, 2, 3, 4, 5, 6, 7, 8], [[1, 2, 3, 4], [5, 6, 7, 8]])
    assert s["time_s"] == s["p25_s"] == 2.75
    assert (s["median_s"], s["p75_s"], s["min_s"], s["mean_s"]) == (4.5, 6.25, 1, 4.5)
    assert s["slow_fraction"] == 5 / 8
    assert s["environment_tax"] == pytest.approx(4.5 / 2.75 - 1)
    assert s["worker_medians"] == [2.5, 6.5] and s["worker_spread"] == pytest.approx(2.6)
    assert s["worker_times"] == [1.75, 5.75] and s["unstable"] is True
    # Two workers that agree within SPREAD_LIMIT: not unstable, no slow sample.
    calm = perf.summarize([10, 10, 11, 11], [[10, 11], [10, 11]])
    assert calm["unstable"] is False and calm["slow_fraction"] == 0 and calm["time_s"] == 10


def test_profile_row_overhead_interval_and_short_samples():
    ops = {k: [0.001] * 10 for k in perf.KEYS}
    # n = 10 forwards per sample; wall per forward: two samples of 0.9 ms fall below min_time
    # (9 ms of a 10 ms minimum), eight of 1.1 ms do not.
    part = {**ops, "wall": [0.0009] * 2 + [0.0011] * 8, "n": 10, "faults_per_forward": 0.0,
            "pairs": [1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.07, 1.08, 1.09]}
    m = {"parts": [part], **{k: part[k] for k in perf.KEYS + ("wall", "pairs")}}
    row = perf.profile_row(64, m, min_time=0.010)
    assert row["samples_below_min_time"] == 2 and row["n_inner"] == 10 and row["repeats"] == 10
    # Median of the ten ratios 1.045; the interval: n/2 -/+ 1.96 sqrt(10)/2 = 5 -/+ 3.099 ->
    # order statistics floor(1.90) = 1 and ceil(8.10) = 9 (0-based): 1.01 and 1.09.
    assert row["instrumentation_overhead"] == pytest.approx(0.045)
    assert row["instrumentation_overhead_ci95"] == pytest.approx([0.01, 0.09])
    # Five ops of 1 ms in a forward whose wall time is 0.9 or 1.1 ms: median gap 1 - 5 / 1.1.
    assert row["accounting_gap"] == pytest.approx(1 - 0.005 / 0.0011)


def one_thread_part():
    """Three samples of scores + av with all threads (2, 2, 4 ms) and two one-thread samples
    (3 ms each), taken right after samples 0 and 2."""
    p = {k: [0.001] * 3 for k in perf.KEYS}
    p["scores"] = [0.001, 0.001, 0.003]
    p["one_thread"] = {k: [0.002, 0.002] for k in perf.KEYS}
    p["one_thread"]["av"] = [0.001, 0.001]
    p["one_thread_after"] = [0, 2]
    return p


def test_threading_windows_by_hand():
    p = one_thread_part()
    row = {"ops": {"scores": {"time_s": 0.001}, "av": {"time_s": 0.001}}}
    w = perf.threading_windows(256, {"parts": [p]}, row)
    # Windows: (2 ms with threads, 3 ms on one) and (4, 3): ratios 0.667 and 1.333, median 1.
    assert w["windows"] == 2 and w["threads_over_one"] == pytest.approx(1.0)
    # Slow for threads: above 1.25 * (1 + 1) ms = 2.5 ms, while one thread stays within
    # 1.25 * its own 25th percentile (3 ms): only the second window.
    assert w["slow_for_threads_only"] == 1
    assert w["one_thread_ops"]["scores"] == 0.002 and w["one_thread_ops"]["av"] == 0.001
    assert perf.threading_windows(256, {"parts": [{**p, "one_thread_after": []}]}, row) is None


def test_calibrate_by_hand(monkeypatch):
    # Each call takes 1 ms: n doubles until a batch reaches min_time / 4 = 12.5 ms, at n = 16
    # (16 ms); then 16 * 1.05 * 50 / 16 = 52.5 -> 53 calls per sample.
    monkeypatch.setattr(perf, "batch_seconds", lambda fn, n: n * 0.001)
    assert perf.calibrate(None, 0.05) == 53
    # Sized on the fastest of three trial batches: 4, 8, 16 ms (n = 1, 2, 4), then trials of 12
    # and 20 ms at n = 4: 4 * 1.05 * 50 / 12 = 17.5 -> 18.
    times = iter([0.004, 0.008, 0.016, 0.012, 0.020])
    monkeypatch.setattr(perf, "batch_seconds", lambda fn, n: next(times))
    assert perf.calibrate(None, 0.05) == 18


def copy_workers(levels, check=None):
    """Worker results of the copies: {level: [(one thread, all threads) per repeat]}."""
    out = []
    for i in range(len(next(iter(levels.values())))):
        w = {"copy": {name: {"1": [reps[i][0]], "all": None if reps[i][1] is None else [reps[i][1]]}
                      for name, reps in levels.items()},
             "copy_check": {"DRAM": {"1": [check[i][0]], "all": [check[i][1]]}}, "matmul": [100.0]}
        out.append(w)
    return out


SPEC = {"threads": 2, "matmul_n": 600, "levels": {
    "L1d": {"capacity_bytes": 32 << 10, "bytes": 16 << 10, "shared": False},
    "L2": {"capacity_bytes": 1 << 20, "bytes": 512 << 10, "shared": False},
    "L3": {"capacity_bytes": 32 << 20, "bytes": 16 << 20, "shared": True},
    "DRAM": {"capacity_bytes": None, "bytes": 128 << 20, "shared": True, "past_llc": True,
             "check_bytes": 64 << 20}}}


def ceilings(dram, check, l3=((40, 44), (42, 46), (41, 45))):
    levels = {"L1d": [(20, None)] * 3, "L2": [(80, None)] * 3, "L3": list(l3), "DRAM": dram}
    return perf.combine_ceilings(copy_workers(levels, check), SPEC)


def test_copy_ceilings_by_hand():
    c = ceilings(dram=[(20, 30), (22, 29), (21, 28)], check=[(20, 30), (20, 30), (20, 30)])
    dram = c["levels"]["DRAM"]
    # Each repeat counts the better of one thread and all threads: 30, 29, 28 -> median 29.
    assert dram["GBps"] == 29 and dram["GBps_range"] == [28, 30] and dram["repeats"] == 3
    assert dram["GBps_1thread"] == 21 and dram["GBps_all_threads"] == 29
    assert c["beta_peak_GBps"] == 29 and c["pi_peak_GFLOPS"] == 100
    assert c["matmul"]["intensity"] == 100  # 2 n^3 / (12 n^2) at n = 600
    # A 16 KiB copy slower than larger levels: numpy's call overhead, not the L1.
    assert c["levels"]["L1d"]["call_overhead_bound"] is True
    assert c["levels"]["L2"]["call_overhead_bound"] is False
    # The L3 copy (median 45) within 10 % of DRAM's 29? No: it keeps its own roof.
    assert c["levels"]["L3"]["same_roof_as_DRAM"] is False
    flat = ceilings(dram=[(20, 30)] * 3, check=[(20, 30)] * 3, l3=[(31, 33)] * 3)
    assert flat["levels"]["L3"]["same_roof_as_DRAM"] is True  # 33 <= 1.1 * 30


def test_plateau_rule_at_its_boundary():
    # The medians of the two DRAM sizes within PLATEAU (10 %) of the main size's: a plateau.
    at = ceilings(dram=[(50, 100)] * 3, check=[(50, 110)] * 3)["levels"]["DRAM"]
    assert at["plateau"] is True and at["GBps_range"] == [100, 100]
    past = ceilings(dram=[(50, 100)] * 3, check=[(50, 110.5)] * 3)["levels"]["DRAM"]
    assert past["plateau"] is False and past["GBps_range"] == [100, 110.5]


def test_overlapping_repeats_do_not_make_a_plateau():
    # 78.9 against 56.8 GB/s (x1.39) with wide repeats that overlap: no plateau, and beta's
    # interval spans both sizes' repeats.
    c = ceilings(dram=[(40, 40), (40, 78.9), (40, 90)], check=[(30, 50), (30, 56.8), (30, 85)])
    dram = c["levels"]["DRAM"]
    assert dram["plateau"] is False and dram["GBps"] == 78.9 and dram["GBps_check"] == 56.8
    assert c["beta_peak_range"] == [40, 90]


def test_ridge_interval_by_hand():
    measured = {"beta_peak_GBps": 20.0, "beta_peak_range": [16.0, 25.0],
                "pi_peak_GFLOPS": 150.0, "pi_peak_range": [120.0, 200.0], "levels": {}}
    c = perf.choose_ceilings(None, measured)
    # ridge 150 / 20 = 7.5; interval: lowest pi over highest beta, highest over lowest.
    assert c["ridge"] == 7.5 and c["ridge_range"] == [120 / 25, 200 / 16]
    given = perf.choose_ceilings({"beta_peak_GBps": 15.0, "pi_peak_GFLOPS": 250.0,
                                  "source": "phase1", "depends_on": "x"}, measured)
    # Phase 1 gives one number each: no interval, the ridge is a point.
    assert given["ridge"] == pytest.approx(250 / 15) and given["ridge_range"] == [250 / 15] * 2
    assert given["source"] == "phase1" and given["levels"] == {}
