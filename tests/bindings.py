"""Which value each figure of the write-up quotes: per document, a phrase with {} where the figure
stands, and how the figure is read off the committed run's results.json (r) and manifest.json (m)
and its reruns (reruns.json: RERUNS), formatted as the text prints it. A figure is a number, a
count, or a word the JSON holds (a verdict, a cache level, a kernel), never a sentence chosen from
it. test_docs.py finds every phrase verbatim and lets no other number of the prose go unbound,
except what STRUCTURAL names: the lab's own vocabulary and figures, and the project's names.
CLAIMS hold the words that state a property (a count, a rule, a share and of what, a cause), each
with what makes it true; rebind.py prints those a new run no longer bears out.

The write-up's answers are the thirteen runs' together: the committed run and its twelve reruns,
each summarised alike (run_summary). A claim over RUNS reads the same set whichever of the thirteen is
committed, so it holds or fails alike in every swap (test_swap.py swaps them)."""
import collections
import json
import math

import numpy as np
from pathlib import Path

import perf

LAB_DIR = Path(__file__).resolve().parent.parent / "experiments" / "15-attention-perf"
OPS = perf.OPS
TS = perf.T_SWEEP  # the lab's Ts, which the write-up names
CLASSES = ("memory", "near_ridge", "compute")  # perf.py's classes against DRAM's roof, left to right


def use_reruns(runs):
    """The reruns the bindings read (reruns.json's run summaries): the committed file's by default;
    rebind.py sets the previous commit's to read the old figures."""
    global RERUNS
    RERUNS = runs


use_reruns(json.loads((LAB_DIR / "reruns.json").read_text())["runs"])


# ----------------------------------------------------------------------------------------------
# Reading one run's results.json

def row(r, T, key="sweep"):
    return next(x for x in r[key] if x["T"] == T)


def op(r, T, name, key="sweep"):
    return row(r, T, key)["ops"][name]


C = lambda r: r["ceilings"]  # noqa: E731
THR = lambda r: r["analysis"]["scores_av_threshold"]["from_intensity_formula"]  # noqa: E731
LAP = lambda r: r["analysis"]["on_lab_laptop"]  # noqa: E731
SM = lambda r: r["analysis"]["softmax_at_T_512"]  # noqa: E731
SS = lambda r, T: next(x for x in r["analysis"]["scores_scale"] if x["T"] == T)  # noqa: E731
P27 = lambda r: r["analysis"]["phase_27_preview"]  # noqa: E731
LV = lambda r, name: r["ceilings"]["levels"][name]  # noqa: E731
SP = lambda r, T: next(x for x in r["analysis"]["softmax_passes"] if x["T"] == T)  # noqa: E731
PS = lambda r, T, p: next(x for x in SP(r, T)["passes"] if x["pass"] == p)  # noqa: E731
EXP_PRECISION = lambda r: SP(r, 512)["exp_precision"]  # noqa: E731
WINDOW = lambda r, T: next(w for w in r["analysis"]["threading_windows"] if w["T"] == T)  # noqa: E731


# ----------------------------------------------------------------------------------------------
# How the text prints a figure

WORDS = "none one two three four five six seven eight nine ten eleven twelve".split()


def num(v, decimals):
    return "none" if v is None else f"{v:.{decimals}f}"


def ms(v):
    return f"{v * 1e3:.3f}"


def pct(v, decimals=1):
    return f"{100 * v:.{decimals}f}".replace("-", "−")


def count(n):
    """A count in words up to twelve, in digits above, as the write-up spells counts."""
    return WORDS[n] if n < len(WORDS) else str(n)


def at_most(v, decimals):
    """A limit the text calls "at most": rounded up, so that it stays true."""
    return num(math.ceil(v * 10 ** decimals) / 10 ** decimals, decimals)


def both(lo, hi, decimals, sep="** to **"):
    return f"{num(lo, decimals)}{sep}{num(hi, decimals)}"


def range_of(v, decimals=1, sep="** to **"):
    """The range of some values, one figure where both ends print alike."""
    lo, hi = num(min(v), decimals), num(max(v), decimals)
    return lo if lo == hi else f"{lo}{sep}{hi}"


def EST(r, key):
    """A quantile or the confidence the run used, as the write-up says it (the 25th, 95 %)."""
    return pct({**r["canary"], **r["estimators"]}[key], 0)


# ----------------------------------------------------------------------------------------------
# The thirteen runs: each summarised alike, the committed run among them

def run_summary(r, m):
    """What the write-up compares across runs, of one run's results.json and manifest.json: its
    manifest, when it ran (its workers' first start and last end, seconds since the epoch), its
    ceilings, per T and op its figures and classes, and the analyses each answer stands on. T keys
    are strings, as in reruns.json."""
    at, a, c = {x["T"]: x for x in r["sweep"]}, r["analysis"], r["ceilings"]
    window = WINDOW(r, 512)
    d = {**m, "started": min(w["started"] for w in r["worker_processes"]),
         "ended": max(w["ended"] for w in r["worker_processes"]),
         "beta": c["beta_peak_GBps"], "pi": c["pi_peak_GFLOPS"], "ridge": c["ridge"],
         "forward_s": {T: x["forward_s"] for T, x in at.items()},
         "time_s": {T: {k: x["ops"][k]["time_s"] for k in OPS} for T, x in at.items()},
         "time_share": {T: {k: x["ops"][k]["time_share"] for k in OPS} for T, x in at.items()},
         "dram_bound": {k: [at[T]["ops"][k]["dram_bound"] for T in at] for k in OPS},
         "dominant_op_per_T": a["dominant_op_per_T"],
         "expected_observations_held": [o["held"] for o in a["expected_observations"]],
         "scores_av_threshold": a["scores_av_threshold"]["from_intensity_formula"],
         "inequality_threshold": a["scores_av_threshold"]["from_inequality_as_written"]["T_threshold"],
         "softmax_at_T_512": {**a["softmax_at_T_512"], "level": at[512]["ops"]["softmax"]["level"]},
         "softmax_interval_at_T_512": at[512]["ops"]["softmax"]["time_s_interval"],
         "phase_27_past_ridge": a["phase_27_preview"]["without_materialising_A"]["past_ridge"],
         "softmax_passes": [{**{k: x[k] for k in ("T", "passes_ns_per_element",
                                                  "sweep_softmax_ns_per_element")}, "passes": {
             p["pass"]: {k: p[k] for k in ("ns_per_element", "in_cache_ns_per_element",
                                           "copy_ns_per_element")}
             for p in x["passes"]}} for x in a["softmax_passes"]],
         "scores_scale_at_T_512": {"scale_s": SS(r, 512)["scale_s"]},
         "threads_at_T_512": {k: {o: window[k][o] for o in ("scores", "av", "softmax")}
                              for k in ("one_thread_s", "all_threads_s")},
         "default_heap": {x["T"]: {"forward_s": x["forward_s"], "page_faults_per_forward":
                                   x["page_faults_per_forward"]} for x in r["sweep_default_heap"]},
         "threads_over_one": {w["T"]: w["threads_over_one"] for w in a["threading_windows"]},
         "process_rsd": {T: {k: [x["ops"][k]["between_process_rsd"], x["ops"][k]["within_process_rsd"]]
                             for k in OPS} for T, x in at.items()},
         "timers": {T: [x["timer_overhead"], *x["timer_overhead_interval"]]
                    for T, x in at.items()},
         "beta_from": LV(r, "DRAM")["GBps_from"], "plateau": LV(r, "DRAM")["plateau"],
         "left_out": len(r["canary"]["left_out"])}
    return json.loads(json.dumps(d))


RUNS = lambda r, m: sorted(RERUNS + [run_summary(r, m)], key=lambda x: x["started"])  # noqa: E731


def n_runs(r, m, pred):
    """How many of the thirteen runs bear `pred` out, in digits as the text counts runs ("none")."""
    return str(sum(1 for x in RUNS(r, m) if pred(x)) or "none")


def spread(r, m, f, decimals, scale=1):
    """The range of a figure over the thirteen runs."""
    return range_of([scale * f(x) for x in RUNS(r, m)], decimals)


def rank(values):
    """Ranks from 1, ties averaged (Spearman's)."""
    v = np.asarray(values, dtype=float)
    order = v.argsort(kind="stable")
    ranks = np.empty(len(v))
    ranks[order] = np.arange(1, len(v) + 1)
    for x in set(v.tolist()):
        ranks[v == x] = ranks[v == x].mean()
    return ranks


def DRIFT(r, m, f):
    """Spearman's rank correlation of a figure with the runs' start times."""
    runs = RUNS(r, m)
    return float(np.corrcoef(rank([x["started"] for x in runs]), rank([f(x) for x in runs]))[0, 1])


# ----------------------------------------------------------------------------------------------
# What the answers compare across the runs (x: one run's summary)

BOUND = lambda x, k, T: x["dram_bound"][k][TS.index(T)]  # noqa: E731
SM_RATIO = lambda x: x["softmax_at_T_512"]["ratio_to_memory_roof"]  # noqa: E731  against β
SM_1T = lambda x: x["softmax_at_T_512"]["ratio_to_1thread_dram_copy"]  # noqa: E731
FWD = lambda x: x["forward_s"]["512"]  # noqa: E731


def FWD_GROUPS(r, m):
    """The runs by their forward at T = 512, split at the largest step from one to the next."""
    runs = sorted(RUNS(r, m), key=FWD)
    cut = max(range(1, len(runs)), key=lambda k: FWD(runs[k]) / FWD(runs[k - 1]))
    return runs[:cut], runs[cut:]


def FWD_STEP(r, m):
    """That step's two forwards at T = 512 (s): the last run below it, the first past it."""
    lo, hi = FWD_GROUPS(r, m)
    return FWD(lo[-1]), FWD(hi[0])


def SET_APART(r, m):
    """The runs past that step where it is wider than the spread of the runs on either side of
    it (a state of their own), else none."""
    (lo, hi), (below, past) = FWD_GROUPS(r, m), FWD_STEP(r, m)
    return hi if past / below > max(FWD(g[-1]) / FWD(g[0]) for g in (lo, hi)) else []


BELOW = lambda x: x["ridge"] < x["scores_av_threshold"]["asymptotic_intensity"]  # noqa: E731
ALL_T = lambda x, ops, cls: all(c == cls for k in ops for c in x["dram_bound"][k])  # noqa: E731
PROJ = perf.PROJECTIONS
T2 = lambda x, T: 1 - sum(x["time_share"][str(T)][k] for k in PROJ)  # noqa: E731  the T² ops' share
GAP = lambda x: x["time_s"]["512"]["scores"] / x["time_s"]["512"]["av"]  # noqa: E731
THREAD_GAP = lambda x, k: x["threads_at_T_512"][k]["scores"] / x["threads_at_T_512"][k]["av"]  # noqa
DEFAULT_HEAP = lambda x: x["default_heap"]["512"]["forward_s"] / FWD(x)  # noqa: E731
# β's and π's repeats, said as one number; "?" where they differ or Phase 1's numbers stand in
CEILING_REPEATS = lambda r, m: str(C(r)["beta_repeats"]) if C(r)["beta_repeats"] == C(r)[  # noqa: E731
    "pi_repeats"] is not None else "?"


def CLASSES_AT(T):
    """In how many runs scores were memory-bound, near the ridge and compute-bound at T: "a**, **b** and **c"."""
    counts = [CLASS_COUNT(T, cls) for cls in CLASSES]
    return lambda r, m: "{}**, **{}** and **{}".format(*(c(r, m) for c in counts))


def CLASS_COUNT(T, cls):
    """How many runs put scores in this class at T (av shares scores' class in each: a claim)."""
    return lambda r, m: n_runs(r, m, lambda x: IN_CLASS(x, T, cls))


# Question 1's headline for scores and av, worded alike in the four documents that give it.
CLASSES_SAID = [("and compute-bound at T = 64 in **{}** of the runs", CLASSES_AT(64)),
                ("of the runs, at T = 512 in **{}**", CLASSES_AT(512))]


def entries(x):
    """A run's softmax_passes entries, each's passes as a list (results.json) or a dict (run_summary)."""
    return [list(e["passes"].values()) if isinstance(e["passes"], dict) else e["passes"]
            for e in x["softmax_passes"]]


def NEARER_CACHE(ps):
    """The passes' sum nearer the sum of the same calls in cache than the sum of their copies (the
    bytes alone): what the sentences say, of the passes together."""
    own = sum(p["ns_per_element"] for p in ps)
    cache = sum(p["in_cache_ns_per_element"] for p in ps)
    copies = sum(p["copy_ns_per_element"] for p in ps)
    return abs(own / cache - 1) < abs(own / copies - 1)


COPY_SHARE = lambda ps: sum(p["copy_ns_per_element"] for p in ps) / sum(  # noqa: E731
    p["ns_per_element"] for p in ps)
PASS_RATIO = lambda e: e["passes_ns_per_element"] / e["sweep_softmax_ns_per_element"]  # noqa: E731
IN_CACHE = lambda x: all(NEARER_CACHE(ps) for ps in entries(x))  # noqa: E731  at every T
DEAREST = {64: "max", 128: "max", 256: "max"}  # as the lab README says it
DEAREST_PASS = lambda e: max(e["passes"], key=lambda p: e["passes"][p]["ns_per_element"])  # noqa: E731
DEAREST_AT = lambda x, Ts: all(  # noqa: E731  the dearest pass at these T as DEAREST says
    DEAREST_PASS(e) == DEAREST[e["T"]] for e in x["softmax_passes"] if e["T"] in Ts)
DEAREST_AS_SAID = lambda x: DEAREST_AT(x, DEAREST)  # noqa: E731  at every T that DEAREST names
LEADS_512 = lambda r, m: collections.Counter(  # noqa: E731  (pass, runs) of the pass that led most often
    DEAREST_PASS(e) for x in RUNS(r, m) for e in x["softmax_passes"] if e["T"] == 512).most_common(1)[0]


MATERIAL_SHARE = 0.05  # the lab README's "some op of 5 % of the forward": the ops its finding counts


def PROCESSES_DIFFER(x):
    """Some op of MATERIAL_SHARE of the forward or more, at some T, spread more between the
    processes than within one."""
    return any(between > within for T, ops in x["process_rsd"].items()
               for k, (between, within) in ops.items()
               if x["time_share"][T][k] >= MATERIAL_SHARE)


def FAULTS_FROM_256(x):
    return all((x["default_heap"][str(T)]["page_faults_per_forward"] >= 1) == (T >= 256) for T in TS)


def GAPS(r, m):
    """Each run's start less the previous run's end (s): the runs one after another when > 0."""
    runs = RUNS(r, m)
    return [b["started"] - a["ended"] for a, b in zip(runs, runs[1:])]


MINUTES = lambda r, m: (lambda runs: num((runs[-1]["ended"] - runs[0]["started"]) / 60, 1))(RUNS(r, m))  # noqa
ONE_AFTER_ANOTHER = lambda r, m: min(GAPS(r, m)) > 0  # noqa: E731
N = lambda r, m: str(len(RUNS(r, m)))  # noqa: E731
HELD = lambda r, m: (lambda runs: range_of([sum(  # noqa: E731  per run, how many others its interval at 512 holds
    x["softmax_interval_at_T_512"][0] <= y["time_s"]["512"]["softmax"] <= x["softmax_interval_at_T_512"][1]
    for j, y in enumerate(runs) if j != i) for i, x in enumerate(runs)], 0))(RUNS(r, m))
SHARE_WORDS = {0.5: "half", 0.75: "three quarters"}  # a limit the prose gives in words


# ----------------------------------------------------------------------------------------------
# Figures more than one document quotes, each read one way
RERUN_COUNT = lambda r, m: count(len(RERUNS))  # noqa: E731
SOFTMAX_MEMORY = lambda r, m: n_runs(r, m, lambda x: ALL_T(x, ["softmax"], "memory"))  # noqa: E731
SM_RANGE = lambda r, m: spread(r, m, SM_RATIO, 1, 100)  # noqa: E731
UNDER_10 = lambda r, m: n_runs(r, m, lambda x: SM_RATIO(x) < 0.1)  # noqa: E731
SM_SHARE = lambda r, m: spread(r, m, lambda x: x["time_share"]["512"]["softmax"], 1, 100)  # noqa: E731
BYTES_SAVED = lambda r, m: num(P27(r)["bytes_reduction"], 0)  # noqa: E731
PAST_RIDGE = lambda r, m: n_runs(r, m, lambda x: x["phase_27_past_ridge"])  # noqa: E731
BETA_RANGE = lambda r, m: spread(r, m, lambda x: x["beta"], 1)  # noqa: E731
QUIET = lambda r, m: n_runs(r, m, lambda x: x["conditions_verdict"] == "quiet")  # noqa: E731
FWD_RANGE = lambda r, m: range_of([1e3 * FWD(x) for x in RUNS(r, m)], 3)  # noqa: E731
IN_CLASS = lambda x, T, cls: BOUND(x, "scores", T) == cls  # noqa: E731  scores' (av's: a claim)
BETA_RIDGE_RANKS = lambda r, m: float(np.corrcoef(*(rank([f(x) for x in RUNS(r, m)]) for f in (  # noqa: E731
    lambda x: x["beta"], lambda x: x["ridge"])))[0, 1])  # Spearman's, over the thirteen runs
SOFTMAX_OUTLASTS = lambda x: x["time_s"]["64"]["softmax"] > sum(x["time_s"]["64"][k] for k in PROJ)  # noqa: E731
THRESHOLDS = lambda sep="** to **": lambda r, m: range_of(  # noqa: E731  the runs whose ridge lay below d_k/2
    [x["scores_av_threshold"]["T_threshold"] for x in RUNS(r, m) if BELOW(x)] or [None], 0, sep)


# ----------------------------------------------------------------------------------------------
# The figures, per document

def pass_row(p):
    """A row of question 2's table: at T = 512, in cache, one thread's copy (ns per element)."""
    return (f"| {p} | {{}} |", lambda r, m: " | ".join(num(PS(r, 512, p)[k], 3) for k in (
        "ns_per_element", "in_cache_ns_per_element", "copy_ns_per_element")))


def class_row(label, cls):
    """A row of question 1's table: in how many runs scores and av had this class, per T."""
    return (f"| {label} | {{}} |", lambda r, m: " | ".join(
        str(sum(IN_CLASS(x, T, cls) for x in RUNS(r, m))) for T in TS))


LAB = [
    # the title's paragraph
    ("held in, of **{}** runs", N),
    ("made over **{}** minutes", MINUTES),
    ("and its **{}** reruns", RERUN_COUNT),
    # question 1
    ("| intensity (FLOP/byte) | {} |", lambda r, m: " | ".join(num(op(r, T, "scores")["intensity"], 2) for T in TS)),
    class_row("memory-bound in", "memory"), class_row("near the ridge in", "near_ridge"),
    class_row("compute-bound in", "compute"),
    ("d_k/2 = {} for T", lambda r, m: num(THR(r)["asymptotic_intensity"], 0)),
    ("The runs' ridges, **{}**,", lambda r, m: spread(r, m, lambda x: x["ridge"], 2)),
    ("lay below d_k/2 in **{}**:", lambda r, m: n_runs(r, m, BELOW)),
    ("thresholds T = **{}**, at the ridge", THRESHOLDS()),
    ("π over ×**{}**,", lambda r, m: num(max(x["pi"] for x in RUNS(r, m)) / min(x["pi"] for x in RUNS(r, m)), 2)),
    ("β ranged over ×**{}** (", lambda r, m: num(max(x["beta"] for x in RUNS(r, m)) / min(x["beta"] for x in RUNS(r, m)), 2)),
    ("(**{}** GB/s), π over", BETA_RANGE),
    ("(rank correlation: **{}**)", lambda r, m: f"{BETA_RIDGE_RANKS(r, m):.2f}".replace("-", "−")),
    ("π ≈ **{}** GFLOPS", lambda r, m: str(LAP(r)["pi_GFLOPS"])),
    ("β of **{}** GB/s", lambda r, m: "{}** to **{}".format(*LAP(r)["beta_GBps"])),
    ("a ridge of **{}**, above", lambda r, m: both(*LAP(r)["ridge_range"], 1)),
    # question 2
    ("the softmax ran at **{} %** of its memory roofline", SM_RANGE),
    ("across the **{}** runs: under", N),
    ("under the lab's 10 % in **{}** of them", UNDER_10),
    ("This run's: **{}** GFLOPS,", lambda r, m: num(op(r, 512, "softmax")["GFLOPS"], 2)),
    ("GFLOPS, **{} %** of", lambda r, m: pct(SM(r)["ratio_to_memory_roof"])),
    ("%** of **{}** (β", lambda r, m: num(SM(r)["memory_roof_GFLOPS"], 1)),
    ("(β = **{}** GB/s,", lambda r, m: num(C(r)["beta_peak_GBps"], 1)),
    ("GB/s, **{}** threads copying", lambda r, m: str(C(r)["copy_threads"])),
    ("threads copying **{}** MiB", lambda r, m: str(LV(r, "DRAM")["bytes"] >> 20)),
    ("MiB); **{} %** against one thread's", lambda r, m: pct(SM(r)["ratio_to_1thread_dram_copy"])),
    ("one thread's copy (**{}** GB/s)", lambda r, m: num(LV(r, "DRAM")["GBps_1thread"], 1)),
    ("in cache, at every T in {} of the", lambda r, m: n_runs(r, m, IN_CACHE)),
    ("of the {} runs; copies", N),
    ("of the {} runs; at T = 512", N),
    ("of the {} runs set the softmax", N),
    ("memory-bound at every T in **{}** of the runs.", lambda r, m: n_runs(
        r, m, lambda x: ALL_T(x, ["scores", "av"], "memory"))),
    ("(processes timing them: **{}**)", lambda r, m: str(SP(r, 512)["process_count"])),
    *(pass_row(p) for p in perf.PASSES),
    ("copies of their bytes (**{} %** of the sum)", lambda r, m: range_of([100 * COPY_SHARE(ps) for x in RUNS(r, m)
                                                             for ps in entries(x)], 0)),
    ("The passes' sum, **{} %** of the sweep's", lambda r, m: range_of([
        100 * PASS_RATIO(e) for x in RUNS(r, m) for e in x["softmax_passes"]], 0)),
    ("128 and 256, in **{}** of", lambda r, m: n_runs(r, m, DEAREST_AS_SAID)),
    ("at T = 512 **{}** led most often", lambda r, m: LEADS_512(r, m)[0]),
    ("led most often, in **{}**.", lambda r, m: str(LEADS_512(r, m)[1])),
    ("its AVX-512 (`{}`) exp kernel", lambda r, m: r["hardware"]["numpy_softmax_kernels"]["exp"]),
    ("float64's took **{}** times as long", lambda r, m: num(EXP_PRECISION(r)["float64_over_float32"], 1)),
    ("The lab counts **{} MB** at", lambda r, m: num(op(r, 512, "softmax")["bytes"] / 1e6, 1)),
    ("add up to **{} MB**", lambda r, m: num(SP(r, 512)["passes_bytes"] / 1e6, 1)),
    ("The L3 this VM reports (**{}** MiB)", lambda r, m: str(LV(r, "L3")["capacity_bytes"] >> 20)),
    ("copy ran over {} % faster", lambda r, m: str(round(100 * perf.SAME_ROOF))),
    ("than β: **{}** of", lambda r, m: n_runs(r, m, lambda x: x["softmax_at_T_512"]["level"] == "L3")),
    ("the curriculum's), from T = **{}**", lambda r, m: str(LAP(r)["softmax_spills_from_T"])),
    # question 3
    ("would move **{}** times fewer bytes", BYTES_SAVED),
    ("rising from **{}** to", lambda r, m: num(P27(r)["naive"]["intensity"], 2)),
    ("to **{}** FLOP/byte, past", lambda r, m: num(P27(r)["without_materialising_A"]["intensity"], 0)),
    # expected observations
    ("dominate*: held in **{}** of the runs", lambda r, m: n_runs(r, m, lambda x: x["expected_observations_held"][0])),
    ("outlasted both projections in **{}**", lambda r, m: n_runs(r, m, SOFTMAX_OUTLASTS)),
    ("ops dominate*: held in **{}**.", lambda r, m: n_runs(r, m, lambda x: x["expected_observations_held"][1])),
    ("smallest op*: held in **{}**.", lambda r, m: n_runs(r, m, lambda x: x["expected_observations_held"][2])),
    # findings
    ("**Scores costs ×{} av at T = 512**", lambda r, m: spread(r, m, GAP, 2).replace("** to **", " to ×")),
    ("(this run's: **{}** against", lambda r, m: ms(op(r, 512, "scores")["time_s"])),
    ("against **{} ms**). The scaling", lambda r, m: ms(op(r, 512, "av")["time_s"])),
    ("in every run to **{} %** of the gap", lambda r, m: range_of([100 * SCALE_SHARE(x) for x in RUNS(r, m)], 0)),
    ("this run's: **{} ms** of the", lambda r, m: ms(SS(r, 512)["scale_s"])),
    ("of the **{}** gap)", lambda r, m: ms(op(r, 512, "scores")["time_s"] - op(r, 512, "av")["time_s"])),
    ("the gap is ×**{}**, against", lambda r, m: spread(r, m, lambda x: THREAD_GAP(x, "one_thread_s"), 2)),
    ("against ×**{}** on all threads", lambda r, m: spread(r, m, lambda x: THREAD_GAP(x, "all_threads_s"), 2)),
    ("**Process to process.** In **{}** of", lambda r, m: n_runs(r, m, PROCESSES_DIFFER)),
    ("some op of {} % of the forward", lambda r, m: pct(MATERIAL_SHARE, 0)),
    ("from T = 256 on, in **{}** of the runs", lambda r, m: n_runs(r, m, FAULTS_FROM_256)),
    ("took ×**{}** as long", lambda r, m: spread(r, m, DEFAULT_HEAP, 2)),
    # the thirteen runs
    ("**{}** of the runs called themselves quiet", QUIET),
    ("quiet, **{}** disturbed", lambda r, m: n_runs(r, m, lambda x: x["conditions_verdict"] != "quiet")),
    ("β ranged from **{}** GB/s, the forward", BETA_RANGE),
    ("at T = 512 from **{}** ms; runs set", FWD_RANGE),
    ("on either side: **{}** (the largest", lambda r, m: WORDS[len(SET_APART(r, m))]),
    ("the largest step, ×**{}**).", lambda r, m: (lambda below, past: num(past / below, 2))(
        *FWD_STEP(r, m))),
    ("(±1: a drift): β **{}**, the", lambda r, m: f"{DRIFT(r, m, lambda x: x['beta']):.2f}".replace("-", "−")),
    ("the forward **{}**. A run's", lambda r, m: f"{DRIFT(r, m, FWD):.2f}".replace("-", "−")),
    ("interval at T = 512 held **{}** of the other", HELD),
    ("of the other **{}** runs' times", RERUN_COUNT),
    # how it was run
    ("This run measured for **{}** s", lambda r, m: num(r["run_wall_s"], 1)),
    ("its verdict: **{}**.", lambda r, m: r["conditions"]["verdict"]),
    ("OpenBLAS ran on **{}** threads", lambda r, m: str(r["threads"]["blas_threads"])),
    ("for at least **{}** ms; each", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("each T takes **{}** samples", lambda r, m: str(r["config"]["samples_per_T"])),
    ("samples from **{}** fresh processes", lambda r, m: WORDS[r["config"]["workers"]]),
    ("less any left out (this run: **{}**;", lambda r, m: WORDS[len(r["canary"]["left_out"])]),
    ("across the runs **{}**)", lambda r, m: range_of([x["left_out"] for x in RUNS(r, m)], 0)),
    ("the processes' **{}**th percentiles", lambda r, m: EST(r, "process_quantile")),
    ("interval (this run's: **{} %** coverage)", lambda r, m: pct(op(r, 512, "scores")["time_s_interval_coverage"])),
    ("β and π: the **{}**th percentile", lambda r, m: EST(r, "ceiling_quantile")),
    ("(this run's: **{}**) of a", CEILING_REPEATS),
    ("of a {} MiB copy", lambda r, m: str(LV(r, "DRAM")["bytes"] >> 20)),
    ("of a {}² fp32 matmul", lambda r, m: str(C(r)["matmul"]["n"]) if C(r)["source"] == "measured" else "?"),
]

TOP = [
    ("(its forward at T = 512: **{}** ms;", lambda r, m: num(1e3 * FWD(run_summary(r, m)), 3)),
    ("ms; the runs': **{}**)", FWD_RANGE),
    ("its **{}** reruns, made", RERUN_COUNT),
    ("made one after another over **{}** minutes", MINUTES),
    ("the softmax at every T in **{}** of", SOFTMAX_MEMORY),
    ("of the **{}** runs;", N),
    *CLASSES_SAID,
    ("it ran at **{} %** of its", SM_RANGE),
    ("under the lab's 10 % in **{}** of the runs", UNDER_10),
    ("with **{}** times fewer bytes", BYTES_SAVED),
    ("past the ridge in **{}** of the runs", PAST_RIDGE),
    ("the largest op at every T in **{}** of the runs", lambda r, m: n_runs(
        r, m, lambda x: set(x["dominant_op_per_T"].values()) == {"softmax"})),
    ("runs, **{} %** of the forward", SM_SHARE),
    ("the T² ops already take **{} %**", lambda r, m: spread(r, m, lambda x: T2(x, 64), 1, 100)),
    ("β ranged from **{}** GB/s and the forward", BETA_RANGE),
    ("at T = 512 from **{}** ms. Each", FWD_RANGE),
    ("the committed run is **{}**.", lambda r, m: r["conditions"]["verdict"]),
    ("*disturbed*: **{}** of the", QUIET),
    ("of the **{}** said quiet", N),
]

REPORT = [
    ("run and its **{}** reruns;", RERUN_COUNT),
    ("at every T in **{}** of", SOFTMAX_MEMORY),
    ("of the **{}** runs.", N),
    *CLASSES_SAID,
    ("the softmax ran at **{} %** of", SM_RANGE),
    ("under the lab's 10 % in **{}** of the runs", UNDER_10),
    ("took **{} %** of the forward", SM_SHARE),
    ("would move **{}** times fewer bytes", BYTES_SAVED),
]

SOLUTION = [
    ("committed run and **{}** reruns", RERUN_COUNT),
    ("made over **{}** minutes", MINUTES),
    ("at every T (intensity 5/8) in **{}** of", SOFTMAX_MEMORY),
    ("of the **{}** runs", N),
    ("tends to d_k/2 = {} FLOP/byte", lambda r, m: num(THR(r)["asymptotic_intensity"], 0)),
    ("which tends to d_k/4 = {}, against", lambda r, m: num(
        r["analysis"]["scores_av_threshold"]["from_inequality_as_written"]["asymptotic_intensity"], 0)),
    ("as written finds a threshold in **{}** of", lambda r, m: n_runs(
        r, m, lambda x: x["inequality_threshold"] is not None)),
    *CLASSES_SAID,
    ("point estimate: T = **{}**.", THRESHOLDS("** and **")),
    ("π ≈ {} GFLOPS and", lambda r, m: str(LAP(r)["pi_GFLOPS"])),
    ("β of {} GB/s, a ridge", lambda r, m: "{}–{}".format(*LAP(r)["beta_GBps"])),
    ("a ridge of **{}**: above", lambda r, m: both(*LAP(r)["ridge_range"], 1)),
    ("above {}, so expect", lambda r, m: num(THR(r)["asymptotic_intensity"], 0)),
    ("in the reference, **{} %** of its", SM_RANGE),
    ("under 10 % in **{}** of the runs", UNDER_10),
    ("and from T = {} a working set", lambda r, m: str(LAP(r)["softmax_spills_from_T"])),
    ("past its {} MiB L3", lambda r, m: str(LAP(r)["caches_bytes"]["L3"] >> 20)),
    ("**{}** times fewer bytes for", BYTES_SAVED),
    ("from an intensity of **{}** to", lambda r, m: num(P27(r)["naive"]["intensity"], 2)),
    ("to **{}**, past the ridge", lambda r, m: num(P27(r)["without_materialising_A"]["intensity"], 0)),
    ("{} fresh worker processes", lambda r, m: WORDS[r["config"]["workers"]]),
    ("(the reference's default-heap forwards page-faulted ≥ 1 a forward from T = {} on)", lambda r, m: str(min(
        x["T"] for x in r["sweep_default_heap"] if x["page_faults_per_forward"] >= 1))),
    ("(found in **{}** of the", lambda r, m: n_runs(r, m, lambda x: x["plateau"])),
    ("(the committed run's: **{}**, with", CEILING_REPEATS),
    ("β and π each the {}th percentile", lambda r, m: EST(r, "ceiling_quantile")),
    ("interval of **{} %** coverage over", lambda r, m: f"{100 * C(r)['beta_peak_interval_coverage']:.1f}"
     if C(r)["beta_peak_interval_coverage"] == C(r)["pi_peak_interval_coverage"] is not None else "?"),
    ("estimate is the {}th percentile of its samples", lambda r, m: EST(r, "process_quantile")),
    ("the other processes' {}th percentile. The", lambda r, m: EST(r, "peer_quantile")),
    ("the point estimates lie within ±**{} %**", lambda r, m: at_most(100 * max(
        abs(t[0]) for x in RUNS(r, m) for t in x["timers"].values()), 1)),
    ("their intervals within ±**{} %**)", lambda r, m: at_most(100 * max(
        abs(v) for x in RUNS(r, m) for t in x["timers"].values() for v in t[1:]), 1)),
    ("moved by up to ×**{}** across its", lambda r, m: num(max(  # any op at any T
        max(x["time_s"][T][k] for x in RUNS(r, m)) / min(x["time_s"][T][k] for x in RUNS(r, m))
        for T in map(str, TS) for k in OPS), 2)),
    ("across its **{}** runs", N),
    ("over its runs' **{}** minutes", MINUTES),
    ("minutes β ranged from **{}** GB/s", BETA_RANGE),
    ("and the forward at T = 512 from **{}** ms (the lab", FWD_RANGE),
    ("(the reference's took **{} s**)", lambda r, m: num(r["run_wall_s"], 1)),
    ("measurements of at least {} ms", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("until {} ms have passed", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("more than {} % from the first worker it keeps", lambda r, m: pct(r["conditions"]["checks"]["clock_drop"]["limit"], 0)),
    ("interval of at least {} % coverage", lambda r, m: EST(r, "confidence")),
    ("ran over {} times its own process's reference", lambda r, m: str(r["canary"]["sample_slow_ratio"])),
    ("every T when its canary ran over {} times", lambda r, m: str(r["canary"]["process_slow_ratio"])),
    ("past {} at any T it calls", lambda r, m: SHARE_WORDS.get(r["canary"]["set_aside_limit"], "?")),
    ("more than {} of a T's samples", lambda r, m: SHARE_WORDS.get(r["canary"]["set_aside_limit"], "?")),
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
    r"\bT ?= ?\d+(?:(?:, | and | to |…)\d+)*", r"d_model ?= ?64", r"d_k ?= ?16", r"\b4 heads\b",
    r"Phase (?:1|15|27)\b", r"Lab 03\b", r"[Ll]abs 00–02", r"Block [A-F]\b", r"### [1-3]\.",
    r"question [1-3]", r"^# 15-attention-perf", r"15-attention-perf", r"i5-8250U", r"\bfp32\b",
    r"float(?:32|64)", r"\bL[123]d?\b", r"AVX-?512", r"\b5/8\b", r"\bT²", r"\b1e-5\b", r"\(8 with",
    r"\b15 W\b", r"\b6 MiB\b",
    r"Python 3\.1[01]", r"\b3\.10 or newer", r"\b3\.11 with", r"\b3\.10 with", r"× 5/8", r"\b2048²",
    r"128×128", r"\b64 KiB\b", r"8/5", r"1\. \*\*|2\. \*\*|3\. \*\*", r"\b10 %", r"d_k/[24]",
    r"NumPy 2\b", r"X86_V4", r"OMP_NUM_THREADS=[14]", r"\bU-series\b", r"above 8\b",
    r"4·d_k·I_crit / \(d_k − 2·I_crit\)", r"\S*(?:03-attention|PHASE_15|phase-15|rerun_NN)\S*",
    r"(?:64|512)-element", r"2-core", r"AVX2", r"≥ 1 a forward", r"\(±1: a drift\)",
]

# Quantitative words, stated properties and causes, each with what makes it true: a test that
# could have gone the other way. Over RUNS where the sentence speaks of the runs; of the
# committed run (r, m) only where every run of the chain shares it (the machine).
LABR = "experiments/15-attention-perf/README.md"
SOL = "solutions/03-attention-perf-ref.md"
REFL = "learners/borja/phase-15/reflections.md"
REP = "PHASE_15_REPORT.md"
EVERY = lambda r, m, pred: all(pred(x) for x in RUNS(r, m))  # noqa: E731  in every run
SOME = lambda r, m, pred: any(pred(x) for x in RUNS(r, m))  # noqa: E731  in some run
MOST = lambda r, m, pred: 2 * sum(pred(x) for x in RUNS(r, m)) > len(RUNS(r, m))  # noqa: E731
# The machine of the committed files (XEON_VM, AVX512, EXP_AVX512): any machine that runs the
# suite reads the same files, so these hold wherever it runs; a chain on another host rewords the
# sentences they bind (rebind.py names them), as a new run is meant to.
XEON_VM = lambda r: ("Xeon" in r["hardware"]["cpu_model"] and r["hardware"]["physical_cores"] == 2  # noqa
                     and r["hardware"]["virtualized"])
AVX512 = lambda r: "AVX512F" in r["hardware"]["simd_flags"]  # noqa: E731
EXP_AVX512 = lambda r: (r["hardware"]["numpy_softmax_kernels"]["exp"] in  # noqa: E731  numpy's exp kernel:
                        r["hardware"]["numpy_dispatch_supported"]  # dispatched, and an AVX-512 one
                        and r["hardware"]["numpy_softmax_kernels"]["exp"].startswith(("X86_V4", "AVX512")))
CODE_DIGEST = perf.code_digest((LAB_DIR / "perf.py").read_text())  # this perf.py's, once
SAME_SCRIPT = lambda r, m: len(RERUNS) == 12 and all(  # noqa: E731  the same code: perf.code_digest
    x["perf_py_code_digest"] == CODE_DIGEST for x in RUNS(r, m))
SCORES_AV_RISE = lambda r, m: EVERY(r, m, lambda x: x["dram_bound"]["scores"] == x["dram_bound"]["av"]) and all(  # noqa
    op(r, a, "scores")["intensity"] < op(r, b, "scores")["intensity"] for a, b in zip(TS, TS[1:]))
RIDGE_FOLLOWS_BETA = lambda r, m: BETA_RIDGE_RANKS(r, m) <= -0.5  # noqa: E731  the ridge, π / β, falls as β rises
BYTES_BEHIND = lambda x: all(COPY_SHARE(ps) < 1 for ps in entries(x))  # noqa: E731  the copies cost less
PASSES_MOST = lambda x: all(PASS_RATIO(e) > 0.5 for e in x["softmax_passes"])  # noqa: E731
SCALE_SHARE = lambda x: x["scores_scale_at_T_512"]["scale_s"] / (  # noqa: E731  of scores' gap over av
    x["time_s"]["512"]["scores"] - x["time_s"]["512"]["av"])
SCALE_MOST = lambda x: SCALE_SHARE(x) >= 0.75  # noqa: E731  most of the gap or more: 3/4 at least
THREADS_PART = lambda x: 1 < THREAD_GAP(x, "one_thread_s") < THREAD_GAP(x, "all_threads_s")  # noqa: E731
FAULTS_OVER_1000 = lambda x: all(x["default_heap"][T]["page_faults_per_forward"] > 1000 for T in ("256", "512"))  # noqa

# Markers: a question left open, said in plain text; no claim, so no predicate: only present.
MARKERS = [
    (LABR, "Why each leads where it does is not measured."),
    (LABR, "The faults' share of the gap is not separated."),
    (LABR, "How the two add up is not measured."),
    (LABR, "What makes processes differ is not measured."),
    (REFL, "how much of that the faults caused, I did not separate."),
    (REFL, "how much faster that would make them is a question I cannot answer yet."),
    (SOL, "Why is not measured. What would decide it"),
]

CLAIMS = [
    (LABR, "on a 2-core virtual machine whose CPU reports itself as Intel Xeon (with AVX-512)",
     lambda r, m: XEON_VM(r) and AVX512(r)),
    (LABR, "runs of this `perf.py`", SAME_SCRIPT),
    (LABR, "the softmax is memory-bound and the projections compute-bound at every T in every run",
     lambda r, m: EVERY(r, m, lambda x: ALL_T(x, ["softmax"], "memory") and ALL_T(x, PROJ, "compute"))),
    (LABR, "past every run's ridge", lambda r, m: EVERY(r, m, lambda x: x["phase_27_past_ridge"])),
    # question 1
    (LABR, "Scores and av rise in intensity with T toward d_k/2, and each run classes them against its ridge's "
     "range", SCORES_AV_RISE),
    (LABR, "and the ridge with β", RIDGE_FOLLOWS_BETA),
    # question 2
    (LABR, "threads copying", lambda r, m: EVERY(r, m, lambda x: x["beta_from"] == "all_cpus")),
    (LABR, "copies of their bytes cost less", lambda r, m: EVERY(r, m, BYTES_BEHIND)),
    (LABR, "lay closer to the same calls in cache than to copies of their bytes",
     lambda r, m: EVERY(r, m, IN_CACHE)),
    (LABR, "The dearest pass** is max at T = 64, 128 and 256",
     lambda r, m: MOST(r, m, DEAREST_AS_SAID)),
    (LABR, "numpy runs its AVX-512", lambda r, m: EXP_AVX512(r)),
    # question 3
    (LABR, "where its roof is π", lambda r, m: MOST(r, m, lambda x: x["phase_27_past_ridge"])),
    # expected observations
    (LABR, "The softmax alone outlasted both projections", lambda r, m: EVERY(
        r, m, lambda x: x["expected_observations_held"][0] or SOFTMAX_OUTLASTS(x))
     and not MOST(r, m, lambda x: x["expected_observations_held"][0])),
    # findings
    (LABR, "came in every run to", lambda r, m: EVERY(r, m, SCALE_MOST)),
    (LABR, "The threads widen it, helping av more than scores", lambda r, m: EVERY(r, m, THREADS_PART)),
    (LABR, "holds the softmax's arrays at T = 512",
     lambda r, m: op(r, 512, "softmax")["working_set_bytes"] <= LV(r, "L3")["capacity_bytes"]),
    (LABR, "the softmax under such a roof, the rest under DRAM's",
     lambda r, m: EVERY(r, m, lambda x: x["softmax_at_T_512"]["level"] in ("L3", "DRAM"))),
    (LABR, "the forward page-faults ≥ 1 a forward from T = 256 on", lambda r, m: MOST(r, m, FAULTS_FROM_256)),
    # the thirteen runs
    (LABR, "no cpufreq, so no `performance` governor",
     lambda r, m: r["conditions"]["unknown"] == ["governor_or_turbo_changed"]
     and r["hardware"]["cpu_governor_at_run"] == "unavailable"),

    ("README.md", "It ran on a 2-core virtual machine whose CPU reports itself as Intel Xeon", lambda r, m: XEON_VM(r)),
    ("README.md", "made one after another", ONE_AFTER_ANOTHER),
    ("README.md", "which page-faults ≥ 1 a forward from T = 256 on", lambda r, m: EVERY(r, m, FAULTS_FROM_256)),
    ("README.md", "the projections at no T", lambda r, m: EVERY(r, m, lambda x: ALL_T(x, PROJ, "compute"))),
    ("README.md", "Scores and av rise in intensity with T toward d_k/2, and each run classes them against its "
     "ridge's range", SCORES_AV_RISE),
    ("README.md", "Timed apart, its six numpy passes over the T×T array cost together about what the same "
     "calls cost in cache", lambda r, m: EVERY(r, m, lambda x: IN_CACHE(x) and PASSES_MOST(x))),
    ("README.md", "against the lab's expectation that the projections lead",
     lambda r, m: not SOME(r, m, lambda x: x["expected_observations_held"][0])),

    (REP, "whose CPU reports itself as Intel Xeon", lambda r, m: XEON_VM(r)),
    (REP, "Scores and av rise in intensity with T toward d_k/2, and each run classes them against its ridge's "
     "range", SCORES_AV_RISE),
    (REP, "cost together about what the same calls cost in cache, at every T in every run",
     lambda r, m: EVERY(r, m, IN_CACHE)),
    (REP, "the T² ops dominate at T = 512 and the softmax is never the smallest op; at T = 64 the projections do not lead",
     lambda r, m: EVERY(r, m, lambda x: x["expected_observations_held"] == [False, True, True])),
    (REP, "over a thousand pages per forward from T = 256 on",
     lambda r, m: EVERY(r, m, lambda x: FAULTS_FROM_256(x) and FAULTS_OVER_1000(x))),
    (REP, "fresh processes can run the same op at different speeds", lambda r, m: SOME(r, m, PROCESSES_DIFFER)),

    (SOL, "whose CPU reports itself as Intel Xeon", lambda r, m: XEON_VM(r)),
    (SOL, "what the six timers cost, with a distribution-free interval of at least", lambda r, m: all(
        x["timer_overhead_interval_coverage"] >= r["estimators"]["confidence"] for x in r["sweep"])),
    (SOL, "In the reference each run classes them against its ridge's range", SCORES_AV_RISE),
    (SOL, "In the reference the passes together cost about what the same calls cost in cache at every T",
     lambda r, m: EVERY(r, m, IN_CACHE)),
    (SOL, "a process can run an op at its own speed, further from the others than its own samples spread",
     lambda r, m: SOME(r, m, PROCESSES_DIFFER)),
    (SOL, "Fresh processes can run the same op at different speeds, further apart than one process's samples spread",
     lambda r, m: SOME(r, m, PROCESSES_DIFFER)),
    (SOL, "The reference's processes can disagree more than its samples within one process do",
     lambda r, m: SOME(r, m, PROCESSES_DIFFER)),
    (SOL, "passes took longer than three small matmuls in the reference",
     lambda r, m: EVERY(r, m, lambda x: x["time_s"]["64"]["softmax"] > x["time_s"]["64"]["qkv_proj"])),
    (SOL, "Timed against untimed forwards differ most at the two shortest forwards, T = 64 and 128",
     lambda r, m: EVERY(r, m, lambda x: max(x["timers"], key=lambda T: abs(x["timers"][T][0])) in ("64", "128")
                        and sorted(x["forward_s"], key=x["forward_s"].get)[:2] == ["64", "128"])),

    (REFL, "it turned out to be the largest op at every length I tried",
     lambda r, m: EVERY(r, m, lambda x: set(x["dominant_op_per_T"].values()) == {"softmax"})),
    (REFL, "At every length they cost about what the same calls cost running in the cache, and copying their bytes "
     "cost less", lambda r, m: EVERY(r, m, lambda x: IN_CACHE(x) and BYTES_BEHIND(x))),
    (REFL, "passes, timed apart, came to most of the softmax's own time at every length",
     lambda r, m: EVERY(r, m, PASSES_MOST)),
    (REFL, "the bytes I had expected to dominate never caught up with the work", lambda r, m: EVERY(r, m, BYTES_BEHIND)),
    (REFL, "failed up to T = 256: numpy ran its SIMD kernel for it", lambda r, m: EXP_AVX512(r)
     and EVERY(r, m, lambda x: "exp" not in {DEAREST_PASS(e) for e in x["softmax_passes"] if e["T"] in DEAREST})),
    (REFL, "and the row maximum was the dearest pass in every run", lambda r, m: EVERY(r, m, DEAREST_AS_SAID)),
    (REFL, "Naive numpy runs the softmax as six passes", lambda r, m: EVERY(r, m, PASSES_MOST)),
    (REFL, "My passes cost more than copying their bytes", lambda r, m: EVERY(r, m, BYTES_BEHIND)),
    (REFL, "processes can disagree more than one process's own samples do", lambda r, m: SOME(r, m, PROCESSES_DIFFER)),
    (REFL, "sat further below the two-thread roof than below the one-thread one in every run",
     lambda r, m: EVERY(r, m, lambda x: SM_RATIO(x) < SM_1T(x))),
    (REFL, "scores' extra pass over the big matrix costs most of the gap or more",
     lambda r, m: EVERY(r, m, SCALE_MOST)),
    (REFL, "and that the threads widen the gap", lambda r, m: EVERY(r, m, THREADS_PART)),
    (REFL, "each forward at the longer lengths faulted over a thousand pages in", lambda r, m: EVERY(r, m, FAULTS_OVER_1000)),
    (REFL, "the longest forward took longer than it does", lambda r, m: EVERY(r, m, lambda x: DEFAULT_HEAP(x) > 1)),
]


# Claims of the lab's formulas and the curriculum's figures, not of a run: each works them out with
# perf.py's own functions at the run's d_model and n_heads, so it holds on every run of this
# perf.py and fails where a formula or a figure changes (test_claims changes them).
DH = lambda r: (r["config"]["d_model"], r["config"]["n_heads"])  # noqa: E731
LAPTOP_ABOVE = lambda r, m: (lambda d, h: perf.on_lab_laptop(d, h)["ridge_range"][0] > d / h / 2)(*DH(r))  # noqa
PASS_BYTES = lambda r, m: (lambda d, h: sum(perf.array_bytes(512, d, h, perf.PASS_ARRAYS).values())  # noqa
                           / perf.op_cost(512, d, h)["softmax"][1])(*DH(r))
FLASH_SHARE = lambda r, m: (lambda d, h: perf.array_bytes(512, d, h, {"f": perf.FLASH_ARRAYS})["f"] / sum(  # noqa
    perf.op_cost(512, d, h)[k][1] for k in perf.T2_OPS))(*DH(r))


ARITHMETIC = [
    (LABR, "above d_k/2: scores and av memory-bound against DRAM at every T", LAPTOP_ABOVE),
    (SOL, "above 8, so expect no threshold there", LAPTOP_ABOVE),
    (SOL, "add up to several times those bytes", lambda r, m: 3 <= PASS_BYTES(r, m) < 10),
    (REFL, "so the same work needs a small fraction of the memory traffic", lambda r, m: FLASH_SHARE(r, m) <= 0.1),
]
