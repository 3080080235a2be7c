"""perf.py on machines we do not have: each simulated through the seams that read the machine
(SYSROOT for Linux's /proc and /sys, psutil, platform), each running a tiny sweep to the
end in this process (the measurement and its verdict; the pictures are tested apart) and
recording what it could not see."""
import collections
import functools
import itertools
import json
import platform
import re
import types

import numpy as np
import psutil
import pytest

import perf
import synthetic

ARGS = ["--quick", "--in-process", "--T", "64", "128", "--samples", "4", "--workers", "2"]


def write(root, path, text):
    p = root / path
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


def i5_8250u(root, monkeypatch, governor="powersave"):
    """What Linux exposes on the lab's laptop: 4 cores, 8 threads, intel_pstate, a 6 MiB L3; and
    Linux itself, so that no macOS sysctl or Windows processor string of the test's own machine
    names its CPU."""
    monkeypatch.setattr(perf.platform, "system", lambda: "Linux")
    monkeypatch.setattr(perf.platform, "processor", lambda: "")
    if perf.resource is None:  # a Windows host: Linux's getrusage, as a process that ran nothing
        usage = types.SimpleNamespace(ru_minflt=0, ru_nivcsw=0)
        monkeypatch.setattr(perf, "resource", types.SimpleNamespace(
            RUSAGE_SELF=0, getrusage=lambda who: usage))
    cpuinfo = []
    for cpu in range(8):
        cpuinfo += [f"processor\t: {cpu}", "model name\t: Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz",
                    "vendor_id\t: GenuineIntel", "cpu family\t: 6", "model\t\t: 142",
                    "physical id\t: 0", f"core id\t\t: {cpu % 4}", "flags\t\t: fpu avx2 fma", ""]
        base = f"sys/devices/system/cpu/cpu{cpu}"
        write(root, f"{base}/topology/core_cpus_list", f"{cpu % 4},{cpu % 4 + 4}")
        write(root, f"{base}/topology/thread_siblings_list", f"{cpu % 4},{cpu % 4 + 4}")
        for name, value in (("scaling_governor", governor), ("scaling_driver", "intel_pstate"),
                            ("scaling_cur_freq", str(1600000 + 100000 * cpu))):
            write(root, f"{base}/cpufreq/{name}", value)
    write(root, "proc/cpuinfo", "\n".join(cpuinfo))
    write(root, "sys/devices/system/cpu/intel_pstate/no_turbo", "0")
    for i, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"),
                                             (2, "Unified", "256K"), (3, "Unified", "6144K")]):
        for name, value in (("level", level), ("type", kind), ("size", size)):
            write(root, f"sys/devices/system/cpu/cpu0/cache/index{i}/{name}", str(value))


def steady_canary(speed=1.0):
    """A canary that reads the same every time: a simulated machine's BLAS threads outnumber
    this one's CPUs, and a real canary's matmul would then cost milliseconds a reading
    (test_canary tests the real one). speed: its readings' multiple."""
    reading = {"exp": 40e-6 * speed, "blas": 60e-6 * speed}
    return {"read": lambda: dict(reading), "readings": [dict(reading)]}


