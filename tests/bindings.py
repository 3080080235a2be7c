"""Which value of the committed run each figure of the write-up quotes: per document, a phrase with
{} where the figure stands, and how the figure is read off results.json (r) and manifest.json (m)
(reruns.json: RERUNS), formatted as the text prints it. test_docs.py finds every phrase verbatim
and lets no other number of the prose go unbound, except the lab's own vocabulary in STRUCTURAL.
A figure that encodes a condition returns "?" when the condition fails. CLAIMS hold the words
that state a property of the run (a count, a flag, a rule, a share and of what, a cause), each
with what makes it true; rebind.py prints those a new run no longer bears out."""
import collections
import json
import math

import numpy as np
from pathlib import Path

import perf

LAB_DIR = Path(__file__).resolve().parent.parent / "experiments" / "15-attention-perf"
OPS = perf.OPS


def use_reruns(runs):
    """The reruns the bindings read (reruns.json's digests): the committed file's by default;
    rebind.py sets the previous commit's to read the old figures."""
    global RERUNS
    RERUNS = runs


use_reruns(json.loads((LAB_DIR / "reruns.json").read_text())["runs"])


def row(r, T, key="sweep"):
    return next(x for x in r[key] if x["T"] == T)


def op(r, T, name, key="sweep"):
    return row(r, T, key)["ops"][name]


def num(v, decimals):
    return "none" if v is None else f"{v:.{decimals}f}"


def ms(v):
    return f"{v * 1e3:.3f}"


def pct(v, decimals=1):
    return f"{100 * v:.{decimals}f}".replace("-", "−")


def EST(r, key):
    """A quantile or the confidence the run used, as the write-up says it (the 25th, 95 %)."""
    return pct({**r["canary"], **r["estimators"]}[key], 0)


def at_most(v, decimals):
    """A bound the text calls "at most": rounded up, so that it stays true."""
    return num(math.ceil(v * 10 ** decimals) / 10 ** decimals, decimals)


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
SS = lambda r, T: next(x for x in r["analysis"]["scores_steps"] if x["T"] == T)  # noqa: E731
P27 = lambda r: r["analysis"]["phase_27_preview"]  # noqa: E731
OBS = lambda r, i: r["analysis"]["expected_observations"][i]  # noqa: E731
CHK = lambda r, name: r["conditions"]["checks"][name]["value"]  # noqa: E731
LV = lambda r, name: r["ceilings"]["levels"][name]  # noqa: E731
ONE_THREAD = lambda r, k: window(r, 512)["one_thread_s"][k]  # noqa: E731
COPY_GBPS = lambda r: [p["bytes"] / (p["copy_ns_per_element"] * r["config"]["n_heads"] * 512**2)  # noqa: E731
                       for p in SP(r, 512)["passes"]]  # one thread's copy of each pass's bytes, GB/s
ASIDE = lambda r, T: row(r, T)["samples_set_aside"]  # noqa: E731
SP = lambda r, T: next(x for x in r["analysis"]["softmax_passes"] if x["T"] == T)  # noqa: E731
PS = lambda r, T, p: next(x for x in SP(r, T)["passes"] if x["pass"] == p)  # noqa: E731
EXP = lambda r: SP(r, 512)["exp_precision"]  # noqa: E731
SHARE_WORDS = {0.5: "half", 0.75: "three quarters"}  # a limit the prose gives in words
WORDS = "none one two three four five six seven eight nine ten eleven twelve".split()
TS = perf.T_SWEEP  # the lab's Ts, which the write-up names


def count(n):
    """A count in words up to twelve, in digits above, as the write-up spells counts."""
    return WORDS[n] if n < len(WORDS) else str(n)


def word_list(items):
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def q1(r):
    """Question 1's answer, which depends on whether the ridge leaves scores and av a threshold."""
    if THR(r)["T_threshold"] is None:
        return ("Against β: the softmax, scores and av, at every T; no T makes scores and av "
                "compute-bound here.**")
    scores, av = (by_class(r, k, "bound") for k in ("scores", "av"))
    return (f"Against β: the softmax at every T; scores and av pass the ridge at T = "
            f"{THR(r)['T_threshold']:.1f}; against its interval, " + (scores if scores == av else
                                                 f"scores {scores}; av {av}") + ".**")


def which_beta(r):
    """Which β question 1's classes stand on: Phase 1's; a DRAM copy whose half agrees (a
    plateau); or no plateau, and what the other copy's rate would make of the threshold."""
    c, dram = C(r), LV(r, "DRAM")
    if c["source"] != "measured":
        return f"β is {'Phase 1' if c['source'] == 'phase1' else 'the --roofline file'}'s figure."
    who = "one thread" if dram["GBps_from"] == "1thread" else f"**{c['copy_threads']}** threads"
    words = "one thread" if dram["GBps_from"] == "1thread" else f"{WORDS[c['copy_threads']]} threads"
    size = f"{who} copying **{dram['bytes'] >> 20}** MiB"
    if dram["plateau"]:
        return (f"β is {words} copying **{dram['bytes'] >> 20}** MiB, {'past' if dram['past_llc'] else 'within'} the L3; a **{dram['check_bytes'] >> 20}** MiB "
                f"copy ran at **{num(dram['GBps_check'], 1)}** GB/s, within {100 * perf.PLATEAU:.0f} %: a plateau"
                + ", DRAM's" * dram["past_llc"]
                + f" (the quiet reruns found one in **{WORDS[sum(x['levels']['DRAM']['plateau'] for x in QUIET())]}** of **{WORDS[len(QUIET())]}**)"
                + f"; both copies fit the {'VM' if r['hardware']['virtualized'] else 'machine'}'s reported L3, so whose plateau"
                  " it is the run does not tell" * (not dram["past_llc"]) + ".")
    other = c["pi_peak_GFLOPS"] / dram["GBps_check"]
    T = perf.threshold_T(r["analysis"]["scores_av_threshold"]["d_k"], other, 2)
    return (f"β is {size}; a **{dram['check_bytes'] >> 20}** MiB copy ran at "
            f"**{num(dram['GBps_check'], 1)}** GB/s"
            + f" (both within the {'VM' if r['hardware']['virtualized'] else 'machine'}'s reported"
              " L3)" * (not dram["past_llc"])
            + f": no plateau. Against that rate the ridge would be **{num(other, 2)}**, " + (
                f"below d_k/2, and scores and av would pass it above T = **{T:.0f}**." if T else
                "above d_k/2: still no threshold T."))


def by_class(r, k, key):
    """An op's classes across the T: "compute-bound at T = 64 and 128, memory-bound at 256"."""
    out = {}
    for x in r["sweep"]:
        out.setdefault(x["ops"][k][key], []).append(str(x["T"]))
    return "; ".join(f"{'near the ridge' if c == 'ridge' else c + '-bound'} at T = "
                     f"{word_list(Ts)}" for c, Ts in out.items())


def SCORES_AV(r):
    """Scores' and av's classes across the T, where they share them (else "?": a re-read)."""
    classes = by_class(r, "scores", "bound")
    return classes if classes == by_class(r, "av", "bound") else "?"


def pass_row(p):
    """A row of question 2's table: at T, in cache, the copy (ns per element), the bound."""
    return (f"| {p} | {{}} |", lambda r, m: " | ".join((
        num(PS(r, 512, p)["ns_per_element"], 3), num(PS(r, 512, p)["in_cache_ns_per_element"], 3),
        num(PS(r, 512, p)["copy_ns_per_element"], 3), PS(r, 512, p)["larger_floor"])))


