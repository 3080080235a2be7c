"""Synthetic runs: a results.json as perf.py writes it, from per-op times chosen in a test, so that
--compare, the pictures and the manifest can be tested on values worked out by hand instead of
on whatever this machine measured; and a real run moved as a drifting host would move it
(drifted), so that the write-up can be swapped across a chain of runs that straddles d_k/2."""
import copy

import perf

TIMES_MS = {  # per op, at T = 64 and 512: the projections lead at 64, the T^2 ops at 512
    64: dict(zip(perf.OPS, (0.030, 0.010, 0.020, 0.008, 0.012), strict=True)),
    512: dict(zip(perf.OPS, (0.15, 0.90, 3.00, 0.40, 0.08), strict=True)),
}


def worker(Ts):
    """A worker's calls at every T: scores 0.6 ms whole and 0.5 ms its matmul alone; 0.1 ms each
    of the softmax's passes at T, 2 us in cache (on 64 queries), 50 us a copy of its bytes."""
    calls = {str(T): {"in_cache_queries": 64,
                       "scores": {"whole": 6e-4, "matmul": 5e-4}, **{
        p: {"at_T": 1e-4, "in_cache": 2e-6, "copy": 5e-5} for p in perf.PASSES}}
        for T in Ts}
    return {"apart": calls}


def levels(beta):
    return {"L2": {"capacity_bytes": 1 << 20, "bytes": 512 << 10, "shared": False, "GBps": 80.0,
                   "GBps_1thread": 80.0, "GBps_all_cpus": None, "slower_than_larger": False,
                   "GBps_from": "1thread",
                   "same_roof_as_DRAM": False, "repeats": 10},
            "L3": {"capacity_bytes": 32 << 20, "bytes": 16 << 20, "shared": True, "GBps": 40.0,
                   "GBps_1thread": 30.0, "GBps_all_cpus": 40.0, "slower_than_larger": False,
                   "GBps_from": "all_cpus",
                   "same_roof_as_DRAM": False, "repeats": 10},
            "DRAM": {"capacity_bytes": None, "bytes": 128 << 20, "shared": True, "past_llc": True,
                     "half_bytes": 64 << 20, "GBps": beta, "GBps_1thread": 0.7 * beta,
                     "GBps_all_cpus": beta, "GBps_half": beta, "plateau": True,
                     "GBps_interval": [0.9 * beta, 1.1 * beta], "repeats": 20,
                     "GBps_from": "all_cpus"}}


def op(seconds, process_estimates):
    return {"time_s": seconds, "time_s_interval": [0.98 * seconds, 1.02 * seconds],
            "mean_s": seconds, "std_s": 0.0, "process_estimates": process_estimates}


def run(times_ms=TIMES_MS, process_multiples=(1.0, 1.01, 1.02, 1.01, 1.0), verdict="quiet", reasons=(),
        cooperation=0.75, beta=20.0, pi=150.0, one_thread_ms=1.0, faults=2000.0, cpu="CPU A",
        dispatch=("X86_V3",)):
    """A full results.json. `process_multiples`: each worker's estimate as a multiple of the headline."""
    ceilings = {"source": "measured", "depends_on": None, "beta_peak_GBps": beta,
                "beta_peak_interval": [0.9 * beta, 1.1 * beta], "pi_peak_GFLOPS": pi,
                "pi_peak_interval": [0.95 * pi, 1.05 * pi], "beta_repeats": 20, "pi_repeats": 20,
                "beta_peak_interval_coverage": 0.96, "pi_peak_interval_coverage": 0.96,
                "copy_threads": 2, "levels": levels(beta),
                "matmul": {"n": 2048, "intensity": 2048 / 6}}
    ceilings = perf.with_ridge(ceilings)
    rows, default_rows = [], []
    for T, ops in times_ms.items():
        base = {"T": T, "sample_count": 100,
                "processes_sampled": len(process_multiples),
                "processes": [f"worker {i + 1}" for i in range(len(process_multiples))],
                "samples_set_aside": 3, "set_aside_median_ratio": 1.8,
                "figures_from": "kept samples",
                "timer_overhead": 0.005, "timer_overhead_interval": [0.0, 0.01]}
        secs = {k: ms / 1e3 for k, ms in ops.items()}
        rows.append({**base, "page_faults_per_forward": 0.0, "forward_s": sum(secs.values()),
                     "ops": {k: op(s, [s * f for f in process_multiples]) for k, s in secs.items()}})
        default_rows.append({**base, "page_faults_per_forward": faults if T > 64 else 0.0,
                             "forward_s": 1.5 * sum(secs.values()),
                             "ops": {k: op(1.5 * s, [1.5 * s * f for f in process_multiples])
                                     for k, s in secs.items()}})
    for r in rows:  # as run_lab: the default heap's rows are not placed
        perf.place_on_roofline(r, 64, 4, ceilings)
    windows = [{"T": T, "pairs": 10,
                "threads_over_one": {k: cooperation for k in perf.OPS},
                "one_thread_s": {k: one_thread_ms / 1e3 for k in perf.OPS},
                "all_threads_s": {k: cooperation * one_thread_ms / 1e3 for k in perf.OPS}}
               for T in times_ms]
    cfg = {"d_model": 64, "n_heads": 4, "d_head": 16, "T_sweep": list(times_ms), "seed": 0,
           "samples_per_T": 100, "min_time_s": 0.05, "quick": False, "workers": len(process_multiples),
           "blas_threads": 2}
    workers = [worker(list(times_ms))] * len(process_multiples)
    conditions = {**perf.verdict_from({}), "findings": {
        "threads_cooperate": perf.cooperation_finding(windows, 2)}}
    if verdict == "disturbed":
        conditions.update(verdict="disturbed", failed=[
            {"check": "clock_drop", "reason": r, "remedy": "rerun later", "do": "rerun later"}
            for r in reasons])
    return {"experiment": "15-attention-perf", "date": "2026-12-03", "config": cfg,
            "versions": {"python": "3", "numpy": "2"},
            "hardware": {"cpu_model": cpu, "vendor": "GenuineIntel", "family": 6, "model": 143,
                         "numpy_dispatch_supported": list(dispatch), "physical_cores": 2,
                         "virtualized": True, "cpu_governor_at_run": "unavailable"},
            "threads": {"blas_threads": 2, "asked": 2},
            "environment": {}, "heap": {"mode": "warm"}, "conditions": conditions,
            "canary": {"left_out": {}, "sample_kernel": "exp", "sample_slow_ratio": 1.25},
            "estimators": {"process_quantile": 0.25, "ceiling_quantile": 0.75, "confidence": 0.95},
            "ceilings": ceilings, "sweep": rows, "sweep_default_heap": default_rows,
            "analysis": perf.analyse(rows, cfg, ceilings, workers, windows)}


