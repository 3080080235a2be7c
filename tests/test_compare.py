"""perf.py --compare A B: ratios per op per T, verdicts against both runs' own noise, the story
side by side, and bad input refused before anything is written."""
import copy
import json

import pytest

import perf
from conftest import EXP

OPS = ["qkv_proj", "scores", "softmax", "av", "out_proj"]


def save(tmp_path, name, res):
    d = tmp_path / name
    d.mkdir()
    (d / "results.json").write_text(json.dumps(res))
    return d


def scaled(res, op, factor):
    """A copy of a run in which one op took `factor` times as long, every record of it scaled."""
    res = copy.deepcopy(res)
    for r in res["sweep"]:
        o = r["ops"][op]
        for k in ("time_s", "median_s", "p25_s", "p75_s", "mean_s", "min_s"):
            o[k] *= factor
        for k in ("worker_medians", "worker_times"):
            o[k] = [v * factor for v in o[k]]
        o["gflops"] /= factor
        total = sum(r["ops"][p]["time_s"] for p in OPS)
        for p in OPS:
            r["ops"][p]["time_share"] = r["ops"][p]["time_s"] / total
    return res


def steady(res):
    """A copy of a run whose workers agreed within 2 %: a quick run's two workers of three samples
    can disagree by anything, and the verdict logic, not the machine, is under test here."""
    res = copy.deepcopy(res)
    for r in res["sweep"]:
        for o in r["ops"].values():
            o["worker_times"] = [o["time_s"], 1.02 * o["time_s"]]
            o["worker_time_spread"] = 1.02
    return res


def compare(tmp_path, capsys, a, b):
    code = perf.main(["--compare", str(a), str(b), "--out", str(tmp_path / "cmp")])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads((tmp_path / "cmp" / "compare.json").read_text()), out.out


@pytest.fixture(scope="module")
def quick_res(quick_run):
    return quick_run[1]


def test_a_run_against_itself_is_the_same_everywhere(tmp_path, capsys, quick_res):
    d = save(tmp_path, "a", quick_res)
    c, out = compare(tmp_path, capsys, d, d / "results.json")
    assert len(c["rows"]) == 4 * 5 and c["left_out_T"] == {"a_only": [], "b_only": []}
    assert all(r["ratio"] == 1 and r["share_pp"] == 0 and r["verdict"] == "same" for r in c["rows"])
    assert not any(s["differs"] for s in c["story"])
    assert (tmp_path / "cmp" / "compare.png").read_bytes()[:4] == b"\x89PNG"
    assert "T op" in out.replace("  ", " ") and "same" in out


def test_softmax_twice_as_slow_is_slower_on_softmax_only(tmp_path, capsys, quick_res):
    base = steady(quick_res)
    a, b = save(tmp_path, "a", base), save(tmp_path, "b", scaled(base, "softmax", 2.0))
    c, _ = compare(tmp_path, capsys, a, b)
    for r in c["rows"]:
        assert r["ratio"] == pytest.approx(2.0 if r["op"] == "softmax" else 1.0)
        assert r["verdict"] == ("slower" if r["op"] == "softmax" else "same"), r
        assert (r["share_pp"] > 0) == (r["op"] == "softmax")
    # Default output folder: B's.
    assert perf.main(["--compare", str(a), str(b)]) == 0
    assert (b / "compare.json").exists() and (b / "compare.png").exists()


def test_a_new_dominant_op_is_a_marked_story_difference(tmp_path, capsys, quick_res):
    fast = scaled(quick_res, "softmax", 0.05)  # softmax no longer dominates anywhere
    c, out = compare(tmp_path, capsys, save(tmp_path, "a", quick_res), save(tmp_path, "b", fast))
    dom = [s for s in c["story"] if s["fact"].startswith("dominant op")]
    assert len(dom) == 4 and all(s["differs"] and s["why"] for s in dom)
    assert all(s["a"].startswith("softmax") and not s["b"].startswith("softmax") for s in dom)
    assert "* dominant op at T=512" in out


def test_fewer_common_T_and_an_old_file_without_spreads(tmp_path, capsys, quick_res):
    old = copy.deepcopy(quick_res)
    old["sweep"] = [r for r in old["sweep"] if r["T"] in (64, 512)]
    for r in old["sweep"]:  # as written before time_s and worker spreads existed
        for o in r["ops"].values():
            for k in ("time_s", "worker_medians", "worker_spread", "worker_times",
                      "worker_time_spread"):
                o.pop(k, None)
    c, out = compare(tmp_path, capsys, save(tmp_path, "old", old), save(tmp_path, "new", quick_res))
    assert c["T"] == [64, 512] and c["left_out_T"] == {"a_only": [], "b_only": [128, 256]}
    assert all(r["verdict"] is None for r in c["rows"])
    assert "no verdicts of noise" in out and "left out" in out


def test_committed_run_against_a_quick_run(tmp_path, capsys, quick_run):
    c, _ = compare(tmp_path, capsys, EXP, quick_run[0])
    assert c["T"] == [64, 128, 256, 512] and len(c["rows"]) == 20


def test_bad_input_one_line_exit_2_nothing_written(tmp_path, capsys, quick_res):
    good = save(tmp_path, "good", quick_res)
    other = copy.deepcopy(quick_res)
    other["config"]["n_heads"] = 8
    no_common = copy.deepcopy(quick_res)
    for r in no_common["sweep"]:
        r["T"] *= 3
    (tmp_path / "corrupt.json").write_text("{nope")
    (tmp_path / "foreign.json").write_text('{"experiment": "01-roofline", "sweep": []}')
    cases = [tmp_path / "missing.json", tmp_path / "corrupt.json", tmp_path / "foreign.json",
             save(tmp_path, "heads", other), save(tmp_path, "noT", no_common),
             EXP / "manifest.json"]
    out = tmp_path / "out"
    for bad in cases:
        for a, b in ((good, bad), (bad, good)):
            code = perf.main(["--compare", str(a), str(b), "--out", str(out)])
            err = capsys.readouterr().err
            assert code == 2, bad
            assert len(err.strip().splitlines()) == 1 and err.startswith("perf.py: error:"), err
    assert not out.exists()
