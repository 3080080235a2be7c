"""The statistics the headline, the ceilings and the findings rest on, each against values worked
out by hand in the test: a process's PROCESS_QUANTILE and the median over processes, their
spreads and groups, the order-statistic intervals and their coverage, the samples that last
min_time, a row's pooling (what the canary set aside, the processes that feed it), the
one-thread windows, the copy ceilings, the plateau rule and the ridge's range."""
import math

import numpy as np
import pytest

import perf


def test_summarize_by_hand():
    # Ten processes of four samples each, process i's samples i, i + 1, i + 2, i + 3 (i = 1..10).
    # Each process's estimate, its 25th percentile (numpy's linear rule): i + 0.75. The figure:
    # the median of the ten estimates, (5.75 + 6.75) / 2 = 6.25; its 95 % interval over the
    # processes: X(2) and X(9) of the estimates, 2.75 and 9.75, covering 1 - 22/1024.
    procs = [[i, i + 1, i + 2, i + 3] for i in range(1, 11)]
    s = perf.summarize(procs)
    assert s["process_estimates"] == [i + 0.75 for i in range(1, 11)]
    assert s["time_s"] == 6.25 and s["time_s_interval"] == [2.75, 9.75]
    assert s["time_s_interval_coverage"] == pytest.approx(1 - 22 / 1024)
    # The two spreads: between, the estimates' relative SD; within, the median of each
    # process's own relative SD (four consecutive numbers: SD sqrt(5/3) over their mean i + 1.5).
    est = np.arange(1, 11) + 0.75
    assert s["between_process_rsd"] == pytest.approx(est.std(ddof=1) / est.mean())
    assert s["within_process_rsd"] == pytest.approx(np.median(
        [math.sqrt(5 / 3) / (i + 1.5) for i in range(1, 11)]))
    # The pooled samples' statistics beside (the lab's mean and SD): 40 values.
    pooled = np.array(procs, dtype=float).ravel()
    assert (s["mean_s"], s["std_s"]) == (pooled.mean(), pooled.std(ddof=1))
    # Seven processes at 10 and three at 30 (their estimates 10.05 and 30.05): the median is the
    # seven's, whatever the three.
    split = perf.summarize([[10, 10.1, 11]] * 7 + [[30, 30.1, 31]] * 3)
    assert split["time_s"] == pytest.approx(10.05)
    # One process (the default heap's): no spread between processes to give, not a spread of 0;
    # one sample: no spread within it nor SD either.
    one = perf.summarize([[10, 10.1, 11]])
    assert one["between_process_rsd"] is None and one["within_process_rsd"] > 0
    single = perf.summarize([[10.0], [10.1, 11]])
    assert single["within_process_rsd"] == pytest.approx(np.std([10.1, 11], ddof=1) / 10.55)
    assert [perf.summarize([[10.0]])[k] for k in ("within_process_rsd", "std_s")] == [None, None]


def test_quantile_interval_by_hand():
    # 20 values, the 75th percentile: B ~ Binomial(20, 0.75) values fall below it. The closest
    # pair of order statistics covering it with >= 95 %: X(11) and X(19), P(11 <= B <= 18).
    cover = sum(math.comb(20, k) * 0.75**k * 0.25**(20 - k) for k in range(11, 19))
    assert perf.quantile_interval(list(range(20, 0, -1)), 0.75) == (11.0, 19.0, cover)
    # The median of 10: X(2) and X(9), P(2 <= B <= 8) = 1 - 22/1024 (X(3), X(8) give 0.89).
    assert perf.quantile_interval(list(range(1, 11)), 0.5) == (2.0, 9.0, 1 - 22 / 1024)
    # Too few for 95 %: the full range, with the coverage it really has. The 75th percentile of
    # two values: P(B = 1) = 2 * 0.75 * 0.25.
    assert perf.quantile_interval([3.0, 1.0], 0.75) == (1.0, 3.0, 0.375)
    assert perf.quantile_interval([2.0], 0.5) == (2.0, 2.0, 0.0)


