"""Re-binds the write-up to a fresh run. A re-measure after a change to perf.py, from the
repository's root: twelve fresh default runs, one after another, into runs/rerun_01 …
runs/rerun_12; `python tests/rebind.py --reruns runs/rerun_??` (reruns.json); one default run
into the lab's folder, committed unedited after this script has run; then, with the new
results.json, manifest.json and reruns.json in place of the committed ones:

    python tests/rebind.py

Every figure that bindings.py binds is rewritten in the five documents: its phrase is found with
the old figure (read off the committed files, `git show HEAD:`; a figure the committed files
cannot give, from a key new to results.json, as the one word where it stands), wherever the
phrase wraps over lines, and the figure is replaced by the new one. Then one line per statement
to re-read:

    CLAIM <document>: <phrase>      a claim of bindings.CLAIMS that the new run does not bear out
    CONDITION <document>: <phrase>  a figure that encodes a condition ("?"), which flipped: it is
                                    reported, not rewritten

Exit status 1 where a figure could not be placed or computed (each said on a line of its own,
nothing written), else 0. test_rebind.py runs it on a copy of the repository.

    python tests/rebind.py --reruns runs/rerun_01 runs/rerun_02 ...

writes reruns.json instead: of each fresh run (its folder), its manifest and the figures of its
results.json that the write-up compares across runs (rerun_digest)."""
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXP = ROOT / "experiments" / "15-attention-perf"
sys.path.insert(0, str(EXP))

import bindings  # noqa: E402  (perf.py's folder first)

FILES = {"r": "results.json", "m": "manifest.json", "reruns": "reruns.json"}
OPS = bindings.perf.OPS


def committed(name):
    """A file of the committed run, as HEAD has it."""
    rel = (EXP / name).relative_to(ROOT).as_posix()
    return json.loads(subprocess.run(["git", "show", f"HEAD:{rel}"], cwd=ROOT, check=True,
                                     capture_output=True, text=True).stdout)


def figures(run, get):
    """The figure a binding reads off a run ({"r", "m", "reruns"}), or the error that stops it."""
    bindings.use_reruns(run["reruns"]["runs"])
    try:
        return get(run["r"], run["m"]), None
    except (KeyError, IndexError, TypeError, ValueError, StopIteration, ZeroDivisionError,
            AttributeError) as e:
        return None, f"{type(e).__name__}: {e}"


def loose(text):
    """A regex of `text` in which each run of whitespace matches any run (a line break too)."""
    return "".join(r"\s+" if part.isspace() else re.escape(part)
                   for part in re.split(r"(\s+)", text) if part)


def respace(found, new):
    """`new` laid out as `found` was: the same line breaks where the words line up one to one."""
    gaps = re.findall(r"\s+", found)
    words = new.split(" ")
    if len(gaps) != len(words) - 1:
        return new
    return "".join(w + g for w, g in zip(words, gaps + [""]))


def rebind_document(name, table, old, new, report):
    """The document with every binding's old figure replaced by the new; problems to `report`."""
    text = (ROOT / name).read_text()
    edits = {}
    for phrase, get in table:
        (before, err_old), (after, err_new) = figures(old, get), figures(new, get)
        if err_new:
            report("ERROR", name, phrase, f"cannot compute the figure: {err_new}")
            continue
        if "?" in (before, after) and not err_old:
            if before != after:
                report("CONDITION", name, phrase)
            continue
        head, tail = phrase.split("{}")
        # A figure the committed run cannot give (a key new to results.json): the one word
        # that stands where it goes in the text.
        figure = r"[^\s*|]+" if err_old else loose(before)
        pattern = loose(head) + "(" + figure + ")" + loose(tail)
        spans = [m.span(1) for m in re.finditer(pattern, text)]
        if not spans:
            report("ERROR", name, phrase, f"not found with the committed figure {before!r}")
        for span in spans:
            value = respace(text[span[0]:span[1]], after)
            if edits.get(span, value) != value:
                report("ERROR", name, phrase, "two bindings disagree on one figure")
            edits[span] = value
    starts = sorted(edits)
    for (a0, a1), (b0, _) in zip(starts, starts[1:]):
        if b0 < a1:
            report("ERROR", name, text[a0:a1], "two figures overlap")
    for a, b in reversed(starts):
        text = text[:a] + edits[a, b] + text[b:]
    return text


