"""Lab 03 of Phase 15: where the time of a naive numpy attention forward goes.

Measures a naive causal multi-head attention op by op for T = 64, 128, 256, 512, places every
op on this machine's roofline and writes, beside this script:

    results.json   per-op times for every T, the ceilings, the analysis and the run's verdict
    manifest.json  the lab's Block F manifest, with the machine as detected
    perf.png       stacked bars: where each forward's time goes (Block C)
    roofline.png   each op on the roofline (Block D)

Run it as `OMP_NUM_THREADS=4 python perf.py` on the lab's 4-core laptop; `--quick` is a smoke
test, `--replot` redraws the PNGs, `--compare A B` sets run B beside run A. The code measured is
deliberately naive (the lab forbids tuning it: that is Phase 27); the measurement is not. The
file reads top to bottom in the order the data flows: the model, its costs, the machine, one
worker, the sweep, the ceilings, the analysis, the verdict, the pictures, the files, --compare,
the command line.

Where to look:
  where is each op timed? ........ attention_forward_timed (Block A): perf_counter_ns between ops
  what is one sample? ............ timed_sample: n forwards back to back (n calibrated so that a
                                   sample lasts >= min_time), each op's summed time / n
  what is results.json's time_s? . summarize: the 25th percentile of an op's samples, taken by
                                   several fresh worker processes (run_workers) in rounds that
                                   interleave the T values; its median and spread sit beside it
  where do the ceilings come from? copy_GBps and matmul_GFLOPS, run by every worker after its
                                   samples, pooled by combine_ceilings (Phase 1's manifest wins)
  where is an op classed? ........ place_on_roofline: the lab's FLOPs and bytes against the ridge
  where is a run judged? ......... judge_conditions: quiet or disturbed, with a reason per check
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
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np
import psutil
from threadpoolctl import threadpool_info, threadpool_limits

try:
    import resource  # Unix: page faults and peak memory from getrusage
except ImportError:  # Windows: psutil counts the faults
    resource = None

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PHASE1_MANIFEST = "experiments/01-roofline/manifest.json"  # the lab's depends_on, from REPO

# The lab's experiment.
OPS = ("qkv_proj", "scores", "softmax", "av", "out_proj")
KEYS = OPS + ("total",)              # attention_forward_timed's dict, as the lab spells it
T_SWEEP = (64, 128, 256, 512)
T_FOCUS = 512                        # the lab's T of focus: results_summary, the softmax's ratio,
                                     # the anatomies and Phase 27's preview (else the largest T)
# The lab's laptop, as the curriculum describes it: an i5-8250U.
LAB_LAPTOP = {"caches_bytes": {"L1d": 32 << 10, "L2": 256 << 10, "L3": 6 << 20},
              "pi_GFLOPS": 250, "beta_GBps": [15, 19]}

# The protocol: "default" is the lab's measurement, "quick" a smoke test of every code path.
PROFILES = {
    "default": {"min_time": 0.05, "repeats": 100, "workers": 5, "default_heap_repeats": 6,
                "ceiling_repeats": 20, "matmul_n": 2048, "dram_bytes": None},
    "quick": {"min_time": 0.005, "repeats": 6, "workers": 2, "default_heap_repeats": 3,
              "ceiling_repeats": 2, "matmul_n": 512, "dram_bytes": 32 << 20},
}
ONE_THREAD_EVERY = 6      # every 6th round of a worker, its samples are repeated on one BLAS thread
PAIR_SHARE = 1 / 24       # each half of a timed/untimed pair: this share of a sample's forwards
COPY_MIN_TIME = 0.005     # seconds that one batch of copies aggregates
COPY_MAX_BYTES = 256 << 20  # the largest copy working set: a run stays well under 1 GiB

# Thresholds, each named once.
SLOW = 1.25               # a sample this many times its op's time_s is a slow sample
SPREAD_LIMIT = 1.25       # worker medians further apart than this: the op is flagged unstable
PLATEAU = 0.10            # two copy rates within 10 %: one plateau, one roof
COOPERATION_LIMIT = 0.90  # at the largest T, scores + av on all BLAS threads under 90 % of one's
OTHERS_CPUS_LIMIT = 0.25  # CPUs that other processes may use beyond those the run leaves free
STEAL_LIMIT = 0.02        # share of the CPU time the hypervisor may give to someone else
PREEMPT_LIMIT = 50        # involuntary context switches per second of the workers' sampling
CLOCK_DROP_LIMIT = 0.10   # the cores' clock may fall this much from the first worker to the last
NOISE_FLOOR = 1.05        # --compare: the narrowest band inside which two times are the same
STATE_LIMIT = 1.25        # --compare: a machine reference that moves this much: another state


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


# ----------------------------------------------------------------------------------------------
# Block A': what each op costs, in the lab's notation (Block D's formulas), beside the model.

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


# ----------------------------------------------------------------------------------------------
# The machine, read through this one seam and nowhere else: on Linux from /proc and /sys under
# SYSROOT (the tests point it at simulated machines), elsewhere through psutil. What a platform
# cannot tell is recorded as None or "unavailable", with the reason, never guessed.

SYSROOT = Path("/")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")


def read_text(path, default=None):
    try:
        return Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return default


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


def current_MHz():
    """The cores' current clock, averaged over the CPUs (Linux's cpufreq), or None where it
    cannot be read (a VM, macOS and Windows give at best a nominal figure)."""
    khz = [int(v) for p in SYSROOT.glob("sys/devices/system/cpu/cpu[0-9]*/cpufreq")
           if (v := read_text(p / "scaling_cur_freq", "")).isdigit()]
    return sum(khz) / len(khz) / 1000 if khz else None


def cpufreq_state():
    """Governor, driver, frequencies (MHz) and turbo of every CPU, from Linux's cpufreq;
    governor "unavailable" where there is no cpufreq, with the reason."""
    cpus = sorted(SYSROOT.glob("sys/devices/system/cpu/cpu[0-9]*/cpufreq"))
    govs = {read_text(p / "scaling_governor") for p in cpus} - {None}
    mhz = lambda name: sorted({int(v) // 1000 for p in cpus  # noqa: E731
                               if (v := read_text(p / name, "")).isdigit()})
    no_turbo = read_text(SYSROOT / "sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = read_text(SYSROOT / "sys/devices/system/cpu/cpufreq/boost")
    return {"governor": "/".join(sorted(govs)) if govs else "unavailable",
            "driver": "/".join(sorted({read_text(p / "scaling_driver") for p in cpus} - {None}))
            or None, "min_MHz": (mhz("scaling_min_freq") or [None])[0],
            "max_MHz": (mhz("scaling_max_freq") or [None])[-1],
            "cur_MHz": mhz("scaling_cur_freq") or None,
            "turbo": ("off" if no_turbo == "1" else "on") if no_turbo is not None else
                     ("on" if boost == "1" else "off") if boost is not None else None}


def page_faults():
    """Page faults of this process so far, or None where the OS does not count them."""
    if resource is not None:  # Linux, macOS: minor faults, the ones a reused heap avoids
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    mem = psutil.Process().memory_info()  # Windows counts every fault, soft or hard
    return getattr(mem, "num_page_faults", None)


def peak_rss_MiB():
    """This process's peak resident memory, or None where resource is missing (Windows)."""
    if resource is None:
        return None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if platform.system() == "Darwin" else rss / 2**10  # bytes vs KiB


def glibc_malloc():
    """glibc's mallopt, or None on a platform whose C library is not glibc."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None


def machine_facts():
    cpuinfo = read_text(SYSROOT / "proc/cpuinfo", "")
    cpu_dirs = sorted(SYSROOT.glob("sys/devices/system/cpu/cpu[0-9]*/topology"))
    # A physical core is one set of hyper-thread siblings (core_cpus_list; thread_siblings_list
    # on kernels before 5.7).
    groups = {read_text(d / "core_cpus_list") or read_text(d / "thread_siblings_list")
              for d in cpu_dirs} - {None}
    logical = len(cpu_dirs) or psutil.cpu_count() or os.cpu_count() or 1
    physical = len(groups) or psutil.cpu_count(logical=False) or logical
    caches = {}
    for idx in sorted(SYSROOT.glob("sys/devices/system/cpu/cpu0/cache/index*")):
        kind = {"Data": "d", "Instruction": "i"}.get(read_text(idx / "type", ""), "")
        caches[f"L{read_text(idx / 'level', '?')}{kind}"] = {
            "size": read_text(idx / "size"), "shared_cpu_list": read_text(idx / "shared_cpu_list")}
    freq = cpufreq_state()
    unavailable = {k: why for k, missing, why in (
        ("caches", not caches, "no /sys cache description on this OS"),
        ("governor", freq["governor"] == "unavailable", "no cpufreq in sysfs (a VM, a "
         "container, or not Linux): the governor cannot be read or set here"),
        ("clock", current_MHz() is None, "no cpufreq scaling_cur_freq: its fall is not judged"),
        ("page_faults", page_faults() is None, "no page-fault count from resource or psutil"),
        ("warm_heap", glibc_malloc() is None, "not glibc: the allocator cannot keep its pages"))
        if missing}
    return {
        "cpu_model": cpu_model(cpuinfo), "cpu_governor_at_run": freq["governor"],
        "logical_cpus": logical, "physical_cores": physical, "smt": logical > physical,
        "caches": caches, "virtualized": " hypervisor" in cpuinfo,
        "memory_GiB": round(psutil.virtual_memory().total / 2**30, 1),
        "os": f"{platform.system()} {platform.release()}", "machine": platform.machine(),
        "libc": " ".join(platform.libc_ver()).strip() or None,
        "cpufreq_at_start": freq, "unavailable": unavailable,
    }


def blas_info():
    return [{k: p.get(k) for k in ("internal_api", "version", "num_threads", "threading_layer",
                                  "architecture", "filepath")}
            for p in threadpool_info() if p.get("user_api") == "blas"]


def threads_plan(flag, hardware):
    """(limit, asked, source): the BLAS threads to impose (None: leave the pool as the
    environment set it), how many were asked for, and by whom. The lab says one per physical
    core (4 on its 4-core / 8-thread laptop) unless the learner decides otherwise."""
    env = {k: os.environ[k] for k in THREAD_VARS if os.environ.get(k)}
    if flag:
        return flag, flag, "flag: --threads"
    if env:
        first = next(iter(env.values()))
        asked = int(first) if first.isdigit() else None
        return None, asked, "environment: " + ", ".join(f"{k}={v}" for k, v in env.items())
    return hardware["physical_cores"], hardware["physical_cores"], "default: one per physical core"


def threads_warning(threads):
    """One line when the BLAS threads that ran are not the ones asked for, or not one per
    physical core as the lab asks; None when all agree."""
    ran, asked, cores = threads["blas_threads"], threads["asked"], threads["physical_cores"]
    if ran is None:
        return "threadpoolctl sees no BLAS library: the thread count is not controlled"
    parts = [f"{asked} BLAS threads were asked for ({threads['source']}) and {ran} ran"
             + (" (BLAS caps them at the CPUs)" if ran == threads["logical_cpus"] < asked else "")
             ] if asked not in (None, ran) else []
    if ran != cores:
        parts.append(f"{ran} BLAS threads on {cores} physical cores: " + (
            "hyper-thread siblings share a core; " if ran > cores else "") + "the lab asks for "
            "one thread per core (--threads or OMP_NUM_THREADS)")
    return "; ".join(parts) or None


def cpu_times():
    """System-wide CPU seconds: busy, total and steal (None where the OS has no steal)."""
    t = psutil.cpu_times()
    busy = sum(getattr(t, f, 0.0) for f in ("user", "nice", "system", "irq", "softirq",
                                             "interrupt", "dpc"))
    steal, idle = getattr(t, "steal", None), t.idle + getattr(t, "iowait", 0.0)
    return {"wall": time.perf_counter(), "busy": busy, "total": busy + idle + (steal or 0),
            "steal": steal}


# ----------------------------------------------------------------------------------------------
# Block B, one worker: a fresh process (this script re-run as `perf.py --worker`) that warms up,
# takes its share of the samples, then the anatomies and its repeats of the ceilings. It only
# measures; the parent only spawns.

def keep_heap():
    """Stop glibc from handing the forward's large temporaries back to the kernel. By default a
    block over the mmap threshold (128 KiB, raised dynamically up to 32 MiB) is unmapped on free
    and the heap top trimmed: every forward then faults its T x T temporaries back in. No mmap
    and the largest trim threshold keep the pages: the warm run the lab asks for, by changing
    the process's allocator, not the code under measurement."""
    mallopt = glibc_malloc()
    if mallopt is None:
        return {"mode": "default", "control": "unavailable (not glibc): default allocator kept"}
    M_TRIM_THRESHOLD, M_MMAP_MAX, most = -1, -4, 2**31 - 1  # mallopt takes a C int
    if not (mallopt(M_MMAP_MAX, 0) == 1 and mallopt(M_TRIM_THRESHOLD, most) == 1):
        return {"mode": "default", "control": "mallopt refused: default allocator kept"}
    return {"mode": "warm", "control": f"glibc mallopt M_MMAP_MAX=0 M_TRIM_THRESHOLD={most}"}


