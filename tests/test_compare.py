"""perf.py --compare A B: whether the machines were in the same state, and per op and T whether B
is faster, slower or the same against both runs' own noise; worked out by hand on synthetic runs,
then through the command line."""
import json
from pathlib import Path

import pytest

import perf
import synthetic
from conftest import EXP


def save(tmp_path, name, res):
    d = tmp_path / name
    d.mkdir()
    (d / "results.json").write_text(json.dumps(res))
    return d


def rows_by(rows):
    return {(r["T"], r["op"]): r for r in rows}


def scaled(factor, op="softmax", T=512):
    times = {t: dict(ops) for t, ops in synthetic.TIMES_MS.items()}
    times[T][op] *= factor
    return times


def test_five_workers_noise_band_by_hand():
    # A's five workers: one caught in a slow spell (x2). The second highest over the second
    # lowest ignores it: 1.06 / 1.02 = 1.039; B's 1.16 / 1.12 = 1.036; the band is the floor 1.05.
    a = synthetic.run(process_multiples=(1.00, 1.02, 1.04, 1.06, 2.00))
    b_slow = synthetic.run(times_ms=scaled(1.2), process_multiples=(1.10, 1.12, 1.14, 1.16, 1.18))
    r = rows_by(perf.compare_rows(a, b_slow, [64, 512]))
    assert r[512, "softmax"]["noise_band"] == pytest.approx(1.05)
    assert r[512, "softmax"]["ratio"] == pytest.approx(1.2) and r[512, "softmax"]["change"] == "slower"
    assert r[512, "scores"]["change"] == "same" and r[64, "softmax"]["change"] == "same"
    faster = rows_by(perf.compare_rows(a, synthetic.run(times_ms=scaled(0.9)), [512]))
    assert faster[512, "softmax"]["change"] == "faster"  # 0.9 < 1 / 1.05
    within = rows_by(perf.compare_rows(a, synthetic.run(times_ms=scaled(1.04)), [512]))
    assert within[512, "softmax"]["change"] == "same"


def test_a_wide_noise_band_from_two_workers():
    # Two workers 1.5x apart (a quick run): max / min = 1.5 is the band; 1.3x is within it.
    a = synthetic.run(process_multiples=(1.0, 1.5))
    r = rows_by(perf.compare_rows(a, synthetic.run(times_ms=scaled(1.3)), [512]))
    assert r[512, "softmax"]["noise_band"] == pytest.approx(1.5)
    assert r[512, "softmax"]["change"] == "same"
    r = rows_by(perf.compare_rows(a, synthetic.run(times_ms=scaled(1.6)), [512]))
    assert r[512, "softmax"]["change"] == "slower"


def test_share_change_in_percentage_points():
    r = rows_by(perf.compare_rows(synthetic.run(), synthetic.run(times_ms=scaled(2.0)), [512]))
    # The softmax over the forward at T = 512, before and after its time doubled: 3.00 / 4.53 and
    # 6.00 / 7.53 for synthetic's five ops.
    sm, forward = synthetic.TIMES_MS[512]["softmax"], sum(synthetic.TIMES_MS[512].values())
    a, b = sm / forward, 2 * sm / (forward + sm)
    assert r[512, "softmax"]["share_pp"] == pytest.approx(100 * (b - a))


def signals(a, b):
    return perf.state_signals(a, b, perf.compare_facts(a, b, 512))


def test_a_disturbed_run_against_a_quiet_one_names_the_signal():
    reason = "the later canary readings ran slower (speed -26%)"
    quiet = synthetic.run(cooperation=0.75)
    bad = synthetic.run(cooperation=1.32, verdict="disturbed", reasons=[reason])
    assert signals(quiet, bad) == ["threads over one thread (av): 0.75 in A, 1.32 in B",
                                   f"B was disturbed: {reason}"]
    # The DRAM copy 1.3x faster in B: another state of the machine, not the code.
    assert signals(quiet, synthetic.run(beta=26.0)) == [
        "DRAM copy, one thread (GB/s): 14.00 in A, 18.20 in B", "beta (GB/s): 20.00 in A, "
        "26.00 in B"]
    # pi's matmul times no code of the lab's: 1.2x faster in B is the machine's state, 1.05x noise.
    assert signals(quiet, synthetic.run(pi=180.0)) == ["pi (GFLOPS): 150.00 in A, 180.00 in B"]
    assert signals(quiet, synthetic.run(pi=157.5)) == []
    # One brand name, two CPUs: the family and model, and the SIMD targets numpy can run, differ.
    other = synthetic.run(dispatch=("X86_V3", "X86_V4"))
    other["hardware"]["model"] = 17
    assert signals(quiet, other) == [
        "cpu: CPU A (GenuineIntel, family 6, model 143) in A, CPU A (GenuineIntel, family 6, "
        "model 17) in B", "numpy's SIMD targets: X86_V3 in A, X86_V3 X86_V4 in B"]
    assert signals(quiet, quiet) == []