def drifted(results, manifest, beta, slower, start):
    """A copy of a real run (results.json, manifest.json) as if made on a host whose speed had
    moved: β and DRAM's copy rates at `beta` GB/s (the caches' as they were), every op's time_s
    and interval in the sweeps, scores' scaling pass and the softmax's timed passes `slower` times
    as long (their ratios as they were; the processes' estimates, mean and SD not moved), its workers' times from `start` on
    (seconds since the epoch); the roofline's classes, Block E's threshold, the softmax against its
    roofs and Phase 27's preview worked out again by perf.py's own functions. What no drift moves
    (the canary, the verdict) is left as it was."""
    r, m = copy.deepcopy(results), copy.deepcopy(manifest)
    c, d, h = r["ceilings"], r["config"]["d_model"], r["config"]["n_heads"]
    f = beta / c["beta_peak_GBps"]
    dram = c["levels"]["DRAM"]
    for k in ("GBps", "GBps_1thread", "GBps_all_cpus", "GBps_half"):
        dram[k] *= f
    dram["GBps_interval"] = [f * v for v in dram["GBps_interval"]]
    c.update(beta_peak_GBps=beta, beta_peak_interval=[f * v for v in c["beta_peak_interval"]])
    c = r["ceilings"] = perf.with_ridge(c)
    for row in r["sweep"] + r["sweep_default_heap"]:
        row["forward_s"] *= slower
        for o in row["ops"].values():
            o["time_s"] *= slower
            o["time_s_interval"] = [slower * v for v in o["time_s_interval"]]
    for row in r["sweep"]:  # as run_lab: the default heap's rows are not placed
        perf.place_on_roofline(row, d, h, c)
    a, keyed = r["analysis"], perf.entry_at(r["sweep"], perf.FOCUS_T)
    for e in a["scores_scale"]:
        e["scale_s"] *= slower
    for e in a["softmax_passes"]:
        e["sweep_softmax_ns_per_element"] *= slower
        e["passes_ns_per_element"] *= slower
        for ps in e["passes"]:
            for k in ("ns_per_element", "in_cache_ns_per_element", "copy_ns_per_element"):
                ps[k] *= slower
    a.update(scores_av_threshold=perf.thresholds(d // h, c["ridge"]),
             phase_27_preview=perf.phase_27_preview(keyed, d, h, c),
             **{f"softmax{perf.KEYED}": perf.softmax_against_roofs(keyed, c)})
    t0 = min(w["started"] for w in r["worker_processes"])
    for w in r["worker_processes"]:
        w["started"], w["ended"] = w["started"] - t0 + start, w["ended"] - t0 + start
    return r, m


def lab_run_unplotted(m, out, argv):
    """A real run in this process with monkeypatch `m`, into `out`: the pictures not drawn (test_plots
    draws them), calls_at's batches short (the passes' figures are not what such tests check)."""
    for plot in ("plot_perf", "plot_roofline"):
        m.setattr(perf, plot, lambda res: None)
    m.setattr(perf, "png_bytes", lambda fig, stamp=None: b"")
    m.setattr(perf, "CALL_MIN_TIME", 1e-4)
    return perf.run_lab(perf.parse_args(list(argv) + ["--out", str(out)]), list(argv))