def test_the_ceilings_interval_covers_the_true_75th_percentile_as_often_as_it_says():
    # A skewed distribution of repeat rates (lognormal, sigma 0.5): 2,000 runs of 20 repeats.
    # Its true 75th percentile is exp(0.5 * z_0.75), z_0.75 = 0.6745. The coverage the interval
    # states for 20 values (at least 95 %; 96.2 % here) is met within three standard errors.
    rng = np.random.default_rng(20)
    truth = math.exp(0.5 * 0.6744897501960817)
    hits, stated = 0, perf.quantile_interval(range(20), perf.CEILING_QUANTILE)[2]
    for _ in range(2000):
        lo, hi, _ = perf.quantile_interval(rng.lognormal(0.0, 0.5, 20), perf.CEILING_QUANTILE)
        hits += lo <= truth <= hi
    assert stated >= perf.CONFIDENCE
    assert abs(hits / 2000 - stated) <= 3 * math.sqrt(stated * (1 - stated) / 2000)


def test_run_for_lasts_min_time_whatever_each_call_takes():
    # A clock that moves 3 ms a call: 50 ms need 17 calls (51 ms), never 16 (48 ms).
    ticks = iter(range(0, 10**9, 3_000_000))
    calls = []
    n, seconds = perf.run_for(lambda: calls.append(1), 0.05, now=lambda: next(ticks))
    assert (n, len(calls)) == (17, 17) and seconds == pytest.approx(0.051)


def test_a_sample_is_its_forwards_mean_per_op_with_the_canary_s_pair_around_it(monkeypatch):
    x, mha, mask = np.ones((64, 64), np.float32), perf.init_mha(), perf.causal_mask(64)
    canary = perf.make_canary()
    s = perf.sample_forwards(x, mha, mask, 0.01, lambda fn, t: perf.watched(fn, t, canary))
    assert set(s) == set(perf.OPS) | {"n", "canary_around"}
    # The canary was read before the sample and after it, never during: its last reading.
    assert s["canary_around"] == canary["readings"][-2:] and len(canary["readings"]) == 2
    # Per op, one forward's seconds, the mean over the batch's forwards (three forwards that took
    # 1, 2 and 6 s an op: 3 s), and their count.
    given = iter([dict.fromkeys(perf.OPS + ("total",), t) for t in (1.0, 2.0, 6.0)])
    monkeypatch.setattr(perf, "attention_forward_timed", lambda *args: next(given))
    three = lambda fn, t: ([fn() for _ in range(3)], (3, {}))[1]  # noqa: E731
    assert perf.sample_forwards(x, mha, mask, 0.01, three) == {**dict.fromkeys(perf.OPS, 3.0),
                                                               "n": 3}


def test_part_one_alone_takes_its_samples_with_no_harness(monkeypatch):
    # take_samples with no hook: run_for runs each batch, nothing is added to a sample, and every T
    # gets its samples, each after one untimed forward. Each timed forward says 2 s an op.
    monkeypatch.setattr(perf, "attention_forward_timed",
                        lambda *args: dict.fromkeys(perf.OPS + ("total",), 2.0))
    untimed = []
    monkeypatch.setattr(perf, "attention_forward", lambda x, *args: untimed.append(len(x)))
    task = {"T_sweep": [64, 128], "min_time": 1e-4, "seed": 0, "rounds": 3,
            "interleave": True}
    out = perf.take_samples(task, perf.init_mha())
    assert untimed == [64, 128] and list(out) == ["64", "128"]
    for rec in out.values():
        assert len(rec["samples"]) == 3 and all(
            s == {**dict.fromkeys(perf.OPS, 2.0), "n": s["n"]} for s in rec["samples"])


N = len(perf.OPS)  # the timed ops


def sample(ms, n=10, ratio=1.0, **ops):
    """A sample of n forwards whose N ops take `ms` each (or as `ops` says); its canary ran
    `ratio` times its reference."""
    return {**{k: ms / 1e3 for k in perf.OPS}, **ops, "n": n, "canary_ratio": ratio}


