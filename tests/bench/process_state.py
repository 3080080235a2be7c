"""Does a slow state belong to a process or to a period of time?

perf.py pools samples from many worker processes and judges them by a canary read between
batches. If one process can sit in a slow state for its whole life (its pages placed badly, its
BLAS threads on cores that are shared) while another process started at the same time does not,
the remedy is more processes; if both slow down together, it is a period of the machine's, and
the remedy is to rerun later. This script tells the two apart.

The parent spawns two workers (this script with --child, JSON lines over stdin/stdout), each of
which calls perf.warm_heap() (the warm heap of perf.py's workers), builds the model and inputs for
T = 256 and 512, runs one untimed forward of each and makes the canary. Then the parent alternates
A, B, A, B, ... for --seconds, never both at once: a batch is, for T = 256 then 512, timed forwards
back to back until >= --min-time (per op: summed time / n), then one canary reading. Same time,
same machine, same code: a difference between A and B that persists belongs to the process.
--pairs N runs N fresh pairs one after another (the seconds split evenly); over all their
processes, the Spearman rank correlation between a process's median canary kernel and its median
scores at T = 512 says whether the canary sees a process's state.

    python tests/bench/process_state.py [--seconds 60] [--pairs 1] [--out FILE]
"""

import argparse
import gc
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from literal import fail, measurement  # one-line errors; a measurement of the lab's

EXP = Path(__file__).resolve().parents[2] / "experiments" / "15-attention-perf"
TS = (256, 512)
SHOWN = [(T, op) for T in (512, 256) for op in ("scores", "softmax", "av")]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.error = fail
    p.add_argument("--seconds", type=float, default=60.0,
                   help="alternating time in all, split over the pairs (default 60)")
    p.add_argument("--pairs", type=int, default=1, help="fresh pairs, one after another")
    p.add_argument("--min-time", type=float, default=0.05,
                   help="seconds of forwards per T in a batch (default 0.05)")
    p.add_argument("--threads", type=int, default=None,
                   help="BLAS threads of the workers (default: as the environment sets them)")
    p.add_argument("--pause", type=float, default=0.3,
                   help="seconds between turns, so that the waiting process's BLAS threads "
                        "stop spinning before the other measures (default 0.3)")
    p.add_argument("--out", help="write every batch and the summary as JSON to this file")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if not (args.seconds > 0 and math.isfinite(args.seconds)):
        fail("--seconds must be a positive number")
    if args.pairs < 1:
        fail("--pairs must be at least 1")
    if not (args.min_time > 0 and math.isfinite(args.min_time)):
        fail("--min-time must be a positive number of seconds")
    if args.threads is not None and args.threads < 1:
        fail("--threads must be at least 1")
    if args.out and not Path(args.out).resolve().parent.is_dir():
        fail(f"--out: no such directory: {Path(args.out).resolve().parent}")
    return args


# ---- the worker ------------------------------------------------------------------------------

