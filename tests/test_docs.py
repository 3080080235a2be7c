"""The committed write-up stays true. Every figure quoted in the five documents is tied to the one
value of the committed run it quotes: the phrase must be found verbatim with the figure as the
JSON gives it, so that changing the figure in the text, or the value in the JSON, fails the test
that names the phrase. A number in the prose that no phrase ties fails too, unless STRUCTURAL
(bindings.py) names it: the lab's vocabulary and figures (a T, a phase, d_k, its 10 %, its laptop's
6 MiB, the 2048² matmul) and the project's names. Verdict words (quiet, yes, no, none) are tied
the same way."""
import ast
import json
import re
import shutil
import subprocess

import perf
import pytest

import dis

import bindings
from bindings import ARITHMETIC, BINDINGS, CLAIMS, MARKERS, STRUCTURAL
from conftest import EXP

ROOT = EXP.parent.parent
RESULTS = json.loads((EXP / "results.json").read_text())
MANIFEST = json.loads((EXP / "manifest.json").read_text())


def doc_text(name):
    return (ROOT / name).read_text()


def prose(text):
    """The text a reader reads as prose: code blocks, indented blocks and inline code removed."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    lines = [ln for ln in text.splitlines() if not ln.startswith("    ")]
    return re.sub(r"`[^`]*`", "", "\n".join(lines))


@pytest.mark.parametrize("name", BINDINGS)
def test_every_bound_figure_is_the_json_s(name):
    text = " ".join(doc_text(name).split())  # a phrase may wrap over lines
    missing = [phrase.format(get(RESULTS, MANIFEST)) for phrase, get in BINDINGS[name]
               if phrase.format(get(RESULTS, MANIFEST)) not in text]
    assert missing == [], f"{name}: these phrases, with the committed figures, are not in the text"


@pytest.mark.parametrize("name", BINDINGS)
def test_no_number_in_the_prose_is_unbound(name):
    text = " ".join(prose(doc_text(name)).split())
    covered = set()
    for phrase, get in BINDINGS[name]:  # the figure's own characters, wherever its phrase stands
        value, at = get(RESULTS, MANIFEST), phrase.index("{}")
        for m in re.finditer(re.escape(phrase.format(value)), text):
            covered |= set(range(m.start() + at, m.start() + at + len(value)))
    for pattern in STRUCTURAL:
        for m in re.finditer(pattern, text, flags=re.M):
            covered |= set(range(m.start(), m.end()))
    loose = [text[max(0, m.start() - 50):m.end() + 10] for m in re.finditer(r"\d", text)
             if m.start() not in covered]
    assert loose == [], f"{name}: numbers that no phrase binds"


@pytest.mark.parametrize("name,phrase,holds", CLAIMS + ARITHMETIC,
                         ids=[f"{n}:{p[:40]}" for n, p, _ in CLAIMS + ARITHMETIC])
def test_every_quantitative_word_is_true_of_the_committed_run(name, phrase, holds):
    assert phrase in " ".join(doc_text(name).split()), f"{name}: {phrase!r} is not in the text"
    assert holds(RESULTS, MANIFEST), f"{name}: {phrase!r} is not true of the committed run"


@pytest.mark.parametrize("name,phrase", MARKERS, ids=[f"{n}:{p[:40]}" for n, p in MARKERS])
def test_every_open_question_is_said(name, phrase):
    assert phrase in " ".join(doc_text(name).split()), f"{name}: {phrase!r} is not in the text"


# what the code and the command line set, not what the run measured
SETTINGS = {"config": RESULTS["config"], "estimators": RESULTS["estimators"],
            "definitions": RESULTS["definitions"],
            "canary": {k: v for k, v in RESULTS["canary"].items() if k != "left_out"},
            "worker_processes": [{"label": w["label"]} for w in RESULTS["worker_processes"]]}  # the plan's


def loads(holds, names, helpers=False):
    """Whether the predicate loads any of these names, in its body or a comprehension within it;
    with `helpers`, in the bindings' functions it calls too (QUIET, SLOW_RERUNS... read RERUNS)."""
    codes, seen = [holds.__code__], set()
    while codes:
        code = codes.pop()
        if code in seen:
            continue
        seen.add(code)
        codes += [c for c in code.co_consts if isinstance(c, type(code))]
        found = [i for i in dis.get_instructions(code) if i.opname.startswith(
            ("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_GLOBAL"))]
        # Python 3.13 loads two locals in one instruction (LOAD_FAST_LOAD_FAST): a tuple of names
        if any(v in names for i in found for v in (i.argval if isinstance(i.argval, tuple)
                                                   else (i.argval,))):
            return True
        codes += [f.__code__ for i in found if helpers and i.opname == "LOAD_GLOBAL"
                  and getattr(f := getattr(bindings, i.argval, None), "__module__", None) == "bindings"
                  and hasattr(f, "__code__")]
    return False