def test_pool_T_by_hand():
    # Part I's statistic of the samples that feed it: two processes, 1 ms and 3 ms an op.
    row = perf.pool_T(64, {"worker 1": [sample(1)] * 3, "worker 2": [sample(3)] * 5})
    assert row["processes"] == ["worker 1", "worker 2"] and set(row["ops"]) == set(perf.OPS)
    assert row["ops"]["softmax"]["process_estimates"] == [0.001, 0.003]
    assert row["ops"]["softmax"]["time_s"] == pytest.approx(0.002)  # the median of two: their mean
    assert row["forward_s"] == pytest.approx(N * 0.002)


def test_pool_row_by_hand():
    # Two workers, five samples each; each forward's N ops take 1 ms. One more sample ran while
    # the canary was 2x slow: 4 ms an op, set aside.
    a = {"label": "worker 1", "samples": [sample(1, n=10)] * 4 + [sample(1, n=12)],
         "faults": 11, "timer_ratios": [1.00, 1.01, 1.02, 1.03, 1.04], "one_thread": []}
    b = {"label": "worker 2", "samples": [sample(1, n=10)] * 5 + [sample(4, ratio=2.0)], "faults": 0,
         "timer_ratios": [1.05, 1.06, 1.07, 1.08, 1.09],
         "one_thread": [{**sample(2), "follows": 0}]}
    row = perf.pool_row(64, [a, b])
    assert (row["sample_count"], row["processes_sampled"]) == (11, 2)
    assert row["samples_set_aside"] == 1
    assert row["set_aside_median_ratio"] == 2.0
    assert row["figures_from"] == "kept samples"
    assert row["processes"] == ["worker 1", "worker 2"]
    # The figures: the ten kept samples, 1 ms each, whichever statistic.
    assert row["ops"]["softmax"]["time_s"] == 0.001
    assert row["ops"]["softmax"]["mean_s"] == pytest.approx(0.001)
    assert row["forward_s"] == pytest.approx(N * 0.001)
    # 11 faults over 4 * 10 + 12 + 5 * 10 + 10 = 112 forwards (the set-aside sample's too)
    assert row["page_faults_per_forward"] == pytest.approx(11 / 112)
    # The ten ratios' median 1.045 and its interval, X(2) and X(9): 1.01 and 1.08.
    assert row["timer_overhead"] == pytest.approx(0.045)
    assert row["timer_overhead_interval"] == pytest.approx([0.01, 0.08])
    # A platform that counts no page faults: unknown, not zero.
    assert perf.pool_row(64, [{**a, "faults": None}, b])["page_faults_per_forward"] is None
    # One process whose every sample ran slow (3 ms an op) feeds nothing, and the row names it:
    # the figures are the other's, 1 ms.
    slow = {**a, "label": "worker 3", "samples": [sample(3, ratio=1.5)] * 4}
    row = perf.pool_row(64, [slow, b])
    assert row["processes"] == ["worker 2"]  # worker 3 kept none: it feeds none
    assert row["ops"]["softmax"]["process_estimates"] == [0.001]
    assert row["figures_from"] == "kept samples"
    # Every sample of every process slow: the figures from all of them, and the row says so.
    row = perf.pool_row(64, [slow])
    assert row["figures_from"] == "all samples: the canary kept none"
    assert row["ops"]["softmax"]["time_s"] == 0.003 and row["samples_set_aside"] == 4
    assert row["processes"] == ["worker 3"] and row["ops"]["softmax"]["process_estimates"] == [0.003]