def lab_run(tmp_path, capsys, canary=steady_canary):
    """The run's results and manifest as written, and its warning lines; the pictures are not
    drawn (test_plots draws them)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(perf, "make_canary", canary)
        synthetic.lab_run_unplotted(m, tmp_path, ARGS)
    res, man = (json.loads((tmp_path / f).read_text()) for f in ("results.json", "manifest.json"))
    assert [r["T"] for r in res["sweep"]] == [64, 128]
    capsys.readouterr()
    perf.report(res, tmp_path)
    return res, man, capsys.readouterr().out


def test_hyperthreaded_laptop_at_powersave(tmp_path, capsys, monkeypatch, fake_mallopt):
    for var in perf.THREAD_VARS:  # the default plan, whatever this shell sets
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "root"
    i5_8250u(root, monkeypatch)
    monkeypatch.setattr(perf, "SYSROOT", root)
    # OpenBLAS's default on that laptop when OMP_NUM_THREADS is not set: one thread per logical CPU.
    blas = [{"internal_api": "openblas", "version": "0.3.27", "num_threads": 8,
             "threading_layer": "pthreads", "architecture": "Haswell", "filepath": "libopenblas.so"}]
    monkeypatch.setattr(perf, "blas_info", lambda: blas)
    res, man, out = lab_run(tmp_path, capsys)
    hw = res["hardware"]
    assert hw["cpu_model"].startswith("Intel(R) Core(TM) i5-8250U")
    assert (hw["vendor"], hw["family"], hw["model"]) == ("GenuineIntel", 6, 142)
    assert (hw["logical_cpus"], hw["physical_cores"]) == (8, 4)
    assert hw["caches"]["L3"]["size"] == "6144K" and not hw["virtualized"]
    f = hw["cpufreq_at_start"]
    assert (f["governor"], f["turbo"]) == ("powersave", "on")
    assert f["cur_MHz"][0] == 1600
    assert man["hardware"]["cpu_governor_at_run"] == "powersave"
    t = res["threads"]
    assert (t["asked"], t["blas_threads"]) == (4, 8)
    warnings = [ln for ln in out.splitlines() if ln.startswith("warning:")]
    assert any("4 BLAS threads were asked for" in ln and "hyper-thread" in ln for ln in warnings)
    assert any("'powersave'" in ln and "cpupower frequency-set" in ln for ln in warnings)
    assert res["heap"]["mode"] == "warm" and fake_mallopt != []  # the calls made to mallopt
    # The clock is read during the run: the clock check stands on cpufreq's MHz (else: the canary).
    clock = res["conditions"]["checks"]["clock_drop"]
    assert clock["basis"] == "cpufreq" and clock["value"] == pytest.approx(0.0)


def test_cpufreq_MHz_reads_the_folders_it_is_given_and_an_empty_list_is_none(tmp_path,
                                                                             monkeypatch):
    # The laptop's eight clocks from its eight folders; given no folders (a VM's glob), none: it
    # never globs (a worker finds the folders once, then reads them after every sample).
    i5_8250u(tmp_path, monkeypatch)
    monkeypatch.setattr(perf, "SYSROOT", tmp_path)
    assert perf.cpufreq_MHz(perf.CPUFREQ()) == [1600 + 100 * cpu for cpu in range(8)]
    assert perf.cpufreq_MHz([]) == []
    assert perf.cpufreq_settings()["cur_MHz"] == [1600 + 100 * cpu for cpu in range(8)]


def test_a_laptop_whose_clock_falls_during_the_run_says_so(tmp_path, capsys, monkeypatch,
                                                           fake_mallopt):
    root = tmp_path / "root"
    i5_8250u(root, monkeypatch, governor="performance")
    monkeypatch.setattr(perf, "SYSROOT", root)
    real = perf.spawn_one

    def then_throttle(task, in_process, timeout):  # after the first worker: -25 %
        out = real(task, in_process, timeout)
        if task["label"] == "worker 1":
            for f in root.glob("sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq"):
                f.write_text(str(int(int(f.read_text()) * 0.75)) + "\n")
        return out
    monkeypatch.setattr(perf, "spawn_one", then_throttle)
    res, _, out = lab_run(tmp_path, capsys)
    assert res["conditions"]["verdict"] == "disturbed"
    assert res["conditions"]["checks"]["clock_drop"]["value"] == pytest.approx(0.25)
    # The CPUs' mean clock: 1600 + 100 * (0..7) MHz = 1950, then three quarters of it.
    assert any("the CPUs' MHz (a worker's median over its samples) was 1950 in the first counted worker and "
               "1462 in the last "
               "(speed -25%)"
               in f["reason"] for f in res["conditions"]["failed"])
    assert "disturbed run:" in out and "what to do: on a laptop, plug it in and" in out


def test_threads_asked_by_flag_environment_or_default(monkeypatch):
    hw = {"physical_cores": 4}
    monkeypatch.setattr(perf, "blas_info", lambda: [])
    plan = lambda flag: tuple(perf.thread_record(flag, hw)[0][k]  # noqa: E731
                              for k in ("imposed", "asked", "asked_by"))
    for var in perf.THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    assert plan(None) == (4, 4, "default: one per physical core")
    assert plan(2) == (2, 2, "flag: --threads")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert plan(None) == (None, 3, "environment: OMP_NUM_THREADS=3")
    assert plan(2)[:2] == (2, 2)  # the flag wins


KERNEL_QUERY = getattr(getattr(np.lib, "introspect", None), "opt_func_info", None) is not None


def kernels(monkeypatch, current):
    """numpy's opt_func_info (numpy >= 2.1) on a simulated machine: each ufunc's float32 kernel
    in `current`, the query's regex honoured as numpy does."""
    introspect = getattr(np.lib, "introspect", None)
    if getattr(introspect, "opt_func_info", None) is not None:
        monkeypatch.setattr(introspect, "opt_func_info", lambda names, dtype: {
            n: {"ff": {"current": k, "available": f"baseline {k}"}} for n, k in current.items()
            if re.search(names, n)})