def rerun_digest(r, m):
    """What the write-up compares across runs: the manifest, and from results.json each answer's
    figures, the classes, the processes' spread and groups, the softmax's passes, the threads, the
    heap, the copies, each process's canary reference and the processes left out."""
    at = {x["T"]: x for x in r["sweep"]}
    a = r["analysis"]
    return {**m, "hardware": {k: m["hardware"].get(k) for k in ("cpu_model", "vendor", "family",
                                                                  "model", "physical_cores")},
            "ridge": r["ceilings"]["ridge"],
            "forward_s": {T: x["forward_s"] for T, x in at.items()},
            "time_s": {T: {k: x["ops"][k]["time_s"] for k in OPS} for T, x in at.items()},
            "time_s_interval": {T: {k: x["ops"][k]["time_s_interval"] for k in OPS}
                                for T, x in at.items()},
            "worker_times": {T: {k: x["ops"][k]["worker_times"] for k in OPS}
                             for T, x in at.items()},
            "between_process_rsd": {T: {k: x["ops"][k]["between_process_rsd"] for k in OPS}
                                    for T, x in at.items()},
            "time_share": {T: {k: x["ops"][k]["time_share"] for k in OPS} for T, x in at.items()},
            "bound": {k: [at[T]["ops"][k]["bound"] for T in at] for k in OPS},
            "level_bound": {k: [at[T]["ops"][k]["level_bound"] for T in at] for k in OPS},
            "samples_set_aside": {T: x["samples_set_aside"] for T, x in at.items()},
            "dominant_op_per_T": a["dominant_op_per_T"],
            "expected_observations_held": [o["held"] for o in a["expected_observations"]],
            "scores_av_threshold": a["scores_av_threshold"]["from_intensity_formula"],
            "softmax_at_T_512": a.get("softmax_at_T_512"),
            "softmax_passes": [{**{k: v for k, v in x.items() if k != "passes"}, "passes": {
                p["pass"]: {k: p[k] for k in ("ns_per_element", "in_cache_ns_per_element",
                                              "copy_ns_per_element", "larger_floor")}
                for p in x["passes"]}} for x in a["softmax_passes"]],
            "threads_over_one": {w["T"]: w["threads_over_one"] for w in a["threading_windows"]},
            "default_heap": {x["T"]: {"forward_s": x["forward_s"], "page_faults_per_forward":
                                      x["page_faults_per_forward"]}
                             for x in r["sweep_default_heap"]},
            "levels": {n: {k: lv.get(k) for k in ("GBps", "GBps_1thread", "slower_than_larger",
                                                  "plateau", "past_llc")}
                       for n, lv in r["ceilings"]["levels"].items()},
            "checks": {n: c["value"] for n, c in r["conditions"]["checks"].items()},
            "canary_reference_s": r["canary"]["reference_s"], "left_out": r["canary"]["left_out"],
            "worker_labels": [w["label"] for w in r["worker_processes"]],
            "processes": {T: x["processes"] for T, x in at.items()},
            "process_groups": r["conditions"]["findings"]["process_groups"],
            "run_wall_s": r["run_wall_s"]}


def write_reruns(folders):
    """reruns.json from the fresh runs' folders, in the order given."""
    runs = [rerun_digest(*(json.loads((Path(f) / name).read_text())
                           for name in ("results.json", "manifest.json"))) for f in folders]
    what = (f"{len(runs)} fresh default runs made one after another, just before the committed "
            "run, by the same perf.py (perf_py_sha256), each from the repository's root as python "
            "experiments/15-attention-perf/perf.py --out runs/rerun_NN (its manifest's command "
            "names the script as perf.py, from perf.py's folder): its manifest and the figures the "
            "write-up compares across runs (tests/rebind.py, rerun_digest)")
    (EXP / "reruns.json").write_text(json.dumps({"what": what, "runs": runs}, indent=1) + "\n")
    print(f"wrote {EXP / 'reruns.json'}: {len(runs)} runs")
    return 0


def main():
    if sys.argv[1:2] == ["--reruns"]:
        return write_reruns(sys.argv[2:])
    old = {k: committed(f) for k, f in FILES.items()}
    new = {k: json.loads((EXP / f).read_text()) for k, f in FILES.items()}
    lines, errors = [], []

    def report(kind, name, phrase, why=None):
        line = f"{kind} {name}: {' '.join(phrase.split())}" + (f"  ({why})" if why else "")
        (errors if kind == "ERROR" else lines).append(line)

    texts = {name: rebind_document(name, table, old, new, report)
             for name, table in bindings.BINDINGS.items()}
    if errors:
        print("\n".join(errors + ["nothing written: the figures above could not be placed"]))
        return 1
    for name, text in texts.items():
        (ROOT / name).write_text(text)
    bindings.use_reruns(new["reruns"]["runs"])
    for name, phrase, holds in bindings.CLAIMS:
        try:
            ok = holds(new["r"], new["m"])
        except (KeyError, IndexError, TypeError, ValueError, StopIteration, ZeroDivisionError):
            ok = False
        if not ok:
            report("CLAIM", name, phrase)
    print("\n".join(lines) if lines else "every figure rebound; every claim holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
