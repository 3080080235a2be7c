"""perf.py as a learner runs it: its files, bad input, the threads, interruption, and the ways a
worker or a write fails that are tested here, each ending in one line, the right exit status,
earlier files intact."""
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest
import threadpoolctl

import perf
import synthetic
from conftest import PERF, TINY, run_perf

OPS = list(perf.OPS)
LONG = ["--min-time", "0.02", "--samples", "10"]  # long enough to be interrupted mid-worker


@pytest.mark.xdist_group("quick_run")  # one worker: the --quick run made once
def test_quick_run_writes_the_lab_files_with_the_lab_keys(quick_run):
    out, res, man, _ = quick_run
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "perf.png", "results.json",
                                                     "roofline.png"]
    assert [r["T"] for r in res["sweep"]] == [64, 128, 256, 512] == man["config"]["T_sweep"]
    n = 2 - len(res["canary"]["left_out"])  # a process the canary saw slow nearly throughout: left out
    for r in res["sweep"]:  # Block B: mean, std per op, from the kept samples of those not left out
        assert r["sample_count"] == 3 * n  # --samples 6 over 2 workers: 3 each
        for k in OPS:
            assert {"mean_s", "std_s", "time_s", "time_s_interval"} <= set(r["ops"][k])
    assert set(res["conditions"]["checks"]) == {
        "other_processes_cpus", "steal_fraction", "preemptions_per_s",
        "governor_or_turbo_changed", "clock_drop", "slow_samples", "slow_process"}
    assert set(res["conditions"]["findings"]) == {"threads_cooperate"}
    assert set(man) >= {"experiment", "date", "seed", "versions", "depends_on", "config",
                        "hardware", "results_summary"}
    assert set(man["results_summary"]) == {"softmax_GFLOPS_at_T_512", "scores_GFLOPS_at_T_512",
                                           "softmax_pct_of_total_at_T_512",
                                           "phase_27_motivation_pct_memory"}
    assert {"python", "numpy"} <= set(man["versions"]) and man["experiment"] == "15-attention-perf"
    assert not any(p.name.startswith(".") for p in out.iterdir())


def test_a_run_beside_a_cpu_hog_names_the_hog_and_says_to_close_it(tmp_path):
    if not perf.blas_info():  # no BLAS seen: the run counts one thread, and leaves a core free
        pytest.skip("threadpoolctl sees no BLAS here: the run's spare cores differ")
    hog_exe = tmp_path / "cpu-hog"  # the process's name is its executable's
    try:
        hog_exe.symlink_to(sys.executable)
    except OSError:  # Windows without the symlink privilege
        pytest.skip("no symlink here to give the hog a name of its own")
    hog = subprocess.Popen([str(hog_exe), "-c", "while True: pass"])
    try:
        while sum(psutil.Process(hog.pid).cpu_times()[:2]) < 0.2:
            time.sleep(0.05)
        if psutil.Process(hog.pid).name() != "cpu-hog":
            pytest.skip("this OS names a process by the file a link points to, not the link")
        proc = run_perf("--quick", "--T", "64", "128", "--samples", "4", "--workers", "2",
                        "--threads", str(psutil.cpu_count(logical=False) or psutil.cpu_count()),
                        "--out", str(tmp_path))
    finally:
        hog.kill()
        hog.wait()
    assert proc.returncode == 0, proc.stderr
    res = json.loads((tmp_path / "results.json").read_text())
    cond = res["conditions"]
    assert "cpu-hog" in [name for name, _ in cond["other_processes"]]
    if res["threads"]["blas_threads"] < res["hardware"]["physical_cores"]:
        pytest.skip("the BLAS ran fewer threads than cores: the hog may use the cores left free")
    # The hog is named; another busy process of the host may be named beside it.
    failed = {f["check"]: f for f in cond["failed"]}
    remedy, do = failed["other_processes_cpus"]["remedy"], failed["other_processes_cpus"]["do"]
    assert remedy.startswith("close ") and "cpu-hog (" in remedy
    assert "cpu-hog" in do.removeprefix("close ").split(", ")
    assert re.search(r"what to do: close [^\n]*cpu-hog \(", proc.stdout)