WindowsTimes = collections.namedtuple("scputimes", "user system idle interrupt dpc")
WindowsMemory = collections.namedtuple("pmem", "rss vms num_page_faults")


def test_windows_no_resource_no_proc_no_glibc(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(perf, "SYSROOT", tmp_path / "empty")
    monkeypatch.setattr(perf, "resource", None)
    monkeypatch.setattr(platform, "system", lambda: "Windows")
    monkeypatch.setattr(platform, "processor",
                        lambda: "Intel64 Family 6 Model 142 Stepping 10, GenuineIntel")
    real = psutil.cpu_times
    monkeypatch.setattr(psutil, "cpu_times", lambda: (lambda t: WindowsTimes(  # this host's, as Windows
        t.user, t.system, t.idle, 0.0, 0.0))(real()))  # names them: no nice, steal or iowait
    # psutil on Windows counts every page fault of a process (num_page_faults): 100 a reading
    faults, rss, real_info = itertools.count(0, 100), psutil.Process().memory_info().rss, \
        psutil.Process.memory_info

    @functools.wraps(real_info)  # whatever psutil hangs on it (its oneshot() cache) kept
    def memory_info(self):
        return WindowsMemory(rss, rss, next(faults))
    monkeypatch.setattr(psutil.Process, "memory_info", memory_info)
    umath = (getattr(np, "_core", None) or np.core)._multiarray_umath  # an i5-8250U's numpy
    monkeypatch.setattr(umath, "__cpu_features__", {"SSE2": True, "AVX2": True, "FMA3": True,
                                                    "AVX512F": False, "ASIMD": False})
    monkeypatch.setattr(umath, "__cpu_dispatch__", ["SSE41", "AVX2", "FMA3", "AVX512F"])
    kernels(monkeypatch, {"add": "AVX2", "maximum": "AVX2", "subtract": "AVX2", "exp": "AVX2",
                          "divide": "AVX2", "sqrt": "AVX2"})
    res, man, _ = lab_run(tmp_path, capsys)
    hw = res["hardware"]
    assert {"caches", "governor", "warm_heap"} <= set(hw["unavailable"])
    assert "page_faults" not in hw["unavailable"]
    assert all(r["page_faults_per_forward"] > 0 for r in res["sweep"])
    assert hw["cpu_governor_at_run"] == "unavailable" and hw["caches"] == {}
    assert (hw["vendor"], hw["family"], hw["model"]) == ("GenuineIntel", 6, 142)
    assert hw["simd_flags"] == ["SSE2", "AVX2", "FMA3"]  # those numpy found, in its order
    assert hw["numpy_dispatch_supported"] == ["AVX2", "FMA3"]  # of its targets, those found
    assert hw["numpy_softmax_kernels"] == (dict.fromkeys(  # numpy < 2.1 cannot say: None
        ("add", "maximum", "subtract", "exp", "divide"), "AVX2") if KERNEL_QUERY else None)
    assert res["heap"]["mode"] == "default" and "not glibc" in res["heap"]["control"]
    assert res["conditions"]["checks"]["steal_fraction"]["ok"] is None
    assert "steal_fraction" in res["conditions"]["unknown"]
    assert man["hardware"]["cpu_governor_at_run"] == "unavailable"


def test_macos_no_proc_no_sys_no_glibc(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(perf.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(OSError))
    monkeypatch.setattr(perf, "SYSROOT", tmp_path / "empty")
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 8 if logical else 4)  # an i7
    monkeypatch.setattr(platform, "processor", lambda: "i386")  # what an Intel Mac's Python says
    # A Mac's getrusage, simulated: 3 minor faults a timed forward, whatever this host counts.
    forwards, timed = [0], perf.attention_forward_timed

    def counted_forward(*args):
        forwards[0] += 1
        return timed(*args)

    rusage = lambda who: types.SimpleNamespace(ru_minflt=3 * forwards[0])  # noqa: E731
    monkeypatch.setattr(perf, "attention_forward_timed", counted_forward)
    monkeypatch.setattr(perf, "resource", types.SimpleNamespace(RUSAGE_SELF=0, getrusage=rusage))
    res, _, out = lab_run(tmp_path, capsys)
    hw = res["hardware"]
    assert hw["cpu_model"] == "i386"  # no sysctl answer (a failed call): platform's
    assert (hw["logical_cpus"], hw["physical_cores"]) == (8, 4)
    assert {"caches", "governor", "warm_heap"} <= set(hw["unavailable"])
    assert hw["libc"] is None and res["heap"]["mode"] == "default"
    # A Mac counts a process's faults by getrusage: its count a forward, as the sample's forwards
    # made it (timer pairs and one-thread samples, outside a sample's count, add none)
    assert [r["page_faults_per_forward"] for r in res["sweep"]] == [3.0, 3.0]
    assert "note: not known here: warm_heap: not glibc" in out  # said at the run's end


MacTimes = collections.namedtuple("scputimes", "user nice system idle")


def apple_silicon(monkeypatch, tmp_path):
    """An Apple-silicon Mac as perf.py's seams would see it: arm64, Darwin, no /proc or /sys, no
    glibc, psutil's CPU times without steal, ten cores and no hyper-threads, sysctl's brand string,
    numpy's ARM features and kernels, and Accelerate, which threadpoolctl does not see. Its
    performance and efficiency cores: efficiency_cores, below."""
    monkeypatch.setattr(perf, "SYSROOT", tmp_path / "empty")
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: 10)
    real = psutil.cpu_times
    monkeypatch.setattr(psutil, "cpu_times", lambda: MacTimes(real().user, 0.0, real().system,
                                                              real().idle))
    brand = collections.namedtuple("done", "stdout")("Apple M2 Pro\n")
    monkeypatch.setattr(perf.subprocess, "run", lambda *a, **k: brand)
    umath = (getattr(np, "_core", None) or np.core)._multiarray_umath
    monkeypatch.setattr(umath, "__cpu_features__", {
        "NEON": True, "NEON_FP16": True, "NEON_VFPV4": True, "ASIMD": True, "ASIMDHP": True,
        "ASIMDDP": True, "ASIMDFHM": True, "SVE": False, "AVX2": False, "AVX512F": False})
    monkeypatch.setattr(umath, "__cpu_dispatch__", ["ASIMDHP", "ASIMDDP", "ASIMDFHM", "SVE"])
    # numpy on arm64 runs exp and divide on baseline code (ASIMD is in the baseline there), and
    # says so as on x86: a kernel is a dispatch target the CPU supports, or "baseline(...)"
    arm = "baseline(NEON NEON_FP16 NEON_VFPV4 ASIMD)"
    kernels(monkeypatch, {"add": "baseline(NEON)", "maximum": "baseline(NEON)", "exp": arm,
                          "subtract": "baseline(NEON)", "divide": arm, "log": "ASIMDHP"})
    monkeypatch.setattr(perf, "blas_info", lambda: [])