def test_threading_windows_by_hand():
    # All threads: av 1, 1, 3 ms; one thread (2 ms) right after samples 0 and 2.
    p = {"samples": [sample(1), sample(1), sample(1, av=0.003)], "one_thread": [
        {**sample(1, av=0.002, softmax=0.005), "follows": 0},
        {**sample(1, av=0.002, softmax=0.005), "follows": 2}]}
    worker = lambda p: {"by_T": {"256": p, "512": {**p, "one_thread": []}}}  # noqa: E731
    [w] = perf.threading_windows([256, 512], [worker(p)])  # no window at 512: no row
    # Windows: (1 ms with threads, 2 ms on one) and (3, 2): ratios 0.5 and 1.5, median 1.
    assert w["T"] == 256 and w["pairs"] == 2 and w["threads_over_one"]["av"] == pytest.approx(1.0)
    assert w["threads_over_one"]["scores"] == pytest.approx(1.0)
    assert w["all_threads_s"]["av"] == pytest.approx(0.002)
    assert w["one_thread_s"]["av"] == 0.002 and w["one_thread_s"]["softmax"] == 0.005
    # Two workers pool their windows.
    assert perf.threading_windows([256], [worker(p), worker(p)])[0]["pairs"] == 4
    # A pair one of whose samples the harness did not keep is no window: the 3 ms one goes.
    [kept] = perf.threading_windows([256], [worker(p)], kept=lambda s: s["av"] != 0.003)
    assert kept["pairs"] == 1 and kept["threads_over_one"]["av"] == pytest.approx(0.5)


def copy_workers(levels, check, matmul=100.0):
    """Worker results of the copies: {level: [(one thread, all CPUs) per repeat]}, one
    repeat per worker, the check on all CPUs."""
    return [{"copy": {name: {"1thread": [reps[i][0]], "all_cpus": None if reps[i][1] is None else
                             [reps[i][1]]} for name, reps in levels.items()},
             "copy_half": {"DRAM": [check[i]]}, "matmul": [matmul + i]}
            for i in range(len(check))]


SPEC = {"copy_threads": 2, "matmul_n": 600, "time_pi": True, "levels": {
    "L2": {"capacity_bytes": 128 << 10, "bytes": 64 << 10, "shared": False},
    "L3": {"capacity_bytes": 32 << 20, "bytes": 16 << 20, "shared": True},
    "DRAM": {"capacity_bytes": None, "bytes": 128 << 20, "shared": True, "past_llc": True,
             "half_bytes": 64 << 20}}}


def ceilings(dram, check, l3=((40, 44), (42, 46), (41, 45), (40, 44), (42, 46))):
    levels = {"L2": [(20, None)] * len(check), "L3": list(l3), "DRAM": dram}
    return perf.combine_ceilings([{"ceiling_rates": r} for r in copy_workers(levels, check)], [],
                                 SPEC)


def test_ceilings_from_the_left_out_processes_only_when_no_counted_one_timed_them():
    rates = copy_workers({"L2": [(20, None)] * 5, "L3": [(40, 44)] * 5,
                          "DRAM": [(20, 30), (21, 29), (22, 28), (23, 27), (24, 26)]}, [29] * 5)
    timed = [{"ceiling_rates": r} for r in rates]
    faster = [{"ceiling_rates": {**r, "matmul": [2 * v for v in r["matmul"]]}} for r in rates]
    counted_none = [{"ceiling_rates": None}]
    assert perf.combine_ceilings(counted_none, timed, SPEC) == \
        perf.combine_ceilings(timed, faster, SPEC)  # the counted ones' when they timed any