def table_row(name):
    """A row of the lab README's T = 512 table: time_s (ms), shares of time and FLOPs (%),
    GFLOPS, intensity, class."""
    return (f"| {name} | {{}} |", lambda r, m: " | ".join((
        ms(op(r, 512, name)["time_s"]), pct(op(r, 512, name)["time_share"]),
        pct(op(r, 512, name)["flop_share"]), num(op(r, 512, name)["GFLOPS"], 1),
        num(op(r, 512, name)["intensity"], 2), op(r, 512, name)["bound"])))


def SHARE(r, T, kind):
    """The passes' copies (or in-cache calls), summed, over the passes' own time at T."""
    e = SP(r, T)
    return (sum(p[f"{kind}_ns_per_element"] for p in e["passes"])
            / sum(p["ns_per_element"] for p in e["passes"]))


def passes_of(e):
    """A softmax_passes entry's passes: a list in results.json, a dict in reruns.json's digests."""
    return list(e["passes"].values()) if isinstance(e["passes"], dict) else e["passes"]


def REM(e):
    """The passes' sum over the sum of each pass's larger floor, max(in cache, copy), less one."""
    floors = [max(p["in_cache_ns_per_element"], p["copy_ns_per_element"]) for p in passes_of(e)]
    return sum(p["ns_per_element"] for p in passes_of(e)) / sum(floors) - 1


def NEARER_FLOORS(e):
    """The passes' sum nearer the sum of their larger floors than the sum of their copies: what
    "about what the same calls cost in cache" means (their copies: the bytes alone)."""
    copies = sum(p["copy_ns_per_element"] for p in passes_of(e))
    return abs(REM(e)) < abs(sum(p["ns_per_element"] for p in passes_of(e)) / copies - 1)


def signed(v):
    return f"{100 * v:+.1f}".replace("-", "−")


def range_of(v, decimals=1):
    lo, hi = num(min(v), decimals), num(max(v), decimals)
    return lo if lo == hi else f"{lo}** to **{hi}"


def PROJ(r):
    return op(r, 64, "qkv_proj")["time_s"] + op(r, 64, "out_proj")["time_s"]


def PASS_RATIO(e):
    return e["passes_ns_per_element"] / e["sweep_softmax_ns_per_element"]


def widest(r):
    """The op and T whose interval over the processes is widest among the ops holding
    perf.MATERIAL_SHARE of the forward."""
    return max((x["ops"][k]["time_s_interval"][1] / x["ops"][k]["time_s_interval"][0], k, x["T"])
               for x in r["sweep"] for k in OPS
               if x["ops"][k]["time_share"] >= perf.MATERIAL_SHARE)[1:]


def verdict(r):
    c = r["conditions"]
    if c["verdict"] == "quiet":
        return "no check failed."
    return ("the run is **disturbed** by " + word_list(f"`{f['check']}`" for f in c["failed"])
            + ", each with its reason under both pictures.")


TIMER = lambda r: [x["instrumentation_overhead"] for x in r["sweep"]]  # noqa: E731


def DEAREST_EVERYWHERE(entries):
    """exp the dearest pass at every T of these softmax_passes entries (a run's list of passes,
    or a digest's dict of them by name)."""
    def dearest_name(ps):
        if isinstance(ps, dict):
            return max(ps, key=lambda k: ps[k]["ns_per_element"])
        return max(ps, key=lambda p: p["ns_per_element"])["pass"]
    return all(dearest_name(e["passes"]) == "exp" for e in entries)


def timer_intervals(r):
    """Whether the timers' intervals hold zero; where not, which T and how high they reach."""
    out = [x for x in r["sweep"] if not x["instrumentation_overhead_interval"][0] <= 0
           <= x["instrumentation_overhead_interval"][1]]
    conf = EST(r, "confidence")
    if not out:
        return f"every {conf} % interval holding zero"
    return (f"T = {word_list(str(x['T']) for x in out)}'s {conf} % interval{'s' * (len(out) > 1)} "
            f"leave{'s' * (len(out) == 1)} out zero, up to **{pct(max(x['instrumentation_overhead_interval'][1] for x in out), 2)} %**")


# The reruns (reruns.json's digests: T keys are strings there).
QUIET = lambda: [x for x in RERUNS if x["conditions_verdict"] == "quiet"]  # noqa: E731
RERUNS_WHERE = lambda pred: WORDS[sum(1 for x in RERUNS if pred(x))]  # noqa: E731
R_ALL = lambda pred: all(pred(x) for x in RERUNS)  # noqa: E731
R_PASS_RATIOS = lambda: [PASS_RATIO(e) for x in RERUNS for e in x["softmax_passes"]]  # noqa: E731


def RERUN_CLASSES(i):
    """How many quiet reruns put scores (and av, which shares its class in each) in each class at
    the i-th T: "near the ridge in **ten**, compute-bound in **one**"."""
    n = collections.Counter(x["bound"]["scores"][i] for x in QUIET())
    return ", ".join(f"{'near the ridge' if c == 'ridge' else c + '-bound'} in **{WORDS[k]}**"
                     for c, k in n.most_common())


PART_OPS = {"blas": ("scores", "av"), "compute": ("softmax",)}  # the ops a canary part stands for:
# the BLAS part (a matmul) for scores and av, the compute part (exp) for the softmax


def SLOWEST_ON_ITS_PART(x, v):
    """Whether a left-out process (v, canary.left_out's entry, of rerun x) lost more at T = 512 on
    every op its slow canary part stands for (PART_OPS) than on any of the other part's; its own
    estimates over the rerun's figures."""
    rel = {o: v["own_estimates_s"]["512"][o] / x["time_s"]["512"][o] for ops in PART_OPS.values() for o in ops}
    other = next(p for p in PART_OPS if p != v["canary_part"])
    return min(rel[o] for o in PART_OPS[v["canary_part"]]) > max(rel[o] for o in PART_OPS[other])


R_LEFT_OUT = lambda: [(x, v) for x in RERUNS for v in x["left_out"].values()]  # noqa: E731


def DROPPED(r):
    """β's repeats dropped, in words: none, or how many, with the left-out ceiling workers'."""
    n = r["config"]["ceiling_repeats"] - C(r)["beta_repeats"]
    who = [k for k in r["canary"]["left_out"] if int(k.split()[-1]) <= perf.CEILING_WORKERS]
    return f"**{n}** dropped with {', '.join(who)}, left out" if n else "none dropped"


def KEPT_APART(r):
    """The one kept process alone on its side of every process group this run found, else None."""
    alone = set()
    for g in r["conditions"]["findings"]["process_groups"]:
        x = row(r, g["T"])
        times = dict(zip(x["processes"], x["ops"][g["op"]]["worker_times"]))
        (_, low), (_, high) = g["groups"]
        pick = min if low == 1 else max if high == 1 else None
        alone.add(pick and pick(times, key=times.get))
    return next(iter(alone)) if len(alone) == 1 and None not in alone else None


def PEER_RATIOS(r, label):
    """Each canary part of a warm process over the other warm processes' PEER_QUANTILE: the ratio
    that leaves a process out (perf.slow_processes), recomputed from canary.reference_s."""
    refs = dict(zip([w["label"] for w in r["worker_processes"]], r["canary"]["reference_s"]))
    others = [v for k, v in refs.items() if k.startswith("warm ") and k != label]
    return {p: refs[label][p] / float(np.quantile([o[p] for o in others], r["canary"]["peer_quantile"]))
            for p in refs[label]}


PEER_RATIO = lambda r, label: max(PEER_RATIOS(r, label).values())  # noqa: E731
PEER_PART = lambda r: max((v, p) for p, v in PEER_RATIOS(r, KEPT_APART(r)).items())[1]  # noqa: E731


BETA = lambda x: x["softmax_at_T_512"]["memory_ceiling_GFLOPS"] / x["softmax_at_T_512"]["intensity"]  # noqa: E731
OVER_10 = lambda: sorted((x for x in QUIET() if x["softmax_at_T_512"]["ratio_to_memory_ceiling"] >= 0.1),  # noqa
                         key=BETA)


