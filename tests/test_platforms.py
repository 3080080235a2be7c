"""perf.py on machines we do not have: each simulated through the one seam that reads the
machine (SYSROOT for Linux's /proc and /sys, psutil, platform), each running a tiny sweep to the
end in this process and recording what it could not see."""
import collections
import json
import platform

import psutil
import pytest

import perf

ARGS = ["--quick", "--in-process", "--T", "64", "128", "--repeats", "4"]


def write(root, path, text):
    p = root / path
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


def i5_8250u(root, governor="powersave"):
    """What Linux exposes on the lab's laptop: 4 cores, 8 threads, intel_pstate, a 6 MiB L3."""
    cpuinfo = []
    for cpu in range(8):
        cpuinfo += [f"processor\t: {cpu}", "model name\t: Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz",
                    "physical id\t: 0", f"core id\t\t: {cpu % 4}", "flags\t\t: fpu avx2 fma", ""]
        base = f"sys/devices/system/cpu/cpu{cpu}"
        write(root, f"{base}/topology/core_cpus_list", f"{cpu % 4},{cpu % 4 + 4}")
        write(root, f"{base}/topology/thread_siblings_list", f"{cpu % 4},{cpu % 4 + 4}")
        for name, value in (("scaling_governor", governor), ("scaling_driver", "intel_pstate"),
                            ("scaling_min_freq", "400000"), ("scaling_max_freq", "3400000"),
                            ("scaling_cur_freq", str(1600000 + 100000 * cpu))):
            write(root, f"{base}/cpufreq/{name}", value)
    write(root, "proc/cpuinfo", "\n".join(cpuinfo))
    write(root, "sys/devices/system/cpu/intel_pstate/no_turbo", "0")
    for i, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"),
                                             (2, "Unified", "256K"), (3, "Unified", "6144K")]):
        for name, value in (("level", level), ("type", kind), ("size", size),
                            ("shared_cpu_list", "0-7" if level == 3 else "0,4")):
            write(root, f"sys/devices/system/cpu/cpu0/cache/index{i}/{name}", str(value))