def test_copy_ceilings_by_hand():
    # Five repeats each. One thread 20-24 GB/s, all threads 26-30: the 75th percentiles 23 and
    # 29 (numpy's linear: the 4th of 5 values); all threads win on their statistic.
    c = ceilings(dram=[(20, 30), (21, 29), (22, 28), (23, 27), (24, 26)], check=[29] * 5)
    dram = c["levels"]["DRAM"]
    assert dram["GBps_1thread"] == 23 and dram["GBps_all_cpus"] == 29
    assert (dram["GBps"], dram["GBps_from"], dram["repeats"]) == (29, "all_cpus", 5)
    # Five values cannot give a 95 % interval of a 75th percentile: the full range, and the
    # coverage it has, 1 - 0.75^5 - 0.25^5.
    assert dram["GBps_interval"] == [26, 30]
    assert dram["GBps_interval_coverage"] == pytest.approx(1 - 0.75**5 - 0.25**5)
    assert c["beta_peak_GBps"] == 29 and c["beta_peak_interval"] == [26, 30]
    assert (c["pi_peak_GFLOPS"], c["pi_repeats"]) == (103, 5)  # 100..104: the 4th
    assert c["matmul"]["intensity"] == 100  # 2 n^3 / (12 n^2) at n = 600
    # One thread faster than all on its statistic: the level is one thread's.
    slow_all = ceilings(dram=[(30, 20)] * 5, check=[20] * 5)["levels"]["DRAM"]
    assert (slow_all["GBps"], slow_all["GBps_from"]) == (30, "1thread")
    # A 64 KiB copy slower than larger levels: no roof of its own (why: not measured).
    assert c["levels"]["L2"]["slower_than_larger"] is True
    assert c["levels"]["L3"]["slower_than_larger"] is False
    # The L3 copy (45) is not within 10 % of DRAM's 29: it keeps its own roof.
    assert c["levels"]["L3"]["same_roof_as_DRAM"] is False
    flat = ceilings(dram=[(20, 30)] * 5, check=[30] * 5, l3=[(31, 33)] * 5)
    assert flat["levels"]["L3"]["same_roof_as_DRAM"] is True  # 33 <= 1.1 * 30


def test_plateau_rule_at_its_boundary():
    # The half-size copy on all threads within PLATEAU (10 %) of the main size's: a plateau.
    at = ceilings(dram=[(50, 100)] * 5, check=[110] * 5)["levels"]["DRAM"]
    assert at["plateau"] is True and at["GBps_half"] == 110
    past = ceilings(dram=[(50, 100)] * 5, check=[110.5] * 5)
    assert past["levels"]["DRAM"]["plateau"] is False
    # No plateau: it is said (the roofline's note), and beta is still the larger copy's alone, its
    # interval its own: the half-size copy never enters beta.
    assert past["beta_peak_GBps"] == 100 and past["beta_peak_interval"] == [100, 100]


def test_ridge_range_by_hand():
    measured = {"beta_peak_GBps": 20.0, "beta_peak_interval": [16.0, 25.0],
                "pi_peak_GFLOPS": 150.0, "pi_peak_interval": [120.0, 200.0], "levels": {}}
    c = perf.with_ridge(measured)
    # ridge 150 / 20 = 7.5; interval: lowest pi over highest beta, highest over lowest.
    assert c["ridge"] == 7.5 and c["ridge_range"] == [120 / 25, 200 / 16]