def LEFT_OUT_WORDS(r):
    """The processes this run left out, in words: "no process", or each with its slow part."""
    said = [f"{k} ({PART[v['canary_part']]} ×{v['ratio']:.2f})" for k, v in r["canary"]["left_out"].items()]
    return (", ".join(said[:-1]) + " and " * (len(said) > 1) + said[-1]
            + ": its canary part over the others' fast side" * (len(said) == 1)
            + ": their canary parts over the others' fast side" * (len(said) > 1)) if said else "no process"


PART = {"blas": "BLAS", "compute": "compute"}


def GROUPS_SENTENCE(r):
    """What perf.py's process groups found among the processes kept, in a sentence."""
    n = len(r["conditions"]["findings"]["process_groups"])
    return (f"perf.py split the processes kept into two groups at {count(n)} op and T pairs, {GROUPS_WORDS(r)}"
            if n else "perf.py found no two groups among the processes kept")


def GROUPS_WORDS(r):
    """Who the run's process groups split off: one kept process alone in every split (named, with
    its canary ratio against the limit that leaves a process out), else no single process."""
    if not (k := KEPT_APART(r)):
        return "no one process alone in all of them"
    ratio = PEER_RATIO(r, k)
    return (f"each time {k} alone: its {PART[PEER_PART(r)]} canary part read ×{ratio:.2f}"
            + ", just under the limit" * (0.95 < ratio / r["canary"]["process_slow_ratio"] < 1))


def SLOW_RERUNS():
    """The reruns above the largest gap in their forwards at T = 512, split by perf.py's own rule
    for processes (process_groups: wider than GROUP_GAP and than either side's spread); none if
    the forwards form one group."""
    fwd = sorted(RERUNS, key=lambda x: x["forward_s"]["512"])
    groups = perf.process_groups([x["forward_s"]["512"] for x in fwd])
    return fwd[len(fwd) - groups[1][1]:] if len(groups) == 2 else []


# the warm workers that ran: counted in the run's worker records; in words, a bound figure
WARM = lambda r: len([w for w in r["worker_processes"] if w["label"].startswith("warm ")])  # noqa: E731
N_WARM = lambda r: WORDS[WARM(r)]  # noqa: E731


def rerun_row(label, here, of_rerun, fmt, interval=None):
    """A row of the reruns' table: this run's figure (and interval over its processes), the
    twelve's range, and how many of the twelve lie inside this run's interval."""
    def get(r, m):
        among = [of_rerun(x) for x in RERUNS]
        cells = [fmt(here(r, m)), f"{fmt(min(among))}–{fmt(max(among))}"]
        if interval:
            lo, hi = interval(r)
            cells.append(f"{fmt(lo)}–{fmt(hi)}: {WORDS[sum(lo <= v <= hi for v in among)]}")
        return " | ".join(cells + ["–"] * (not interval))
    return (f"| {label} | {{}} |", get)


def op_rerun_row(k, T):
    return rerun_row(f"{k} at T = {T} (ms)", lambda r, m: op(r, T, k)["time_s"],
                     lambda x: x["time_s"][str(T)][k], ms, lambda r: op(r, T, k)["time_s_interval"])


