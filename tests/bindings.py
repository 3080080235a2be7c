"""Which value of the committed run each figure of the write-up quotes: per document, a phrase with
{} where the figure stands, and how the figure is read off results.json (r) and manifest.json (m)
(reruns.json: RERUNS), formatted as the text prints it. test_docs.py finds every phrase verbatim
and lets no other number of the prose go unbound, except the lab's own vocabulary in STRUCTURAL.
CLAIMS hold the words that state a property of the run (a count, a flag, a rule, a share and what
it is a share of, an instruction set), each with what makes it true."""
import json
import math
from pathlib import Path

import perf

EXP = Path(__file__).resolve().parent.parent / "experiments" / "15-attention-perf"


def use_reruns(runs):
    """The reruns the bindings read (reruns.json's manifests): the committed file's by default;
    rebind.py sets the previous commit's to read the old figures."""
    global RERUNS, QUIET, WIDTH, RERUN_SOFTMAX
    RERUNS = runs
    QUIET = [m for m in RERUNS if m["conditions_verdict"] == "quiet"]
    WIDTH = [m["ridge_interval"][1] / m["ridge_interval"][0] for m in RERUNS]
    RERUN_SOFTMAX = [m["results_summary"]["softmax_GFLOPS_at_T_512"] for m in RERUNS]


use_reruns(json.loads((EXP / "reruns.json").read_text())["runs"])
OPS = ("qkv_proj", "scores", "softmax", "av", "out_proj")


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


def word(flag):
    return "yes" if flag else "no"


def window(r, T):
    return next(w for w in r["analysis"]["threading_windows"] if w["T"] == T)


C = lambda r: r["ceilings"]  # noqa: E731
THR = lambda r: r["analysis"]["scores_av_threshold"]  # noqa: E731
LAP = lambda r: r["analysis"]["on_lab_laptop"]  # noqa: E731
SM = lambda r: r["analysis"]["softmax_at_T_512"]  # noqa: E731
AN = lambda r: r["analysis"]["anatomy"]  # noqa: E731
P27 = lambda r: r["analysis"]["phase_27_preview"]  # noqa: E731
OBS = lambda r, i: r["analysis"]["expected_observations"][i]  # noqa: E731
CHK = lambda r, name: r["conditions"]["checks"][name]["value"]  # noqa: E731
LV = lambda r, name: r["ceilings"]["levels"][name]  # noqa: E731
OTHER_PASSES = lambda r: [s["GBps"] for k, s in AN(r)["softmax"].items() if k != "exp"]  # noqa
EFF = lambda r: AN(r)["softmax_bytes_all_steps"] / op(r, 512, "softmax")["time_s"] / 1e9  # noqa
SPREADS = lambda r: [(x["ops"][k]["worker_spread"], k, x["T"]) for x in r["sweep"] for k in OPS]  # noqa
UNSTABLE = lambda r: [(x["T"], k) for x in r["sweep"] for k in perf.KEYS if x["ops"][k]["unstable"]]  # noqa
OVERHEAD_NOT_ZERO = lambda r: [x["T"] for x in r["sweep"]  # noqa: E731  the T whose interval leaves out 0
                               if not x["instrumentation_overhead_ci95"][0] < 0 < x["instrumentation_overhead_ci95"][1]]
L3_MIB = lambda r: int(r["hardware"]["caches"]["L3"]["size"][:-1]) >> 10  # noqa: E731


def table_row(name):
    """A row of the lab README's T = 512 table: time_s (ms), shares of time and FLOPs (%),
    GFLOPS, intensity, class."""
    return (f"| {name} | {{}} |", lambda r, m: " | ".join((
        ms(op(r, 512, name)["time_s"]), pct(op(r, 512, name)["time_share"]),
        pct(op(r, 512, name)["flop_share"]), num(op(r, 512, name)["gflops"], 1),
        num(op(r, 512, name)["intensity"], 2), op(r, 512, name)["bound"])))


