"""Lab 03 of Phase 15: where the time of a naive numpy attention forward goes.

Times a naive causal multi-head attention op by op for T = 64, 128, 256, 512, places every op on a
roofline (this machine's, or Phase 1's beta and pi), and writes results.json, manifest.json,
perf.png and roofline.png here or into --out. On the lab's laptop: `OMP_NUM_THREADS=4 python
perf.py`; --quick is a smoke test, --replot redraws the pictures, --compare A B sets B beside A. The
code measured is naive on purpose (tuning it is Phase 27's); the measurement is not.

Part I, the lab (Blocks A to F in the lab's order), calls nothing of Part II, the harness, which
calls it and hands it records it reads. Where:
- one op's time and what a sample holds: Blocks A and B (attention_forward_timed, run_for,
  sample_forwards, take_samples; Block B's banner lists a sample's keys), and the watch, whose
  banner lists a worker's, with the canary's word after it (PROFILES, sampling_plan's rounds,
  measuring's set-up, watched, after_sample, machine_around, watched_samples; mark_samples);
- time_s and its interval: Block B (quantile_interval, summarize, pool_T), and which samples and
  processes feed it, "Quiet or disturbed"'s (1) (set_aside, slow_processes, DEFINITIONS, pool_row);
- the ops: Block A (OPS, T2_OPS, PROJECTIONS, their functions, both forwards, scores_calls,
  softmax_pass_calls), and Block D's tables to Block F (forward_arrays, op_cost, OP_ARRAYS,
  CALL_ARRAYS, FLASH_ARRAYS; E's and F's answers on scores and the softmax, analyse, make_manifest);
- quiet or disturbed: the watch, "Quiet or disturbed" and the machine, one stretch
  (watched_samples; judge_processes, the checks, judge_run, run_warnings; machine_facts,
  thread_record), and the run (run_lab, which calls the last two);
- beta and pi: Block B's run_for and quantile_estimate; from "Quiet or disturbed" on: whose repeats
  count (judge_processes), the caches (machine_facts), the ceilings (read_ceilings, copy_levels,
  ceiling_plan, time_ceilings: copy_rates, matmul_rates; combine_ceilings: rate_estimate,
  copy_estimate, with_ridge), who and when (make_plan, worker_job); threads: the watch's measuring.
"""

import argparse
import ast
import bisect
import collections
import contextlib
import ctypes
import functools
import gc
import hashlib
import io
import itertools
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

import numpy as np
import psutil
from threadpoolctl import threadpool_info, threadpool_limits

try:
    import resource  # Unix: page faults and context switches from getrusage
except ImportError:  # Windows: psutil counts the faults
    resource = None


HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PHASE1_MANIFEST = "experiments/01-roofline/manifest.json"  # the lab's depends_on, from REPO

