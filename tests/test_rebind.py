"""tests/rebind.py re-binds the write-up to another run: in a copy of this checkout whose committed
run is replaced by another real run of the same perf.py (tests/data/other-run, a short one), it
exits 0, every figure test then passes, and the claims it prints are exactly those the other run
does not bear out. Its pieces are checked by hand on a small document."""
import json
import re
import shutil
import subprocess
import sys

import pytest

import bindings
import rebind
from conftest import EXP, copy_checkout

DATA = EXP.parent.parent / "tests" / "data"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """One copy of this checkout for the three runs; each test starts from its commit."""
    dest = tmp_path_factory.mktemp("rebind") / "repo"
    env = copy_checkout(dest)
    if env is None:
        pytest.skip("not a git checkout, or no git")
    return dest, env


@pytest.mark.parametrize("other", ["other-run", "laptop-run", "threshold-run"])
def test_rebind_on_another_real_run_leaves_every_figure_test_passing(checkout, other):
    """Short real runs of the same perf.py: other-run as it measures; laptop-run with --roofline
    tests/data/laptop-roofline.json, the curriculum's laptop figures, whose ridge lies above d_k/2
    (no threshold T for scores and av); threshold-run with tests/data/threshold-roofline.json,
    whose ridge lies below it (a threshold T): Q1's answer re-binds either way."""
    OTHER = DATA / other
    dest, env = checkout
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=dest, env=env, check=True)
    exp = dest / EXP.relative_to(EXP.parent.parent)
    for name in ("results.json", "manifest.json"):
        shutil.copy2(OTHER / name, exp / name)
    proc = subprocess.run([sys.executable, "tests/rebind.py"], cwd=dest, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    other = {k: json.loads((OTHER / f).read_text()) for k, f in (("r", "results.json"),
                                                                  ("m", "manifest.json"))}
    flipped = [f"CLAIM {name}: {' '.join(phrase.split())}" for name, phrase, holds in bindings.CLAIMS
               if not holds(other["r"], other["m"])]
    printed = proc.stdout.splitlines()
    assert [ln for ln in printed if ln.startswith("CLAIM ")] == flipped
    conditions = [ln for ln in printed if ln.startswith("CONDITION ")]
    one_process = ["-n", "0", "--dist", "no"]  # pytest.ini's xdist off (old xdist needs both)
    figures = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              *one_process, "tests/test_docs.py", "-k", "bound_figure or unbound"],
                             cwd=dest, env=env, capture_output=True, text=True, timeout=120)
    # A condition that flipped is left for the prose to be re-read: only its document may fail.
    failing = set(re.findall(r"FAILED \S+\[([^\]]+)\]", figures.stdout))
    assert failing <= {ln.split()[1].rstrip(":") for ln in conditions}, figures.stdout[-3000:]
    assert (figures.returncode == 0) == (not failing), figures.stdout[-3000:]


def test_a_figure_is_found_over_a_line_break_and_keeps_the_layout():
    text = "the forward takes **3.703\nms** at T = 512"
    pattern = rebind.loose("takes **") + "(" + rebind.loose("3.703 ms") + ")" + rebind.loose("**")
    m = re.search(pattern, text)
    assert m and rebind.respace(m[1], "4.1 ms") == "4.1\nms"
    assert rebind.respace("3.703 ms", "4.1 ms or so") == "4.1 ms or so"  # no one-to-one layout


def test_rebind_document_replaces_reports_and_refuses(tmp_path, monkeypatch):
    monkeypatch.setattr(rebind, "ROOT", tmp_path)
    (tmp_path / "doc.md").write_text("β is **31.5\nGB/s** here; no plateau; L3 of 480 MiB\n")
    runs = {"runs": bindings.RERUNS}  # the committed reruns, as the other tests read them
    old = {"r": {"beta": 31.5, "plateau": False}, "m": {}, "reruns": runs}
    new = {"r": {"beta": 29.25, "plateau": True}, "m": {}, "reruns": runs}
    table = [("β is **{} GB/s**", lambda r, m: f"{r['beta']:.1f}"),
             ("no {}; L3", lambda r, m: "plateau" if not r["plateau"] else "?")]
    said = []
    text = rebind.rebind_document("doc.md", table, old, new,
                                  lambda *a, **k: said.append(a[0] + " " + a[2]))
    assert text == "β is **29.2\nGB/s** here; no plateau; L3 of 480 MiB\n"
    assert said == ["CONDITION no {}; L3"]  # flipped: reported, not rewritten
    missing = [("L3 of {} MiB", lambda r, m: "32")]
    rebind.rebind_document("doc.md", missing, old, new, lambda *a: said.append(a[0] + " " + a[2]))
    assert said[-1] == "ERROR L3 of {} MiB"


def test_a_figure_new_to_results_json_is_placed_where_its_word_stands(tmp_path, monkeypatch):
    # The committed run lacks the key (an analysis added since): the figure is found as the one
    # word between its phrase's two sides, and replaced; a new run that lacks it is an error.
    monkeypatch.setattr(rebind, "ROOT", tmp_path)
    (tmp_path / "doc.md").write_text("the scaling takes **0.297 ms** (**40 %** of the two)\n")
    runs = {"runs": bindings.RERUNS}
    old, new = {"r": {}, "m": {}, "reruns": runs}, {"r": {"scale": 0.31}, "m": {}, "reruns": runs}
    table = [("the scaling takes **{} ms**", lambda r, m: f"{r['scale']:.3f}")]
    said = []
    text = rebind.rebind_document("doc.md", table, old, new, lambda *a: said.append(a[0]))
    assert text == "the scaling takes **0.310 ms** (**40 %** of the two)\n" and said == []
    rebind.rebind_document("doc.md", table, new, old, lambda *a: said.append(a[0]))
    assert said == ["ERROR"]