SPIN = "import time\nwhile time.process_time() < 0.5: pass"  # a worker's stand-in: 0.5 CPU s


def test_the_run_never_counts_itself_among_the_other_processes():
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        procs = perf.machine_load({os.getpid()})["procs"]
    finally:
        other.kill()
        other.wait()
    assert os.getpid() not in procs and other.pid in procs
    # A worker, a child that ended within the span, is the run's: its CPU in own_cpu_s, which
    # the verdict takes from the machine's busy time (Windows counts no children's: there the
    # worker's result brings its cpu_s, machine_watched's "spawned").
    with perf.machine_watched(in_process=False) as span:
        subprocess.run([sys.executable, "-c", SPIN], timeout=60, check=True)
    if os.name != "nt":
        assert span["own_cpu_s"] >= 0.3  # the kernel counts a child's CPU by ticks: a margin
    # Windows, simulated: a worker's result (5 CPU s) adds its own; in-process, nothing is added.
    for in_process, least in ((False, 5.0), (True, 0.0)):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(perf.os, "name", "nt")
            with perf.machine_watched(in_process) as span:
                span["spawned"].append({"cpu_s": 5.0})
        assert least <= span["own_cpu_s"] < least + 1.0


def test_the_governor_is_every_cpu_s(tmp_path, monkeypatch):
    # Two CPUs whose governors differ (one not set to performance): both said, not the first's.
    for cpu, governor in enumerate(("powersave", "performance", "powersave")):
        folder = tmp_path / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        folder.mkdir(parents=True)
        (folder / "scaling_governor").write_text(governor + "\n")
    monkeypatch.setattr(perf, "SYSROOT", tmp_path)
    assert perf.cpufreq_settings()["governor"] == "performance/powersave"
    monkeypatch.setattr(perf, "SYSROOT", tmp_path / "none")  # a VM: no cpufreq
    assert perf.cpufreq_settings()["governor"] == "unavailable"