def reads_the_run(holds):
    """Whether a claim's predicate reads what the run measured: the reruns' figures (reruns.json),
    or its arguments (the results and the manifest) beyond the settings. One that reads neither
    is a constant, a constant against its own literal, or the code's settings against each other
    (they hold by construction on every default run), and proves nothing."""
    if loads(holds, {"RERUNS"}, helpers=True):
        return True
    if not loads(holds, set(holds.__code__.co_varnames[:holds.__code__.co_argcount])):
        return False
    try:
        holds(SETTINGS, {})
    except (KeyError, IndexError, TypeError, StopIteration):
        return True  # it needed a measured key
    return False


def test_no_claim_is_a_constant():
    assert [phrase for _, phrase, holds in CLAIMS if not reads_the_run(holds)] == []
    assert not reads_the_run(lambda *_: True) and not reads_the_run(lambda r, m: 0.75 == 0.75)
    assert not reads_the_run(lambda r, m: r["canary"]["set_aside_limit"] == 0.75)
    assert not reads_the_run(lambda r, m: perf.CALL_MIN_TIME < r["config"]["min_time_s"])
    assert reads_the_run(lambda r, m: r["canary"]["left_out"] == [])
    assert reads_the_run(lambda r, m: max(r, m) != {})  # both loaded at once from Python 3.13


