"""Which value of the committed run each figure of the write-up quotes: per document, a phrase with
{} where the figure stands, and how the figure is read off results.json (r) and manifest.json (m)
(reruns.json: RERUNS), formatted as the text prints it. test_docs.py finds every phrase verbatim
and lets no other number of the prose go unbound, except the lab's own vocabulary in STRUCTURAL.
A figure that encodes a condition returns "?" when the condition fails. CLAIMS hold the words
that state a property of the run (a count, a flag, a rule, a share and of what, a cause), each
with what makes it true; rebind.py prints those a new run no longer bears out."""
import json
import math
from pathlib import Path

import perf

EXP = Path(__file__).resolve().parent.parent / "experiments" / "15-attention-perf"
OPS = perf.OPS


def use_reruns(runs):
    """The reruns the bindings read (reruns.json's digests): the committed file's by default;
    rebind.py sets the previous commit's to read the old figures."""
    global RERUNS
    RERUNS = runs


use_reruns(json.loads((EXP / "reruns.json").read_text())["runs"])


def row(r, T, rows="sweep"):
    return next(x for x in r[rows] if x["T"] == T)


def op(r, T, name, rows="sweep"):
    return row(r, T, rows)["ops"][name]


def num(v, decimals):
    return "none" if v is None else f"{v:.{decimals}f}"


def ms(v):
    return f"{v * 1e3:.3f}"


def pct(v, decimals=1):
    return f"{100 * v:.{decimals}f}".replace("-", "−")


def signed(v, decimals=2):
    return f"{v:.{decimals}f}".replace("-", "−")


def at_most(v, decimals):
    """A bound the text calls "at most": rounded up, so that it stays true."""
    return num(math.ceil(v * 10 ** decimals) / 10 ** decimals, decimals)


def at_least(v, decimals):
    """A bound the text calls "at least": rounded down."""
    return num(math.floor(v * 10 ** decimals) / 10 ** decimals, decimals)


def word(flag):
    return "yes" if flag else "no"


def both(lo, hi, decimals, sep="** to **"):
    return f"{num(lo, decimals)}{sep}{num(hi, decimals)}"


def window(r, T):
    return next(w for w in r["analysis"]["threading_windows"] if w["T"] == T)


C = lambda r: r["ceilings"]  # noqa: E731
THR = lambda r: r["analysis"]["scores_av_threshold"]["from_intensity_formula"]  # noqa: E731
LAP = lambda r: r["analysis"]["on_lab_laptop"]  # noqa: E731
SM = lambda r: r["analysis"]["softmax_at_T_512"]  # noqa: E731
AN = lambda r: r["analysis"]["anatomy"]  # noqa: E731
P27 = lambda r: r["analysis"]["phase_27_preview"]  # noqa: E731
OBS = lambda r, i: r["analysis"]["expected_observations"][i]  # noqa: E731
CHK = lambda r, name: r["conditions"]["checks"][name]["value"]  # noqa: E731
LV = lambda r, name: r["ceilings"]["levels"][name]  # noqa: E731
MODEL = lambda r, T: next(x for x in r["analysis"]["softmax_model"] if x["T"] == T)  # noqa: E731
FITS = lambda r: r["analysis"]["pass_costs"]["fits"]  # noqa: E731
THREADS = lambda r, T, k: window(r, T)["threads_over_one"][k]  # noqa: E731
SPREAD = lambda r: max((x["ops"][k]["worker_spread"], k, x["T"]) for x in r["sweep"]  # noqa: E731
                       for k in perf.TIMED_KEYS)
L3_MIB = lambda r: int(r["hardware"]["caches"]["L3"]["size"][:-1]) >> 10  # noqa: E731
ASIDE = lambda r, T: row(r, T)["samples_set_aside"]  # noqa: E731
KEPT_WORKERS = lambda r, T: len(row(r, T)["ops"]["total"]["worker_times"])  # noqa: E731
EXCESS = lambda e: -e["unexplained_s"] / e["measured_s"]  # noqa: E731  (the prediction's, signed)
FIT_POINTS = lambda r: [p for f in FITS(r).values() for p in f["points"]]  # noqa: E731
SMALL_T_THREADS = lambda d: [v for k, v in d.items() if k != "total"]  # noqa: E731

# The reruns (reruns.json's digests: T keys are strings there).
WORDS = "none one two three four five six seven eight nine ten eleven twelve".split()
THREADS_OF = lambda x, T: x["threads_over_one"][str(T)]  # noqa: E731
R_MODEL = lambda x, T: next(e for e in x["softmax_model"] if e["T"] == T)  # noqa: E731
FAILED = lambda x: [f["check"] for f in x["conditions_failed"]]  # noqa: E731
COUNT = lambda pred: WORDS[sum(1 for x in RERUNS if pred(x))]  # noqa: E731


def rank(v, among):
    """Where a figure lies among the reruns' figures."""
    n = sum(1 for x in among if x < v)
    return {0: f"below all {WORDS[len(among)]}", len(among): f"above all {WORDS[len(among)]}"}.get(
        n, f"above {WORDS[n]}")


def rerun_row(label, here, of_rerun, fmt, sep="–"):
    """A row of the reruns' table: this run's figure, the twelve's range, where it lies."""
    def get(r, m):
        among = [of_rerun(x) for x in RERUNS]
        return f"{fmt(here(r, m))} | {fmt(min(among))}{sep}{fmt(max(among))} | {rank(here(r, m), among)}"
    return (f"| {label} | {{}} |", get)


def table_row(name):
    """A row of the lab README's T = 512 table: time_s (ms), shares of time and FLOPs (%),
    GFLOPS, intensity, class."""
    return (f"| {name} | {{}} |", lambda r, m: " | ".join((
        ms(op(r, 512, name)["time_s"]), pct(op(r, 512, name)["time_share"]),
        pct(op(r, 512, name)["flop_share"]), num(op(r, 512, name)["gflops"], 1),
        num(op(r, 512, name)["intensity"], 2), op(r, 512, name)["bound"])))


def model_row(T):
    """A row of the lab README's model table: predicted, measured, in core, bytes, calls (ms)."""
    return (f"| {T} | {{}} |", lambda r, m: " | ".join(ms(MODEL(r, T)[k]) for k in (
        "predicted_s", "measured_s", "core_s", "memory_s", "calls_s")))