def run(tmp_path, capsys):
    out = tmp_path / "out"
    code = perf.main(ARGS + ["--out", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    res = json.loads((out / "results.json").read_text())
    man = json.loads((out / "manifest.json").read_text())
    assert [r["T"] for r in res["sweep"]] == [64, 128]
    assert all(r["ops"]["total"]["time_s"] > 0 for r in res["sweep"] + res["sweep_default_heap"])
    assert (out / "perf.png").stat().st_size > 0 and (out / "roofline.png").stat().st_size > 0
    assert man["conditions_verdict"] == res["conditions"]["verdict"]
    return res, man, printed.out


@pytest.fixture
def fake_mallopt(monkeypatch):
    """glibc's mallopt, accepted but not applied: the test process keeps its own allocator."""
    calls = []
    monkeypatch.setattr(perf, "glibc_malloc", lambda: lambda *a: calls.append(a) or 1)
    return calls


def test_hyperthreaded_laptop_at_powersave(tmp_path, capsys, monkeypatch, fake_mallopt):
    root = tmp_path / "root"
    i5_8250u(root)
    monkeypatch.setattr(perf, "SYSROOT", root)
    # OpenBLAS's default on that laptop when OMP_NUM_THREADS is not set: one thread per logical CPU.
    blas = [{"internal_api": "openblas", "version": "0.3.27", "num_threads": 8,
             "threading_layer": "pthreads", "architecture": "Haswell", "filepath": "libopenblas.so"}]
    monkeypatch.setattr(perf, "blas_info", lambda: blas)
    res, man, out = run(tmp_path, capsys)
    hw = res["hardware"]
    assert hw["cpu_model"].startswith("Intel(R) Core(TM) i5-8250U")
    assert (hw["logical_cpus"], hw["physical_cores"], hw["smt"]) == (8, 4, True)
    assert hw["caches"]["L3"]["size"] == "6144K" and not hw["virtualized"]
    f = hw["cpufreq_at_start"]
    assert (f["governor"], f["driver"], f["turbo"]) == ("powersave", "intel_pstate", "on")
    assert (f["min_MHz"], f["max_MHz"]) == (400, 3400) and f["cur_MHz"][0] == 1600
    assert hw["cpufreq_at_end"]["governor"] == "powersave"
    assert man["hardware"]["cpu_governor_at_run"] == "powersave"
    assert res["threads"]["requested"] == 4  # the lab's default: one per physical core
    assert res["threads"]["blas_threads"] == 8 and res["threads"]["includes_hyperthreads"] is True
    assert "hyper-thread" in out and "'powersave'" in out and "cpupower frequency-set" in out
    assert res["heap"]["mode"] == "warm" and fake_mallopt
    assert res["config"]["one_thread_rounds"] and res["analysis"]["threading_windows"]


def test_threads_from_the_environment_are_respected(tmp_path, capsys, monkeypatch, fake_mallopt):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    res, _, _ = run(tmp_path, capsys)
    assert res["threads"]["requested"] is None
    assert res["threads"]["source"] == "environment: OMP_NUM_THREADS=1"


WindowsTimes = collections.namedtuple("scputimes", "user system idle interrupt dpc")


def test_windows_no_resource_no_proc_no_glibc(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(perf, "SYSROOT", tmp_path / "empty")
    monkeypatch.setattr(perf, "resource", None)
    monkeypatch.setattr(platform, "system", lambda: "Windows")
    real = psutil.cpu_times
    monkeypatch.setattr(psutil, "cpu_times", lambda: WindowsTimes(*real()[:2], real().idle, 0.0, 0.0))
    res, man, _ = run(tmp_path, capsys)
    hw = res["hardware"]
    assert {"caches", "governor", "warm_heap"} <= set(hw["unavailable"])
    # psutil on Windows counts page faults; where it gives none, the count is unknown, not zero.
    assert ("page_faults" in hw["unavailable"]) == (perf.page_faults() is None)
    assert all(r["page_faults_per_forward"] is None for r in res["sweep"]) == \
        ("page_faults" in hw["unavailable"])
    assert hw["cpu_governor_at_run"] == "unavailable" and hw["caches"] == {}
    assert res["heap"]["mode"] == "default" and "not glibc" in res["heap"]["control"]
    assert res["conditions"]["checks"]["steal_fraction"]["ok"] is None
    assert "steal_fraction" in res["conditions"]["unknown"]
    assert man["hardware"]["cpu_governor_at_run"] == "unavailable"


def test_macos_no_proc_no_sys_no_glibc(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(perf, "SYSROOT", tmp_path / "empty")
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    res, _, _ = run(tmp_path, capsys)
    hw = res["hardware"]
    assert hw["cpu_model"]  # sysctl is absent here: platform's answer, or "unknown"
    assert hw["logical_cpus"] == psutil.cpu_count() and hw["physical_cores"] >= 1
    assert {"caches", "governor", "warm_heap"} <= set(hw["unavailable"])
    assert hw["libc"] is None and res["heap"]["mode"] == "default"
    assert all(isinstance(r["page_faults_per_forward"], float) for r in res["sweep"])


def test_no_blas_seen(tmp_path, capsys, monkeypatch, fake_mallopt):
    monkeypatch.setattr(perf, "blas_info", lambda: [])
    res, _, out = run(tmp_path, capsys)
    assert res["threads"]["blas_threads"] is None and res["threads"]["includes_hyperthreads"] is None
    assert res["versions"]["blas"] == [] and "sees no BLAS" in out
    assert res["config"]["one_thread_rounds"] == [] and res["analysis"]["threading_windows"] == []


def test_verdict_needs_every_check(monkeypatch):
    """Three states per check: a failed check makes the run disturbed, an unknown one is listed."""
    freq = {"governor": "performance", "turbo": "on"}
    before = {"wall": 0.0, "busy": 0.0, "total": 0.0, "steal": None}
    quiet = perf.judge_conditions(before, {"wall": 10.0, "busy": 20.0, "total": 20.0,
                                           "steal": None}, 19.5, 0.1, [], freq, freq)
    assert quiet["verdict"] == "quiet" and quiet["unknown"] == ["steal_fraction"]
    busy = perf.judge_conditions(before, {"wall": 10.0, "busy": 20.0, "total": 20.0,
                                          "steal": None}, 10.0, 0.1, [], freq, freq)
    assert busy["verdict"] == "disturbed" and "1.00 CPUs" in busy["reasons"][0]
    stolen = perf.judge_conditions({**before, "steal": 0.0}, {"wall": 10.0, "busy": 10.0,
                                                              "total": 20.0, "steal": 1.0},
                                   10.0, 0.1, [], freq, {**freq, "governor": "powersave"})
    assert stolen["verdict"] == "disturbed" and len(stolen["reasons"]) == 2