def test_all_six_files_of_the_lab_are_committed_from_a_real_run():
    """The lab's first stop condition: its six files committed (git tracks them, a checkout is
    needed to tell), the pictures real PNGs; the run a full one of the lab's T."""
    six = ("perf.py", "results.json", "perf.png", "roofline.png", "manifest.json", "README.md")
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout, or no git: what is committed cannot be told")
    tracked = subprocess.run(["git", "ls-files", "--", *six], cwd=EXP, capture_output=True,
                             text=True, check=True).stdout.split()
    assert sorted(tracked) == sorted(six)
    for name in ("perf.png", "roofline.png"):
        assert (EXP / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    assert RESULTS["config"]["quick"] is False and RESULTS["config"]["T_sweep"] == [64, 128, 256, 512]


def test_the_committed_run_is_of_the_committed_perf_py_s_code():
    """The manifest's perf_py_code_digest is the committed perf.py's: its code, not its comments
    or docstrings (a comment edit costs no re-measure; an edit to code that makes a committed
    number does: what is left out is the next test's)."""
    source = (EXP / "perf.py").read_text(encoding="utf-8")
    assert MANIFEST["perf_py_code_digest"] == perf.code_digest(source)
    # What the digest sees and does not: a comment, a docstring, a wrapped line; a changed value.
    assert perf.code_digest(source.replace("# ---", "# - -", 1)) == perf.code_digest(source)
    wrapped = source.replace("    d_k = Q.shape[1] // h\n", "    d_k = (Q.shape[1]\n           // h)\n", 1)
    assert wrapped != source and perf.code_digest(wrapped) == perf.code_digest(source)
    assert perf.code_digest(source.replace('"""Causal multi-head attention', '"""Causal MHA', 1)) \
        == perf.code_digest(source)
    assert perf.code_digest(source.replace("PROCESS_QUANTILE = 0.25", "PROCESS_QUANTILE = 0.26")) \
        != perf.code_digest(source)
    # A definition moved (run_for to the file's end) keeps it: the order of top-level statements is
    # left out, which says nothing lost only while no name is bound by two of them.
    a = source.index("def run_for(")
    b = source.index("\n\n\n", a) + 3
    assert perf.code_digest(source[:a] + source[b:] + "\n\n" + source[a:b]) == perf.code_digest(source)
    assert bound_twice(source) == set()
    assert bound_twice(source + "\nT_SWEEP = (64,)\n") == {"T_SWEEP"}  # it can fail


def test_the_pictures_compare_s_and_the_report_s_code_are_out_of_the_digest_and_the_pngs_carry_theirs():
    """No committed number comes from DRAWN's or SAID's code, so an edit there calls for no new run;
    each committed PNG carries the digest of the code that drew it (--replot redraws them)."""
    import copy
    from PIL import Image
    source = (EXP / "perf.py").read_text(encoding="utf-8")
    code, drawing = perf.code_digest(source), perf.code_digest(source, perf.DRAWN)
    for name in ("perf.png", "roofline.png"):
        assert Image.open(EXP / name).text["perf_py_drawing_digest"] == drawing, name
    # A title's size, a --compare limit: the code digest holds; the drawing digest moves with the
    # pictures' code alone; a statistic's quantile moves the code digest, not the drawing's.
    title = source.replace('"Time per forward (bars); with the default heap (hatched)", fontsize=11)',
                           '"Time per forward (bars); with the default heap (hatched)", fontsize=12)')
    limit = source.replace("NOISE_FLOOR = 1.05", "NOISE_FLOOR = 1.06")
    quantile = source.replace("PROCESS_QUANTILE = 0.25", "PROCESS_QUANTILE = 0.26")
    assert title != source != limit and quantile != source
    assert perf.code_digest(title) == code and perf.code_digest(title, perf.DRAWN) != drawing
    assert perf.code_digest(limit) == code and perf.code_digest(limit, perf.DRAWN) == drawing
    assert perf.code_digest(quantile) != code and perf.code_digest(quantile, perf.DRAWN) == drawing
    # What is left out is what the names say: definitions perf.py has, which only run_lab and main
    # call (handing them results), and the pictures leave those results as they were.
    out = perf.DRAWN | perf.SAID
    tree = ast.parse(source)
    assert out <= set().union(*map(binds, tree.body))
    callers = {n.name: {x.id for x in ast.walk(n) if isinstance(x, ast.Name)} & out
               for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in out}
    assert {k: v for k, v in callers.items() if v} == {
        "run_lab": {"plot_perf", "plot_roofline", "png_bytes"},
        "main": {"plot_perf", "plot_roofline", "png_bytes", "compare", "load_results", "report"}}
    before = copy.deepcopy(RESULTS)
    perf.plot_perf(RESULTS), perf.plot_roofline(RESULTS)
    assert RESULTS == before


def bound_twice(source):
    """Names that two top-level statements bind (a definition, an assignment, an import)."""
    seen, twice = set(), set()
    for stmt in ast.parse(source).body:
        names = binds(stmt)
        twice |= names & seen
        seen |= names
    return twice


def binds(stmt):
    """The module-level names one statement binds: not a function's locals, nor a comprehension's."""
    if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = getattr(stmt, "targets", None) or [stmt.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    inner = [getattr(stmt, f, []) for f in ("body", "orelse", "finalbody")]  # a try's, an if's
    inner += [h.body for h in getattr(stmt, "handlers", [])]
    return set().union(*(binds(s) for block in inner for s in block))


def test_results_summary_from_the_lab_s_formulas():
    """The manifest's four figures from time_s at T = 512 and the lab's FLOP counts, written out
    here (h = 4, d_k = 16): softmax 5 h T^2 FLOPs, scores 2 h T^2 d_k; phase 27's figure from the
    ops memory-bound against their own level (the rule the manifest documents)."""
    ops = next(r for r in RESULTS["sweep"] if r["T"] == 512)["ops"]
    t = {op: ops[op]["time_s"] for op in perf.OPS}
    s = MANIFEST["results_summary"]
    assert s["softmax_GFLOPS_at_T_512"] == pytest.approx(5 * 4 * 512**2 / t["softmax"] / 1e9)
    assert s["scores_GFLOPS_at_T_512"] == pytest.approx(2 * 4 * 512**2 * 16 / t["scores"] / 1e9)
    assert s["softmax_pct_of_total_at_T_512"] == pytest.approx(100 * t["softmax"] / sum(t.values()))
    memory = [op for op in t if ops[op]["level_bound"] == "memory"]
    assert s["phase_27_motivation_pct_memory"] == pytest.approx(
        100 * sum(t[op] for op in memory) / sum(t.values()))


ATTENTION = ("Block E", "The pictures", "The lab's expected observations", "Findings")


def test_word_budgets_and_the_answers_come_first():
    """The lab README: at most 1,300 words, Block E first, and at least two thirds of its words
    on attention (the sections ATTENTION names, the title's paragraph aside); the method is the
    rest."""
    words = lambda name: len(doc_text(name).split())  # noqa: E731
    assert words("experiments/15-attention-perf/README.md") <= 1300
    assert words("README.md") <= 1000
    text = doc_text("experiments/15-attention-perf/README.md")
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    assert sections[0].startswith("Block E")
    on = sum(len(s.split()) for s in sections if s.startswith(ATTENTION))
    assert on >= 2 / 3 * sum(len(s.split()) for s in sections), on


@pytest.mark.parametrize("name", BINDINGS)
def test_links_and_images_resolve(name):
    for target in re.findall(r"\]\(([^)\s]+)\)", doc_text(name)):
        if not (re.match(r"[a-z]+:", target) or target.startswith("#")):
            assert ((ROOT / name).parent / target.split("#")[0]).exists(), f"{name}: {target}"
