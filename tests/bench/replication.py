"""Does perf.py repeat itself? A set of its runs and of literal.py's, against the criteria.

The criteria ask whether a quiet run repeats: another run, at another moment, gives the same
time_s per op (within 5 %), the same shares and the same answer to Q2, and a run that is not
repeatable says so (verdict "disturbed") instead of calling itself quiet. perf.py claims less: a
run's interval covers its own processes only. This script reads the
results.json of each --runs folder and the JSON of each literal.py run (--literal: the lab's
protocol taken literally, the yardstick for (g)), prints a table per run and then the criteria:

  (a) at least 8 of 10 runs quiet;  (b) at most 10 % of any T's samples set aside in a quiet run;
  (c) quiet runs: every op holding >= 5 % of the forward at T = 256 and 512, time_s max/min <= 1.05;
  (d) quiet runs: each op's share at T = 128, 256, 512 within 2 percentage points;
  (e) quiet runs: Q2's ratio to the memory ceiling max/min <= 1.05 (beta's max/min beside it);
  (f) no run calling itself quiet with a time_s at T = 512 outside x1.05 of the quiet median;
  (g) all runs: per op >= 5 % at T = 256 and 512, time_s max/min <= max(1.05, literal's).

    python tests/bench/replication.py --runs DIR [DIR ...] [--literal FILE ...] [--out FILE]
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments" / "15-attention-perf"))
import perf  # noqa: E402

LIMIT = 1.05          # time_s and Q2: max/min over the runs
QUIET_SHARE = 0.8     # (a) 8 of 10
ASIDE_LIMIT = 0.10    # (b)
SHARE_PP = 2.0        # (d) percentage points
MATERIAL = 0.05       # (c), (g): the ops holding this share of the forward
MISSING = {}          # key path -> the sources where it was missing (a fallback was used)


def fail(message):
    """argparse's errors and ours: one line on stderr, exit status 2."""
    print(f"replication.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def dig(d, path, default, source, prefix=""):
    """d[a][b]... for path "a.b...", else default, noting prefix + path as missing in `source`."""
    for key in path.split("."):
        if not isinstance(d, dict) or key not in d:
            MISSING.setdefault(prefix + path, []).append(source)
            return default
        d = d[key]
    return d


def load_json(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        fail(f"cannot read {path}: {e}")


def load_run(folder, name):
    res = load_json(Path(folder) / "results.json")
    failed = dig(res, "conditions.failed", [], name)
    run = {"name": name, "folder": str(folder),
           "verdict": dig(res, "conditions.verdict", "unknown", name),
           "failed": [f.get("check", "?") if isinstance(f, dict) else str(f) for f in failed],
           "q2": dig(res, "analysis.softmax_at_T_512.ratio_to_memory_roof", None, name),
           "beta": dig(res, "ceilings.beta_peak_GBps", None, name), "T": {}}
    for row in dig(res, "sweep", [], name):
        where = (f"{name} T={row.get('T')}", "sweep[].")
        n = dig(row, "sample_count", None, *where)
        aside = dig(row, "samples_set_aside", None, *where)
        t = {op: dig(row, f"ops.{op}.time_s", None, *where) for op in perf.OPS}
        forward = dig(row, "forward_s", None, *where)
        if forward is None and None not in t.values():
            forward = sum(t.values())  # fallback: the sum of the ops' time_s
        share = {op: dig(row, f"ops.{op}.time_share", None, *where) for op in perf.OPS}
        share = {op: s if s is not None or t[op] is None or not forward else t[op] / forward
                 for op, s in share.items()}
        run["T"][row.get("T")] = {"set_aside_share": aside / n if n and aside is not None
                                  else None, "forward_s": forward, "time_s": t, "share": share}
    return run


def load_literal(path):
    res = load_json(path)
    by_T = dig(res, "T", {}, str(path))
    return {"name": str(path), "T": {int(T): {op: dig(r, f"mean_s.{op}", None, str(path), "T.")
                                               for op in perf.OPS} for T, r in by_T.items()}}


def values(runs, T, op, key="time_s"):
    return [r["T"][T][key][op] for r in runs
            if T in r["T"] and r["T"][T][key][op] is not None]


def spread(v):
    """max/min of the positive values, or None."""
    v = [x for x in v if x is not None and x > 0]
    return max(v) / min(v) if v else None


def material(runs, T):
    """The ops whose median share across `runs` at T is >= MATERIAL."""
    return [op for op in perf.OPS if (s := values(runs, T, op, "share"))
            and np.median(s) >= MATERIAL]


def fmt(x, spec, scale=1.0, none="—"):
    return none if x is None else format(x * scale, spec)


def print_runs(runs):
    ops = " ".join(f"{op[:7]:>7}" for op in perf.OPS)
    print(f"{'':<34}{'time_s at T = 512 (ms)':^39}  {'time_s at T = 256 (ms)':^39}")
    print(f"{'run':<16} {'verdict':<9} {'aside':>5}  {ops}  {ops}  {'sm@256':>6} {'Q2':>5}"
          f" {'beta':>5}  failed checks")
    for r in runs:
        cells = "  ".join(" ".join(fmt(r["T"].get(T, {}).get("time_s", {}).get(op), "7.3f", 1e3)
                                   .rjust(7) for op in perf.OPS) for T in (512, 256))
        aside = [a["set_aside_share"] for a in r["T"].values() if a["set_aside_share"] is not None]
        sm = r["T"].get(256, {}).get("share", {}).get("softmax")
        print(f"{r['name'][:16]:<16} {r['verdict']:<9} {fmt(max(aside, default=None), '4.0%'):>5}"
              f"  {cells}  {fmt(sm, '5.1%'):>6} {fmt(r['q2'], '4.1%'):>5}"
              f" {fmt(r['beta'], '5.1f'):>5}  {', '.join(r['failed']) or '-'}")


def criteria(runs, literal):
    """[(label, measured, ok, details)]: ok None where nothing could be measured."""
    quiet = [r for r in runs if r["verdict"] == "quiet"]
    out, need = [], math.ceil(QUIET_SHARE * len(runs))
    out.append(("(a) quiet runs", f"{len(quiet)} of {len(runs)} (need >= {need})",
                len(quiet) >= need, []))
    aside = [a["set_aside_share"] for r in quiet for a in r["T"].values()
             if a["set_aside_share"] is not None]
    worst = max(aside, default=None)
    out.append(("(b) largest set-aside share, quiet runs", f"{fmt(worst, '.1%')} (need <= 10 %)",
                None if worst is None else worst <= ASIDE_LIMIT, []))
    cells = [(T, op, spread(values(quiet, T, op))) for T in (256, 512) for op in material(quiet, T)]
    worst = max((c[2] for c in cells if c[2] is not None), default=None)
    out.append(("(c) time_s max/min, quiet runs, ops >= 5 %", f"{fmt(worst, '.3f')} (need <= 1.05)",
                None if worst is None else worst <= LIMIT,
                [f"T={T} {op}: {fmt(s, '.3f')}" for T, op, s in cells]))
    cells = [(T, op, (max(v) - min(v)) * 100) for T in (128, 256, 512) for op in perf.OPS
             if (v := values(quiet, T, op, "share"))]
    worst = max((c[2] for c in cells), default=None)
    out.append(("(d) share max-min, quiet runs, T = 128-512", f"{fmt(worst, '.2f')} pp (need <= 2)",
                None if worst is None else worst <= SHARE_PP,
                [f"T={T} {op}: {d:.2f} pp" for T, op, d in cells if d > SHARE_PP / 2]))
    q2, beta = spread([r["q2"] for r in quiet]), spread([r["beta"] for r in quiet])
    out.append(("(e) Q2 ratio max/min, quiet runs", f"{fmt(q2, '.3f')} (need <= 1.05);"
                f" beta max/min {fmt(beta, '.3f')}", None if q2 is None else q2 <= LIMIT, []))
    odd = []
    for op in perf.OPS:
        if v := values(quiet, 512, op):
            m = float(np.median(v))
            odd += [f"{r['name']} {op}: x{t / m:.3f} of the quiet median" for r in quiet
                    if (t := r["T"].get(512, {}).get("time_s", {}).get(op)) is not None
                    and not m / LIMIT <= t <= m * LIMIT]
    out.append(("(f) quiet runs with a T=512 time_s outside x1.05 of the median",
                f"{len(odd)} (need none)", not odd if quiet else None, odd))
    cells = []
    for T in (256, 512):
        for op in material(runs, T):
            lit = spread([f["T"].get(T, {}).get(op) for f in literal]) \
                if len(literal) > 1 else None  # one file has no spread
            ours = spread(values(runs, T, op))
            limit = max(LIMIT, lit or LIMIT)
            cells.append((T, op, ours, lit, ours is not None and ours <= limit))
    out.append(("(g) time_s max/min, all runs, vs literal.py",
                f"{sum(c[4] for c in cells)} of {len(cells)} ops within max(1.05, literal's)"
                + ("" if len(literal) > 1 else " (< 2 --literal files: the limit is 1.05)"),
                all(c[4] for c in cells) if cells else None,
                [f"T={T} {op}: ours {fmt(o, '.3f')}, literal {fmt(lit, '.3f')}"
                 f" {'✓' if ok else '✗'}" for T, op, o, lit, ok in cells]))
    return out


def levels(runs, literal):
    """Per T and op: our runs' median time_s beside literal.py's median of its means."""
    Ts = sorted({T for r in runs for T in r["T"] if T is not None})
    rows = []
    for T in Ts:
        for op in perf.OPS:
            ours = values(runs, T, op)
            lit = [v for f in literal if (v := f["T"].get(T, {}).get(op)) is not None]
            rows.append({"T": T, "op": op,
                         "ours_median_s": float(np.median(ours)) if ours else None,
                         "literal_median_s": float(np.median(lit)) if lit else None})
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.error = fail
    p.add_argument("--runs", nargs="+", required=True, metavar="DIR",
                   help="perf.py run folders, each holding a results.json")
    p.add_argument("--literal", nargs="*", default=[], metavar="FILE",
                   help="literal.py JSON outputs")
    p.add_argument("--out", help="write the summary as JSON to this file")
    args = p.parse_args(argv)
    for d in args.runs:
        if not (Path(d) / "results.json").is_file():
            fail(f"--runs: no results.json in {d}")
    if args.out and not Path(args.out).resolve().parent.is_dir():
        fail(f"--out: no such directory: {Path(args.out).resolve().parent}")
    names = [Path(d).resolve().name for d in args.runs]
    names = [f"{n}#{i + 1}" if names.count(n) > 1 else n for i, n in enumerate(names)]
    runs = [load_run(d, n) for d, n in zip(args.runs, names)]
    literal = [load_literal(f) for f in args.literal]
    print_runs(runs)
    print()
    found = criteria(runs, literal)
    for label, measured, ok, details in found:
        print(f"{'✓' if ok else '✗'} {label}: {measured}" + (" (nothing to measure)"
                                                          if ok is None else ""))
        for d in details:
            print(f"      {d}")
    rows = levels(runs, literal)
    print(f"\nlevels (ms): our runs' median time_s, literal.py's median of its means"
          f" ({len(literal)} files)")
    print(f"{'T':>4} {'op':<9} {'ours':>9} {'literal':>9} {'lit/ours':>8}")
    for r in rows:
        o, lit = r["ours_median_s"], r["literal_median_s"]
        print(f"{r['T']:>4} {r['op']:<9} {fmt(o, '9.4f', 1e3):>9} {fmt(lit, '9.4f', 1e3):>9}"
              f" {fmt(lit / o if o and lit else None, '8.3f'):>8}")
    if MISSING:
        print("\nkeys missing (a fallback was used; perf.py may have renamed them):")
        for path, where in MISSING.items():
            print(f"  {path}: {len(where)}x, in {', '.join(sorted(set(where)))}")
    if args.out:
        res = {"runs": runs, "literal": literal, "levels": levels(runs, literal),
               "criteria": [{"criterion": c[0], "measured": c[1], "pass": c[2], "details": c[3]}
                            for c in found], "missing_keys": MISSING}
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