LAB = [
    ("At T = 128 the reruns found them {};", lambda r, m: RERUN_CLASSES(1)),
    ("; at T = 512, {}.", lambda r, m: RERUN_CLASSES(3)),
    ("at T = 512, **{}** of them lost more", lambda r, m: count(sum(SLOWEST_ON_ITS_PART(*e) for e in R_LEFT_OUT()))),
    ("within one. {}. What makes", lambda r, m: GROUPS_SENTENCE(r)),
    ("this run's, **{}** ms, lies", lambda r, m: ms(row(r, 512)["forward_s"])),
    ("ms, lies {}.", lambda r, m: (lambda v, lo, hi: "among them" if lo <= v <= hi else "above them all" if v > hi
                                   else "below them all")(row(r, 512)["forward_s"], *(f(x["forward_s"]["512"]
                                                                                      for x in RERUNS) for f in (min, max)))),
    ("; together **{} %** of the sweep's", lambda r, m: pct((SS(r, 512)["matmul_s"] + SS(r, 512)["scale_s"])
                                                         / SS(r, 512)["sweep_scores_s"], 0)),
    ("(over 10 %: {}). But", lambda r, m: (lambda n: "none" if not n else f"the {WORDS[n]} with the lowest β" if
                                            OVER_10() == sorted(QUIET(), key=BETA)[:n] else "?")(len(OVER_10()))),
    ("from {} warm worker processes", lambda r, m: N_WARM(r)),
    ("an {}, on the default heap", lambda r, m: "eleventh" if [w["label"] for w in r["worker_processes"]] == [
        "default heap"] + [f"warm {i}" for i in range(1, 11)] else "?"),
    ("fit the VM's **{}** MiB L3", lambda r, m: str(int(r["hardware"]["caches"]["L3"]["size"][:-1]) >> 10)),
    ("its ratio would be **{} %**", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"] * C(r)["beta_peak_GBps"]
                                                 / max(COPY_GBPS(r)))),
    ("(each the {}th percentile of its samples)", lambda r, m: EST(r, "process_quantile")),
    ("other processes' {}th percentile: here", lambda r, m: EST(r, "peer_quantile")),
    ("method; the {}th percentile of repeats", lambda r, m: EST(r, "ceiling_quantile")),
    # Block E, question 1
    ("**{} The projections", lambda r, m: q1(r)),
    ("π / β, is **{} FLOP/byte**", lambda r, m: num(C(r)["ridge"], 2)),
    ("(interval {}); the", lambda r, m: both(*C(r)["ridge_interval"], 2, " to ")),
    ("rises with T towards d_k/2 = {}:", lambda r, m: num(THR(r)["asymptotic_intensity"], 0)),
    ("{} FLOP/byte from T = 64 to 512", lambda r, m: "{}, {}, {} and {}".format(
        *(num(op(r, T, "scores")["intensity"], 2) for T in TS))),
    ("- **Which β.** {} On the lab's", lambda r, m: which_beta(r)),
    ("In the **{}** quiet reruns", lambda r, m: WORDS[len(QUIET())]),
    ("reruns the ridge read **{}**, below", lambda r, m: range_of([x["ridge"] for x in QUIET()], 2)),
    ("- {} In the **", lambda r, m: THRESHOLD_WORDS(r)),
    ("so, {}, scores and av would be", lambda r, m: "unlike here" if BELOW(r) else "as here"),
    ("%**). {}. The roofline counts", lambda r, m: SIDE_WORDS(r)),
    ("π ≈ **{}** GFLOPS", lambda r, m: str(LAP(r)["pi_GFLOPS"])),
    ("β of **{}** GB/s", lambda r, m: "{}** to **{}".format(*LAP(r)["beta_GBps"])),
    ("a ridge of **{}**: above", lambda r, m: both(*LAP(r)["ridge_range"], 1)),
    ("its 6 MiB L3 from T = **{}**", lambda r, m: str(LAP(r)["softmax_spills_from_T"])),
    # question 2
    ("the softmax runs at {} GFLOPS, ", lambda r, m: num(SM(r)["GFLOPS"], 2)),
    ("GFLOPS, {} % of its memory roofline", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("(β × 5/8 = **{}** GFLOPS)", lambda r, m: num(SM(r)["memory_ceiling_GFLOPS"], 1)),
    ("GFLOPS): {} the lab's 10 %", lambda r, m: "not under" if SM(r)["ratio_to_memory_ceiling"] >= 0.1
     else "under"),
    ("and the quiet reruns read **{} %** (over", lambda r, m: range_of(
        [100 * x["softmax_at_T_512"]["ratio_to_memory_ceiling"] for x in QUIET()])),
    ("counts the lab's **{} MB**; naive", lambda r, m: num(op(r, 512, "softmax")["bytes"] / 1e6, 1)),
    ("six passes move **{} MB**", lambda r, m: num(SP(r, 512)["passes_bytes"] / 1e6, 1)),
    ("Their own arrays, **{}** MB at", lambda r, m: both(*(f(p["bytes"] / 1e6 for p in SP(r, 512)["passes"])
                                                              for f in (min, max)), 0)),
    ("thread copying them ran at **{}** GB/s.", lambda r, m: both(min(COPY_GBPS(r)), max(COPY_GBPS(r)), 1)),
    ("thread's copy of the same **{}** MiB", lambda r, m: str(LV(r, "DRAM")["bytes"] >> 20)),
    ("MiB (**{}** GB/s) the ratio", lambda r, m: num(LV(r, "DRAM")["GBps_1thread"], 1)),
    ("the ratio is **{} %**, over", lambda r, m: pct(SM(r)["ratio_to_1thread_dram_copy"])),
    ("every quiet rerun (**{} %**).", lambda r, m: range_of(
        [100 * x["softmax_at_T_512"]["ratio_to_1thread_dram_copy"] for x in QUIET()])),
    ("the dearest.** **{}** of the kept warm processes", lambda r, m: "** to **".join(dict.fromkeys(
        WORDS[f(x["process_count"] for x in r["analysis"]["softmax_passes"])] for f in (min, max))).capitalize()),
    *(pass_row(p) for p in perf.PASSES),
    ("their sum, **{}** ns per element", lambda r, m: num(SP(r, 512)["passes_ns_per_element"], 2)),
    ("is **{} %** of the sweep's", lambda r, m: pct(PASS_RATIO(SP(r, 512)))),
    ("sweep's softmax (**{}**), estimated", lambda r, m: num(SP(r, 512)["sweep_softmax_ns_per_element"], 2)),
    ("**The passes come to {} % of the softmax**", lambda r, m: "{} to {}".format(
        *(pct(f(map(PASS_RATIO, r["analysis"]["softmax_passes"])), 0) for f in (min, max)))),
    ("bytes come to **{} %** of their time across T", lambda r, m: "{}** to **{}".format(
        *(pct(f(SHARE(r, T, "copy") for T in TS), 0) for f in (min, max)))),
    ("One by one, from **{}** times it", lambda r, m: both(min(ONE_BY_ONE(r)), max(ONE_BY_ONE(r)), 2)),
    ("below d_k/2 in **{}**;", lambda r, m: (lambda n: "every one" if n == len(QUIET()) else WORDS[n])(sum(
        x["ridge"] < x["scores_av_threshold"]["asymptotic_intensity"] for x in QUIET()))),
    ("repeats (of **{}**:", lambda r, m: str(r["config"]["ceiling_repeats"])),
    (": {}; interval **", lambda r, m: DROPPED(r)),
    ("The passes' sum lies **{} %** from", lambda r, m: "{}**, **{}**, **{}** and **{}".format(
        *(signed(REM(SP(r, T))) for T in TS))),
    ("at every T**, at T = 512 **{}** ns", lambda r, m: num(PS(r, 512, "exp")["ns_per_element"], 2)),
    ("its AVX2 (`{}`) kernel", lambda r, m: r["hardware"]["numpy_softmax_kernels"]["exp"]),
    ("**{}** times the subtraction's", lambda r, m: num(
        PS(r, 512, "exp")["ns_per_element"] / PS(r, 512, "subtract")["ns_per_element"], 1)),
    ("subtraction's **{}**, in cache", lambda r, m: num(PS(r, 512, "subtract")["ns_per_element"], 2)),
    ("in cache **{}** against", lambda r, m: num(PS(r, 512, "exp")["in_cache_ns_per_element"], 2)),
    ("against **{}**. numpy runs its", lambda r, m: num(PS(r, 512, "subtract")["in_cache_ns_per_element"], 2)),
    ("three batches of at least {} ms,", lambda r, m: num(perf.CALL_MIN_TIME * 1e3, 0)),
    ("the fastest of {} batches", lambda r, m: WORDS[perf.CALL_REPEATS]),
    ("float64's takes **{}** times as", lambda r, m: num(EXP(r)["float64_over_float32"], 1)),
    # question 3
    ("moves **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("from I = **{}** to", lambda r, m: num(P27(r)["measured"]["intensity"], 2)),
    ("I = **{}**, past the ridge", lambda r, m: num(P27(r)["without_materialising_A"]["intensity"], 0)),
    # the pictures
    *(table_row(name) for name in OPS),
    # expected observations
    ("| At T = 64 the projections dominate | **{}** |", lambda r, m: word(OBS(r, 0)["held"])),
    ("the projections take {} % of the forward", lambda r, m: pct(OBS(r, 0)["projections_share"])),
    ("the T² ops {} %;", lambda r, m: pct(OBS(r, 0)["T2_ops_share"])),
    ("the softmax alone {} %", lambda r, m: pct(op(r, 64, "softmax")["time_share"])),
    ("| At T = 512 the T² ops dominate | **{}** |", lambda r, m: word(OBS(r, 1)["held"])),
    ("dominate | **yes** | {} % |", lambda r, m: pct(OBS(r, 1)["T2_ops_share"])),
    ("| The softmax is never the smallest op | **{}** |", lambda r, m: word(OBS(r, 2)["held"])),
    ("it alone takes **{} ms** against", lambda r, m: ms(op(r, 64, "softmax")["time_s"])),
    ("against the projections' **{} ms**.", lambda r, m: ms(PROJ(r))),
    # findings
    ("**Scores costs {}× av**", lambda r, m: num(op(r, 512, "scores")["time_s"] / op(r, 512, "av")["time_s"], 1)),
    ("at T = 512 (**{}** against", lambda r, m: ms(op(r, 512, "scores")["time_s"])),
    ("against **{} ms**), though", lambda r, m: ms(op(r, 512, "av")["time_s"])),
    ("the matmul takes **{} ms** and", lambda r, m: ms(SS(r, 512)["matmul_s"])),
    ("and the scaling **{} ms**", lambda r, m: ms(SS(r, 512)["scale_s"])),
    ("ms** (**{} %** of the two;", lambda r, m: pct(SS(r, 512)["scale_share"], 0)),
    ("This run left out {}. The reruns", lambda r, m: LEFT_OUT_WORDS(r)),
    ("The reruns left out **{}** of", lambda r, m: count(sum(len(x["left_out"]) for x in RERUNS))),
    ("of their **{}**, each slow", lambda r, m: str(sum(x["config"]["workers"] for x in RERUNS))),
    ("Their forwards at T = 512, **{}** ms, form", lambda r, m: range_of([1e3 * x["forward_s"]["512"] for x in RERUNS], 3)),
    ("interval is widest, {}, the", lambda r, m: "{} at T = {}".format(*widest(r))),
    ("**{} %** between them against", lambda r, m: pct(WIDEST(r)["between_process_rsd"])),
    ("against **{} %** within one", lambda r, m: pct(WIDEST(r)["within_process_rsd"])),
    ("at T = 512 it takes **{} ms** instead of", lambda r, m: ms(row(r, 512, "sweep_default_heap")["forward_s"])),
    ("instead of **{} ms**, with", lambda r, m: ms(row(r, 512)["forward_s"])),
    ("with **{}** page faults per forward", lambda r, m: num(
        row(r, 512, "sweep_default_heap")["page_faults_per_forward"], 0)),
    ("at most **{}** faults.", lambda r, m: at_most(max(
        x["page_faults_per_forward"] for x in r["sweep"]), 2)),
    ("samples, against {}; the faults", lambda r, m: WORDS[len(row(r, 512)["processes"])]),
    ("(one process, {} samples, against", lambda r, m: WORDS[r["config"]["default_heap_samples"]]),
    ("windows the gap is **{}×**", lambda r, m: num(ONE_THREAD(r, "scores") / ONE_THREAD(r, "av"), 1)),
    ("(**{}** against", lambda r, m: ms(ONE_THREAD(r, "scores"))),
    ("against **{} ms**), against", lambda r, m: ms(ONE_THREAD(r, "av"))),
    ("against **{}×** on all threads", lambda r, m: num(ALL_THREADS_GAP(r), 1)),
    # how it was run
    ("default run took **{}** s", lambda r, m: num(r["run_wall_s"], 1)),
    ("committed whatever its verdict: **{}**.", lambda r, m: r["conditions"]["verdict"]),
    ("**Machine**: {} cores,", lambda r, m: str(r["hardware"]["physical_cores"])),
    ("cores, {} family", lambda r, m: r["hardware"]["vendor"]),
    ("family **{}** model", lambda r, m: str(r["hardware"]["family"])),
    ("model **{}**, L2", lambda r, m: str(r["hardware"]["model"])),
    ("L2 {} KiB per core", lambda r, m: r["hardware"]["caches"]["L2"]["size"][:-1]),
    ("OpenBLAS, {} threads", lambda r, m: str(r["threads"]["blas_threads"])),
    ("back to back for at least {} ms, each", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("mean over them; {} samples per T", lambda r, m: str(r["config"]["samples_per_T"])),
    ("the hatched bars' **{}** per T", lambda r, m: str(r["config"]["default_heap_samples"])),
    ("all processes with **{} %** confidence", lambda r, m: pct(op(r, 512, "scores")["time_s_interval_coverage"])),
    ("ran over {} times its process's own", lambda r, m: str(r["canary"]["batch_slow_ratio"])),
    ("own reference: {} of the", lambda r, m: "**{}**, **{}**, **{}** and **{}**".format(
        *(ASIDE(r, T) for T in TS))),
    ("of the **{}** samples at T = 64", lambda r, m: str(row(r, 64)["sample_count"])
     if len({x["sample_count"] for x in r["sweep"]}) == 1 else "?"),
    ("ran over {} times the other processes'", lambda r, m: str(r["canary"]["process_slow_ratio"])),
    ("percentile: here **{}**, so", lambda r, m: WORDS[len(r["canary"]["left_out"])]),
    ("the figures come from **{}** processes", lambda r, m: WORDS[len(row(r, 512)["processes"])]
     if len({len(x["processes"]) for x in r["sweep"]}) == 1 else "?"),
    ("- **Timers**: **{}** to", lambda r, m: pct(min(TIMER(r)), 2)),
    ("to **{} %** of a forward;", lambda r, m: pct(max(TIMER(r)), 2)),
    ("of a forward; {}.", lambda r, m: timer_intervals(r)),
    ("repeats of at least {} ms): β", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("β **{} GB/s**, **", lambda r, m: num(C(r)["beta_peak_GBps"], 1)),
    ("GB/s**, **{}** repeats (of", lambda r, m: str(C(r)["beta_repeats"])),
    ("; interval **{}**); π", lambda r, m: both(*C(r)["beta_peak_interval"], 1, "**–**")),
    ("π **{} GFLOPS**,", lambda r, m: num(C(r)["pi_peak_GFLOPS"], 1)),
    ("GFLOPS**, **{}** repeats of a", lambda r, m: str(C(r)["pi_repeats"])),
    ("a {}² fp32 matmul", lambda r, m: str(C(r)["matmul"]["n"])),
    ("matmul (interval **{}**).", lambda r, m: both(*C(r)["pi_peak_interval"], 1, "**–**")),
    ("other processes used **{}** CPUs", lambda r, m: num(CHK(r, "other_processes_cpus"), 3)),
    ("steal was **{} %**;", lambda r, m: pct(CHK(r, "steal_fraction"), 2)),
    ("%**; {} ## The next run", lambda r, m: verdict(r)),
    # the next run: the reruns
    ("(`reruns.json`): **{}** called", lambda r, m: RERUNS_WHERE(lambda x: x["conditions_verdict"] == "quiet")),
    ("themselves quiet and **{}** disturbed", lambda r, m: RERUNS_WHERE(lambda x: x["conditions_verdict"] != "quiet")),
    ("the passes' sum **{}** times the softmax at every T", lambda r, m: "{}** to **{}".format(
        num(min(R_PASS_RATIOS()), 2), num(max(R_PASS_RATIOS()), 2))),
    ("every T, within **{} %** of their larger floors", lambda r, m: at_most(100 * max(
        abs(REM(e)) for x in RERUNS for e in x["softmax_passes"]), 1)),
    *(op_rerun_row(k, 512) for k in ("scores", "softmax", "av")),
]

TOP = [
    ("lies {} d_k/2, where their", lambda r, m: "below" if BELOW(r) else "above"),
    ("under 10 % in {} quiet reruns", lambda r, m: UNDER_10_COUNT()),
    ("medians over fresh processes ({}, less", lambda r, m: N_WARM(r)),
    ("the softmax at every T; scores and av {}: this run's ridge", lambda r, m: SCORES_AV(r)),
    ("reruns; **{} %** against one thread's", lambda r, m: pct(SM(r)["ratio_to_1thread_dram_copy"])),
    ("run's ridge of **{}** lies", lambda r, m: num(C(r)["ridge"], 2)),
    ("it runs at **{} GFLOPS**", lambda r, m: num(m["results_summary"]["softmax_GFLOPS_at_T_512"], 2)),
    ("**{} %** of its memory roofline", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("with **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
    ("**{} %** of the forward at T = 512", lambda r, m: num(m["results_summary"]["softmax_pct_of_total_at_T_512"], 1)),
    ("the T² ops already take **{} %**", lambda r, m: pct(OBS(r, 0)["T2_ops_share"])),
    ("The committed run is **{}**", lambda r, m: r["conditions"]["verdict"]),
    ("committed run left out **{}**.", lambda r, m: WORDS[len(r["canary"]["left_out"])]),
]

REPORT = [
    ("; scores and av {} (", lambda r, m: "pass this run's ridge, which lies below d_k/2" if BELOW(r)
     else "never pass this run's ridge, which lies above d_k/2"),
    ("under 10 % in {} quiet reruns", lambda r, m: UNDER_10_COUNT()),
    ("(this run left out {})", lambda r, m: f"**{WORDS[len(r['canary']['left_out'])]}**" if r["canary"]["left_out"] else "none"),
    ("in {} fresh processes", lambda r, m: N_WARM(r)),
    ("d_k/2 ({}); the softmax runs at", lambda r, m: SCORES_AV(r)),
    ("reruns, **{} %** against one thread's", lambda r, m: pct(SM(r)["ratio_to_1thread_dram_copy"])),
    ("run until {} ms have passed", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("This run was {}.", lambda r, m: r["conditions"]["verdict"]),
    ("the softmax runs at **{} %** of its memory", lambda r, m: pct(SM(r)["ratio_to_memory_ceiling"])),
    ("is **{} %** of the forward there", lambda r, m: num(m["results_summary"]["softmax_pct_of_total_at_T_512"], 1)),
    ("would move **{}** times fewer bytes", lambda r, m: num(P27(r)["bytes_reduction"], 0)),
]

SOLUTION = [
    ("The reference's ridge lies {} (its README", lambda r, m: "below it: there scores and av pass the ridge as T grows"
     if BELOW(r) else "above it in the committed run and below it in every quiet rerun, where scores and av pass the "
     "ridge as T grows" if RERUNS_BELOW() else "?"),
    ("{} fresh warm worker processes", lambda r, m: N_WARM(r)),
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
    ("(the committed run found {};", lambda r, m: "one" if LV(r, "DRAM")["plateau"] else "none"),
    ("into groups in **{}** of its twelve", lambda r, m: WORDS[sum(bool(x["process_groups"]) for x in RERUNS)]),
    ("; **{}** of its twelve reruns did", lambda r, m: WORDS[sum(x["levels"]["DRAM"]["plateau"] for x in RERUNS)]),
    ("each the 75th percentile of **{}** repeats", lambda r, m: str(C(r)["beta_repeats"])
     if C(r)["beta_repeats"] == C(r)["pi_repeats"] else "?"),
    ("β and π each the {}th percentile", lambda r, m: EST(r, "ceiling_quantile")),
    ("repeats with its {} % interval", lambda r, m: EST(r, "confidence")),
    ("estimate is the {}th percentile of its samples", lambda r, m: EST(r, "process_quantile")),
    ("the other processes' {}th percentile. The", lambda r, m: EST(r, "peer_quantile")),
    ("estimates lie within ±**{} %**, their", lambda r, m: at_most(100 * max(abs(x["instrumentation_overhead"])
                                                                   for x in r["sweep"]), 1)),
    ("their intervals within ±**{} %**)", lambda r, m: at_most(100 * max(
        abs(v) for x in r["sweep"] for v in x["instrumentation_overhead_interval"]), 1)),
    ("T = 512 moved by up to ×**{}**.", lambda r, m: num(max(
        max(x["time_s"]["512"][k] for x in RERUNS) / min(x["time_s"]["512"][k] for x in RERUNS)
        for k in OPS), 2)),
    ("(the reference's took **{} s**)", lambda r, m: num(r["run_wall_s"], 1)),
    ("measurements of at least {} ms", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("until {} ms have passed", lambda r, m: num(r["config"]["min_time_s"] * 1e3, 0)),
    ("more than {} % from the first worker it keeps", lambda r, m: pct(r["conditions"]["checks"]["clock_drop"]["limit"], 0)),
    ("distribution-free {} % interval", lambda r, m: EST(r, "confidence")),
    ("ran over {} times its own process's reference", lambda r, m: str(r["canary"]["batch_slow_ratio"])),
    ("every T when its canary ran over {} times", lambda r, m: str(r["canary"]["process_slow_ratio"])),
    ("holding at least {} % of the forward", lambda r, m: pct(perf.MATERIAL_SHARE, 0)),
    ("sorted estimates over {} %", lambda r, m: pct(perf.GROUP_GAP - 1, 0)),
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
    r"128×128", r"\b64 KiB\b", r"8/5", r"1\. \*\*|2\. \*\*|3\. \*\*", r"\b10 %", r"d_k/2",
    r"NumPy 2\b", r"X86_V4", r"OMP_NUM_THREADS=[14]", r"\bU-series\b", r"above 8\b",
    r"4·d_k·I_crit / \(d_k − 2·I_crit\)", r"\S*(?:03-attention|PHASE_15|phase-15|rerun_NN)\S*",
    r"(?:64|512)-element", r"2-core", r"AVX2",
]

# Quantitative words, stated properties and causes, each with what makes it true of the committed
# run: a test that could have gone the other way.
LABR = "experiments/15-attention-perf/README.md"
SOL = "solutions/03-attention-perf-ref.md"
REFL = "learners/borja/phase-15/reflections.md"
REP = "PHASE_15_REPORT.md"
ALL_T = lambda r, ops, cls, key="bound": all(x["ops"][o][key] == cls for x in r["sweep"] for o in ops)  # noqa
FAULTS_FROM_256 = lambda r: all((row(r, T, "sweep_default_heap")["page_faults_per_forward"] >= 1) == (T >= 256)  # noqa
                                for T in TS)
SOFTMAX_LARGEST = lambda r: set(r["analysis"]["dominant_op_per_T"].values()) == {"softmax"}  # noqa
LAB_BYTES = lambda r: SP(r, 512)["passes_bytes"] / op(r, 512, "softmax")["bytes"]  # noqa
PASSES_ADD_UP = lambda r: all(0.75 <= PASS_RATIO(e) <= 1.25 for e in r["analysis"]["softmax_passes"])  # noqa
EPYC_VM = lambda r: ("EPYC" in r["hardware"]["cpu_model"] and r["hardware"]["physical_cores"] == 2  # noqa
                     and r["hardware"]["virtualized"])
NO_AVX512 = lambda r: "AVX2" in r["hardware"]["simd_flags"] and not any(  # noqa: E731
    f.startswith("AVX512") for f in r["hardware"]["simd_flags"])
EVERY_IN_CACHE = lambda r: all(NEARER_FLOORS(e) and all(  # noqa: E731  every T
    p["larger_floor"] in ("in cache", "unresolved") for p in e["passes"]) for e in r["analysis"]["softmax_passes"])
BYTES_BEHIND = lambda r: all(SHARE(r, T, "copy") < 0.5 for T in TS)  # noqa: E731
EXP_DISPATCHED = lambda r: r["hardware"]["numpy_softmax_kernels"]["exp"] in r["hardware"]["numpy_dispatch_supported"]  # noqa: E731
EXP_SIMD = lambda r: (EXP(r)["float64_ns_per_element_interval"][0] > 2 * EXP(r)["float32_ns_per_element_interval"][1]  # noqa: E731
                      and EXP_DISPATCHED(r))
EXP_DEAREST = lambda r: DEAREST_EVERYWHERE(r["analysis"]["softmax_passes"])  # noqa: E731  at every T
SIDE_OF_10 = lambda r: SM(r)["ratio_to_memory_ceiling"] < 0.1 <= SM(r)["ratio_to_1thread_dram_copy"]  # noqa: E731
RERUNS_SPLIT_10 = lambda: all(x["softmax_at_T_512"]["ratio_to_memory_ceiling"] < 0.1  # noqa: E731  the copy
                              <= x["softmax_at_T_512"]["ratio_to_1thread_dram_copy"] for x in QUIET())  # decides
BELOW = lambda r: C(r)["ridge"] < THR(r)["asymptotic_intensity"]  # noqa: E731  the ridge below d_k/2
RERUNS_BELOW = lambda: all(x["ridge"] < x["scores_av_threshold"]["asymptotic_intensity"] for x in QUIET())  # noqa


def THRESHOLD_WORDS(r):
    """Question 1's threshold bullet, whichever side of d_k/2 this run's ridge lies."""
    t = THR(r)
    if BELOW(r):
        return ("**A threshold T here.** This ridge lies below d_k/2, so their intensity passes it (at T = "
                f"**{both(t['at_ridge_low'], t['at_ridge_high'], 1)}** over the ridge's interval).")
    return ("**No threshold T here.** This ridge lies above d_k/2, so their intensity never reaches it"
            + (f" (from the interval's low end it would above T = **{num(t['at_ridge_low'], 1)}**)"
               if t["at_ridge_low"] else "") + ".")


def SIDE_WORDS(r):
    """Whether the copy that stands for β decides the softmax's side of 10 %, here and in the reruns."""
    if SIDE_OF_10(r):
        return "Which copy stands for β decides the side of 10 %"
    return ("Here both put it over 10 %; in every quiet rerun the copy decided the side"
            if SM(r)["ratio_to_memory_ceiling"] >= 0.1 and RERUNS_SPLIT_10() else "?")
SOFTMAX_ONE_THREAD = lambda r: all(  # noqa: E731  no BLAS: more threads never help it (a BLAS op's ratio: ~0.5-0.6)
    w["threads_over_one"]["softmax"] >= 0.9 for w in r["analysis"]["threading_windows"])
UNDER_10 = lambda runs: all(x["softmax_at_T_512"]["ratio_to_memory_ceiling"] < 0.1 for x in runs)  # noqa: E731
UNDER_10_COUNT = lambda: "**{}** of the **{}**".format(*(WORDS[len(v)] for v in (  # noqa: E731
    [x for x in QUIET() if UNDER_10([x])], QUIET())))
FAULTS_OVER_1000 = lambda r: all(  # noqa: E731  the default heap, T = 256 and 512
    row(r, T, "sweep_default_heap")["page_faults_per_forward"] > 1000 for T in (256, 512))


WIDEST = lambda r: op(r, widest(r)[1], widest(r)[0])  # noqa: E731
ALL_THREADS_GAP = lambda r: window(r, 512)["all_threads_s"]["scores"] / window(r, 512)["all_threads_s"]["av"]  # noqa: E731
ONE_BY_ONE = lambda r: [p["ns_per_element"] / max(p["in_cache_ns_per_element"], p["copy_ns_per_element"])  # noqa: E731
                        for e in r["analysis"]["softmax_passes"] for p in e["passes"]]
KEPT_DIFFER = lambda r: any(  # noqa: E731  "can": at some T, an op of MATERIAL_SHARE or more
    o["between_process_rsd"] > o["within_process_rsd"] for x in r["sweep"] for o in (x["ops"][k] for k in OPS)
    if o["time_share"] >= perf.MATERIAL_SHARE)
PROCESSES_DIFFER = lambda r: KEPT_DIFFER(r) or any(  # noqa: E731  or a rerun's left-out process, on its part's
    v["own_estimates_s"]["512"][o] / x["time_s"]["512"][o] - 1 > 2 * op(r, 512, o)["within_process_rsd"]  # ops,
    for x, v in R_LEFT_OUT() for o in PART_OPS[v["canary_part"]])  # beyond twice a process's own sample spread
RERUNS_LEFT_OUT = lambda: any(x["left_out"] for x in RERUNS)  # noqa: E731  some rerun left a process out
R_SHA = lambda m: len(RERUNS) == 12 and all(x["perf_py_sha256"] == m["perf_py_sha256"] for x in RERUNS)  # noqa

# Markers: a question left open, said in plain text; no claim, so no predicate: only present.
MARKERS = [
    (LABR, "Why they differ is not measured."),
    (LABR, "and why exp costs this much, is not measured."),
    (LABR, "the faults' share of the gap is not separated)."),
    (REFL, "how much of that the faults caused, I did not separate."),
    (REFL, "how much faster that would make them is a question I cannot answer yet."),
    (LABR, "The rest is not measured: the"),
    (LABR, "What makes processes differ is not measured."),
    (SOL, "The run does not say why."),
]

CLAIMS = [
    # question 1
    (LABR, "The projections are compute-bound at every T.",
     lambda r, m: ALL_T(r, ("qkv_proj", "out_proj"), "compute")),
    (LABR, "far left of it at every T", lambda r, m: ALL_T(r, ("softmax",), "memory")),
    (LABR, "in every one scores and av were memory-bound or near the ridge at T = 64", lambda r, m: all(
        x["bound"][k][0] in ("memory", "ridge") for x in QUIET() for k in ("scores", "av"))),
    (LABR, "At T = 128 the reruns found them", lambda r, m: all(  # scores' class is av's in each
        x["bound"]["scores"] == x["bound"]["av"] for x in QUIET())),
    (LABR, "on a 2-core AMD EPYC VM with AVX2 and no AVX-512", lambda r, m: EPYC_VM(r) and NO_AVX512(r)),
    (LABR, "scores and av would be memory-bound against DRAM at every T there",
     lambda r, m: LAP(r)["ridge_range"][0] > THR(r)["asymptotic_intensity"]),
    # question 2: the comparisons, each a test that could have come out the other way
    (LABR, "across T: at T = 512 their sum", lambda r, m: PASSES_ADD_UP(r)),
    (LABR, "Their own arrays", lambda r, m: r["hardware"]["virtualized"] and max(
        p["bytes"] for p in SP(r, 512)["passes"]) < LV(r, "L3")["capacity_bytes"]),
    (LABR, "six passes over the T×T array that together cost about what the same calls cost in cache, at every T; exp is the dearest",
     lambda r, m: EVERY_IN_CACHE(r) and EXP_DEAREST(r)),
    (LABR, "**Every T: the calls' own cost.**", lambda r, m: EVERY_IN_CACHE(r)),
    (LABR, "nearer it than to their copies' sum at every T, where every larger floor told apart is the call in cache",
     lambda r, m: EVERY_IN_CACHE(r)),
    (LABR, "**Together, the bytes never catch up**", lambda r, m: BYTES_BEHIND(r)),
    (LABR, "**exp is the dearest pass at every T**", lambda r, m: EXP_DEAREST(r)),
    (LABR, "numpy runs its AVX2", lambda r, m: EXP_SIMD(r) and NO_AVX512(r)),
    # question 3
    (LABR, "past the ridge, where its roof is π",
     lambda r, m: P27(r)["without_materialising_A"]["past_ridge"]),
    # expected observations
    (LABR, "it is the *largest* at every T", lambda r, m: SOFTMAX_LARGEST(r)),
    (LABR, "The first fails on the softmax", lambda r, m: not OBS(r, 0)["held"]
     and op(r, 64, "softmax")["time_s"] > PROJ(r)),
    (LABR, "Part is the threads", lambda r, m: 1 < ONE_THREAD(r, "scores") / ONE_THREAD(r, "av")
     < ALL_THREADS_GAP(r)),
    (LABR, "Part of the gap is the scaling pass",
     lambda r, m: 0 < SS(r, 512)["scale_s"] < op(r, 512, "scores")["time_s"] - op(r, 512, "av")["time_s"]),
    (LABR, "Memory-bound is a roofline class (intensity left of the ridge), not a cause: question 2 takes the softmax "
     "apart", lambda r, m: ALL_T(r, ["softmax"], "memory") and PASSES_ADD_UP(r)),
    (LABR, "for this run's processes only: reruns fell outside it", lambda r, m: any(
        not (op(r, 512, k)["time_s_interval"][0] <= x["time_s"]["512"][k] <= op(r, 512, k)["time_s_interval"][1])
        for x in RERUNS for k in OPS)),
    (LABR, "**No rerun stood apart.**", lambda r, m: SLOW_RERUNS() == []),
    (LABR, "form one group by perf.py's rule for processes", lambda r, m: SLOW_RERUNS() == []),
    (LABR, "But β is two threads copying, and numpy runs the softmax on one", lambda r, m: LV(r, "DRAM")[
        "GBps_from"] == "all_cpus" and C(r)["copy_threads"] == 2 and SOFTMAX_ONE_THREAD(r)),
    (LABR, "over 10 %, as in every quiet rerun", lambda r, m: SM(r)["ratio_to_1thread_dram_copy"] >= 0.1 and all(
        x["softmax_at_T_512"]["ratio_to_1thread_dram_copy"] >= 0.1 for x in QUIET())),
    (LABR, "from T = 128 on some passes ran faster on the forward's arrays than in cache, no floor for a single pass",
     lambda r, m: any(p["ns_per_element"] < p["in_cache_ns_per_element"] for e in r["analysis"]["softmax_passes"]
                      if e["T"] >= 128 for p in e["passes"])),
    (LABR, "larger floors, exp the dearest pass.", lambda r, m: DEAREST_EVERYWHERE(e for x in RERUNS for e in x["softmax_passes"])),
    (LABR, "the forward faults its fresh T×T temporaries in from T = 256 on", lambda r, m: FAULTS_FROM_256(r)),
    # how it was run
    (LABR, "no cpufreq, so no `performance` governor",
     lambda r, m: r["conditions"]["unknown"] == ["governor_or_turbo_changed"]
     and r["hardware"]["cpu_governor_at_run"] == "unavailable"),
    (LABR, "made just before this one", lambda r, m: R_SHA(m)),
    # the next run: each statement true of every rerun, or counted
    (LABR, "**In every rerun**: the softmax memory-bound at every T, the largest op, about half the forward or more",
     lambda r, m: R_ALL(lambda x: x["bound"]["softmax"] == ["memory"] * 4
                        and set(x["dominant_op_per_T"].values()) == {"softmax"}
                        and all(s["softmax"] > 0.45 for s in x["time_share"].values()))),


    # the other documents: each answer quoted, its reason in the lab README
    ("README.md", "It ran on a 2-core VM on an AMD EPYC host", lambda r, m: EPYC_VM(r)),
    ("README.md", "Against β, the softmax at every T", lambda r, m: ALL_T(r, ("softmax",), "memory")),
    ("README.md", "ran slow nearly all its life is left out and named", lambda r, m: RERUNS_LEFT_OUT()),
    ("README.md", "The twelve reruns' forwards at T = 512 form one group", lambda r, m: len(RERUNS) == 12
     and SLOW_RERUNS() == []),
    ("README.md", "The projections are compute-bound", lambda r, m: ALL_T(r, ("qkv_proj", "out_proj"), "compute")),
    ("README.md", "Where its time goes: naive numpy runs it as six passes over the T×T array that together cost about what the "
     "same calls cost in cache at every T; exp is the dearest", lambda r, m: PASSES_ADD_UP(r) and EVERY_IN_CACHE(r)
     and EXP_DEAREST(r)),
    ("README.md", "default heap (one process), which faults its temporaries back in from T = 256 on",
     lambda r, m: FAULTS_FROM_256(r)),
    ("README.md", "would move past the ridge", lambda r, m: P27(r)["without_materialising_A"]["past_ridge"]),
    ("README.md", "The softmax is the largest op at every T", lambda r, m: SOFTMAX_LARGEST(r)),
    ("README.md", "against the lab's expectation that the projections lead", lambda r, m: not OBS(r, 0)["held"]),
    ("README.md", "less any left out)", lambda r, m: all(
        len(x["processes"]) == WARM(r) - len(r["canary"]["left_out"]) for x in r["sweep"])),

    (REP, "since processes can differ more than one process's samples do", lambda r, m: PROCESSES_DIFFER(r)),
    (REP, "leaves out, named, a process whose canary ran slow nearly all its life", lambda r, m: RERUNS_LEFT_OUT()),
    (REP, "and the run reports where processes fall into groups", lambda r, m: bool(
        r["conditions"]["findings"]["process_groups"] or any(x["process_groups"] for x in RERUNS))),
    (REP, "The softmax is memory-bound against β at every T", lambda r, m: ALL_T(r, ("softmax",), "memory")),
    (REP, "on an AMD EPYC host", lambda r, m: EPYC_VM(r)),
    (REP, "its six numpy passes, timed apart by another estimator than the sweep's, come near its whole time; at every T "
     "they cost together about what the same calls cost in cache", lambda r, m: PASSES_ADD_UP(r) and EVERY_IN_CACHE(r)),
    (REP, "exp, on numpy's AVX2 kernel, is the dearest pass at every T", lambda r, m: NO_AVX512(r) and EXP_DISPATCHED(r)
     and EXP_DEAREST(r)),
    (REP, "the T² ops dominate at T = 512 and the softmax is never the smallest op; at T = 64 the projections do not lead",
     lambda r, m: OBS(r, 1)["held"] and OBS(r, 2)["held"] and not OBS(r, 0)["held"]),
    (REP, "over a thousand pages per forward from T = 256 on", lambda r, m: FAULTS_FROM_256(r) and FAULTS_OVER_1000(r)),
    (REP, "the same op runs at different speeds in different processes", lambda r, m: PROCESSES_DIFFER(r)),

    (SOL, "a process can run an op at its own speed for all its samples, further from the others than its own samples spread",
     lambda r, m: PROCESSES_DIFFER(r)),
    (SOL, "The reference ran on a 2-core AMD EPYC virtual machine", lambda r, m: EPYC_VM(r)),
    (SOL, "the passes' sum should come near the softmax's own time", lambda r, m: PASSES_ADD_UP(r)),
    (SOL, "above 8, so expect no threshold there", lambda r, m: LAP(r)["ridge_range"][0] > THR(r)["asymptotic_intensity"]),
    (SOL, "In the reference the passes together cost about what the same calls cost in cache at every T, exp the dearest",
     lambda r, m: EVERY_IN_CACHE(r) and EXP_DEAREST(r)),
    (SOL, "Fresh processes can run the same op at different speeds for all their samples", lambda r, m: PROCESSES_DIFFER(r)),
    (SOL, "The reference's processes can disagree more than its samples within one process do", lambda r, m: PROCESSES_DIFFER(r)),

    (SOL, "passes took longer than three small matmuls in the reference",
     lambda r, m: op(r, 64, "softmax")["time_s"] > op(r, 64, "qkv_proj")["time_s"]),
    (SOL, "differ by a few percent at most",
     lambda r, m: all(abs(x["instrumentation_overhead"]) <= 0.05 for x in r["sweep"])),
    (SOL, "across twelve consecutive runs of the reference", lambda r, m: len(RERUNS) == 12),
    (SOL, "naive numpy moves several times those bytes", lambda r, m: 3 <= LAB_BYTES(r) < 10),
    (REFL, "it turned out to be most of the forward at every length I tried",
     lambda r, m: all(x["ops"]["softmax"]["time_share"] > 0.5 for x in r["sweep"])),
    (REFL, "At every length they cost about what the same calls cost running in the cache, and copying their bytes was "
     "the smaller part", lambda r, m: EVERY_IN_CACHE(r) and BYTES_BEHIND(r)),
    (REFL, "passes, timed apart, came to most of the softmax's own time at every length", lambda r, m: all(
        0.5 < PASS_RATIO(e) for e in r["analysis"]["softmax_passes"])),
    (REFL, "the bytes I had expected to dominate never caught up with the work", lambda r, m: BYTES_BEHIND(r)),
    (REFL, "and still only part of the time", lambda r, m: PS(r, 64, "exp")["ns_per_element"]
     < 0.5 * SP(r, 64)["passes_ns_per_element"]),
    (REFL, "My passes were not waiting on their bytes", lambda r, m: BYTES_BEHIND(r)),
    (REFL, "each forward at the longer lengths faulted thousands of pages in", lambda r, m: FAULTS_OVER_1000(r)),
    (REFL, "it was the dearest pass at every length, though numpy ran its SIMD kernel for it",
     lambda r, m: EXP_DEAREST(r) and EXP_DISPATCHED(r)),
    (REFL, "Naive numpy runs the softmax as six passes", lambda r, m: PASSES_ADD_UP(r)),
    (REFL, "processes can disagree more than one process's own samples do", lambda r, m: PROCESSES_DIFFER(r)),
    (REFL, "the softmax, which runs on one thread, landed on either side of the lab's 10 % depending on which I trusted",
     lambda r, m: RERUNS_SPLIT_10() and SOFTMAX_ONE_THREAD(r)),
    (REFL, "scores' extra pass over the big matrix is part of it, not the rest",
     lambda r, m: 0 < SS(r, 512)["scale_s"] < op(r, 512, "scores")["time_s"] - op(r, 512, "av")["time_s"]),
    (REFL, "so the same work needs a small fraction of the memory traffic",
     lambda r, m: P27(r)["bytes_reduction"] >= 10),
    (REFL, "the longest forward took from half again to three times as long as it does", lambda r, m: (
        lambda v: 1.5 <= min(v) and max(v) <= 3)([row(r, 512, "sweep_default_heap")["forward_s"] / row(r, 512)["forward_s"]] + [
            x["default_heap"]["512"]["forward_s"] / x["forward_s"]["512"] for x in RERUNS])),
]
