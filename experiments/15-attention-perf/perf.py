"""Lab 03 of Phase 15: where the time of a naive numpy attention forward goes.

Measures a naive multi-head scaled-dot-product attention op by op for T = 64, 128, 256, 512,
places every op on this machine's roofline and writes, beside this script:

    results.json   per-op times for every T, the roofline numbers and the analysis
    manifest.json  the lab's Block F manifest, with the machine as detected
    perf.png       stacked bars: where each forward's time goes (Block C)
    roofline.png   each op on the roofline (Block D)

Run:    OMP_NUM_THREADS=4 python perf.py          (the lab's laptop: 4 real cores)
        python perf.py --threads 2 --out DIR      (BLAS threads, write elsewhere)
        python perf.py --quick                    (a few seconds, tiny protocol: smoke test only)
        python perf.py --replot                   (redraw both PNGs from results.json)
        python perf.py --compare A B              (B against the baseline A: compare.json/.png)

The code under measurement is deliberately naive (the lab forbids tuning it: that is Phase 27).
The measurement is not: warm runs, calibrated samples of >= --min-time each, taken by several
fresh worker processes (this script re-run as `perf.py --worker`) in rounds that interleave the
T values, instrumentation overhead checked against untimed forwards, page faults counted, the
run conditions judged, and roofline ceilings per memory level measured in the same time window
unless Phase 1's manifest provides them. The script reads top to bottom in the order of the
lab's Blocks A to F; the comparison of two runs and the command line come last.
"""

import argparse
import ctypes
import datetime
import gc
import hashlib
import io
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np
import psutil
from threadpoolctl import threadpool_info, threadpool_limits

try:
    import resource  # Unix: page faults from getrusage
except ImportError:  # Windows: psutil counts them
    resource = None

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PHASE1_MANIFEST = "experiments/01-roofline/manifest.json"  # the lab's depends_on, relative to REPO
OPS = ("qkv_proj", "scores", "softmax", "av", "out_proj")
KEYS = OPS + ("total",)
T_SWEEP = (64, 128, 256, 512)


class UsageError(Exception):
    """Bad input: reported as one line, exit status 2, nothing written."""


# ----------------------------------------------------------------------------------------------
# Block A: the naive multi-head attention, and the same forward with a timer around each op.
# Heads are a leading batch axis (h, T, d_k) and numpy's batched matmul runs them: naive (no
# fusing, no out= buffers, A fully materialised), and it keeps the per-op timers down to six.
# Notation as in the lab: d = d_model, h = n_heads, d_k = d / h, fp32 = 4 bytes.

@dataclass(frozen=True)
class MHA:
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    n_heads: int


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