def bad_inputs(tmp_path):
    not_dir = tmp_path / "file"
    not_dir.write_text("x")
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{nope")
    no_keys = tmp_path / "nokeys.json"
    no_keys.write_text('{"beta_peak_GBps": 10}')
    return [["--T", "0"], ["--T", "-64"], ["--T", "64.5"], ["--T"], ["--d-model", "x"],
            ["--n-heads", "5"], ["--n-heads", "0"], ["--min-time", "0"], ["--min-time", "nan"],
            ["--min-time", "inf"], ["--samples", "0"], ["--threads", "0"], ["--seed", "-1"],
            ["--workers", "0"], ["--bogus"], ["--roofline", str(tmp_path / "missing.json")],
            ["--roofline", str(bad_json)], ["--roofline", str(no_keys)],
            ["--out", str(not_dir / "sub")]] + [["--out", "/proc/perf-out"]] * (  # no folder
                sys.platform == "linux")  # can be made in Linux's /proc; elsewhere it is a folder


def test_bad_input_one_line_exit_2_nothing_touched(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("earlier")
    for argv in bad_inputs(tmp_path):
        code = perf.main(argv + (["--out", str(out)] if "--out" not in argv else []))
        err = capsys.readouterr().err
        assert code == 2, argv
        assert len(err.strip().splitlines()) == 1 and err.startswith("perf.py: error:"), (argv, err)
    assert [p.name for p in out.iterdir()] == ["results.json"]
    assert (out / "results.json").read_text() == "earlier"


def test_a_T_beyond_the_memory_is_refused_and_leaves_no_folder(tmp_path):
    # A T whose worker would need four times the memory available here, whatever the machine.
    spec = perf.ceiling_plan(False, perf.machine_facts(perf.cpufreq_settings()), 10, True)[0]
    need = lambda T: perf.worker_memory_bytes([64, T], 64, 4, spec)  # noqa: E731  a full run's
    big = next(T for T in itertools.count(4096, 4096) if need(T) > 4 * psutil.virtual_memory().available)
    new = tmp_path / "NEW" / "deeper"
    proc = run_perf("--T", "64", str(big), "--out", str(new))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith(f"perf.py: error: --T {big} needs about ")
    assert list(tmp_path.iterdir()) == []
    # The refusal names the largest T that fits: the next multiple of 64 does not. Against the
    # memory it says was available and its own share, each to 0.005 GiB: not a second reading
    # here, which moves.
    if "that fits is T = " not in proc.stderr:
        pytest.skip("not even T = 64 fits in the memory available here")
    fits = int(proc.stderr.rsplit("the largest multiple of 64 that fits is T = ", 1)[1])
    own, said = (float(v) * 2**30 for v in re.search(
        r"\(([\d.]+) of them this process's\); ([\d.]+) GiB are available", proc.stderr).groups())
    assert fits % 64 == 0 and own + need(fits) <= said + 2**30 / 100
    assert own + need(fits + 64) > said - 2**30 / 100


PEAK = """
import json, sys, tracemalloc
sys.path.insert(0, sys.argv[1])
import perf
task = json.loads(sys.argv[2])
# Does this numpy scale scores' product in its place (temporary elision)? One buffer, not two.
a = perf.np.ones((4, 512, 16), perf.np.float32)
tracemalloc.start()
a @ a.transpose(0, 2, 1) / 4.0
elides = tracemalloc.get_traced_memory()[1] < 1.5 * 4 * 512 * 512 * 4
tracemalloc.stop()
tracemalloc.start()
perf.worker_job(task)
print(tracemalloc.get_traced_memory()[1], elides)
"""


@pytest.mark.parametrize("T", [768, 1024])
def test_the_memory_need_bounds_a_worker_s_arrays_and_no_more_than_a_fifth_over(T):
    """A worker's samples and passes at T, in a fresh process under tracemalloc (it sees
    numpy's arrays): the traced peak <= the need's part for them <= 1.2 x that peak. At these
    T the (h, T, T) arrays are most of it; the interpreter and the ceilings are not traced. A numpy
    that elides scores' second buffer needs one (h, T, T) fp32 array less: the bound adds it back."""
    task = tiny_task(T_sweep=[T], min_time=0.001, timer_pairs=True, call_Ts=[T],
                     cache_budget_bytes=128 << 10)
    proc = subprocess.run([sys.executable, "-c", PEAK, str(PERF.parent), json.dumps(task)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    peak, elides = int(proc.stdout.split()[0]), proc.stdout.split()[1] == "True"
    spec = {"levels": {"DRAM": {"bytes": 1 << 20}}, "matmul_n": 64}  # no ceilings' part
    need = perf.worker_memory_bytes([T], 64, 4, spec) - perf.WORKER_BASE_BYTES
    elided = 4 * T * T * 4 if elides else 0  # h = 4 heads of (T, T) fp32
    assert peak <= need <= 1.2 * (peak + elided), (peak / 2**20, need / 2**20)


def test_more_threads_asked_than_blas_runs_warns_once(tmp_path):
    if not any(i.get("internal_api") == "openblas" for i in threadpoolctl.threadpool_info()):
        pytest.skip("the cap is OpenBLAS's; another BLAS (Accelerate, MKL) or none is not capped")
    asked = psutil.cpu_count() + 2  # OpenBLAS caps its threads at the CPUs, where built so
    proc = run_perf(*TINY[:1], "--T", "64", "--samples", "2", "--workers", "1",
                    "--out", str(tmp_path), env={**os.environ, "OMP_NUM_THREADS": str(asked)})
    assert proc.returncode == 0, proc.stderr
    threads = json.loads((tmp_path / "results.json").read_text())["threads"]
    if threads["blas_threads"] >= asked:
        pytest.skip("this OpenBLAS ran as many threads as asked: nothing to warn of")
    lines = [ln for ln in proc.stdout.splitlines() if "asked for" in ln]
    assert len(lines) == 1 and f"{asked} BLAS threads were asked for" in lines[0]
    assert threads["asked"] == asked


def tiny_task(**kw):
    return {"label": "t", "d_model": 64, "n_heads": 4, "seed": 0, "T_sweep": [64], "min_time": 0.002,
            "threads_imposed": None, "heap_mode": "default", "rounds": 1, "interleave": True,
            "timer_pairs": False, "one_thread_rounds": [], "call_Ts": [], "cache_budget_bytes": 1 << 17,
            "ceiling_spec": None, **kw}


def test_warm_heap_workers_interleave_time_their_timers_and_repeat_a_round_on_one_thread():
    """How a worker samples, by hand: the warm-heap workers interleave their Ts, take timer pairs
    and repeat their third round (or the last of fewer) on one thread where the BLAS runs more;
    the default-heap worker takes each T in turn and does neither."""
    assert perf.sampling_plan("warm", 100, 10, 2) == {"heap_mode": "warm", "rounds": 10,
                                                 "interleave": True, "timer_pairs": True,
                                                 "one_thread_rounds": [2]}
    assert perf.sampling_plan("warm", 21, 10, 2)["rounds"] == 3  # a worker's share, rounded up
    assert perf.sampling_plan("warm", 2, 1, 4)["one_thread_rounds"] == [1]
    assert perf.sampling_plan("warm", 10, 1, 1)["one_thread_rounds"] == []
    assert perf.sampling_plan("warm", 10, 1, None)["one_thread_rounds"] == []  # no BLAS seen: one thread
    assert perf.sampling_plan("default", 6, 1, 2) == {"heap_mode": "default", "rounds": 6,
                                                   "interleave": False, "timer_pairs": False,
                                                   "one_thread_rounds": []}


def test_a_worker_s_result_holds_the_keys_the_watch_s_banner_lists_and_no_other():
    """The one place that lists a worker's keys (the watch's banner) against a worker's result:
    a key added or dropped without the banner fails here."""
    w = perf.worker_job(tiny_task(one_thread_rounds=[0], timer_pairs=True, call_Ts=[64]))
    lines = PERF.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("# A worker's result"))
    banner = " ".join(ln[2:] for ln in itertools.takewhile(lambda ln: ln.startswith("#"),
                                                            lines[at:]))
    # Its "writer (keys)" groups, a by_T's keys after "by_T:", the parent's after judging
    groups = re.findall(r"(\w+) \(([^()]*)\)", banner[:banner.index("A sample:")].replace(
        "[str(T)]", ""))
    listed = {k for _, keys in groups for k in re.findall(r"\w+", keys)} - {"and", "any"}
    assert [g for g, _ in groups] == ["measuring", "watched_samples", "worker_job", "parent"]
    assert listed == set(w) | set(w["by_T"]["64"]) | {"canary_reference"}
    written = {"heap", "blas_threads", "ended", "cpu_s", "started", "sampling_s", "preempted",
               "MHz", "canary_readings", "by_T", "apart", "ceiling_rates", "label"}
    assert set(w) == written and set(w["by_T"]["64"]) == {"samples", "faults", "timer_ratios",
                                                          "one_thread"}


def test_a_worker_s_canary_readings_are_those_around_its_samples_only():
    """The reference is taken over the readings around the samples: one before the first batch,
    one after each (one-thread samples included), none for the calls timed after them."""
    task = tiny_task(T_sweep=[64, 128], rounds=3, one_thread_rounds=[1], call_Ts=[64])
    w = perf.worker_job(task)
    batches = sum(len(r["samples"]) + len(r["one_thread"]) for r in w["by_T"].values())
    assert "64" in w["apart"] and len(w["canary_readings"]) == batches + 1 == 9


def test_the_thread_limit_reaches_the_worker():
    if not perf.blas_info():
        pytest.skip("threadpoolctl sees no BLAS here: its thread count cannot be read")
    if psutil.cpu_count() == 1:
        pytest.skip("one CPU: the BLAS runs one thread whatever the limit says")
    # A limit other than the BLAS's own count, so that a worker ignoring it shows.
    want = 2 if perf.blas_info()[0]["num_threads"] == 1 else 1
    with threadpoolctl.threadpool_limits(want, user_api="blas"):
        if perf.blas_info()[0]["num_threads"] != want:
            pytest.skip(f"this BLAS does not run {want} threads when asked (a serial build)")
    assert perf.spawn_one(tiny_task(threads_imposed=want), False, 60)["blas_threads"] == want


def test_a_worker_that_hangs_is_killed_after_its_timeout(monkeypatch):
    procs = []
    popen = subprocess.Popen
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **kw: procs.append(popen(*a, **kw))
                        or procs[-1])
    with pytest.raises(perf.RunError, match="gave no result within 1 s"):
        perf.spawn_one(tiny_task(rounds=10**6), False, timeout=1)
    assert len(procs) == 1 and procs[0].poll() is not None  # killed and reaped, not left running


def test_a_worker_s_timeout_grows_with_what_its_task_asks(tmp_path, monkeypatch, fake_mallopt):
    full = tiny_task(rounds=10, T_sweep=[64, 128, 256, 512], min_time=0.05)
    assert perf.worker_timeout(full) == perf.WORKER_TIMEOUT_S  # a full run's: far under the floor
    for task in (tiny_task(**{**full, "rounds": 1000, "min_time": 0.5}),  # 2000 s
                 tiny_task(**{**full, "T_sweep": [16384]})):  # a forward: ~74.5 GFLOPs
        asked = task["rounds"] * sum(max(task["min_time"], 74.5e9 * (T / 16384)**2
                                                 / (perf.HANG_GFLOPS * 1e9)) for T in task["T_sweep"])
        assert perf.worker_timeout(task) == pytest.approx(perf.HANG_RATIO * asked, rel=0.01)
    given = []
    monkeypatch.setattr(perf, "WORKER_TIMEOUT_S", 0)  # so that a tiny task's is its own
    monkeypatch.setattr(perf, "spawn_one", lambda task, in_process, timeout: given.append(
        timeout == perf.worker_timeout(task)) or perf.worker_job(task))
    perf.main([*TINY, "--out", str(tmp_path)])
    assert given == [True, True]  # the default-heap worker and the warm one


def test_a_worker_that_exits_0_without_a_result(tmp_path, monkeypatch):
    script = tmp_path / "silent.py"
    script.write_text("import sys; sys.stdin.read()\n")
    monkeypatch.setattr(perf, "__file__", str(script))
    with pytest.raises(perf.RunError, match="wrote no result"):
        perf.spawn_one(tiny_task(), False, 30)


def test_a_bad_task_on_a_worker_s_stdin():
    for task in ("nonsense", "[]", json.dumps({"label": "t"})):
        proc = subprocess.run([sys.executable, str(PERF), "--worker"], input=task,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
        assert proc.stderr.startswith("perf.py --worker: bad task:")


def start_run(tmp_path, **kw):
    """A run in its own process group, once its first worker is measuring."""
    proc = subprocess.Popen([sys.executable, str(PERF), *LONG, "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    for line in proc.stderr:  # the progress lines
        if "worker 1 started" in line:
            break
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # wait until the worker has imported numpy and samples
        workers = psutil.Process(proc.pid).children(recursive=True)
        if workers and sum(workers[0].cpu_times()[:2]) > 0.5:
            return proc, workers
        time.sleep(0.05)
    raise AssertionError("no worker started measuring")


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals and process groups: not on Windows")
def test_ctrl_c_to_the_process_group_exit_130_files_untouched(tmp_path):
    before = {"results.json": b"earlier results\n", "manifest.json": b"earlier manifest\n"}
    for name, data in before.items():
        (tmp_path / name).write_bytes(data)
    proc, workers = start_run(tmp_path, start_new_session=True)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the parent and its workers
    out, err = proc.communicate(timeout=60)
    *progress, last = err.strip().splitlines()
    assert proc.returncode == 130 and out == "" and all(ln.startswith("[") for ln in progress)
    assert last == "perf.py: interrupted; earlier results left as they were"
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert not psutil.wait_procs(workers, timeout=5)[1], "no worker may outlive its run"


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals and process groups: not on Windows")
def test_ctrl_c_in_a_worker_alone_exits_130_quietly():
    proc = subprocess.Popen([sys.executable, str(PERF), "--worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # A task padded past any pipe's buffer: the write returns once the worker reads it, that is
    # past its imports (however slow), whose Ctrl-C would be Python's traceback, not the worker's.
    proc.stdin.write(json.dumps(tiny_task(rounds=10**6)) + " " * (1 << 20))
    proc.stdin.close()
    time.sleep(0.5)  # meant to land while it samples; a Ctrl-C while it parses ends it alike
    proc.send_signal(signal.SIGINT)
    try:
        assert proc.wait(timeout=30) == 130
    finally:
        proc.kill()
    assert proc.stdout.read() == "" and proc.stderr.read() == ""


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals and process groups: not on Windows")
def test_a_worker_that_dies_is_one_line_exit_1_nothing_written(tmp_path):
    (tmp_path / "results.json").write_bytes(b"earlier")
    proc, workers = start_run(tmp_path)
    for w in workers:
        w.kill()  # as the OOM killer would
    out, err = proc.communicate(timeout=60)
    *progress, last = err.strip().splitlines()
    assert proc.returncode == 1 and out == "" and all(ln.startswith("[") for ln in progress)
    assert last.startswith("perf.py: error: worker 1 failed (exit -9)")
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    assert (tmp_path / "results.json").read_bytes() == b"earlier"


def test_a_failed_write_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    (tmp_path / "results.json").write_text(json.dumps(synthetic.run()))

    def full(*_):
        raise OSError(28, "No space left on device", str(tmp_path / "compare.json"))
    monkeypatch.setattr(perf, "write_atomically", full)
    assert perf.main(["--compare", str(tmp_path), str(tmp_path)]) == 2
    assert capsys.readouterr().err == \
        f"perf.py: error: cannot write {tmp_path / 'compare.json'}: No space left on device\n"


@pytest.mark.skipif(os.name == "nt", reason="a pipe whose reader left: Windows raises another "
                    "error than POSIX's EPIPE")
@pytest.mark.parametrize("what", ["a run", "--compare"])
def test_a_reader_that_leaves_early_ends_quietly_the_files_written(tmp_path, what):
    (tmp_path / "results.json").write_text(json.dumps(synthetic.run()))
    args, out, files = (["--compare", str(tmp_path), str(tmp_path)], tmp_path, ["compare.json"]) \
        if what == "--compare" else (TINY + ["--out", str(tmp_path / "run")], tmp_path / "run",
                                     ["results.json", "manifest.json", "perf.png", "roofline.png"])
    read, write = os.pipe()
    proc = subprocess.Popen([sys.executable, str(PERF), *args], stdout=write, stderr=subprocess.PIPE)
    os.close(write)
    os.close(read)  # `perf.py ... | head -0`: the reader is gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1 and all(ln.startswith("[") for ln in err.splitlines())
    assert all((out / f).is_file() for f in files)


def test_roofline_flag_and_phase1_manifest_set_depends_on_and_titles_follow_the_config(
        tmp_path, monkeypatch, fake_mallopt):
    given = tmp_path / "phase1.json"
    given.write_text(json.dumps({"results_summary": {"beta_peak_GBps": 17.0, "pi_peak_GFLOPS": 250}}))
    assert perf.main(TINY + ["--d-model", "48", "--n-heads", "3", "--roofline", str(given),
                             "--out", str(tmp_path / "a")]) == 0
    man = json.loads((tmp_path / "a" / "manifest.json").read_text())
    res = json.loads((tmp_path / "a" / "results.json").read_text())
    assert man["depends_on"] == str(given) and res["ceilings"]["source"] == "cli"
    assert res["ceilings"]["beta_peak_GBps"] == 17.0 and res["ceilings"]["ridge"] == 250 / 17
    fig = perf.plot_perf(res)  # the title drawn into perf.png, from the run's config
    assert fig._suptitle.get_text() == ("Naive numpy multi-head attention, d_model=48, 3 heads, "
                                        "d_k=16")
    repo = tmp_path / "repo"
    (repo / "experiments" / "01-roofline").mkdir(parents=True)
    (repo / perf.PHASE1_MANIFEST).write_text(json.dumps({"beta_peak_GBps": 15, "pi_peak_GFLOPS": 240}))
    monkeypatch.setattr(perf, "REPO", repo)
    res = perf.run_lab(perf.parse_args(TINY + ["--out", str(tmp_path)]), [])
    man = perf.make_manifest(res)
    assert man["depends_on"] == "experiments/01-roofline/manifest.json"
    assert man["ceilings_source"] == "phase1" and res["ceilings"]["ridge"] == 240 / 15


@pytest.mark.parametrize("fail", ["fsync 1", "fsync 2", "replace 1", "replace 2"])
def test_the_atomic_write_keeps_the_old_pair_whichever_step_fails(tmp_path, monkeypatch, fail):
    old = {"results.json": b"old results", "manifest.json": b"old manifest"}
    for name, data in old.items():
        (tmp_path / name).write_bytes(data)
    what, when = fail.split()
    real, calls = getattr(os, what), []

    def failing(*args):
        calls.append(args)
        if len(calls) == int(when):
            raise OSError(28, "No space left on device")
        return real(*args)
    monkeypatch.setattr(os, what, failing)
    with pytest.raises(OSError):
        perf.write_atomically(tmp_path, {"results.json": b"new", "manifest.json": b"new"})
    monkeypatch.setattr(os, what, real)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == old
    perf.write_atomically(tmp_path, {"results.json": b"new", "manifest.json": b"new too"})
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == {
        "results.json": b"new", "manifest.json": b"new too"}


def test_import_has_no_side_effects(tmp_path):
    # perf's import says nothing its libraries' imports do not (a numpy may warn on its own)
    deps = "import numpy, psutil, threadpoolctl"
    base, proc = (subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, sys.argv["
                                  f"1]); {code}; print('ok')", str(PERF.parent)], cwd=tmp_path,
                                 capture_output=True, text=True, timeout=60)
                  for code in (deps, deps + "; import perf"))
    assert proc.stdout == "ok\n" and proc.stderr == base.stderr and list(tmp_path.iterdir()) == []


def test_workers_that_ran_other_blas_threads_than_the_parent_are_warned_of():
    res = {"threads": {"blas_threads": 2, "asked": 2, "asked_by": "default"},
           "hardware": {"physical_cores": 2, "logical_cpus": 2,
                        "cpu_governor_at_run": "unavailable"},
           "worker_processes": [{"blas_threads": 2}, {"blas_threads": 2}]}
    assert perf.run_warnings(res) == []
    res["worker_processes"][1]["blas_threads"] = 1
    assert perf.run_warnings(res) == ["threads: the workers ran 1 BLAS threads, the parent 2"]
    # and a governor not the lab's after it, a line of its own
    res["hardware"]["cpu_governor_at_run"] = "schedutil"
    assert perf.run_warnings(res)[1].startswith("governor: 'schedutil', not 'performance'")


def test_a_value_json_cannot_hold_fails_the_run_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(perf, "run_lab", lambda args, argv: perf.to_json({"x": math.nan}))
    assert perf.main(["--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("perf.py: error: the run made a value JSON cannot hold (Out of range")
    assert err.endswith("; nothing written\n") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []
