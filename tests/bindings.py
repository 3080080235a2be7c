"""Which value of the committed run each figure of the write-up quotes: per document, a phrase with
{} where the figure stands, and how the figure is read off results.json (r) and manifest.json (m),
formatted as the text prints it. test_docs.py finds every phrase verbatim and lets no other
number of the prose go unbound, except the lab's own vocabulary in STRUCTURAL."""

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
    return f"{100 * v:.{decimals}f}"


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


def table_row(name):
    """A row of the lab README's T = 512 table: time_s (ms), shares of time and FLOPs (%),
    GFLOPS, intensity, class."""
    return (f"| {name} | {{}} |", lambda r, m: " | ".join((
        ms(op(r, 512, name)["time_s"]), pct(op(r, 512, name)["time_share"]),
        pct(op(r, 512, name)["flop_share"]), num(op(r, 512, name)["gflops"], 1),
        num(op(r, 512, name)["intensity"], 2), op(r, 512, name)["bound"])))


LAB = [
    # Block E, question 1
    ("ridge of **{} FLOP/byte**", lambda r, m: num(C(r)["ridge"], 2)),
    ("towards d_k/2 = {} and never past it", lambda r, m: num(THR(r)["from_intensity_formula"]["asymptotic_intensity"], 0)),
    ("never past it: {} FLOP/byte from T = 64 to 512", lambda r, m: "{}, {}, {} and {}".format(
        *(num(op(r, T, "scores")["intensity"], 2) for T in (64, 128, 256, 512)))),
    ("the threshold T the lab asks for is {}", lambda r, m: num(THR(r)["from_intensity_formula"]["T_threshold"], 1)),
    ("(intensity {})", lambda r, m: "{} to {}".format(*(num(op(r, T, "qkv_proj")["intensity"], 0) for T in (64, 512)))),
    ("runs from **{}** to", lambda r, m: num(C(r)["ridge_range"][0], 2)),
    ("to **{}** FLOP/byte. At its low", lambda r, m: num(C(r)["ridge_range"][1], 2)),
    ("a threshold of T = **{}**; at its high end", lambda r, m: num(THR(r)["from_intensity_formula"]["at_ridge_low"], 1)),
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
    ("GFLOPS, {} % of its DRAM roofline", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("(β × 5/8 = **{}** GFLOPS)", lambda r, m: num(SM(r)["memory_ceiling_GFLOPS"], 1)),
    ("the lab expected under {} %, and here it is just above", lambda r, m: "10" if 0.1 < SM(r)["ratio_to_memory_ceiling"] < 0.13 else "?"),
    ("the softmax reaches **{} %**", lambda r, m: pct(SM(r)["ratio_to_level_ceiling"])),
    ("matter too: {} MB is five times", lambda r, m: num(AN(r)["softmax_bytes_all_steps"] / 1e6, 1)),
    ("(numpy runs it on one), **{} %**", lambda r, m: pct(SM(r)["ratio_to_1thread_dram_ceiling"])),
    ("moves **{} MB** where", lambda r, m: num(AN(r)["softmax_bytes_all_steps"] / 1e6, 1)),
    ("model counts **{} MB**", lambda r, m: num(AN(r)["softmax_bytes_lab_model"] / 1e6, 1)),
    ("stream at **{}** GB/s", lambda r, m: "{}** to **{}".format(*(num(f(
        s["GBps"] for k, s in AN(r)["softmax"].items() if k != "exp"), 1) for f in (min, max)))),
    ("streams at **{} GB/s**", lambda r, m: num(AN(r)["softmax"]["exp"]["GBps"], 1)),
    ("takes **{} %** of the softmax", lambda r, m: pct(AN(r)["softmax"]["exp"]["share"])),
    # question 3
    ("moves **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("from I = **{}** (measured", lambda r, m: num(P27(r)["measured"]["intensity"], 2)),
    ("(measured, **{}** GFLOPS)", lambda r, m: num(P27(r)["measured"]["GFLOPS"], 1)),
    ("to I = **{}**, past the ridge", lambda r, m: num(P27(r)["without_materialising_A"]["intensity"], 0)),
    ("is π, **{}** GFLOPS", lambda r, m: num(P27(r)["without_materialising_A"]["bound_GFLOPS"], 1)),
    ("at best **{} ms**", lambda r, m: ms(P27(r)["without_materialising_A"]["time_lower_bound_s"])),
    ("instead of the **{} ms** that", lambda r, m: ms(P27(r)["measured"]["time_s"])),
    # the pictures and the table
    ("the 25th percentile of {} samples from", lambda r, m: str(r["config"]["repeats"])),
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
    ("take **{} ms**. Time follows", lambda r, m: ms(op(r, 64, "softmax")["time_s"])),
    ("the softmax holds **{} %** of the FLOPs", lambda r, m: pct(op(r, 512, "softmax")["flop_share"])),
    ("FLOPs and **{} %** of the time", lambda r, m: pct(op(r, 512, "softmax")["time_share"])),
    # findings
    ("yet scores takes **{} ms**", lambda r, m: ms(op(r, 512, "scores")["time_s"])),
    ("and av **{} ms** at T = 512", lambda r, m: ms(op(r, 512, "av")["time_s"])),
    ("its matmul (**{} ms**)", lambda r, m: ms(AN(r)["scores"]["matmul"]["median_s"])),
    ("(**{} ms**): naive", lambda r, m: ms(AN(r)["scores"]["scale"]["median_s"])),
    ("once more, **{} MB** in all", lambda r, m: num(AN(r)["scores_bytes_all_steps"] / 1e6, 1)),
    ("where the lab counts **{} MB**", lambda r, m: num(AN(r)["scores_bytes_lab_model"] / 1e6, 1)),
    ("timed alone (**{} ms**)", lambda r, m: ms(AN(r)["scores_sum_of_steps_s"])),
    ("the forward takes **{} ms** instead", lambda r, m: ms(row(r, 512, "sweep_default_heap")["forward_s"])),
    ("instead of **{} ms**, with", lambda r, m: ms(row(r, 512)["forward_s"])),
    ("with **{}** page faults per forward", lambda r, m: num(row(r, 512, "sweep_default_heap")["page_faults_per_forward"], 0)),
    ("(**{}** against", lambda r, m: ms(row(r, 256, "sweep_default_heap")["forward_s"])),
    ("against **{}** ms at T = 256)", lambda r, m: ms(row(r, 256)["forward_s"])),
    ("fewer than **{}** faults per forward at every T", lambda r, m: "0.01" if max(
        x["page_faults_per_forward"] for x in r["sweep"]) < 0.01 else "?"),
    ("at T = 512 two threads take **{}×**", lambda r, m: num(window(r, 512)["threads_over_one"], 2)),
    ("at T = 128 **{}×**", lambda r, m: num(window(r, 128)["threads_over_one"], 2)),
    ("its largest T (above {}×)", lambda r, m: num(r["conditions"]["checks"]["threads_cooperate"]["limit"], 1)),
    ("the L2 copy reads **{} GB/s**", lambda r, m: num(LV(r, "L2")["GBps"], 1)),
    # how it was run
    ("The default run took **{} s** here.", lambda r, m: num(r["run_wall_s"], 1)),
    ("{} per core", lambda r, m: "L2 {} KiB".format(int(r["hardware"]["caches"]["L2"]["size"][:-1]))),
    ("L3 {} MiB shared", lambda r, m: str(int(r["hardware"]["caches"]["L3"]["size"][:-1]) >> 10)),
    ("{} cores (no SMT)", lambda r, m: str(r["hardware"]["physical_cores"])),
    ("It ran on a {}-core KVM", lambda r, m: str(r["hardware"]["physical_cores"])),
    ("OpenBLAS with {} threads", lambda r, m: str(r["threads"]["blas_threads"])),
    ("each {} rounds", lambda r, m: str(r["config"]["rounds_per_worker"])),
    ("at least {} ms (n", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("(n = **{}** at T = 64", lambda r, m: str(row(r, 64)["n_inner"])),
    ("**{}** at T = 512)", lambda r, m: str(row(r, 512)["n_inner"])),
    ("an op's {} samples", lambda r, m: str(r["config"]["repeats"])),
    ("costs **{} %** more than an untimed one at T = 64", lambda r, m: pct(row(r, 64)["instrumentation_overhead"], 2)),
    ("(95 % interval **{}** to", lambda r, m: pct(row(r, 64)["instrumentation_overhead_ci95"][0], 2).replace("-", "−")),
    ("to **{} %**); from", lambda r, m: pct(row(r, 64)["instrumentation_overhead_ci95"][1], 2)),
    ("noise (**{} %** at T = 512)", lambda r, m: pct(row(r, 512)["instrumentation_overhead"], 2).replace("-", "−")),
    ("β **{} GB/s**, the median", lambda r, m: num(C(r)["beta_peak_GBps"], 1)),
    ("the median of {}", lambda r, m: str(LV(r, "DRAM")["repeats"])),
    ("repeats on {} MiB", lambda r, m: str(LV(r, "DRAM")["bytes"] >> 20)),
    ("(interval **{}**–**", lambda r, m: num(C(r)["beta_peak_range"][0], 1)),
    ("**–**{}**; a", lambda r, m: num(C(r)["beta_peak_range"][1], 1)),
    ("a {} MiB copy ran at", lambda r, m: str(LV(r, "DRAM")["check_bytes"] >> 20)),
    ("copy ran at **{}** GB/s, just over 10 % apart: no plateau", lambda r, m: num(
        LV(r, "DRAM")["GBps_check"], 1) if not LV(r, "DRAM")["plateau"] else "?"),
    ("one thread **{} GB/s**", lambda r, m: num(LV(r, "DRAM")["GBps_1thread"], 1)),
    ("π **{} GFLOPS**, a", lambda r, m: num(C(r)["pi_peak_GFLOPS"], 1)),
    ("a {}² fp32 matmul", lambda r, m: str(C(r)["matmul"]["n"])),
    ("matmul (interval **{}**–**", lambda r, m: num(C(r)["pi_peak_range"][0], 1)),
    ("**–**{}**). Per", lambda r, m: num(C(r)["pi_peak_range"][1], 1)),
    ("L1d **{} GB/s**", lambda r, m: num(LV(r, "L1d")["GBps"], 1)),
    ("overhead, not the cache), L2 **{}**", lambda r, m: num(LV(r, "L2")["GBps"], 1)),
    ("L3 **{}**.", lambda r, m: num(LV(r, "L3")["GBps"], 1)),
    ("**Run conditions**: **{}**", lambda r, m: r["conditions"]["verdict"]),
    ("other processes used **{}** CPUs", lambda r, m: num(CHK(r, "other_processes_cpus"), 3)),
    ("steal **{} %**", lambda r, m: pct(CHK(r, "steal_fraction"), 2)),
    ("preempted **{}** times a second", lambda r, m: num(CHK(r, "preemptions_per_s"), 1)),
    ("two threads took **{}×** one thread's time;", lambda r, m: num(CHK(r, "threads_cooperate"), 2)),
    # limitations
    ("the worker medians of av lie **{}×** apart", lambda r, m: num(op(r, 512, "av")["worker_spread"], 2)),
    ("this machine's {} MiB L3", lambda r, m: str(int(r["hardware"]["caches"]["L3"]["size"][:-1]) >> 10)),
]

TOP = [
    ("this machine's ridge is **{}**", lambda r, m: num(C(r)["ridge"], 2)),
    ("never pass an intensity of {} FLOP/byte", lambda r, m: num(THR(r)["from_intensity_formula"]["asymptotic_intensity"], 0)),
    ("it runs at **{} GFLOPS**", lambda r, m: num(m["results_summary"]["softmax_GFLOPS_at_T_512"], 2)),
    ("**{} %** of its DRAM roofline", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("streams at **{} GB/s**", lambda r, m: num(AN(r)["softmax"]["exp"]["GBps"], 1)),
    ("takes **{} %** of the softmax", lambda r, m: pct(AN(r)["softmax"]["exp"]["share"])),
    ("with **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("**{} %** of the forward at T = 512", lambda r, m: num(m["results_summary"]["softmax_pct_of_total_at_T_512"], 1)),
    ("the T² ops already take **{} %**", lambda r, m: pct(OBS(r, 0)["T2_ops_share"])),
    ("(**{} ms** instead", lambda r, m: ms(row(r, 512, "sweep_default_heap")["forward_s"])),
    ("instead of **{} ms** at T = 512)", lambda r, m: ms(row(r, 512)["forward_s"])),
    ("the committed run is **{}**", lambda r, m: r["conditions"]["verdict"]),
    ("It ran on a {}-core VM", lambda r, m: str(r["hardware"]["physical_cores"])),
]

REPORT = [
    ("samples of at least {} ms from", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("timers that cost under **{} %**", lambda r, m: "2" if max(
        x["instrumentation_overhead"] for x in r["sweep"]) < 0.02 else "?"),
    ("This run was {}.", lambda r, m: r["conditions"]["verdict"]),
    ("**{} %** of the forward at T = 512", lambda r, m: num(m["results_summary"]["softmax_pct_of_total_at_T_512"], 1)),
    ("It runs at **{} %** of its DRAM", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("can never pass d_k/2 = {} FLOP/byte", lambda r, m: num(THR(r)["from_intensity_formula"]["asymptotic_intensity"], 0)),
    ("this machine's ridge is **{}**", lambda r, m: num(C(r)["ridge"], 2)),
    ("no solution once the ridge passes {}.", lambda r, m: num(THR(r)["from_inequality_as_written"]["asymptotic_intensity"], 0)),
    ("forward takes **{} ms** instead", lambda r, m: ms(row(r, 512, "sweep_default_heap")["forward_s"])),
    ("instead of **{} ms**.", lambda r, m: ms(row(r, 512)["forward_s"])),
    ("a product only {} deep", lambda r, m: str(r["config"]["d_head"])),
    ("would move **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("on a {}-core virtual machine", lambda r, m: str(r["hardware"]["physical_cores"])),
]

SOLUTION = [
    ("With the reference's ridge of **{}**", lambda r, m: num(C(r)["ridge"], 2)),
    ("tends to d_k/2 = {} FLOP/byte", lambda r, m: num(THR(r)["from_intensity_formula"]["asymptotic_intensity"], 0)),
    ("π ≈ {} GFLOPS and", lambda r, m: str(LAP(r)["pi_GFLOPS"])),
    ("β of {} GB/s, the ridge is", lambda r, m: "{}–{}".format(*LAP(r)["beta_GBps"])),
    ("the ridge is **{}**: expect", lambda r, m: "{}** to **{}".format(*(num(v, 1) for v in LAP(r)["ridge_range"]))),
    ("**{} %** of its DRAM roofline at T = 512", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("takes **{} %** of its time", lambda r, m: pct(AN(r)["softmax"]["exp"]["share"])),
    ("spill out of the {} MiB L3", lambda r, m: str(LAP(r)["caches_bytes"]["L3"] >> 20)),
    ("**{}** times fewer bytes for", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("from an intensity of **{}** to", lambda r, m: num(P27(r)["measured"]["intensity"], 2)),
    ("to **{}**, past the ridge", lambda r, m: num(P27(r)["without_materialising_A"]["intensity"], 0)),
    ("forward took **{} ms** instead", lambda r, m: ms(row(r, 512, "sweep_default_heap")["forward_s"])),
    ("instead of **{} ms**). Count", lambda r, m: ms(row(r, 512)["forward_s"])),
    ("interval (under **{} %** here at every T)", lambda r, m: "2" if max(
        x["instrumentation_overhead"] for x in r["sweep"]) < 0.02 else "?"),
    ("{} repeats each, per memory level", lambda r, m: str(C(r)["repeats"])),
    ("on a {}-core AMD EPYC", lambda r, m: str(r["hardware"]["physical_cores"])),
    ("samples of at least {} ms", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
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
    r"\b5/8\b", r"\bT²", r"8·T²|4·T²", r"\b1e-5\b", r"\(8\)", r"\b4 real cores\b", r"\b15 W\b",
    r"\b6 MiB\b", r"\b95 % interval\b", r"the 25th percentile", r"Python 3\.1[01]",
    r"\b3\.10 or newer", r"\b3\.11 with", r"\b3\.10 with", r"\bQ[1-3]\b", r"× 5/8",
    r"4 KiB", r"\b2048²", r"\bthree quarters", r"8/5", r"1\. \*\*|2\. \*\*|3\. \*\*",
    r"\b10 %", r"under glibc", r"d_k/2", r"d_k/4", r"\bat (?:64|128|256|512)\b", r"NumPy 2\b",
    r"\S*(?:03-attention|PHASE_15|phase-15)\S*",
]

# Quantitative words, each with the range of the committed run that makes it true.
FWD = lambda r, T, rows="sweep": row(r, T, rows)["forward_s"]  # noqa: E731
CLAIMS = [
    ("experiments/15-attention-perf/README.md", "Why scores costs twice av",
     lambda r, m: 1.8 <= op(r, 512, "scores")["time_s"] / op(r, 512, "av")["time_s"] <= 2.3),
    ("experiments/15-attention-perf/README.md", "MB is five times the lab's count",
     lambda r, m: 4.5 <= r["analysis"]["anatomy"]["softmax_bytes_all_steps"]
     / r["analysis"]["anatomy"]["softmax_bytes_lab_model"] < 5.5),
    ("experiments/15-attention-perf/README.md", "it is the *largest* at every T",
     lambda r, m: set(r["analysis"]["dominant_op_per_T"].values()) == {"softmax"}),
    ("experiments/15-attention-perf/README.md", "At T = 64 the default heap barely faults",
     lambda r, m: row(r, 64, "sweep_default_heap")["page_faults_per_forward"] < 1),
    ("experiments/15-attention-perf/README.md", "so the run classes scores and av \"near the ridge\" there, and memory-bound at T = 64",
     lambda r, m: [x["ops"]["scores"]["bound"] for x in r["sweep"]] == ["memory"] + ["ridge"] * 3),
    ("experiments/15-attention-perf/README.md", "lost in the noise",
     lambda r, m: all(x["instrumentation_overhead_ci95"][0] < 0 < x["instrumentation_overhead_ci95"][1]
                      for x in r["sweep"] if x["T"] >= 128)),
    ("experiments/15-attention-perf/README.md", "an order of magnitude left of",
     lambda r, m: 5 <= r["ceilings"]["ridge"] / 0.625 < 50),
    ("experiments/15-attention-perf/README.md", "and at T = 128 nothing",
     lambda r, m: window(r, 128)["threads_over_one"] >= 1.0),
    ("PHASE_15_REPORT.md", "while holding a few percent of the FLOPs",
     lambda r, m: all(x["ops"]["softmax"]["flop_share"] < 0.1 for x in r["sweep"])),
    ("PHASE_15_REPORT.md", "It is the largest op at every T",
     lambda r, m: set(r["analysis"]["dominant_op_per_T"].values()) == {"softmax"}),
    ("README.md", "The softmax is the largest op at every T",
     lambda r, m: set(r["analysis"]["dominant_op_per_T"].values()) == {"softmax"}),
    ("README.md", "help little or not at all",
     lambda r, m: all(w["threads_over_one"] >= 0.7 for w in r["analysis"]["threading_windows"])),
    ("learners/borja/phase-15/reflections.md", "it turned out to be most of the forward at every length",
     lambda r, m: all(x["ops"]["softmax"]["time_share"] > 0.5 for x in r["sweep"])),
    ("learners/borja/phase-15/reflections.md", "the `exp`, was most of it",
     lambda r, m: r["analysis"]["anatomy"]["softmax"]["exp"]["share"] > 0.5),
    ("learners/borja/phase-15/reflections.md", "running slower than my machine can copy memory",
     lambda r, m: r["analysis"]["anatomy"]["softmax"]["exp"]["GBps"]
     < r["ceilings"]["levels"]["DRAM"]["GBps_1thread"]),
    ("learners/borja/phase-15/reflections.md", "a small fraction of the memory traffic",
     lambda r, m: r["analysis"]["phase_27_preview"]["bytes_reduction"] >= 10),
    ("learners/borja/phase-15/reflections.md", "forward looked almost three times as slow as it is",
     lambda r, m: 2.5 <= FWD(r, 512, "sweep_default_heap") / FWD(r, 512) < 3.0),
    ("learners/borja/phase-15/reflections.md", "Why scores costs twice what av costs at the longest length",
     lambda r, m: 1.8 <= op(r, 512, "scores")["time_s"] / op(r, 512, "av")["time_s"] <= 2.3),
]
