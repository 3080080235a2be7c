"""The lab's literal protocol, for comparison with perf.py's repeatability.

One process, glibc's default heap (perf.warm_heap is NOT called), the BLAS threads as the
environment sets them. For each T in 64, 128, 256, 512: one untimed forward, then --measurements
measurements, each running perf.attention_forward_timed back to back until --min-time of wall time
has passed and keeping per op its summed time / number of forwards. Per T and op: the mean over the
measurements (what the lab asks for), the median and the std; the forward (the sum of the ops'
means) and each op's share of it. Run it several times (fresh processes, at different moments):
the spread of its means over the runs is what perf.py's repeatability is set against
(replication.py, criterion g).

    python tests/bench/literal.py [--out FILE] [--measurements 20] [--min-time 0.05]
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments" / "15-attention-perf"))
import perf  # noqa: E402

TS = (64, 128, 256, 512)


def fail(message):
    """argparse's errors and ours: one line on stderr, exit status 2 (process_state.py too)."""
    print(f"{Path(sys.argv[0]).name}: error: {message}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.error = fail
    p.add_argument("--out", help="write the results as JSON to this file (default: print only)")
    p.add_argument("--measurements", type=int, default=20, help="per T (default 20)")
    p.add_argument("--min-time", type=float, default=0.05,
                   help="seconds of forwards per measurement (default 0.05)")
    args = p.parse_args(argv)
    if args.measurements < 2:
        fail("--measurements must be at least 2 (a std needs two)")
    if not (args.min_time > 0 and math.isfinite(args.min_time)):
        fail("--min-time must be a positive number of seconds")
    if args.out and not Path(args.out).resolve().parent.is_dir():
        fail(f"--out: no such directory: {Path(args.out).resolve().parent}")
    return args


def measurement(x, mha, mask, min_time):
    """Timed forwards back to back until min_time has passed: (per op, summed time / n; n)."""
    sums, n, t0 = dict.fromkeys(perf.OPS, 0.0), 0, time.perf_counter()
    while True:
        times = perf.attention_forward_timed(x, mha, mask)
        for op in perf.OPS:
            sums[op] += times[op]
        n += 1
        if time.perf_counter() - t0 >= min_time:
            return {op: s / n for op, s in sums.items()}, n


def measure_T(T, mha, measurements, min_time):
    x, mask = perf.make_input(T, mha, seed=0), perf.causal_mask(T)
    perf.attention_forward(x, mha, mask)  # the untimed warm-up forward
    got = [measurement(x, mha, mask, min_time)[0] for _ in range(measurements)]
    per_op = {op: np.array([m[op] for m in got]) for op in perf.OPS}
    mean = {op: float(v.mean()) for op, v in per_op.items()}
    forward = sum(mean.values())
    return {"mean_s": mean,
            "median_s": {op: float(np.median(v)) for op, v in per_op.items()},
            "std_s": {op: float(v.std(ddof=1)) for op, v in per_op.items()},
            "share": {op: m / forward for op, m in mean.items()},
            "forward_s": forward}


def print_table(by_T):
    print(f"{'T':>4} {'op':<9} {'mean ms':>9} {'median ms':>10} {'sd/mean':>8} {'share':>7}")
    for T, r in by_T.items():
        for op in perf.OPS:
            m = r["mean_s"][op]
            print(f"{T:>4} {op:<9} {m * 1e3:9.4f} {r['median_s'][op] * 1e3:10.4f}"
                  f" {r['std_s'][op] / m:8.1%} {r['share'][op]:7.1%}")
        print(f"{T:>4} {'forward':<9} {r['forward_s'] * 1e3:9.4f}")


def main(argv=None):
    args = parse_args(argv)
    started, t0 = time.time(), time.perf_counter()
    mha = perf.init_mha(d_model=64, n_heads=4, seed=0)
    by_T = {str(T): measure_T(T, mha, args.measurements, args.min_time) for T in TS}
    wall = time.perf_counter() - t0
    print_table(by_T)
    print(f"wall {wall:.1f} s")
    res = {"protocol": f"literal: one process, glibc's default heap, BLAS threads as the "
                       f"environment sets them; per T one untimed forward, then "
                       f"{args.measurements} measurements of >= {args.min_time * 1e3:g} ms of "
                       f"forwards back to back, each per op summed time / n; mean over them",
           "measurements": args.measurements, "min_time_s": args.min_time,
           "blas_threads": [p.get("num_threads") for p in threadpool_info()
                            if p.get("user_api") == "blas"],
           "T": by_T, "started": started, "wall_s": wall}
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