def child(min_time):
    """A worker: set up, say so, then one batch per line read from stdin until EOF or "quit"."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it ends the workers
    sys.path.insert(0, str(EXP))
    import perf
    heap = perf.warm_heap()
    mha = perf.init_mha(d_model=64, n_heads=4, seed=0)
    inputs = {T: (perf.make_input(T, mha, seed=0), perf.causal_mask(T)) for T in TS}
    for x, mask in inputs.values():
        perf.attention_forward(x, mha, mask)  # first-touch faults, BLAS threads started
    canary = perf.make_canary()
    gc.disable()  # as perf.py's workers: a collection would be timed as an op

    def say(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    def per_op(x, mask):
        return measurement(x, mha, mask, min_time)

    say({"ready": True, "pid": os.getpid(), "heap": heap})
    for batch, line in enumerate(sys.stdin):
        if line.strip() != "batch":
            break
        rec, ns = {"pid": os.getpid(), "batch": batch, "t": time.time()}, {}
        for T, (x, mask) in inputs.items():
            rec[f"T{T}"], ns[f"T{T}"] = per_op(x, mask)
        rec["canary"] = canary["read"]()
        say({**rec, "n": ns})


# ---- the parent ------------------------------------------------------------------------------

def spawn(args):
    env = dict(os.environ)
    if args.threads:  # fixed before numpy loads, as perf.py does for its workers, with its names
        sys.path.insert(0, str(EXP))
        import perf
        env.update(dict.fromkeys(perf.THREAD_VARS, str(args.threads)))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--min-time",
           str(args.min_time)]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            bufsize=1, env=env)


def ask(proc, command=None):
    if command:
        proc.stdin.write(command + "\n")
        proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"worker {proc.pid} ended (exit status {proc.wait()})")
    return json.loads(line)


def run_pair(args, seconds, procs):
    """Two fresh workers, alternating for `seconds`; their ready lines and batches."""
    procs += [spawn(args), spawn(args)]
    pair = procs[-2:]
    ready = [ask(p) for p in pair]
    batches = [[], []]
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or not batches[0]:
        for p, got in zip(pair, batches):  # A then B: both always have as many batches
            time.sleep(args.pause)  # the other's BLAS threads stop spinning and sleep first
            got.append(ask(p, "batch"))
    for p in pair:
        p.stdin.write("quit\n")
        p.stdin.close()
        p.wait(timeout=10)
    return [{"label": label, "pid": r["pid"], "heap": r["heap"], "batches": b}
            for label, r, b in zip("AB", ready, batches)]


def series(batches, T, op):
    return np.array([b[f"T{T}"][op] for b in batches])


def summarize(proc):
    b = proc["batches"]
    out = {"n_batches": len(b)}
    for T, op in SHOWN:
        v = series(b, T, op)
        out[f"{op}@{T}"] = {"median": float(np.median(v)), "p10": float(np.percentile(v, 10)),
                            "p90": float(np.percentile(v, 90))}
    for k in b[0]["canary"]:  # the canary's kernels, as perf.make_canary names them
        v = np.array([x["canary"][k] for x in b])
        out[f"canary_{k}"] = {"median": float(np.median(v)),
                                 "p10": float(np.percentile(v, 10)),
                                 "p90": float(np.percentile(v, 90))}
    s = series(b, 512, "scores")
    out["scores@512_rel_sd"] = float(s.std(ddof=1) / s.mean()) if len(s) > 1 else None
    return out


def ranks(v):
    """Ranks 1..n, ties given their average rank."""
    v = np.asarray(v, dtype=float)
    r = np.empty(len(v))
    r[np.argsort(v, kind="stable")] = np.arange(1, len(v) + 1)
    for u in np.unique(v):
        r[v == u] = r[v == u].mean()
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    if len(ra) < 3 or ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def report(pairs):
    """Prints the summary; returns per pair the ratios A/B of the medians, and the Spearmans."""
    kernels = list(pairs[0][0]["batches"][0]["canary"])
    keys = [f"{op}@{T}" for T, op in SHOWN] + [f"canary_{k}" for k in kernels]
    ratios = []
    for i, pair in enumerate(pairs):
        print(f"\npair {i + 1}: median [p10-p90]; ops in ms at T, canary kernels in µs")
        sums = [summarize(p) for p in pair]
        for p, s in zip(pair, sums):
            p["summary"] = s
            sd = s["scores@512_rel_sd"]
            print(f"  {p['label']} pid {p['pid']}: {s['n_batches']} batches, scores@512 "
                  f"rel. SD " + ("n/a" if sd is None else f"{sd:.1%}"))
        ratios.append({k: sums[0][k]["median"] / sums[1][k]["median"] for k in keys})
        print(f"  {'':<15}" + "".join(f"{p['label'] + ' median [p10-p90]':>30}" for p in pair)
              + f"{'A/B':>8}")
        for k in keys:
            scale = 1e6 if k.startswith("canary") else 1e3
            cells = "".join(f"{s[k]['median'] * scale:>12.4g} [{s[k]['p10'] * scale:.4g}-"
                            f"{s[k]['p90'] * scale:.4g}]".rjust(30) for s in sums)
            print(f"  {k:<15}{cells}{ratios[-1][k]:>8.3f}")
    procs = [p["summary"] for pair in pairs for p in pair]
    scores = [s["scores@512"]["median"] for s in procs]
    rho = {k: spearman([s[f"canary_{k}"]["median"] for s in procs], scores)
           for k in kernels}
    print(f"\nSpearman over {len(procs)} processes, median canary kernel vs median scores@512:")
    for k, r in rho.items():
        print(f"  {k:<8} " + (f"{r:+.2f}" if r is not None else
                                 "n/a (needs >= 3 processes that differ: use --pairs >= 2)"))
    return ratios, rho


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        return child(args.min_time)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` runs
    started, procs, pairs = time.time(), [], []
    try:
        for i in range(args.pairs):
            print(f"pair {i + 1} of {args.pairs}: {args.seconds / args.pairs:.0f} s", flush=True)
            pairs.append(run_pair(args, args.seconds / args.pairs, procs))
    finally:
        for p in procs:  # no worker outlives the run, whatever happened
            if p.poll() is None:
                p.kill()
            p.wait()
    ratios, rho = report(pairs)
    if args.out:
        res = {"config": {k: v for k, v in vars(args).items() if k != "child"},
               "started": started, "wall_s": time.time() - started,
               "pairs": [{"processes": pair, "median_ratio_A_over_B": r}
                         for pair, r in zip(pairs, ratios)],
               "spearman_vs_scores_at_512": rho}
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # the workers are gone already (main's finally)
        print("process_state.py: interrupted", file=sys.stderr)
        sys.exit(130)
