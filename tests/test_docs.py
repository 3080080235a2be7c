"""The committed write-up stays true: artefacts from the committed perf.py, every quoted figure
equal to the committed JSON at its printed precision, every link and image resolving."""
import hashlib
import json
import re
from pathlib import Path

import pytest

import perf

ROOT = Path(__file__).resolve().parent.parent
EXP = ROOT / "experiments" / "15-attention-perf"
DOCS = [ROOT / "README.md", ROOT / "PHASE_15_REPORT.md", EXP / "README.md",
        ROOT / "solutions" / "03-attention-perf-ref.md",
        ROOT / "learners" / "borja" / "phase-15" / "reflections.md"]
KEY_HEADER = "| figure | value | file | key | scale |"
PER_T_HEADER = ("| T | op | time_s (ms) | share of forward (%) | GFLOPS | intensity (FLOP/B) | bound "
                "| level | % of level roof |")


def load(name):
    return json.loads((EXP / name).read_text())


def lookup(doc, path):
    """`sweep[T=512].ops.softmax.median_s`, `analysis.expected_observations[0].held`."""
    for part in path.split("."):
        m = re.fullmatch(r"(\w+)\[(?:T=(\d+)|(\d+))\]", part)
        if m and m.group(2):
            doc = next(row for row in doc[m.group(1)] if row["T"] == int(m.group(2)))
        elif m:
            doc = doc[m.group(1)][int(m.group(3))]
        else:
            doc = doc[part]
    return doc


def table(text, header):
    lines = text.splitlines()
    if header not in lines:
        return []
    rows = []
    for line in lines[lines.index(header) + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def fmt_like(value, printed, scale=1.0):
    if value is None:
        return "none"
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return f"{value * scale:.{decimals}f}"


def test_all_six_files_of_the_lab_are_there():
    for name in ("perf.py", "results.json", "perf.png", "roofline.png", "manifest.json",
                 "README.md"):
        assert (EXP / name).is_file(), name
    assert load("results.json")["config"]["quick"] is False  # the committed run is a real one


def test_manifest_carries_the_sha256_of_the_committed_perf_py():
    assert load("manifest.json")["perf_py_sha256"] == \
        hashlib.sha256((EXP / "perf.py").read_bytes()).hexdigest()


def test_results_summary_recomputed_from_results_json():
    res, man = load("results.json"), load("manifest.json")
    ops = next(r for r in res["sweep"] if r["T"] == 512)["ops"]
    forward = sum(ops[op]["time_s"] for op in perf.OPS)  # the stacked bar: five ops' time_s
    s = man["results_summary"]
    assert s["softmax_GFLOPS_at_T_512"] == pytest.approx(5 * 4 * 512**2 / ops["softmax"]["time_s"] / 1e9)
    assert s["scores_GFLOPS_at_T_512"] == pytest.approx(2 * 4 * 512**2 * 16 / ops["scores"]["time_s"] / 1e9)
    assert s["softmax_pct_of_total_at_T_512"] == pytest.approx(100 * ops["softmax"]["time_s"] / forward)
    ridge = res["ceilings"]["pi_peak_GFLOPS"] / res["ceilings"]["beta_peak_GBps"]
    cost = perf.op_cost(512, 64, 4)
    memory = [op for op, (f, b) in cost.items() if f / b < ridge]
    assert s["phase_27_motivation_pct_memory"] == pytest.approx(
        100 * sum(ops[op]["time_s"] for op in memory) / forward)


def test_per_T_table_matches_results_json():
    rows = table((EXP / "README.md").read_text(), PER_T_HEADER)
    res = load("results.json")
    assert len(rows) == 20
    for T, op, ms, share, gflops, intensity, bound, level, pct in rows:
        o = lookup(res, f"sweep[T={T}].ops.{op}")
        assert ms == fmt_like(o["time_s"], ms, 1e3), (T, op)
        assert share == fmt_like(o["time_share"], share, 100), (T, op)
        assert gflops == fmt_like(o["gflops"], gflops), (T, op)
        assert intensity == fmt_like(o["intensity"], intensity), (T, op)
        assert (bound, level) == (o["bound"], o["level"]), (T, op)
        assert pct == fmt_like(o["pct_of_level_ceiling"], pct), (T, op)


def quoted_numbers(text):
    """Decimal numbers in prose: outside code blocks, inline code and the two checked tables."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    keep = []
    for line in text.splitlines():
        if line.startswith("    ") or line.startswith(KEY_HEADER[:10]) or \
                (line.startswith("|") and line.count("|") in (6, 8) and "`" in line):
            continue
        keep.append(re.sub(r"`[^`]*`", "", line))
    return re.findall(r"\d+\.\d+", "\n".join(keep))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_quoted_figure_matches_the_json(doc):
    text = doc.read_text()
    docs = {"results.json": load("results.json"), "manifest.json": load("manifest.json")}
    checked = set()
    for label, value, file, key, scale in table(text, KEY_HEADER):
        got = lookup(docs[file], key.strip("`"))
        assert value == fmt_like(got, value, float(scale)), (doc.name, label)
        checked.add(value.lstrip("-"))
    checked |= {c for row in table(text, PER_T_HEADER) for c in row}
    for number in quoted_numbers(text):
        assert number in checked, f"{doc.name}: {number} is quoted but not in its key figures"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_and_images_resolve(doc):
    for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        assert (doc.parent / target.split("#")[0]).exists(), f"{doc.name}: {target}"