def batch_seconds(fn, n):
    t0 = time.perf_counter_ns()  # wall-clock seconds of n back-to-back calls of fn
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


def make_input(T, mha, seed):
    """x (T, d_model) float32, the same for a given (seed, T) in every process of the run."""
    return np.random.default_rng([seed, T]).standard_normal((T, len(mha.W_Q))).astype(np.float32)


def timed_sample(x, mha, mask, n):
    """One sample: n timed forwards back to back. Per op, the sum of its n times / n; beside
    it the wall-clock time of the whole batch / n, which also sees what the timers do not."""
    w0 = time.perf_counter_ns()
    forwards = [attention_forward_timed(x, mha, mask) for _ in range(n)]
    wall = (time.perf_counter_ns() - w0) * 1e-9 / n
    return {k: math.fsum(f[k] for f in forwards) / n for k in KEYS}, wall


def anatomy_steps(x, mha, mask):
    """scores and softmax taken apart into the passes naive numpy makes, on the forward's real
    intermediates: {step: (call, bytes it reads and writes)}. The lab counts scores as
    8 T d_k + 4 T^2 bytes a head (S written once) and softmax as 8 T^2 (S read, A written once);
    numpy walks the (h, T, T) data once per step below. Row vectors (m, s) are left out."""
    h = mha.n_heads
    Q, K, _ = qkv_proj(x, mha)
    A = softmax(scores(Q, K, h), mask)  # first, so that its temporaries are gone before ours
    Qh, KhT = split_heads(Q, h), split_heads(K, h).transpose(0, 2, 1)
    scale = math.sqrt(Q.shape[1] // h)
    P = Qh @ KhT
    S = P / scale
    Z = S + mask
    m = Z.max(axis=-1, keepdims=True)
    D = Z - m
    E = np.exp(D)
    s = E.sum(axis=-1, keepdims=True)
    if not np.array_equal(E / s, A):
        raise RuntimeError("anatomy_steps no longer mirrors scores() and softmax(): update both")
    del A
    big = S.nbytes  # one pass over the (h, T, T) fp32 data
    return {"scores/matmul": (lambda: Qh @ KhT, Q.nbytes + K.nbytes + big),
            "scores/scale": (lambda: P / scale, 2 * big),
            "softmax/mask_add": (lambda: S + mask, 2 * big + mask.nbytes),
            "softmax/max": (lambda: Z.max(axis=-1, keepdims=True), big),
            "softmax/subtract": (lambda: Z - m, 2 * big),
            "softmax/exp": (lambda: np.exp(D), 2 * big),
            "softmax/sum": (lambda: E.sum(axis=-1, keepdims=True), big),
            "softmax/divide": (lambda: E / s, 2 * big)}


def copy_GBps(src, dst, threads, reps):
    """Phase 1's bandwidth kernel: np.copyto of one fp32 buffer into another, 8 N bytes per copy
    of N floats (read once, written once). With threads > 1 each thread copies one slice (numpy
    releases the GIL). GB/s of `reps` batches of >= COPY_MIN_TIME each, after a warm-up."""
    N = src.size
    parts = [slice(i * N // threads, (i + 1) * N // threads) for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        copy = (lambda: np.copyto(dst, src)) if threads == 1 else \
            (lambda: list(pool.map(lambda p: np.copyto(dst[p], src[p]), parts)))
        copy()  # warm-up: first touch of both buffers, threads started
        n = calibrate(copy, COPY_MIN_TIME)
        return [8 * N * n / batch_seconds(copy, n) / 1e9 for _ in range(reps)]


def matmul_GFLOPS(n, reps):
    """A large fp32 matmul through numpy's BLAS: 2 n^3 FLOPs over 3 * 4 n^2 bytes (I = n / 6)."""
    a, b = (np.random.default_rng(i).random((n, n), dtype=np.float32) for i in range(2))
    a @ b
    return [2 * n**3 / batch_seconds(lambda: a @ b, 1) / 1e9 for _ in range(reps)]


def parse_size(s):
    """'48K', '32M', '1024' (as /sys writes cache sizes) -> bytes; None if absent."""
    if not s:
        return None
    unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1])
    return int(s[:-1]) * unit if unit else int(s)


def copy_levels(hardware, dram_bytes=None):
    """The working set (source + destination) that measures each level's bandwidth: half of each
    data cache the OS describes (carm-roofline sizes them so too), DRAM four times past the last
    (or dram_bytes), none over COPY_MAX_BYTES: a server's L3 can be hundreds of MiB, and there
    the DRAM copy is marked not past_llc instead of filling the memory. DRAM is copied at half
    its size too: Phase 1 reads beta off a plateau; two sizes that disagree say there is none."""
    caches = {name: parse_size(c["size"]) for name, c in hardware["caches"].items()
              if not name.endswith("i") and parse_size(c["size"])}
    llc = max(caches.values(), default=8 << 20)
    levels = {name: {"capacity_bytes": size, "bytes": min(max(8 << 10, size // 2), COPY_MAX_BYTES),
                     "shared": size == llc} for name, size in sorted(caches.items())}
    dram = dram_bytes or min(max(128 << 20, 4 * llc), COPY_MAX_BYTES)
    levels["DRAM"] = {"capacity_bytes": None, "bytes": dram, "shared": True,
                      "past_llc": dram > llc, "check_bytes": dram // 2}
    return levels


def measure_ceilings(spec):
    """This worker's repeats of every ceiling, taken after its samples, never between them (a
    128 MiB copy would evict the caches the next sample runs from). One level at a time, its
    buffers freed before the next: a worker never holds more than COPY_MAX_BYTES of them. A
    private cache (L1, L2) is one core's, so only the shared levels are also copied by all CPUs."""
    def copies(nbytes, shared):
        # Two buffers of half the working set, in one block, the destination half a page from
        # the source (modulo pages): on AMD Zen, glibc's memmove (rep movsb) copies ten times
        # slower when dst - src is a few bytes past a multiple of 4 KiB, as back-to-back heap
        # buffers are; that would measure the CPU's pitfall, not the cache.
        n = nbytes // 8
        gap = (2048 - 4 * n) % 4096 // 4
        block = np.ones(2 * n + gap, dtype=np.float32)
        src, dst = block[:n], block[n + gap:]
        both = spec["threads"] > 1 and shared
        return {"1": copy_GBps(src, dst, 1, spec["reps"]),
                "all": copy_GBps(src, dst, spec["threads"], spec["reps"]) if both else None}

    out = {"copy": {}, "copy_check": {}}
    for name, lv in spec["levels"].items():
        out["copy"][name] = copies(lv["bytes"], lv["shared"])
        if lv.get("check_bytes"):
            out["copy_check"][name] = copies(lv["check_bytes"], lv["shared"])
    out["matmul"] = matmul_GFLOPS(spec["matmul_n"], 1)  # pi: one per worker, its median
    return out


def prepare(task, mha, st, T):
    """A T's input and mask, a warm-up forward (first-touch faults, BLAS threads started) and,
    in the first worker, the forwards per sample."""
    x, mask = make_input(T, mha, task["seed"]), causal_mask(T)
    st["inputs"][T] = x, mask
    attention_forward(x, mha, mask)
    if str(T) not in st["loops"]:
        st["loops"][str(T)] = calibrate(lambda: attention_forward_timed(x, mha, mask),
                                        task["min_time"])


def sample_T(task, mha, st, r, T):
    """Round r's sample of one T: the timed sample, a timed/untimed pair, and in the one-thread
    rounds the same sample again at once on one BLAS thread (the same time window)."""
    if T not in st["inputs"]:  # the default-heap worker: each T prepared when it is reached
        prepare(task, mha, st, T)
    (x, mask), n, out = st["inputs"][T], st["loops"][str(T)], st["res"][str(T)]
    f0 = page_faults()
    ops, wall = timed_sample(x, mha, mask, n)
    if f0 is not None:
        st["faults"][T] += page_faults() - f0
    out["wall"].append(wall)
    for k in KEYS:
        out[k].append(ops[k])
    if task["pairs"]:  # what the six timers cost: timed over untimed forwards, back to back (the
        m = max(1, int(n * PAIR_SHARE))  # machine's slow drift cancels), in alternating order
        fwd = lambda f: lambda: f(x, mha, mask)  # noqa: E731
        pair = (fwd(attention_forward_timed), fwd(attention_forward))
        t1, t2 = (batch_seconds(f, m) for f in (pair if r % 2 else pair[::-1]))
        out["pairs"].append(t1 / t2 if r % 2 else t2 / t1)
    if r in task["one_thread_rounds"]:  # half a sample: a ratio, not a headline
        with threadpool_limits(1, user_api="blas"):
            ops, _ = timed_sample(x, mha, mask, max(1, n // 2))
        for k in KEYS:
            out["one_thread"][k].append(ops[k])
        out["one_thread_after"].append(len(out["wall"]) - 1)
    if (mhz := current_MHz()) is not None:
        st["MHz"].append(mhz)


def run_anatomy(task, mha, loops):
    """One sample of every anatomy step at anatomy_T, its calls calibrated by the first worker
    like the forwards: seconds per call, and the bytes the step moves."""
    T = task["anatomy_T"]
    out = {}
    for name, (fn, nbytes) in anatomy_steps(make_input(T, mha, task["seed"]), mha,
                                             causal_mask(T)).items():
        fn()  # warm-up
        key = f"anatomy/{name}"
        if key not in loops:
            loops[key] = calibrate(fn, task["min_time"])
        out[name] = {"seconds": batch_seconds(fn, loops[key]) / loops[key], "bytes": nbytes}
    return out


def measure(task):
    """One worker's share: `rounds` rounds, each one sample of every T in an order that rotates
    (a slow episode lands on every T alike), then the anatomies and its repeats of the ceilings.
    Without `interleave` (the default-heap worker) each T is warmed up, calibrated and sampled in
    turn, T ascending, as a process that has freed nothing larger. gc is off while sampling."""
    mha, Ts = init_mha(task["d_model"], task["n_heads"], task["seed"]), task["T"]
    st = {"inputs": {}, "loops": dict(task["loops"] or {}), "faults": dict.fromkeys(Ts, 0),
          "MHz": [], "res": {str(T): {**{k: [] for k in KEYS}, "wall": [], "pairs": [],
                                      "one_thread": {k: [] for k in KEYS}, "one_thread_after": []}
                             for T in Ts}}
    if task["interleave"]:
        for T in Ts:
            prepare(task, mha, st, T)
        schedule = [(r, T) for r in range(task["rounds"])
                    for T in Ts[r % len(Ts):] + Ts[:r % len(Ts)]]
    else:
        schedule = [(r, T) for T in Ts for r in range(task["rounds"])]
    proc, linux = psutil.Process(), platform.system() == "Linux"  # elsewhere psutil counts 0
    switches, t0, started = proc.num_ctx_switches().involuntary, time.perf_counter(), time.time()
    gc.disable()  # a collection inside a sample would be timed as the op it interrupts
    try:
        for r, T in schedule:
            sample_T(task, mha, st, r, T)
    finally:
        gc.enable()
    sampling_s = time.perf_counter() - t0
    preempted = proc.num_ctx_switches().involuntary - switches if linux else None
    for T in Ts:
        n = st["res"][str(T)]["n"] = st["loops"][str(T)]
        st["res"][str(T)]["faults_per_forward"] = st["faults"][T] / (task["rounds"] * n) \
            if page_faults() is not None else None
    anatomy = run_anatomy(task, mha, st["loops"]) if task["anatomy_T"] else None
    ceilings = measure_ceilings(task["ceilings"]) if task["ceilings"] else None
    return {"samples": st["res"], "loops": st["loops"], "anatomy": anatomy, "ceilings": ceilings,
            "started": started, "ended": time.time(), "sampling_s": sampling_s,
            "preempted": preempted, "MHz": st["MHz"], "pid": os.getpid(),
            "peak_rss_MiB": peak_rss_MiB()}


TASK_KEYS = ("label", "d_model", "n_heads", "seed", "T", "min_time", "threads_limit", "heap",
             "loops", "rounds", "interleave", "pairs", "one_thread_rounds", "anatomy_T",
             "ceilings")


def worker_run(task):
    """A worker's whole job, in a fresh process or (--in-process) here: its heap, its BLAS
    threads, its measurement, and the CPU time it took."""
    heap = keep_heap() if task["heap"] == "warm" else {"mode": "default",
                                                         "control": "the allocator's defaults"}
    with threadpool_limits(task["threads_limit"], user_api="blas"):
        return {**measure(task), "heap": heap, "blas_threads": (blas_info() or [{}])[0].get(
            "num_threads"), "cpu_s": time.process_time()}


def worker_main():
    """`perf.py --worker`: one task (JSON) on stdin, its result (JSON) on stdout, which carries
    nothing else; a bad task is one line on stderr and exit 2."""
    try:
        task = json.loads(sys.stdin.read())
        if not isinstance(task, dict) or any(k not in task for k in TASK_KEYS):
            raise ValueError("a task needs " + ", ".join(TASK_KEYS))
    except ValueError as e:  # a JSONDecodeError too
        print(f"perf.py --worker: bad task: {e}", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(json.dumps(worker_run(task)))
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: leave quietly
        return 130
    return 0


# ----------------------------------------------------------------------------------------------
# Block B, the sweep: the parent plans the work, runs the workers one after another (never two
# at once), and turns their pooled samples into the statistics of each op at each T.

class RunError(Exception):
    """A worker died, hung or wrote no result: one line, exit 1, nothing written."""


def make_plan(args, hardware, threads_ran):
    """Everything the workers will do, fixed before the first one starts: the rounds, the
    one-thread rounds, the anatomies' T, the ceilings' spec, and the work it all adds up to."""
    prof = PROFILES["quick" if args.quick else "default"]
    rounds = math.ceil(args.repeats / args.workers)
    one_thread = list(range(min(2, rounds - 1), rounds, ONE_THREAD_EVERY)) \
        if threads_ran and threads_ran > 1 else []  # one thread cannot cooperate with itself
    spec = {"levels": copy_levels(hardware, prof["dram_bytes"]),
            "threads": hardware["logical_cpus"],
            "reps": math.ceil(prof["ceiling_repeats"] / args.workers), "matmul_n": prof["matmul_n"]}
    sample = args.min_time * len(args.T)
    worker_work = sample * (rounds * (1 + 2 * PAIR_SHARE) + len(one_thread)) + \
        8 * args.min_time + (0.1 if args.quick else 0.8)  # the anatomies' 8 steps, the ceilings
    return {"workers": args.workers, "rounds": rounds, "one_thread_rounds": one_thread,
            "default_heap_repeats": min(prof["default_heap_repeats"], args.repeats),
            "anatomy_T": T_FOCUS if T_FOCUS in args.T else max(args.T), "ceilings": spec,
            "worker_work": worker_work,
            "default_work": sample * min(prof["default_heap_repeats"], args.repeats) * 1.5}


def run_task(task, in_process, timeout):
    """Run one task in a fresh `perf.py --worker` process (or here, with --in-process) and return
    its result. On any exception, Ctrl-C included, the worker is killed and reaped first."""
    if in_process:
        return worker_run(task)
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


def make_progress(planned):
    """A progress printer: elapsed time, the message, and the time left, extrapolated from how
    long the planned work done so far actually took."""
    start, done = time.perf_counter(), [0.0]

    def progress(msg, work=0.0):
        done[0] += work
        t = time.perf_counter() - start
        left = f"  (~{t / done[0] * (planned - done[0]):.0f} s left)" * (0 < done[0] < planned)
        print(f"[{t:5.1f} s] {msg}{left}", flush=True)
    return progress


def run_workers(plan, base, in_process, progress):
    """The default-heap worker first (a fresh process that has freed nothing large: glibc raises
    its mmap threshold after a large free, and would then silently stop faulting), then the warm
    workers. The first warm worker calibrates; every later one gets its loops."""
    timeout = 60 + 20 * plan["worker_work"]
    dflt = run_task({**base, "label": "default-heap", "heap": "default", "loops": None,
                     "rounds": plan["default_heap_repeats"], "interleave": False, "pairs": False,
                     "one_thread_rounds": [], "anatomy_T": None, "ceilings": None},
                    in_process, timeout)
    progress(f"default heap: done, {plan['default_heap_repeats']} samples per T",
             plan["default_work"])
    warm, loops, k = [], None, plan["workers"]
    for i in range(k):
        progress(f"worker {i + 1}/{k} started: {plan['rounds']} rounds over T={base['T']}")
        warm.append(run_task({**base, "label": f"{i + 1}/{k}", "heap": "warm", "loops": loops,
                              "rounds": plan["rounds"], "interleave": True, "pairs": True,
                              "one_thread_rounds": plan["one_thread_rounds"],
                              "anatomy_T": plan["anatomy_T"], "ceilings": plan["ceilings"]},
                             in_process, timeout))
        loops = warm[0]["loops"]
        progress(f"worker {i + 1}/{k} done", plan["worker_work"])
    return dflt, warm


def merge(results, Ts):
    """The workers' samples of each T, pooled, with each worker's own for the spread."""
    parts = {T: [w["samples"][str(T)] for w in results] for T in Ts}
    return {T: {"parts": ps, **{k: sum((p[k] for p in ps), []) for k in KEYS + ("wall", "pairs")}}
            for T, ps in parts.items()}


def summarize(samples, workers):
    """The statistics of one op at one T. time_s, the headline, is the 25th percentile of all
    samples. Interference on a shared machine only ever adds time, and it comes in episodes of
    seconds: the plain median moves with how much of the run such an episode covered, the 25th
    percentile does not until three quarters of the samples are slow, and unlike the minimum it
    is not one lucky sample. The median, the spread between the workers' own samples (`workers`),
    slow_fraction and environment_tax (what the episodes cost) stay beside it."""
    a = np.asarray(samples, dtype=np.float64)
    p25, med, p75 = np.percentile(a, [25, 50, 75])
    meds = [float(np.median(w)) for w in workers if len(w)]
    p25s = [float(np.percentile(w, 25)) for w in workers if len(w)]
    return {"time_s": float(p25), "mean_s": float(a.mean()),
            "std_s": float(a.std(ddof=1)) if a.size > 1 else 0.0,
            "median_s": float(med), "p25_s": float(p25), "p75_s": float(p75),
            "min_s": float(a.min()), "slow_fraction": float(np.mean(a > SLOW * p25)),
            "environment_tax": float(med / p25 - 1),
            "worker_medians": meds, "worker_spread": max(meds) / min(meds),
            "unstable": max(meds) / min(meds) > SPREAD_LIMIT,
            "worker_times": p25s, "worker_time_spread": max(p25s) / min(p25s)}


def profile_row(T, m, min_time):
    """One row of the sweep from the pooled samples of one T."""
    parts, wall = m["parts"], np.array(m["wall"])
    n = parts[0]["n"]
    faults = [p["faults_per_forward"] for p in parts]
    row = {
        "T": T, "n_inner": n, "repeats": len(wall), "workers": len(parts),
        "ops": {k: summarize(m[k], [p[k] for p in parts]) for k in KEYS},
        "samples_below_min_time": int(np.sum(wall * n < min_time)),
        # Time of a forward (wall clock around n calls) that the five op timers do not see.
        "accounting_gap": float(np.median(1 - sum(np.array(m[op]) for op in OPS) / wall)),
        "page_faults_per_forward": None if None in faults else float(np.mean(faults)),
    }
    if m["pairs"]:  # the median's distribution-free 95% interval: order stats n/2 -/+ 1.96 √n/2
        a, half = np.sort(m["pairs"]), 1.96 * math.sqrt(len(m["pairs"])) / 2
        lo = max(0, math.floor(len(a) / 2 - half))
        hi = min(len(a) - 1, math.ceil(len(a) / 2 + half))
        row.update(untimed_repeats=len(a), instrumentation_overhead=float(np.median(a) - 1),
                   instrumentation_overhead_ci95=[float(a[lo] - 1), float(a[hi] - 1)])
    return row


def threading_windows(T, m, row):
    """The one-thread samples against the sample taken just before them on all BLAS threads, in
    the same time window: on scores + av, the median of all threads over one; and how many
    windows were slow (scores + av > SLOW x their time_s) for all threads but not for one, the
    mark of threads that stop cooperating while a single thread keeps its speed."""
    quad = ("scores", "av")
    pairs = [(sum(p[op][i] for op in quad), sum(p["one_thread"][op][j] for op in quad))
             for p in m["parts"] for j, i in enumerate(p["one_thread_after"])]
    if not pairs:
        return None
    one = np.percentile([b for _, b in pairs], 25)
    many = sum(row["ops"][op]["time_s"] for op in quad)
    return {"T": T, "windows": len(pairs),
            "threads_over_one": float(np.median([a / b for a, b in pairs])),
            "slow_for_threads_only": sum(bool(a > SLOW * many and b <= SLOW * one)
                                         for a, b in pairs),
            "one_thread_ops": {k: float(np.median(sum((p["one_thread"][k] for p in m["parts"]),
                                                      []))) for k in KEYS}}


# ----------------------------------------------------------------------------------------------
# Block D, the ceilings: each level's copy and pi from the workers' repeats (Phase 1's method),
# unless Phase 1's manifest (or --roofline) gives beta and pi; then the ridge and its interval.

def pooled(xs):
    """A ceiling from its repeats: the median, and [min, max] as its interval."""
    return float(np.median(xs)), [float(min(xs)), float(max(xs))]


def level_rates(runs):
    """One level's copy rates from every worker's repeats. All threads copy at least as fast as
    one, so each repeat counts the better of the two."""
    one = sum((r["1"] for r in runs), [])
    every = None if runs[0]["all"] is None else sum((r["all"] for r in runs), [])
    best, rng = pooled(one if every is None else [max(a, b) for a, b in zip(one, every)])
    return {"GBps": best, "GBps_range": rng, "repeats": len(one), "GBps_1thread": pooled(one)[0],
            "GBps_all_threads": None if every is None else pooled(every)[0]}


def combine_ceilings(per_worker, spec):
    """The measured ceilings, and what the levels say of themselves: a plateau (DRAM at two
    sizes within PLATEAU), a copy too small to see its level (numpy's per-call overhead bounds
    it), a cache level with no roof of its own (no faster than the DRAM copy, a VM's slice of a
    server's L3, say: drawn once with DRAM). Without a plateau beta's interval spans both sizes."""
    levels = {name: {**lv, **level_rates([w["copy"][name] for w in per_worker])}
              for name, lv in spec["levels"].items()}
    dram = levels["DRAM"]
    check = level_rates([w["copy_check"]["DRAM"] for w in per_worker])
    dram.update(GBps_check=check["GBps"], GBps_check_range=check["GBps_range"],
                plateau=abs(check["GBps"] - dram["GBps"]) <= PLATEAU * dram["GBps"])
    if not dram["plateau"]:
        dram["GBps_range"] = [min(dram["GBps_range"][0], check["GBps_range"][0]),
                              max(dram["GBps_range"][1], check["GBps_range"][1])]
    for name, lv in levels.items():
        if name != "DRAM":
            faster = [v["GBps"] for n, v in levels.items() if n != name]
            lv["call_overhead_bound"] = lv["bytes"] < 256 << 10 and lv["GBps"] < max(faster)
            lv["same_roof_as_DRAM"] = not lv["call_overhead_bound"] and \
                lv["GBps"] <= (1 + PLATEAU) * dram["GBps"]
    pi, pi_rng = pooled(sum((w["matmul"] for w in per_worker), []))
    n = spec["matmul_n"]  # its intensity: 2 n^3 FLOPs over 3 * 4 n^2 bytes
    return {"source": "measured", "depends_on": None, "beta_peak_GBps": dram["GBps"],
            "beta_peak_range": dram["GBps_range"], "pi_peak_GFLOPS": pi, "pi_peak_range": pi_rng,
            "repeats": dram["repeats"], "copy_threads": spec["threads"], "levels": levels,
            "matmul": {"n": n, "intensity": n / 6}}


def read_ceilings(path):
    """beta_peak_GBps and pi_peak_GFLOPS of a Phase 1 style manifest (top level or under
    results_summary); a one-line UsageError otherwise. Read before measuring: fail at once."""
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


def choose_ceilings(given, measured):
    """The beta and pi the roofline uses: Phase 1's when given (one number each, no interval
    known), else the measured ones; the ridge pi / beta and its interval (lowest pi over highest
    beta, to the reverse). Every level's copy stays as measured."""
    c = dict(measured) if given is None else {
        **measured, **given, "beta_peak_range": [given["beta_peak_GBps"]] * 2,
        "pi_peak_range": [given["pi_peak_GFLOPS"]] * 2}
    c["ridge"] = c["pi_peak_GFLOPS"] / c["beta_peak_GBps"]
    c["ridge_range"] = [c["pi_peak_range"][0] / c["beta_peak_range"][1],
                        c["pi_peak_range"][1] / c["beta_peak_range"][0]]
    return c


# ----------------------------------------------------------------------------------------------
# Block E, the analysis: each op placed on the roofline, and the numbers Block E's three answers
# stand on, each computed once by a small function.

def level_of(nbytes, levels):
    """The smallest memory level whose capacity holds nbytes: where the op's data lives."""
    return min([(lv["capacity_bytes"], name) for name, lv in levels.items() if
                lv["capacity_bytes"] and nbytes <= lv["capacity_bytes"]], default=(0, "DRAM"))[1]


def place_on_roofline(row, d_model, n_heads, ceilings):
    """Add FLOPs, bytes, intensity, GFLOPS, the attainable bound and the class to each op: against
    the DRAM roofline (the lab's question; "ridge" when the intensity lies inside the ridge's
    interval, too close to call) and against the level its working set fits in. forward_s, the
    height of a stacked bar, is the sum of the five ops' time_s; shares are of it."""
    beta, pi = ceilings["beta_peak_GBps"], ceilings["pi_peak_GFLOPS"]
    lo, hi = ceilings["ridge_range"]
    cost, ws = op_cost(row["T"], d_model, n_heads), working_set(row["T"], d_model, n_heads)
    row["forward_s"] = sum(row["ops"][op]["time_s"] for op in OPS)
    flops_all = sum(f for f, _ in cost.values())
    for op, (flops, nbytes) in cost.items():
        r, I = row["ops"][op], flops / nbytes
        level = level_of(ws[op], ceilings["levels"])
        level_beta = ceilings["levels"][level]["GBps"]
        r.update(flops=flops, bytes=nbytes, intensity=I, gflops=flops / r["time_s"] / 1e9,
                 attainable_gflops=min(pi, beta * I),
                 bound="memory" if I < lo else "compute" if I > hi else "ridge",
                 time_share=r["time_s"] / row["forward_s"], flop_share=flops / flops_all,
                 working_set_bytes=ws[op], level=level,
                 level_ceiling_gflops=min(pi, level_beta * I),
                 level_bound="memory" if I < pi / level_beta else "compute")
        r["pct_of_level_ceiling"] = 100 * r["gflops"] / r["level_ceiling_gflops"]
    return row


def threshold_T(d_k, I_crit, bytes_factor):
    """Smallest T from which scores/av are compute-bound, from T d_k / (4 d_k + b T) > I_crit:
    b = 2 is the lab's intensity formula (8 T d_k + 4 T^2 bytes); b = 4 its Block E inequality as
    written, T d_k > 4 (d_k + T) I_crit, which counts the T^2 matrix twice. The intensity tends
    to d_k / b: if that is not above I_crit, no finite T makes the op compute-bound: None."""
    if d_k <= bytes_factor * I_crit:
        return None
    return 4 * d_k * I_crit / (d_k - bytes_factor * I_crit)


def thresholds(d_k, ridge, ridge_range):
    """Block E's threshold T for scores and av, by the lab's formula at the ridge and at both
    ends of its interval, and by its inequality as written at the ridge."""
    lo, hi = ridge_range
    return {"I_crit": ridge, "d_k": d_k,
            "from_intensity_formula": {  # T d_k / (4 d_k + 2T) > I_crit; None: no T
                "T_threshold": threshold_T(d_k, ridge, 2), "asymptotic_intensity": d_k / 2,
                "at_ridge_low": threshold_T(d_k, lo, 2), "at_ridge_high": threshold_T(d_k, hi, 2)},
            "from_inequality_as_written": {  # T d_k > 4 (d_k + T) I_crit
                "T_threshold": threshold_T(d_k, ridge, 4), "asymptotic_intensity": d_k / 4}}


def on_lab_laptop(Ts, d_model, n_heads):
    """The lab's i5-8250U by the curriculum's own figures: where each op's working set would
    live, from which T the softmax's (4 (5 h T^2 + T^2) bytes) leaves its 6 MiB L3, its ridge
    (pi over the range of beta) and Block E's threshold there."""
    caches = LAB_LAPTOP["caches_bytes"]
    levels = {name: {"capacity_bytes": size} for name, size in caches.items()}
    per_T = {str(T): {op: level_of(ws, levels) for op, ws in
                      working_set(T, d_model, n_heads).items()} for T in Ts}
    lo, hi = (LAB_LAPTOP["pi_GFLOPS"] / b for b in LAB_LAPTOP["beta_GBps"][::-1])
    d_k = d_model // n_heads
    return {"caches_bytes": caches, "level_per_T": per_T,
            "softmax_spills_past_T": math.sqrt(caches["L3"] / (4 * (5 * n_heads + 1))),
            "softmax_in_DRAM_at_T": [T for T in Ts if per_T[str(T)]["softmax"] == "DRAM"],
            "pi_GFLOPS": LAB_LAPTOP["pi_GFLOPS"], "beta_GBps": LAB_LAPTOP["beta_GBps"],
            "ridge_range": [lo, hi], "T_threshold_at_ridge_low": threshold_T(d_k, lo, 2)}


def expected_observations(rows):
    """The lab's three expected observations (Block C), each held or not, with its numbers."""
    share = {r["T"]: {op: r["ops"][op]["time_share"] for op in OPS} for r in rows}
    T_lo, T_hi = min(share), max(share)
    proj = lambda T: share[T]["qkv_proj"] + share[T]["out_proj"]  # noqa: E731
    quad = lambda T: share[T]["scores"] + share[T]["softmax"] + share[T]["av"]  # noqa: E731
    smallest = {T: min(OPS, key=lambda op: s[op]) for T, s in share.items()}
    return [
        {"claim": f"At T={T_lo} the projections (qkv_proj + out_proj) dominate",
         "held": proj(T_lo) > quad(T_lo), "projections_share": proj(T_lo),
         "T2_ops_share": quad(T_lo)},
        {"claim": f"At T={T_hi} the T^2 ops (scores, softmax, av) dominate",
         "held": quad(T_hi) > proj(T_hi), "projections_share": proj(T_hi),
         "T2_ops_share": quad(T_hi)},
        {"claim": "softmax is never the smallest component",
         "held": all(smallest[T] != "softmax" for T in share),
         "smallest_op_per_T": {str(T): op for T, op in smallest.items()},
         "softmax_share_per_T": {str(T): share[T]["softmax"] for T in share}}]


def phase_27_preview(row, d_model, n_heads, ceilings):
    """scores + softmax + av as one op: same FLOPs; as measured, the lab's bytes of the three ops;
    never writing S or A, far fewer bytes, and a roofline bound there (not a measurement)."""
    fused = [row["ops"][op] for op in ("scores", "softmax", "av")]
    flops, nbytes = sum(o["flops"] for o in fused), sum(o["bytes"] for o in fused)
    seconds = sum(o["time_s"] for o in fused)
    flash = 16 * n_heads * row["T"] * (d_model // n_heads)  # Q, K, V in, out_h out: 4 T d_k each
    bound = min(ceilings["pi_peak_GFLOPS"], ceilings["beta_peak_GBps"] * flops / flash)
    return {"T": row["T"], "flops": flops,
            "measured": {"bytes": nbytes, "intensity": flops / nbytes, "time_s": seconds,
                         "GFLOPS": flops / seconds / 1e9},
            "without_materialising_A": {
                "bytes": flash, "intensity": flops / flash, "bound_GFLOPS": bound,
                "bound": "memory" if flops / flash < ceilings["ridge"] else "compute",
                "time_lower_bound_s": flops / bound / 1e9},
            "bytes_reduction": nbytes / flash}


def softmax_against_roofs(row, ceilings):
    """Block E's question 2: the softmax's GFLOPS against its DRAM roof, against what one thread
    can copy (numpy runs it on one) and against the roof of the level its data lives in."""
    sm = row["ops"]["softmax"]
    roof = lambda beta: beta * sm["intensity"]  # noqa: E731
    return {"T": row["T"], "GFLOPS": sm["gflops"], "intensity": sm["intensity"],
            "memory_ceiling_GFLOPS": roof(ceilings["beta_peak_GBps"]),
            "ratio_to_memory_ceiling": sm["gflops"] / roof(ceilings["beta_peak_GBps"]),
            "ratio_to_1thread_dram_ceiling":
                sm["gflops"] / roof(ceilings["levels"]["DRAM"]["GBps_1thread"]),
            "level": sm["level"], "working_set_bytes": sm["working_set_bytes"],
            "level_ceiling_GFLOPS": sm["level_ceiling_gflops"],
            "ratio_to_level_ceiling": sm["gflops"] / sm["level_ceiling_gflops"]}


def anatomy_summary(per_worker, row, n_heads):
    """scores and softmax taken apart (anatomy_steps), one sample of each step per worker: each
    step's median time, its share of its op's steps, and the GB/s of the bytes it moves; against
    the lab's byte count of the whole op."""
    T, out = row["T"], {"T": row["T"], "scores": {}, "softmax": {}}
    for name in per_worker[0]:
        op, step = name.split("/")
        secs = float(np.median([w[name]["seconds"] for w in per_worker]))
        nbytes = per_worker[0][name]["bytes"]
        out[op][step] = {"median_s": secs, "bytes": nbytes, "GBps": nbytes / secs / 1e9,
                         "passes_over_T2": round(nbytes / (4 * n_heads * T * T), 2)}
    for op, steps in (("scores", out["scores"]), ("softmax", out["softmax"])):
        total = out[f"{op}_sum_of_steps_s"] = sum(s["median_s"] for s in steps.values())
        for s in steps.values():
            s["share"] = s["median_s"] / total
        out[f"{op}_bytes_all_steps"] = sum(s["bytes"] for s in steps.values())
        out[f"{op}_bytes_lab_model"] = row["ops"][op]["bytes"]
    return out


def analyse(rows, cfg, ceilings, anatomy, windows):
    """Everything Block E's answers stand on, from the rows placed on the roofline: at T_FOCUS
    (else the largest T) the softmax against its roofs, the anatomies and Phase 27's preview."""
    by_T = {r["T"]: r for r in rows}
    focus = by_T.get(T_FOCUS) or by_T[max(by_T)]
    d, h = cfg["d_model"], cfg["n_heads"]
    out = {"ridge_intensity": ceilings["ridge"],
           "expected_observations": expected_observations(rows),
           "dominant_op_per_T": {str(T): max(OPS, key=lambda op: r["ops"][op]["time_share"])
                                 for T, r in by_T.items()},
           "scores_av_threshold": thresholds(d // h, ceilings["ridge"], ceilings["ridge_range"]),
           "on_lab_laptop": on_lab_laptop(sorted(by_T), d, h),
           "phase_27_preview": phase_27_preview(focus, d, h, ceilings),
           "anatomy": anatomy_summary(anatomy, focus, h),
           "threading_windows": windows,
           "unstable": [f"T={T} {k} {r['ops'][k]['worker_spread']:.2f}x" for T, r in by_T.items()
                        for k in KEYS if r["ops"][k]["unstable"]]}
    if T_FOCUS in by_T:
        out[f"softmax_at_T_{T_FOCUS}"] = softmax_against_roofs(by_T[T_FOCUS], ceilings)
    return out

# ----------------------------------------------------------------------------------------------
# The run's verdict: each check a value against a limit, ok True, False or None (not made here);
# "quiet" only if none failed, each failure with its reason in plain words.

def judged(value, limit, reason, applies=True):  # applies=False: skipped on this machine
    return {"value": value, "limit": limit, "applies": applies,
            "ok": None if value is None or not applies else value <= limit}, reason


def interference_checks(before, after, own_cpu_s, spare_cpus):
    """What others did to the run: other processes' CPU use beyond the cores the run left free
    (a desktop's browser on a spare core harms nothing), and the hypervisor's steal."""
    wall = after["wall"] - before["wall"]
    others = max(0.0, (after["busy"] - before["busy"]) - own_cpu_s) / wall
    limit = spare_cpus + OTHERS_CPUS_LIMIT
    steal = None if before["steal"] is None else \
        (after["steal"] - before["steal"]) / max(after["total"] - before["total"], 1e-9)
    return {"other_processes_cpus": judged(
                others, limit, f"other processes used {others:.2f} CPUs on average while the "
                f"sweep ran, and the run left {spare_cpus} free (limit {limit:.2f})"),
            "steal_fraction": judged(
                steal, STEAL_LIMIT, f"the hypervisor took {100 * (steal or 0):.1f}% of the CPU "
                f"time (steal; limit {100 * STEAL_LIMIT:.0f}%)")}


def preemption_check(workers):
    """How often the workers were preempted while sampling, over all their sampling time: what
    others' use did to the run (a burst of a fraction of a second in one worker is not a run)."""
    seen = [(w["preempted"], w["sampling_s"]) for w in workers if w["preempted"] is not None]
    rate = sum(p for p, _ in seen) / sum(s for _, s in seen) if seen else None
    return {"preemptions_per_s": judged(
        rate, PREEMPT_LIMIT, f"the workers were preempted {rate or 0:.0f} times a second while "
        f"sampling (limit {PREEMPT_LIMIT}): other processes took their CPUs")}


def clock_checks(freq_start, freq_end, workers):
    """The governor and turbo unchanged from start to end, and the cores' clock, sampled during
    every worker's samples, not fallen from the first worker to the last (a 15 W laptop leaves
    turbo once its power budget runs out, and its later workers then run slower)."""
    state = lambda f: f"{f['governor']}/{f['turbo']}"  # noqa: E731
    changed = state(freq_start) != state(freq_end)
    mhz = [float(np.median(w["MHz"])) for w in workers if w["MHz"]]
    first, last = (mhz[0], mhz[-1]) if len(mhz) > 1 else (None, None)
    drop = None if first is None else 1 - last / first
    return {"governor_or_turbo_changed": judged(
                int(changed), 0, "the CPU governor/turbo changed during the run: "
                f"{state(freq_start)} -> {state(freq_end)}"),
            "clock_drop": judged(
                drop, CLOCK_DROP_LIMIT, f"the cores ran at {first or 0:.0f} MHz in the first "
                f"worker and {last or 0:.0f} MHz in the last ({-100 * (drop or 0):.0f}%): a "
                "laptop leaving turbo as its power budget runs out makes later samples slower")}


def cooperation_check(windows, threads_ran):
    """Do the BLAS threads help? scores + av on all threads over one, in the same time windows, at
    the largest T, where the products are deepest: no clear gain there means the cores are not
    cooperating now (a VM's host may have put them apart, or share them), and the BLAS times will
    not repeat. A product only d_k deep, at a smaller T, may gain nothing even in a good run."""
    T, worst = (windows[-1]["T"], windows[-1]["threads_over_one"]) if windows else (None, None)
    return {"threads_cooperate": judged(
        worst, COOPERATION_LIMIT, f"{threads_ran} BLAS threads took {worst or 0:.2f}x one "
        f"thread's time on scores + av at T = {T} (limit {COOPERATION_LIMIT}): the cores are not "
        "cooperating now (they may sit apart on the host, or be shared), so these numbers will "
        "not repeat", applies=bool(threads_ran and threads_ran > 1))}


def judge_conditions(checks):
    """The verdict from every check: "disturbed" if any failed, with the reasons; the checks that
    could not be made are listed as unknown, never taken as passed."""
    reasons = [reason for entry, reason in checks.values() if entry["ok"] is False]
    return {"checks": {name: entry for name, (entry, _) in checks.items()}, "reasons": reasons,
            "unknown": [n for n, (e, _) in checks.items() if e["ok"] is None and e["applies"]],
            "verdict": "disturbed" if reasons else "quiet"}


# ----------------------------------------------------------------------------------------------
# Blocks C and D, the pictures: drawn from results.json alone (--replot), judging nothing.

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


def unclutter(fig, labels):
    """Nudge each label (an annotation in offset points) up, then sideways, until its box covers
    no other text of the figure and stays inside it: a plot's labels may never hide each other."""
    from matplotlib.text import Text
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    legends = [lg for lg in [ax.get_legend() for ax in fig.axes] + fig.legends if lg]
    in_legend = {t for lg in legends for t in lg.findobj(Text)}
    clear = lambda a, b: min(a.x1, b.x1) - max(a.x0, b.x0) <= 0 or \
        min(a.y1, b.y1) - max(a.y0, b.y0) <= 0  # noqa: E731
    others = [lg.get_window_extent(r) for lg in legends] + [
        t.get_window_extent(r) for t in fig.findobj(Text) if t not in labels and
        t not in in_legend and t.get_visible() and t.get_text().strip()]
    for label in labels:  # each placed label becomes an obstacle for the next
        x0, y0 = label.xyann
        for dy, dx in ((y, x) for y in range(0, 200, 4) for x in (0, 12, -12, 24, -24, 48, -48)):
            label.xyann = (x0 + dx, y0 + dy)
            b = label.get_window_extent(r)
            if b.x0 >= 0 and b.y0 >= 0 and b.x1 <= fig.bbox.width and \
                    b.y1 <= fig.bbox.height and all(clear(b, o) for o in others):
                break
        others.append(label.get_window_extent(r))


def footer(fig, res):
    hw, cfg, cond = res["hardware"], res["config"], res["conditions"]
    text = (f"{hw['cpu_model']} ({hw['physical_cores']} cores{', VM' if hw['virtualized'] else ''})"
            f" | BLAS threads {cfg['blas_threads']} | heap: {res['heap']['mode']} | {res['date']}"
            f" | time_s: 25th percentile of {cfg['repeats']} samples (each >= "
            f"{cfg['min_time_s'] * 1e3:g} ms of forwards) from {cfg['workers']} processes"
            + " | --quick: smoke test, not a measurement" * cfg["quick"])
    verdict = f"run conditions: {cond['verdict']}" + "".join(f"; {r}" for r in cond["reasons"])
    text += "\n" + "\n".join(textwrap.wrap(verdict, int(fig.get_figwidth() * 72 / 4.3)))
    fig.text(0.5, 0.005, text, ha="center", va="bottom", fontsize=7.5, linespacing=1.3,
             color="firebrick" if cond["verdict"] == "disturbed" else "0.35")


def stack_bars(ax, rows, default, dominant, fontsize=8.5):
    """One stacked bar per row (the five ops' time_s in ms: its height is forward_s), labelled
    with the forward's time and its dominant op, and against its right side a hatched bar: the
    same forward on the default heap. Returns the labels, for unclutter."""
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for op in OPS:
        h = np.array([r["ops"][op]["time_s"] * 1e3 for r in rows])
        ax.bar(x, h, 0.5, bottom=bottom, color=COLORS[op])
        bottom += h
    dflt = [default.get(r["T"]) for r in rows]
    heights = np.array([d["forward_s"] * 1e3 if d else np.nan for d in dflt])
    top = 1.22 * max(bottom.max(), min(np.nanmax(heights, initial=0), 2.5 * bottom.max()))
    ax.bar(x + 0.36, np.fmin(heights, top / 1.12), 0.22, fill=False, hatch="///",
           edgecolor="0.45", lw=0.8)
    labels, above = [], {"xytext": (0, 3), "textcoords": "offset points", "ha": "center",
                         "va": "bottom"}
    for i, r in enumerate(rows):
        dom = dominant[str(r["T"])]
        share = 100 * r["ops"][dom]["time_share"]
        labels.append(ax.annotate(f"{bottom[i]:.3f} ms\n{dom} {share:.0f}%", (x[i], bottom[i]),
                                  fontsize=fontsize, **above))
        if dflt[i]:
            faults = dflt[i]["page_faults_per_forward"]
            labels.append(ax.annotate(
                f"{heights[i]:.3f} ms" + ("" if faults is None else f"\n{faults:.0f} faults")
                + (" (off scale)" if heights[i] > top / 1.12 else ""),
                (x[i] + 0.36, min(heights[i], top / 1.12)), fontsize=fontsize - 1.5, color="0.3",
                **above))
    ax.set_xticks(x, [f"T={r['T']}" for r in rows])
    ax.set_xlim(-0.5, len(rows) - 0.4)
    ax.set_ylim(0, top)
    return labels


def plot_perf(res):
    """Block C: where each forward's time goes. Left, one stacked bar per T in ms, the default
    heap's forward beside each, and the T whose bars are too small to read at their own scale in
    an inset; right, each op's share of the time beside its share of the FLOPs."""
    from matplotlib.patches import Patch
    rows, cfg, dominant = res["sweep"], res["config"], res["analysis"]["dominant_op_per_T"]
    default = {r["T"]: r for r in res["sweep_default_heap"]}
    fig, (ax, ax2) = new_figure(1, 2, figsize=(13, 6.2), gridspec_kw={"width_ratios": [1.2, 1]})
    labels = stack_bars(ax, rows, default, dominant)
    small = [r for r in rows if r["forward_s"] < 0.15 * max(q["forward_s"] for q in rows)]
    if 0 < len(small) < len(rows):
        inset = ax.inset_axes([0.06, 0.42, 0.16 + 0.2 * len(small), 0.45])
        labels += stack_bars(inset, small, default, dominant, fontsize=7.5)
        inset.tick_params(labelsize=7.5)
        inset.set_title(f"T = {', '.join(str(r['T']) for r in small)} at their own scale (ms)",
                        fontsize=8)
        for label in labels[:2 * len(small)]:  # read in the inset, not on the flat bars
            label.set_visible(False)
    ax.set_ylabel("time per forward (ms)")
    ax.set_title("Time per forward (bars); with glibc's default heap (hatched)", fontsize=11)
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
    ax2.set(ylabel="share of the forward (%)", ylim=(0, 100))
    ax2.set_title("Share per op: of the time (solid), of the FLOPs (faded)", fontsize=11)
    fig.suptitle(f"Naive numpy multi-head attention, d_model={cfg['d_model']}, "
                 f"{cfg['n_heads']} heads, d_k={cfg['d_head']}", fontsize=12)
    handles = [Patch(color=COLORS[op], label=op) for op in OPS] + [Patch(
        fill=False, hatch="///", edgecolor="0.45", label="the same forward, glibc's default heap"
                                                         " (page faults per forward)")]
    fig.legend(handles=handles, loc="upper center", ncol=6, fontsize=8.5, frameon=False,
               bbox_to_anchor=(0.5, 0.945))
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.06, 1, 0.9))
    unclutter(fig, [label for label in labels if label.get_visible()])
    return fig


def ring_sizes(points, first=5.0, step=1.5, near=0.03):
    """Marker diameters (points) of hollow rings, from (x, y, T index): `step` times larger at
    each T, and a ring within `near` decades of an earlier one of nearly its size (less than
    `step` times apart) grown past it, so that rings on the same spot nest, never hide."""
    sizes = []
    for j, (x, y, i) in enumerate(points):
        d = first * step**i
        near_sizes = [sizes[k] for k, (a, b, _) in enumerate(points[:j])
                      if abs(math.log10(a / x)) < near and abs(math.log10(b / y)) < near]
        while clash := [s for s in near_sizes if d / step * 1.001 < s < d * step * 0.999]:
            d = step * max(clash)
        sizes.append(d)
    return sizes


def draw_roofs(ax, res, xs):
    """The DRAM roof (beta) and pi in black, beta's interval as a band, each cache level with a
    roof of its own fainter, the ridge and its interval; the legend handles, in order."""
    c = res["ceilings"]
    beta, pi, (lo, hi) = c["beta_peak_GBps"], c["pi_peak_GFLOPS"], c["beta_peak_range"]
    dram = c["levels"]["DRAM"]
    notes = [f"{n} copy no faster" for n, lv in c["levels"].items() if lv.get("same_roof_as_DRAM")]
    if c["source"] == "measured" and not dram["past_llc"]:
        notes.append("DRAM copy not past the L3: " + ("--quick" if res["config"]["quick"]
                                                     else "capped to fit memory"))
    src = {"measured": f"DRAM copy, median of {c['repeats']}", "phase1": "Phase 1",
           "cli": "--roofline"}[c["source"]]
    mm = "" if c["source"] != "measured" else f" ({c['matmul']['n']}x{c['matmul']['n']} matmul: +)"
    handles = ax.plot(xs, np.minimum(pi, beta * xs), color="black", lw=2,
                      label=f"roof: beta = {beta:.1f} GB/s ({src}),\n  pi = {pi:.0f} GFLOPS{mm}"
                      + "".join(f"\n  ({n})" for n in notes))
    handles.append(ax.fill_between(xs, np.minimum(pi, lo * xs), np.minimum(pi, hi * xs),
                                   color="0.85", lw=0, zorder=0, label=(
        f"beta's interval, {lo:.1f}-{hi:.1f} GB/s" + (
            f"\n  (no plateau: a {dram['check_bytes'] >> 20} MiB copy ran at "
            f"{dram['GBps_check']:.1f})" if c["source"] == "measured" and not dram["plateau"]
            else ""))))
    styles = iter([(0, (1, 1)), "--", "-.", (0, (5, 1, 1, 1))])
    for name, lv in c["levels"].items():
        if name != "DRAM" and not lv["same_roof_as_DRAM"] and not lv["call_overhead_bound"]:
            size = f"{lv['bytes'] >> 20} MiB" if lv["bytes"] >> 20 else f"{lv['bytes'] >> 10} KiB"
            handles += ax.plot(xs, np.minimum(pi, lv["GBps"] * xs), color="0.55", lw=1, ls=next(
                styles), label=f"{name} roof: {lv['GBps']:.0f} GB/s ({size} copied)")
    r_lo, r_hi = c["ridge_range"]
    handles.append(ax.axvspan(r_lo, r_hi, color="0.92", zorder=0, label=(
        f"ridge {c['ridge']:.2f} FLOP/B; from beta's and pi's intervals, {r_lo:.2f}-{r_hi:.2f}:"
        "\n  ops inside it are 'near the ridge'")))
    ax.axvline(c["ridge"], color="0.7", lw=0.8, zorder=0)
    return handles


def draw_points(ax, res):
    """Every op at every T as a hollow ring, its colour the op, its size the T, joined along T,
    and pi's matmul as a grey +; the legend entries, in order, and the handler of the ring key."""
    from matplotlib.legend_handler import HandlerTuple
    pts = [(r["ops"][op]["intensity"], r["ops"][op]["gflops"], i, op)
           for op in OPS for i, r in enumerate(res["sweep"])]
    entries = []
    for op, (x, y, size) in zip(OPS, np.split(np.array([(p[0], p[1], d) for p, d in zip(
            pts, ring_sizes([p[:3] for p in pts]))]).T, len(OPS), axis=1)):
        ax.plot(x, y, color=COLORS[op], lw=0.8, alpha=0.45, zorder=3)
        entries.append((ax.scatter(x, y, s=size**2, facecolors="none", edgecolors=COLORS[op],
                                   linewidths=1.6, zorder=4), op))
    rings = tuple(ax.scatter([], [], s=(5 * 1.5**i)**2, facecolors="none", edgecolors="0.3")
                  for i in range(len(res["sweep"])))
    ax.scatter(res["ceilings"]["matmul"]["intensity"], res["ceilings"]["pi_peak_GFLOPS"],
               marker="P", s=90, color="0.3", zorder=5)
    ring_key = (rings, "ring size: T = " + ", ".join(str(r["T"]) for r in res["sweep"]))
    return [ring_key] + entries, HandlerTuple(ndivide=None, pad=0.3)


def plot_roofline(res):
    """Block D: every op at every T at (intensity, GFLOPS) on this machine's roofline, on axes
    that span the data; the Phase 27 preview as an arrow from the measured fused op to its bound."""
    c, pv = res["ceilings"], res["analysis"]["phase_27_preview"]
    m, f = pv["measured"], pv["without_materialising_A"]
    pts = [(r["ops"][op]["intensity"], r["ops"][op]["gflops"]) for r in res["sweep"] for op in OPS]
    pts += [(c["matmul"]["intensity"], c["pi_peak_GFLOPS"]), (m["intensity"], m["GFLOPS"]),
            (f["intensity"], f["bound_GFLOPS"])]
    (x_lo, y_lo), (x_hi, y_hi) = np.min(pts, 0) / 2, np.max(pts, 0) * 2  # the data, and margin
    fig, ax = new_figure(figsize=(10, 8.6))
    xs = np.logspace(math.log10(x_lo), math.log10(x_hi), 400)
    roofs = [(h, h.get_label()) for h in draw_roofs(ax, res, xs)]
    points, handler = draw_points(ax, res)  # the legend's left column: the points, then roofs
    entries = points + [
        (ax.scatter(m["intensity"], m["GFLOPS"], marker="*", s=170, color="black", zorder=5),
         f"scores + softmax + av at T={pv['T']}, measured: I = {m['intensity']:.2f}")] + roofs + [
        (ax.scatter(f["intensity"], f["bound_GFLOPS"], marker="*", s=170, facecolor="none",
                    edgecolor="black", zorder=5),
         f"the same, A never written (Flash Attention): {pv['bytes_reduction']:.0f}x fewer\n"
         f"  bytes, I = {f['intensity']:.0f}; its roofline bound, not a measurement")]
    ax.annotate("", (f["intensity"], f["bound_GFLOPS"]), (m["intensity"], m["GFLOPS"]),
                arrowprops={"arrowstyle": "-|>", "ls": "--", "color": "k", "lw": 1, "shrinkB": 9})
    ax.legend(*zip(*entries), handler_map={tuple: handler}, loc="upper center", fontsize=8.5,
              bbox_to_anchor=(0.5, -0.1), frameon=False, ncol=2, labelspacing=0.7,
              handlelength=5.5, columnspacing=1.5)
    ax.tick_params(axis="x", which="both", pad=6)  # off the y axis's lowest label
    ax.set(xscale="log", yscale="log", xlim=(x_lo, x_hi), ylim=(y_lo, y_hi),
           xlabel="arithmetic intensity (FLOP/byte, the lab's byte counts)",
           ylabel="GFLOPS (the lab's FLOPs / time_s)")
    ax.set_title("Attention ops on this machine's roofline (colour: op; ring size: T)", fontsize=11)
    ax.grid(True, which="major", color="0.92")
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


# ----------------------------------------------------------------------------------------------
# Block F, the files: results.json, the lab's manifest, written atomically, and the one check
# that a results.json holds what --replot and --compare read.

def build_results(args, plan, hardware, threads, given, workers, cpu):
    """results.json: the sweep's statistics, the ceilings, each op placed, the analysis and the
    run's verdict, all from the workers' results (the default-heap one first)."""
    (dflt, *warm), (before, after, own_cpu_s) = workers, cpu
    merged = merge(warm, args.T)
    rows = [profile_row(T, merged[T], args.min_time) for T in args.T]
    default_rows = [profile_row(T, m, args.min_time) for T, m in merge([dflt], args.T).items()]
    windows = [w for r in rows if (w := threading_windows(r["T"], merged[r["T"]], r))]
    ceilings = choose_ceilings(given, combine_ceilings([w["ceilings"] for w in warm],
                                                       plan["ceilings"]))
    for r in rows + default_rows:
        place_on_roofline(r, args.d_model, args.n_heads, ceilings)
    cfg = {"d_model": args.d_model, "n_heads": args.n_heads, "d_head": args.d_model // args.n_heads,
           "T_sweep": args.T, "seed": args.seed, "repeats": plan["workers"] * plan["rounds"],
           "min_time_s": args.min_time, "quick": args.quick, "workers": plan["workers"],
           "rounds_per_worker": plan["rounds"], "in_process": args.in_process,
           "default_heap_repeats": plan["default_heap_repeats"],
           "one_thread_rounds": plan["one_thread_rounds"], "anatomy_T": plan["anatomy_T"],
           "ceiling_repeats": ceilings["repeats"], "blas_threads": threads["blas_threads"],
           "headline": "time_s = 25th percentile of all samples (see README)",
           "model": "causal MHA, heads as a batch axis, no biases, float32"}
    hardware["cpufreq_at_end"] = cpufreq_state()
    spare = max(0, hardware["physical_cores"] - (threads["blas_threads"] or 1))
    conditions = judge_conditions({
        **interference_checks(before, after, own_cpu_s, spare), **preemption_check(warm),
        **clock_checks(hardware["cpufreq_at_start"], hardware["cpufreq_at_end"], warm),
        **cooperation_check(windows, threads["blas_threads"])})
    return {
        "experiment": "15-attention-perf", "date": datetime.date.today().isoformat(),
        "config": cfg,
        "versions": {"python": platform.python_version(), "numpy": np.__version__,
                     "matplotlib": version("matplotlib"), "threadpoolctl": version("threadpoolctl"),
                     "psutil": version("psutil"), "blas": threads.pop("blas")},
        "hardware": hardware, "threads": threads,
        "environment": {k: os.environ.get(k) for k in THREAD_VARS + ("OPENBLAS_CORETYPE",
                                                                     "OPENBLAS_L2_SIZE")},
        "heap": warm[0]["heap"], "conditions": conditions,
        "workers": [{k: w[k] for k in ("pid", "started", "ended", "sampling_s", "preempted",
                                       "cpu_s", "peak_rss_MiB")} for w in workers],
        "memory_peak_MiB": {"parent": peak_rss_MiB(), "largest_worker":
                            max((w["peak_rss_MiB"] or 0) for w in workers) or None},
        "ceilings": ceilings, "sweep": rows, "sweep_default_heap": default_rows,
        "analysis": analyse(rows, cfg, ceilings, [w["anatomy"] for w in warm], windows)}


def make_manifest(results, argv):
    """The lab's Block F manifest, its keys as the lab spells them (results_summary's four
    figures from time_s at T_FOCUS), the machine as detected, and where the run came from."""
    cfg, c = results["config"], results["ceilings"]
    row = next((r for r in results["sweep"] if r["T"] == T_FOCUS), None)
    ops = row and row["ops"]
    summary = {"softmax_GFLOPS_at_T_512": ops and ops["softmax"]["gflops"],
               "softmax_pct_of_total_at_T_512": ops and 100 * ops["softmax"]["time_share"],
               "scores_GFLOPS_at_T_512": ops and ops["scores"]["gflops"],
               "phase_27_motivation_pct_memory": ops and 100 * sum(
                   ops[op]["time_share"] for op in OPS if ops[op]["level_bound"] == "memory")}
    return {
        "experiment": "15-attention-perf", "date": results["date"], "seed": cfg["seed"],
        "versions": results["versions"], "depends_on": c["depends_on"],
        "config": {k: cfg[k] for k in ("d_model", "n_heads", "T_sweep", "d_head", "repeats",
                                       "min_time_s", "quick", "blas_threads", "workers")}
        | {"heap": results["heap"]["mode"]},
        "hardware": results["hardware"], "results_summary": summary,
        "results_summary_definitions": {
            "time_s": "each figure uses time_s, an op's 25th percentile over all samples",
            "softmax_pct_of_total_at_T_512": "softmax time_s / forward_s (the five ops' sum)",
            "phase_27_motivation_pct_memory": "percent of forward_s spent in ops memory-bound "
            "against the roof of the level their working set fits in (level_bound)"},
        "ridge_intensity": c["ridge"], "ceilings_source": c["source"],
        "conditions_verdict": results["conditions"]["verdict"],
        "conditions_reasons": results["conditions"]["reasons"], "threads": results["threads"],
        "perf_py_sha256": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
        "command": " ".join(["python", Path(__file__).name] + list(argv)),
        "environment": results["environment"]}


def to_json(obj):  # NaN is not JSON: a run that made one fails here, before any file is written
    return (json.dumps(obj, indent=2, allow_nan=False) + "\n").encode()


def write_atomically(out_dir, files):
    """Write every {name: bytes} into out_dir as one set: each into a temp file first, then each
    earlier file set aside and the new one renamed into place. Whatever step fails (or Ctrl-C),
    the temp files go and every earlier file is back as it was: never a new results.json beside
    an old manifest.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    umask = os.umask(0)
    os.umask(umask)
    temps, backups, placed = {}, {}, []
    try:
        for name, data in files.items():
            fd, temps[name] = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=".tmp")
            os.chmod(temps[name], 0o666 & ~umask)  # mkstemp makes 0600; give the usual mode
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        for name in files:
            if (out_dir / name).exists():
                backups[name] = out_dir / f".{name}.old"
                os.replace(out_dir / name, backups[name])
            os.replace(temps[name], out_dir / name)
            del temps[name]
            placed.append(name)
    except BaseException:
        for name in placed:
            if name not in backups:
                os.unlink(out_dir / name)
        for name, old in backups.items():
            os.replace(old, out_dir / name)
        backups.clear()
        raise
    finally:
        for path in list(temps.values()) + list(backups.values()):
            try:
                os.unlink(path)
            except OSError:
                pass


def load_results(arg):
    """A results.json of this lab (the file, or a folder holding one) with everything --replot
    and --compare read; a one-line UsageError otherwise."""
    path = Path(arg)
    path = path / "results.json" if path.is_dir() else path
    try:
        res = json.loads(path.read_text())
        if res["experiment"] != "15-attention-perf" or not res["sweep"]:
            raise ValueError
        rows = res["sweep"] + res["sweep_default_heap"]
        [float(r["forward_s"]) for r in rows]
        for o in (r["ops"][k] for r in rows for k in KEYS):
            float(o["time_s"]), len(o["worker_times"])
        for o in (r["ops"][op] for r in rows for op in OPS):
            float(o["intensity"]) + float(o["gflops"]) + float(o["time_share"]), o["bound"]
        a, c = res["analysis"], res["ceilings"]
        [a["dominant_op_per_T"][str(r["T"])] for r in res["sweep"]]
        a["phase_27_preview"]["measured"]["intensity"], a["threading_windows"]
        float(c["beta_peak_GBps"]), float(c["pi_peak_GFLOPS"]), c["ridge_range"], c["levels"]
        res["hardware"]["cpu_model"], res["config"]["d_model"], res["heap"]["mode"]
        res["conditions"]["verdict"], res["threads"]["blas_threads"]
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        raise UsageError(f"{path} is not a results.json written by this perf.py") from None
    return path, res


# ----------------------------------------------------------------------------------------------
# Block G, --compare A B: measures nothing. A is the baseline (say, the committed reference), B
# the new run (say, a learner's laptop). First whether the two machines were in the same state,
# then per op and T whether B is faster, slower or the same, against both runs' own noise.

def compare_rows(a, b, Ts):
    """Per op per T: both headlines, B/A, the change of share, and the verdict: "same" unless
    B/A leaves the band [1/band, band], band = the larger of the two runs' own noise, at least
    NOISE_FLOOR. A run's noise on an op is how far its fresh processes disagree: the max/min of
    the workers' time_s; from five workers on the second highest over the second lowest, so that
    one worker caught in a slow episode does not blind the comparison."""
    ra, rb = ({r["T"]: r["ops"] for r in res["sweep"]} for res in (a, b))
    noise = lambda ws: ws[-2] / ws[1] if len(ws) >= 5 else ws[-1] / ws[0]  # noqa: E731
    rows = []
    for T in Ts:
        for op in OPS:
            oa, ob = ra[T][op], rb[T][op]
            band = max(NOISE_FLOOR, *(noise(sorted(o["worker_times"])) for o in (oa, ob)))
            ratio = ob["time_s"] / oa["time_s"]
            rows.append({"T": T, "op": op, "a_s": oa["time_s"], "b_s": ob["time_s"],
                         "ratio": ratio, "share_pp": 100 * (ob["time_share"] - oa["time_share"]),
                         "noise_band": band, "verdict": "slower" if ratio > band else
                         "faster" if ratio < 1 / band else "same"})
    return rows


def machine_refs(res, T):
    """What a run measured of its machine rather than of the code: the threads' cooperation, the
    one-thread scores + av at T (a reference that threads cannot move), the DRAM copy."""
    w = {x["T"]: x for x in res["analysis"]["threading_windows"]}.get(T)
    dram = res["ceilings"]["levels"]["DRAM"]
    return {"threads over one thread (scores + av)":
            res["conditions"]["checks"]["threads_cooperate"]["value"],
            f"one thread, scores + av at T={T} (ms)":
            w and 1e3 * (w["one_thread_ops"]["scores"] + w["one_thread_ops"]["av"]),
            "DRAM copy (GB/s)": dram["GBps"], "DRAM copy, one thread (GB/s)": dram["GBps_1thread"]}


def machine_state(a, b, T):
    """Were the two machines in the same state? Judged only from what does not depend on the
    code: the hardware and threads, each run's verdict, each run's machine references. The
    signals that differ, each with its numbers; none: the differences are the code's."""
    signals = [f"{fact}: {get(a)} in A, {get(b)} in B" for fact, get in (
        ("CPU", lambda r: r["hardware"]["cpu_model"]),
        ("physical cores", lambda r: r["hardware"]["physical_cores"]),
        ("BLAS threads", lambda r: r["threads"]["blas_threads"])) if get(a) != get(b)]
    signals += [f"{name} was disturbed: " + "; ".join(r["conditions"]["reasons"])
                for name, r in (("A", a), ("B", b)) if r["conditions"]["verdict"] == "disturbed"]
    ra, rb = machine_refs(a, T), machine_refs(b, T)
    return signals + [f"{fact}: {ra[fact]:.2f} in A, {rb[fact]:.2f} in B" for fact in ra
                      if ra[fact] and rb[fact] and max(ra[fact] / rb[fact],
                                                       rb[fact] / ra[fact]) > STATE_LIMIT]


def compare_story(a, b, Ts):
    """The two runs' stories side by side, each line that differs marked, with a likely reason
    where the data gives one."""
    ca, cb = a["ceilings"], b["ceilings"]
    apart = lambda va, vb, limit: bool(va and vb and max(va / vb, vb / va) > limit)  # noqa: E731
    story = [(fact, get(a), get(b), None, None) for fact, get in (
        ("cpu", lambda r: r["hardware"]["cpu_model"]),
        ("BLAS threads", lambda r: r["threads"]["blas_threads"]),
        ("heap", lambda r: r["heap"]["mode"]),
        ("run conditions", lambda r: r["conditions"]["verdict"]))]
    ra, rb = machine_refs(a, Ts[-1]), machine_refs(b, Ts[-1])
    story += [(fact, ra[fact], rb[fact], apart(ra[fact], rb[fact], STATE_LIMIT),
               f"more than {STATE_LIMIT}x apart: the machine's state, not the code") for fact in ra]
    story += [(fact, ca[key], cb[key], apart(ca[key], cb[key], 1 + PLATEAU),
               f"{cb[key] / ca[key]:.2f}x in B") for fact, key in (
        ("beta (GB/s)", "beta_peak_GBps"), ("pi (GFLOPS)", "pi_peak_GFLOPS"),
        ("ridge (FLOP/byte)", "ridge"))]
    story += [(f"dominant op at T={T}", a["analysis"]["dominant_op_per_T"][str(T)],
               b["analysis"]["dominant_op_per_T"][str(T)], None, None) for T in Ts]
    cls = lambda res, op: " ".join(f"{r['T']}:{r['ops'][op]['bound']}"  # noqa: E731
                                   for r in res["sweep"] if r["T"] in Ts)
    story += [(f"{op}, class per T", cls(a, op), cls(b, op), None, "the ridge's interval is "
               "{:.2f}-{:.2f} in A and {:.2f}-{:.2f} in B".format(*ca["ridge_range"],
                                                                  *cb["ridge_range"]))
              for op in OPS]
    story += [(f"expected: {oa['claim']}", oa["held"], ob["held"], None, None) for oa, ob in
              zip(a["analysis"]["expected_observations"], b["analysis"]["expected_observations"])]
    out = []
    for fact, va, vb, differs, why in story:
        differs = va != vb if differs is None else differs
        out.append({"fact": fact, "a": va, "b": vb, "differs": differs,
                    "why": why if differs else None})
    return out


def compare(arg_a, arg_b):
    """compare.json's contents and bytes, from two results.json, and B's folder."""
    (pa, a), (pb, b) = load_results(arg_a), load_results(arg_b)
    for key in ("d_model", "n_heads"):
        if a["config"][key] != b["config"][key]:
            raise UsageError(f"the runs differ in {key} ({a['config'][key]} vs "
                             f"{b['config'][key]}): nothing to compare")
    Ta, Tb = ({r["T"] for r in res["sweep"]} for res in (a, b))
    Ts = sorted(Ta & Tb)
    if not Ts:
        raise UsageError(f"the runs share no T ({sorted(Ta)} vs {sorted(Tb)})")
    rows, signals = compare_rows(a, b, Ts), machine_state(a, b, Ts[-1])
    result = {"a": str(pa), "b": str(pb), "T": Ts,
              "left_out_T": {"a_only": sorted(Ta - Tb), "b_only": sorted(Tb - Ta)},
              "same_state": not signals, "state_signals": signals, "rows": rows,
              "story": compare_story(a, b, Ts)}
    return result, {"compare.json": to_json(result)}, pb.parent


def print_compare(c):
    print(f"A = {c['a']}\nB = {c['b']}\n")
    print("same machine state: the differences below are the code's (or noise)"
          if c["same_state"] else "the machines were in different states, so the differences "
          "below are not only the code's: " + "; ".join(c["state_signals"]))
    print(f"\n{'T':>5} {'op':<9} {'A ms':>9} {'B ms':>9} {'B/A':>6} {'share pp':>9}  verdict")
    for r in c["rows"]:
        print(f"{r['T']:>5} {r['op']:<9} {r['a_s'] * 1e3:9.3f} {r['b_s'] * 1e3:9.3f} "
              f"{r['ratio']:6.2f} {r['share_pp']:+9.1f}  {r['verdict']}")
    left = c["left_out_T"]
    if left["a_only"] or left["b_only"]:
        print(f"\nleft out: T={left['a_only']} only in A, T={left['b_only']} only in B")
    print("\n  fact: A | B   (* the two runs tell a different story here)")
    for s in c["story"]:
        fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else str(v)  # noqa: E731
        print(f"{'*' if s['differs'] else ' '} {s['fact']}: {fmt(s['a'])} | {fmt(s['b'])}"
              + (f"  <- {s['why']}" if s["why"] else ""))


# ----------------------------------------------------------------------------------------------
# Block H, the command line: parsing touches nothing; the run is refused before it measures
# (bad input, a T beyond the memory, an output folder that cannot take files); main dispatches.

class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, instead of argparse's usage dump
        raise UsageError(message)


def number(kind, positive=True):
    """An argparse type: a finite `kind`, > 0 (positive) or >= 0."""
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__}") from None
        if not (math.isfinite(v) and (v > 0 if positive else v >= 0)):
            raise argparse.ArgumentTypeError(f"{text!r} must be {'> 0' if positive else '>= 0'}")
        return v
    return parse


def parse_args(argv):
    p = Parser(prog="perf.py", description=__doc__.split("\n\n")[0])
    add = p.add_argument
    add("--T", type=number(int), nargs="+", default=list(T_SWEEP), help="sequence lengths")
    add("--d-model", type=number(int), default=64)
    add("--n-heads", type=number(int), default=4)
    add("--seed", type=number(int, positive=False), default=0)
    add("--min-time", type=number(float), help="seconds one sample aggregates (default 0.05)")
    add("--repeats", type=number(int), help="samples per T, over all workers (default 100)")
    add("--workers", type=number(int), help="fresh worker processes (default 5)")
    add("--in-process", action="store_true", help="measure in this process (debugging, tests)")
    add("--threads", type=number(int), help="BLAS threads (default: OMP_NUM_THREADS, else one "
                                            "per physical core)")
    add("--out", type=Path, help="output folder (default: this one; --compare: B's)")
    add("--roofline", type=Path, help="Phase 1 manifest: beta_peak_GBps, pi_peak_GFLOPS")
    add("--quick", action="store_true", help="a smoke test of a few seconds, not a measurement")
    add("--replot", action="store_true", help="only redraw both PNGs from --out's results.json")
    add("--compare", nargs=2, metavar=("A", "B"), help="B against the baseline A (results.json "
                                                        "or folders): writes compare.json")
    args = p.parse_args(argv)
    if args.d_model % args.n_heads:
        p.error(f"--n-heads {args.n_heads} does not divide --d-model {args.d_model}")
    prof = PROFILES["quick" if args.quick else "default"]
    args.min_time = args.min_time or prof["min_time"]
    args.repeats = args.repeats or prof["repeats"]
    args.workers = min(args.workers or prof["workers"], args.repeats)
    args.T = sorted(set(args.T))
    if not args.compare:
        args.out = args.out or HERE
    return args


def check_writable(out):
    """Fail before measuring, not after, and leave nothing behind: the folder (made for the
    probe where missing, and removed again) must take a file."""
    made = []
    try:
        for p in [*reversed(out.parents), out]:
            if not p.exists():
                p.mkdir()
                made.append(p)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise UsageError(f"--out {out}: {e.strerror or e}") from None
    finally:
        for p in reversed(made):
            p.rmdir()


def run_memory_bytes(Ts, n_heads, anatomy_T, dram_copy_bytes):
    """What a run needs at its peak, one worker at a time: every T's input and mask, the largest
    forward's temporaries (about four (h, T, T) fp32 arrays live at once) and the anatomies'
    (seven; the warm heap keeps both), then the DRAM copy's buffers; plus two interpreters with
    numpy (the parent and that worker)."""
    arrays = 16 * n_heads * max(Ts) ** 2 + 28 * n_heads * anatomy_T**2
    return arrays + 4 * sum(t * t for t in Ts) + dram_copy_bytes + (300 << 20)


def run(args):
    """The lab's measurement: the machine, the threads, the plan, the memory guard, the workers,
    then results.json's contents from their results."""
    start, hardware = time.perf_counter(), machine_facts()
    limit, asked, source = threads_plan(args.threads, hardware)
    with threadpool_limits(limit, user_api="blas"):  # None: leave the pool as it is
        blas = blas_info()
    ran = blas[0]["num_threads"] if blas else None
    threads = {"blas_threads": ran, "asked": asked, "limit": limit, "source": source,
               "physical_cores": hardware["physical_cores"], "blas": blas,
               "logical_cpus": hardware["logical_cpus"],
               "includes_hyperthreads": ran and ran > hardware["physical_cores"]}
    plan = make_plan(args, hardware, threads["blas_threads"])
    need = run_memory_bytes(args.T, args.n_heads, plan["anatomy_T"],
                            plan["ceilings"]["levels"]["DRAM"]["bytes"])
    available = psutil.virtual_memory().available
    if need > available:  # refused before anything is measured, not killed mid-run
        raise UsageError(f"--T {max(args.T)} needs about {need / 2**30:.1f} GiB of memory; "
                         f"{available / 2**30:.1f} GiB are available")
    hardware["run_memory_estimate_MiB"] = need / 2**20
    given = None  # beta and pi measured here, unless --roofline or Phase 1's manifest gives them
    if args.roofline or (REPO / PHASE1_MANIFEST).is_file():
        given = {**read_ceilings(args.roofline or REPO / PHASE1_MANIFEST),
                 "source": "cli" if args.roofline else "phase1",
                 "depends_on": str(args.roofline) if args.roofline else PHASE1_MANIFEST}
    check_writable(args.out)
    progress = make_progress(plan["default_work"] + plan["workers"] * plan["worker_work"])
    base = {"d_model": args.d_model, "n_heads": args.n_heads, "seed": args.seed, "T": args.T,
            "min_time": args.min_time, "threads_limit": limit}
    own_cpu = lambda: sum(os.times()[:4])  # noqa: E731  this process and its finished workers
    before, own0 = cpu_times(), own_cpu()
    dflt, warm = run_workers(plan, base, args.in_process, progress)
    after, own = cpu_times(), own_cpu() - own0
    if os.name == "nt" and not args.in_process:  # Windows does not count children's CPU time
        own += sum(w["cpu_s"] for w in [dflt] + warm)
    res = build_results(args, plan, hardware, threads, given, [dflt] + warm, (before, after, own))
    return {**res, "run_wall_s": time.perf_counter() - start}  # the pictures not included


def run_warnings(results):
    """What a learner should know before trusting the run, grouped: one line per kind."""
    out = [f"threads: {t}"] if (t := threads_warning(results["threads"])) else []
    if (gov := results["hardware"]["cpu_governor_at_run"]) not in ("performance", "unavailable"):
        out.append(f"governor: '{gov}', not 'performance' as the lab asks: sudo cpupower "
                   "frequency-set -g performance")
    if results["analysis"]["unstable"]:
        out.append(f"unstable (worker medians more than {SPREAD_LIMIT}x apart): "
                   + ", ".join(results["analysis"]["unstable"]))
    cold = [r for r in results["sweep"] if (r["page_faults_per_forward"] or 0) >= 1]
    if results["heap"]["mode"] == "warm" and cold:
        out.append(f"warm heap: from T={cold[0]['T']} on it could not be kept warm "
                   f"({cold[0]['page_faults_per_forward']:.0f} page faults per forward): those "
                   "times include the kernel's page faults")
    if results["conditions"]["verdict"] == "disturbed":
        out.append("disturbed run: " + "; ".join(results["conditions"]["reasons"]))
    return out


def print_summary(results):
    print(f"\n{'T':>5} " + " ".join(f"{k:>9}" for k in OPS) + f" {'forward':>9}  ms (time_s)"
          f" {'overhead':>9} {'faults/fw':>9} {'default heap':>13}")
    for r, d in zip(results["sweep"], results["sweep_default_heap"]):
        faults = r["page_faults_per_forward"]
        print(f"{r['T']:>5} " + " ".join(f"{r['ops'][k]['time_s'] * 1e3:9.3f}" for k in OPS)
              + f" {r['forward_s'] * 1e3:9.3f} {'':12} {r['instrumentation_overhead']:9.2%} "
              f"{'n/a' if faults is None else f'{faults:.1f}':>9} {d['forward_s'] * 1e3:10.3f} ms")
    c = results["ceilings"]
    print(f"\nroofline ({c['source']}): beta {c['beta_peak_GBps']:.1f} GB/s, "
          f"pi {c['pi_peak_GFLOPS']:.1f} GFLOPS, ridge {c['ridge']:.2f} FLOP/byte; "
          f"run conditions: {results['conditions']['verdict']}")


def dispatch(args, argv):
    """--compare, --replot or a run; the files are written only when all of them are ready."""
    if args.compare:
        result, files, out = compare(*args.compare)
        write_atomically(args.out or out, files)
        print_compare(result)
        print(f"\nwrote {', '.join(files)} to {args.out or out}")
        return
    results = load_results(args.out)[1] if args.replot else run(args)
    files = {} if args.replot else {"results.json": to_json(results),
                                    "manifest.json": to_json(make_manifest(results, argv))}
    files |= {"perf.png": png_bytes(plot_perf(results)),
              "roofline.png": png_bytes(plot_roofline(results))}
    write_atomically(args.out, files)
    print(f"\nwrote {', '.join(files)} to {args.out}")
    if not args.replot:
        for line in run_warnings(results):
            print(f"warning: {line}")
        print_summary(results)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--worker"]:  # a worker process of a run: task on stdin, result on stdout
        return worker_main()
    try:
        dispatch(parse_args(argv), argv)
        return 0
    except UsageError as e:
        message, code = f"error: {e}", 2
    except RunError as e:
        message, code = f"error: {e}; nothing written", 1
    except BrokenPipeError:  # the reader left (`| head`): the files are written, see below
        raise
    except OSError as e:
        message, code = f"error: cannot write {e.filename or 'output'}: {e.strerror or e}", 2
    except KeyboardInterrupt:
        message, code = "interrupted; earlier results left as they were", 130
    print(f"perf.py: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `perf.py | head`: the reader left early; the files are written
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