LAB = [
    # Block E, question 1
    ("interval ({} FLOP/byte, from β's", lambda r, m: "{} to {}".format(*(num(v, 2) for v in C(r)["ridge_interval"]))),
    ("(intensity {})", lambda r, m: "{} to {}".format(*(num(op(r, T, "qkv_proj")["intensity"], 0) for T in (64, 512)))),
    ("ridge of **{} FLOP/byte**", lambda r, m: num(C(r)["ridge"], 2)),
    ("towards d_k/2 = {} and never past it", lambda r, m: num(THR(r)["from_intensity_formula"]["asymptotic_intensity"], 0)),
    ("never past it: {} FLOP/byte from T = 64 to 512", lambda r, m: "{}, {}, {} and {}".format(
        *(num(op(r, T, "scores")["intensity"], 2) for T in (64, 128, 256, 512)))),
    ("ridge below {}, and", lambda r, m: num(THR(r)["from_intensity_formula"]["asymptotic_intensity"], 0)),
    ("just under {} would put it", lambda r, m: num(THR(r)["from_intensity_formula"]["asymptotic_intensity"], 0)),
    ("gives {} as well", lambda r, m: num(THR(r)["from_inequality_as_written"]["T_threshold"], 0)),
    ("tends to d_k/4 = {} and", lambda r, m: num(THR(r)["from_inequality_as_written"]["asymptotic_intensity"], 0)),
    ("for any ridge above {}.", lambda r, m: num(THR(r)["from_inequality_as_written"]["asymptotic_intensity"], 0)),
    ("π ≈ **{}** GFLOPS", lambda r, m: str(LAP(r)["pi_GFLOPS"])),
    ("β of **{}** GB/s", lambda r, m: "{}** to **{}".format(*LAP(r)["beta_GBps"])),
    ("the ridge would lie at **{}**", lambda r, m: "{}** to **{}".format(*(num(v, 1) for v in LAP(r)["ridge_range"]))),
    ("temporaries (**{}** MB)", lambda r, m: num(SM(r)["working_set_bytes"] / 1e6, 1)),
    ("its {} MiB L3", lambda r, m: str(LAP(r)["caches_bytes"]["L3"] >> 20)),
    ("they fit up to T = **{}**", lambda r, m: num(LAP(r)["softmax_spills_past_T"], 1)),
    # question 2
    ("runs at {} GFLOPS, ", lambda r, m: num(SM(r)["GFLOPS"], 2)),
    ("GFLOPS, {} % of its memory roofline", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("(β × 5/8 = **{}** GFLOPS;", lambda r, m: num(SM(r)["memory_ceiling_GFLOPS"], 1)),
    ("β is a {} MiB copy, see", lambda r, m: str(LV(r, "DRAM")["bytes"] >> 20)),
    ("the L2's copy of {} repeats", lambda r, m: str(LV(r, "L2")["repeats"])),
    ("not the under-{} % the lab expected", lambda r, m: "10" if SM(r)["ratio_to_memory_ceiling"] > 0.1 else "?"),
    ("move **{} MB** in all", lambda r, m: num(AN(r)["softmax_bytes_all_steps"] / 1e6, 1)),
    ("model counts **{} MB**", lambda r, m: num(AN(r)["softmax_bytes_lab_model"] / 1e6, 1)),
    ("moves them at **{} GB/s**", lambda r, m: num(EFF(r), 1)),
    ("GB/s**, **{}** of β, on one thread", lambda r, m: num(EFF(r) / C(r)["beta_peak_GBps"], 2)),
    ("copy of β's working set runs at **{} GB/s**", lambda r, m: num(LV(r, "DRAM")["GBps_1thread"], 1)),
    ("Five times the bytes at {} of β", lambda r, m: num(EFF(r) / C(r)["beta_peak_GBps"], 2)),
    ("of β is the {} %: the bytes", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("not the largest of the six: **{} %** of the six", lambda r, m: pct(AN(r)["softmax"]["exp"]["share"])),
    ("(the largest, subtract, **{} %**)", lambda r, m: pct(AN(r)["softmax"]["subtract"]["share"])),
    ("), **{} %** of the softmax's time", lambda r, m: pct(AN(r)["softmax"]["exp"]["share_of_forward"])),
    ("it streams at **{} GB/s**, the others", lambda r, m: num(AN(r)["softmax"]["exp"]["GBps"], 1)),
    ("the others at **{}**.", lambda r, m: "{}** to **{}".format(*(num(f(OTHER_PASSES(r)), 1) for f in (min, max)))),
    ("operations add up to **{} ms**", lambda r, m: ms(AN(r)["softmax_sum_of_steps_s"])),
    ("whole softmax takes **{} ms**", lambda r, m: ms(AN(r)["softmax_alone_s"])),
    ("inside the forward it takes **{} ms**", lambda r, m: ms(AN(r)["softmax_in_forward_s"])),
    # question 3
    ("moves **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("from I = **{}** by the lab's byte count", lambda r, m: num(P27(r)["measured"]["intensity"], 2)),
    ("(measured, **{}** GFLOPS)", lambda r, m: num(P27(r)["measured"]["GFLOPS"], 1)),
    ("to I = **{}**, past the ridge", lambda r, m: num(P27(r)["without_materialising_A"]["intensity"], 0)),
    ("is π, **{}** GFLOPS", lambda r, m: num(P27(r)["without_materialising_A"]["bound_GFLOPS"], 1)),
    ("at best **{} ms**", lambda r, m: ms(P27(r)["without_materialising_A"]["time_lower_bound_s"])),
    ("instead of the **{} ms** that", lambda r, m: ms(P27(r)["measured"]["time_s"])),
    # the pictures and the table
    ("the 25th percentile of {} samples from the five", lambda r, m: str(r["config"]["samples_per_T"])),
    *(table_row(name) for name in OPS),
    ("The forward: {} at 512.", lambda r, m: "**{}** ms at T = 64, **{}** ms at 128, **{}** ms at 256, **{}** ms".format(
        *(ms(row(r, T)["forward_s"]) for T in (64, 128, 256, 512)))),
    # expected observations
    ("| At T = 64 the projections dominate | **{}** |", lambda r, m: word(OBS(r, 0)["held"])),
    ("the projections take {} % of the forward", lambda r, m: pct(OBS(r, 0)["projections_share"])),
    ("the T² ops {} %;", lambda r, m: pct(OBS(r, 0)["T2_ops_share"])),
    ("the softmax alone {} %", lambda r, m: pct(op(r, 64, "softmax")["time_share"])),
    ("| At T = 512 the T² ops dominate | **{}** |", lambda r, m: word(OBS(r, 1)["held"])),
    ("dominate | **yes** | {} % |", lambda r, m: pct(OBS(r, 1)["T2_ops_share"])),
    ("| The softmax is never the smallest op | **{}** |", lambda r, m: word(OBS(r, 2)["held"])),
    ("qkv_proj alone holds **{} %** of the FLOPs", lambda r, m: pct(op(r, 64, "qkv_proj")["flop_share"])),
    ("three small BLAS matmuls (**{} ms** together)", lambda r, m: ms(op(r, 64, "qkv_proj")["time_s"])),
    ("small arrays take **{} ms**", lambda r, m: ms(op(r, 64, "softmax")["time_s"])),
    ("the softmax holds **{} %** of the FLOPs", lambda r, m: pct(op(r, 512, "softmax")["flop_share"])),
    ("FLOPs and **{} %** of the time", lambda r, m: pct(op(r, 512, "softmax")["time_share"])),
    # findings
    ("two threads take **{}×** one thread's time on qkv_proj", lambda r, m: num(window(r, 512)["threads_over_one"]["qkv_proj"], 2)),
    ("qkv_proj, **{}×** on av", lambda r, m: num(window(r, 512)["threads_over_one"]["av"], 2)),
    ("av, **{}×** on out_proj", lambda r, m: num(window(r, 512)["threads_over_one"]["out_proj"], 2)),
    ("and **{}×** on scores", lambda r, m: num(window(r, 512)["threads_over_one"]["scores"], 2)),
    ("only d_k = {} deep at every T", lambda r, m: str(r["config"]["d_head"])),
    ("which at T = 256 they slow to **{}×**", lambda r, m: num(window(r, 256)["threads_over_one"]["scores"], 2)),
    ("more than four percent (**{}×**)", lambda r, m: "{}** to **{}".format(*(num(f(window(r, 128)["threads_over_one"][k] for k in OPS), 3) for f in (min, max)))),
    ("yet scores takes **{} ms**", lambda r, m: ms(op(r, 512, "scores")["time_s"])),
    ("and av **{} ms** at T = 512", lambda r, m: ms(op(r, 512, "av")["time_s"])),
    ("its matmul (**{} ms**)", lambda r, m: ms(AN(r)["scores"]["matmul"]["median_s"])),
    ("(**{} ms**), which reads", lambda r, m: ms(AN(r)["scores"]["scale"]["median_s"])),
    ("once more, **{} MB** in all", lambda r, m: num(AN(r)["scores_bytes_all_steps"] / 1e6, 1)),
    ("on one thread scores takes **{} ms**", lambda r, m: ms(window(r, 512)["one_thread_s"]["scores"])),
    ("and av **{} ms**. The roofline", lambda r, m: ms(window(r, 512)["one_thread_s"]["av"])),
    ("where the lab counts **{} MB**", lambda r, m: num(AN(r)["scores_bytes_lab_model"] / 1e6, 1)),
    ("at T = 512 it takes **{} ms** instead", lambda r, m: ms(row(r, 512, "sweep_default_heap")["forward_s"])),
    ("instead of **{} ms**, with", lambda r, m: ms(row(r, 512)["forward_s"])),
    ("with **{}** page faults per forward", lambda r, m: num(row(r, 512, "sweep_default_heap")["page_faults_per_forward"], 0)),
    ("(**{}** against", lambda r, m: ms(row(r, 256, "sweep_default_heap")["forward_s"])),
    ("against **{}** ms at T = 256)", lambda r, m: ms(row(r, 256)["forward_s"])),
    ("fewer than **{}** faults per forward at every T", lambda r, m: "0.01" if max(
        x["page_faults_per_forward"] for x in r["sweep"]) < 0.01 else "?"),
    ("copies a {} MiB working set (within its L2)", lambda r, m: str(LV(r, "L2")["bytes"] >> 20)),
    ("(within its L2) at **{} GB/s**", lambda r, m: num(LV(r, "L2")["GBps"], 1)),
    ("The {} MiB working set that stands", lambda r, m: str(LV(r, "DRAM")["bytes"] >> 20)),
    ("copies at **{} GB/s** on both cores", lambda r, m: num(LV(r, "DRAM")["GBps_all_threads"], 1)),
    ("on both cores and **{} GB/s** on one", lambda r, m: num(LV(r, "DRAM")["GBps_1thread"], 1)),
    ("a {} MiB one at", lambda r, m: str(LV(r, "DRAM")["check_bytes"] >> 20)),
    ("one at **{} GB/s**, so there is no plateau", lambda r, m: num(LV(r, "DRAM")["GBps_check"], 1) if not LV(r, "DRAM")["plateau"] else "?"),
    ("Both fit the {} MiB L3 the VM reports", lambda r, m: str(L3_MIB(r))),
    # how it was run
    ("workers and analysis took **{} s**", lambda r, m: num(r["run_wall_s"], 1)),
    ("{} cores (no SMT)", lambda r, m: str(r["hardware"]["physical_cores"])),
    ("It ran on a {}-core virtual machine", lambda r, m: str(r["hardware"]["physical_cores"])),
    ("(GenuineIntel family **{}**", lambda r, m: str(r["hardware"]["family"])),
    ("model **{}**), whose", lambda r, m: str(r["hardware"]["model"])),
    ("L2 {} KiB per core", lambda r, m: r["hardware"]["caches"]["L2"]["size"][:-1]),
    ("L3 {} MiB shared", lambda r, m: str(L3_MIB(r))),
    ("OpenBLAS with {} threads", lambda r, m: str(r["threads"]["blas_threads"])),
    ("until {} ms have passed (", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("passed (**{}** forwards at T = 64", lambda r, m: "{}** to **{}".format(*row(r, 64)["forwards_per_sample"])),
    ("at T = 64, **{}** at T = 512)", lambda r, m: "{}** to **{}".format(*row(r, 512)["forwards_per_sample"])),
    (" is **{}** at every T, the one-thread", lambda r, m: str(max(x["samples_below_min_time"] for x in r["sweep"] + r["sweep_default_heap"]))),
    ("an op's {} samples, taken", lambda r, m: str(r["config"]["samples_per_T"])),
    ("each {} rounds over every T", lambda r, m: str(r["config"]["rounds_per_worker"])),
    ("takes the hatched bars' **{}** samples per T", lambda r, m: str(r["config"]["default_heap_samples"])),
    ("cost the timers **{} %** at T = 64", lambda r, m: pct(row(r, 64)["instrumentation_overhead"], 2)),
    ("(95 % interval **{}** to", lambda r, m: pct(row(r, 64)["instrumentation_overhead_ci95"][0], 2)),
    ("to **{} %**), the one T whose", lambda r, m: pct(row(r, 64)["instrumentation_overhead_ci95"][1], 2)),
    ("all lie within ±**{} %**", lambda r, m: pct(max(abs(e) for x in r["sweep"] for e in x["instrumentation_overhead_ci95"]), 2)),
    ("for at least {} ms. β", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("β **{} GB/s** from", lambda r, m: num(C(r)["beta_peak_GBps"], 1)),
    ("GB/s** from **{}** repeats of a", lambda r, m: str(C(r)["beta_repeats"])),
    ("repeats of a {} MiB copy", lambda r, m: str(LV(r, "DRAM")["bytes"] >> 20)),
    ("(interval **{}**–**", lambda r, m: num(C(r)["beta_peak_interval"][0], 1)),
    ("**–**{}**); π", lambda r, m: num(C(r)["beta_peak_interval"][1], 1)),
    ("π **{} GFLOPS** from", lambda r, m: num(C(r)["pi_peak_GFLOPS"], 1)),
    ("GFLOPS** from **{}** repeats of a", lambda r, m: str(C(r)["pi_repeats"])),
    ("a {}² fp32 matmul", lambda r, m: str(C(r)["matmul"]["n"])),
    ("matmul (interval **{}**–**", lambda r, m: num(C(r)["pi_peak_interval"][0], 1)),
    ("**–**{}**); the ridge's", lambda r, m: num(C(r)["pi_peak_interval"][1], 1)),
    ("those two, ×**{}** wide", lambda r, m: num(C(r)["ridge_interval"][1] / C(r)["ridge_interval"][0], 2)),
    ("**Run conditions**: **{}**", lambda r, m: r["conditions"]["verdict"]),
    ("other processes used **{}** CPUs", lambda r, m: num(CHK(r, "other_processes_cpus"), 3)),
    ("steal **{} %**", lambda r, m: pct(CHK(r, "steal_fraction"), 2)),
    ("preempted **{}** times a second", lambda r, m: num(CHK(r, "preemptions_per_s"), 1)),
    ("two threads took **{}×** one thread's time on av", lambda r, m: num(CHK(r, "threads_cooperate"), 2)),
    # limitations
    ("The {} fresh default runs", lambda r, m: "twelve" if len(RERUNS) == 12 else "?"),
    ("ridge lay between **{}** and", lambda r, m: num(min(x["ridge_intensity"] for x in QUIET), 2)),
    ("and **{}**, all above this run's", lambda r, m: num(max(x["ridge_intensity"] for x in QUIET), 2)),
    ("softmax at T = 512 between **{}** GFLOPS", lambda r, m: "{}** and **{}".format(*(num(f(RERUN_SOFTMAX), 2) for f in (min, max)))),
    ("around this run's **{}**.", lambda r, m: num(m["results_summary"]["softmax_GFLOPS_at_T_512"], 2)),
    ("whose workers' estimates lie **{}×** apart", lambda r, m: num(max(SPREADS(r))[0], 2)),
    ("(the limit is {});", lambda r, m: str(perf.SPREAD_LIMIT)),
    ("every other op's within **{}×**", lambda r, m: num(sorted(SPREADS(r))[-2][0], 2)),
    ("this machine's {} MiB L3; on", lambda r, m: str(L3_MIB(r))),
]

TOP = [
    ("this machine's ridge is **{}**", lambda r, m: num(C(r)["ridge"], 2)),
    ("pass an intensity of {} FLOP/byte", lambda r, m: num(THR(r)["from_intensity_formula"]["asymptotic_intensity"], 0)),
    ("The threshold T the lab asks for is {}.", lambda r, m: num(THR(r)["from_intensity_formula"]["T_threshold"], 0)),
    ("it runs at **{} GFLOPS**", lambda r, m: num(m["results_summary"]["softmax_GFLOPS_at_T_512"], 2)),
    ("**{} %** of its memory roofline", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("with **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("**{} %** of the forward at T = 512", lambda r, m: num(m["results_summary"]["softmax_pct_of_total_at_T_512"], 1)),
    ("the T² ops already take **{} %**", lambda r, m: pct(OBS(r, 0)["T2_ops_share"])),
    ("(**{} ms** instead", lambda r, m: ms(row(r, 512, "sweep_default_heap")["forward_s"])),
    ("instead of **{} ms** at T = 512)", lambda r, m: ms(row(r, 512)["forward_s"])),
    ("the committed run is **{}**", lambda r, m: r["conditions"]["verdict"]),
    ("It ran on a {}-core VM", lambda r, m: str(r["hardware"]["physical_cores"])),
]

REPORT = [
    ("**{} %** of the forward at T = 512", lambda r, m: num(m["results_summary"]["softmax_pct_of_total_at_T_512"], 1)),
    ("It runs at **{} %** of its memory", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("until {} ms have passed", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("β and π measured in the same run with {} % intervals", lambda r, m: "95"),
    ("This run was {}.", lambda r, m: r["conditions"]["verdict"]),
    ("can never pass d_k/2 = {} FLOP/byte", lambda r, m: num(THR(r)["from_intensity_formula"]["asymptotic_intensity"], 0)),
    ("this machine's ridge is **{}**", lambda r, m: num(C(r)["ridge"], 2)),
    ("no solution once the ridge passes {}.", lambda r, m: num(THR(r)["from_inequality_as_written"]["asymptotic_intensity"], 0)),
    ("forward takes **{} ms** instead", lambda r, m: ms(row(r, 512, "sweep_default_heap")["forward_s"])),
    ("instead of **{} ms**.", lambda r, m: ms(row(r, 512)["forward_s"])),
    ("product is only {} deep", lambda r, m: str(r["config"]["d_head"])),
    ("would move **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("on a {}-core virtual machine", lambda r, m: str(r["hardware"]["physical_cores"])),
]

SOLUTION = [
    ("With the reference's ridge of **{}**", lambda r, m: num(C(r)["ridge"], 2)),
    ("tends to d_k/2 = {} FLOP/byte", lambda r, m: num(THR(r)["from_intensity_formula"]["asymptotic_intensity"], 0)),
    ("π ≈ {} GFLOPS and", lambda r, m: str(LAP(r)["pi_GFLOPS"])),
    ("β of {} GB/s, the ridge is", lambda r, m: "{}–{}".format(*LAP(r)["beta_GBps"])),
    ("the ridge is **{}**: expect", lambda r, m: "{}** to **{}".format(*(num(v, 1) for v in LAP(r)["ridge_range"]))),
    ("**{} %** of its memory roofline at T = 512", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("spill out of the {} MiB L3", lambda r, m: str(LAP(r)["caches_bytes"]["L3"] >> 20)),
    ("**{}** times fewer bytes for", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("from an intensity of **{}** to", lambda r, m: num(P27(r)["measured"]["intensity"], 2)),
    ("to **{}**, past the ridge", lambda r, m: num(P27(r)["without_materialising_A"]["intensity"], 0)),
    ("forward took **{} ms** instead", lambda r, m: ms(row(r, 512, "sweep_default_heap")["forward_s"])),
    ("instead of **{} ms**). Count", lambda r, m: ms(row(r, 512)["forward_s"])),
    ("each the 75th percentile of **{}** repeats", lambda r, m: str(C(r)["beta_repeats"]) if C(r)["beta_repeats"] == C(r)["pi_repeats"] else "?"),
    ("on a {}-core Intel Xeon", lambda r, m: str(r["hardware"]["physical_cores"])),
    ("measurements of at least {} ms", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("until {} ms have passed", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("more than {} % from the first worker", lambda r, m: "10"),
    ("distribution-free {} % interval", lambda r, m: "95"),
    ("with its {} % interval", lambda r, m: "95"),
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
    r"\b2048²", r"\bthree quarters", r"8/5", r"1\. \*\*|2\. \*\*|3\. \*\*", r"\b10 %",
    r"d_k/2", r"d_k/4", r"\bat (?:64|128|256|512)\b", r"NumPy 2\b", r"AVX512_SPR",
    r"OMP_NUM_THREADS=[14]", r"\bU-series\b", r"\b45 s\b", r"about 45 s",
    r"\S*(?:03-attention|PHASE_15|phase-15|rerun_NN)\S*",
]

# Quantitative words and stated properties, each with what makes it true of the committed run.
FWD = lambda r, T, rows="sweep": row(r, T, rows)["forward_s"]  # noqa: E731
LABR = "experiments/15-attention-perf/README.md"
SOL = "solutions/03-attention-perf-ref.md"
REFL = "learners/borja/phase-15/reflections.md"
REP = "PHASE_15_REPORT.md"
ALL_T_BOUND = lambda r, ops, cls: all(x["ops"][o]["bound"] == cls for x in r["sweep"] for o in ops)  # noqa
THREADS = lambda r, T, k: window(r, T)["threads_over_one"][k]  # noqa: E731
LARGER_GAIN = lambda r: all(THREADS(r, 512, k) < 0.9 for k in ("qkv_proj", "av", "out_proj"))  # noqa
SCORES_NEVER = lambda r: all(w["threads_over_one"]["scores"] >= 0.99 for w in r["analysis"]["threading_windows"])  # noqa
SHARES = lambda r: sorted(s["share"] for s in AN(r)["softmax"].values())  # noqa: E731
EXP_FIFTH = lambda r: 0.18 <= AN(r)["softmax"]["exp"]["share"] <= 0.22  # noqa: E731
EXP_AVX512 = lambda r: r["hardware"]["numpy_softmax_kernels"]["exp"] == "X86_V4"  # noqa: E731
FIVE_TIMES = lambda r: 4.5 <= AN(r)["softmax_bytes_all_steps"] / AN(r)["softmax_bytes_lab_model"] < 5.5  # noqa
FAULTS_FROM_256 = lambda r: all((row(r, T, "sweep_default_heap")["page_faults_per_forward"] >= 1) == (T >= 256)  # noqa
                                for T in (64, 128, 256, 512))
CLAIMS = [
    # (a) the protocol: every sample >= min_time, the one-thread samples included
    (LABR, "none was shorter (`samples_below_min_time` is",
     lambda r, m: all(x["samples_below_min_time"] == 0 and x["shortest_sample_s"] >= r["config"]["min_time_s"]
                      for x in r["sweep"] + r["sweep_default_heap"])),
    (REP, "samples that each run until",
     lambda r, m: all(x["samples_below_min_time"] == 0 for x in r["sweep"] + r["sweep_default_heap"])),
    (LABR, "each repeat copies or multiplies for at least",
     lambda r, m: r["analysis"]["anatomy"]["shortest_batch_s"] >= r["config"]["min_time_s"]),
    # (b) flags
    (LABR, "One op was flagged `unstable`: scores at T = 256",
     lambda r, m: r["analysis"]["unstable"] == [f"T=256 scores {max(SPREADS(r))[0]:.2f}x"] and max(SPREADS(r))[1:] == ("scores", 256)
     and UNSTABLE(r) == [(256, "scores")]),
    # (c) shares, and of which whole
    (LABR, "of the six operations' time timed alone",
     lambda r, m: math.isclose(AN(r)["softmax"]["exp"]["share"], AN(r)["softmax"]["exp"]["median_s"] / AN(r)["softmax_sum_of_steps_s"])),
    (LABR, "of the softmax's time in the forward",
     lambda r, m: math.isclose(AN(r)["softmax"]["exp"]["share_of_forward"], AN(r)["softmax"]["exp"]["median_s"] / op(r, 512, "softmax")["time_s"])),
    (LABR, "the anatomy is the median of one sample per worker",
     lambda r, m: math.isclose(AN(r)["softmax_in_forward_s"], op(r, 512, "softmax")["time_s"])),
    (LABR, "`exp` is not the largest of the six",
     lambda r, m: AN(r)["softmax"]["exp"]["share"] < SHARES(r)[-1] == AN(r)["softmax"]["subtract"]["share"]),
    (LABR, "numpy runs `exp` and `max` on its AVX-512 kernels (`X86_V4`) here, the adds, `subtract` and the divide on AVX2 ones (`X86_V3`)",
     lambda r, m: r["hardware"]["numpy_softmax_kernels"] == {"exp": "X86_V4", "maximum": "X86_V4", "add": "X86_V3", "subtract": "X86_V3", "divide": "X86_V3"}),
    (LABR, "here `exp` is a fifth of the six operations' time", lambda r, m: EXP_FIFTH(r)),
    (LABR, "with AVX-512, not on the lab's",
     lambda r, m: "AVX512F" in r["hardware"]["simd_flags"] and r["hardware"]["vendor"] == "GenuineIntel"),
    (LABR, "the bytes and the bandwidth account for all of it",
     lambda r, m: math.isclose(SM(r)["ratio_to_memory_ceiling"], AN(r)["softmax_bytes_lab_model"]
                               / AN(r)["softmax_bytes_all_steps"] * EFF(r) / C(r)["beta_peak_GBps"], rel_tol=1e-9)),
    (LABR, ": five times as many", lambda r, m: FIVE_TIMES(r)),
    (LABR, "numpy runs it on one", lambda r, m: 0.95 <= THREADS(r, 512, "softmax") <= 1.05),
    # (d) what the byte counts leave out, and the picture's legend (test_plots checks the drawn text)
    (LABR, "never writing S (the T×T scores) or A (the softmax's output)",
     lambda r, m: P27(r)["without_materialising_A"]["bytes"] == 16 * r["config"]["n_heads"] * 512 * r["config"]["d_head"]),
    (LABR, "the naive code moves more than the lab counts",
     lambda r, m: AN(r)["softmax_bytes_all_steps"] > AN(r)["softmax_bytes_lab_model"]
     and AN(r)["scores_bytes_all_steps"] > AN(r)["scores_bytes_lab_model"]),
    # (e) the processes
    (LABR, "A sixth process, the default-heap worker",
     lambda r, m: [w["label"] for w in r["workers"]] == ["default heap"] + [f"warm {i}" for i in range(1, 6)]
     and r["config"]["workers"] == 5),
    (LABR, "taken by five warm worker processes",
     lambda r, m: r["config"]["workers"] == 5 and all(x["workers"] == 5 for x in r["sweep"])),
    (LABR, "from the five warm worker processes", lambda r, m: r["config"]["workers"] == 5),
    # (f) the timers' cost
    (LABR, "the one T whose interval leaves out zero; at the other three it holds zero",
     lambda r, m: OVERHEAD_NOT_ZERO(r) == [64]),
    (REP, "timers whose cost is lost in the noise at every T but the shortest,",
     lambda r, m: OVERHEAD_NOT_ZERO(r) == [min(r["config"]["T_sweep"])]),
    (SOL, "differ by a percent or two either way, not more",
     lambda r, m: all(abs(x["instrumentation_overhead"]) <= 0.025 for x in r["sweep"])),
    (LABR, "each half of a pair a twenty-fourth of its sample's forwards (at least one),",
     lambda r, m: all(max(1, x["forwards_per_sample"][1] // 24) < x["forwards_per_sample"][0] for x in r["sweep"])),
    # (g) which copy a figure is of
    (LABR, "one thread's copy of β's working set runs at", lambda r, m: LV(r, "DRAM")["bytes"] == 256 << 20 and LV(r, "DRAM")["GBps_1thread"] > 0),
    (LABR, "slower, on a far larger working set",
     lambda r, m: EFF(r) > LV(r, "DRAM")["GBps_1thread"] and LV(r, "DRAM")["bytes"] > 10 * SM(r)["working_set_bytes"]),
    (LABR, "(there scores is flagged unstable",
     lambda r, m: UNSTABLE(r) == [(256, "scores")]),
    (SOL, "at well under β", lambda r, m: EFF(r) / C(r)["beta_peak_GBps"] < 0.7),
    # (i) the ceilings' repeats
    (LABR, "distribution-free 95 % interval from two order statistics",
     lambda r, m: LV(r, "DRAM")["interval_coverage"] >= 0.95 and C(r)["beta_repeats"] == C(r)["pi_repeats"] == 20),
    (LABR, "the L2's copy of", lambda r, m: LV(r, "L2")["repeats"] == 10 and LV(r, "L2")["interval_coverage"] < 0.95),
    (REP, "β and π measured in the same run with",
     lambda r, m: C(r)["source"] == "measured" and C(r)["beta_repeats"] == C(r)["pi_repeats"] == 20),
    # Block E question 1
    (LABR, "Threshold T for scores and av: none — they are memory-bound at every T",
     lambda r, m: THR(r)["from_intensity_formula"]["T_threshold"] is None and THR(r)["from_intensity_formula"]["at_ridge_low"] is None
     and ALL_T_BOUND(r, ("scores", "av"), "memory")),
    (LABR, "The softmax is memory-bound at every T as well; the projections are compute-bound",
     lambda r, m: ALL_T_BOUND(r, ("softmax",), "memory") and ALL_T_BOUND(r, ("qkv_proj", "out_proj"), "compute")),
    (LABR, "this ridge's interval starts well above it",
     lambda r, m: C(r)["ridge_interval"][0] > 1.2 * THR(r)["from_intensity_formula"]["asymptotic_intensity"]),
    (LABR, "anywhere from a few hundred to thousands",
     lambda r, m: 100 < perf.threshold_T(16, 7.5, 2) < 1000 <= perf.threshold_T(16, 7.95, 2)),
    (LABR, "an order of magnitude left of", lambda r, m: 5 <= C(r)["ridge"] / 0.625 < 50),
    (LABR, "scores is compute-bound up to T = 128 and av up to T = 256",
     lambda r, m: [x["ops"]["scores"]["level_bound"] for x in r["sweep"]] == ["compute"] * 2 + ["memory"] * 2
     and [x["ops"]["av"]["level_bound"] for x in r["sweep"]] == ["compute"] * 3 + ["memory"]),
    (LABR, "scores and av memory-bound there too",
     lambda r, m: LAP(r)["ridge_range"][0] > THR(r)["from_intensity_formula"]["asymptotic_intensity"]),
    (LABR, "not the under-10 % the lab expected", lambda r, m: SM(r)["ratio_to_memory_ceiling"] > 0.1),
    # findings
    (LABR, "Two threads help the larger products, never scores",
     lambda r, m: LARGER_GAIN(r) and SCORES_NEVER(r)),
    (LABR, "change no op's time by more than four percent",
     lambda r, m: all(0.96 <= THREADS(r, 128, k) <= 1.04 for k in OPS)),
    (LABR, "the largest product they do speed up",
     lambda r, m: THREADS(r, 512, "av") < 0.9 and r["conditions"]["checks"]["threads_cooperate"]["value"] == THREADS(r, 512, "av")),
    (LABR, "Why scores costs more than three times av",
     lambda r, m: 3.0 <= op(r, 512, "scores")["time_s"] / op(r, 512, "av")["time_s"] < 3.5),
    (LABR, "scores sits lower than av at the same intensity",
     lambda r, m: op(r, 512, "scores")["gflops"] < op(r, 512, "av")["gflops"]
     and op(r, 512, "scores")["intensity"] == op(r, 512, "av")["intensity"]),
    (LABR, "the forward faults from T = 256 on", lambda r, m: FAULTS_FROM_256(r)),
    (LABR, "at T = 64 and 128 the default heap barely faults", lambda r, m: FAULTS_FROM_256(r)),
    (LABR, "it is the *largest* at every T",
     lambda r, m: set(r["analysis"]["dominant_op_per_T"].values()) == {"softmax"}),
    (LABR, "The softmax runs on one thread whatever BLAS is given",
     lambda r, m: 0.95 <= THREADS(r, 512, "softmax") <= 1.05),
    (LABR, "so there is no plateau. Both fit the",
     lambda r, m: not LV(r, "DRAM")["plateau"] and not LV(r, "DRAM")["past_llc"]),
    (LABR, "β is the larger copy's", lambda r, m: C(r)["beta_peak_GBps"] == LV(r, "DRAM")["GBps"]
     and LV(r, "DRAM")["bytes"] == 2 * LV(r, "DRAM")["check_bytes"]),
    (LABR, "β may not be DRAM's: both copies fit the L3 the VM reports, and they disagree",
     lambda r, m: not LV(r, "DRAM")["past_llc"] and not LV(r, "DRAM")["plateau"]),
    (LABR, "Every working set of the sweep fits this machine's",
     lambda r, m: max(x["ops"][k]["working_set_bytes"] for x in r["sweep"] for k in OPS)
     < int(r["hardware"]["caches"]["L3"]["size"][:-1]) << 10),
    (LABR, "the clock and the governor could not be read",
     lambda r, m: set(r["conditions"]["unknown"]) == {"clock_drop", "governor_or_turbo_changed"}),
    (LABR, "and it called itself quiet", lambda r, m: r["conditions"]["verdict"] == "quiet"),
    (LABR, "all called themselves quiet",
     lambda r, m: len(RERUNS) == 12 and all(x["conditions_verdict"] == "quiet" for x in RERUNS)
     and all(x["perf_py_sha256"] == m["perf_py_sha256"] for x in RERUNS)),
    (LABR, "all above this run's but inside its wide interval",
     lambda r, m: all(C(r)["ridge"] < x["ridge_intensity"] <= C(r)["ridge_interval"][1] for x in QUIET)
     and C(r)["ridge_interval"][1] / C(r)["ridge_interval"][0] >= sorted(WIDTH)[-2]),  # wider than 11 of 12
    (LABR, "around this run's",
     lambda r, m: min(RERUN_SOFTMAX) <= m["results_summary"]["softmax_GFLOPS_at_T_512"] <= max(RERUN_SOFTMAX)),
    # the other documents
    (REP, "while holding a few percent of the FLOPs",
     lambda r, m: all(x["ops"]["softmax"]["flop_share"] < 0.1 for x in r["sweep"])),
    (REP, "It is the largest op at every T",
     lambda r, m: set(r["analysis"]["dominant_op_per_T"].values()) == {"softmax"}),
    (REP, "data move five times the lab's count, on one thread", lambda r, m: FIVE_TIMES(r)),
    (REP, "`exp` runs numpy's AVX-512 kernel and takes a fifth of their time", lambda r, m: EXP_AVX512(r) and EXP_FIFTH(r)),
    (REP, "on one thread, at well under β", lambda r, m: EFF(r) / C(r)["beta_peak_GBps"] < 0.7),
    (REP, "from T = 256 on, every", lambda r, m: FAULTS_FROM_256(r)),
    (REP, "two cores speed up the larger products but never scores",
     lambda r, m: LARGER_GAIN(r) and SCORES_NEVER(r)),
    (REP, "Scores and av are memory-bound at every T",
     lambda r, m: ALL_T_BOUND(r, ("scores", "av"), "memory")),
    ("README.md", "The softmax, scores and av at every T",
     lambda r, m: ALL_T_BOUND(r, ("softmax", "scores", "av"), "memory")),
    ("README.md", "six operations move five times the lab's bytes, on one thread", lambda r, m: FIVE_TIMES(r)),
    ("README.md", "from T = 256 on, glibc's default heap faults", lambda r, m: FAULTS_FROM_256(r)),
    ("README.md", "BLAS threads help the larger products but never scores",
     lambda r, m: LARGER_GAIN(r) and SCORES_NEVER(r)),
    ("README.md", "The softmax is the largest op at every T",
     lambda r, m: set(r["analysis"]["dominant_op_per_T"].values()) == {"softmax"}),
    (SOL, "`exp`, on numpy's AVX-512 kernel, took a fifth of their time", lambda r, m: EXP_AVX512(r) and EXP_FIFTH(r)),
    (SOL, "expect scores and av memory-bound at every T there too",
     lambda r, m: LAP(r)["ridge_range"][0] > THR(r)["from_intensity_formula"]["asymptotic_intensity"]),
    (SOL, "A second core may not speed up scores at all",
     lambda r, m: SCORES_NEVER(r) and THREADS(r, 512, "av") < 0.8),
    (SOL, "faults its larger T×T temporaries back in", lambda r, m: FAULTS_FROM_256(r)),
    (REFL, "it turned out to be most of the forward at every length",
     lambda r, m: all(x["ops"]["softmax"]["time_share"] > 0.5 for x in r["sweep"])),
    (REFL, "no single step was to blame",
     lambda r, m: max(s["share"] for s in AN(r)["softmax"].values()) < 0.25),
    (REFL, "`exp` took a fifth of the time, no more than subtract or divide",
     lambda r, m: EXP_FIFTH(r) and AN(r)["softmax"]["exp"]["share"] <= min(AN(r)["softmax"][k]["share"] for k in ("subtract", "divide"))),
    (REFL, "how many times naive numpy walks the big matrix, on one core",
     lambda r, m: 0.95 <= THREADS(r, 512, "softmax") <= 1.05),
    (REFL, "a small fraction of the memory traffic", lambda r, m: P27(r)["bytes_reduction"] >= 10),
    (REFL, "they are compute-bound at the shorter lengths",
     lambda r, m: all(op(r, 64, k)["level_bound"] == "compute" for k in ("scores", "av"))
     and ALL_T_BOUND(r, ("scores", "av"), "memory")),
    (REFL, "a second core made one matmul faster and the other slower",
     lambda r, m: THREADS(r, 512, "av") < 0.8 and THREADS(r, 512, "scores") > 1.0),
    (REFL, "the first matmul of all, also shallow, did gain at the longer lengths",
     lambda r, m: THREADS(r, 512, "qkv_proj") < 0.8 and THREADS(r, 256, "qkv_proj") < 0.8),
    (REFL, "handed memory back after every forward at the longer lengths", lambda r, m: FAULTS_FROM_256(r)),
    (REFL, "the longest forward took three quarters as long again as it does",
     lambda r, m: 1.65 <= FWD(r, 512, "sweep_default_heap") / FWD(r, 512) < 1.85),
    (REFL, "no threshold at any length",
     lambda r, m: THR(r)["from_intensity_formula"]["T_threshold"] is None and THR(r)["from_intensity_formula"]["at_ridge_low"] is None),
]
