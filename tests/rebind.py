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
results.json that the write-up compares across runs (bindings.run_summary)."""
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


def write_reruns(folders):
    """reruns.json from the fresh runs' folders, in the order given."""
    runs = [bindings.run_summary(*(json.loads((Path(f) / name).read_text())
                            for name in ("results.json", "manifest.json"))) for f in folders]
    what = ("fresh default runs of perf.py, one entry each, in the order given to tests/rebind.py "
            "--reruns: its manifest (perf_py_code_digest names the script's code), its start and end (its "
            "workers' first start and last end, seconds since the epoch) and the figures the "
            "write-up compares across runs (tests/bindings.py, run_summary)")
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