def split_heads(X, h):
    """(T, d) -> (h, T, d_k). A view: no bytes move, so it costs nothing wherever it is timed."""
    T, d = X.shape
    return X.reshape(T, h, d // h).transpose(1, 0, 2)


def qkv_proj(x, mha):
    # op 1: Q = x W_Q, K = x W_K, V = x W_V.  Each 2 T d^2 FLOPs over 4Td + 4d^2 bytes.
    return x @ mha.W_Q, x @ mha.W_K, x @ mha.W_V


def scores(Q, K, h):
    # op 2: S = Q K^T / sqrt(d_k), per head.  2 T^2 d_k FLOPs over 8 T d_k + 4 T^2 bytes per head.
    # K^T is a free view; the matmul writes a fresh (h, T, T) buffer, and the scaling is one more
    # pass over it. math.sqrt gives a Python float, which numpy treats as weak: S stays float32
    # (np.sqrt(d_k) would be a float64 scalar and, under NumPy 2, promote all of S to float64).
    d_k = Q.shape[1] // h
    return split_heads(Q, h) @ split_heads(K, h).transpose(0, 2, 1) / math.sqrt(d_k)


def softmax(S, mask):
    # op 3: A = softmax(S + mask), row-wise.  ~5 T^2 FLOPs over 8 T^2 bytes per head (the lab's
    # count: S read once, A written once). Naive numpy makes six passes, each a new temporary.
    Z = S + mask
    m = Z.max(axis=-1, keepdims=True)
    E = np.exp(Z - m)
    return E / E.sum(axis=-1, keepdims=True)


def av(A, V, h):
    # op 4: out_h = A V_h.  Same form as scores: 2 T^2 d_k FLOPs over 8 T d_k + 4 T^2 bytes a head.
    return A @ split_heads(V, h)


def out_proj(O, mha):
    # op 5: out = concat(out_h) W_O.  2 T d^2 FLOPs over 4Td + 4d^2 bytes. The concat is a copy.
    h, T, d_k = O.shape
    return O.transpose(1, 0, 2).reshape(T, h * d_k) @ mha.W_O


def attention_forward(x, mha, mask=None):
    """Causal multi-head attention of x (T, d_model) float32 -> (T, d_model) float32."""
    mask = causal_mask(len(x)) if mask is None else mask
    Q, K, V = qkv_proj(x, mha)
    S = scores(Q, K, mha.n_heads)
    A = softmax(S, mask)
    O = av(A, V, mha.n_heads)
    return out_proj(O, mha)


def attention_forward_timed(x, mha, mask=None, return_output=False):
    """attention_forward with time.perf_counter_ns() around each op: seconds per op, one forward.

    numpy is eager, so each op's result exists when its call returns and the stop time is honest.
    The mask is built outside the timed region; "total" spans the five ops back to back.
    """
    mask = causal_mask(len(x)) if mask is None else mask
    clock = time.perf_counter_ns
    t0 = clock()
    Q, K, V = qkv_proj(x, mha)
    t1 = clock()
    S = scores(Q, K, mha.n_heads)
    t2 = clock()
    A = softmax(S, mask)
    t3 = clock()
    O = av(A, V, mha.n_heads)
    t4 = clock()
    out = out_proj(O, mha)
    t5 = clock()
    times = {"qkv_proj": (t1 - t0) * 1e-9, "scores": (t2 - t1) * 1e-9,
             "softmax": (t3 - t2) * 1e-9, "av": (t4 - t3) * 1e-9,
             "out_proj": (t5 - t4) * 1e-9, "total": (t5 - t0) * 1e-9}
    return (times, out) if return_output else times


def working_set(T, d_model, n_heads):
    """Bytes of the distinct fp32 arrays each op reads or writes as naive numpy runs it (its
    footprint, not its traffic): what has to fit in a cache for the op to work from it."""
    d, h = d_model, n_heads
    return {
        "qkv_proj": 4 * (T * d + 3 * d * d + 3 * T * d),  # x, W_Q, W_K, W_V, Q, K, V
        "scores": 4 * (2 * T * d + 2 * h * T * T),        # Q, K, Q K^T, S = that / sqrt(d_k)
        "softmax": 4 * (5 * h * T * T + T * T),           # S, Z = S + mask, Z - m, E, A; mask
        "av": 4 * (h * T * T + 2 * T * d),                # A, V, out_h
        "out_proj": 4 * (3 * T * d + d * d),              # out_h, its concat copy, out; W_O
    }


def op_cost(T, d_model, n_heads):
    """(FLOPs, bytes) of each whole op (all projections, all heads): the lab's Block D formulas."""
    d, h = d_model, n_heads
    d_k = d // h
    return {
        "qkv_proj": (3 * 2 * T * d**2, 3 * (4 * T * d + 4 * d**2)),   # I = T d / (2T + 2d)
        "scores": (h * 2 * T**2 * d_k, h * (8 * T * d_k + 4 * T**2)),  # I = T d_k / (4 d_k + 2T)
        "softmax": (h * 5 * T**2, h * 8 * T**2),                       # I = 5/8 ~ 0.6
        "av": (h * 2 * T**2 * d_k, h * (8 * T * d_k + 4 * T**2)),      # same form as scores
        "out_proj": (2 * T * d**2, 4 * T * d + 4 * d**2),              # same form as qkv_proj
    }


# ----------------------------------------------------------------------------------------------
# The measurement protocol (Blocks A and B): warm, calibrated, gc off, samples from several fresh
# worker processes, interleaved in time, and a headline that says what the code costs.

def page_faults():
    """Page faults of this process so far, or None where the OS does not count them."""
    if resource is not None:  # Linux, macOS: minor faults, the ones a reused heap avoids
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    mem = psutil.Process().memory_info()  # Windows counts every fault, soft or hard
    return getattr(mem, "num_page_faults", None)


def glibc_malloc():
    """glibc's mallopt, or None on a platform whose C library is not glibc."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None


def keep_heap():
    """Stop glibc from handing the forward's large temporaries back to the kernel.

    By default a block over the mmap threshold (128 KiB, then raised dynamically, at most
    32 MiB) is mmap'ed and unmapped on free, and the heap top is trimmed past M_TRIM_THRESHOLD:
    every forward then page-faults its T x T temporaries back in (thousands of faults per forward
    at T = 512). No mmap at all and no trimming keep the pages mapped, at every T (a threshold
    alone stops at 32 MiB, and the (h, T, T) arrays pass it at T = 2048): the warm run the lab
    asks for. This changes the process's allocator, not the code under measurement.
    """
    mallopt = glibc_malloc()
    if mallopt is None:
        return {"mode": "default", "control": "unavailable (not glibc): default allocator kept"}
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
    ok = mallopt(M_MMAP_MAX, 0) == 1 and mallopt(M_TRIM_THRESHOLD, 2**30) == 1
    if not ok:
        return {"mode": "default", "control": "mallopt refused: default allocator kept"}
    return {"mode": "warm", "control": f"glibc mallopt M_MMAP_MAX=0 M_TRIM_THRESHOLD={2**30}"}


def batch_seconds(fn, n):
    """Wall-clock seconds of n back-to-back calls of fn."""
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - t0) * 1e-9


def calibrate(fn, min_time):
    """Calls of fn per sample so that one sample aggregates >= min_time (timeit.autorange's idea,
    aimed at min_time). Sized on the fastest of three trial batches, with a 5% margin, so that a
    sample falls short of min_time only if the machine later runs faster than it ever did here."""
    n = 1
    while (dt := batch_seconds(fn, n)) < min_time / 4:
        n *= 2
    dt = min(dt, batch_seconds(fn, n), batch_seconds(fn, n))
    return max(1, math.ceil(n * 1.05 * min_time / dt))


SLOW = 1.25  # a sample this much above the headline is a slow sample (see summarize)


def summarize(samples, workers=None):
    """The statistics stored for each op at one T.

    time_s, the headline, is the 25th percentile of all samples. Interference on a shared machine
    only ever adds time, and here it comes in episodes of seconds, in some of which the two-thread
    BLAS ops run twice as slow (the README's slow windows): the plain median moves with how
    much of the run such an episode covered, the 25th percentile does not until three quarters of
    the samples are slow, and unlike the minimum it is not one lucky sample. The median stays
    beside it; slow_fraction and environment_tax say what the episodes cost.
    workers: the samples of each worker process, for the between-worker spread of their medians.
    """
    a = np.asarray(samples, dtype=np.float64)
    p25, med, p75 = np.percentile(a, [25, 50, 75])
    out = {"time_s": float(p25), "mean_s": float(a.mean()),
           "std_s": float(a.std(ddof=1)) if a.size > 1 else 0.0,
           "median_s": float(med), "p25_s": float(p25), "p75_s": float(p75),
           "min_s": float(a.min()), "iqr_over_median": float((p75 - p25) / med) if med else 0.0,
           "slow_fraction": float(np.mean(a > SLOW * p25)),
           "environment_tax": float(med / p25 - 1) if p25 else 0.0}
    if workers:
        meds = [float(np.median(w)) for w in workers if len(w)]
        p25s = [float(np.percentile(w, 25)) for w in workers if len(w)]
        out.update(worker_medians=meds, worker_spread=max(meds) / min(meds),
                   worker_times=p25s, worker_time_spread=max(p25s) / min(p25s))
    return out


def make_input(T, mha, seed):
    """x (T, d_model) float32, the same for a given (seed, T) in every process of the run."""
    d_model = mha.W_Q.shape[0]
    return np.random.default_rng([seed, T]).standard_normal((T, d_model)).astype(np.float32)


def median_ci95(a):
    """Distribution-free 95% interval of the median: the order statistics n/2 -+ 1.96 sqrt(n)/2."""
    a = np.sort(np.asarray(a, dtype=np.float64))
    half = 1.96 * math.sqrt(len(a)) / 2
    lo, hi = max(0, math.floor(len(a) / 2 - half)), min(len(a) - 1, math.ceil(len(a) / 2 + half))
    return [float(a[lo]), float(a[hi])]


def measure(task):
    """One worker's share of the sweep: `rounds` rounds, each one sample of every T.

    A sample runs attention_forward_timed n times (n calibrated, by the first worker, so that a
    sample is >= min_time) and stores, per op, the sum over the n forwards / n. The T order
    rotates from round to round, so a slow episode of the machine lands on every T alike; without
    `interleave` (the default-heap worker) each T is warmed up, calibrated and sampled in turn, T
    ascending, as a process that has freed nothing larger would see it. After each sample, a
    pair of short batches, timed and untimed forwards in alternating order, measures what the six
    timers cost. In `one_thread_rounds` the same sample is repeated at once with one BLAS thread:
    the same time window with and without BLAS threading.
    """
    mha = init_mha(task["d_model"], task["n_heads"], task["seed"])
    Ts = task["T"]
    inputs, loops = {}, {}

    def prepare(T):  # input, warm-up (first-touch faults, BLAS threads), forwards per sample
        inputs[T] = x, mask = make_input(T, mha, task["seed"]), causal_mask(T)
        attention_forward(x, mha, mask)
        loops[T] = task["loops"][str(T)] if task["loops"] else \
            calibrate(lambda: attention_forward_timed(x, mha, mask), task["min_time"])
    if task["interleave"]:
        for T in Ts:
            prepare(T)
        schedule = [(r, T) for r in range(task["rounds"])
                    for T in Ts[r % len(Ts):] + Ts[:r % len(Ts)]]
    else:
        schedule = [(r, T) for T in Ts for r in range(task["rounds"])]
    res = {str(T): {**{k: [] for k in KEYS}, "wall": [], "pairs": [],
                    "one_thread": {k: [] for k in KEYS}, "one_thread_after": []} for T in Ts}
    faults = dict.fromkeys(Ts, 0)
    proc = psutil.Process()
    ctx0, start = proc.num_ctx_switches().involuntary, time.time()
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        for r, T in schedule:
            if T not in loops:
                prepare(T)
            x, mask, n, out = *inputs[T], loops[T], res[str(T)]
            f0 = page_faults()
            w0 = time.perf_counter_ns()
            runs = [attention_forward_timed(x, mha, mask) for _ in range(n)]
            w1 = time.perf_counter_ns()
            if f0 is not None:
                faults[T] += page_faults() - f0
            out["wall"].append((w1 - w0) * 1e-9 / n)
            for k in KEYS:
                out[k].append(math.fsum(run[k] for run in runs) / n)
            if task["pairs"]:
                m = max(1, n // 24)
                timed = lambda: batch_seconds(lambda: attention_forward_timed(x, mha, mask), m)  # noqa: E731
                plain = lambda: batch_seconds(lambda: attention_forward(x, mha, mask), m)  # noqa: E731
                a, b = (timed(), plain()) if r % 2 else (plain(), timed())[::-1]
                out["pairs"].append(a / b)
            if r in task["one_thread_rounds"]:  # half a sample: a ratio, not a headline
                with threadpool_limits(1, user_api="blas"):
                    runs = [attention_forward_timed(x, mha, mask) for _ in range(max(1, n // 2))]
                for k in KEYS:
                    out["one_thread"][k].append(math.fsum(run[k] for run in runs) / len(runs))
                out["one_thread_after"].append(len(out["wall"]) - 1)
    finally:
        if gc_was_on:
            gc.enable()
    samples = task["rounds"] * len(Ts)
    for T in Ts:
        res[str(T)]["n"] = loops[T]
        res[str(T)]["faults_per_forward"] = (None if page_faults() is None else
                                             faults[T] / (task["rounds"] * loops[T]))
    ceilings = measure_ceilings(task["ceilings"]) if task.get("ceilings") else None
    return {"samples": res, "ceilings": ceilings, "started": start, "ended": time.time(),
            "pid": os.getpid(), "peak_rss_MiB": peak_rss_MiB(),
            "involuntary_switches_per_sample": (proc.num_ctx_switches().involuntary - ctx0)
            / samples}


def peak_rss_MiB():
    """This process's peak resident memory, or None where resource is missing (Windows)."""
    if resource is None:
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if platform.system() == "Darwin" else rss / 2**10  # bytes vs KiB


def worker_main():
    """`perf.py --worker`: read one task (JSON) on stdin, measure, write the result on stdout.
    stdout carries nothing else; a fresh process samples what a process's state does to speed."""
    try:
        task = json.loads(sys.stdin.read())
        heap = keep_heap() if task["heap"] == "warm" else {"mode": "default",
                                                             "control": "the allocator's defaults"}
        with threadpool_limits(task["threads_limit"], user_api="blas"):
            out = measure(task)
        out["heap"] = heap
        out["cpu_s"] = time.process_time()  # all of this process's CPU, start-up included
        sys.stdout.write(json.dumps(out))
        return 0
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: leave quietly
        return 130


class RunError(Exception):
    """A worker died or hung: one line, exit 1, nothing written."""


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")


def run_task(task, in_process, timeout):
    """Run one task in a fresh `perf.py --worker` process (or here, with --in-process) and return
    its result. On any exception, Ctrl-C included, the worker is killed and reaped first."""
    if in_process:
        return measure(task)
    env = dict(os.environ)
    if task["threads_limit"]:  # fixed before numpy loads, for every BLAS threadpoolctl may miss
        env.update(dict.fromkeys(THREAD_VARS, str(task["threads_limit"])))
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        out, err = proc.communicate(json.dumps(task), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunError(f"worker {task['label']} gave no result within {timeout:.0f} s") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        last = (err.strip().splitlines() or ["no message"])[-1]
        raise RunError(f"worker {task['label']} failed (exit {proc.returncode}): {last}")
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        raise RunError(f"worker {task['label']} wrote no result") from None


def merge(results, Ts):
    """The workers' samples of each T, pooled, with each worker's own for the spread."""
    merged = {}
    for T in Ts:
        parts = [w["samples"][str(T)] for w in results]
        merged[T] = {"parts": parts, **{k: sum((p[k] for p in parts), []) for k in
                                        KEYS + ("wall", "pairs")}}
    return merged


def profile_row(T, m, min_time):
    """One row of the sweep from the pooled samples of one T."""
    parts, wall = m["parts"], np.array(m["wall"])
    n = parts[0]["n"]
    sum_ops = sum(np.array(m[op]) for op in OPS)
    faults = [p["faults_per_forward"] for p in parts]
    row = {
        "T": T, "n_inner": n, "repeats": len(wall), "workers": len(parts),
        "ops": {k: summarize(m[k], [p[k] for p in parts]) for k in KEYS},
        "sample_time_min_s": float(wall.min() * n),
        "samples_below_min_time": int(np.sum(wall * n < min_time)),
        "timed_wall_median_s": float(np.median(wall)),
        # Time of a forward (wall clock around n calls) that the five op timers do not see.
        "accounting_gap": float(np.median(1 - sum_ops / wall)),
        "page_faults_per_forward": None if None in faults else float(np.mean(faults)),
    }
    if m["pairs"]:
        ratios = np.array(m["pairs"])
        row.update({
            "untimed_repeats": len(ratios),
            # Each pair's two batches ran back to back, so slow drift of the machine cancels.
            "instrumentation_overhead": float(np.median(ratios) - 1),
            "instrumentation_overhead_ci95": [v - 1 for v in median_ci95(ratios)],
            "instrumentation_overhead_iqr": [float(q) - 1 for q in np.percentile(ratios, [25, 75])],
        })
    return row


def threading_windows(T, m, row):
    """The one-thread samples against the two-thread sample taken just before, in the same time
    window. A window is slow for two threads when their scores + av exceed SLOW x its time_s, slow
    for one thread when the one-thread scores + av exceed SLOW x their own 25th percentile:
    slow for both is the machine as a whole; slow for two threads only is BLAS threading.
    None without one-thread samples."""
    quad = ("scores", "av")
    pairs = [(sum(p[op][i] for op in quad), sum(p["one_thread"][op][j] for op in quad))
             for p in m["parts"] for j, i in enumerate(p["one_thread_after"])]
    if not pairs:
        return None
    two_base = sum(row["ops"][op]["time_s"] for op in quad)
    one_base = float(np.percentile([b for _, b in pairs], 25))
    kind = lambda a, b: ("both" if b > SLOW * one_base else "two_threads_only") \
        if a > SLOW * two_base else ("one_thread_only" if b > SLOW * one_base else "neither")  # noqa: E731
    kinds = [kind(a, b) for a, b in pairs]
    ratio = lambda sel: (float(np.median([a / b for (a, b), k in zip(pairs, kinds) if k in sel]))  # noqa: E731
                         if any(k in sel for k in kinds) else None)
    return {
        "T": T, "windows": len(pairs), **{k: kinds.count(k) for k in
                                          ("neither", "both", "two_threads_only", "one_thread_only")},
        "rule": f"slow: scores+av > {SLOW} x time_s (two threads) or x p25 (one thread)",
        "two_over_one_thread_fast": ratio({"neither"}),
        "two_over_one_thread_machine_slow": ratio({"both"}),
        "two_over_one_thread_threading_slow": ratio({"two_threads_only"}),
        "one_thread_ops": {k: float(np.median(sum((p["one_thread"][k] for p in m["parts"]), [])))
                           for k in KEYS},
    }


def make_progress(planned):
    """A progress printer: elapsed time, the message, and the time left, extrapolated from how
    long the planned work done so far actually took."""
    start, done = time.perf_counter(), [0.0]

    def progress(msg, work=0.0):
        done[0] += work
        elapsed = time.perf_counter() - start
        left = elapsed / done[0] * (planned - done[0]) if done[0] else None
        tail = f"  (~{left:.0f} s left)" if left is not None and done[0] < planned else ""
        print(f"[{elapsed:5.1f} s] {msg}{tail}", flush=True)
    return progress


def softmax_anatomy(T, mha, seed, min_time, repeats):
    """Each step of softmax() timed on its own, at one T, on the forward's real intermediates.

    The lab counts softmax as 8 T^2 bytes (S in, A out); naive numpy walks the T^2 data once
    per step below. Bytes are the fp32 arrays each step reads and writes (row vectors ignored).
    """
    x = make_input(T, mha, seed)
    mask = causal_mask(T)
    Q, K, _ = qkv_proj(x, mha)
    S = scores(Q, K, mha.n_heads)
    Z = S + mask
    m = Z.max(axis=-1, keepdims=True)
    D = Z - m
    E = np.exp(D)
    s = E.sum(axis=-1, keepdims=True)
    if not np.array_equal(E / s, softmax(S, mask)):
        raise RuntimeError("softmax_anatomy no longer mirrors softmax(); update both together")
    big = S.size * 4  # one pass over the (h, T, T) fp32 data
    steps = {"mask_add": (lambda: S + mask, 2 * big + mask.size * 4),
             "max": (lambda: Z.max(axis=-1, keepdims=True), big),
             "subtract": (lambda: Z - m, 2 * big),
             "exp": (lambda: np.exp(D), 2 * big),
             "sum": (lambda: E.sum(axis=-1, keepdims=True), big),
             "divide": (lambda: E / s, 2 * big)}
    out = {}
    for name, (fn, nbytes) in steps.items():
        n = calibrate(fn, min_time)
        med = float(np.median([batch_seconds(fn, n) / n for _ in range(repeats)]))
        out[name] = {"median_s": med, "bytes": nbytes, "passes_over_T2": round(nbytes / big, 2),
                     "GBps": nbytes / med / 1e9}
    total = sum(v["median_s"] for v in out.values())
    for v in out.values():
        v["share"] = v["median_s"] / total
    return {"T": T, "steps": out, "sum_of_steps_s": total,
            "bytes_all_steps": sum(v["bytes"] for v in out.values()),
            "bytes_lab_model": mha.n_heads * 8 * T**2}


# ----------------------------------------------------------------------------------------------
# Block C: perf.png, where each forward's time goes. Drawn from results.json alone (--replot).

COLORS = {"qkv_proj": "#4C72B0", "scores": "#DD8452", "softmax": "#C44E52", "av": "#55A868",
          "out_proj": "#8172B3"}


def new_figure(*args, **kw):
    """A matplotlib figure on the headless Agg backend (imported here: the module stays light)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt.subplots(*args, **kw)


def png_bytes(fig, dpi=150):
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


def footer(fig, res):
    hw, cfg = res["hardware"], res["config"]
    text = (f"{hw['cpu_model']} ({hw['physical_cores']} cores{', VM' if hw['virtualized'] else ''})"
            f" | BLAS threads {cfg['blas_threads']} | heap: {res['heap']['mode']} | {res['date']}"
            f" | p25 of {cfg['repeats']} samples of >= {cfg['min_time_s'] * 1e3:g} ms"
            f" from {cfg['workers']} processes")
    if cfg["quick"]:
        text += " | --quick: smoke test, not a measurement"
    cond = res["conditions"]
    text += f"\nrun conditions: {cond['verdict']}"
    if cond["reasons"]:
        text += " - " + "; ".join(cond["reasons"])
    fig.text(0.5, 0.005, text, ha="center", va="bottom", fontsize=7.5, linespacing=1.3,
             color="firebrick" if cond["verdict"] == "disturbed" else "0.35")


def plot_perf(res):
    rows, default = res["sweep"], {r["T"]: r for r in res["sweep_default_heap"]}
    fig, (ax, ax2) = new_figure(1, 2, figsize=(13, 5.6), gridspec_kw={"width_ratios": [1.15, 1]})
    x = np.arange(len(rows))
    ms = lambda r, k: r["ops"][k]["time_s"] * 1e3  # noqa: E731
    # Left: absolute time per forward, one stacked bar per T.
    bottom = np.zeros(len(rows))
    for op in OPS:
        h = np.array([ms(r, op) for r in rows])
        ax.bar(x - 0.08, h, 0.55, bottom=bottom, color=COLORS[op], label=op)
        bottom += h
    # The bar is the sum of the five ops' headline times; the whisker rises to where the plain
    # median of the total would put it: what the machine's slow episodes added.
    tot = bottom.copy()
    tax = np.array([r["ops"]["total"]["environment_tax"] for r in rows])
    whisker = np.array([np.zeros(len(rows)), tot * np.maximum(tax, 0)])
    ax.errorbar(x - 0.08, tot, yerr=whisker, fmt="none", ecolor="black", capsize=4, lw=1)
    dflt = np.array([default[r["T"]]["ops"]["total"]["time_s"] * 1e3 if r["T"] in default
                     else np.nan for r in rows])
    # The default heap can be several times the warm total: clip its hatched extension at the
    # top of the axis (true value in the label) so that the warm bars stay readable.
    ylim = 1.5 * tot.max()
    extra = np.fmin(dflt, ylim) - tot
    faulted = np.array([(default.get(r["T"], {}).get("page_faults_per_forward") or 0) >= 1
                        for r in rows])  # None: the OS does not count faults
    extra[~((extra > 0) & faulted)] = np.nan  # no bar, not even an edge, where nothing faulted
    ax.bar(x + 0.32, extra, 0.18, bottom=tot, fill=False, hatch="///", edgecolor="0.5", lw=0.8,
           label="default heap: extra time per forward\n(page-fault overhead, not compute)")
    labels = []
    for i, r in enumerate(rows):
        dom = res["analysis"]["dominant_op_per_T"][str(r["T"])]
        share = 100 * r["ops"][dom]["time_share"]
        labels.append(ax.annotate(
            f"{tot[i]:.3g} ms\n{dom} {share:.0f}%", (x[i] - 0.08, tot[i] + whisker[1][i]),
            xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=8.5))
        if extra[i] > 0:
            clipped = dflt[i] > ylim
            labels.append(ax.annotate(f"default heap\n{dflt[i]:.3g} ms{' (off scale)' if clipped else ''}\n"
                        f"{default[r['T']]['page_faults_per_forward']:.0f} faults/fwd",
                        (x[i] + (0.42 if clipped else 0.32), tot[i] + extra[i]),
                        xytext=(2, -2) if clipped else (0, 3), textcoords="offset points",
                        ha="left" if clipped else "center", va="top" if clipped else "bottom",
                        fontsize=7, color="0.3"))
    ax.set_xticks(x, [f"T={r['T']}" for r in rows])
    ax.set_ylabel("time per forward (ms, time_s = p25; whisker: up to the plain median)")
    ax.set_ylim(0, ylim)
    ax.set_xlim(-0.55, len(rows) - 0.05)
    ax.set_title("Where a forward's time goes (warm heap)", fontsize=11)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    # Right: each T normalised to 100%: time share beside FLOP share of the same five ops.
    w = 0.36
    for i, r in enumerate(rows):
        for dx, key in ((-w / 2 - 0.01, "time_share"), (w / 2 + 0.01, "flop_share")):
            b = 0.0
            for op in OPS:
                s = 100 * r["ops"][op][key]
                ax2.bar(x[i] + dx, s, w, bottom=b, color=COLORS[op],
                        alpha=1.0 if key == "time_share" else 0.55)
                if s >= 7:
                    ax2.text(x[i] + dx, b + s / 2, f"{s:.0f}", ha="center", va="center",
                             fontsize=7, color="white")
                b += s
    ax2.set_xticks(x, [f"T={r['T']}\ntime | FLOPs" for r in rows], fontsize=8.5)
    ax2.set_ylabel("share of the forward (%)")
    ax2.set_ylim(0, 100)
    ax2.set_title("Time share (solid) vs FLOP share (faded), per op", fontsize=11)
    fig.suptitle("Naive numpy multi-head attention, d_model=64, 4 heads, d_k=16", fontsize=12)
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.06, 1, 0.97))
    unclutter(fig, labels)
    return fig


def unclutter(fig, labels):
    """Nudge each label (an annotation in offset points) up, then sideways, until its box covers
    no other text of the figure and stays inside it: a plot's labels may never hide each other."""
    from matplotlib.text import Text
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    legends = [lg for ax in fig.axes if (lg := ax.get_legend())]
    in_legend = {t for lg in legends for t in lg.findobj(Text)}
    clear = lambda a, b: min(a.x1, b.x1) - max(a.x0, b.x0) <= 0 or \
        min(a.y1, b.y1) - max(a.y0, b.y0) <= 0  # noqa: E731
    for label in labels:
        others = [lg.get_window_extent(r) for lg in legends] + [
            t.get_window_extent(r) for t in fig.findobj(Text) if t is not label and
            t not in in_legend and t.get_visible() and t.get_text().strip()]
        x0, y0 = label.xyann
        for dy in range(0, 200, 4):
            for dx in (0, 12, -12, 24, -24, 48, -48):
                label.xyann = (x0 + dx, y0 + dy)
                b = label.get_window_extent(r)
                if b.x0 >= 0 and b.y0 >= 0 and b.x1 <= fig.bbox.width and \
                        b.y1 <= fig.bbox.height and all(clear(b, o) for o in others):
                    break
            else:
                continue
            break


# ----------------------------------------------------------------------------------------------
# Block D: the roofline's ceilings, measured here by Phase 1's method unless Phase 1 gives them.

def copy_GBps(src, dst, threads, reps):
    """Phase 1's bandwidth kernel: np.copyto of one fp32 buffer into another, 8 N bytes per copy
    of N floats (read once, written once). With threads > 1 each thread copies one slice: numpy
    releases the GIL. Best of `reps` batches of >= 10 ms."""
    N = src.size
    parts = [slice(i * N // threads, (i + 1) * N // threads) for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        def copy():
            if threads == 1:
                np.copyto(dst, src)
            else:
                list(pool.map(lambda p: np.copyto(dst[p], src[p]), parts))
        copy()  # warm-up: first touch of both buffers, threads started
        n = calibrate(copy, 0.01)
        best = min(batch_seconds(copy, n) / n for _ in range(reps))
    return 8 * N / best / 1e9


def matmul_GFLOPS(n, reps):
    """Large fp32 matmul through numpy's BLAS: 2 n^3 FLOPs over 3 * 4 n^2 bytes (I = n / 6)."""
    rng = np.random.default_rng(0)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    a @ b
    best = min(batch_seconds(lambda: a @ b, 1) for _ in range(reps))
    return 2 * n**3 / best / 1e9


def dot_GFLOPS(N, reps):
    """Phase 1's reference dot product: 2 N FLOPs over 8 N bytes (I = 0.25)."""
    a, b = np.ones(N, dtype=np.float32), np.ones(N, dtype=np.float32)
    n = calibrate(lambda: a @ b, 0.01)
    best = min(batch_seconds(lambda: a @ b, n) / n for _ in range(reps))
    return 2 * N / best / 1e9


def parse_size(s):
    """'48K', '32M', '1024' (as /sys writes cache sizes) -> bytes; None if absent."""
    if not s:
        return None
    return int(s[:-1]) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[s[-1]] if s[-1] in "KMG" else int(s)


COPY_MAX_BYTES = 256 << 20  # the largest copy working set (two 128 MiB buffers): a run stays < 1 GiB


def copy_levels(hardware, quick):
    """The working set (source + destination) that measures each memory level's bandwidth: half
    of each data cache the OS describes, so that it surely fits there (LBL's ERT sweeps sizes
    instead; carm-roofline sizes them from the caches, as here), and DRAM four times past the last
    level. Where the OS gives no cache sizes only DRAM is measured. No working set exceeds
    COPY_MAX_BYTES: a server's L3 can be hundreds of MiB (4 x 480 MiB would need 2 GiB), and there
    the DRAM copy is marked as not past the last level (past_llc) instead of filling the memory."""
    caches = {name: parse_size(c["size"]) for name, c in hardware["caches"].items()
              if not name.endswith("i") and parse_size(c["size"])}
    levels = {name: {"capacity_bytes": size, "bytes": min(max(8 << 10, size // 2), COPY_MAX_BYTES)}
              for name, size in sorted(caches.items())}
    llc = max(caches.values(), default=8 << 20)
    dram = 32 << 20 if quick else min(max(128 << 20, 4 * llc), COPY_MAX_BYTES)
    # DRAM is copied at half that size too: Phase 1 reads beta off a plateau, and two sizes that
    # disagree say there is none (on a VM the host's memory layout can make bandwidth depend on
    # the buffer); beta's interval then spans both.
    levels["DRAM"] = {"capacity_bytes": None, "bytes": dram, "past_llc": dram > llc,
                      "check_bytes": dram // 2}
    return levels


def measure_ceilings(spec):
    """One repeat of every ceiling, taken by a worker after its samples: spread over the workers,
    the repeats spread over the run and share its time window (ERT's median over many trials,
    not one lucky best)."""
    def copies(nbytes, shared):
        src = np.ones(nbytes // 8, dtype=np.float32)  # two buffers of half the working set
        dst = np.ones_like(src)
        return {"1": copy_GBps(src, dst, 1, spec["reps"]),
                "all": copy_GBps(src, dst, spec["threads"], spec["reps"])
                if spec["threads"] > 1 and shared else None}

    main, check = {}, {}
    for name, lv in spec["levels"].items():
        # A private cache (L1, L2) is one core's: only the shared levels are copied by all.
        shared = lv["capacity_bytes"] is None or name.startswith("L3")
        main[name] = copies(lv["bytes"], shared)
        if lv.get("check_bytes"):
            check[name] = copies(lv["check_bytes"], shared)
    return {"copy": main, "copy_check": check, "dot": dot_GFLOPS(10**6, spec["reps"]),
            "matmul": {str(n): matmul_GFLOPS(n, spec["reps"]) for n in spec["matmul"]}}


def combine_ceilings(per_worker, spec):
    """The workers' repeats of each ceiling: the median is the ceiling, [min, max] its interval.
    All threads can copy at least as fast as one, so each repeat takes the better of the two."""
    stat = lambda xs: (float(np.median(xs)), [float(min(xs)), float(max(xs))])  # noqa: E731
    better = lambda r: max(v for v in r.values() if v)  # noqa: E731
    levels = {}
    for name, lv in spec["levels"].items():
        runs = [w["copy"][name] for w in per_worker]
        best, rng = stat([better(r) for r in runs])
        levels[name] = {**lv, "GBps": best, "GBps_range": rng,
                        "GBps_1thread": stat([r["1"] for r in runs])[0],
                        "GBps_all_threads": None if runs[0]["all"] is None else
                        stat([r["all"] for r in runs])[0]}
        if lv.get("check_bytes"):  # a plateau: the two sizes agree within 10 % or overlap
            check, check_rng = stat([better(w["copy_check"][name]) for w in per_worker])
            plateau = abs(check - best) <= 0.1 * best or \
                max(rng[0], check_rng[0]) <= min(rng[1], check_rng[1])
            levels[name].update(GBps_check=check, GBps_check_range=check_rng, plateau=plateau)
            if not plateau:
                levels[name]["GBps_range"] = [min(rng[0], check_rng[0]), max(rng[1], check_rng[1])]
    pi, pi_rng = stat([max(w["matmul"].values()) for w in per_worker])
    dram = levels["DRAM"]
    return {
        "beta_dram_GBps": dram["GBps"], "beta_range_GBps": dram["GBps_range"],
        "beta_dram_1thread_GBps": dram["GBps_1thread"],
        "beta_dram_all_threads_GBps": dram["GBps_all_threads"],
        "beta_l3_GBps": levels.get("L3", {}).get("GBps"), "copy_threads": spec["threads"],
        "dram_buffer_bytes": dram["bytes"] // 2, "levels": levels,
        "pi_matmul_GFLOPS": pi, "pi_range_GFLOPS": pi_rng, "repeats": len(per_worker),
        "reference_kernels": [
            {"name": f"matmul {n}x{n} fp32", "intensity": int(n) / 6,
             "GFLOPS": stat([w["matmul"][n] for w in per_worker])[0]} for n in per_worker[0]["matmul"]] + [
            {"name": "dot 10^6 fp32, cache-resident", "intensity": 0.25,
             "GFLOPS": stat([w["dot"] for w in per_worker])[0]}],
    }


def read_ceilings(path):
    """beta_peak_GBps and pi_peak_GFLOPS from a Phase 1 style manifest (top level or under
    results_summary); a one-line UsageError otherwise."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise UsageError(f"cannot read roofline file {path}: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UsageError(f"roofline file {path} is not valid JSON") from None
    out = {}
    for key in ("beta_peak_GBps", "pi_peak_GFLOPS"):
        v = data.get(key, (data.get("results_summary") or {}).get(key)) \
            if isinstance(data, dict) else None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise UsageError(f"roofline file {path} has no positive number {key}")
        out[key] = float(v)
    return out


def level_of(nbytes, levels):
    """The smallest memory level whose capacity holds nbytes: where the op's data lives."""
    fits = [(lv["capacity_bytes"], name) for name, lv in levels.items()
            if lv["capacity_bytes"] and nbytes <= lv["capacity_bytes"]]
    return min(fits)[1] if fits else "DRAM"


def place_on_roofline(row, d_model, n_heads, ceilings):
    """Add flops, bytes, intensity, GFLOPS, the attainable bound and the class to each op: against
    the DRAM roofline (the lab's question; "ridge" when the intensity lies inside the ridge's
    interval, too close to call) and against the level its working set fits in."""
    beta, pi = ceilings["beta_peak_GBps"], ceilings["pi_peak_GFLOPS"]
    lo, hi = ceilings["ridge_range"]
    cost = op_cost(row["T"], d_model, n_heads)
    ws = working_set(row["T"], d_model, n_heads)
    total = sum(row["ops"][op]["time_s"] for op in OPS)  # shares of the stacked bar add to 1
    flops_all = sum(f for f, _ in cost.values())
    for op, (flops, nbytes) in cost.items():
        r = row["ops"][op]
        I = flops / nbytes
        level = level_of(ws[op], ceilings["levels"])
        level_beta = ceilings["levels"][level]["GBps"]
        r.update(flops=flops, bytes=nbytes, intensity=I, gflops=flops / r["time_s"] / 1e9,
                 attainable_gflops=min(pi, beta * I),
                 bound="memory" if I < lo else "compute" if I > hi else "ridge",
                 time_share=r["time_s"] / total, flop_share=flops / flops_all,
                 working_set_bytes=ws[op], level=level,
                 level_ceiling_gflops=min(pi, level_beta * I),
                 level_bound="memory" if I < pi / level_beta else "compute")
        r["pct_of_attainable"] = 100 * r["gflops"] / r["attainable_gflops"]
        r["pct_of_level_ceiling"] = 100 * r["gflops"] / r["level_ceiling_gflops"]
    return row


def size_text(nbytes):
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


LEVEL_MARKERS = {"L1d": "o", "L2": "o", "L3": "s", "DRAM": "^"}


def plot_roofline(res):
    """Every op at every T as (intensity, GFLOPS) on the machine's roofline, Phase 1's axes: the
    DRAM roof (beta) and pi in black, each cache level's copy roof fainter, each point shaped by
    the level its working set lives in. Every label sits in the legend, beside the axes, so that
    no label can cover a point or another label."""
    c = res["ceilings"]
    beta, pi = c["beta_peak_GBps"], c["pi_peak_GFLOPS"]
    ridge, (r_lo, r_hi) = pi / beta, c.get("ridge_range", [pi / beta] * 2)
    X_MIN, X_MAX = 0.01, 100.0
    fig, ax = new_figure(figsize=(12, 6.6))
    xs = np.logspace(math.log10(X_MIN), math.log10(X_MAX), 400)
    src = {"measured": f"median of {c.get('repeats', 1)} repeats", "phase1": "Phase 1",
           "cli": "--roofline"}[c["source"]]
    lo, hi = c.get("beta_peak_range", [beta, beta])
    dram = c.get("levels", {}).get("DRAM", {})
    capped = "\n(its copy is not past the L3: " + ("--quick)" if res["config"]["quick"] else
                                                     "capped to fit memory)") \
        if dram.get("past_llc") is False else ""
    if dram.get("plateau") is False:
        capped += f"\n(no plateau: {size_text(dram['check_bytes'])} copied at " \
                  f"{dram['GBps_check']:.1f} GB/s, inside beta's interval)"
    ax.plot(xs, np.minimum(pi, beta * xs), color="black", lw=2,
            label=f"roofline: beta = {beta:.1f} GB/s DRAM copy ({src}; {lo:.1f}-{hi:.1f}),\n"
                  f"pi = {pi:.0f} GFLOPS{capped}")
    if hi > lo:
        ax.fill_between(xs, np.minimum(pi, lo * xs), np.minimum(pi, hi * xs), color="0.85",
                        lw=0, zorder=0, label="beta's interval over the repeats")
    styles = iter([(0, (1, 1)), "--", "-.", (0, (5, 1, 1, 1))])
    for name, lv in c.get("levels", {}).items():
        if name == "DRAM" or not lv.get("GBps"):
            continue
        overhead = lv["bytes"] < 256 << 10 and lv["GBps"] < max(
            (v["GBps"] for n, v in c["levels"].items() if n != name and v.get("GBps")), default=0)
        # A described cache whose copy is no faster than DRAM's has no plateau of its own here
        # (a VM's slice of a server's L3, say): its roof is drawn, and says so.
        flat = not overhead and lv["GBps"] <= max(dram.get("GBps_range") or [0])
        ax.plot(xs, np.minimum(pi, lv["GBps"] * xs), color="0.6", lw=1, ls=next(styles),
                label=f"{name} copy, {size_text(lv['bytes'])}: {lv['GBps']:.0f} GB/s"
                      + (" (numpy call-overhead bound)" if overhead else "")
                      + (" (no faster than the DRAM copy)" if flat else ""))
    ax.axvspan(r_lo, r_hi, color="0.92", zorder=0,
               label=f"ridge {ridge:.2f} FLOP/B (interval {r_lo:.2f}-{r_hi:.2f}): ops inside are "
                     "'near the ridge'")
    ax.axvline(ridge, color="0.7", lw=0.8, zorder=0)
    # Reference kernels measured with the ceilings (grey), clamped to the edge when off scale.
    for k, m in zip(c.get("reference_kernels", []), ("P", "X", "D")):
        off = k["intensity"] > X_MAX
        ax.scatter(min(k["intensity"], X_MAX), k["GFLOPS"], marker=m, s=40, color="0.55",
                   zorder=3, clip_on=False,
                   label=f"{k['name']}: I = {k['intensity']:.3g}, {k['GFLOPS']:.0f} GFLOPS"
                         + (" (off scale: drawn at the edge)" if off else ""))
    # The points: colour by op, size by T, shape by the memory level of the op's working set.
    Ts = [r["T"] for r in res["sweep"]]
    size = lambda T: 14 + 110 * Ts.index(T) / max(1, len(Ts) - 1)  # noqa: E731
    for op in OPS:
        pts = [(r["ops"][op]["intensity"], r["ops"][op]["gflops"], r["T"],
                r["ops"][op].get("level", "DRAM")) for r in res["sweep"]]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=COLORS[op], lw=0.8, alpha=0.5)
        bounds = [r["ops"][op]["bound"] for r in res["sweep"]]
        name = {"memory": "memory-bound", "compute": "compute-bound", "ridge": "near the ridge"}
        where = (f"{name[bounds[0]]} at every T" if len(set(bounds)) == 1 else "; ".join(
            f"{name[b]} at T={','.join(str(T) for T, bb in zip(Ts, bounds) if bb == b)}"
            for b in dict.fromkeys(bounds)))
        for j, (I, g, T, level) in enumerate(pts):
            ax.scatter(I, g, s=size(T), marker=LEVEL_MARKERS.get(level, "o"), color=COLORS[op],
                       edgecolor="black", lw=0.5, zorder=4,
                       label=f"{op} ({where})"
                       if j == 0 else None)
    for T in Ts:  # the size key
        ax.scatter([], [], s=size(T), color="0.5", label=f"T = {T}")
    for level in dict.fromkeys(r["ops"][op].get("level", "DRAM") for r in res["sweep"] for op in OPS):
        ax.scatter([], [], s=40, marker=LEVEL_MARKERS.get(level, "o"), facecolor="white",
                   edgecolor="black", label=f"working set in {level}")
    # Phase 27 preview: the fused T^2 ops, measured, and where the same FLOPs could sit.
    pv = res["analysis"]["phase_27_preview"]
    m, f = pv["measured"], pv["without_materialising_A"]
    fx = min(f["intensity"], X_MAX)
    ax.scatter(m["intensity"], m["GFLOPS"], marker="*", s=180, color="black", zorder=5,
               label=f"scores+softmax+av fused, T={pv['T']}: measured, I = {m['intensity']:.2f}")
    ax.scatter(fx, f["bound_GFLOPS"], marker="*", s=180, facecolor="none", edgecolor="black",
               zorder=5, clip_on=False,
               label=f"Phase 27, A never written: {pv['bytes_reduction']:.0f}x fewer bytes, "
                     f"I = {f['intensity']:.0f}{' (off scale)' if f['intensity'] > X_MAX else ''};"
                     f"\nits roofline bound {f['bound_GFLOPS']:.0f} GFLOPS, not a measurement")
    ax.annotate("", (fx, f["bound_GFLOPS"]), (m["intensity"], m["GFLOPS"]),
                arrowprops={"arrowstyle": "->", "ls": "--", "color": "black", "lw": 1})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(X_MIN, X_MAX)
    ax.set_ylim(0.1, 1.5 * pi)
    ax.set_xlabel("arithmetic intensity (FLOP/byte, the lab's byte counts)")
    ax.set_ylabel("GFLOPS (FLOPs / time_s)")
    ax.set_title("Attention ops on this machine's roofline (size: T, shape: where the data lives)",
                 fontsize=11)
    ax.grid(True, which="major", color="0.92")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7.6, frameon=False,
              borderaxespad=0, labelspacing=0.55)
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


# ----------------------------------------------------------------------------------------------
# Block E: the numbers the README's three answers stand on, judged from the data.

def threshold_T(d_k, I_crit, bytes_factor):
    """Smallest T from which scores/av are compute-bound, from T d_k / (4 d_k + b T) > I_crit.

    b = 2 is the lab's intensity formula (8 T d_k + 4 T^2 bytes); b = 4 is its Block E
    inequality as written, T d_k > 4 (d_k + T) I_crit, which counts the T^2 matrix twice
    (8 T d_k + 8 T^2 bytes). The intensity tends to d_k / b: if that is below I_crit, no finite
    T makes the op compute-bound and the answer is None.
    """
    if d_k <= bytes_factor * I_crit:
        return None
    return 4 * d_k * I_crit / (d_k - bytes_factor * I_crit)


LAB_LAPTOP_CACHES = {"L1d": 32 << 10, "L2": 256 << 10, "L3": 6 << 20}  # i5-8250U, per the lab


def lab_laptop_levels(Ts, d_model, n_heads):
    """Where each op's working set would live on the lab's i5-8250U, and from which T the
    softmax's no longer fits its 6 MiB L3 (4 (5 h T^2 + T^2) bytes > L3)."""
    levels = {name: {"capacity_bytes": size} for name, size in LAB_LAPTOP_CACHES.items()}
    per_T = {str(T): {op: level_of(ws, levels) for op, ws in
                      working_set(T, d_model, n_heads).items()} for T in Ts}
    return {"caches_bytes": LAB_LAPTOP_CACHES, "level_per_T": per_T,
            "softmax_spills_past_T": math.sqrt(LAB_LAPTOP_CACHES["L3"] / (4 * (5 * n_heads + 1))),
            "softmax_in_DRAM_at_T": [T for T in Ts if per_T[str(T)]["softmax"] == "DRAM"]}


def analyse(rows, d_model, n_heads, ceilings, anatomy):
    by_T = {r["T"]: r for r in rows}
    share = {T: {op: r["ops"][op]["time_share"] for op in OPS} for T, r in by_T.items()}
    T_lo, T_hi = min(by_T), max(by_T)
    proj = lambda T: share[T]["qkv_proj"] + share[T]["out_proj"]  # noqa: E731
    quad = lambda T: share[T]["scores"] + share[T]["softmax"] + share[T]["av"]  # noqa: E731
    smallest = {T: min(OPS, key=lambda op: share[T][op]) for T in by_T}
    observations = [
        {"claim": f"At T={T_lo} the projections (qkv_proj + out_proj) dominate",
         "held": proj(T_lo) > quad(T_lo), "projections_share": proj(T_lo),
         "T2_ops_share": quad(T_lo)},
        {"claim": f"At T={T_hi} the T^2 ops (scores, softmax, av) dominate",
         "held": quad(T_hi) > proj(T_hi), "projections_share": proj(T_hi),
         "T2_ops_share": quad(T_hi)},
        {"claim": "softmax is never the smallest component",
         "held": all(smallest[T] != "softmax" for T in by_T),
         "smallest_op_per_T": {str(T): smallest[T] for T in by_T},
         "softmax_share_per_T": {str(T): share[T]["softmax"] for T in by_T}},
    ]
    beta, pi = ceilings["beta_peak_GBps"], ceilings["pi_peak_GFLOPS"]
    ridge, d_k = pi / beta, d_model // n_heads
    formula, written = threshold_T(d_k, ridge, 2), threshold_T(d_k, ridge, 4)
    out = {
        "ridge_intensity": ridge,
        "expected_observations": observations,
        "dominant_op_per_T": {str(T): max(OPS, key=lambda op: share[T][op]) for T in by_T},
        "memory_bound_ops_per_T": {str(T): [op for op in OPS if r["ops"][op]["bound"] == "memory"]
                                   for T, r in by_T.items()},
        "near_ridge_ops_per_T": {str(T): [op for op in OPS if r["ops"][op]["bound"] == "ridge"]
                                 for T, r in by_T.items()},
        "level_per_T": {str(T): {op: r["ops"][op]["level"] for op in OPS} for T, r in by_T.items()},
        "on_lab_laptop": lab_laptop_levels(sorted(by_T), d_model, n_heads),
        "scores_av_threshold": {
            "I_crit": ridge, "d_k": d_k,
            "from_intensity_formula": {"T_threshold": formula, "asymptotic_intensity": d_k / 2,
                                       "condition": "T d_k / (4 d_k + 2T) > I_crit"},
            "from_inequality_as_written": {"T_threshold": written, "asymptotic_intensity": d_k / 4,
                                           "condition": "T d_k > 4 (d_k + T) I_crit"},
            "note": "memory-bound for T below T_threshold; null: memory-bound for every T",
        },
        "flop_share_vs_time_share": {str(T): {op: {"flop_share": r["ops"][op]["flop_share"],
                                                   "time_share": r["ops"][op]["time_share"]}
                                              for op in OPS} for T, r in by_T.items()},
        "softmax_anatomy": anatomy,
    }
    # Phase 27 preview: scores + softmax + av as one fused op. Same FLOPs; measured, it moves the
    # lab's bytes of the three ops. Never writing S or A, it would move only Q, K, V in and the
    # output out: h * 4 * (4 T d_k) bytes. Placed at its roofline bound: a bound, not a measurement.
    T = 512 if 512 in by_T else T_hi
    fused = [by_T[T]["ops"][op] for op in ("scores", "softmax", "av")]
    flops, nbytes = sum(o["flops"] for o in fused), sum(o["bytes"] for o in fused)
    seconds = sum(o["time_s"] for o in fused)
    flash_bytes = n_heads * 4 * 4 * T * d_k
    flash_I = flops / flash_bytes
    flash_bound = min(pi, beta * flash_I)
    out["phase_27_preview"] = {
        "T": T, "flops": flops,
        "measured": {"bytes": nbytes, "intensity": flops / nbytes, "time_s": seconds,
                     "GFLOPS": flops / seconds / 1e9},
        "without_materialising_A": {"bytes": flash_bytes, "intensity": flash_I,
                                    "bound_GFLOPS": flash_bound,
                                    "bound": "memory" if flash_I < ridge else "compute",
                                    "time_lower_bound_s": flops / flash_bound / 1e9},
        "bytes_reduction": nbytes / flash_bytes,
    }
    if 512 in by_T:
        sm = by_T[512]["ops"]["softmax"]
        out["softmax_at_T_512"] = {
            "GFLOPS": sm["gflops"], "intensity": sm["intensity"],
            "memory_ceiling_GFLOPS": beta * sm["intensity"],
            "ratio_to_memory_ceiling": sm["gflops"] / (beta * sm["intensity"]),
            "ratio_to_1thread_dram_ceiling":
                sm["gflops"] / (ceilings["beta_dram_1thread_GBps"] * sm["intensity"]),
            "ratio_to_l3_ceiling": (sm["gflops"] / (ceilings["beta_l3_GBps"] * sm["intensity"])
                                    if ceilings["beta_l3_GBps"] else None),
            "level": sm["level"], "working_set_bytes": sm["working_set_bytes"],
            "level_ceiling_GFLOPS": sm["level_ceiling_gflops"],
            "ratio_to_level_ceiling": sm["gflops"] / sm["level_ceiling_gflops"],
        }
    return out


# ----------------------------------------------------------------------------------------------
# Block F: the manifest, and the machine as it really is.
# Every fact about the machine is read here and nowhere else. On Linux from /proc and /sys under
# SYSROOT (the tests point it at a simulated machine), elsewhere through psutil; what a platform
# cannot tell is recorded as None or "unavailable", with the reason.

SYSROOT = Path("/")


def read_text(path, default=None):
    try:
        return Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return default


def sysfile(path, default=None):
    return read_text(SYSROOT / path, default)


def cpu_model(cpuinfo):
    """/proc/cpuinfo on Linux, sysctl on macOS, the registry on Windows."""
    for ln in cpuinfo.splitlines():
        if ln.startswith(("model name", "Model", "Hardware")):
            return ln.split(":", 1)[1].strip()
    try:
        if platform.system() == "Darwin":
            return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], text=True,
                                  capture_output=True, timeout=5).stdout.strip() or "unknown"
        if platform.system() == "Windows":
            import winreg
            key = winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE,
                                 r"HARDWARE\DESCRIPTION\System\CentralProcessor\0")
            return winreg.QueryValueEx(key, "ProcessorNameString")[0].strip()
    except (OSError, subprocess.SubprocessError, ImportError):
        pass
    return platform.processor() or "unknown"


def cpufreq_state():
    """Governor, driver, frequencies (MHz) and turbo of every CPU, from Linux's cpufreq; psutil's
    (often nominal) frequency elsewhere; governor "unavailable" where there is no cpufreq."""
    cpus = sorted(SYSROOT.glob("sys/devices/system/cpu/cpu[0-9]*/cpufreq"))
    govs = {read_text(p / "scaling_governor") for p in cpus} - {None}
    mhz = lambda name: sorted({int(v) // 1000 for p in cpus  # noqa: E731
                               if (v := read_text(p / name, "")).isdigit()})
    no_turbo = sysfile("sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = sysfile("sys/devices/system/cpu/cpufreq/boost")
    state = {
        "governor": "/".join(sorted(govs)) if govs else "unavailable",
        "driver": "/".join(sorted({read_text(p / "scaling_driver") for p in cpus} - {None}))
                  or None,
        "min_MHz": (mhz("scaling_min_freq") or [None])[0],
        "max_MHz": (mhz("scaling_max_freq") or [None])[-1],
        "cur_MHz": mhz("scaling_cur_freq") or None,
        "turbo": ("off" if no_turbo == "1" else "on") if no_turbo is not None else
                 ("on" if boost == "1" else "off") if boost is not None else None,
    }
    if not govs:
        f = psutil.cpu_freq() if hasattr(psutil, "cpu_freq") else None
        state["reason"] = ("no cpufreq in sysfs: a VM, a container, or not Linux; "
                           "the governor cannot be read or set here")
        if f is not None and f.current:
            state["cur_MHz"] = [round(f.current)]
            state["max_MHz"] = round(f.max) or None
    return state


def machine_facts():
    cpuinfo = sysfile("proc/cpuinfo", "")
    cpu_dirs = sorted(SYSROOT.glob("sys/devices/system/cpu/cpu[0-9]*/topology"))
    # A physical core is one set of hyper-thread siblings (core_cpus_list; thread_siblings_list
    # on kernels before 5.7).
    groups = {read_text(d / "core_cpus_list") or read_text(d / "thread_siblings_list")
              for d in cpu_dirs} - {None}
    logical = len(cpu_dirs) or psutil.cpu_count() or os.cpu_count() or 1
    physical = len(groups) or psutil.cpu_count(logical=False) or logical
    caches = {}
    for idx in sorted(SYSROOT.glob("sys/devices/system/cpu/cpu0/cache/index*")):
        kind = read_text(idx / "type", "")
        name = f"L{read_text(idx / 'level', '?')}{'d' if kind == 'Data' else 'i' if kind == 'Instruction' else ''}"
        caches[name] = {"size": read_text(idx / "size"),
                        "shared_cpu_list": read_text(idx / "shared_cpu_list")}
    freq = cpufreq_state()
    unavailable = {}
    if not caches:
        unavailable["caches"] = "no /sys cache description on this OS"
    if freq["governor"] == "unavailable":
        unavailable["governor"] = freq["reason"]
    if page_faults() is None:
        unavailable["page_faults"] = "the OS gives no page-fault count through resource or psutil"
    if glibc_malloc() is None:
        unavailable["warm_heap"] = "not glibc: the allocator cannot be told to keep its pages"
    return {
        "cpu_model": cpu_model(cpuinfo),
        "cpu_governor_at_run": freq["governor"],
        "logical_cpus": logical, "physical_cores": physical, "smt": logical > physical,
        "caches": caches, "virtualized": " hypervisor" in cpuinfo,
        "memory_GiB": round(psutil.virtual_memory().total / 2**30, 1),
        "os": f"{platform.system()} {platform.release()}", "machine": platform.machine(),
        "libc": " ".join(platform.libc_ver()).strip() or None,
        "cpufreq_at_start": freq, "unavailable": unavailable,
    }


def blas_info():
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    return [{k: p.get(k) for k in ("internal_api", "version", "num_threads", "threading_layer",
                                  "architecture", "filepath")} for p in pools]


def blas_threads_plan(args, hardware):
    """How many BLAS threads to ask for, and why: the lab says one per physical core (4 on its
    4-core / 8-thread laptop) unless the learner decides otherwise, by flag or environment."""
    env = {k: os.environ[k] for k in THREAD_VARS if os.environ.get(k)}
    if args.threads:
        return args.threads, "flag: --threads"
    if env:
        return None, "environment: " + ", ".join(f"{k}={v}" for k, v in env.items())
    return hardware["physical_cores"], "default: one per physical core"


def own_cpu_seconds():
    """CPU seconds of this process and of its finished workers (their start and exit included)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def cpu_times():
    """System-wide CPU seconds: busy, total and steal (None where the OS has no steal)."""
    t = psutil.cpu_times()
    busy = sum(getattr(t, f, 0.0) for f in ("user", "nice", "system", "irq", "softirq",
                                             "interrupt", "dpc"))
    steal = getattr(t, "steal", None)
    idle = t.idle + getattr(t, "iowait", 0.0)
    return {"wall": time.perf_counter(), "busy": busy, "total": busy + idle + (steal or 0.0),
            "steal": steal}


# The limits of the run-conditions verdict, calibrated on the 2-core VM (see the README): a quiet
# run there reads <= 0.05 CPUs of other work; one `while True: pass` beside it reads about 1.
OTHERS_CPUS_LIMIT = 0.25    # other processes' average use of the CPUs while the sweep ran
STEAL_LIMIT = 0.02          # share of CPU time the hypervisor gave to someone else


def judge_conditions(before, after, own_cpu_s, load_before, workers, freq_start, freq_end):
    """What else used the CPUs while the sweep ran, and the verdict: "quiet" only if no check
    failed; a check that cannot be made here is listed as unknown, never taken as passed."""
    wall = after["wall"] - before["wall"]
    others = max(0.0, (after["busy"] - before["busy"]) - own_cpu_s) / wall
    steal = (None if before["steal"] is None else
             (after["steal"] - before["steal"]) / max(after["total"] - before["total"], 1e-9))
    switches = [w["involuntary_switches_per_sample"] for w in workers]
    checks = [
        ("other_processes_cpus", others, OTHERS_CPUS_LIMIT,
         f"other processes used {others:.2f} CPUs on average while the sweep ran "
         f"(limit {OTHERS_CPUS_LIMIT})"),
        ("steal_fraction", steal, STEAL_LIMIT,
         f"the hypervisor took {100 * (steal or 0):.1f}% of the CPU time (steal; limit "
         f"{100 * STEAL_LIMIT:.0f}%)"),
    ]
    out = {"load_1min_before": load_before, "sweep_wall_s": wall,
           "own_cpu_s": own_cpu_s, "involuntary_switches_per_sample": switches,
           "checks": {}, "reasons": [], "unknown": []}
    for name, value, limit, sentence in checks:
        ok = None if value is None else value <= limit
        out["checks"][name] = {"value": value, "limit": limit, "ok": ok}
        if ok is False:
            out["reasons"].append(sentence)
        elif ok is None:
            out["unknown"].append(name)
    changed = freq_start["governor"] != freq_end["governor"] or \
        freq_start["turbo"] != freq_end["turbo"]
    out["checks"]["cpufreq_unchanged"] = {"value": not changed, "ok": not changed}
    if changed:
        out["reasons"].append(f"the CPU governor/turbo changed during the run: "
                              f"{freq_start['governor']}/{freq_start['turbo']} -> "
                              f"{freq_end['governor']}/{freq_end['turbo']}")
    out["verdict"] = "disturbed" if out["reasons"] else "quiet"
    return out


def make_manifest(results, argv):
    cfg, hw, sm = results["config"], results["hardware"], results["analysis"]
    by_T = {r["T"]: r for r in results["sweep"]}
    names = ("softmax_GFLOPS_at_T_512", "softmax_pct_of_total_at_T_512", "scores_GFLOPS_at_T_512",
             "phase_27_motivation_pct_memory")
    summary, ranges = dict.fromkeys(names), dict.fromkeys(names)
    if 512 in by_T:
        ops = by_T[512]["ops"]
        memory = [op for op in OPS if ops[op]["level_bound"] == "memory"]

        def figures(t):  # the four figures from one set of per-op times
            return dict(zip(names, (
                ops["softmax"]["flops"] / t["softmax"] / 1e9,
                100 * t["softmax"] / sum(t[op] for op in OPS),
                ops["scores"]["flops"] / t["scores"] / 1e9,
                100 * sum(t[op] for op in memory) / sum(t[op] for op in OPS))))
        summary = figures({op: ops[op]["time_s"] for op in OPS})
        per_worker = [figures({op: ops[op]["worker_times"][i] for op in OPS})
                      for i in range(len(ops["total"]["worker_times"]))]
        ranges = {n: [min(f[n] for f in per_worker), max(f[n] for f in per_worker)] for n in names}
    return {
        "experiment": "15-attention-perf",
        "date": results["date"],
        "seed": cfg["seed"],
        "versions": results["versions"],
        "depends_on": results["ceilings"]["depends_on"],
        "config": {"d_model": cfg["d_model"], "n_heads": cfg["n_heads"], "T_sweep": cfg["T_sweep"],
                   "d_head": cfg["d_head"], "repeats": cfg["repeats"], "min_time_s": cfg["min_time_s"],
                   "quick": cfg["quick"], "blas_threads": cfg["blas_threads"],
                   "workers": cfg["workers"],
                   "heap": results["heap"]["mode"]},
        "hardware": hw,
        "results_summary": summary,
        "results_summary_ranges": ranges,
        "results_summary_definitions": {
            "phase_27_motivation_pct_memory":
                "percent of the T=512 forward's time (sum of the five ops' time_s) spent in ops "
                "that are memory-bound against the ceiling of the memory level their working set "
                "fits in (cache-aware: a class that does not flip with DRAM bandwidth noise)",
            "ranges": "results_summary_ranges: [min, max] of each figure over the worker "
                      "processes, each from its own time_s",
            "softmax_pct_of_total_at_T_512":
                "softmax time_s / sum of the five ops' time_s at T=512, percent",
            "time_s": "the 25th percentile of all samples of an op: what the code costs when the "
                      "machine's slow episodes are not running (see the lab's README)",
        },
        "ridge_intensity": sm["ridge_intensity"],
        "ceilings_source": results["ceilings"]["source"],
        "conditions_verdict": results["conditions"]["verdict"],
        "conditions_reasons": results["conditions"]["reasons"],
        "threads": results["threads"],
        "perf_py_sha256": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
        "command": " ".join(["python", Path(__file__).name] + list(argv)),
        "environment": results["environment"],
    }


# ----------------------------------------------------------------------------------------------
# Compare two runs (--compare A B): measures nothing. A is the baseline (say, the committed
# reference), B the new run (say, a learner's laptop).

NOISE_FLOOR = 1.05  # the smallest band a verdict uses, whatever the workers' agreement


def load_run(arg):
    """A results.json of this lab, given as the file or a folder holding one; one line if not."""
    path = Path(arg)
    path = path / "results.json" if path.is_dir() else path
    try:
        res = json.loads(path.read_text())
        if res.get("experiment") != "15-attention-perf":
            raise ValueError
        for r in res["sweep"]:
            for op in OPS:
                o = r["ops"][op]
                float(o.get("time_s", o["median_s"])), float(o["time_share"]), o["bound"]
        res["config"]["d_model"], res["config"]["n_heads"], res["ceilings"]["beta_peak_GBps"]
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError, AttributeError):
        raise UsageError(f"{path} is not a results.json of 15-attention-perf") from None
    return path, res


def headline(o):
    """An op's headline time: time_s, or the median in files written before time_s existed."""
    return o.get("time_s", o["median_s"])


def noise(o):
    """A run's own noise on one op: how far its fresh processes disagree on the headline, the
    max/min of the workers' time_s; with five or more workers the second highest over the second
    lowest, so that one worker caught in a slow episode does not blind the comparison."""
    ws = sorted(o.get("worker_times") or [])
    if len(ws) >= 5:
        return ws[-2] / ws[1]
    return ws[-1] / ws[0] if ws else o.get("worker_time_spread")


def compare_rows(a, b, Ts):
    """Per op per T: both headlines, B/A, the change in share, and the verdict. A difference
    counts only if it is larger than both runs' own noise (at least NOISE_FLOOR)."""
    by = lambda res: {r["T"]: r for r in res["sweep"]}  # noqa: E731
    ra, rb = by(a), by(b)
    rows = []
    for T in Ts:
        for op in OPS:
            oa, ob = ra[T]["ops"][op], rb[T]["ops"][op]
            ratio = headline(ob) / headline(oa)
            spreads = [noise(o) for o in (oa, ob)]
            band = None if None in spreads else max(NOISE_FLOOR, *spreads)
            verdict = (None if band is None else "slower" if ratio > band else
                       "faster" if ratio < 1 / band else "same")
            rows.append({"T": T, "op": op, "a_s": headline(oa), "b_s": headline(ob),
                         "ratio": ratio, "share_pp": 100 * (ob["time_share"] - oa["time_share"]),
                         "noise_band": band, "verdict": verdict})
    return rows


def compare_story(a, b, Ts):
    """The two runs' stories side by side; each line that differs is marked, with a likely reason
    where the data gives one."""
    ca, cb = a["ceilings"], b["ceilings"]
    ridge = lambda c: c["pi_peak_GFLOPS"] / c["beta_peak_GBps"]  # noqa: E731
    beta_ratio = cb["beta_peak_GBps"] / ca["beta_peak_GBps"]
    pi_ratio = cb["pi_peak_GFLOPS"] / ca["pi_peak_GFLOPS"]
    story = []

    def line(fact, va, vb, differs=None, why=None):
        story.append({"fact": fact, "a": va, "b": vb,
                      "differs": va != vb if differs is None else differs,
                      "why": why if (va != vb if differs is None else differs) else None})

    cond = lambda r: r.get("conditions", {}).get("verdict", "not recorded")  # noqa: E731
    for fact, get in (("cpu", lambda r: r["hardware"]["cpu_model"]),
                      ("physical cores", lambda r: r["hardware"]["physical_cores"]),
                      ("BLAS threads", lambda r: r["config"]["blas_threads"]),
                      ("heap", lambda r: r["heap"]["mode"]),
                      ("governor", lambda r: r["hardware"]["cpu_governor_at_run"]),
                      ("run conditions", cond)):
        why = "; ".join(f"{name} was disturbed: " + "; ".join(r["conditions"]["reasons"])
                        for name, r in (("A", a), ("B", b)) if cond(r) == "disturbed") or \
            ("one run was written before run conditions were recorded"
             if "not recorded" in (cond(a), cond(b)) else None)
        line(fact, get(a), get(b), why=why)
    speed = lambda r: f"{1 / r:.1f}x slower" if r < 1 else f"{r:.1f}x faster"  # noqa: E731
    line("beta (GB/s)", ca["beta_peak_GBps"], cb["beta_peak_GBps"], abs(beta_ratio - 1) > 0.1,
         f"beta is {beta_ratio:.2f}x in B, so memory-bound ops are expected about "
         f"{speed(beta_ratio)} there")
    line("pi (GFLOPS)", ca["pi_peak_GFLOPS"], cb["pi_peak_GFLOPS"], abs(pi_ratio - 1) > 0.1,
         f"pi is {pi_ratio:.2f}x in B, so compute-bound ops are expected about "
         f"{speed(pi_ratio)} there")
    line("ridge (FLOP/byte)", ridge(ca), ridge(cb), abs(ridge(cb) / ridge(ca) - 1) > 0.1,
         "the ridge moves with pi/beta: ops near it change class")
    for T in Ts:
        ra = next(r for r in a["sweep"] if r["T"] == T)["ops"]
        rb = next(r for r in b["sweep"] if r["T"] == T)["ops"]
        dom = lambda ops: max(OPS, key=lambda op: ops[op]["time_share"])  # noqa: E731
        da, db = dom(ra), dom(rb)
        line(f"dominant op at T={T}", f"{da} {100 * ra[da]['time_share']:.0f}%",
             f"{db} {100 * rb[db]['time_share']:.0f}%", da != db,
             f"{db} takes {headline(rb[db]) / headline(ra[db]):.2f}x its time in A, "
             f"{da} {headline(rb[da]) / headline(ra[da]):.2f}x")
    for op in OPS:
        cls = lambda res: " ".join(f"{r['T']}:{r['ops'][op]['bound']}"  # noqa: E731
                                   for r in res["sweep"] if r["T"] in Ts)
        line(f"{op}, class per T", cls(a), cls(b),
             why="the ridge's interval is " + " in A and ".join(
                 "{:.2f}-{:.2f}".format(*c.get("ridge_range", [ridge(c)] * 2)) for c in (ca, cb))
             + " in B")
    for oa, ob in zip(a["analysis"]["expected_observations"], b["analysis"]["expected_observations"]):
        line(f"expected: {oa['claim']}", oa["held"], ob["held"])
    sa, sb = (r["analysis"].get("softmax_at_T_512") for r in (a, b))
    if sa and sb:
        ra_, rb_ = sa["ratio_to_memory_ceiling"], sb["ratio_to_memory_ceiling"]
        line("softmax / its memory ceiling at T=512", ra_, rb_, abs(rb_ / ra_ - 1) > 0.25,
             "the softmax's own speed and beta both move this ratio")
    return story


def plot_compare(rows, Ts, a_name, b_name):
    """One dot per op per T at B/A (log scale), on the grey noise band its verdict used."""
    fig, ax = new_figure(figsize=(9, 1.6 + 0.27 * len(rows)))
    y = np.arange(len(rows))[::-1] + np.repeat(np.arange(len(Ts))[::-1], len(OPS)) * 0.8
    for yi, r in zip(y, rows):
        if r["noise_band"]:
            ax.plot([1 / r["noise_band"], r["noise_band"]], [yi, yi], color="0.85", lw=7,
                    solid_capstyle="butt", zorder=1)
        ax.scatter(r["ratio"], yi, color=COLORS[r["op"]], s=36, zorder=3,
                   edgecolor="black" if r["verdict"] in ("slower", "faster") else "none")
        ax.annotate(f"{r['ratio']:.2f}  {r['verdict'] or 'no noise data'}", (1, yi),
                    xycoords=("axes fraction", "data"), xytext=(6, 0),
                    textcoords="offset points", va="center", fontsize=7.5,
                    fontweight="bold" if r["verdict"] in ("slower", "faster") else "normal")
    ax.axvline(1, color="black", lw=0.8, zorder=2)
    ax.set_xscale("log")
    lim = max(1.6, *(max(r["ratio"], 1 / r["ratio"], r["noise_band"] or 1) * 1.1 for r in rows))
    ax.set_xlim(1 / lim, lim)
    ticks = [t for t in (0.25, 0.5, 0.67, 0.8, 1, 1.25, 1.5, 2, 4) if 1 / lim < t < lim]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_yticks(y, [f"T={r['T']}  {r['op']}" for r in rows], fontsize=7.5)
    ax.set_ylim(y.min() - 0.8, y.max() + 0.8)
    ax.set_xlabel("B / A, headline time per op (left: B faster, right: B slower)")
    ax.set_title(f"B = {b_name} against A = {a_name}\ngrey: the noise band (max/min of both "
                 "runs' worker headlines); outlined dot: a real difference", fontsize=9)
    ax.grid(True, axis="x", which="both", color="0.93")
    fig.tight_layout()
    return fig


def compare(arg_a, arg_b, out):
    (pa, a), (pb, b) = load_run(arg_a), load_run(arg_b)
    for key in ("d_model", "n_heads"):
        if a["config"][key] != b["config"][key]:
            raise UsageError(f"the runs differ in {key} ({a['config'][key]} vs "
                             f"{b['config'][key]}): nothing to compare")
    Ta, Tb = ({r["T"] for r in res["sweep"]} for res in (a, b))
    Ts = sorted(Ta & Tb)
    if not Ts:
        raise UsageError(f"the runs share no T ({sorted(Ta)} vs {sorted(Tb)})")
    rows = compare_rows(a, b, Ts)
    result = {"a": str(pa), "b": str(pb), "T": Ts,
              "left_out_T": {"a_only": sorted(Ta - Tb), "b_only": sorted(Tb - Ta)},
              "noise_rule": f"same unless B/A leaves [1/band, band], band = max({NOISE_FLOOR}, "
                            "both runs' spread of worker time_s, second highest over second lowest "
                            "from five workers on); null: a run has no spread",
              "rows": rows, "story": compare_story(a, b, Ts)}
    files = {"compare.json": to_json(result),
             "compare.png": png_bytes(plot_compare(rows, Ts, pa.parent.name or str(pa),
                                                   pb.parent.name or str(pb)), dpi=100)}
    out = out or pb.parent
    check_writable(out)
    write_atomically(out, files)
    return result, out


def print_compare(c):
    print(f"A = {c['a']}\nB = {c['b']}\n")
    print(f"{'T':>5} {'op':<9} {'A ms':>9} {'B ms':>9} {'B/A':>6} {'share pp':>9}  verdict")
    for r in c["rows"]:
        print(f"{r['T']:>5} {r['op']:<9} {r['a_s'] * 1e3:9.3f} {r['b_s'] * 1e3:9.3f} "
              f"{r['ratio']:6.2f} {r['share_pp']:+9.1f}  {r['verdict'] or 'n/a (no spread)'}")
    left = c["left_out_T"]
    if left["a_only"] or left["b_only"]:
        print(f"\nleft out: T={left['a_only']} only in A, T={left['b_only']} only in B")
    if any(r["verdict"] is None for r in c["rows"]):
        print("\nno verdicts of noise: a run was written before worker spreads were recorded")
    print("\n  fact: A | B   (* the two runs tell a different story here)")
    for s in c["story"]:
        fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
        print(f"{'*' if s['differs'] else ' '} {s['fact']}: {fmt(s['a'])} | {fmt(s['b'])}"
              + (f"  <- {s['why']}" if s["why"] else ""))


# ----------------------------------------------------------------------------------------------
# Output: nothing is written until everything is ready; then each file atomically.

def write_atomically(out_dir, files):
    """Write every {name: bytes} to a temp file in out_dir, then rename each into place.
    On any failure (or Ctrl-C) the temp files go and the earlier files are left as they were."""
    out_dir.mkdir(parents=True, exist_ok=True)
    umask = os.umask(0)
    os.umask(umask)
    temps = {}
    try:
        for name, data in files.items():
            fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=".tmp")
            temps[name] = tmp
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the usual file mode
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        for name, tmp in list(temps.items()):
            os.replace(tmp, out_dir / name)
            del temps[name]
    finally:
        for tmp in temps.values():
            try:
                os.unlink(tmp)
            except OSError:
                pass


def render_plots(results):
    return {"perf.png": png_bytes(plot_perf(results)),
            "roofline.png": png_bytes(plot_roofline(results))}


def load_results(path):
    """results.json for --replot, checked for what the two plots read; one-line error if not."""
    try:
        res = json.loads(path.read_text())
        rows = res["sweep"]
        for r in rows + res["sweep_default_heap"]:
            for k in KEYS:
                float(r["ops"][k]["time_s"]), float(r["ops"][k]["environment_tax"])
            for op in OPS:
                float(r["ops"][op]["intensity"]), float(r["ops"][op]["gflops"])
                float(r["ops"][op]["time_share"]), float(r["ops"][op]["flop_share"])
        for r in rows:
            res["analysis"]["dominant_op_per_T"][str(r["T"])]
        res["analysis"]["phase_27_preview"]["measured"]["intensity"]
        float(res["ceilings"]["beta_peak_GBps"]), float(res["ceilings"]["pi_peak_GFLOPS"])
        res["hardware"]["cpu_model"], res["config"]["repeats"], res["heap"]["mode"]
        res["conditions"]["verdict"]
        if not rows:
            raise ValueError
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        raise UsageError(f"{path} is not a results.json written by perf.py") from None
    return res


def to_json(obj):
    return (json.dumps(obj, indent=2, allow_nan=False) + "\n").encode()


# ----------------------------------------------------------------------------------------------
# CLI

class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, instead of argparse's usage dump
        raise UsageError(message)


def positive(kind):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__}") from None
        if not (math.isfinite(v) and v > 0):
            raise argparse.ArgumentTypeError(f"{text!r} must be positive and finite")
        return v
    parse.__name__ = f"positive {kind.__name__}"
    return parse


def non_negative_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an int") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return v


def parse_args(argv):
    p = Parser(prog="perf.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--T", type=positive(int), nargs="+", default=list(T_SWEEP),
                   help="sequence lengths (default: 64 128 256 512)")
    p.add_argument("--d-model", type=positive(int), default=64)
    p.add_argument("--n-heads", type=positive(int), default=4)
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--min-time", type=positive(float), default=None,
                   help="seconds of work one sample aggregates (default 0.05; --quick 0.005)")
    p.add_argument("--repeats", type=positive(int), default=None,
                   help="samples per T, spread over the workers (default 100; --quick 6)")
    p.add_argument("--workers", type=positive(int), default=None,
                   help="fresh worker processes that share the samples (default 5; --quick 2)")
    p.add_argument("--in-process", action="store_true",
                   help="measure in this process instead of fresh workers (debugging, tests)")
    p.add_argument("--threads", type=positive(int), default=None,
                   help="BLAS threads (default: OMP_NUM_THREADS / OPENBLAS_NUM_THREADS if set, "
                        "else one per physical core)")
    p.add_argument("--out", type=Path, default=None,
                   help="output folder (default: this folder; with --compare, B's folder)")
    p.add_argument("--roofline", type=Path, default=None,
                   help="Phase 1 manifest with beta_peak_GBps and pi_peak_GFLOPS")
    p.add_argument("--quick", action="store_true", help="tiny protocol, a few seconds (smoke test)")
    p.add_argument("--replot", action="store_true",
                   help="only redraw perf.png and roofline.png from --out's results.json")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), default=None,
                   help="compare two runs (results.json or their folders; A the baseline): "
                        "writes compare.json and compare.png, measures nothing")
    args = p.parse_args(argv)
    if args.d_model % args.n_heads:
        p.error(f"--n-heads {args.n_heads} does not divide --d-model {args.d_model}")
    args.min_time = args.min_time or (0.005 if args.quick else 0.05)
    args.repeats = args.repeats or (6 if args.quick else 100)
    args.workers = min(args.workers or (2 if args.quick else 5), args.repeats)
    args.T = sorted(set(args.T))
    if not args.compare:
        args.out = args.out or HERE
    if not (args.replot or args.compare):
        check_writable(args.out)
    return args


def check_writable(out):
    """Fail before measuring, not after: make the folder and write (and drop) a probe file."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise UsageError(f"--out {out}: {e.strerror or e}") from None


def given_ceilings(args):
    """beta and pi from --roofline, else from Phase 1's manifest, else None (measure them).
    Read before measuring, so that a bad file fails at once, not after the run."""
    if args.roofline is not None:
        return {**read_ceilings(args.roofline), "source": "cli", "depends_on": str(args.roofline)}
    if (REPO / PHASE1_MANIFEST).is_file():
        return {**read_ceilings(REPO / PHASE1_MANIFEST), "source": "phase1",
                "depends_on": PHASE1_MANIFEST}
    return None


def choose_ceilings(given, measured):
    """The beta and pi the roofline uses, with their intervals, beside everything measured."""
    if given is None:
        given = {"beta_peak_GBps": measured["beta_dram_GBps"],
                 "pi_peak_GFLOPS": measured["pi_matmul_GFLOPS"],
                 "beta_peak_range": measured["beta_range_GBps"],
                 "pi_peak_range": measured["pi_range_GFLOPS"],
                 "source": "measured", "depends_on": None}
    else:  # Phase 1 gives one number each: no interval known
        given = {**given, "beta_peak_range": [given["beta_peak_GBps"]] * 2,
                 "pi_peak_range": [given["pi_peak_GFLOPS"]] * 2}
    c = {**measured, **given}
    c["ridge_range"] = [c["pi_peak_range"][0] / c["beta_peak_range"][1],
                        c["pi_peak_range"][1] / c["beta_peak_range"][0]]
    return c


SPREAD_LIMIT = 1.25  # max/min of the worker medians above which an op is flagged unstable


def run_memory_bytes(Ts, n_heads, dram_copy_bytes):
    """What a run needs at its peak: one worker at a time holds the largest forward's temporaries
    (about four (h, T, T) fp32 arrays at once, kept by the warm heap) and every T's mask, then the
    DRAM copy's two buffers; plus two interpreters with numpy (the parent and that worker)."""
    T = max(Ts)
    return 16 * n_heads * T * T + 4 * sum(t * t for t in Ts) + dram_copy_bytes + (300 << 20)


def run(args):
    hardware = machine_facts()
    levels = copy_levels(hardware, args.quick)
    need = run_memory_bytes(args.T, args.n_heads, levels["DRAM"]["bytes"])
    available = psutil.virtual_memory().available
    if need > available:  # refused before anything is measured, not killed mid-run
        raise UsageError(f"--T {max(args.T)} needs about {need / 2**30:.1f} GiB of memory; "
                         f"{available / 2**30:.1f} GiB are available")
    hardware["run_memory_estimate_MiB"] = need / 2**20
    given = given_ceilings(args)
    limit, why = blas_threads_plan(args, hardware)
    with threadpool_limits(limit, user_api="blas"):  # None: leave the pool as it is
        return measure_run(args, hardware, levels, given, limit, why)


def measure_run(args, hardware, levels, given, limit, why):
    blas = blas_info()
    threads = blas[0]["num_threads"] if blas else None
    k, rounds = args.workers, math.ceil(args.repeats / args.workers)
    default_repeats = max(3, min(6, args.repeats))
    one_thread_rounds = list(range(rounds // 4, rounds, 10)) if threads and threads > 1 else []
    anatomy_repeats = max(3, args.repeats // 30)
    ceilings_budget = 0.5 if args.quick else 2.0
    worker_work = rounds * len(args.T) * args.min_time * 1.25 + \
        len(one_thread_rounds) * len(args.T) * args.min_time / 2
    progress = make_progress(k * worker_work + len(args.T) * default_repeats * args.min_time
                             + 6 * anatomy_repeats * args.min_time + ceilings_budget)
    ht = None if threads is None else threads > hardware["physical_cores"]
    if ht:
        progress(f"warning: {threads} BLAS threads on {hardware['physical_cores']} physical cores: "
                 "hyper-thread siblings share a core; the lab asks for one thread per core "
                 "(--threads or OMP_NUM_THREADS)")
    if threads is None:
        progress("warning: threadpoolctl sees no BLAS library: the thread count is not controlled")
    gov = hardware["cpu_governor_at_run"]
    if gov not in ("performance", "unavailable"):
        progress(f"warning: CPU governor is '{gov}', not 'performance' as the lab asks: "
                 "sudo cpupower frequency-set -g performance")
    load_before = list(psutil.getloadavg())[0]
    before, own0 = cpu_times(), own_cpu_seconds()
    base = {"d_model": args.d_model, "n_heads": args.n_heads, "seed": args.seed, "T": args.T,
            "min_time": args.min_time, "threads_limit": limit}
    timeout = 60 + 20 * worker_work
    # The default allocator first, in a fresh process that has freed nothing large (glibc raises
    # its mmap threshold after a large free, and would then silently stop faulting), T ascending.
    dflt = run_task({**base, "label": "default-heap", "heap": "default", "loops": None,
                     "rounds": default_repeats, "interleave": False, "pairs": False,
                     "one_thread_rounds": []}, args.in_process, timeout)
    progress(f"default heap: done, {default_repeats} samples per T",
             len(args.T) * default_repeats * args.min_time)
    heap = keep_heap() if args.in_process else None
    spec = {"levels": levels, "threads": hardware["logical_cpus"],
            "reps": 2, "matmul": (512,) if args.quick else (2048,)}
    # The first worker calibrates the forwards per sample; every later worker gets the same loops
    # (pyperf's rule: all do the same work), and the parent never holds the big arrays.
    warm, loops = [], None
    for i in range(k):
        progress(f"worker {i + 1}/{k} started: {rounds} rounds over T={args.T}")
        warm.append(run_task({**base, "label": f"{i + 1}/{k}", "heap": "warm", "loops": loops,
                              "rounds": rounds, "interleave": True, "pairs": True,
                              "one_thread_rounds": one_thread_rounds, "ceilings": spec},
                             args.in_process, timeout))
        loops = {str(T): warm[0]["samples"][str(T)]["n"] for T in args.T}
        progress(f"worker {i + 1}/{k} done", worker_work + ceilings_budget / k)
    after = cpu_times()
    own_cpu = own_cpu_seconds() - own0
    if os.name == "nt" and not args.in_process:  # Windows does not count children's CPU time
        own_cpu += sum(w["cpu_s"] for w in [dflt] + warm)
    merged = merge(warm, args.T)
    rows = [profile_row(T, merged[T], args.min_time) for T in args.T]
    default_rows = [profile_row(T, m, args.min_time) for T, m in merge([dflt], args.T).items()]
    windows = [w for r in rows if (w := threading_windows(r["T"], merged[r["T"]], r))]
    mha = init_mha(args.d_model, args.n_heads, args.seed)
    anatomy = softmax_anatomy(512 if 512 in args.T else max(args.T), mha, args.seed,
                              args.min_time, anatomy_repeats)
    progress("softmax anatomy done", 6 * anatomy_repeats * args.min_time)
    ceilings = choose_ceilings(given, combine_ceilings([w["ceilings"] for w in warm], spec))
    progress(f"ceilings ({ceilings['source']}, median of {k} repeats): beta "
             f"{ceilings['beta_peak_GBps']:.1f} GB/s, pi {ceilings['pi_peak_GFLOPS']:.1f} GFLOPS")
    for r in rows + default_rows:
        place_on_roofline(r, args.d_model, args.n_heads, ceilings)
    for r in rows:
        for key in KEYS:
            o = r["ops"][key]
            o["unstable"] = o["worker_spread"] > SPREAD_LIMIT
            if o["unstable"]:
                progress(f"warning: T={r['T']} {key} unstable: worker medians differ "
                         f"{o['worker_spread']:.2f}x (> {SPREAD_LIMIT})")
    hardware["cpufreq_at_end"] = cpufreq_state()
    conditions = judge_conditions(before, after, own_cpu, load_before, warm,
                                  hardware["cpufreq_at_start"], hardware["cpufreq_at_end"])
    return {
        "experiment": "15-attention-perf",
        "date": datetime.date.today().isoformat(),
        "config": {"d_model": args.d_model, "n_heads": args.n_heads,
                   "d_head": args.d_model // args.n_heads, "T_sweep": args.T, "seed": args.seed,
                   "repeats": k * rounds, "min_time_s": args.min_time, "quick": args.quick,
                   "workers": k, "rounds_per_worker": rounds, "in_process": args.in_process,
                   "default_heap_repeats": default_repeats,
                   "one_thread_rounds": one_thread_rounds,
                   "blas_threads": threads, "threads_flag": args.threads,
                   "headline": "time_s = 25th percentile of all samples (see README)",
                   "model": "causal MHA, heads as a batch axis, no biases, float32"},
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "matplotlib": version("matplotlib"), "threadpoolctl": version("threadpoolctl"),
                     "psutil": version("psutil"), "blas": blas},
        "hardware": hardware,
        "threads": {"blas_threads": threads, "requested": limit, "source": why,
                    "physical_cores": hardware["physical_cores"],
                    "logical_cpus": hardware["logical_cpus"], "includes_hyperthreads": ht},
        "environment": {k: os.environ.get(k) for k in THREAD_VARS +
                        ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
        "heap": warm[0].get("heap", heap),
        "conditions": conditions,
        "workers": [{"pid": w["pid"], "started": w["started"], "ended": w["ended"],
                     "cpu_s": w.get("cpu_s"), "peak_rss_MiB": w["peak_rss_MiB"]} for w in [dflt] + warm],
        "memory_peak_MiB": {"parent": peak_rss_MiB(), "largest_worker":
                            max((w["peak_rss_MiB"] or 0) for w in [dflt] + warm) or None},
        "ceilings": ceilings,
        "sweep": rows,
        "sweep_default_heap": default_rows,
        "analysis": {**analyse(rows, args.d_model, args.n_heads, ceilings, anatomy),
                     "threading_windows": windows,
                     "unstable": [f"T={r['T']} {key}" for r in rows for key in KEYS
                                  if r["ops"][key]["unstable"]],
                     "threading_window_counts": {
                         k: sum(w[k] for w in windows) for k in
                         ("windows", "neither", "both", "two_threads_only", "one_thread_only")}},
    }


def print_summary(results):
    print(f"\n{'T':>5} " + " ".join(f"{k:>9}" for k in KEYS) + "  (ms per forward, time_s)")
    for r in results["sweep"]:
        print(f"{r['T']:>5} " + " ".join(f"{r['ops'][k]['time_s'] * 1e3:9.3f}" for k in KEYS))
    print(f"\n{'T':>5} {'overhead':>9} {'95% CI':>15} {'slow':>6} {'faults/fw':>9} {'default heap':>13}")
    for r, d in zip(results["sweep"], results["sweep_default_heap"]):
        lo, hi = r["instrumentation_overhead_ci95"]
        faults = r["page_faults_per_forward"]
        print(f"{r['T']:>5} {r['instrumentation_overhead']:9.2%} {f'[{lo:.2%}, {hi:.2%}]':>15} "
              f"{r['ops']['total']['slow_fraction']:6.0%} "
              f"{'n/a' if faults is None else f'{faults:.1f}':>9} "
              f"{d['ops']['total']['time_s'] * 1e3:10.3f} ms")
    c = results["ceilings"]
    print(f"\nroofline ({c['source']}): beta {c['beta_peak_GBps']:.1f} GB/s, "
          f"pi {c['pi_peak_GFLOPS']:.1f} GFLOPS, ridge {c['pi_peak_GFLOPS'] / c['beta_peak_GBps']:.2f}"
          " FLOP/byte")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--worker"]:  # a worker process of a run: task on stdin, result on stdout
        return worker_main()
    try:
        args = parse_args(argv)
        if args.compare:
            result, out = compare(*args.compare, args.out)
            print_compare(result)
            print(f"\nwrote compare.json, compare.png to {out}")
            return 0
        if args.replot:
            results = load_results(args.out / "results.json")
            files = render_plots(results)
        else:
            results = run(args)
            files = {"results.json": to_json(results),
                     "manifest.json": to_json(make_manifest(results, argv)),
                     **render_plots(results)}
        write_atomically(args.out, files)
    except UsageError as e:
        print(f"perf.py: error: {e}", file=sys.stderr)
        return 2
    except RunError as e:
        print(f"perf.py: error: {e}; nothing written", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"perf.py: error: cannot write {e.filename or 'output'}: {e.strerror or e}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("perf.py: interrupted; earlier results left as they were", file=sys.stderr)
        return 130
    if not args.replot:
        print_summary(results)
    print(f"\nwrote {', '.join(files)} to {args.out}")
    if not args.replot and results["conditions"]["verdict"] == "disturbed":
        print("warning: this run was disturbed: " + "; ".join(results["conditions"]["reasons"]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `perf.py | head`: the reader left early; the files are written
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
