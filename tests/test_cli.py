"""perf.py as a learner runs it: the outputs of a --quick run, bad input, interruption."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

import perf
from conftest import PERF, run_perf

OPS = ["qkv_proj", "scores", "softmax", "av", "out_proj"]


def test_quick_run_results(quick_run):
    out, res, _ = quick_run
    assert res["config"]["quick"] is True and res["config"]["T_sweep"] == [64, 128, 256, 512]
    assert res["ceilings"]["source"] in ("measured", "phase1")
    assert res["ceilings"]["beta_peak_GBps"] > 0 and res["ceilings"]["pi_peak_GFLOPS"] > 0
    for rows in (res["sweep"], res["sweep_default_heap"]):
        assert [r["T"] for r in rows] == [64, 128, 256, 512]
        for r in rows:
            assert r["n_inner"] >= 1 and r["repeats"] >= 3
            for op in OPS:
                o = r["ops"][op]
                assert o["p25_s"] <= o["median_s"] <= o["p75_s"] and o["min_s"] <= o["median_s"]
                assert o["time_s"] == o["p25_s"]  # the headline: see summarize()
                assert o["environment_tax"] == pytest.approx(o["median_s"] / o["time_s"] - 1)
                assert (o["flops"], o["bytes"]) == perf.op_cost(r["T"], 64, 4)[op]
                assert o["gflops"] == pytest.approx(o["flops"] / o["time_s"] / 1e9)
                assert o["bound"] in ("memory", "compute", "ridge")
                assert o["level"] in set(res["ceilings"]["levels"])
                assert o["working_set_bytes"] == perf.working_set(r["T"], 64, 4)[op]
                assert o["pct_of_level_ceiling"] == pytest.approx(100 * o["gflops"] / min(
                    res["ceilings"]["pi_peak_GFLOPS"],
                    res["ceilings"]["levels"][o["level"]]["GBps"] * o["intensity"]))
            assert r["ops"]["softmax"]["bound"] == "memory"
            assert sum(r["ops"][op]["time_share"] for op in OPS) == pytest.approx(1)
            assert {"mean_s", "median_s", "time_s"} <= set(r["ops"]["total"])
            for k in ("page_faults_per_forward", "accounting_gap"):
                assert isinstance(r[k], float)
    for r in res["sweep"]:  # samples from every worker process, the spread between them judged
        assert r["workers"] == res["config"]["workers"] == 2 and r["repeats"] == 6
        for k in OPS + ["total"]:
            o = r["ops"][k]
            assert len(o["worker_medians"]) == 2
            assert o["worker_spread"] == pytest.approx(max(o["worker_medians"]) / min(o["worker_medians"]))
            assert o["unstable"] == (o["worker_spread"] > perf.SPREAD_LIMIT)
        lo, hi = r["instrumentation_overhead_ci95"]
        assert lo <= r["instrumentation_overhead"] <= hi and r["untimed_repeats"] == 6
    assert res["conditions"]["verdict"] in ("quiet", "disturbed")
    assert set(res["conditions"]["checks"]) == {"other_processes_cpus", "steal_fraction",
                                                "cpufreq_unchanged"}
    t = res["threads"]
    assert t["blas_threads"] >= 1 and t["includes_hyperthreads"] == (t["blas_threads"] > t["physical_cores"])
    a = res["analysis"]
    assert len(a["expected_observations"]) == 3
    assert all(isinstance(o["held"], bool) for o in a["expected_observations"])
    assert set(a["softmax_anatomy"]["steps"]) == {"mask_add", "max", "subtract", "exp", "sum",
                                                  "divide"}
    assert a["softmax_at_T_512"]["ratio_to_memory_ceiling"] > 0
    c = res["ceilings"]
    assert c["repeats"] == 2 and "DRAM" in c["levels"]
    assert c["beta_peak_range"][0] <= c["beta_peak_GBps"] <= c["beta_peak_range"][1]
    assert c["ridge_range"][0] <= a["ridge_intensity"] <= c["ridge_range"][1]
    assert res["memory_peak_MiB"]["largest_worker"] > 0
    assert not any(p.name.endswith(".tmp") for p in out.iterdir())


def test_quick_run_manifest(quick_run):
    _, res, man = quick_run
    template = ["experiment", "date", "seed", "versions", "depends_on", "config", "hardware",
                "results_summary"]
    assert all(k in man for k in template)
    assert man["experiment"] == "15-attention-perf" and man["seed"] == 0
    assert {"python", "numpy"} <= set(man["versions"])
    assert man["config"]["d_model"] == 64 and man["config"]["n_heads"] == 4
    assert man["config"]["T_sweep"] == [64, 128, 256, 512]
    assert {"cpu_model", "cpu_governor_at_run"} <= set(man["hardware"])
    gov = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
    assert man["hardware"]["cpu_governor_at_run"] == (
        open(gov).read().strip() if os.path.exists(gov) else "unavailable")
    assert man["perf_py_sha256"] == hashlib.sha256(PERF.read_bytes()).hexdigest()
    s = man["results_summary"]
    assert set(s) == {"softmax_GFLOPS_at_T_512", "softmax_pct_of_total_at_T_512",
                      "scores_GFLOPS_at_T_512", "phase_27_motivation_pct_memory"}
    assert all(isinstance(v, float) for v in s.values())
    assert 0 <= s["phase_27_motivation_pct_memory"] <= 100
    assert man["depends_on"] is None or man["depends_on"].endswith("manifest.json")


def _bad_inputs(tmp_path):
    not_dir = tmp_path / "file"
    not_dir.write_text("x")
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{nope")
    no_keys = tmp_path / "nokeys.json"
    no_keys.write_text('{"beta_peak_GBps": 10}')
    return [["--T", "0"], ["--T", "-64"], ["--T", "64.5"], ["--T"], ["--d-model", "x"],
            ["--n-heads", "5"], ["--n-heads", "0"], ["--min-time", "0"], ["--min-time", "nan"],
            ["--min-time", "inf"], ["--min-time", "-1"], ["--repeats", "0"], ["--threads", "0"],
            ["--seed", "-1"], ["--workers", "0"], ["--bogus"], ["--roofline", str(tmp_path / "missing.json")],
            ["--roofline", str(bad_json)], ["--roofline", str(no_keys)],
            ["--out", str(not_dir / "sub")], ["--out", "/proc/perf-out"]]


def test_bad_input_one_line_exit_2_nothing_touched(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("earlier")
    for argv in _bad_inputs(tmp_path):
        code = perf.main(argv + (["--out", str(out)] if "--out" not in argv else []))
        err = capsys.readouterr().err
        assert code == 2, argv
        assert len(err.strip().splitlines()) == 1 and err.startswith("perf.py: error:"), (argv, err)
    assert sorted(p.name for p in out.iterdir()) == ["results.json"]
    assert (out / "results.json").read_text() == "earlier"


def test_a_T_beyond_the_memory_is_refused_before_measuring(tmp_path, capsys):
    (tmp_path / "results.json").write_text("earlier")
    assert perf.main(["--T", "64", "100000", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("perf.py: error: --T 100000 needs about ") and err.endswith("available")
    assert len(err.splitlines()) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    # The estimate: four (h, T, T) fp32 arrays of the largest T, the masks, the copy, 300 MiB.
    assert perf.run_memory_bytes([2048], 4, 256 << 20) == 16 * 4 * 2048**2 + 4 * 2048**2 + (556 << 20)


def test_bad_input_from_the_shell_has_no_traceback(tmp_path):
    proc = run_perf("--n-heads", "3", "--out", str(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "perf.py: error: --n-heads 3 does not divide --d-model 64"
    assert list(tmp_path.iterdir()) == []


def test_write_is_atomic_under_injected_failure(tmp_path, monkeypatch):
    (tmp_path / "results.json").write_bytes(b"old results")
    (tmp_path / "manifest.json").write_bytes(b"old manifest")
    real_fsync, calls = os.fsync, []

    def failing_fsync(fd):  # the second file's write fails, before anything is renamed
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        perf.write_atomically(tmp_path, {"results.json": b"new", "manifest.json": b"new"})
    assert (tmp_path / "results.json").read_bytes() == b"old results"
    assert (tmp_path / "manifest.json").read_bytes() == b"old manifest"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json", "results.json"]
    monkeypatch.setattr(os, "fsync", real_fsync)
    perf.write_atomically(tmp_path, {"results.json": b"new", "manifest.json": b"new2"})
    assert (tmp_path / "manifest.json").read_bytes() == b"new2"


def test_ctrl_c_mid_run_exit_130_files_untouched(tmp_path):
    before = {"results.json": b"earlier results\n", "manifest.json": b"earlier manifest\n"}
    for name, data in before.items():
        (tmp_path / name).write_bytes(data)
    proc = subprocess.Popen([sys.executable, str(PERF), "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:  # interrupt once a worker process is measuring
        if "worker 1/5 started" in line:
            break
    time.sleep(0.5)
    workers = psutil.Process(proc.pid).children(recursive=True)
    assert workers, "a worker process should be running"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    _, alive = psutil.wait_procs(workers, timeout=5)
    assert not alive, "no worker may outlive its run"


def test_a_worker_that_dies_is_one_line_exit_1_nothing_written(tmp_path):
    (tmp_path / "results.json").write_bytes(b"earlier")
    proc = subprocess.Popen([sys.executable, str(PERF), "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if "worker 1/5 started" in line:
            break
    time.sleep(0.5)
    for child in psutil.Process(proc.pid).children(recursive=True):
        child.kill()  # as the OOM killer would
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "Traceback" not in err
    assert err.strip().startswith("perf.py: error: worker 1/5 failed (exit -9)")
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]
    assert (tmp_path / "results.json").read_bytes() == b"earlier"


def test_import_has_no_side_effects(tmp_path):
    code = "import sys; sys.path.insert(0, sys.argv[1]); import perf; print('ok')"
    proc = subprocess.run([sys.executable, "-c", code, str(PERF.parent)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout == "ok\n" and proc.stderr == ""
    assert list(tmp_path.iterdir()) == []