def test_apple_silicon_runs_and_says_what_it_could_not_see(tmp_path, capsys, monkeypatch):
    apple_silicon(monkeypatch, tmp_path)
    res, man, out = lab_run(tmp_path, capsys)
    hw = res["hardware"]
    assert (hw["machine"], hw["cpu_model"], hw["physical_cores"]) == (
        "arm64", "Apple M2 Pro", 10)
    assert not any("AVX" in f or "X86" in f for f in hw["simd_flags"])  # of the features, found
    arm = "baseline(NEON NEON_FP16 NEON_VFPV4 ASIMD)"
    assert hw["numpy_softmax_kernels"] == ({  # the softmax's five ufuncs, none other
        "add": "baseline(NEON)", "maximum": "baseline(NEON)", "subtract": "baseline(NEON)",
        "exp": arm, "divide": arm} if KERNEL_QUERY else None)
    # What this script does not read on a Mac: the hypervisor's steal, the preemptions, the
    # governor; unknown.
    assert {"steal_fraction", "preemptions_per_s", "governor_or_turbo_changed"} <= set(
        res["conditions"]["unknown"])
    # and the run's last lines say so beside its verdict: quiet means no other check failed
    verdict_line = next(ln for ln in out.splitlines() if "run conditions:" in ln)
    assert all(c in verdict_line.split("not checked here: ")[1] for c in res["conditions"]["unknown"])
    assert {"caches", "governor", "warm_heap"} <= set(hw["unavailable"])
    assert res["heap"]["mode"] == "default" and res["threads"]["blas_threads"] is None
    assert "sees no BLAS" in out and man["hardware"]["machine"] == "arm64"
    # The clock from the canary (no cpufreq), the roofline from measured copies alone.
    assert res["conditions"]["checks"]["clock_drop"]["basis"] == "canary"
    assert list(res["ceilings"]["levels"]) == ["DRAM"]