def test_through_the_command_line(tmp_path, capsys):
    a = save(tmp_path, "a", synthetic.run())
    b = save(tmp_path, "b", synthetic.run(cooperation=1.32, verdict="disturbed",
                                          reasons=["the clock fell"], times_ms=scaled(2.0)))
    assert perf.main(["--compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "machine facts or run conditions differed" in out and "B was disturbed" in out
    c = json.loads((b / "compare.json").read_text())  # default folder: B's
    assert c["same_state"] is False and c["T"] == [64, 512]
    assert [(r["T"], r["op"]) for r in c["rows"]] == [(T, op) for T in (64, 512) for op in perf.OPS]
    story = {s["fact"]: s for s in c["story"]}
    assert story["run conditions"]["differs"] and story["run conditions"]["b"] == "disturbed"
    assert story["threads over one thread (av)"]["differs"]


@pytest.mark.parametrize("verdict", ["quiet", "disturbed"])
def test_a_run_against_itself_is_the_same_everywhere(tmp_path, capsys, verdict):
    # Every row and fact the same; no machine fact differing only if the run was quiet (a
    # disturbed run is a state signal on either side).
    d = save(tmp_path, "a", synthetic.run(verdict=verdict, reasons=["others used the CPUs"]))
    assert perf.main(["--compare", str(d), str(d / "results.json"), "--out", str(tmp_path)]) == 0
    c = json.loads((tmp_path / "compare.json").read_text())
    assert c["same_state"] is (verdict == "quiet")
    sweep = json.loads((d / "results.json").read_text())["sweep"]  # each row, the run's own time_s
    assert {(r["T"], r["op"]): (r["a_s"], r["b_s"]) for r in c["rows"]} == {
        (row["T"], op): (row["ops"][op]["time_s"],) * 2 for row in sweep for op in perf.OPS}
    assert all(r["ratio"] == 1 and r["share_pp"] == 0 and r["change"] == "same" for r in c["rows"])
    assert not any(s["differs"] for s in c["story"])
    assert ("no machine fact compared" in capsys.readouterr().out) is (verdict == "quiet")


@pytest.mark.xdist_group("quick_run")  # one worker: the --quick run made once
def test_the_committed_run_against_a_quick_run(tmp_path, quick_run):
    assert perf.main(["--compare", str(EXP), str(quick_run[0]), "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "compare.json").read_text())["rows"]
    assert len(rows) == len(perf.T_SWEEP) * len(perf.OPS)  # each T of both runs, each op
    # Each row sets the two runs' own time_s side by side, B over A.
    a, b = (json.loads(Path(d, "results.json").read_text()) for d in (EXP, quick_run[0]))
    for r in rows:
        ta, tb = (perf.entry_at(x["sweep"], r["T"])["ops"][r["op"]]["time_s"] for x in (a, b))
        assert (r["a_s"], r["b_s"]) == (ta, tb) and r["ratio"] == pytest.approx(tb / ta)


def test_fewer_common_T(tmp_path, capsys):
    two = synthetic.run(times_ms={512: synthetic.TIMES_MS[512]})
    assert perf.main(["--compare", str(save(tmp_path, "a", synthetic.run())),
                      str(save(tmp_path, "b", two)), "--out", str(tmp_path)]) == 0
    c = json.loads((tmp_path / "compare.json").read_text())
    assert c["T"] == [512] and c["T_not_shared"] == {"a_only": [64], "b_only": []}
    assert "not compared: T=[64] only in A" in capsys.readouterr().out


def test_bad_input_one_line_exit_2_nothing_written(tmp_path, capsys):
    good = save(tmp_path, "good", synthetic.run())
    heads = synthetic.run()
    heads["config"]["n_heads"] = 8
    no_common = synthetic.run(times_ms={256: synthetic.TIMES_MS[512]})
    (tmp_path / "corrupt.json").write_text("{nope")
    (tmp_path / "foreign.json").write_text('{"experiment": "01-roofline", "sweep": []}')
    partial = synthetic.run()
    del partial["sweep"][0]["ops"]["av"]["process_estimates"]
    cases = [tmp_path / "missing.json", tmp_path / "corrupt.json", tmp_path / "foreign.json",
             save(tmp_path, "heads", heads), save(tmp_path, "noT", no_common),
             save(tmp_path, "partial", partial), EXP / "manifest.json"]
    out = tmp_path / "out"
    for bad in cases:
        for a, b in ((good, bad), (bad, good)):
            assert perf.main(["--compare", str(a), str(b), "--out", str(out)]) == 2, bad
            err = capsys.readouterr().err
            assert len(err.strip().splitlines()) == 1 and err.startswith("perf.py: error:"), err
    assert not out.exists()