def test_with_phase_1_s_ceilings_pi_goes_untimed_and_the_copies_are_still_this_run_s():
    # time_ceilings on a tiny plan: the copies timed, the matmul only when pi is not given.
    tiny = {"copy_threads": 1, "matmul_n": 16, "reps": 1, "cache_reps": 1, "levels": {
        "DRAM": {"capacity_bytes": None, "bytes": 64 << 10, "shared": True, "half_bytes": 0}}}
    assert perf.time_ceilings({**tiny, "time_pi": True}, 1e-4)["matmul"]
    untimed = perf.time_ceilings({**tiny, "time_pi": False}, 1e-4)
    assert untimed["matmul"] is None and untimed["copy"]["DRAM"]["1thread"]
    # Combined without pi: Phase 1's pi and beta take the measured's place, as points, and the
    # ridge is a point; the copies' levels stay this run's.
    levels = {"L2": [(20, None)] * 5, "L3": [(40, 44)] * 5, "DRAM": [(20, 30)] * 5}
    given = {"beta_peak_GBps": 15.0, "pi_peak_GFLOPS": 250.0, "source": "phase1", "depends_on": "x"}
    c = perf.combine_ceilings([{"ceiling_rates": {**r, "matmul": None}} for r in
                               copy_workers(levels, [29] * 5)], [], {**SPEC, "time_pi": False}, given)
    assert (c["beta_peak_GBps"], c["pi_peak_GFLOPS"], c["source"]) == (15.0, 250.0, "phase1")
    assert c["beta_peak_interval"] == [15.0] * 2 and c["pi_peak_interval"] == [250.0] * 2
    assert [c[f"{k}_{f}"] for k in ("beta", "pi") for f in ("repeats", "peak_interval_coverage")] \
        == [None] * 4  # no repeats of this run's stand behind Phase 1's numbers
    assert c["ridge"] == pytest.approx(250 / 15) and c["ridge_range"] == [250 / 15] * 2
    assert c["levels"]["DRAM"]["GBps_1thread"] == 20 and c["levels"]["DRAM"]["GBps"] == 30
    # A cache's roof is set against the DRAM roof the run draws and places by: Phase 1's beta. An
    # L3 copy within 10 % of this run's DRAM copy (33 <= 1.1 x 30) stands 2.2x above Phase 1's 15.
    flat = perf.combine_ceilings([{"ceiling_rates": {**r, "matmul": None}} for r in copy_workers(
        {**levels, "L3": [(31, 33)] * 5}, [29] * 5)], [], {**SPEC, "time_pi": False}, given)
    assert flat["levels"]["L3"]["same_roof_as_DRAM"] is False


def mixture_median(share, slow, sigma):
    """The median of a two-group population: lognormal(0, sigma) with weight 1 - share, lognormal
    around `slow` with weight share; by bisection on the mixture's CDF."""
    cdf = lambda m: sum(w * 0.5 * (1 + math.erf((math.log(m) - math.log(c)) / (sigma * 2**0.5)))
                        for w, c in ((1 - share, 1.0), (share, slow)))  # noqa: E731
    lo, hi = 0.5, 2.0
    for _ in range(60):
        lo, hi = ((lo + hi) / 2, hi) if cdf((lo + hi) / 2) < 0.5 else (lo, (lo + hi) / 2)
    return (lo + hi) / 2


@pytest.mark.parametrize("share", [0.2, 0.35, 0.5, 0.65, 0.8])
def test_the_interval_over_processes_covers_a_two_group_population_at_its_stated_coverage(share):
    """The process is the unit: ten processes from a population in two groups x1.2 apart (the
    slow one's share from 0.2 to 0.8), each process's samples near its own level. Over 1,000
    seeded runs, summarize's interval covers the population's median as often as it says."""
    rng = np.random.default_rng(int(100 * share))
    truth = mixture_median(share, 1.2, 0.01)
    covered, stated = 0, set()
    for _ in range(1000):
        speeds = np.where(rng.random(10) < share, 1.2, 1.0) * rng.lognormal(0, 0.01, 10)
        s = perf.summarize([list(v * rng.lognormal(0, 0.005, 4)) for v in speeds])
        lo, hi = s["time_s_interval"]
        covered += lo <= truth <= hi
        stated.add(round(s["time_s_interval_coverage"], 6))
    (coverage,) = stated  # 0.9785 for ten processes: one standard error of 1,000 runs is 0.0046
    assert abs(covered / 1000 - coverage) <= 3.5 * math.sqrt(coverage * (1 - coverage) / 1000), (
        covered, coverage)


def test_timed_over_untimed_pairs_each_timed_forward_with_an_untimed_one_in_alternating_order(
        monkeypatch):
    clock, order = [0], []

    def forward(name, ns):
        def f(x, mha, mask):
            order.append(name)
            clock[0] += ns
        return f
    monkeypatch.setattr(perf, "attention_forward_timed", forward("timed", 103))
    monkeypatch.setattr(perf, "attention_forward", forward("untimed", 100))
    monkeypatch.setattr(perf.time, "perf_counter_ns", lambda: clock[0])
    assert perf.timed_over_untimed(None, None, None, 4, 0) == pytest.approx(1.03)
    assert order == ["untimed", "timed", "timed", "untimed"] * 2