# The lab's sweep, and the T that its keys and Phase 27's preview name.
T_SWEEP = (64, 128, 256, 512)
FOCUS_T = 512  # the lab's T of focus: its keys' (*_at_T_512), Phase 27's preview's, float64 exp's
KEYED = f"_at_T_{FOCUS_T}"  # those keys' suffix, as the lab spells it


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2, nothing written."""


# ==============================================================================================
# PART I — THE LAB, Blocks A to F in the lab's order, statistics included. What the harness decides
# (which samples feed time_s) comes in as an argument; Blocks D and E read the ceilings and records
# it makes (their banners say which), Block C's footer results.json; it calls no Part II code.
# ==============================================================================================

# ----------------------------------------------------------------------------------------------
# Block A: the model, the same forward with a timer around each op, two ops taken apart.
# Heads are a leading axis (h, T, d_k) and numpy's stacked matmul runs them: naive (no
# fusing, no out= buffers, A fully materialised), and it keeps the timers to one per op.
# Notation as in the lab: d = d_model, h = n_heads, d_k = d / h, fp32 = 4 bytes.

MHA = collections.namedtuple("MHA", "W_Q W_K W_V W_O n_heads")
# The ops. A sixth op touches this Block (these tuples; if neither T² nor a projection, a class and
# expected_observations; its colour, function, both forwards; from scores or softmax: its calls
# apart, E's and F's answers), D's tables (forward_arrays, op_cost, OP_ARRAYS, CALL_ARRAYS; fused:
# FLASH_ARRAYS); else only hand-worked tests (test_model, test_costs, synthetic), the docs, a run.
OPS = ("qkv_proj", "scores", "softmax", "av", "out_proj")  # the timed ops, in the lab's order
T2_OPS = ("scores", "softmax", "av")  # the T² ops (the lab's 2 to 4), which Flash Attention fuses
PROJECTIONS = ("qkv_proj", "out_proj")  # the O(T d²) ops; each of the five is one or the other
THREADS_OP = "av"  # its threads weighed beside the verdict: a T² matmul, BLAS's alone (no scaling)
COLORS = dict(zip(OPS, ("#4C72B0", "#DD8452", "#C44E52", "#55A868", "#8172B3"), strict=True))


def init_mha(d_model=64, n_heads=4, seed=0):
    """Four (d_model, d_model) float32 weights, deterministic from the seed, scaled 1/sqrt(d)."""
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
    rng = np.random.default_rng(seed)
    W = [(rng.standard_normal((d_model, d_model)) / math.sqrt(d_model)).astype(np.float32)
         for _ in range(4)]
    return MHA(*W, n_heads=n_heads)


def causal_mask(T):
    """(T, T) float32: 0 where position i may see j (j <= i), -inf above the diagonal."""
    return np.triu(np.full((T, T), -np.inf, dtype=np.float32), k=1)


def make_input(T, mha, seed):
    """x (T, d_model) float32, the same for a given (seed, T) in every process of the run."""
    return np.random.default_rng([seed, T]).standard_normal((T, len(mha.W_Q))).astype(np.float32)


def split_heads(X, h):
    """(T, d) -> (h, T, d_k). A view: making it moves no bytes (the matmul's use is its time)."""
    T, d = X.shape
    return X.reshape(T, h, d // h).transpose(1, 0, 2)


def qkv_proj(x, mha):
    # op 1: Q = x W_Q, K = x W_K, V = x W_V.  Each 2 T d^2 FLOPs over 4Td + 4d^2 bytes: x, W read.
    return x @ mha.W_Q, x @ mha.W_K, x @ mha.W_V


def scores(Q, K, h):
    # op 2: S = Q K^T / sqrt(d_k), per head.  2 T^2 d_k FLOPs over 8 T d_k + 4 T^2 bytes per head.
    # K^T is a free view; the matmul writes a fresh (h, T, T) buffer, the scaling one more pass into
    # another (numpy may elide the two into one, only from 256 KiB: S at T = 128 for 4 heads).
    # math.sqrt gives a Python float, weak to numpy: fp32 S (np.sqrt(d_k), a float64 scalar, would
    # under NumPy 2 promote all of S to float64).
    d_k = Q.shape[1] // h
    return split_heads(Q, h) @ split_heads(K, h).transpose(0, 2, 1) / math.sqrt(d_k)


def softmax(S, mask):
    # op 3: A = softmax(S + mask), row-wise.  ~5 T^2 FLOPs over 8 T^2 bytes per head (the lab's
    # count: S read once, A written once). Naive numpy makes six passes, each a new array.
    Z = S + mask
    m = Z.max(axis=-1, keepdims=True)
    E = np.exp(Z - m)
    return E / E.sum(axis=-1, keepdims=True)


def av(A, V, h):
    # op 4: out_h = A V_h.  Same form as scores: 2 T^2 d_k FLOPs over 8 T d_k + 4 T^2 bytes a head.
    return A @ split_heads(V, h)


def out_proj(O, mha):
    # op 5: out = concat(out_h) W_O, the concat a copy.  2 T d^2 FLOPs over 4Td + 4d^2: C, W read.
    h, T, d_k = O.shape
    return O.transpose(1, 0, 2).reshape(T, h * d_k) @ mha.W_O


def attention_forward(x, mha, mask=None, intermediates=False):
    """Causal multi-head attention of x (T, d_model) float32 -> (T, d_model) float32;
    intermediates: {name: every array it makes}, by the lab's names."""
    mask = causal_mask(len(x)) if mask is None else mask
    Q, K, V = qkv_proj(x, mha)
    S = scores(Q, K, mha.n_heads)
    A = softmax(S, mask)
    O = av(A, V, mha.n_heads)
    out = out_proj(O, mha)
    return dict(Q=Q, K=K, V=V, S=S, A=A, O=O, out=out) if intermediates else out


def attention_forward_timed(x, mha, mask=None):
    """attention_forward with time.perf_counter_ns() around the ops (numpy is eager: a result exists
    when its call returns): seconds per op, and total (the lab's key; nothing reads it)."""
    mask = causal_mask(len(x)) if mask is None else mask
    now = time.perf_counter_ns
    t0 = now()
    Q, K, V = qkv_proj(x, mha)
    t1 = now()
    S = scores(Q, K, mha.n_heads)
    t2 = now()
    A = softmax(S, mask)
    t3 = now()
    O = av(A, V, mha.n_heads)
    t4 = now()
    out_proj(O, mha)  # its result unused here: only its time
    t5 = now()
    stamps = (t0, t1, t2, t3, t4, t5)  # op k of OPS runs from stamps[k] to stamps[k + 1]
    times = {k: (b - a) * 1e-9 for k, (a, b) in zip(OPS, zip(stamps, stamps[1:]), strict=True)}
    times["total"] = (t5 - t0) * 1e-9
    return times


def scores_calls(Q, K, h):
    """scores whole and its matmul alone, keyed (op, call), to time apart (never time_s's): their
    difference taken as the scaling pass (assumed: the matmul costs there what it costs alone)."""
    return {("scores", "whole"): functools.partial(scores, Q, K, h),
            ("scores", "matmul"): lambda: split_heads(Q, h) @ split_heads(K, h).transpose(0, 2, 1)}


def softmax_pass_calls(S, mask):
    """softmax(S, mask) as naive numpy runs it, taken apart to time (never time_s's): {pass: its
    call, on the data the pass before made}, and those data by name (Z, m, D, E, s)."""
    Z = S + mask
    m = Z.max(axis=-1, keepdims=True)
    D = Z - m
    E = np.exp(D)
    s = E.sum(axis=-1, keepdims=True)
    return {"mask_add": lambda: S + mask, "max": lambda: Z.max(axis=-1, keepdims=True),
            "subtract": lambda: Z - m, "exp": lambda: np.exp(D),
            "sum": lambda: E.sum(axis=-1, keepdims=True), "divide": lambda: E / s}, dict(
        Z=Z, m=m, D=D, E=E, s=s)


# ----------------------------------------------------------------------------------------------
# Block B: what a sample is, one process's samples, and the statistic: each T's row from the
# processes' own estimates of the samples that feed it (which feed: the caller's word). A batch:
# calls run back to back by run_for until min_time has passed (50 ms in a full run, as the lab asks;
# calls_at's, CALL_MIN_TIME); a sample and a ceiling's repeat are each one. A sample, one
# measurement of the sweep, is a batch of timed forwards: per op of OPS, one forward's seconds (its
# forwards' sum / n), and n. The harness adds, in the worker: canary_around, the canary's readings
# around its batch (watched: the one before it is the batch before's after, or make_canary's); on
# one BLAS thread `follows`, the sample it follows (after_sample); in the parent: canary_ratio, the
# canary around it over its process's reference (mark_samples; set_aside, slow_processes and
# pool_row's fallback decide what feeds time_s). Round i: every T's i-th sample (take_samples').


def run_for(fn, min_time, now=time.perf_counter_ns):
    """Calls fn back to back until min_time has passed: (calls, seconds). Unlike timeit's autorange,
    one batch that finds its own count: no calibration batches, none shorter than min_time."""
    min_ns, n, t0 = min_time * 1e9, 0, now()
    while True:
        fn()
        n += 1
        if (elapsed := now() - t0) >= min_ns:
            return n, elapsed * 1e-9


def sample_forwards(x, mha, mask, min_time, run_batch=None):
    """One sample (as the banner above says). `run_batch(fn, min_time)`, the harness's, runs the
    batch in run_for's place and returns (n, {what it adds to the sample})."""
    forwards = []
    call = lambda: forwards.append(attention_forward_timed(x, mha, mask))  # noqa: E731
    n, added = run_batch(call, min_time) if run_batch else (run_for(call, min_time)[0], {})
    return {**{k: math.fsum(t[k] for t in forwards) / n for k in OPS}, "n": n, **added}


def take_samples(task, mha, run_batch=None, around=contextlib.nullcontext, after_each=None):
    """One process's samples: `rounds` of every T, each T after one untimed forward; interleaved,
    each round in a rotating order of T (to spread a slow spell). Hooks: `run_batch`,
    `around(record)`, `after_each(i, (x, mha, mask), record)`. {str(T): {"samples"}}."""
    Ts, min_time = task["T_sweep"], task["min_time"]
    inputs = {T: (make_input(T, mha, task["seed"]), causal_mask(T)) for T in Ts}
    out = {T: {"samples": []} for T in Ts}
    rounds = range(task["rounds"])
    schedule = [(i, T) for i in rounds for T in Ts[i % len(Ts):] + Ts[:i % len(Ts)]] \
        if task["interleave"] else [(i, T) for T in Ts for i in rounds]
    for i, T in schedule:  # i: the sample's round, its index among its T's
        (x, mask), rec = inputs[T], out[T]
        if not rec["samples"]:
            attention_forward(x, mha, mask)  # untimed (meant to take first-touch faults, wake BLAS)
        with around(rec):
            rec["samples"].append(sample_forwards(x, mha, mask, min_time, run_batch))
        if after_each:
            after_each(i, (x, mha, mask), rec)
    return {str(T): rec for T, rec in out.items()}


PROCESS_QUANTILE = 0.25      # a process's estimate of an op: this quantile of its times (by hand)
CONFIDENCE = 0.95            # quantile_interval's least coverage, values allowing


def quantile_interval(values, q):
    """(low, high, coverage): a distribution-free interval of the q-quantile, X(l) <= X(u), the
    fewest ranks apart with P(l <= B < u) >= CONFIDENCE, B ~ Binomial(n, q); too few: the range."""
    x, n = np.sort(np.asarray(values, dtype=np.float64)), len(values)
    p = [math.comb(n, k) * q**k * (1 - q)**(n - k) for k in range(n + 1)]
    below = list(itertools.accumulate(p, initial=0.0))  # P(B < k), rising with k
    firsts = ((bisect.bisect_left(below, below[l] + CONFIDENCE, l + 1), l) for l in range(1, n))
    _, _, l, u = min([(u - l, below[l] - below[u], l, u) for u, l in firsts if u <= n]
                     or [(0, 0, 1, n)])
    return float(x[l - 1]), float(x[u - 1]), math.fsum(p[l:u])


def quantile_estimate(values, key, q=0.5):
    """The q-quantile of values (the median unless said) as `key`, its distribution-free interval
    and that interval's coverage beside: how a run writes each quantile it gives an interval."""
    lo, hi, cover = quantile_interval(values, q)
    return {key: float(np.percentile(values, 100 * q)), f"{key}_interval": [lo, hi],
            f"{key}_interval_coverage": cover}


def summarize(by_process):
    """One op at one T from the samples that feed it, a list per process (the unit of replication,
    assumed): time_s (time_s_said's rule), its interval; both spreads, mean, SD (of one: None)."""
    # A process's estimate: the PROCESS_QUANTILE of its times (assumed: noise only adds).
    each = [float(np.percentile(times, 100 * PROCESS_QUANTILE)) for times in by_process]
    pooled = np.concatenate([np.asarray(times, dtype=np.float64) for times in by_process])
    rsd = lambda a: float(np.std(a, ddof=1) / np.mean(a)) if len(a) > 1 else None  # noqa: E731
    within = [v for v in map(rsd, by_process) if v is not None]  # processes of two samples or more
    return {**quantile_estimate(each, "time_s"), "mean_s": float(pooled.mean()),
            "std_s": float(pooled.std(ddof=1)) if pooled.size > 1 else None,
            "process_estimates": each, "between_process_rsd": rsd(each),
            "within_process_rsd": float(np.median(within)) if within else None}


def pool_T(T, feeding):
    """One T's row from the samples that feed its time_s, {process: [sample, ...]} (which feed:
    the harness's word): per op, summarize's statistics; forward_s, the ops' time_s summed."""
    ops = {k: summarize([[s[k] for s in samples] for samples in feeding.values()]) for k in OPS}
    return {"T": T, "ops": ops, "forward_s": sum(ops[op]["time_s"] for op in OPS),
            "processes": list(feeding)}


def time_s_said(over, q=PROCESS_QUANTILE):
    """time_s's rule in words, as results.json's definitions and the pictures' footers say it."""
    return f"the median over {over} of each one's {100 * q:.0f}th percentile of its kept samples"


def entry_at(entries, T):
    """The entry at T of a per-T list (the sweep's rows, the threading windows), else None."""
    return next((e for e in entries if e["T"] == T), None)


# ----------------------------------------------------------------------------------------------
# Block C: perf.png, drawn from results.json alone (--replot), judging nothing.

def new_figure(*args, **kw):
    """A matplotlib figure on the headless Agg backend (imported here: the module stays light)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt.subplots(*args, **kw)


def png_bytes(fig, stamp=None):  # stamp: {key: text}, the PNG's text chunks
    import matplotlib.pyplot as plt
    fig.savefig(buf := io.BytesIO(), format="png", dpi=150, metadata=stamp)
    plt.close(fig)
    return buf.getvalue()


def unclutter(fig, labels):
    """Move each label to the first place (rising, trying sideways at each height) where it covers
    no other text and stays in the figure, an inset's label in its inset (none: the last tried)."""
    from matplotlib.text import Text
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [lg for lg in [ax.get_legend() for ax in fig.axes] + fig.legends if lg]
    in_legend = {t for lg in legends for t in lg.findobj(Text)}
    clear = lambda a, b: min(a.x1, b.x1) - max(a.x0, b.x0) <= 0 or \
        min(a.y1, b.y1) - max(a.y0, b.y0) <= 0  # noqa: E731
    obstacles = [lg.get_window_extent(renderer) for lg in legends] + [
        t.get_window_extent(renderer) for t in fig.findobj(Text) if t not in labels and
        t not in in_legend and t.get_visible() and t.get_text().strip()]
    insets = [inset for ax in fig.axes for inset in ax.child_axes]
    for label in labels:  # each placed label becomes an obstacle for the next
        x0, y0 = label.xyann
        box = label.axes.get_window_extent(renderer) if label.axes in insets else fig.bbox
        for dy, dx in ((y, x) for y in range(0, 200, 4) for x in (0, 12, -12, 24, -24, 48, -48)):
            label.xyann = (x0 + dx, y0 + dy)
            b = label.get_window_extent(renderer)
            if b.x0 >= box.x0 and b.y0 >= box.y0 and b.x1 <= box.x1 and b.y1 <= box.y1 and \
                    all(clear(b, other) for other in obstacles):
                break
        obstacles.append(label.get_window_extent(renderer))


def processes_feeding(res):
    """How many processes fed each T's time_s: "10", or fewest to most ("8-10") when T differ."""
    counts = sorted({len(r["processes"]) for r in res["sweep"]})
    return "-".join(map(str, dict.fromkeys([counts[0], counts[-1]])))


def all_feed(row):
    """A row's note where the canary kept none of a T's samples and all of them feed its time_s."""
    return " (none kept: all feed)" if row["figures_from"] != "kept samples" else ""


def unchecked(cond):
    """The checks a run could not make, beside its verdict: quiet means no other check failed."""
    return f" (not checked here: {', '.join(cond['unknown'])})" if cond["unknown"] else ""


def footer(fig, res, marks, protocol):
    """Under a picture: the machine, its marks' protocol, the verdict (if disturbed, what to do)
    in short lines. Returns the share of the figure it takes."""
    hw, cfg, cond, est = res["hardware"], res["config"], res["conditions"], res["estimators"]
    todo = "; ".join(dict.fromkeys(f["do"] for f in cond["failed"]))
    lines = [f"{hw['cpu_model']} ({hw['physical_cores']} cores{', VM' if hw['virtualized'] else ''}"
             f") | BLAS threads {cfg['blas_threads']} | heap: {res['heap']['mode']} | {res['date']}"
             + (" | --quick: smoke test, not a measurement" if cfg["quick"] else ""),
             f"{marks}: each op's time_s, " + time_s_said(
                 f"{processes_feeding(res)} of this run's {cfg['workers']} workers "
                 "(its interval covers them only)", est["process_quantile"])
             + f" ({cfg['samples_per_T']} per T in all, each >= "
             f"{cfg['min_time_s'] * 1e3:g} ms of forwards); set aside, the canary's "
             f"{res['canary']['sample_kernel']} kernel over {res['canary']['sample_slow_ratio']}x "
             "its process's reference: "
             + ", ".join(f"{r['samples_set_aside']} at T={r['T']}" + (
                     f" (x{r['set_aside_median_ratio']:.2f})" if r["samples_set_aside"] else "")
                 + all_feed(r) for r in res["sweep"]) + "".join(
                 f"; {k} left out (canary {v['canary_kernel']} x{v['ratio']:.1f})"
                 for k, v in res["canary"]["left_out"].items()) + f"; {protocol}",
             f"run conditions: {cond['verdict']}{unchecked(cond)}" + "".join(
                 f"; {f['reason']}" for f in cond["failed"])]
    lines += [f"what to do: {todo}"] if todo else []
    text = [part for ln in lines for part in textwrap.wrap(ln, int(fig.get_figwidth() * 17),
                                                     break_on_hyphens=False)]
    fig.text(0.5, 0.005, "\n".join(text), ha="center", va="bottom", fontsize=7.5, linespacing=1.3,
             color="firebrick" if cond["verdict"] == "disturbed" else "0.35")
    return (len(text) * 7.5 * 1.3 + 6) / 72 / fig.get_figheight()


def stack_bars(ax, rows, default_heap, dominant, labelled, fontsize=8.5, headroom=1.22):
    """One stacked bar per row (the ops' time_s, ms), the default heap's hatched bar beside; rows
    whose T is `labelled` get their time and dominant op; the top: `headroom` x the tallest, a
    hatched bar counted as at most 2.5 x the stacked; one past top / 1.12 is cut ("off scale")."""
    x, bottom = np.arange(len(rows)), np.zeros(len(rows))
    for op in OPS:
        ms = np.array([r["ops"][op]["time_s"] * 1e3 for r in rows])
        ax.bar(x, ms, 0.5, bottom=bottom, color=COLORS[op])
        bottom += ms
    default_rows = [default_heap.get(r["T"]) for r in rows]
    heights = np.array([row["forward_s"] * 1e3 if row else np.nan for row in default_rows])
    top = headroom * max(bottom.max(), min(np.nanmax(heights, initial=0), 2.5 * bottom.max()))
    cut = top / 1.12  # a hatched bar stops here, under the top: room for its label above
    ax.bar(x + 0.36, np.fmin(heights, cut), 0.22, fill=False, hatch="///", edgecolor="0.45", lw=0.8)
    labels, above = [], dict(xytext=(0, 3), textcoords="offset points", ha="center", va="bottom")
    for i, r in ((i, r) for i, r in enumerate(rows) if r["T"] in labelled):
        dom = dominant[str(r["T"])]
        text = f"{bottom[i]:.3f} ms\n{dom} {100 * r['ops'][dom]['time_share']:.0f}%"
        labels.append(ax.annotate(text, (x[i], bottom[i]), fontsize=fontsize, **above))
        if default_rows[i]:
            faults = default_rows[i]["page_faults_per_forward"]
            labels.append(ax.annotate(
                f"{heights[i]:.3f} ms" + ("" if faults is None else
                                          f"\n{faults:.{2 * (faults < 1)}f} faults")
                + (" (off scale)" if heights[i] > cut else ""),
                (x[i] + 0.36, min(heights[i], cut)), fontsize=fontsize - 1.5, color="0.3", **above))
    ax.set_xticks(x, [f"T={r['T']}" for r in rows])
    ax.set(xlim=(-0.5, len(rows) - 0.4), ylim=(0, top))
    return labels


def plot_perf(res):
    """Block C: each T's forward as stacked bars (small ones again in an inset), the default
    heap's beside; each op's share of the time beside its share of the FLOPs."""
    from matplotlib.patches import Patch
    rows, cfg, dominant = res["sweep"], res["config"], res["analysis"]["dominant_op_per_T"]
    default_heap = {r["T"]: r for r in res["sweep_default_heap"]}
    fig, (ax, ax2) = new_figure(1, 2, figsize=(13, 6.2), gridspec_kw={"width_ratios": [1.2, 1]})
    small = [r for r in rows if r["forward_s"] < 0.15 * max(q["forward_s"] for q in rows)]
    small = small if len(small) < len(rows) else []  # read in an inset, not on the flat bars
    labels = stack_bars(ax, rows, default_heap, dominant, {r["T"] for r in rows if r not in small})
    if small:  # it ends before the first bar whose label (0.3 of the scale up) reaches its floor
        tall = [i for i, r in enumerate(rows) if 1e3 * max(r["forward_s"], default_heap.get(
            r["T"], r)["forward_s"]) > 0.3 * ax.get_ylim()[1]] + [len(rows)]  # xlim: -0.5, n-0.4
        width = min(0.16 + 0.2 * len(small), (tall[0] + 0.1) / (len(rows) + 0.1) - 0.13)
        inset = ax.inset_axes([0.13, 0.44, width, 0.43])
        labels += stack_bars(inset, small, default_heap, dominant, {r["T"] for r in small}, 7.5,
                             1.6)  # a small axes: room for a label to rise above another
        inset.tick_params(labelsize=7.5)
        inset.set_title(f"T = {', '.join(str(r['T']) for r in small)} at their own scale (ms)",
                        fontsize=8)
    ax.set_ylabel("ms per forward (the ops' time_s summed)")
    ax.set_title("Time per forward (bars); with the default heap (hatched)", fontsize=11)
    for dx, key, alpha in ((-0.19, "time_share", 1.0), (0.19, "flop_share", 0.5)):
        bottom = np.zeros(len(rows))
        for op in OPS:
            s = np.array([100 * r["ops"][op][key] for r in rows])
            for bar, v in zip(ax2.bar(np.arange(len(rows)) + dx, s, 0.36, bottom=bottom,
                                      color=COLORS[op], alpha=alpha, edgecolor="white"), s):
                if v >= 3:
                    ax2.annotate(f"{v:.0f}", bar.get_center(), ha="center", va="center",
                                 fontsize=7 if v >= 7 else 6, color="white" if alpha == 1 else "0")
            bottom += s
    ax2.set_xticks(range(len(rows)), [f"T={r['T']}\ntime | FLOPs" for r in rows], fontsize=8.5)
    ax2.set(ylabel="share (%)", ylim=(0, 100))
    ax2.set_title("Share per op: of the time (solid), of the FLOPs (faded)", fontsize=11)
    fig.suptitle(f"Naive numpy multi-head attention, d_model={cfg['d_model']}, "
                 f"{cfg['n_heads']} heads, d_k={cfg['d_head']}", fontsize=12)
    handles = [Patch(color=COLORS[op], label=op) for op in OPS] + [Patch(fill=False, hatch="///",
        edgecolor="0.45", label="the same forward, the default heap (page faults per forward)")]
    fig.legend(handles=handles, loc="upper center", ncol=len(OPS) + 1, fontsize=8.5, frameon=False,
               bbox_to_anchor=(0.5, 0.945))
    dflt_row, q = res["sweep_default_heap"][0], res["estimators"]["process_quantile"]
    aside = ", ".join(f"{r['samples_set_aside']}{all_feed(r)}" for r in res["sweep_default_heap"])
    low = footer(fig, res, "bars", f"hatched: the ops' {100 * q:.0f}th percentiles, summed, of the "
                 f"kept of {dflt_row['sample_count']} samples per T, each T in turn, from "
                 f"{dflt_row['processes_sampled']} default-heap process (set aside: {aside})")
    fig.tight_layout(rect=(0, low, 1, 0.9))
    unclutter(fig, labels)
    return fig


# ----------------------------------------------------------------------------------------------
# Block D: the roofline drawn from results.json first; then what each array weighs and each op
# costs (the lab's formulas), each op placed on the roofline the harness gives (combine_ceilings').

RING_FIRST, RING_STEP, RING_NEAR = 5.0, 1.5, 0.03  # first ring (pt), step per T, a spot (decades)


def ring_sizes(points):
    """Ring diameters (points), RING_STEP times larger per T; rings on one spot nest, never hide."""
    sizes = []
    for j, (x, y, i) in enumerate(points):
        diameter = RING_FIRST * RING_STEP**i
        near_sizes = [sizes[k] for k, (a, b, _) in enumerate(points[:j]) if
                      abs(math.log10(a / x)) < RING_NEAR and abs(math.log10(b / y)) < RING_NEAR]
        while clash := [s for s in near_sizes
                        if diameter / RING_STEP * 1.001 < s < diameter * RING_STEP * 0.999]:
            diameter = RING_STEP * max(clash)
        sizes.append(diameter)
    return sizes


def draw_roofs(ax, res, xs):
    """DRAM's roof (beta) and pi in black with beta's interval as a band, each level with a roof
    of its own fainter, the ridge and its range; the legend handles."""
    c = res["ceilings"]
    beta, pi, (lo, hi) = c["beta_peak_GBps"], c["pi_peak_GFLOPS"], c["beta_peak_interval"]
    dram = c["levels"]["DRAM"]
    notes = [f"{n} copy no faster" for n, lv in c["levels"].items() if lv.get("same_roof_as_DRAM")]
    notes += [f"no {n} roof: its {lv['bytes'] >> 10} KiB copy ran at {lv['GBps']:.0f} GB/s,\n"
              "   slower than a larger level's"
              for n, lv in c["levels"].items() if lv.get("slower_than_larger")]
    if c["source"] == "measured" and dram["past_llc"] is False:
        notes.append("DRAM copy not past the largest cache: " + ("--quick" if res["config"]["quick"]
                                                     else f"capped at {dram['bytes'] >> 20} MiB"))
    src = {"measured": f"{dram['bytes'] >> 20} MiB working set", "phase1": "Phase 1",
           "cli": "--roofline"}[c["source"]]
    mm = "" if c["source"] != "measured" else f" ({c['matmul']['n']}x{c['matmul']['n']} matmul: +)"
    handles = ax.plot(xs, np.minimum(pi, beta * xs), color="black", lw=2,
                      label=f"roof: beta = {beta:.1f} GB/s ({src}),\n  pi = {pi:.1f} GFLOPS{mm}"
                      + "".join(f"\n  ({n})" for n in notes))
    if c["source"] == "measured":  # this run's repeats: beta's band (Phase 1's: a point, none)
        handles.append(ax.fill_between(xs, np.minimum(pi, lo * xs), np.minimum(pi, hi * xs),
                                       color="0.85", lw=0, zorder=0, label=(
            f"beta's interval, this run's repeats ({c['beta_peak_interval_coverage']:.0%} "
            f"coverage), {lo:.1f}-{hi:.1f} GB/s" + (
                f"\n  (no plateau: a {dram['half_bytes'] >> 20} MiB copy ran at "
                f"{dram['GBps_half']:.1f})" if not dram["plateau"] else ""))))
    styles = iter([(0, (1, 1)), "--", "-.", (0, (5, 1, 1, 1))])
    for name, lv in c["levels"].items():
        if name != "DRAM" and not lv["same_roof_as_DRAM"] and not lv["slower_than_larger"]:
            size = f"{lv['bytes'] >> 20} MiB" if lv["bytes"] >> 20 else f"{lv['bytes'] >> 10} KiB"
            who = "all CPUs" if lv["GBps_from"] == "all_cpus" else "one thread"
            handles += ax.plot(xs, np.minimum(pi, lv["GBps"] * xs), color="0.55", lw=1, ls=next(
                styles), label=f"{name} roof, {who}: {lv['GBps']:.0f} GB/s ({size} working set)")
    r_lo, r_hi = c["ridge_range"]
    handles.append(ax.axvspan(r_lo, r_hi, color="0.92", zorder=0, label=(
        f"ridge {c['ridge']:.2f} FLOP/B; its range from beta's and pi's intervals,\n  "
        f"{r_lo:.2f}-{r_hi:.2f}: ops inside it are 'near the ridge'" if r_lo < r_hi else
        f"ridge {c['ridge']:.2f} FLOP/B ({src}'s beta and pi: no interval)")))
    ax.axvline(c["ridge"], color="0.7", lw=0.8, zorder=0)
    return handles


def draw_points(ax, res, pts):
    """Each op at each T as a hollow ring (colour: op, size: T) joined along T, pi's matmul a +
    where timed; the legend entries, the ring key's handler. pts: (intensity, GFLOPS, T's index),
    by op."""
    from matplotlib.legend_handler import HandlerTuple
    entries = []
    for op, (x, y, size) in zip(OPS, np.split(np.array([(x, y, d) for (x, y, _), d in zip(
            pts, ring_sizes(pts))]).T, len(OPS), axis=1)):
        ax.plot(x, y, color=COLORS[op], lw=0.8, alpha=0.45, zorder=3)
        entries.append((ax.scatter(x, y, s=size**2, facecolors="none", edgecolors=COLORS[op],
                                   linewidths=1.6, zorder=4), op))
    rings = tuple(ax.scatter([], [], s=(RING_FIRST * RING_STEP**i)**2, facecolors="none",
                             edgecolors="0.3") for i in range(len(res["sweep"])))
    if res["ceilings"]["source"] == "measured":  # pi timed by this run (Phase 1's: no matmul)
        ax.scatter(res["ceilings"]["matmul"]["intensity"], res["ceilings"]["pi_peak_GFLOPS"],
                   marker="P", s=90, color="0.3", zorder=5)
    ring_key = (rings, "ring size: T = " + ", ".join(str(r["T"]) for r in res["sweep"]))
    return [ring_key] + entries, HandlerTuple(ndivide=None, pad=0.3)


def plot_roofline(res):
    """Block D: each op at each T on the run's roofline, on axes that span the data; Phase 27's
    preview: the T² ops as run, and the roof where the fused op's bytes would put it."""
    c, pv = res["ceilings"], res["analysis"]["phase_27_preview"]
    ran, flash = pv["naive"], pv["without_materialising_A"]
    op_pts = [(r["ops"][op]["intensity"], r["ops"][op]["GFLOPS"], i)
              for op in OPS for i, r in enumerate(res["sweep"])]
    pts = [p[:2] for p in op_pts] + [(c["ridge"], c["pi_peak_GFLOPS"]),  # the ridge's: pi in range
                                     (ran["intensity"], ran["GFLOPS"]),
                                     (flash["intensity"], flash["roof_GFLOPS"])]
    pts += [(c["matmul"]["intensity"], c["pi_peak_GFLOPS"])] if c["source"] == "measured" else []
    (x_lo, y_lo), (x_hi, y_hi) = np.min(pts, 0) / 2, np.max(pts, 0) * 2  # the data, and margin
    fig, ax = new_figure(figsize=(10, 8.6))
    xs = np.logspace(math.log10(x_lo), math.log10(x_hi), 400)
    roofs = [(handle, handle.get_label()) for handle in draw_roofs(ax, res, xs)]
    points, handler = draw_points(ax, res, op_pts)  # the legend's left column: points, then roofs
    entries = points + [
        (ax.scatter(ran["intensity"], ran["GFLOPS"], marker="*", s=170, color="black", zorder=5),
         f"{' + '.join(T2_OPS)} at T={pv['T']}, as run (the lab's bytes): I = "
         f"{ran['intensity']:.2f}")] + roofs + [
        (ax.scatter(flash["intensity"], flash["roof_GFLOPS"], marker="*", s=170, facecolor="none",
                    edgecolor="black", zorder=5),
         f"the same, S and A never written (Flash Attention): {pv['bytes_reduction']:.0f}x fewer\n"
         f"  bytes, I = {flash['intensity']:.0f}; the roof there, not a measured speed")]
    ax.annotate("", (flash["intensity"], flash["roof_GFLOPS"]), (ran["intensity"], ran["GFLOPS"]),
                arrowprops={"arrowstyle": "-|>", "ls": "--", "color": "k", "lw": 1, "shrinkB": 9})
    ax.legend(*zip(*entries), handler_map={tuple: handler}, loc="upper center", fontsize=8.5,
              bbox_to_anchor=(0.5, -0.125), frameon=False, ncol=2, labelspacing=0.7,
              handlelength=5.5, columnspacing=1.5)
    ax.tick_params(axis="x", which="both", pad=6)  # off the y axis's lowest label
    ax.set(xscale="log", yscale="log", xlim=(x_lo, x_hi), ylim=(y_lo, y_hi),
           xlabel="arithmetic intensity (FLOP/byte, the lab's byte counts)",
           ylabel="GFLOPS (the lab's FLOPs / time_s)")
    ax.set_title("Attention ops on the run's roofline (colour: op; ring size: T)", fontsize=11)
    ax.grid(True, which="major", color="0.92")
    reps = [lv["repeats"] for k, lv in c["levels"].items() if k != "DRAM"]
    caches = f"; a cache level's of {min(reps)} repeats" if reps else ""  # none known: DRAM alone
    low = footer(fig, res, "rings", "roofs: " + (
        f"beta and pi the {100 * res['estimators']['ceiling_quantile']:.0f}th percentile of "
        f"{c['beta_repeats']} and {c['pi_repeats']} repeats pooled as independent, each >= "
        f"{res['config']['min_time_s'] * 1e3:g} ms{caches}" if c["source"] == "measured"
        else c["depends_on"]))
    fig.tight_layout(rect=(0, low, 1, 1))
    return fig


def forward_arrays(T, d_model, n_heads):
    """Bytes of every fp32 array the naive forward reads or makes: the one model of bytes."""
    d, h = d_model, n_heads
    big, row_vec = 4 * h * T * T, 4 * h * T  # an (h, T, T) array; an (h, T, 1) one
    # P = Q_h K_h^T, S = P / sqrt(d_k), Z = S + mask, m = max(Z), D = Z - m, E = exp(D),
    # s = sum(E), A = E / s, O = A V_h (out_h), C its concat copy, out = C W_O; W: one weight
    return {"x": 4 * T * d, "W": 4 * d * d, "Q": 4 * T * d, "K": 4 * T * d, "V": 4 * T * d,
            "P": big, "S": big, "mask": 4 * T * T, "Z": big, "m": row_vec, "D": big, "E": big,
            "s": row_vec, "A": big, "O": 4 * T * d, "C": 4 * T * d, "out": 4 * T * d}


def op_cost(T, d_model, n_heads):
    """(FLOPs, bytes) of each whole op (all projections, all heads): the lab's Block D formulas,
    each byte term an array of its formulas: a projection's input and weight (not its output), a T²
    op's inputs and output (the softmax's S and A, not its mask); no temporary naive numpy makes."""
    arr, d, h = forward_arrays(T, d_model, n_heads), d_model, n_heads
    d_k = d // h
    return {
        "qkv_proj": (3 * 2 * T * d**2, 3 * (arr["x"] + arr["W"])),  # 3 (4Td + 4d^2): I = Td/(2T+2d)
        "scores": (h * 2 * T**2 * d_k, arr["Q"] + arr["K"] + arr["S"]),  # h (8 T d_k + 4 T^2):
                                                                         # I = T d_k / (4 d_k + 2T)
        "softmax": (h * 5 * T**2, arr["S"] + arr["A"]),              # h 8 T^2: I = 5/8 ~ 0.6
        "av": (h * 2 * T**2 * d_k, arr["A"] + arr["V"] + arr["O"]),  # same form as scores
        "out_proj": (2 * T * d**2, arr["C"] + arr["W"])}             # same form as qkv_proj


# The arrays each numpy call of scores (its matmul, its scaling pass) and the softmax (its passes)
# reads or writes, each once: the call's array bytes (not a measured traffic).
CALL_ARRAYS = {"scores/matmul": ("Q", "K", "P"), "scores/scale": ("P", "S"),
               "softmax/mask_add": ("S", "mask", "Z"), "softmax/max": ("Z", "m"),
               "softmax/subtract": ("Z", "m", "D"), "softmax/exp": ("D", "E"),
               "softmax/sum": ("E", "s"), "softmax/divide": ("E", "s", "A")}
PASS_ARRAYS = {k.split("/")[1]: arrays for k, arrays in CALL_ARRAYS.items() if k[:8] == "softmax/"}
PASSES = list(PASS_ARRAYS)  # the softmax's passes in order, their arrays in PASS_ARRAYS
# Each op's arrays once each (qkv's W thrice: its weights; P and S apart, where numpy may elide
# one): its footprint, setting it under a cache level's roof (place_on_roofline; assumed: its rate).
OP_ARRAYS = {"qkv_proj": ("x", "W", "W", "W", "Q", "K", "V"), **{op: tuple(dict.fromkeys(
    a for call, arrays in CALL_ARRAYS.items() if call.startswith(op + "/") for a in arrays))
    for op in ("scores", "softmax")}, "av": ("A", "V", "O"), "out_proj": ("O", "C", "out", "W")}


def array_bytes(T, d_model, n_heads, table=CALL_ARRAYS):
    """Bytes of each entry's arrays in `table`, each array once: a call's (CALL_ARRAYS), a pass's
    (PASS_ARRAYS), an op's (OP_ARRAYS: working_set), or the fused op's (FLASH_ARRAYS)."""
    arr = forward_arrays(T, d_model, n_heads)
    return {call: sum(arr[k] for k in arrays) for call, arrays in table.items()}


working_set = functools.partial(array_bytes, table=OP_ARRAYS)
FLASH_ARRAYS = ("Q", "K", "V", "O")  # the T² ops as one, S and A never written: the ideal


def place_on_roofline(row, d_model, n_heads, ceilings):
    """Each op's FLOPs, bytes, intensity, GFLOPS, class against DRAM's roof (dram_bound; near_ridge:
    the ridge's range), level_bound: against the smallest cache with a roof whose reported size
    (cpu0's; a VM's says what it claims) holds its working_set, else DRAM."""
    beta, pi = ceilings["beta_peak_GBps"], ceilings["pi_peak_GFLOPS"]
    lo, hi = ceilings["ridge_range"]
    cost, ws = op_cost(row["T"], d_model, n_heads), working_set(row["T"], d_model, n_heads)
    flops_all = sum(f for f, _ in cost.values())
    roofed = [(lv["capacity_bytes"], name) for name, lv in ceilings["levels"].items() if lv[
        "capacity_bytes"] and not (lv.get("slower_than_larger") or lv.get("same_roof_as_DRAM"))]
    for op, (flops, nbytes) in cost.items():
        r, I = row["ops"][op], flops / nbytes
        level = min([(cap, n) for cap, n in roofed if cap >= ws[op]], default=(0, "DRAM"))[1]
        level_beta = beta if level == "DRAM" else ceilings["levels"][level]["GBps"]
        r.update(flops=flops, bytes=nbytes, intensity=I, GFLOPS=flops / r["time_s"] / 1e9,
                 dram_bound="memory" if I < lo else "compute" if I > hi else "near_ridge",
                 time_share=r["time_s"] / row["forward_s"], flop_share=flops / flops_all,
                 working_set_bytes=ws[op], level=level, level_roof_GFLOPS=min(pi, level_beta * I),
                 level_bound="memory" if I < pi / level_beta else "compute")


# ----------------------------------------------------------------------------------------------
# Block E: the numbers the three answers stand on, each set computed by one small function. Of
# the counted workers' records (the harness's) it reads by_T[str(T)]: "samples" (Block B's) and
# "one_thread" ones (each with `follows`); and apart[str(T)]: calls_at's seconds per call.

def threshold_T(d_k, ridge, b):
    """The T above which T d_k / (4 d_k + b T) > ridge (the lab's I_crit; b = 2: its formula; 4:
    its inequality, which counts T^2 twice): past it, scores/av lie right of the ridge; or None."""
    return None if d_k <= b * ridge else 4 * d_k * ridge / (d_k - b * ridge)


def thresholds(d_k, ridge):
    """Block E's threshold T of scores and av at the ridge: by the lab's formula, its inequality."""
    return {"from_intensity_formula": {  # T d_k / (4 d_k + 2T) > I_crit; None: no T
                "T_threshold": threshold_T(d_k, ridge, 2), "asymptotic_intensity": d_k / 2},
            "from_inequality_as_written": {  # T d_k > 4 (d_k + T) I_crit
                "T_threshold": threshold_T(d_k, ridge, 4), "asymptotic_intensity": d_k / 4}}


LAB_LAPTOP = {"caches_bytes": {"L3": 6 << 20}, "pi_GFLOPS": 250, "beta_GBps": [15, 19]}


def on_lab_laptop(d_model, n_heads):
    """Predictions for the lab's i5-8250U from the curriculum's figures (LAB_LAPTOP), never
    measured: its ridge (pi over beta's range), the first T whose softmax outgrows its L3."""
    lo, hi = (LAB_LAPTOP["pi_GFLOPS"] / b for b in LAB_LAPTOP["beta_GBps"][::-1])
    l3 = LAB_LAPTOP["caches_bytes"]["L3"]
    spills = next(T for T in range(1, 1 << 16) if working_set(T, d_model, n_heads)["softmax"] > l3)
    return {**LAB_LAPTOP, "ridge_range": [lo, hi], "softmax_spills_from_T": spills}


def expected_observations(rows):
    """The lab's three expected observations (listed in its Block C), each held or not."""
    shares = {r["T"]: {op: r["ops"][op]["time_share"] for op in OPS} for r in rows}
    lo, hi = min(shares), max(shares)
    return [{"claim": f"At T={lo} the projections ({' + '.join(PROJECTIONS)}) dominate",
             "held": sum(shares[lo][op] for op in PROJECTIONS) > 0.5},
            {"claim": f"At T={hi} the T^2 ops ({', '.join(T2_OPS)}) dominate",
             "held": sum(shares[hi][op] for op in T2_OPS) > 0.5},
            {"claim": "softmax is never the smallest component",
             "held": all(min(OPS, key=share.get) != "softmax" for share in shares.values())}]


def phase_27_preview(row, d_model, n_heads, ceilings):
    """The T² ops (T2_OPS) as one: the same FLOPs; naive, as run (time_s measured, the lab's bytes
    of each op); S and A never written, far fewer bytes, and the roof there (not measured)."""
    fused = [row["ops"][op] for op in T2_OPS]
    flops, nbytes, seconds = (sum(o[k] for o in fused) for k in ("flops", "bytes", "time_s"))
    flash = array_bytes(row["T"], d_model, n_heads, {"flash": FLASH_ARRAYS})["flash"]
    roof = min(ceilings["pi_peak_GFLOPS"], ceilings["beta_peak_GBps"] * flops / flash)
    return {"T": row["T"], "flops": flops,
            "naive": {"bytes": nbytes, "intensity": flops / nbytes, "time_s": seconds,
                      "GFLOPS": flops / seconds / 1e9},
            "without_materialising_A": {
                "bytes": flash, "intensity": flops / flash, "roof_GFLOPS": roof,
                "past_ridge": flops / flash > ceilings["ridge"]}, "bytes_reduction": nbytes / flash}


def softmax_against_roofs(row, ceilings):
    """Block E's question 2: the softmax's GFLOPS (its row's) against its DRAM roof (beta's) and
    one thread's DRAM copy (numpy runs it on one)."""
    sm = row["ops"]["softmax"]
    memory_roof = ceilings["beta_peak_GBps"] * sm["intensity"]
    one_thread = ceilings["levels"]["DRAM"]["GBps_1thread"] * sm["intensity"]
    return {"T": row["T"], "memory_roof_GFLOPS": memory_roof,
            "ratio_to_memory_roof": sm["GFLOPS"] / memory_roof,
            "ratio_to_1thread_dram_copy": sm["GFLOPS"] / one_thread}


def threading_windows(Ts, counted, kept=lambda sample: True):
    """Per T, each one-thread sample against the all-thread sample just before it, pairs whose
    samples are both `kept`: per op, the median of all threads' over one's."""
    out = []
    for T in Ts:
        matched = [(on_all, on_one) for rec in (w["by_T"][str(T)] for w in counted)
                   for on_one in rec.get("one_thread", [])
                   if kept(on_all := rec["samples"][on_one["follows"]]) and kept(on_one)]
        median = lambda f: {k: float(np.median([f(a[k], o[k]) for a, o in matched]))  # noqa
                            for k in OPS}
        if matched:  # none kept (the canary set them aside; one BLAS thread: none made): no window
            out.append({"T": T, "pairs": len(matched), **{key: median(f) for key, f in (
                ("threads_over_one", lambda a, o: a / o), ("all_threads_s", lambda a, o: a),
                ("one_thread_s", lambda a, o: o))}})
    return out


def softmax_pass_comparisons(rows, counted, d_model, n_heads):
    """Block E's comparisons of the softmax's passes (rates, not causes): per T and pass, ns per
    element at T, in cache and as one thread's copy of its bytes (the processes' medians)."""
    out = []
    for row in rows:
        T, n_bytes = row["T"], array_bytes(row["T"], d_model, n_heads, PASS_ARRAYS)
        if not (got := [w["apart"][str(T)] for w in counted if str(T) in w["apart"]]):
            continue
        n_el, n_queries = n_heads * T * T, got[0]["in_cache_queries"]
        per = lambda p, kind, scale, key: {  # noqa: E731
            key: float(np.median([scale * g[p][kind] for g in got]))}
        passes = [{"pass": p, "bytes": n_bytes[p],
                   **per(p, "at_T", 1e9 / n_el, "ns_per_element"),
                   **per(p, "in_cache", 1e9 / (n_queries * T), "in_cache_ns_per_element"),
                   **per(p, "copy", 1e9 / n_el, "copy_ns_per_element")} for p in PASSES]
        out.append({"T": T, "process_count": len(got), "in_cache_queries": n_queries,
                    "passes": passes, "passes_bytes": sum(e["bytes"] for e in passes),
                    "passes_ns_per_element": sum(e["ns_per_element"] for e in passes),
                    "sweep_softmax_ns_per_element": 1e9 * row["ops"]["softmax"]["time_s"] / n_el})
        if "exp_float64" in got[0]:  # numpy's float32 exp against float64's, on the same rows
            f32, f64 = (per(k, "in_cache", 1e9 / (n_queries * T), n) for k, n in (
                ("exp", "float32_ns_per_element"), ("exp_float64", "float64_ns_per_element")))
            out[-1]["exp_precision"] = {**f32, **f64, "float64_over_float32":
                f64["float64_ns_per_element"] / f32["float32_ns_per_element"]}
    return out


def scores_scale_times(rows, counted):
    """scores' scaling pass at each T as the forward runs it: scores less its matmul alone, per
    process (their fastest batches: scores_calls' assumption), the processes' median."""
    out = []
    for row in rows:
        if got := [sc["whole"] - sc["matmul"] for w in counted
                   if (sc := w["apart"].get(str(row["T"]), {}).get("scores"))]:
            out.append({"T": row["T"], "scale_s": float(np.median(got))})
    return out


def analyse(rows, cfg, ceilings, counted, windows):
    """Block E's numbers: from the rows; from the counted workers' records (`counted`: those not
    left out) calls_at's seconds, which feed no row; `windows`: threading_windows'."""
    focus, d, h = entry_at(rows, FOCUS_T), cfg["d_model"], cfg["n_heads"]
    out = {"expected_observations": expected_observations(rows),
           "dominant_op_per_T": {str(r["T"]): max(OPS, key=lambda op: r["ops"][op]["time_share"])
                                 for r in rows},
           "scores_av_threshold": thresholds(d // h, ceilings["ridge"]),
           "on_lab_laptop": on_lab_laptop(d, h),
           "phase_27_preview": phase_27_preview(focus or rows[-1], d, h, ceilings),
           "scores_scale": scores_scale_times(rows, counted),
           "softmax_passes": softmax_pass_comparisons(rows, counted, d, h),
           "threading_windows": windows}
    if focus:
        out[f"softmax{KEYED}"] = softmax_against_roofs(focus, ceilings)
    return out


# ----------------------------------------------------------------------------------------------
# Block F: the lab's manifest, from results.json.

def make_manifest(results):
    """The lab's Block F manifest as the lab spells it, the machine, and where the run came from."""
    cfg, c = results["config"], results["ceilings"]
    ops = (entry_at(results["sweep"], FOCUS_T) or {}).get("ops")  # None: no row at FOCUS_T
    summary = {f"softmax_GFLOPS{KEYED}": ops and ops["softmax"]["GFLOPS"],
               f"softmax_pct_of_total{KEYED}": ops and 100 * ops["softmax"]["time_share"],
               f"scores_GFLOPS{KEYED}": ops and ops["scores"]["GFLOPS"],
               "phase_27_motivation_pct_memory": ops and 100 * sum(
                   ops[op]["time_share"] for op in OPS if ops[op]["level_bound"] == "memory")}
    return {
        "experiment": "15-attention-perf", "date": results["date"], "seed": cfg["seed"],
        "versions": results["versions"], "depends_on": c["depends_on"],
        "config": {k: cfg[k] for k in "d_model n_heads T_sweep d_head samples_per_T min_time_s "
                   "quick blas_threads workers".split()} | {"heap": results["heap"]["mode"]},
        "hardware": results["hardware"], "results_summary": summary,
        "results_summary_definitions": {  # time_s: results.json's definitions
            f"softmax_pct_of_total{KEYED}": "softmax time_s / forward_s (the ops' sum)",
            "phase_27_motivation_pct_memory": "percent of forward_s in ops memory-bound against "
            "the roof of the level their working set fits in (level_bound)"},
        "ceilings_source": c["source"], "conditions_verdict": results["conditions"]["verdict"],
        "conditions_failed": results["conditions"]["failed"], "threads": results["threads"],
        "environment": results["environment"]}


# ==============================================================================================
# PART II — THE HARNESS: it calls Part I and records how the run went. Its limits: set by hand.
# ==============================================================================================

# ----------------------------------------------------------------------------------------------
# A worker's samples, watched (watched_samples hands Block B's take_samples its hooks): how it
# samples (PROFILES, sampling_plan) and under what (measuring: heap, BLAS threads, gc); the canary,
# a small fixed workload read between every two sample batches (watched; calls_at's and the
# ceilings' batches go unwatched); after each sample, the timers' overhead and, in a one-thread
# round, the sample again on one thread (after_sample); page faults, cpufreq's MHz, preemptions
# (machine_around, watched_samples).
# A worker's result, by who writes each key: measuring (heap, blas_threads, ended, cpu_s),
# watched_samples (started, sampling_s, preempted, MHz, canary_readings, by_T[str(T)]: samples,
# faults and any timer_ratios, one_thread), worker_job (apart[str(T)], ceiling_rates, label); after
# every worker, judge_processes in the parent (canary_reference). A sample: Block B's banner. The OS
# is read through the helpers first here (under SYSROOT on Linux: tests simulate machines).

SYSROOT = Path("/")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")


def read_text(path, default=None):
    try:
        return Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return default


def page_faults():
    """Page faults of this process so far, or None where the OS does not count them."""
    if resource is not None:  # Linux, macOS: minor faults (a reused heap should avoid them)
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    return getattr(psutil.Process().memory_info(), "num_page_faults", None)  # Windows: all faults


def glibc_malloc():
    """glibc's mallopt, or None on a platform whose C library is not glibc."""
    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    return ctypes.CDLL(None).mallopt if glibc else None


def blas_info():
    keys = "internal_api version num_threads threading_layer architecture filepath".split()
    return [{k: lib.get(k) for k in keys} for lib in threadpool_info()
            if lib.get("user_api") == "blas"]


PROFILES = {  # a run's plan of samples (its ceilings': CEILING_PROFILES)
    "full": dict(min_time=0.05, samples_per_T=100, worker_count=10, default_heap_samples_per_T=6),
    "quick": dict(min_time=0.005, samples_per_T=6, worker_count=2, default_heap_samples_per_T=3)}


def sampling_plan(heap_mode, samples, processes, blas_threads):
    """How a worker samples: rounds, its share of a T's `samples` over `processes` (up), one of each
    T a round; warm: a warm heap asked (measuring), Ts interleaved, timer pairs, on a BLAS of more
    threads its third round (or last) again on one (after_sample); default: T by T."""
    warm, rounds = heap_mode == "warm", math.ceil(samples / processes)
    return {"heap_mode": heap_mode, "rounds": rounds, "interleave": warm, "timer_pairs": warm,
            "one_thread_rounds": [min(2, rounds - 1)] if warm and (blas_threads or 1) > 1 else []}


def warm_heap():
    """Keep the forward's large temporaries mapped: a warm heap, by the allocator, not the code.
    No mallopt: the workers run on the default heap, and heap.mode says so."""
    mallopt, (M_TRIM_THRESHOLD, M_MMAP_MAX, most) = glibc_malloc(), (-1, -4, 2**31 - 1)  # C ints
    if mallopt and mallopt(M_MMAP_MAX, 0) == 1 and mallopt(M_TRIM_THRESHOLD, most) == 1:
        return {"mode": "warm", "control": f"glibc mallopt M_MMAP_MAX=0 M_TRIM_THRESHOLD={most}"}
    return {"mode": "default", "control": "mallopt refused: default allocator kept" if mallopt
            else "unavailable (not glibc): default allocator kept"}


@contextlib.contextmanager
def measuring(task):
    """A worker's set-up while it measures: heap held (warm), BLAS threads fixed, gc off (else a
    collection in a batch is timed). Its record: heap, blas_threads (read last), ended, cpu_s."""
    worker_rec = {"heap": warm_heap() if task["heap_mode"] == "warm" else {
        "mode": "default", "control": "the allocator's defaults"}}
    with threadpool_limits(task["threads_imposed"], user_api="blas"):
        gc.disable()
        try:
            yield worker_rec
        finally:
            gc.enable()
        worker_rec["blas_threads"] = (blas_info() or [{}])[0].get("num_threads")
    worker_rec.update(ended=time.time(), cpu_s=time.process_time())


def make_canary():
    """The canary's kernels: exp over 64 KiB (one thread), the BLAS's 128² matmul (on the threads it
    takes), each timed after an untimed call. `read`: {kernel: seconds}; `readings`: all so far."""
    rng = np.random.default_rng(0)
    z, a = rng.random(1 << 14, dtype=np.float32), rng.random((128, 128), dtype=np.float32)
    kernels = {"exp": (lambda: np.exp(z), 4), "blas": (lambda: a @ a, 2)}  # (call, calls timed)

    def read():
        reading = {}
        for name, (fn, n) in kernels.items():
            fn()
            t0 = time.perf_counter_ns()
            for _ in range(n):
                fn()
            reading[name] = (time.perf_counter_ns() - t0) * 1e-9
        return reading
    return {"read": read, "readings": [read()]}


def watched(fn, min_time, canary, blas_threads=None):
    """run_for(fn) on `blas_threads` between two canary readings: (calls, {"canary_around":
    [before, after]}), the after the next batch's before (between: faults, MHz, timer pairs, a
    T's first forward)."""
    before = canary["readings"][-1]
    with threadpool_limits(blas_threads, user_api="blas"):  # None: as it is
        n = run_for(fn, min_time)[0]
    canary["readings"].append(canary["read"]())
    return n, {"canary_around": [before, canary["readings"][-1]]}


TIMER_PAIR_SHARE = 1 / 24  # pairs for this share of a sample's forwards: a timed, an untimed


def timed_over_untimed(x, mha, mask, pairs, parity):
    """The timers' overhead as a ratio: the median of `pairs` timed/untimed forwards, the order in
    a pair alternating pair by pair from `parity` (assumed: a drift slows both alike)."""
    now, forwards = time.perf_counter_ns, (attention_forward_timed, attention_forward)
    ratios = []
    for j in range(pairs):
        secs = {}
        for forward in forwards[::1 if (parity + j) % 2 else -1]:
            t0 = now()
            forward(x, mha, mask)
            secs[forward] = now() - t0
        ratios.append(secs[forwards[0]] / secs[forwards[1]])
    return float(np.median(ratios))


def after_sample(task, i, forward_args, rec, canary):
    """After sample i of a T (rec, its record): the timers' overhead over TIMER_PAIR_SHARE of its
    forwards (timer_pairs); in a one-thread round, the same sample on one BLAS thread."""
    if task["timer_pairs"]:
        pairs = math.ceil(rec["samples"][-1]["n"] * TIMER_PAIR_SHARE)
        rec.setdefault("timer_ratios", []).append(timed_over_untimed(*forward_args, pairs, i))
    if i in task["one_thread_rounds"]:
        one = sample_forwards(*forward_args, task["min_time"],
                              lambda fn, t: watched(fn, t, canary, 1))
        rec.setdefault("one_thread", []).append({**one, "follows": len(rec["samples"]) - 1})


CPUFREQ = lambda: sorted(SYSROOT.glob("sys/devices/system/cpu/cpu[0-9]*/cpufreq"))  # noqa: E731


def cpufreq_MHz(dirs):
    """The MHz that cpufreq reads in each folder of CPUFREQ(); [] where none (a VM, not Linux)."""
    return [int(v) // 1000 for folder in dirs
            if (v := read_text(folder / "scaling_cur_freq", "")).isdigit()]


def preemptions():
    """Involuntary context switches of this process so far, summed over its threads by Linux's
    getrusage, BLAS's included; None off Linux (PREEMPT_LIMIT was set by hand on Linux's count)."""
    linux = platform.system() == "Linux"
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw if linux else None


@contextlib.contextmanager
def machine_around(rec, worker_rec, dirs):
    """Around one sample: its page faults (the canary's reading after it included; None where the
    OS counts none) into rec, its T's record; then the CPUs' mean MHz (cpufreq) into worker_rec."""
    f0 = page_faults()
    yield
    rec["faults"] = None if f0 is None else rec.get("faults", 0) + page_faults() - f0
    worker_rec["MHz"].extend([sum(mhz) / len(mhz)] if (mhz := cpufreq_MHz(dirs)) else [])


def watched_samples(task, mha):
    """A worker's samples (take_samples) with the hooks above, and around them the keys the banner
    above gives it: MHz, cpufreq's mean after each sample; preempted, None off Linux."""
    canary, switches, t0 = make_canary(), preemptions(), time.perf_counter()
    out, dirs = {"started": time.time(), "MHz": []}, CPUFREQ()  # the folders found once
    out["by_T"] = take_samples(task, mha, lambda fn, t: watched(fn, t, canary),
                               lambda rec: machine_around(rec, out, dirs),
                               lambda i, args, rec: after_sample(task, i, args, rec, canary))
    return {**out, "sampling_s": time.perf_counter() - t0, "canary_readings": canary["readings"],
            "preempted": None if switches is None else preemptions() - switches}


# ----------------------------------------------------------------------------------------------
# Quiet or disturbed, once every worker has ended: (1) which samples and processes feed time_s
# (judge_processes, then pool_sweep): a sample the canary read slow around is set aside
# (mark_samples, set_aside), a process it read slow nearly all its life left out (slow_processes),
# pool_row pools the rest; (2) the verdict, and beside it the governor's setting, the threads.

REFERENCE_QUANTILE = 0.10  # a process's canary reference: this quantile of its own readings
SAMPLE_KERNEL = "exp"      # the kernel a sample is judged on (set by hand; a process, on both)
SAMPLE_SLOW = 1.25        # a sample is set aside when SAMPLE_KERNEL took this x its reference
PROCESS_SLOW = 1.6        # a worker is left out when a kernel's reference is this x others'
PEER_QUANTILE = 0.25      # the others' fast side, not their median: a slow half cannot keep itself


def canary_quantile(readings, q):
    """Per kernel, a process's canary readings' q-quantile (REFERENCE_QUANTILE: its reference)."""
    return {k: float(np.quantile([r[k] for r in readings], q)) for k in readings[0]}


def mark_samples(worker, reference):
    """Each sample of a worker (one-thread ones too) gets canary_ratio: SAMPLE_KERNEL at the faster
    of its two readings over its reference (assumed: one slow reading alone is an interrupt)."""
    for sample in (s for rec in worker["by_T"].values()
                   for s in rec["samples"] + rec.get("one_thread", [])):
        sample["canary_ratio"] = min(reading[SAMPLE_KERNEL] / reference[SAMPLE_KERNEL]
                                     for reading in sample["canary_around"])  # before, after


def set_aside(sample):
    """A sample the canary sets aside from time_s (canary_ratio: mark_samples'); else kept."""
    return sample["canary_ratio"] > SAMPLE_SLOW


def slow_processes(workers):
    """Processes the canary read slow nearly all their life: a kernel's reference over PROCESS_SLOW
    x the others' PEER_QUANTILE: {label: {canary_kernel, ratio, other_ratio}}; all: {}."""
    out = {}
    for i, w in enumerate(workers):
        others = workers[:i] + workers[i + 1:]
        ratios = {k: ref / float(np.quantile(
                      [other["canary_reference"][k] for other in others], PEER_QUANTILE))
                  for k, ref in w["canary_reference"].items()} if others else {}
        if ratios and (ratios[k := max(ratios, key=ratios.get)] > PROCESS_SLOW):
            out[w["label"]] = {"canary_kernel": k, "ratio": ratios[k],
                               "other_ratio": min(ratios.values())}
    return out if len(out) < len(workers) else {}


def judge_processes(dflt, workers):
    """mark_samples on all; slow_processes on `workers` (config.workers'): (left out; the rest)."""
    for w in [dflt] + workers:
        w["canary_reference"] = canary_quantile(w["canary_readings"], REFERENCE_QUANTILE)
        mark_samples(w, w["canary_reference"])
    left_out = slow_processes(workers)
    return left_out, [w for w in workers if w["label"] not in left_out]


DEFINITIONS = {  # written into results.json, and said at the end of a run
    "time_s": time_s_said("this run's workers") + " (its canary.sample_kernel, at "
    "the faster of its readings before and after the sample, at most canary.sample_slow_ratio x "
    "the process's reference); the processes in canary.left_out, and at a T any that kept none "
    "there, feed none; where the canary kept no sample at a T, all their samples (figures_from)",
    "time_s_interval": "a distribution-free interval of that median with a coverage of "
    f"at least {CONFIDENCE:.0%} (too few processes: their whole range; time_s_interval_coverage "
    "says which), over this run's processes only: a run minutes later can fall outside it"}


def pool_row(T, records):
    """One T's row of `records` (the counted processes' or the default heap's): pool_T of the kept
    samples of the processes that kept any (none did: all); faults a forward; timers' overhead."""
    samples = [s for rec in records for s in rec["samples"]]
    faults = [rec["faults"] for rec in records]
    overheads = [v - 1 for rec in records for v in rec.get("timer_ratios", [])]
    aside, kept_by = [], {}  # kept_by: the processes that kept any, their kept samples
    for rec in records:
        for sample in rec["samples"]:
            (aside if set_aside(sample) else kept_by.setdefault(rec["label"], [])).append(sample)
    feeding = kept_by or {rec["label"]: rec["samples"] for rec in records}
    return {**pool_T(T, feeding), "sample_count": len(samples), "processes_sampled": len(records),
            "samples_set_aside": len(aside), "figures_from": "kept samples" if kept_by else
            "all samples: the canary kept none",
            "set_aside_median_ratio": float(np.median([s["canary_ratio"] for s in aside]))
            if aside else None, "page_faults_per_forward": None if None in faults else
            sum(faults) / sum(s["n"] for s in samples),
            **(quantile_estimate(overheads, "timer_overhead") if overheads else {})}


def pool_sweep(Ts, counted, default_heap_worker):
    """A row per T from the counted workers' samples (judge_processes'), one from the default's."""
    rows = lambda group: [pool_row(T, [{**w["by_T"][str(T)], "label": w["label"]}  # noqa: E731
                                       for w in group]) for T in Ts]
    return rows(counted), rows([default_heap_worker])


# (2) The verdict (judge_run): checks (a value against a limit, ok True/False/None: not made);
# "quiet" if none failed, else "disturbed" with reasons, remedies; beside: a finding, run_warnings.

SET_ASIDE_LIMIT = 0.75    # at most this share of a T's samples set aside (fewer: a thin quantile)
BOTH_KERNELS_SLOW = 1.25  # a left-out process counts against the run when its other kernel, too,
                          # exceeds the others' this much (set by hand); the check needs half
COOPERATION_LIMIT = 0.90  # THREADS_OP's time on all BLAS threads <= 0.9 x on one (its last window)
OTHERS_CPUS_LIMIT = 0.25  # CPUs that other processes may use beyond those the run leaves free
STEAL_LIMIT = 0.02        # share of the CPU time the hypervisor may give to someone else
PREEMPT_LIMIT = 50        # involuntary context switches a second, all worker processes' sampling
CLOCK_DROP_LIMIT = 0.10   # the clock (or canary) may fall this much, first to last counted worker
CLOCK_QUANTILE = 0.25     # the canary's kernels, first and last counted worker: this quantile
NAMED_CPUS = 0.05         # another process is named in a remedy from this many CPUs on average
PIN_FAST = {"Linux": "pin the run to the fast cores (taskset -c <their CPUs> python perf.py)",
            "Windows": "pin the run to the fast cores (start /affinity <mask> python perf.py)",
            "Darwin": "macOS cannot pin a process to a kind of core: quit other programs, so that "
                      "the performance cores are free,"}  # a hybrid CPU's remedy, by OS


def cpufreq_settings():
    """Governor, MHz and turbo from Linux's cpufreq; without it "unavailable" and None."""
    folders = CPUFREQ()  # each CPU's cpufreq folder, under SYSROOT
    joined = lambda name: "/".join(sorted({read_text(f / name) for f in folders} - {None}))  # noqa
    no_turbo = read_text(SYSROOT / "sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = read_text(SYSROOT / "sys/devices/system/cpu/cpufreq/boost")
    return {"governor": joined("scaling_governor") or "unavailable",
            "cur_MHz": sorted(set(cpufreq_MHz(folders))) or None,
            "turbo": ("off" if no_turbo == "1" else "on") if no_turbo is not None else
                     ("on" if boost == "1" else "off") if boost is not None else None}


def machine_load(own_pids):
    """CPU seconds so far, system-wide (busy, all, steal where the OS has it) and of every
    other readable process by pid, with its name (never its arguments) and start."""
    t = psutil.cpu_times()
    busy = sum(getattr(t, f, 0.0) for f in "user nice system irq softirq interrupt dpc".split())
    steal, idle = getattr(t, "steal", None), t.idle + getattr(t, "iowait", 0.0)
    procs = {p.pid: (p.info["name"], sum(p.info["cpu_times"][:2]), p.info["create_time"])
             for p in psutil.process_iter(["name", "cpu_times", "create_time"])
             if p.pid not in own_pids and p.info["cpu_times"] and p.info["name"]}
    return {"perf_s": time.perf_counter(), "epoch_s": time.time(), "busy": busy,
            "all_cpu_s": busy + idle + (steal or 0), "steal": steal, "procs": procs}


@contextlib.contextmanager
def machine_watched(in_process):
    """Around spawn_all (every worker process's life): the machine's load before and after
    ("load"), this run's own CPU seconds between ("own_cpu_s"; Windows: "spawned"'s added)."""
    own = lambda: sum(os.times()[:4])  # noqa: E731  this process and its finished workers
    out, own0 = {"load": [machine_load({os.getpid()})], "spawned": []}, own()
    yield out
    out["load"].append(machine_load({os.getpid()}))
    out["own_cpu_s"] = own() - own0 + (sum(w["cpu_s"] for w in out["spawned"])
                                       if os.name == "nt" and not in_process else 0)


def make_check(value, limit, reason, remedy, do, basis=None):
    """A check; if it fails, its reason, remedy and `do` (the remedy in a few words); `basis`."""
    return {"value": value, "limit": limit, "ok": None if value is None else value <= limit,
            "reason": reason, "remedy": remedy, "do": do, "basis": basis}


def others_by_name(start, end):
    """Others' CPUs while the workers ran, by name, busiest first (if started between: all used)."""
    wall, by_name = end["perf_s"] - start["perf_s"], {}
    for pid, (name, secs, created) in end["procs"].items():
        was = start["procs"].get(pid)
        if was and was[0] == name and was[2] == created:
            secs -= was[1]
        elif created < start["epoch_s"]:  # there before, but not readable then: unknown
            continue
        by_name[name] = by_name.get(name, 0.0) + secs / wall
    return sorted(([n, round(u, 3)] for n, u in by_name.items() if u >= 0.005), key=lambda x: -x[1])


def interference_checks(start, end, own_cpu_s, spare_cores, spawned, other_procs):
    """What others did: CPU past the cores the BLAS threads leave free (assumed to slow no op, even
    on a hyper-thread sibling), the hypervisor's steal, every worker process's preemptions."""
    wall = end["perf_s"] - start["perf_s"]
    others_cpus = max(0.0, (end["busy"] - start["busy"]) - own_cpu_s) / wall
    limit = spare_cores + OTHERS_CPUS_LIMIT
    steal = None if start["steal"] is None else \
        (end["steal"] - start["steal"]) / max(end["all_cpu_s"] - start["all_cpu_s"], 1e-9)
    sampled = [(w["preempted"], w["sampling_s"]) for w in spawned if w["preempted"] is not None]
    rate = sum(p for p, _ in sampled) / sum(s for _, s in sampled) if sampled else None
    named = [(n, u) for n, u in other_procs if u >= NAMED_CPUS][:3]  # names only, never arguments
    close = ("close " + ", ".join(f"{n} ({u:.2f} CPUs)" for n, u in named) + " and rerun",
             "close " + ", ".join(n for n, _ in named)) if named else (
        "close other programs and rerun (no single process stood out)", "close others")
    return {"other_processes_cpus": make_check(
                others_cpus, limit, f"other processes and interrupts used {others_cpus:.2f} CPUs "
                f"on average while the workers ran, and the run left {spare_cores} cores free "
                f"(limit {limit:.2f})", *close),
            "steal_fraction": make_check(
                steal, STEAL_LIMIT, f"the hypervisor took {100 * (steal or 0):.1f}% of the CPU "
                f"time (steal; limit {100 * STEAL_LIMIT:.0f}%)", "a shared VM: rerun later, and "
                "quote ratios or set runs side by side with --compare", "rerun later"),
            "preemptions_per_s": make_check(
                rate, PREEMPT_LIMIT, f"the worker processes were preempted {rate or 0:.0f} times a "
                f"second while sampling (limit {PREEMPT_LIMIT}): their threads waited for a CPU",
                close[0] + "; where the BLAS threads outnumber the CPUs, ask for fewer (--threads)",
                close[1] + ", or fewer BLAS threads")}


def clock_checks(freq_start, freq_end, counted, virtualized=False):
    """Governor and turbo unchanged; the clock not fallen from the first counted worker to start to
    the last: cpufreq's MHz, else the smaller fall of the canary's kernels (assumed: both slow)."""
    counted = sorted(counted, key=lambda w: w["started"])
    setting = lambda freq: f"{freq['governor']}/{freq['turbo']}"  # noqa: E731
    seen = freq_start["governor"] != "unavailable" or freq_start["turbo"] is not None
    changed = int(setting(freq_start) != setting(freq_end)) if seen else None  # else: unknown
    mhz = [float(np.median(w["MHz"])) for w in counted if w["MHz"]]
    if len(mhz) > 1:
        drop, basis = 1 - mhz[-1] / mhz[0], "cpufreq"
        what = (f"the CPUs' MHz (a worker's median over its samples) was {mhz[0]:.0f} in the first "
                f"counted worker and {mhz[-1]:.0f} in the last")
    elif len(counted) > 1:
        fast = [canary_quantile(w["canary_readings"], CLOCK_QUANTILE) for w in counted[::len(
            counted) - 1]]  # the first and the last
        drop, basis = min(1 - fast[0][k] / fast[1][k] for k in fast[0]), "canary"
        what = " and ".join(f"the canary's {k} reading took {1e6 * fast[0][k]:.1f} us in the "
                            f"first counted worker and {1e6 * fast[1][k]:.1f} in the last"
                            for k in fast[0])
    else:
        drop, basis, what = None, None, ""
    full = "set the performance governor (sudo cpupower frequency-set -g performance)" if \
        platform.system() == "Linux" else "choose the best-performance power mode"  # by OS
    laptop = (f"on a laptop, plug it in and {full}, then rerun; on a shared machine, rerun later",
              "full power (on AC), or rerun later")
    host = basis == "canary" and virtualized
    why = "the CPUs' mean scaling_cur_freq fell" if basis == "cpufreq" else \
        "the later canary readings ran slower"
    remedy = ("on a VM the canary cannot tell the clock from a busier host: rerun later, and set "
              "the runs side by side with --compare", "rerun later") if host else laptop
    return {"governor_or_turbo_changed": make_check(
                changed, 0, "the CPU governor/turbo changed during the run: "
                f"{setting(freq_start)} -> {setting(freq_end)}", *laptop),
            "clock_drop": make_check(
                drop, CLOCK_DROP_LIMIT, f"{what} (speed {-100 * (drop or 0):.0f}%): {why}",
                *remedy, basis=basis)}


def canary_checks(rows, n_workers, left_out):
    """slow_samples: the canary slow around over SET_ASIDE_LIMIT of a T's samples. slow_process:
    half or more of the n_workers workers left out with both kernels slow."""
    aside, what = max((r["samples_set_aside"] / r["sample_count"], f"samples at T = {r['T']}")
                      for r in rows)
    both = {k: v for k, v in left_out.items() if v["other_ratio"] > BOTH_KERNELS_SLOW}
    who = ", ".join(f"{k} (x{v['ratio']:.2f} and x{v['other_ratio']:.2f})" for k, v in both.items())
    return {"slow_samples": make_check(
                aside, SET_ASIDE_LIMIT, f"the canary's {SAMPLE_KERNEL} kernel ran slow around "
                f"{100 * aside:.0f}% of the {what} (limit {100 * SET_ASIDE_LIMIT:.0f}%)"
                ": too few samples the canary read fast remain", "rerun later, when the "
                "machine is quiet (other programs closed; a shared VM at another hour)",
                "rerun later"),
            "slow_process": make_check(
                len(both) if n_workers > 1 else None, (n_workers - 1) // 2,
                f"{len(both)} of the {n_workers} workers ran both canary kernels slow (over "
                f"{BOTH_KERNELS_SLOW}x the others' fast side, one over {PROCESS_SLOW}x) for nearly "
                f"their whole life: {who}; half or more",
                "the machine ran slow for a long spell, or these processes sat in a slow state "
                "of their own (rerun later), or it has cores of two speeds (performance and "
                "efficiency cores) and these processes ran on the slow ones: "
                f"{PIN_FAST.get(platform.system(), PIN_FAST['Linux'])} and rerun",
                "pin to the fast cores, or rerun later")}


def verdict_from(checks):
    """Disturbed if any check failed, with reasons and remedies; a check not made is unknown."""
    failed = [{"check": n, "reason": ch["reason"], "remedy": ch["remedy"], "do": ch["do"]}
              for n, ch in checks.items() if ch["ok"] is False]
    return {"verdict": "disturbed" if failed else "quiet", "failed": failed,
            "checks": {n: {k: ch[k] for k in ("value", "limit", "ok")} | (
                {"basis": ch["basis"]} if ch["basis"] else {}) for n, ch in checks.items()},
            "unknown": [n for n, ch in checks.items() if ch["ok"] is None]}


def judge_run(load, own_cpu_s, hardware, threads, spawned, counted, left_out, rows):
    """Disturbed on evidence that the run shared the machine (others' CPU, interrupts included;
    steal; preemptions, which its own threads cause too where they outnumber the CPUs) or that it
    changed under it (the clock; the canary's rules). From machine_watched, the machine, every
    worker process (`spawned`), judge_processes (left_out, counted: never the default heap's),
    pool_row."""
    spare = max(0, hardware["physical_cores"] - (threads["blas_threads"] or 1))
    other_procs, n_workers = others_by_name(*load), len(counted) + len(left_out)
    return {**verdict_from({
        **interference_checks(*load, own_cpu_s, spare, spawned, other_procs),
        **clock_checks(hardware["cpufreq_at_start"], hardware["cpufreq_at_end"], counted,
                       hardware["virtualized"]),
        **canary_checks(rows, n_workers, left_out)}), "other_processes": other_procs[:5]}


def cooperation_finding(windows, threads_ran):
    """Do the BLAS threads help THREADS_OP at the largest T with a window (threading_windows)?
    Beside the verdict (run_lab adds it); one thread advised only if faster there (the median)."""
    window = windows[-1] if windows else {"T": None, "threads_over_one": {THREADS_OP: None}}
    ratio, applies = window["threads_over_one"][THREADS_OP], bool(threads_ran and threads_ran > 1)
    out = {"value": ratio, "limit": COOPERATION_LIMIT,
           "holds": None if ratio is None or not applies else ratio <= COOPERATION_LIMIT}
    if out["holds"] is not False:
        return out
    return {**out, "finding": f"{threads_ran} BLAS threads took {ratio:.2f}x one thread's time "
            f"on {THREADS_OP} at T = {window['T']} (the median of {window['pairs']} pairs; limit "
            f"{COOPERATION_LIMIT}): the threads {'slowed' if ratio > 1 else 'barely helped'} "
            f"{THREADS_OP} here", "advice": (
                "here one thread was faster in back-to-back samples (threading_windows): try "
                "OMP_NUM_THREADS=1 and say so in your README; pi, the ridge and the ops' classes "
                "may move with it, so compare such a run only with one-thread runs" if ratio > 1
                else "one thread was not faster in back-to-back samples, so this run does not "
                "back OMP_NUM_THREADS=1: say in your README that the threads barely help here")}


def run_warnings(results):
    """Beside the verdict, never in it: a governor not 'performance' (the lab's setting; cpufreq's
    word, none: unavailable); BLAS threads that ran not as asked, one a core, the workers'."""
    threads, hardware = results["threads"], results["hardware"]
    ran, asked, cores = threads["blas_threads"], threads["asked"], hardware["physical_cores"]
    gov, parts = hardware["cpu_governor_at_run"], []
    warn = [f"governor: '{gov}', not 'performance' as the lab asks: sudo cpupower frequency-set "
            "-g performance"] if gov not in ("performance", "unavailable") else []
    if ran is None:
        return ["threads: threadpoolctl sees no BLAS library: the thread count is not controlled",
                *warn]
    if asked not in (None, ran):
        parts.append(f"{asked} BLAS threads were asked for ({threads['asked_by']}) and {ran} ran"
                     + (" (as many as the CPUs)" if ran == hardware["logical_cpus"] < asked
                        else ""))
    if ran != cores:
        parts.append(f"{ran} BLAS threads on {cores} physical cores: " + (
            "hyper-thread siblings share a core; " if ran > cores else "") + "the lab asks for one "
            "thread per core (--threads or OMP_NUM_THREADS)")
    if others := sorted({w["blas_threads"] for w in results["worker_processes"]} - {ran}, key=str):
        parts.append(f"the workers ran {'/'.join(map(str, others))} BLAS threads, the parent {ran}")
    return ([f"threads: {'; '.join(parts)}"] if parts else []) + warn


# ----------------------------------------------------------------------------------------------
# The machine: facts and threads (Linux: /proc, /sys; else psutil, sysctl, platform); None: unknown.

def cpu_identity(cpuinfo):
    """The CPU's name, vendor, family and model (one brand name, two CPUs: the last two differ),
    from /proc/cpuinfo, sysctl (macOS) or platform.processor() (Windows)."""
    info = {}
    for key, _, value in (ln.partition(":") for ln in cpuinfo.splitlines()):
        info.setdefault(key.strip(), value.strip())
    name = info.get("model name") or info.get("Model") or info.get("Hardware")
    ident = {"vendor": info.get("vendor_id") or info.get("CPU implementer"),
             "family": info.get("cpu family"), "model": info.get("model")}
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        if platform.system() == "Darwin":
            name = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], text=True,
                                  capture_output=True, timeout=5).stdout.strip() or name
    if m := re.search(r"Family (\d+) Model (\d+).*, (\w+)", platform.processor()):  # Windows
        ident = {"vendor": m[3], "family": m[1], "model": m[2]}
    return {"cpu_model": name or platform.processor() or "unknown",
            **{k: int(v) if v and v.isdigit() else v for k, v in ident.items()}}


def numpy_simd():
    """The SIMD features numpy detects here, the dispatch targets this CPU supports,
    and the target each float32 kernel of the softmax runs here (numpy >= 2.1 says; else None)."""
    umath = (getattr(np, "_core", None) or np.core)._multiarray_umath  # numpy 2, else 1.x
    found = umath.__cpu_features__
    info = getattr(getattr(np.lib, "introspect", None), "opt_func_info", None)
    return {"simd_flags": [f for f, on in found.items() if on],
            "numpy_dispatch_supported": [f for f in umath.__cpu_dispatch__ if found.get(f)],
            "numpy_softmax_kernels": info and {n: s["current"] for n, sigs in info(
                "^(add|maximum|subtract|exp|divide)$", "float32").items() for s in sigs.values()}}


def machine_facts(freq):
    """The machine as the run found it; freq: cpufreq's settings at the start (cpufreq_settings)."""
    cpuinfo = read_text(SYSROOT / "proc/cpuinfo", "")
    cpu_dirs = sorted(SYSROOT.glob("sys/devices/system/cpu/cpu[0-9]*/topology"))
    # A physical core: one set of hyper-thread siblings (thread_siblings_list before Linux 5.3).
    sibling_sets = {read_text(d / "core_cpus_list") or read_text(d / "thread_siblings_list")
                    for d in cpu_dirs} - {None}
    logical = len(cpu_dirs) or psutil.cpu_count() or os.cpu_count() or 1
    physical = len(sibling_sets) or psutil.cpu_count(logical=False)  # None: logical's, below
    caches = {}
    for idx in sorted(SYSROOT.glob("sys/devices/system/cpu/cpu0/cache/index*")):
        kind = {"Data": "d", "Instruction": "i"}.get(read_text(idx / "type", ""), "")
        caches[f"L{read_text(idx / 'level', '?')}{kind}"] = {"size": read_text(idx / "size")}
    unavailable = {k: why for k, missing, why in (
        ("caches", not caches, "no /sys cache description on this OS"),
        ("governor", freq["governor"] == "unavailable", "no cpufreq in sysfs (a VM, some "
         "containers, or not Linux): the governor cannot be read or set here"),
        ("clock", freq["cur_MHz"] is None, "no cpufreq scaling_cur_freq: the canary's two "
         "kernels stand in for the clock (assumed: a slower clock slows both)"),
        ("page_faults", page_faults() is None, "no page-fault count from resource or psutil"),
        ("warm_heap", glibc_malloc() is None, "not glibc: the run cannot ask to keep the heap"))
        if missing}
    ident = cpu_identity(cpuinfo)
    return {"cpu_model": ident.pop("cpu_model"), "cpu_governor_at_run": freq["governor"], **ident,
        **numpy_simd(), "logical_cpus": logical, "physical_cores": physical or logical, "caches":
        caches, "virtualized": " hypervisor" in cpuinfo if "\nflags" in cpuinfo else None,  # x86's
        "os": f"{platform.system()} {platform.release()}", "machine": platform.machine(),
        "libc": " ".join(platform.libc_ver()).strip() or None,
        "cpufreq_at_start": freq, "unavailable": unavailable}


def thread_record(flag, hardware):
    """The BLAS threads asked for, by whom (default: one a physical core, as the lab asks), imposed
    (None: the environment's), run here in the parent (run_warnings: the workers'); BLAS seen."""
    env = {k: os.environ[k] for k in THREAD_VARS if os.environ.get(k)}
    if flag:
        imposed, asked, asked_by = flag, flag, "flag: --threads"
    elif env:
        first = next(iter(env.values()))
        imposed, asked = None, int(first) if first.isdigit() else None
        asked_by = "environment: " + ", ".join(f"{k}={v}" for k, v in env.items())
    else:
        imposed = asked = hardware["physical_cores"]
        asked_by = "default: one per physical core"
    with threadpool_limits(imposed, user_api="blas"):  # None: leave the pool as it is
        blas = blas_info()
    return {"blas_threads": blas[0]["num_threads"] if blas else None, "asked": asked,
            "imposed": imposed, "asked_by": asked_by}, blas


# ----------------------------------------------------------------------------------------------
# The ceilings: beta, pi, the caches' roofs, the ridge. Phase 1's beta and pi when given
# (read_ceilings; pi then untimed, the copies timed still), else timed here. Who: the first
# CEILING_WORKERS workers (ceiling_plan); when: last in each, after its samples and calls_at
# (time_ceilings); how: pi's matmul on the run's BLAS threads (measuring's; its rate, not the CPU's
# peak), each copy on one thread (the shared levels' also on every logical CPU), between
# copy_buffers, each cache's sized from cpu0's caches (copy_levels). A ceiling (combine_ceilings):
# the CEILING_QUANTILE of its run_for repeats pooled over the counted workers (not left out by
# judge_processes; all if none of those has any), quantile_estimate's interval; the ridge, pi/beta.

def read_ceilings(roofline=None):
    """Phase 1's beta and pi, read before measuring: from --roofline's file, else Phase 1's
    manifest if there (else None), at its top level or in results_summary; a bad file: an error."""
    path = roofline or REPO / PHASE1_MANIFEST
    if not (roofline or path.is_file()):
        return None
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise UsageError(f"cannot read roofline file {path}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UsageError(f"roofline file {path} is not valid JSON") from None
    out = {"source": "cli" if roofline else "phase1",
           "depends_on": str(roofline) if roofline else PHASE1_MANIFEST}
    for key in ("beta_peak_GBps", "pi_peak_GFLOPS"):
        v = data.get(key, (data.get("results_summary") or {}).get(key)) \
            if isinstance(data, dict) else None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise UsageError(f"roofline file {path} has no positive number {key}")
        out[key] = float(v)
    return out


COPY_MAX_BYTES = 256 << 20  # the largest copy's working set (both buffers), any LLC
CEILING_QUANTILE = 0.75   # a ceiling: the fast side of its repeats' rates (assumed: noise slows)
PLATEAU = 0.10            # DRAM's two copy sizes within 10 %: a plateau (else the roofline says)
SAME_ROOF = 0.10          # a cache level's copy at most 10 % over beta: DRAM's roof, not its own
SMALL_COPY_BYTES = 256 << 10  # a smaller copy slower than a larger level's: no roof of its own


def copy_buffers(nbytes):
    """Source and destination of a copy of working set nbytes, in one block, half a page apart
    (modulo pages), not 4 KiB apart as back-to-back ones can be (against 4K aliasing, assumed)."""
    n = nbytes // 8
    gap = (2048 - 4 * n) % 4096 // 4
    block = np.ones(2 * n + gap, dtype=np.float32)
    return block[:n], block[n + gap:]


def copy_rates(buffers, n_threads, reps, min_time):
    """GB/s of `reps` repeats of np.copyto of N floats: 8 N bytes, each read or written once (a
    write-allocate's read left out); on more Python threads, a slice each (assumed: GIL freed)."""
    (src, dst), N = buffers, buffers[0].size
    slices = [slice(i * N // n_threads, (i + 1) * N // n_threads) for i in range(n_threads)]
    with ThreadPoolExecutor(n_threads) if n_threads > 1 else contextlib.nullcontext() as executor:
        copy = (lambda: np.copyto(dst, src)) if n_threads == 1 else \
            (lambda: list(executor.map(lambda s: np.copyto(dst[s], src[s]), slices)))
        copy()  # untimed: first touch of both buffers, threads started
        repeats = [run_for(copy, min_time) for _ in range(reps)]
    return [8 * N * calls / secs / 1e9 for calls, secs in repeats]


def matmul_cost(n):
    """pi's kernel, an fp32 (n, n) matmul: (FLOPs, bytes of its three arrays, each once)."""
    return 2 * n**3, 3 * 4 * n**2


def matmul_rates(n, reps, min_time):
    """pi's kernel timed: GFLOPS of `reps` repeats."""
    a, b = (np.random.default_rng(i).random((n, n), dtype=np.float32) for i in range(2))
    a @ b
    repeats = [run_for(lambda: a @ b, min_time) for _ in range(reps)]
    return [matmul_cost(n)[0] * calls / secs / 1e9 for calls, secs in repeats]


def copy_levels(hardware, dram_bytes=None):
    """Each level's copy working set (both buffers): half of each data cache (machine_facts, cpu0),
    >= 8 KiB; DRAM: dram_bytes, else 4x the LLC (none: 8 MiB), >= 128 MiB; its half; all capped."""
    unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}  # /sys writes sizes as "48K", "32M"
    caches = {name: int(size[:-1]) * unit[size[-1]] for name, lv in hardware["caches"].items()
              if (size := lv["size"] or "")[-1:] in unit and not name.endswith("i")}
    llc = max(caches.values(), default=8 << 20)
    levels = {name: {"capacity_bytes": size, "bytes": min(max(8 << 10, size // 2), COPY_MAX_BYTES),
                     "shared": size == llc} for name, size in sorted(caches.items())}  # assumed
    dram = min(dram_bytes or max(128 << 20, 4 * llc), COPY_MAX_BYTES)
    return levels | {"DRAM": {"capacity_bytes": None, "bytes": dram, "shared": True,
                              "past_llc": dram > llc if caches else None, "half_bytes": dram // 2}}


CEILING_WORKERS = 5       # the first workers also time the ceilings (set by hand)
CEILING_PROFILES = {  # repeats of beta's copy and pi's matmul; of the caches' copies, DRAM's half
    "full": {"ceiling_repeats": 20, "cache_repeats": 10, "matmul_n": 2048, "dram_bytes": None},
    "quick": {"ceiling_repeats": 4, "cache_repeats": 2, "matmul_n": 512, "dram_bytes": 32 << 20}}


def ceiling_plan(quick, hardware, n_workers, time_pi):
    """Each worker's ceiling spec, the first CEILING_WORKERS' the spec, the rest's None: the
    copies of copy_levels, even beside Phase 1's beta, pi's matmul (time_pi), repeats a worker."""
    n_ceiling = min(n_workers, CEILING_WORKERS)
    profile = CEILING_PROFILES["quick" if quick else "full"]
    spec = {"levels": copy_levels(hardware, profile["dram_bytes"]), "time_pi": time_pi,
            "copy_threads": hardware["logical_cpus"], "matmul_n": profile["matmul_n"],
            "reps": math.ceil(profile["ceiling_repeats"] / n_ceiling),
            "cache_reps": math.ceil(profile["cache_repeats"] / n_ceiling)}
    return [spec] * n_ceiling + [None] * (n_workers - n_ceiling)


def time_ceilings(spec, min_time):
    """Every ceiling's repeats, after the samples and calls_at's, unwatched: each level's copy on 1
    thread and, `shared`, all CPUs; DRAM's half copy on all CPUs; pi's matmul unless given."""
    n_cpus, out = spec["copy_threads"], {"copy": {}, "copy_half": {}}
    for name, lv in spec["levels"].items():
        reps = spec["reps"] if name == "DRAM" else spec["cache_reps"]
        buffers = copy_buffers(lv["bytes"])
        out["copy"][name] = {"1thread": copy_rates(buffers, 1, reps, min_time),
                             "all_cpus": copy_rates(buffers, n_cpus, reps, min_time)
                             if n_cpus > 1 and lv["shared"] else None}
        if lv.get("half_bytes"):  # the same buffers' first halves
            halves = [b[:lv["half_bytes"] // 8] for b in buffers]
            out["copy_half"][name] = copy_rates(halves, n_cpus, spec["cache_reps"], min_time)
        buffers = halves = None  # freed before the next level's are made: one at a time
    return {**out, "matmul": matmul_rates(spec["matmul_n"], spec["reps"], min_time)
            if spec["time_pi"] else None}


def rate_estimate(runs, key):
    """A ceiling from its repeats' rates, a list per worker, pooled (assumed independent): as
    `key`, their CEILING_QUANTILE (the fast side: noise assumed only to slow one), its interval."""
    rates = sum(runs, [])
    return {**quantile_estimate(rates, key, CEILING_QUANTILE), "repeats": len(rates)}


def copy_estimate(runs):
    """A level's copy on one thread and, where timed, on all CPUs: the faster is the level's, with
    its own interval (the choice of the faster is not in that interval's coverage)."""
    one = rate_estimate([r["1thread"] for r in runs], "GBps")
    alls = runs[0]["all_cpus"] and rate_estimate([r["all_cpus"] for r in runs], "GBps")
    best = alls if alls and alls["GBps"] > one["GBps"] else one
    return {**best, "GBps_from": "all_cpus" if best is alls else "1thread",
            "GBps_1thread": one["GBps"], "GBps_all_cpus": alls and alls["GBps"]}


def with_ridge(ceilings):
    """The ceilings with the ridge pi / beta (the lab's I_crit) and its range (from intervals)."""
    (b_lo, b_hi), (p_lo, p_hi) = ceilings["beta_peak_interval"], ceilings["pi_peak_interval"]
    return ceilings | {"ridge": ceilings["pi_peak_GFLOPS"] / ceilings["beta_peak_GBps"],
                       "ridge_range": [p_lo / b_hi, p_hi / b_lo]}


def combine_ceilings(counted, workers, spec, given=None):
    """The ceilings, from the counted workers' repeats (all workers' if those have none): each
    level's copy, a plateau (DRAM's two sizes within PLATEAU), small copies slower than larger, a
    level on DRAM's roof (SAME_ROOF); beta, pi (repeats' CEILING_QUANTILE, or Phase 1's); ridge."""
    rates_by_worker = [w["ceiling_rates"] for w in counted if w["ceiling_rates"]] or [
        w["ceiling_rates"] for w in workers if w["ceiling_rates"]]
    levels = {name: {**lv, **copy_estimate([w["copy"][name] for w in rates_by_worker])}
              for name, lv in spec["levels"].items()}
    dram = levels["DRAM"]
    half = rate_estimate([w["copy_half"]["DRAM"] for w in rates_by_worker], "GBps")["GBps"]
    same_threads = dram["GBps_all_cpus"] or dram["GBps_1thread"]  # the half copies on all CPUs
    dram.update(GBps_half=half, plateau=abs(half - same_threads) <= PLATEAU * same_threads)
    beta = given["beta_peak_GBps"] if given else dram["GBps"]  # the DRAM roof drawn and used
    for name, lv in levels.items():
        if name != "DRAM":
            larger = [v["GBps"] for v in levels.values() if v["bytes"] > lv["bytes"]]
            lv["slower_than_larger"] = lv["bytes"] < SMALL_COPY_BYTES and lv["GBps"] < max(larger)
            lv["same_roof_as_DRAM"] = not lv["slower_than_larger"] and \
                lv["GBps"] <= (1 + SAME_ROOF) * beta
    c = dict(source="measured", depends_on=None, copy_threads=spec["copy_threads"], levels=levels)
    if given:  # Phase 1's two numbers in the measured's place: points, of no repeats (pi untimed)
        b, p = given["beta_peak_GBps"], given["pi_peak_GFLOPS"]
        return with_ridge(c | given | dict(beta_peak_interval=[b, b], pi_peak_interval=[p, p])
                          | dict.fromkeys(f"{k}_{f}" for k in ("beta", "pi")
                                          for f in ("repeats", "peak_interval_coverage")))
    pi = rate_estimate([w["matmul"] for w in rates_by_worker], "GFLOPS")
    flops, n_bytes = matmul_cost(n := spec["matmul_n"])
    return with_ridge(c | {
        "beta_peak_GBps": beta, "beta_peak_interval": dram["GBps_interval"],
        "beta_peak_interval_coverage": dram["GBps_interval_coverage"],
        "beta_repeats": dram["repeats"], "pi_peak_GFLOPS": pi["GFLOPS"],
        "pi_peak_interval": pi["GFLOPS_interval"],
        "pi_peak_interval_coverage": pi["GFLOPS_interval_coverage"], "pi_repeats": pi["repeats"],
        "matmul": {"n": n, "intensity": flops / n_bytes}})


# ----------------------------------------------------------------------------------------------
# The workers: each a fresh process (`perf.py --worker`) that only measures, its task worker_job's
# (watched samples, the ops taken apart, ceilings); the parent plans (with the watch's PROFILES) and
# spawns them one after another (--in-process, for tests: runs each job).

HANG_RATIO = 100         # worker_timeout: this many times the sampling a task asks
WORKER_TIMEOUT_S = 900   # worker_timeout: never less than this many seconds
HANG_GFLOPS = 1          # worker_timeout: a sample lasts min_time, or one forward at this rate


def worker_timeout(task):
    """A worker's hang (killed; the run fails): HANG_RATIO x its sampling, >= WORKER_TIMEOUT_S."""
    sample_s = [max(task["min_time"], sum(f for f, _ in op_cost(T, task["d_model"], task[
        "n_heads"]).values()) / (HANG_GFLOPS * 1e9)) for T in task["T_sweep"]]
    return max(WORKER_TIMEOUT_S, HANG_RATIO * task["rounds"] * sum(sample_s))


# The ops taken apart (Block A's calls), timed at each T, each softmax pass beside the same pass on
# rows of S that fit in cache (their mask rows gathered) and a copy of as many bytes (the ceilings'
# copy_buffers): Block E's comparisons of what each costs, never inputs to time_s.

CALL_MIN_TIME = 0.003     # each batch of calls_at's calls lasts this long at least
CALL_REPEATS = 3          # each call's batches, all calls' in turn (by hand); the fastest taken


def calls_at(T, task, mha):
    """At T, on the forward's data: scores whole and its matmul alone; each softmax pass (at_T),
    on as many rows of S as its largest pass's arrays fit in cache_budget_bytes (in_cache:
    assumed to stay there), and as one thread's copy of its bytes (copy); at FOCUS_T, exp in
    cache in float64. Seconds a call: the fastest of CALL_REPEATS batches, calls in turn."""
    x, mask, h = make_input(T, mha, task["seed"]), causal_mask(T), mha.n_heads
    Q, K, S = map(attention_forward(x, mha, mask, intermediates=True).get, "QKS")
    query_bytes = max(array_bytes(T, task["d_model"], 1, PASS_ARRAYS).values()) // T  # one row
    n_queries = min(S.size // T, max(1, task["cache_budget_bytes"] // query_bytes))
    pick = np.linspace(0, S.size // T - 1, n_queries).astype(int)
    S2, mask2 = S.reshape(-1, T)[pick], mask[pick % T]
    (on_T, _), (cache, cache_data) = softmax_pass_calls(S, mask), softmax_pass_calls(S2, mask2)
    n_bytes = array_bytes(T, task["d_model"], task["n_heads"], PASS_ARRAYS)
    src, dst = copy_buffers(max(n_bytes.values()))
    fns = scores_calls(Q, K, h)
    for p, size in n_bytes.items():
        fns.update({(p, "at_T"): on_T[p], (p, "in_cache"): cache[p],
                    (p, "copy"): functools.partial(np.copyto, dst[:size // 8], src[:size // 8])})
    if T == FOCUS_T:
        fns["exp_float64", "in_cache"] = functools.partial(np.exp, cache_data["D"].astype("f8"))
    out = {"in_cache_queries": n_queries}
    for (name, kind), fn in fns.items():  # each once, untimed
        fn()
        out.setdefault(name, {})[kind] = math.inf
    for _, ((name, kind), fn) in itertools.product(range(CALL_REPEATS), fns.items()):  # in turn
        n, batch_s = run_for(fn, CALL_MIN_TIME)
        out[name][kind] = min(out[name][kind], batch_s / n)
    return out


def worker_job(task):
    """A worker's whole job, in a fresh process or (--in-process) here: in measuring's set-up, its
    watched samples, calls_at at its Ts, and last its ceilings if it has them."""
    mha = init_mha(task["d_model"], task["n_heads"], task["seed"])
    with measuring(task) as worker_rec:
        worker_rec |= watched_samples(task, mha)
        worker_rec["apart"] = {str(T): calls_at(T, task, mha) for T in task["call_Ts"]}
        worker_rec["ceiling_rates"] = task["ceiling_spec"] and time_ceilings(task["ceiling_spec"],
                                                                              task["min_time"])
    return {**worker_rec, "label": task["label"]}


def worker_entry():
    """`perf.py --worker`: a task (JSON) on stdin, its result alone on stdout; bad task: exit 2."""
    task = None
    try:
        task = json.loads(sys.stdin.read())
        if not isinstance(task, dict):
            raise ValueError("not a JSON object")
        sys.stdout.write(json.dumps(worker_job(task)))
    except (ValueError, KeyError) as e:  # not a task, or one without a key the job reads: bad
        if isinstance(task, dict) and (isinstance(e, ValueError) or e.args[0] in task):
            raise  # the job's fault (but a key its own dicts lack is named as the task's)
        print(f"perf.py --worker: bad task: {'no ' if isinstance(e, KeyError) else ''}{e}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: leave quietly
        return 130
    return 0


class RunError(Exception):
    """A worker died, hung or wrote no result: one line, exit 1, nothing written."""


def spawn_one(task, in_process, timeout):
    """A task in a fresh `perf.py --worker` (--in-process: here), killed and reaped on any error."""
    if in_process:
        return worker_job(task)
    env = dict(os.environ)
    if task["threads_imposed"]:  # fixed before numpy loads, for every BLAS threadpoolctl may miss
        env.update(dict.fromkeys(THREAD_VARS, str(task["threads_imposed"])))
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        stdout, stderr = proc.communicate(json.dumps(task), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunError(f"{task['label']} gave no result within {timeout:.0f} s") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        last = (stderr.strip().splitlines() or ["no message"])[-1]
        raise RunError(f"{task['label']} failed (exit {proc.returncode}): {last}")
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        raise RunError(f"{task['label']} wrote no result") from None


def make_plan(args, hardware, threads, given):
    """Everything the worker processes will do, fixed before the first starts: the default-heap
    worker, then the workers, "worker 1" on; `given`: Phase 1's ceilings (pi then goes untimed)."""
    prof = args.profile
    per_T = args.samples or prof["samples_per_T"]  # over all the workers
    n_workers = min(args.workers or prof["worker_count"], per_T)
    specs = ceiling_plan(args.quick, hardware, n_workers, time_pi=given is None)
    l2 = specs[0]["levels"].get("L2", {}).get("capacity_bytes") or 256 << 10  # none seen: assumed
    base = {"d_model": args.d_model, "n_heads": args.n_heads, "seed": args.seed, "T_sweep": args.T,
            "min_time": args.min_time, "threads_imposed": threads["imposed"],
            "cache_budget_bytes": l2 // 2}
    dflt_rounds = min(prof["default_heap_samples_per_T"], per_T)
    dflt_task = {**base, **sampling_plan("default", dflt_rounds, 1, None), "call_Ts": [],
                 "label": "default-heap worker", "ceiling_spec": None}
    tasks = [{**base, **sampling_plan("warm", per_T, n_workers, threads["blas_threads"]),
              "ceiling_spec": specs[i], "label": f"worker {i + 1}",
              "call_Ts": [T for j, T in enumerate(args.T) if n_workers == 1 or (j - i) % 2 == 0]}
             for i in range(n_workers)]  # each T's passes timed by every second worker
    return {"tasks": [dflt_task] + tasks, "ceiling_spec": specs[0]}


def spawn_all(plan, in_process):
    """Each task in a fresh worker in turn, the default-heap one first: their results, in order.
    Progress on stderr (stdout: the report, once the files are written)."""
    start, done = time.perf_counter(), []
    say = lambda msg: print(f"[{time.perf_counter() - start:5.1f} s] {msg}", file=sys.stderr)
    for n, task in enumerate(plan["tasks"]):
        say(f"{task['label']} started: {task['rounds']} samples of each T")
        done.append(spawn_one(task, in_process, worker_timeout(task)))
        say(f"{task['label']} done ({n + 1} of {len(plan['tasks'])})")
    return done


# ----------------------------------------------------------------------------------------------
# A run: refused first if it cannot fit; the workers, the canary's word, Blocks B to F, the verdict.

WORKER_BASE_BYTES = 64 << 20  # a worker before its arrays (Python, numpy, BLAS): set by hand


def worker_memory_bytes(Ts, d_model, n_heads, spec):
    """A worker's most memory at once: interpreter, every T's x and mask, and the larger of its
    ceilings and its calls at the largest T (the forward's arrays, a pass's copy, A/2: test_cli)."""
    arr = forward_arrays(max(Ts), d_model, n_heads)
    inputs = sum(forward_arrays(T, d_model, n_heads)[k] for T in Ts for k in ("x", "mask"))
    at_calls = sum(arr.values()) + arr["A"] // 2 \
        + max(array_bytes(max(Ts), d_model, n_heads, PASS_ARRAYS).values())
    ceilings = max(lv["bytes"] for lv in spec["levels"].values()) + matmul_cost(spec["matmul_n"])[1]
    return WORKER_BASE_BYTES + inputs + max(at_calls, ceilings)


def refuse_early(args, plan):
    """Refuse, before measuring, a run the memory cannot hold (naming the largest T that fits) or
    an --out that takes no file."""
    spec, own_rss = plan["ceiling_spec"], psutil.Process().memory_info().rss
    need = lambda Ts: own_rss + worker_memory_bytes(Ts, args.d_model, args.n_heads, spec)  # noqa
    if (needed := need(args.T)) > (available := psutil.virtual_memory().available):
        lo = next((T for T in range(max(args.T) // 64 * 64, 0, -64)  # the largest 64 k that fits
                   if need([t for t in args.T if t < T] + [T]) <= available), 0)
        raise UsageError(f"--T {max(args.T)} needs about {needed / 2**30:.1f} GiB of memory "
                         f"({own_rss / 2**30:.2f} of them this process's); {available / 2**30:.2f} "
                         "GiB are available" + (
                             f": the largest multiple of 64 that fits is T = {lo}" if lo else ""))
    made = []
    try:
        for folder in [*reversed(args.out.parents), args.out]:
            if not folder.exists():
                folder.mkdir()
                made.append(folder)
        tempfile.TemporaryFile(dir=args.out).close()
    except OSError as e:
        raise UsageError(f"--out {args.out}: {e.strerror or e}") from None
    finally:
        for folder in reversed(made):
            folder.rmdir()


def run_config(args, plan, threads):
    """results.json's config: what was asked and what the plan made of it (its tasks)."""
    task1, n_workers = plan["tasks"][1], len(plan["tasks"]) - 1
    return {"d_model": args.d_model, "n_heads": args.n_heads, "T_sweep": args.T,
            "d_head": args.d_model // args.n_heads, "seed": args.seed, "min_time_s": args.min_time,
            "samples_per_T": n_workers * task1["rounds"], "workers": n_workers,
            "quick": args.quick, "blas_threads": threads["blas_threads"]}


def to_json(obj):  # a NaN or an infinity (not JSON) fails the run here, before any file is written
    try:
        return (json.dumps(obj, indent=2, allow_nan=False) + "\n").encode()
    except ValueError as e:
        raise RunError(f"the run made a value JSON cannot hold ({e})") from None


def write_atomically(out_dir, files):
    """Write {name: bytes} into out_dir as one set via a temporary folder; on an exception (Ctrl-C
    too) every earlier file is put back (a kill -9 between two renames can still mix the sets)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    old = {name: (out_dir / name).read_bytes() for name in files if (out_dir / name).exists()}
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".new-") as tmp:
        try:
            for name, data in files.items():
                with open(Path(tmp) / name, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            for name in files:
                os.replace(Path(tmp) / name, out_dir / name)
        except BaseException:
            for name in files:
                if name in old:
                    (out_dir / name).write_bytes(old[name])
                elif (out_dir / name).exists():
                    (out_dir / name).unlink()
            raise


# Out of the code digest, as no committed number comes from them (test_docs): the pictures' code
# (DRAWN; its digest is in each PNG, redrawn by --replot), --compare's and the report's (SAID).
DRAWN = set("COLORS new_figure png_bytes unclutter processes_feeding all_feed unchecked footer "
            "stack_bars plot_perf RING_FIRST RING_STEP RING_NEAR ring_sizes draw_roofs draw_points "
            "plot_roofline".split())
SAID = set("report run_warnings NOISE_FLOOR MACHINE_LIMIT CEILING_LIMIT load_results compare_rows "
           "compare_facts state_signals compare".split())


def code_digest(source, only=None):
    """sha256 of a script's code alone, all but DRAWN's and SAID's (`only`: those alone): its syntax
    tree without docstrings, empty fields left out, top-level statements in any order (no name bound
    twice: test_docs). Comments, docstrings, moved definitions keep it."""
    def dump(node):
        if isinstance(node, list):
            return "[" + ",".join(map(dump, node)) + "]"
        if not isinstance(node, ast.AST):
            return repr(node)
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(
                node, clean=False) is not None:
            node.body = node.body[1:]
        return type(node).__name__ + "(" + ",".join(
            f"{k}={dump(v)}" for k, v in ast.iter_fields(node) if v is not None and v != []) + ")"
    def among(stmt, names):  # a definition or assignment of these names only (else: kept)
        bound = {stmt.name} if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) else {n.id for t in
                 getattr(stmt, "targets", []) for n in ast.walk(t) if isinstance(n, ast.Name)}
        return set() != bound <= names
    tree = ast.parse(source)
    body = tree.body[1:] if ast.get_docstring(tree, clean=False) is not None else tree.body
    body = [n for n in body if among(n, only or DRAWN | SAID) == bool(only)]
    return hashlib.sha256("\n".join(sorted(map(dump, body))).encode()).hexdigest()


STAMP = {"perf_py_drawing_digest": code_digest(Path(__file__).read_text("utf-8"), DRAWN)}  # PNGs'


def provenance(argv):
    """Where a run came from: this file's sha256, its code's digest, the command."""
    here = Path(__file__)
    return {"perf_py_sha256": hashlib.sha256(here.read_bytes()).hexdigest(),
            "perf_py_code_digest": code_digest(here.read_text(encoding="utf-8")),
            "command": " ".join(["python", here.name] + list(argv))}


def results_record(cfg, hardware, threads, blas, spawned, left_out, run_t0, **sections):
    """results.json: config, machine, worker processes (spawned: the default-heap one first), the
    canary's limits and who was left out, `sections` (ceilings, sweeps, analysis, verdict)."""
    return {"experiment": "15-attention-perf", "date": time.strftime("%Y-%m-%d"), "config": cfg,
        "versions": {"python": platform.python_version(), "numpy": np.__version__, "blas": blas,
                     **{m: version(m) for m in ("matplotlib", "threadpoolctl", "psutil")}},
        "hardware": hardware, "threads": threads, "heap": spawned[-1]["heap"],  # the workers' heap
        "environment": {k: os.environ.get(k) for k in THREAD_VARS + ("OPENBLAS_CORETYPE",
                                                                     "OPENBLAS_L2_SIZE")},
        "worker_processes": [{k: w[k] for k in "label started ended sampling_s preempted cpu_s "
                              "blas_threads".split()} for w in spawned],  # the threads it ran
        "canary": {"reference_quantile": REFERENCE_QUANTILE, "sample_kernel": SAMPLE_KERNEL,
                   "sample_slow_ratio": SAMPLE_SLOW, "process_slow_ratio": PROCESS_SLOW,
                   "peer_quantile": PEER_QUANTILE, "both_kernels_slow_ratio": BOTH_KERNELS_SLOW,
                   "set_aside_limit": SET_ASIDE_LIMIT, "left_out": left_out},
        "definitions": DEFINITIONS, "estimators": {"process_quantile": PROCESS_QUANTILE,
            "ceiling_quantile": CEILING_QUANTILE, "confidence": CONFIDENCE}, **sections,
        "run_wall_s": time.perf_counter() - run_t0}  # the pictures and files not included


def run_lab(args, argv):
    """A run, step by step in the order the data flows (Blocks B to F, the harness around)."""
    run_t0, hardware = time.perf_counter(), machine_facts(cpufreq_settings())
    threads, blas = thread_record(args.threads, hardware)
    given = read_ceilings(args.roofline)
    plan = make_plan(args, hardware, threads, given)
    refuse_early(args, plan)
    with machine_watched(args.in_process) as span:  # the verdict's span: every worker's life
        dflt, *workers = span["spawned"] = spawn_all(plan, args.in_process)  # Block B's, more
    hardware["cpufreq_at_end"] = cpufreq_settings()
    left_out, counted = judge_processes(dflt, workers)  # the canary's word on each
    rows, default_rows = pool_sweep(args.T, counted, dflt)  # Block B
    windows = threading_windows(args.T, counted, kept=lambda sample: not set_aside(sample))
    ceilings = combine_ceilings(counted, workers, plan["ceiling_spec"], given)
    for r in rows:  # Block D
        place_on_roofline(r, args.d_model, args.n_heads, ceilings)
    cfg = run_config(args, plan, threads)
    analysis = analyse(rows, cfg, ceilings, counted, windows)  # Block E
    cond = judge_run(span["load"], span["own_cpu_s"], hardware, threads, span["spawned"], counted,
                     left_out, rows)
    cond["findings"] = {"threads_cooperate": cooperation_finding(windows, threads["blas_threads"])}
    results = results_record(cfg, hardware, threads, blas, span["spawned"], left_out, run_t0,
                             ceilings=ceilings, sweep=rows, sweep_default_heap=default_rows,
                             analysis=analysis, conditions=cond)
    files = {"results.json": to_json(results), "perf.png": png_bytes(plot_perf(results), STAMP),
             "manifest.json": to_json({**make_manifest(results), **provenance(argv)}),
             "roofline.png": png_bytes(plot_roofline(results), STAMP)}
    write_atomically(args.out, files)
    return results


# ----------------------------------------------------------------------------------------------
# --compare A B: measures nothing. A the baseline (say, the committed run), B the new run: first
# whether the two machines were in the same state, then per op and T whether B is faster, slower
# or the same against both runs' own noise; main turns a key a results.json lacks into one line.

NOISE_FLOOR = 1.05        # --compare: the narrowest band inside which two times are the same
MACHINE_LIMIT = 1.25      # --compare: a machine fact (a copy, beta, one thread's av) this far apart
CEILING_LIMIT = 1.10      # --compare: pi or the ridge this much apart: the runs' stories differ


def load_results(arg):
    """A results.json of this lab (or its folder), else a UsageError (a key it lacks: main's)."""
    path = Path(arg, "results.json") if Path(arg).is_dir() else Path(arg)
    try:
        res = json.loads(path.read_text())
        if res["experiment"] != "15-attention-perf" or not res["sweep"]:
            raise ValueError("not this lab's run")
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError, IndexError):
        raise UsageError(f"{path} is not a results.json written by this perf.py") from None
    return path, res


def compare_rows(a, b, Ts):
    """Per op and T: both time_s, B/A, the share's change; "same" unless B/A leaves [1/band, band],
    band >= NOISE_FLOOR: the noisier run's spread of its process estimates (2nd to 2nd from 5)."""
    noise = lambda est: est[-2] / est[1] if len(est) >= 5 else est[-1] / est[0]  # noqa: E731
    rows = []
    for T, op in itertools.product(Ts, OPS):
        oa, ob = (entry_at(res["sweep"], T)["ops"][op] for res in (a, b))
        band = max(NOISE_FLOOR, *(noise(sorted(o["process_estimates"])) for o in (oa, ob)))
        ratio = ob["time_s"] / oa["time_s"]
        rows.append({"T": T, "op": op, "a_s": oa["time_s"], "b_s": ob["time_s"],
                     "ratio": ratio, "share_pp": 100 * (ob["time_share"] - oa["time_share"]),
                     "noise_band": band, "change": "slower" if ratio > band else
                     "faster" if ratio < 1 / band else "same"})
    return rows


def compare_facts(a, b, T):
    """The runs' stories side by side: each fact's A and B, whether they differ (numbers: over
    `limit` times apart), why (a machine fact: as taken; av's move with av's code too)."""
    window = lambda r: entry_at(r["analysis"]["threading_windows"], T)  # noqa: E731
    facts = [  # (fact, how it is read, a machine fact?, a ratio limit, why it differs)
        ("cpu", lambda r: "{} ({}, family {}, model {})".format(*map(r["hardware"].get, (
            "cpu_model", "vendor", "family", "model"))), True, None, None),
        ("numpy's SIMD targets", lambda r: " ".join(
            r["hardware"].get("numpy_dispatch_supported", [])),
         True, None, "numpy may dispatch other kernels (exp's among them) on the two CPUs"),
        ("physical cores", lambda r: r["hardware"]["physical_cores"], True, None, None),
        ("BLAS threads", lambda r: r["threads"]["blas_threads"], True, None, None),
        ("heap", lambda r: r["heap"]["mode"], False, None, None),
        ("run conditions", lambda r: r["conditions"]["verdict"], False, None, None),
        (f"threads over one thread ({THREADS_OP})", lambda r: (w := window(r)) and
         w["threads_over_one"][THREADS_OP], True, MACHINE_LIMIT, None),
        (f"one thread, {THREADS_OP} at T={T} (ms)", lambda r: (w := window(r)) and
         1e3 * w["one_thread_s"][THREADS_OP], True, MACHINE_LIMIT, None),
        ("DRAM copy, one thread (GB/s)", lambda r: r["ceilings"]["levels"]["DRAM"]["GBps_1thread"],
         True, MACHINE_LIMIT, None),
        ("beta (GB/s)", lambda r: r["ceilings"]["beta_peak_GBps"], True, MACHINE_LIMIT, None),
        ("pi (GFLOPS)", lambda r: r["ceilings"]["pi_peak_GFLOPS"], True, CEILING_LIMIT, None),
        ("ridge (FLOP/byte)", lambda r: r["ceilings"]["ridge"], False, CEILING_LIMIT, None)]
    facts += [(f"dominant op at T={t}", lambda r, t=t: r["analysis"]["dominant_op_per_T"].get(
        str(t)), False, None, None) for t in (x["T"] for x in a["sweep"]) if t <= T]
    facts += [(f"{op}, class per T", lambda r, op=op: " ".join(
        f"{x['T']}:{x['ops'][op]['dram_bound']}" for x in r["sweep"] if x["T"] <= T), False, None,
        "the ridge's range is {:.2f}-{:.2f} in A and {:.2f}-{:.2f} in B".format(
            *a["ceilings"]["ridge_range"], *b["ceilings"]["ridge_range"])) for op in OPS]
    out = []
    for fact, get, machine_fact, limit, why in facts:
        va, vb = get(a), get(b)
        differs = va != vb if limit is None else bool(va and vb and max(va / vb, vb / va) > limit)
        if differs and limit and not why:
            why = f"{vb / va:.2f}x in B" + (": the machine's, unless the code it times changed"
                                             if machine_fact else "")
        out.append({"fact": fact, "a": va, "b": vb, "differs": differs,
                    "machine_fact": machine_fact, "why": why if differs else None})
    return out


def state_signals(a, b, facts):
    """What says the two machines differed: the machine facts that differ (av's move with av's code
    too), each disturbed run's reasons. []: none says so (the differences may be the code's)."""
    v = lambda x: f"{x:.2f}" if isinstance(x, float) else x  # noqa: E731
    return [f"{f['fact']}: {v(f['a'])} in A, {v(f['b'])} in B" for f in facts
            if f["machine_fact"] and f["differs"]] + [
        f"{name} was disturbed: " + "; ".join(f["reason"] for f in r["conditions"]["failed"])
        for name, r in (("A", a), ("B", b)) if r["conditions"]["verdict"] == "disturbed"]


def compare(arg_a, arg_b, out):
    """--compare: rows, facts and state signals into compare.json (in out, else B's folder)."""
    (pa, a), (pb, b) = load_results(arg_a), load_results(arg_b)
    for key in ("d_model", "n_heads"):
        if a["config"][key] != b["config"][key]:
            raise UsageError(f"the runs differ in {key} ({a['config'][key]} vs "
                             f"{b['config'][key]}): nothing to compare")
    Ta, Tb = ({r["T"] for r in res["sweep"]} for res in (a, b))
    if not (Ts := sorted(Ta & Tb)):
        raise UsageError(f"the runs share no T ({sorted(Ta)} vs {sorted(Tb)})")
    facts = compare_facts(a, b, Ts[-1])
    signals = state_signals(a, b, facts)
    cmp = {"a": str(pa), "b": str(pb), "T": Ts, "same_state": not signals,
           "state_signals": signals, "rows": compare_rows(a, b, Ts),
           "T_not_shared": {"a_only": sorted(Ta - Tb), "b_only": sorted(Tb - Ta)}, "story": facts}
    write_atomically(out or pb.parent, {"compare.json": to_json(cmp)})
    print(f"A = {cmp['a']}\nB = {cmp['b']}\n\n" + ("no machine fact compared (the story's) "
          "differs: the differences below may be the code's, or noise" if cmp["same_state"] else
          "machine facts or run conditions differed, so the differences below may not be the "
          "code's alone (a fact the changed code times moves with it): " +
          "; ".join(cmp["state_signals"])))
    print(f"\n{'T':>5} {'op':<9} {'A ms':>9} {'B ms':>9} {'B/A':>6} {'share pp':>9}  change")
    for r in cmp["rows"]:
        print(f"{r['T']:>5} {r['op']:<9} {r['a_s'] * 1e3:9.3f} {r['b_s'] * 1e3:9.3f} "
              f"{r['ratio']:6.2f} {r['share_pp']:+9.1f}  {r['change']}")
    if (unshared := cmp["T_not_shared"])["a_only"] or unshared["b_only"]:
        print(f"\nnot compared: T={unshared['a_only']} only in A, T={unshared['b_only']} only in B")
    print("\n  fact: A | B   (* the two runs tell a different story here)")
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
    for f in facts:
        print(f"{'*' if f['differs'] else ' '} {f['fact']}: {fmt(f['a'])} | {fmt(f['b'])}"
              + (f"  <- {f['why']}" if f["why"] else ""))
    print(f"\nwrote compare.json to {out or pb.parent}")


# ----------------------------------------------------------------------------------------------
# The command line: parsing touches nothing; report prints a run's end; main dispatches.

class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, instead of argparse's usage dump
        raise UsageError(message)


def parse_args(argv):
    p = Parser(prog="perf.py", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--T", type=int, nargs="+", default=list(T_SWEEP), help="sequence lengths")
    for flag, default in (("--d-model", 64), ("--n-heads", 4), ("--seed", 0)):
        add(flag, type=int, default=default)
    full = PROFILES["full"]
    add("--min-time", type=float, help="seconds of work in each sample and each ceiling "
        f"repeat, at least (default {full['min_time']:g})")
    add("--samples", type=int, help="samples per T over all workers, rounded "
        f"up to a multiple of --workers (default {full['samples_per_T']})")
    add("--workers", type=int, help="worker processes besides the default-heap one, one at a "
        f"time, at most --samples (default {full['worker_count']})")
    add("--in-process", action="store_true", help="measure in this process (debugging, tests)")
    add("--threads", type=int, help="BLAS threads (default: OMP_NUM_THREADS or another of "
        f"{', '.join(THREAD_VARS[1:])}, else one per physical core)")
    add("--out", type=Path, help="output folder (default: this one; --compare: B's)")
    add("--roofline", type=Path, help="Phase 1 manifest: beta_peak_GBps, pi_peak_GFLOPS")
    add("--quick", action="store_true", help="a smoke test of a few seconds, not a measurement")
    add("--replot", action="store_true", help="only redraw both PNGs from --out's results.json")
    add("--compare", nargs=2, metavar=("A", "B"), help="B against the baseline A (results.json "
        "or folders): writes compare.json")
    args = p.parse_args(argv)
    if bad := [f"--{k.replace('_', '-')} {x}" for k, v in vars(args).items() for x in (
            v if k == "T" else [v]) if type(x) in (int, float) and not (
            math.isfinite(x) and (x >= 0 if k == "seed" else x > 0))]:  # finite, > 0; seed >= 0
        p.error(f"{bad[0]}: must be a finite number > 0 (the seed >= 0)")
    if args.d_model % args.n_heads:
        p.error(f"--n-heads {args.n_heads} does not divide --d-model {args.d_model}")
    args.profile = PROFILES["quick" if args.quick else "full"]  # the run's profile
    args.min_time = args.min_time or args.profile["min_time"]
    args.T = sorted(set(args.T))
    args.out = args.out or (None if args.compare else HERE)
    return args


def report(results, out):
    """A run's end: its files, what to know before trusting it, its numbers, its --compare line."""
    print(f"\nwrote results.json, manifest.json, perf.png, roofline.png to {out}")
    warn = run_warnings(results) + [f"disturbed run: {f['reason']}\n  what to do: {f['remedy']}"
                                    for f in results["conditions"]["failed"]]
    found = results["conditions"]["findings"]
    notes = [f"{k} left out: {v['canary_kernel']} canary x{v['ratio']:.1f} the others' fast side; "
             f"figures from {processes_feeding(results)} of {results['config']['workers']}"
             for k, v in results["canary"]["left_out"].items()]
    unknown = results["hardware"]["unavailable"]  # what this platform cannot tell, and why
    notes += [f"not known here: {k}: {why}" for k, why in unknown.items()]
    if found["threads_cooperate"]["holds"] is False:
        notes.append(f"threads: {found['threads_cooperate']['finding']}\n  "
                     f"{found['threads_cooperate']['advice']}")
    print("".join(f"warning: {ln}\n" for ln in warn) + "".join(f"note: {ln}\n" for ln in notes)
          + f"\n{'T':>5} " + " ".join(
        f"{k:>9}" for k in OPS) + f" {'forward':>9}  ms (time_s) {'timers':>7} {'faults/fw':>9} "
        f"{'default heap':>13}   set aside (canary, median ratio)")
    for r, default_row in zip(results["sweep"], results["sweep_default_heap"]):
        faults, default_ms = r["page_faults_per_forward"], default_row["forward_s"] * 1e3
        print(f"{r['T']:>5} " + " ".join(f"{r['ops'][k]['time_s'] * 1e3:9.3f}" for k in OPS)
              + f" {r['forward_s'] * 1e3:9.3f} {'':12} {r['timer_overhead']:7.2%} "
              f"{'n/a' if faults is None else f'{faults:.1f}':>9} {default_ms:10.3f}"
              f" ms   {r['samples_set_aside']}/{r['sample_count']}" + (
                  f" (x{r['set_aside_median_ratio']:.2f})" if r["samples_set_aside"] else ""))
    print(f"time_s: {DEFINITIONS['time_s']}; its interval: {DEFINITIONS['time_s_interval']}")
    c = results["ceilings"]
    print(f"\nroofline ({c['source']}): beta {c['beta_peak_GBps']:.1f} GB/s, "
          f"pi {c['pi_peak_GFLOPS']:.1f} GFLOPS, ridge {c['ridge']:.2f} FLOP/byte; "
          f"run conditions: {results['conditions']['verdict']}{unchecked(results['conditions'])}")
    if out.resolve() != HERE and (HERE / "results.json").is_file():  # the committed run's folder
        here = Path.cwd().resolve()
        perf, committed, new = [p.relative_to(here) if p.is_relative_to(here) else p for p in (
            Path(__file__).resolve(), HERE / "results.json", out.resolve())]
        print("\nto set this run beside the committed one:\n"
              f"  python {perf} --compare {committed} {new}")


def main(argv=None):
    """A worker's task, --compare, --replot or a run; bad input or a failed run: one line."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--worker"]:  # a worker process of a run: task on stdin, result on stdout
        return worker_entry()
    try:
        args = parse_args(argv)
        if args.compare or args.replot:
            try:
                if args.compare:
                    compare(*args.compare, args.out)
                else:
                    res = load_results(args.out)[1]
                    write_atomically(args.out, {f: png_bytes(plot(res), STAMP) for f, plot in (
                        ("perf.png", plot_perf), ("roofline.png", plot_roofline))})
                    print(f"wrote perf.png, roofline.png to {args.out}")
            except (KeyError, TypeError, IndexError, ValueError, AttributeError) as e:
                raise UsageError("this perf.py could not read what it needs from a results.json "
                                 f"({type(e).__name__}: {e}): one of another perf.py's, or a "
                                 "fault of this one; nothing written") from None
        else:
            report(run_lab(args, argv), args.out)
        return 0
    except UsageError as e:
        message, code = f"error: {e}", 2
    except RunError as e:
        message, code = f"error: {e}; nothing written", 1
    except BrokenPipeError:  # the reader left (`| head`): stdout's first line follows the write
        raise
    except OSError as e:
        message, code = f"error: cannot write {e.filename or 'output'}: {e.strerror or e}", 2
    except KeyboardInterrupt:
        message, code = "interrupted; earlier results left as they were", 130
    print(f"perf.py: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    # A kill (SIGTERM) ends a run as Ctrl-C does: the worker is killed and reaped, nothing left.
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # it raises KeyboardInterrupt
    try:
        sys.exit(main())
    except BrokenPipeError:  # `perf.py | head`: the reader left early; the files are written
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