def efficiency_cores():
    """Canaries as on a Mac whose efficiency cores took every second process: x2 in both kernels
    (the default-heap worker's first, then worker 1 fast, worker 2 slow)."""
    made = itertools.count()
    return lambda: steady_canary(2.0 if next(made) % 2 == 0 else 1.0)


def test_apple_silicon_with_a_process_on_its_efficiency_cores(tmp_path, capsys, monkeypatch):
    apple_silicon(monkeypatch, tmp_path)
    res, _, out = lab_run(tmp_path, capsys, canary=efficiency_cores())
    assert list(res["canary"]["left_out"]) == ["worker 2"]
    # one of two: half, against the run (the machine's real load is not this test's: its checks
    # may fail too on a busy machine)
    (f,) = [f for f in res["conditions"]["failed"] if f["check"] == "slow_process"]
    assert "performance and efficiency cores" in f["remedy"]
    # The remedy a Mac can follow: it has no taskset, and cannot pin a process to a kind of core.
    assert "macOS cannot pin" in f["remedy"] and "taskset" not in out


def test_no_blas_seen(tmp_path, capsys, monkeypatch, fake_mallopt):
    monkeypatch.setattr(perf, "blas_info", lambda: [])
    res, _, out = lab_run(tmp_path, capsys)
    assert res["threads"]["blas_threads"] is None
    assert "sees no BLAS" in out
    assert res["analysis"]["threading_windows"] == []  # no one-thread round: no window


@pytest.mark.skipif(getattr(getattr(perf.np.lib, "introspect", None), "opt_func_info", None) is
                    None, reason="numpy before 2.1 cannot say which kernel it runs")
def test_the_softmax_kernels_numpy_runs_are_recorded_or_said_unknown(monkeypatch):
    # A target numpy picked runs here if each feature it joins ("FMA3__AVX2", numpy 2.1-2.3's
    # spelling; "X86_V3", 2.4's) is one this CPU supports, or it is numpy's baseline.
    runs_here = lambda t, supported: t.startswith("baseline") or all(  # noqa: E731
        f in supported for f in t.split("__"))
    simd = perf.numpy_simd()
    kernels, supported = simd["numpy_softmax_kernels"], simd["numpy_dispatch_supported"]
    # Each of the softmax's float32 kernels (the mask's add and the sum, max, subtract, exp,
    # divide) with the dispatch target numpy picked on this CPU.
    assert set(kernels) == {"add", "maximum", "subtract", "exp", "divide"}
    assert all(runs_here(t, supported) for t in kernels.values()), kernels
    # An AVX2 laptop on numpy 2.1 (the lab's i5-8250U, say): its joined targets are recorded
    # as numpy names them, and run there.
    umath = (getattr(perf.np, "_core", None) or perf.np.core)._multiarray_umath
    monkeypatch.setattr(umath, "__cpu_features__", {"FMA3": True, "AVX2": True, "AVX512F": False})
    monkeypatch.setattr(umath, "__cpu_dispatch__", ["FMA3", "AVX2", "AVX512F"])
    monkeypatch.setattr(perf.np.lib.introspect, "opt_func_info", lambda name, sig: {
        k: {"f": {"current": "FMA3__AVX2"}} for k in ("add", "maximum", "subtract", "exp", "divide")})
    laptop = perf.numpy_simd()
    assert laptop["numpy_dispatch_supported"] == ["FMA3", "AVX2"]
    assert set(laptop["numpy_softmax_kernels"].values()) == {"FMA3__AVX2"}
    assert all(runs_here(t, laptop["numpy_dispatch_supported"])
               for t in laptop["numpy_softmax_kernels"].values())
    # Where numpy cannot say which kernel runs: unknown, not a guess.
    monkeypatch.delattr(perf.np.lib.introspect, "opt_func_info")
    assert perf.numpy_simd()["numpy_softmax_kernels"] is None