LAB = [
    # Block E, question 1
    ("their threshold is T = {} here", lambda r, m: num(THR(r)["T_threshold"], 1)),
    ("({} across the ridge's interval)", lambda r, m: both(
        THR(r)["at_ridge_low"], THR(r)["at_ridge_high"], 1, " to ")),
    ("ridge of **{} FLOP/byte**", lambda r, m: num(C(r)["ridge"], 2)),
    ("(π / β; interval {}).", lambda r, m: both(*C(r)["ridge_interval"], 2, " to ")),
    ("rises with T towards d_k/2 = {}:", lambda r, m: num(THR(r)["asymptotic_intensity"], 0)),
    ("{} FLOP/byte from T = 64 to 512", lambda r, m: "{}, {}, {} and {}".format(
        *(num(op(r, T, "scores")["intensity"], 2) for T in (64, 128, 256, 512)))),
    ("tends to d_k/4 = {}, so", lambda r, m: num(
        r["analysis"]["scores_av_threshold"]["from_inequality_as_written"]["asymptotic_intensity"], 0)),
    ("for a ridge above {}.", lambda r, m: num(
        r["analysis"]["scores_av_threshold"]["from_inequality_as_written"]["asymptotic_intensity"], 0)),
    ("π ≈ **{}** GFLOPS", lambda r, m: str(LAP(r)["pi_GFLOPS"])),
    ("β of **{}** GB/s", lambda r, m: "{}** to **{}".format(*LAP(r)["beta_GBps"])),
    ("a ridge of **{}**: above", lambda r, m: both(*LAP(r)["ridge_range"], 1)),
    ("its 6 MiB L3 from T = **{}**", lambda r, m: str(LAP(r)["softmax_spills_from_T"])),
    # question 2
    ("the softmax runs at {} GFLOPS, ", lambda r, m: num(SM(r)["GFLOPS"], 2)),
    ("GFLOPS, {} % of its memory roofline", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("(β × 5/8 = **{}** GFLOPS)", lambda r, m: num(SM(r)["memory_ceiling_GFLOPS"], 1)),
    ("not under the lab's {} %", lambda r, m: "10" if SM(r)["ratio_to_memory_ceiling"] > 0.1 else "?"),
    ("interval is **{}** ms)", lambda r, m: both(*(1e3 * v for v in MODEL(r, 512)["measured_interval"]),
                                             3)),
    ("The sum instead of the larger predicts **{} ms**", lambda r, m: ms(MODEL(r, 512)["predicted_no_overlap_s"])),
    ("That roofline counts the lab's **{} MB**", lambda r, m: num(AN(r)["softmax_bytes_lab_model"] / 1e6, 1)),
    ("move **{} MB**, mostly in", lambda r, m: num(AN(r)["softmax_bytes_all_steps"] / 1e6, 1)),
    ("at every T, by **{} %**, outside", lambda r, m: EXCESS_RANGE(r)),
    ("at most **{} %** at any T of any rerun", lambda r, m: at_most(100 * max(
        BYTES_SHARE(e) for x in RERUNS for e in x["softmax_model"]), 0)),
    ("unsure: **{}** of the", lambda r, m: str(sum(p["slow"] for p in FIT_POINTS(r)))),
    ("of the **{}** batches of its fits", lambda r, m: str(sum(p["batches"] for p in FIT_POINTS(r)))),
    ("ranged from **{} %** too low", lambda r, m: num(-100 * min(EXCESS(R_MODEL(x, 512)) for x in RERUNS), 1)),
    ("to **{} %** too high", lambda r, m: num(100 * max(EXCESS(R_MODEL(x, 512)) for x in RERUNS), 1)),
    ("The bytes' term is **{} %** of the time measured", lambda r, m: pct(BYTES_SHARE(MODEL(r, 512)))),
    *(model_row(T) for T in (64, 128, 256, 512)),
    # question 3
    ("moves **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("from I = **{}** by the lab's byte count", lambda r, m: num(P27(r)["measured"]["intensity"], 2)),
    ("(measured, **{}** GFLOPS)", lambda r, m: num(P27(r)["measured"]["GFLOPS"], 1)),
    ("to I = **{}**, past the ridge", lambda r, m: num(P27(r)["without_materialising_A"]["intensity"], 0)),
    ("is π, **{}** GFLOPS", lambda r, m: num(P27(r)["without_materialising_A"]["bound_GFLOPS"], 1)),
    ("at best **{} ms**", lambda r, m: ms(P27(r)["without_materialising_A"]["time_lower_bound_s"])),
    ("instead of the **{} ms** that", lambda r, m: ms(P27(r)["measured"]["time_s"])),
    # the pictures and the table
    *(table_row(name) for name in OPS),
    # expected observations
    ("| At T = 64 the projections dominate | **{}** |", lambda r, m: word(OBS(r, 0)["held"])),
    ("the projections take {} % of the forward", lambda r, m: pct(OBS(r, 0)["projections_share"])),
    ("the T² ops {} %;", lambda r, m: pct(OBS(r, 0)["T2_ops_share"])),
    ("the softmax alone {} %", lambda r, m: pct(op(r, 64, "softmax")["time_share"])),
    ("| At T = 512 the T² ops dominate | **{}** |", lambda r, m: word(OBS(r, 1)["held"])),
    ("dominate | **yes** | {} % |", lambda r, m: pct(OBS(r, 1)["T2_ops_share"])),
    ("| The softmax is never the smallest op | **{}** |", lambda r, m: word(OBS(r, 2)["held"])),
    ("qkv_proj holds **{} %** of the FLOPs", lambda r, m: pct(op(r, 64, "qkv_proj")["flop_share"])),
    ("and takes **{} ms** as three", lambda r, m: ms(op(r, 64, "qkv_proj")["time_s"])),
    ("the softmax holds **{} %** of them", lambda r, m: pct(op(r, 64, "softmax")["flop_share"])),
    ("of them and takes **{} ms**,", lambda r, m: ms(op(r, 64, "softmax")["time_s"])),
    # findings
    ("windows at T = 512: **{}**)", lambda r, m: str(window(r, 512)["windows"])),
    ("at T = 512, **{}×** one thread's time on qkv_proj", lambda r, m: num(THREADS(r, 512, "qkv_proj"), 2)),
    ("qkv_proj, **{}×** on av", lambda r, m: num(THREADS(r, 512, "av"), 2)),
    ("av, **{}×** on out_proj", lambda r, m: num(THREADS(r, 512, "out_proj"), 2)),
    ("and **{}×** on scores", lambda r, m: num(THREADS(r, 512, "scores"), 2)),
    ("within ±**{} %** of it", lambda r, m: pct(max(abs(v - 1) for T in (64, 128)
                                                   for v in SMALL_T_THREADS(window(r, T)["threads_over_one"])))),
    ("(±**{} %** across the reruns)", lambda r, m: pct(max(abs(v - 1) for x in RERUNS for T in (64, 128)
                                                         for v in SMALL_T_THREADS(THREADS_OF(x, T))), 0)),
    ("which calls no BLAS, moves **{}×**", lambda r, m: num(THREADS(r, 512, "softmax"), 2)),
    ("at T = 512 (**{}** against", lambda r, m: ms(op(r, 512, "scores")["time_s"])),
    ("against **{} ms**), though", lambda r, m: ms(op(r, 512, "av")["time_s"])),
    ("takes **{} ms** of the anatomy's", lambda r, m: ms(AN(r)["scores"]["scale"]["median_s"])),
    ("the anatomy's **{} ms** for scores", lambda r, m: ms(AN(r)["scores_sum_of_steps_s"])),
    ("still takes **{}×** av's time", lambda r, m: num(window(r, 512)["one_thread_s"]["scores"]
                                                    / window(r, 512)["one_thread_s"]["av"], 2)),
    ("once more (**{} MB** in all", lambda r, m: num(AN(r)["scores_bytes_all_steps"] / 1e6, 1)),
    ("where the lab counts **{} MB**)", lambda r, m: num(AN(r)["scores_bytes_lab_model"] / 1e6, 1)),
    ("it takes **{} ms** instead", lambda r, m: ms(row(r, 512, "sweep_default_heap")["forward_s"])),
    ("instead of **{} ms**, with", lambda r, m: ms(row(r, 512)["forward_s"])),
    ("with **{}** page faults per forward", lambda r, m: num(row(r, 512, "sweep_default_heap")["page_faults_per_forward"], 0)),
    ("(**{}** against", lambda r, m: ms(row(r, 256, "sweep_default_heap")["forward_s"])),
    ("against **{}** ms at T = 256)", lambda r, m: ms(row(r, 256)["forward_s"])),
    ("fewer than **{}** faults per forward", lambda r, m: "0.01" if max(
        x["page_faults_per_forward"] for x in r["sweep"]) < 0.01 else "?"),
    ("copies a {} KiB working set (within its L2)", lambda r, m: str(LV(r, "L2")["bytes"] >> 10)),
    ("(within its L2) at **{} GB/s**", lambda r, m: num(LV(r, "L2")["GBps"], 1)),
    ("and the L3's {} MiB at", lambda r, m: str(LV(r, "L3")["bytes"] >> 20)),
    ("MiB at **{} GB/s**.", lambda r, m: num(LV(r, "L3")["GBps"], 1)),
    ("The {} MiB one that stands", lambda r, m: str(LV(r, "DRAM")["bytes"] >> 20)),
    ("four times the {} MiB L3", lambda r, m: str(L3_MIB(r))),
    ("copies at **{} GB/s** on both cores and", lambda r, m: num(LV(r, "DRAM")["GBps_all_threads"], 1)),
    ("and **{} GB/s** on one", lambda r, m: num(LV(r, "DRAM")["GBps_1thread"], 1)),
    ("a {} MiB one at", lambda r, m: str(LV(r, "DRAM")["check_bytes"] >> 20)),
    ("MiB one at **{} GB/s**", lambda r, m: num(LV(r, "DRAM")["GBps_check"], 1)),
    ("the {} KiB copy runs at", lambda r, m: str(LV(r, "L1d")["bytes"] >> 10)),
    ("KiB copy runs at **{} GB/s**", lambda r, m: num(LV(r, "L1d")["GBps"], 1)),
    # how it was run
    ("workers and analysis took **{} s**", lambda r, m: num(r["run_wall_s"], 1)),
    ("committed whatever its verdict: **{}**", lambda r, m: r["conditions"]["verdict"]),
    ("{} cores (no SMT)", lambda r, m: str(r["hardware"]["physical_cores"])),
    ("It ran on a {}-core virtual machine", lambda r, m: str(r["hardware"]["physical_cores"])),
    ("(AuthenticAMD family **{}**", lambda r, m: str(r["hardware"]["family"])),
    ("model **{}**); L2", lambda r, m: str(r["hardware"]["model"])),
    ("L2 {} KiB per core", lambda r, m: r["hardware"]["caches"]["L2"]["size"][:-1]),
    ("L3 {} MiB shared", lambda r, m: str(L3_MIB(r))),
    ("OpenBLAS with {} threads", lambda r, m: str(r["threads"]["blas_threads"])),
    ("until {} ms have passed (", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("passed (**{}** forwards at T = 64", lambda r, m: "{}** to **{}".format(*row(r, 64)["forwards_per_sample"])),
    ("at T = 64, **{}** at T = 512)", lambda r, m: "{}** to **{}".format(*row(r, 512)["forwards_per_sample"])),
    ("**{}** at every T, one-thread samples included", lambda r, m: str(max(x["samples_below_min_time"] for x in r["sweep"] + r["sweep_default_heap"]))),
    ("{} samples per T, by five", lambda r, m: str(r["config"]["samples_per_T"])),
    ("each {} rounds over every T", lambda r, m: str(r["config"]["rounds_per_worker"])),
    ("takes the hatched bars' **{}** samples per T", lambda r, m: str(r["config"]["default_heap_samples"])),
    ("more than {} times its fast state", lambda r, m: str(r["canary"]["slow_ratio"])),
    ("(the {}th percentile of the run's readings)", lambda r, m: num(100 * r["canary"]["reference_quantile"], 0)),
    ("all those of **{}** warm workers", lambda r, m: WORDS[r["config"]["workers"] - KEPT_WORKERS(r, 512)]),
    ("rest on the other **{}**", lambda r, m: WORDS[KEPT_WORKERS(r, 512)]),
    ("is set aside: here {} of the", lambda r, m: "**{}**, **{}**, **{}** and **{}**".format(
        *(ASIDE(r, T) for T in (64, 128, 256, 512)))),
    ("of the {} samples at", lambda r, m: str(r["config"]["samples_per_T"])),
    ("(at T = 512 a median **{}** times", lambda r, m: num(row(r, 512)["set_aside_median_ratio"], 2)),
    ("mostly on the `{}` part", lambda r, m: {"compute": "exp", "blas": "matmul"}[max(
        row(r, 512)["set_aside_by_canary_part"], key=row(r, 512)["set_aside_by_canary_part"].get)]),
    ("The canary cost at most **{} %**", lambda r, m: pct(max(x["canary_cost"] for x in r["sweep"]), 2)),
    ("put the timers' cost at **{} %** at T = 64", lambda r, m: pct(row(r, 64)["instrumentation_overhead"], 2)),
    ("(95 % interval **{}**", lambda r, m: pct(row(r, 64)["instrumentation_overhead_ci95"][0], 2)),
    ("to **{} %**), the largest", lambda r, m: pct(row(r, 64)["instrumentation_overhead_ci95"][1], 2)),
    ("(covering **{} %** for β and π", lambda r, m: at_least(100 * LV(r, "DRAM")["interval_coverage"], 0)),
    ("**{} %** for the cache levels)", lambda r, m: at_least(100 * min(
        lv["interval_coverage"] for n, lv in C(r)["levels"].items() if n != "DRAM"), 0)),
    ("lasts at least {} ms. β", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("β **{} GB/s** from", lambda r, m: num(C(r)["beta_peak_GBps"], 1)),
    ("GB/s** from **{}** repeats of a", lambda r, m: str(C(r)["beta_repeats"])),
    ("repeats of a {} MiB copy", lambda r, m: str(LV(r, "DRAM")["bytes"] >> 20)),
    ("(interval **{}**); π", lambda r, m: both(*C(r)["beta_peak_interval"], 1, "**–**")),
    ("π **{} GFLOPS** from", lambda r, m: num(C(r)["pi_peak_GFLOPS"], 1)),
    ("GFLOPS** from **{}** repeats of a", lambda r, m: str(C(r)["pi_repeats"])),
    ("a {}² fp32 matmul", lambda r, m: str(C(r)["matmul"]["n"])),
    ("matmul (interval **{}**).", lambda r, m: both(*C(r)["pi_peak_interval"], 1, "**–**")),
    ("other processes used **{}** CPUs", lambda r, m: num(CHK(r, "other_processes_cpus"), 3)),
    ("steal was **{} %**", lambda r, m: pct(CHK(r, "steal_fraction"), 2)),
    ("preempted **{}** times a second", lambda r, m: num(CHK(r, "preemptions_per_s"), 1)),
    ("ran **{} %** faster in the last", lambda r, m: pct(-CHK(r, "clock_drop"))),
    ("this run's β is below {} of the twelve", lambda r, m: WORDS[sum(
        1 for x in RERUNS if x["levels"]["DRAM"]["GBps"] > C(r)["beta_peak_GBps"])]),
    ("two threads took **{}×** one thread's time on av", lambda r, m: num(CHK(r, "threads_cooperate"), 2)),
    ("But **{} %** of the samples", lambda r, m: pct(CHK(r, "slow_samples"), 0)),
    ("(limit {} %) and the workers'", lambda r, m: pct(perf.SET_ASIDE_LIMIT, 0)),
    ("T = 256 lay **{}×** apart", lambda r, m: num(CHK(r, "workers_agree"), 2)),
    ("apart (limit {}), so", lambda r, m: str(perf.SPREAD_LIMIT) if CHK(r, "workers_agree") > perf.SPREAD_LIMIT else "?"),
    ("preemptions (**{}** a second)", lambda r, m: num(r["conditions"]["not_judged"]["default_heap_preemptions_per_s"], 1)),
    # the next run: the reruns
    ("(`reruns.json`), **{}** called", lambda r, m: COUNT(lambda x: x["conditions_verdict"] == "quiet")),
    ("quiet; **{}** were disturbed", lambda r, m: COUNT(lambda x: x["conditions_verdict"] != "quiet")),
    ("apart), **{}** also by", lambda r, m: COUNT(lambda x: "clock_drop" in FAILED(x))),
    rerun_row("the forward at T = 512 (ms)", lambda r, m: row(r, 512)["forward_s"],
              lambda x: x["forward_s"]["512"], ms),
    rerun_row("β (GB/s)", lambda r, m: C(r)["beta_peak_GBps"], lambda x: x["levels"]["DRAM"]["GBps"],
              lambda v: num(v, 1)),
    rerun_row("Q1: the ridge (FLOP/byte)", lambda r, m: C(r)["ridge"], lambda x: x["ridge_intensity"],
              lambda v: num(v, 2)),
    rerun_row("Q1: the threshold T", lambda r, m: THR(r)["T_threshold"],
              lambda x: x["scores_av_threshold"]["T_threshold"], lambda v: num(v, 1)),
    rerun_row("Q2: of the memory roofline (%)", lambda r, m: SM(r)["ratio_to_memory_ceiling"],
              lambda x: x["softmax_at_T_512"]["ratio_to_memory_ceiling"], pct),
    rerun_row("the model's excess at T = 512 (%)", lambda r, m: EXCESS(MODEL(r, 512)),
              lambda x: EXCESS(R_MODEL(x, 512)), pct, " to "),
    rerun_row("two threads on av at T = 512 (×)", lambda r, m: THREADS(r, 512, "av"),
              lambda x: THREADS_OF(x, 512)["av"], lambda v: num(v, 2)),
    *(rerun_row(label, lambda r, m, k=k: m["results_summary"][k],
                lambda x, k=k: x["results_summary"][k], lambda v, d=d: num(v, d))
      for label, k, d in (("softmax GFLOPS at T = 512", "softmax_GFLOPS_at_T_512", 2),
                          ("softmax's share at T = 512 (%)", "softmax_pct_of_total_at_T_512", 1),
                          ("scores GFLOPS at T = 512", "scores_GFLOPS_at_T_512", 1))),
    rerun_row("samples set aside, most at a T (%)", lambda r, m: CHK(r, "slow_samples"),
              lambda x: x["checks"]["slow_samples"], lambda v: pct(v, 0)),
    ("at most **{}×** one on av", lambda r, m: at_most(max(THREADS_OF(x, 512)["av"] for x in RERUNS), 2)),
    ("at least **{}×** on scores", lambda r, m: at_least(min(THREADS_OF(x, 512)["scores"] for x in RERUNS), 2)),
    ("come to **{} %** (the model's row", lambda r, m: pct(OUTSIDE_CORE(MODEL(r, 64)), 0)),
    ("at T = 64 memory-bound in **{}**", lambda r, m: COUNT(lambda x: x["bound"]["scores"][0] == "memory")),
    ("near the ridge in **{}**; near", lambda r, m: COUNT(lambda x: x["bound"]["scores"][0] == "ridge")),
    ("near the ridge at 128 in **{}**", lambda r, m: COUNT(lambda x: x["bound"]["scores"][1] == "ridge")),
    ("at 256 in **{}**", lambda r, m: COUNT(lambda x: x["bound"]["scores"][2] == "ridge")),
    ("at 512 in **{}**; the", lambda r, m: COUNT(lambda x: x["bound"]["scores"][3] == "ridge")),
    ("the nearer at T = 512 in **{}**", lambda r, m: COUNT(lambda x: R_MODEL(x, 512)["nearer_rule"] == "overlapped")),
    ("a DRAM plateau in **{}**", lambda r, m: COUNT(lambda x: x["levels"]["DRAM"]["plateau"])),
]

TOP = [
    ("is T = **{}**. It moves", lambda r, m: num(THR(r)["T_threshold"], 1)),
    ("crosses the ridge of **{}**,", lambda r, m: num(C(r)["ridge"], 2)),
    ("it runs at **{} GFLOPS**", lambda r, m: num(m["results_summary"]["softmax_GFLOPS_at_T_512"], 2)),
    ("**{} %** of its memory roofline", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("set aside **{}** % of each T's samples", lambda r, m: both(min(ASIDE(r, T) for T in (64, 128, 256, 512)),
                                                               max(ASIDE(r, T) for T in (64, 128, 256, 512)), 0)),
    ("kept those of **{}** of the five", lambda r, m: WORDS[KEPT_WORKERS(r, 512)]),
    ("would take **{} %** of its time", lambda r, m: pct(BYTES_SHARE(MODEL(r, 512)))),
    ("with **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("**{} %** of the forward at T = 512", lambda r, m: num(m["results_summary"]["softmax_pct_of_total_at_T_512"], 1)),
    ("the T² ops already take **{} %**", lambda r, m: pct(OBS(r, 0)["T2_ops_share"])),
    ("The committed run is **{}**", lambda r, m: r["conditions"]["verdict"]),
    ("It ran on a {}-core VM", lambda r, m: str(r["hardware"]["physical_cores"])),
]

REPORT = [
    ("on a {}-core virtual machine", lambda r, m: str(r["hardware"]["physical_cores"])),
    ("until {} ms have passed", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("This run was {}.", lambda r, m: r["conditions"]["verdict"]),
    ("(threshold T = **{}**, which", lambda r, m: num(THR(r)["T_threshold"], 1)),
    ("the softmax runs at **{} %** of its memory", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("is **{} %** of the forward there", lambda r, m: num(m["results_summary"]["softmax_pct_of_total_at_T_512"], 1)),
    ("at every T: **{} %** too high", lambda r, m: EXCESS_RANGE(r)),
    ("would move **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
]

SOLUTION = [
    ("on a {}-core AMD EPYC", lambda r, m: str(r["hardware"]["physical_cores"])),
    ("tends to d_k/2 = {} FLOP/byte", lambda r, m: num(THR(r)["asymptotic_intensity"], 0)),
    ("π ≈ {} GFLOPS and", lambda r, m: str(LAP(r)["pi_GFLOPS"])),
    ("β of {} GB/s, a ridge", lambda r, m: "{}–{}".format(*LAP(r)["beta_GBps"])),
    ("a ridge of **{}**: above", lambda r, m: both(*LAP(r)["ridge_range"], 1)),
    ("above {}, so expect", lambda r, m: num(THR(r)["asymptotic_intensity"], 0)),
    ("from T = {} a working set", lambda r, m: str(LAP(r)["softmax_spills_from_T"])),
    ("past its {} MiB L3", lambda r, m: str(LAP(r)["caches_bytes"]["L3"] >> 20)),
    ("**{}** times fewer bytes for", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("from an intensity of **{}** to", lambda r, m: num(P27(r)["measured"]["intensity"], 2)),
    ("to **{}**, past the ridge", lambda r, m: num(P27(r)["without_materialising_A"]["intensity"], 0)),
    ("(the reference's did from T = {} on)", lambda r, m: str(min(
        x["T"] for x in r["sweep_default_heap"] if x["page_faults_per_forward"] >= 1))),
    ("each the 75th percentile of **{}** repeats", lambda r, m: str(C(r)["beta_repeats"])
     if C(r)["beta_repeats"] == C(r)["pi_repeats"] else "?"),
    ("estimates lie within ±**{} %**)", lambda r, m: at_most(100 * max(abs(x["instrumentation_overhead"])
                                                                   for x in r["sweep"]), 1)),
    ("(the reference's took **{} s**)", lambda r, m: num(r["run_wall_s"], 1)),
    ("measurements of at least {} ms", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("until {} ms have passed", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("more than {} % from the first worker", lambda r, m: pct(perf.CLOCK_DROP_LIMIT, 0)),
    ("distribution-free {} % interval", lambda r, m: pct(perf.CONFIDENCE, 0)),
    ("with its {} % interval", lambda r, m: pct(perf.CONFIDENCE, 0)),
]

REFLECTION = []  # a learner's voice: no figures, and the test checks that none creeps in

BINDINGS = {
    "experiments/15-attention-perf/README.md": LAB,
    "README.md": TOP,
    "PHASE_15_REPORT.md": REPORT,
    "solutions/03-attention-perf-ref.md": SOLUTION,
    "learners/borja/phase-15/reflections.md": REFLECTION,
}

# The lab's own vocabulary: numbers that name things rather than measure them.
STRUCTURAL = [
    r"\bT ?= ?\d+(?:(?:, | and | to |…)\d+)*", r"\bT=\d+", r"d_model ?= ?64", r"d_k ?= ?16",
    r"\b4 heads\b", r"Phase (?:1|15|27)\b", r"Lab 03\b", r"[Ll]abs 00–02", r"Block [A-F]\b",
    r"### [1-3]\.", r"question [1-3]", r"^# 15-attention-perf", r"15-attention-perf",
    r"i5-8250U", r"\bfp32\b", r"float(?:32|64)", r"\bL[123]d?\b", r"AVX-?512", r"AVX2",
    r"\b5/8\b", r"\bT²", r"8·T²|4·T²", r"\b1e-5\b", r"\(8 with", r"\b15 W\b",
    r"\b6 MiB\b", r"\b95 % interval", r"\b25th percentile", r"\b75th percentile",
    r"Python 3\.1[01]", r"\b3\.10 or newer", r"\b3\.11 with", r"\b3\.10 with", r"× 5/8",
    r"\b2048²", r"128×128", r"\b64 KiB\b", r"\b10th percentile", r"8/5", r"1\. \*\*|2\. \*\*|3\. \*\*",
    r"\b10 %", r"d_k/2", r"d_k/4", r"\bat (?:64|128|256|512)\b", r"NumPy 2\b", r"X86_V4",
    r"OMP_NUM_THREADS=[14]", r"\bU-series\b", r"\b45 s\b", r"about 45 s", r"\bthan 8\b",
    r"above 8\b", r"\b256 KiB\b", r"\| 64 \||\| 128 \||\| 256 \||\| 512 \|", r"rerun_01|rerun_12",
    r"\bQ[12]\b", r"4·d_k·I_crit / \(d_k − 2·I_crit\)", r"\S*(?:03-attention|PHASE_15|phase-15|rerun_NN)\S*",
]

# Quantitative words, stated properties and causes, each with what makes it true of the committed
# run: a test that could have gone the other way.
LABR = "experiments/15-attention-perf/README.md"
SOL = "solutions/03-attention-perf-ref.md"
REFL = "learners/borja/phase-15/reflections.md"
REP = "PHASE_15_REPORT.md"
BOUNDS = lambda r, k: [x["ops"][k]["bound"] for x in r["sweep"]]  # noqa: E731
ALL_T = lambda r, ops, cls, key="bound": all(x["ops"][o][key] == cls for x in r["sweep"] for o in ops)  # noqa
FAULTS_FROM_256 = lambda r: all((row(r, T, "sweep_default_heap")["page_faults_per_forward"] >= 1) == (T >= 256)  # noqa
                                for T in (64, 128, 256, 512))
SOFTMAX_LARGEST = lambda r: set(r["analysis"]["dominant_op_per_T"].values()) == {"softmax"}  # noqa
IN_CORE = lambda r, T: MODEL(r, T)["core_s"] > MODEL(r, T)["memory_s"]  # noqa: E731
LAB_BYTES = lambda r: AN(r)["softmax_bytes_all_steps"] / AN(r)["softmax_bytes_lab_model"]  # noqa
THREADS_SPLIT = lambda r: (min(THREADS(r, 512, k) for k in ("qkv_proj", "av", "out_proj")) < 0.7  # noqa: E731
                           and THREADS(r, 512, "scores") > 0.9
                           and all(x["threads_over_one"]["512"]["av"] < x["threads_over_one"]["512"]["scores"]
                                   for x in RERUNS))
R_ALL = lambda pred: all(pred(x) for x in RERUNS)  # noqa: E731
BYTES_SHARE = lambda e: e["memory_s"] / e["measured_s"]  # noqa: E731  (the model's bytes term)
OUTSIDE_CORE = lambda e: (e["memory_s"] + e["calls_s"]) / e["measured_s"]  # noqa: E731  (bytes + calls)
EXCESS_RANGE = lambda r: both(*(100 * f(EXCESS(MODEL(r, T)) for T in (64, 128, 256, 512))  # noqa: E731
                                for f in (min, max)), 1)
FITS_MOSTLY_SLOW = lambda r: (sum(p["slow"] for p in FIT_POINTS(r))  # noqa: E731
                              > 0.5 * sum(p["batches"] for p in FIT_POINTS(r)))
SCORES_AV_HERE = lambda r: all(BOUNDS(r, k) == ["memory", "ridge", "ridge", "ridge"]  # noqa: E731
                               for k in ("scores", "av"))
R_COMPUTE_AT_512 = lambda: R_ALL(  # noqa: E731
    lambda x: all(R_BOUND(x, k, 512) == "compute" for k in ("scores", "av")))
Q2_HIGHEST = lambda r: R_ALL(  # noqa: E731
    lambda x: x["softmax_at_T_512"]["ratio_to_memory_ceiling"] <= SM(r)["ratio_to_memory_ceiling"])
THRESHOLD_MOVES = lambda: (max(x["scores_av_threshold"]["T_threshold"] for x in RERUNS)  # noqa: E731
                           > 2 * min(x["scores_av_threshold"]["T_threshold"] for x in RERUNS))
RERUNS_DISAGREE = lambda: (max(x["forward_s"]["512"] for x in RERUNS)  # noqa: E731
                           > 1.05 * min(x["forward_s"]["512"] for x in RERUNS))
R_BOUND = lambda x, k, T: x["bound"][k][(64, 128, 256, 512).index(T)]  # noqa: E731
TIMER_OUTSIDE_ZERO = lambda r: [x["T"] for x in r["sweep"] if not  # noqa: E731
                                x["instrumentation_overhead_ci95"][0] < 0 < x["instrumentation_overhead_ci95"][1]]
CLAIMS = [
    # question 1
    (LABR, "The softmax at every T; the projections at none.",
     lambda r, m: ALL_T(r, ("softmax",), "memory") and ALL_T(r, ("qkv_proj", "out_proj"), "compute")),
    (LABR, "Scores and av at T = 64, and near the ridge",
     lambda r, m: SCORES_AV_HERE(r)),
    (LABR, "near the ridge (inside its interval) from T = 128 on",
     lambda r, m: all(C(r)["ridge_interval"][0] <= op(r, T, k)["intensity"] <= C(r)["ridge_interval"][1]
                      for T in (128, 256, 512) for k in ("scores", "av"))),
    (LABR, "which put scores and av compute-bound at T = 512 in all twelve",
     lambda r, m: len(RERUNS) == 12 and R_COMPUTE_AT_512()),
    (LABR, "One core copies a 512 KiB working set (within its L2)",
     lambda r, m: LV(r, "L2")["GBps_from"] == LV(r, "L3")["GBps_from"] == "1thread"),
    (LABR, "whose samples the canary set aside as slow",
     lambda r, m: all(v > perf.CANARY_SLOW for x in r["sweep"] for v in x["canary_ratios"][:r["config"]["rounds_per_worker"]])),
    (LABR, "It moves with β, which this host does not hold still",
     lambda r, m: THRESHOLD_MOVES()),
    (LABR, "scores and av are compute-bound at every T; the softmax stays memory-bound",
     lambda r, m: ALL_T(r, ("scores", "av"), "compute", "level_bound")
     and ALL_T(r, ("softmax",), "memory", "level_bound")),
    (LABR, "above d_k/2, so scores and av would be memory-bound against DRAM at every T there",
     lambda r, m: LAP(r)["ridge_range"][0] > THR(r)["asymptotic_intensity"]),
    # question 2: the prediction, and what it says of the cause
    (LABR, "not under the lab's 10 %", lambda r, m: SM(r)["ratio_to_memory_ceiling"] > 0.1),
    (LABR, "The prediction is too high at every T",
     lambda r, m: all(MODEL(r, T)["unexplained_s"] < 0 for T in (64, 128, 256, 512))),
    (LABR, "outside the measured noise", lambda r, m: not any(MODEL(r, T)["within_noise"] for T in (64, 128, 256, 512))),
    (LABR, "further still", lambda r, m: abs(MODEL(r, 512)["predicted_no_overlap_s"] - MODEL(r, 512)["measured_s"])
     > abs(MODEL(r, 512)["unexplained_s"])),
    (LABR, "That roofline counts the lab's", lambda r, m: LAB_BYTES(r) > 1),
    (LABR, "mostly in the caches", lambda r, m: SM(r)["level"] in ("L2", "L3")),
    # the cause: the bytes at the measured copy rates could have taken most of the time; they do not
    (LABR, "streaming the passes' bytes does not account for the softmax's time",
     lambda r, m: all(BYTES_SHARE(MODEL(r, T)) < 0.5 for T in (64, 128, 256, 512))
     and R_ALL(lambda x: all(BYTES_SHARE(e) < 0.5 for e in x["softmax_model"]))),
    (LABR, "By the model's account the rest is work in core, but its size is unsure",
     lambda r, m: all(IN_CORE(r, T) for T in (64, 128, 256, 512))
     and FITS_MOSTLY_SLOW(r)),
    # question 3
    (LABR, "past the ridge. Its roofline bound there is π",
     lambda r, m: P27(r)["without_materialising_A"]["bound"] == "compute"),
    # expected observations
    (LABR, "it is the *largest* at every T", lambda r, m: SOFTMAX_LARGEST(r)),
    (LABR, "The first fails on the softmax",
     lambda r, m: op(r, 64, "softmax")["time_share"] > OBS(r, 0)["projections_share"]),
    (LABR, "the rest, by the model's account, is numpy's work per row and per element",
     lambda r, m: OUTSIDE_CORE(MODEL(r, 64)) < 0.5
     and IN_CORE(r, 64)),
    # findings
    (LABR, "The softmax, which calls no BLAS, moves",
     lambda r, m: 0.9 <= THREADS(r, 512, "softmax") <= 1.1),
    (LABR, "Scores costs more than twice av",
     lambda r, m: 2 < op(r, 512, "scores")["time_s"] / op(r, 512, "av")["time_s"] < 3),
    (LABR, "though both have the same FLOPs and, by the lab's count, bytes",
     lambda r, m: op(r, 512, "scores")["flops"] == op(r, 512, "av")["flops"]
     and op(r, 512, "scores")["bytes"] == op(r, 512, "av")["bytes"]),
    (LABR, "the threads do not explain the rest, for on one thread scores still takes",
     lambda r, m: window(r, 512)["one_thread_s"]["scores"] > 1.5 * window(r, 512)["one_thread_s"]["av"]),
    (LABR, "Why its matmul is the slower is not measured here",
     lambda r, m: AN(r)["scores"]["matmul"]["median_s"] > op(r, 512, "av")["time_s"]),
    (LABR, "the forward faults from T = 256 on", lambda r, m: FAULTS_FROM_256(r)),
    (LABR, "at T = 64 and 128 it barely faults", lambda r, m: FAULTS_FROM_256(r)),
    (LABR, "more than 10 % apart, no plateau by the run's rule",
     lambda r, m: not LV(r, "DRAM")["plateau"]
     and abs(LV(r, "DRAM")["GBps_check"] / LV(r, "DRAM")["GBps"] - 1) > perf.PLATEAU == 0.10),
    (LABR, "β is the larger copy's", lambda r, m: C(r)["beta_peak_GBps"] == LV(r, "DRAM")["GBps"]),
    (LABR, "four times the", lambda r, m: LV(r, "DRAM")["bytes"] == 4 * (L3_MIB(r) << 20)),
    (LABR, "There is no L1 roof",
     lambda r, m: LV(r, "L1d")["call_cost_bound"] and LV(r, "L1d")["GBps"] < LV(r, "L2")["GBps"]),
    # how it was run
    (LABR, "none was shorter (`samples_below_min_time`",
     lambda r, m: all(x["samples_below_min_time"] == 0 and x["shortest_sample_s"] >= r["config"]["min_time_s"]
                      for x in r["sweep"] + r["sweep_default_heap"])),
    (LABR, "each repeat lasts at least",
     lambda r, m: AN(r)["shortest_batch_s"] >= r["config"]["min_time_s"]),
    (LABR, "by five warm worker processes in turn",
     lambda r, m: r["config"]["workers"] == 5 and all(x["workers"] == 5 for x in r["sweep"])),
    (LABR, "A sixth process, the default-heap worker",
     lambda r, m: [w["label"] for w in r["worker_processes"]] == ["default heap"] + [f"warm {i}" for i in range(1, 6)]),
    (LABR, "every interval holds zero", lambda r, m: TIMER_OUTSIDE_ZERO(r) == []),
    (LABR, "the largest at any T", lambda r, m: abs(row(r, 64)["instrumentation_overhead"]) == max(
        abs(x["instrumentation_overhead"]) for x in r["sweep"])),
    (LABR, "the clock check (without cpufreq, the canary's `exp` part) passed",
     lambda r, m: CHK(r, "clock_drop") < 0 and r["conditions"]["checks"]["clock_drop"]["basis"] == "canary"),
    (LABR, "of the samples at T = 64 were set aside", lambda r, m: ASIDE(r, 64) == max(ASIDE(r, T) for T in (64, 128, 256, 512))),
    (LABR, "the workers' estimates of scores at T = 256", lambda r, m: SPREAD(r) == (CHK(r, "workers_agree"), "scores", 256)),
    (LABR, "so the run is **disturbed**",
     lambda r, m: sorted(f["check"] for f in r["conditions"]["failed"]) == ["slow_samples", "workers_agree"]),
    (LABR, "the figures rest on the other",
     lambda r, m: len({KEPT_WORKERS(r, T) for T in (64, 128, 256, 512)}) == 1
     and all(ASIDE(r, T) >= (r["config"]["workers"] - KEPT_WORKERS(r, T)) * r["config"]["rounds_per_worker"]
             for T in (64, 128, 256, 512))),
    (LABR, "for β and π", lambda r, m: C(r)["beta_repeats"] == C(r)["pi_repeats"]),
    (LABR, "no cpufreq, so no `performance` governor",
     lambda r, m: r["conditions"]["unknown"] == ["governor_or_turbo_changed"]
     and r["hardware"]["cpu_governor_at_run"] == "unavailable"),
    (LABR, "It is the first default run after the twelve of `reruns.json`",
     lambda r, m: len(RERUNS) == 12 and all(x["perf_py_sha256"] == m["perf_py_sha256"] for x in RERUNS)),
    # the next run: each statement true of every rerun, or counted
    (LABR, "were disturbed, each by `workers_agree` (scores' warm workers apart)",
     lambda r, m: all("workers_agree" in FAILED(x) and any(f["check"] == "workers_agree" and "scores" in f["reason"]
                                                           for f in x["conditions_failed"])
                      for x in RERUNS if x["conditions_verdict"] != "quiet")),
    (LABR, "equals the softmax's share: in every run the softmax is the one op memory-bound against its level",
     lambda r, m: all(y["results_summary"]["phase_27_motivation_pct_memory"]
                      == y["results_summary"]["softmax_pct_of_total_at_T_512"] for y in RERUNS + [m])
     and R_ALL(lambda x: [k for k in OPS if "memory" in x["level_bound"][k]] == ["softmax"])
     and [k for k in OPS if any(x["ops"][k]["level_bound"] == "memory" for x in r["sweep"])] == ["softmax"]),
    (LABR, "**In every rerun**: the softmax memory-bound at every T, the largest op, over half the forward",
     lambda r, m: R_ALL(lambda x: x["bound"]["softmax"] == ["memory"] * 4
                        and set(x["dominant_op_per_T"].values()) == {"softmax"}
                        and all(s["softmax"] > 0.5 for s in x["time_share"].values()))),
    (LABR, "the projections compute-bound; scores and av compute-bound against their level",
     lambda r, m: R_ALL(lambda x: all(x["bound"][k] == ["compute"] * 4 for k in ("qkv_proj", "out_proj"))
                        and all(x["level_bound"][k] == ["compute"] * 4 for k in ("scores", "av")))),
    (LABR, "lab's 10 % not reached; the expected observations as here",
     lambda r, m: R_ALL(lambda x: x["softmax_at_T_512"]["ratio_to_memory_ceiling"] > 0.1
                        and x["expected_observations_held"] == [o["held"] for o in r["analysis"]["expected_observations"]])),
    (LABR, "scores over twice av at T = 512",
     lambda r, m: R_ALL(lambda x: x["time_s"]["512"]["scores"] > 2 * x["time_s"]["512"]["av"])),
    (LABR, "the default heap faulting from T = 256 on, over twice as slow at 512; the L1 copy slower than the L2's",
     lambda r, m: R_ALL(lambda x: [T for T, d in x["default_heap"].items() if d["page_faults_per_forward"] >= 1]
                        == ["256", "512"] and x["default_heap"]["512"]["forward_s"] > 2 * x["forward_s"]["512"]
                        and x["levels"]["L1d"]["GBps"] < x["levels"]["L2"]["GBps"])),
    (LABR, "**Not in every rerun**",
     lambda r, m: not R_ALL(lambda x: R_BOUND(x, "scores", 64) == "memory")
     and not R_ALL(lambda x: R_MODEL(x, 512)["nearer_rule"] == "overlapped")
     and not R_ALL(lambda x: x["levels"]["DRAM"]["plateau"])),
    # the other documents: each answer quoted, its reason in the lab README
    ("README.md", "Scores and av, in this run, at T = 64, and near the ridge (inside its interval) above",
     lambda r, m: ALL_T(r, ("softmax",), "memory") and SCORES_AV_HERE(r)),
    ("README.md", "the twelve reruns put scores and av compute-bound at T = 512 in every one",
     lambda r, m: len(RERUNS) == 12 and R_COMPUTE_AT_512()),
    ("README.md", "the highest of this run and its twelve reruns",
     lambda r, m: Q2_HIGHEST(r)),
    ("README.md", "kept those of", lambda r, m: len({KEPT_WORKERS(r, T) for T in (64, 128, 256, 512)}) == 1),
    ("README.md", "It moves with β",
     lambda r, m: THRESHOLD_MOVES()),
    ("README.md", "at the copy rates the run measured for them",
     lambda r, m: BYTES_SHARE(MODEL(r, 512)) < 0.5),
    ("README.md", "whether the next run agrees, only reruns tell",
     lambda r, m: any(x["conditions_verdict"] == "quiet" for x in RERUNS)
     and max(x["ridge_intensity"] for x in RERUNS) > 1.1 * min(x["ridge_intensity"] for x in RERUNS)),
    ("README.md", "The softmax is the largest op at every T", lambda r, m: SOFTMAX_LARGEST(r)),
    ("README.md", "against the lab's expectation that the projections lead",
     lambda r, m: not OBS(r, 0)["held"]),
    (REP, "in five fresh processes", lambda r, m: r["config"]["workers"] == 5),
    (REP, "The softmax is memory-bound at every T, scores and av at T = 64 in this run",
     lambda r, m: ALL_T(r, ("softmax",), "memory") and SCORES_AV_HERE(r)),
    (REP, "too high here, and off either way in the reruns",
     lambda r, m: all(MODEL(r, T)["unexplained_s"] < 0 for T in (64, 128, 256, 512))
     and any(EXCESS(R_MODEL(x, 512)) > 0 for x in RERUNS) and any(EXCESS(R_MODEL(x, 512)) < 0 for x in RERUNS)),
    (REP, "(the highest of thirteen runs)",
     lambda r, m: len(RERUNS) == 12 and Q2_HIGHEST(r)),
    (REP, "all twelve reruns put them compute-bound at T = 512",
     lambda r, m: R_COMPUTE_AT_512()),
    (REP, "twelve reruns show how far the next run moves", lambda r, m: len(RERUNS) == 12),
    (REP, "which moves with β between runs",
     lambda r, m: THRESHOLD_MOVES()),
    (REP, "the T² ops dominate at T = 512 and the softmax is never the smallest op; at T = 64 the projections do not lead",
     lambda r, m: OBS(r, 1)["held"] and OBS(r, 2)["held"] and not OBS(r, 0)["held"]),
    (REP, "every forward from T = 256 on", lambda r, m: FAULTS_FROM_256(r)),
    (REP, "two BLAS threads speed up some products far more than others", lambda r, m: THREADS_SPLIT(r)),
    (SOL, "passes took longer than three small matmuls in the reference",
     lambda r, m: op(r, 64, "softmax")["time_s"] > op(r, 64, "qkv_proj")["time_s"]),
    (SOL, "differ by a few percent at most, either way",
     lambda r, m: all(abs(x["instrumentation_overhead"]) <= 0.025 for x in r["sweep"])),
    (SOL, "the softmax's bytes at the measured copy rates take under a third of its time",
     lambda r, m: BYTES_SHARE(MODEL(r, 512)) < 1 / 3),
    (SOL, "twelve consecutive runs of the reference did not all agree",
     lambda r, m: RERUNS_DISAGREE()),
    (SOL, "past three quarters at any T it calls the run disturbed", lambda r, m: perf.SET_ASIDE_LIMIT == 0.75),
    (SOL, "more than three quarters of a T's samples were set aside", lambda r, m: perf.SET_ASIDE_LIMIT == 0.75),
    (SOL, "naive numpy moves several times those bytes", lambda r, m: 3 <= LAB_BYTES(r) < 10),
    (REFL, "it turned out to be most of the forward at every length I tried",
     lambda r, m: all(x["ops"]["softmax"]["time_share"] > 0.5 for x in r["sweep"])),
    (REFL, "Its bytes came out as under a third of the softmax's time, and the rest as work in core, though the model could not say how much",
     lambda r, m: all(BYTES_SHARE(MODEL(r, T)) < 1 / 3 and IN_CORE(r, T) for T in (64, 128, 256, 512))
     and FITS_MOSTLY_SLOW(r)),
    (REFL, "whether scores and av sit below the ridge at the shortest length changed from run to run",
     lambda r, m: any(R_BOUND(x, "scores", 64) != op(r, 64, "scores")["bound"] for x in RERUNS)),
    (REFL, "a second core speeds up some matmuls far more than others", lambda r, m: THREADS_SPLIT(r)),
    (REFL, "so the same work needs a small fraction of the memory traffic",
     lambda r, m: P27(r)["bytes_reduction"] >= 10),
    (REFL, "they are compute-bound at every length", lambda r, m: ALL_T(r, ("scores", "av"), "compute", "level_bound")),
    (REFL, "the longest forward took more than twice as long as it does",
     lambda r, m: row(r, 512, "sweep_default_heap")["forward_s"] > 2 * row(r, 512)["forward_s"]),
    (REFL, "even then a second run could disagree with the first",
     lambda r, m: RERUNS_DISAGREE()),
    (REFL, "the machine itself can run slow while I measure",
     lambda r, m: any(x["samples_set_aside"] > 0 for x in r["sweep"])),
]
