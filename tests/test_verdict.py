"""The run's verdict from synthetic records: each check fails when what it guards happened, with
its reason and its remedy in plain words, and passes when it did not; a remedy is advised only
where the run's own data back it."""
import platform

import pytest

import perf

QUIET_FREQ = {"governor": "performance", "turbo": "on"}


def cpu(wall, busy, all_cpu_s, steal=0.0, procs=None, at=1000.0):
    return {"perf_s": wall, "epoch_s": at + wall, "busy": busy, "all_cpu_s": all_cpu_s, "steal": steal,
            "procs": procs or {}}


def worker(preempted=0, sampling_s=10.0, MHz=(), exp_us=(40, 40, 40, 40), blas_x=1.5, started=0):
    """A worker's record: its preemptions, cpufreq's MHz (none: a VM) and its canary's
    one-thread exp kernel, a reading per batch; when it started (the same: in the order given)."""
    return {"preempted": preempted, "sampling_s": sampling_s, "MHz": list(MHz), "started": started,
            "canary_readings": [{"exp": us / 1e6, "blas": blas_x * us / 1e6} for us in exp_us]}


def verdict(**parts):
    return perf.verdict_from({k: v for p in parts.values() for k, v in p.items()})


def reasons(v):
    return [f["reason"] for f in v["failed"]]


def test_a_busy_process_beside_four_free_cores_is_quiet_when_no_worker_was_preempted():
    # 10 s of sweep: the whole machine was busy 25 CPU seconds, the run itself 15: others used
    # one CPU. The run left four cores free, so that is within 4 + 0.25.
    others = perf.interference_checks(cpu(0, 0, 0), cpu(10, 25, 80), 15.0, 4, [worker(0)], [])
    assert others["other_processes_cpus"]["value"] == pytest.approx(1.0)
    v = verdict(a=others)
    assert v["verdict"] == "quiet" and v["failed"] == []


def test_the_same_busy_process_on_a_machine_without_spare_cores_disturbs_and_is_named():
    # Over the 10 s of the sweep: cpu-hog used 9.5 CPU seconds (it started before the run), a
    # new process 0.3 s, an editor 0.02 s; the run's own processes are not in the snapshots.
    before = cpu(0, 0, 0, procs={7: ("cpu-hog", 100.0, 5.0), 8: ("editor", 1.0, 5.0)})
    after = cpu(10, 25, 80, procs={7: ("cpu-hog", 109.5, 5.0), 8: ("editor", 1.02, 5.0),
                                   9: ("indexer", 0.3, 1003.0)})
    others = perf.others_by_name(before, after)
    assert others == [["cpu-hog", 0.95], ["indexer", 0.03]]  # under 0.005 CPUs: not listed
    v = verdict(a=perf.interference_checks(before, after, 15.0, 0, [worker(0)], others))
    assert v["verdict"] == "disturbed"
    assert v["failed"] == [{
        "check": "other_processes_cpus", "reason": "other processes and interrupts used 1.00 CPUs on "
        "average while the workers ran, and the run left 0 cores free (limit 0.25)",
        "remedy": "close cpu-hog (0.95 CPUs) and rerun", "do": "close cpu-hog"}]
    # Nobody stood out (many small processes): the remedy names none.
    v = verdict(a=perf.interference_checks(before, after, 15.0, 0, [worker(0)],
                                           [["a", 0.04], ["b", 0.04]]))
    assert v["failed"][0]["remedy"].startswith("close other programs and rerun")


def preempted(workers, others=()):
    quiet = cpu(0, 0, 0), cpu(10, 0, 20)
    return {"p": perf.interference_checks(*quiet, 0.0, 0, workers, list(others))[
        "preemptions_per_s"]}


def test_preempted_workers_disturb_with_their_rate_over_all_their_sampling():
    # 30 + 1770 involuntary switches in 10 + 5 s of sampling: 120 a second, over the limit of 50.
    v = verdict(a=preempted([worker(30, 10.0), worker(1770, 5.0)], [["hog", 0.9]]))
    assert v["verdict"] == "disturbed" and "preempted 120 times a second" in reasons(v)[0]
    assert v["failed"][0]["do"] == "close hog, or fewer BLAS threads"  # its own threads, too
    assert "where the BLAS threads outnumber the CPUs, ask for fewer" in v["failed"][0]["remedy"]
    # A burst of 60 in one worker's 0.7 s, among five: 72 in 3.5 s, 21 a second: quiet.
    burst = verdict(a=preempted([worker(60, 0.7)] + [worker(3, 0.7)] * 4))
    assert burst["verdict"] == "quiet"
    unknown = verdict(a=preempted([worker(None)]))  # not Linux: not counted
    assert unknown["verdict"] == "quiet" and unknown["unknown"] == ["p"]


def test_steal_over_two_percent_disturbs():
    v = verdict(a=perf.interference_checks(cpu(0, 0, 0), cpu(10, 10, 20, steal=1.0), 10.0, 0,
                                           [worker(0)], []))
    assert v["checks"]["steal_fraction"]["value"] == pytest.approx(0.05)
    assert reasons(v) == ["the hypervisor took 5.0% of the CPU time (steal; limit 2%)"]
    assert v["failed"][0]["remedy"] == ("a shared VM: rerun later, and quote ratios or set runs "
                                        "side by side with --compare")
    none = verdict(a=perf.interference_checks(cpu(0, 0, 0, None), cpu(10, 10, 20, None), 10.0, 0,
                                              [worker(0)], []))
    assert none["verdict"] == "quiet" and none["unknown"] == ["steal_fraction"]


def window(T, ratio, one_ms=1.0):
    one = {"av": one_ms / 1e3, "scores": 0.6e-3, "softmax": 2.5e-3}
    return {"T": T, "pairs": 8, "threads_over_one": {"av": ratio}, "one_thread_s": one,
            "all_threads_s": {"av": ratio * one_ms / 1e3}}


def test_two_threads_slower_than_one_are_a_finding_that_advises_one_thread_and_its_price():
    f = perf.cooperation_finding([window(256, 1.40), window(512, 1.32)], threads_ran=2)
    assert f["holds"] is False and f["value"] == 1.32
    assert f["finding"].startswith("2 BLAS threads took 1.32x one thread's time on av at "
                                   "T = 512 (the median of 8 pairs; limit 0.9): the threads "
                                   "slowed av here")
    assert f["advice"] == (
        "here one thread was faster in back-to-back samples (threading_windows): try "
        "OMP_NUM_THREADS=1 and say so in your README; pi, the ridge and the ops' classes may move "
        "with it, so compare such a run only with one-thread runs")
    good = perf.cooperation_finding([window(512, 0.75)], 2)
    assert good["holds"] is True and "advice" not in good


def test_threads_that_help_too_little_do_not_advise_one_thread():
    # Two threads at 0.95x one thread's time: past the limit, but one thread was not faster in
    # back-to-back samples: the run does not back OMP_NUM_THREADS=1, and does not advise it.
    f = perf.cooperation_finding([window(512, 0.95)], threads_ran=2)
    assert f["holds"] is False and "try OMP_NUM_THREADS=1" not in f["advice"]
    assert f["finding"].endswith("the threads barely helped av here")
    assert f["advice"].startswith("one thread was not faster in back-to-back samples, so this run "
                                  "does not back OMP_NUM_THREADS=1")


def test_one_blas_thread_is_never_judged_on_cooperation():
    # One thread, 1.5x: past the limit, but nothing to cooperate: not judged, no finding.
    f = perf.cooperation_finding([window(512, 1.5)], threads_ran=1)
    assert f["holds"] is None and "finding" not in f
    # Threads that could cooperate but were never sampled on one thread: unknown.
    assert perf.cooperation_finding([], 2)["holds"] is None


def test_a_laptop_whose_clock_falls_a_quarter_is_disturbed_with_the_MHz(monkeypatch):
    workers = [worker(MHz=[2900, 2900, 2850]), worker(MHz=[2500]), worker(MHz=[2175, 2175])]
    monkeypatch.setattr(platform, "system", lambda: "Linux")  # the remedy names the OS's tool
    v = verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, workers))
    assert v["checks"]["clock_drop"]["value"] == pytest.approx(0.25)
    assert v["checks"]["clock_drop"]["basis"] == "cpufreq"
    assert "was 2900 in the first counted worker and 2175 in the last (speed -25%)" \
        in reasons(v)[0]
    assert v["failed"][0]["do"] == "full power (on AC), or rerun later"
    assert "sudo cpupower frequency-set -g performance" in v["failed"][0]["remedy"]
    for system in ("Darwin", "Windows"):  # no cpupower there: the power mode
        monkeypatch.setattr(platform, "system", lambda system=system: system)
        remedy = verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, workers))["failed"][0]["remedy"]
        assert "best-performance power mode" in remedy and "cpupower" not in remedy
    steady = verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, [worker(MHz=[2900])] * 3))
    assert steady["verdict"] == "quiet"
    # First and last by when they started, not by their place in the list: in the list's order
    # the clock rose; by their starts it fell a quarter.
    fell = [worker(MHz=[2175], started=30), worker(MHz=[2500], started=20),
            worker(MHz=[2900], started=10)]
    v = verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, fell))
    assert v["checks"]["clock_drop"]["value"] == pytest.approx(0.25)


def test_without_cpufreq_the_canary_s_exp_kernel_is_the_clock():
    # No MHz (a VM, macOS, Windows). The first worker's exp kernel reads 40, 40, 41, 60 us:
    # its 25th percentile (numpy's linear) is 40; the last's reads 50, 50, 52, 80: 50. The
    # speed fell by 1 - 40/50 = 20 %, past the limit of 10 %: judged, and failed.
    first, last = worker(exp_us=(40, 40, 41, 60)), worker(exp_us=(50, 50, 52, 80))
    v = verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, [first, worker(), last]))
    assert v["checks"]["clock_drop"]["value"] == pytest.approx(0.2)
    assert v["checks"]["clock_drop"]["basis"] == "canary"
    assert "exp reading took 40.0 us in the first counted worker and 50.0 in the last" in \
        reasons(v)[0]
    assert v["failed"][0]["do"] == "full power (on AC), or rerun later"  # a laptop, perhaps
    # On a VM the canary cannot tell the clock from the shared host: the host's remedy.
    vm = verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, [first, worker(), last], True))
    assert vm["failed"][0]["remedy"].startswith("on a VM the canary cannot tell the clock")
    assert vm["failed"][0]["do"] == "rerun later"
    # The reason says what the run measured and no cause it did not: that is the remedy's.
    assert reasons(vm)[0].endswith("the later canary readings ran slower")
    # cpufreq's MHz are the clock's own: a VM that reads them keeps the laptop's remedy.
    mhz = [worker(MHz=[2900]), worker(MHz=[2175])]
    assert verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, mhz, True))["failed"][0]["do"] == \
        "full power (on AC), or rerun later"
    # A slow episode in the last worker that its fastest quarter escapes is not a sustained fall.
    episode = worker(exp_us=(40, 40, 60, 60))
    assert verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, [first, episode]))["verdict"] == \
        "quiet"
    # A process slower on one kernel: the last process's exp kernel x1.3 for its life, its
    # BLAS kernel as the first's: the smaller fall of the two kernels, none, is the clock's.
    one_part = worker(exp_us=(52, 52, 53, 78), blas_x=1.5 * 40 / 52)
    assert verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, [first, one_part]))["verdict"] == \
        "quiet"
    # One worker: nothing to compare, unknown.
    assert verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, [first]))["unknown"] == [
        "clock_drop"]


def test_a_governor_that_changes_mid_run_is_disturbed():
    v = verdict(a=perf.clock_checks(QUIET_FREQ, {"governor": "powersave", "turbo": "on"}, []))
    assert reasons(v) == ["the CPU governor/turbo changed during the run: performance/on -> "
                          "powersave/on"]


def rows_and_workers(references, aside=0):
    """One T's row (60 samples, `aside` set aside) and a worker per canary reference,
    given as (exp, blas) multiples of 30 and 60 us."""
    rows = [{"T": 512, "samples_set_aside": aside, "sample_count": 60}]
    workers = [{"label": f"worker {i + 1}", "canary_reference": {"exp": c * 30e-6, "blas": b * 60e-6}}
            for i, (c, b) in enumerate(references)]
    return rows, workers


def test_one_process_the_canary_saw_slow_is_left_out_and_named_and_the_run_stays_quiet():
    # Worker 3's BLAS kernel x2.0 the others', its exp kernel as theirs.
    rows, workers = rows_and_workers([(1, 1)] * 2 + [(1, 2.0)] + [(1, 1)] * 7)
    left = perf.slow_processes(workers)
    assert left == {"worker 3": {"canary_kernel": "blas", "ratio": 2.0, "other_ratio": 1.0}}
    v = verdict(c=perf.canary_checks(rows, len(workers), left))
    # Left out, and not counted against the run: its exp kernel ran as the others'.
    assert v["verdict"] == "quiet" and v["checks"]["slow_process"]["value"] == 0
    # A exp kernel x1.3 in one process: under PROCESS_SLOW, kept.
    assert perf.slow_processes(rows_and_workers([(1.3, 1)] + [(1, 1)] * 9)[1]) == {}
    # Just past the limit, in either kernel: left out.
    past = perf.PROCESS_SLOW * 1.01
    assert list(perf.slow_processes(rows_and_workers([(1, 1)] * 9 + [(past, 1)])[1])) == ["worker 10"]


def test_every_process_slow_on_a_different_part_leaves_none_out():
    """Two processes, each slow against the other on another canary kernel (a busy neighbour can do
    that): leaving both out would leave no process to feed the figures; both are kept."""
    assert perf.slow_processes(rows_and_workers([(1, 2.0), (2.0, 1)])[1]) == {}
    # One of three so: it alone is left out, as before.
    assert list(perf.slow_processes(rows_and_workers([(1, 2.0), (1, 1), (1, 1)])[1])) == ["worker 1"]


def test_half_the_processes_slow_is_disturbed_with_what_it_is_and_what_to_change(monkeypatch):
    monkeypatch.setattr(platform, "system", lambda: "Linux")  # the remedy is the OS's (a Mac's:
    # test_platforms)
    # A hybrid laptop whose efficiency cores took half the processes: five of ten at x2 in both
    # kernels. Each slow one's others' fast side is a fast one's: all five left out, half: disturbed.
    rows, workers = rows_and_workers([(1, 1), (2, 2)] * 5)
    left = perf.slow_processes(workers)
    assert sorted(left) == sorted(f"worker {i}" for i in (2, 4, 6, 8, 10))
    v = verdict(c=perf.canary_checks(rows, len(workers), left))
    assert v["verdict"] == "disturbed" and v["checks"]["slow_process"]["limit"] == 4
    (f,) = v["failed"]
    assert f["reason"].startswith("5 of the 10 workers ran both canary kernels slow (over "
                                  "1.25x the others' fast side, one over 1.6x) for nearly their "
                                  "whole life: worker 2 (x2.00 and x2.00)")
    assert "cores of two speeds (performance and efficiency cores)" in f["remedy"]
    assert "taskset -c" in f["remedy"] and f["do"] == "pin to the fast cores, or rerun later"
    # Five of ten slow on the BLAS kernel alone, their exp kernel as the others': all five left
    # out, the run quiet.
    rows, workers = rows_and_workers([(1, 1), (1.1, 2)] * 5)
    left = perf.slow_processes(workers)
    assert len(left) == 5 and verdict(c=perf.canary_checks(rows, len(workers), left))["verdict"] == "quiet"
    # Their other kernel just past BOTH_KERNELS_SLOW: both kernels slow, half, disturbed.
    rows, workers = rows_and_workers([(1, 1), (perf.BOTH_KERNELS_SLOW * 1.01, 2)] * 5)
    left = perf.slow_processes(workers)
    assert verdict(c=perf.canary_checks(rows, len(workers), left))["verdict"] == "disturbed"
    # Six of ten slow on the BLAS kernel alone: set against the others' fast side, not their
    # median, all six are left out.
    rows, workers = rows_and_workers([(1, 1)] * 4 + [(1.05, 2)] * 6)
    left = perf.slow_processes(workers)
    assert set(left) == {f"worker {i}" for i in range(5, 11)}
    assert verdict(c=perf.canary_checks(rows, len(workers), left))["verdict"] == "quiet"
    # Four of ten slow on both kernels: quiet, the four left out.
    rows, workers = rows_and_workers([(1, 1)] * 6 + [(2, 2)] * 4)
    assert verdict(c=perf.canary_checks(rows, len(workers), perf.slow_processes(workers)))["verdict"] == \
        "quiet"


def test_two_workers_one_slow_is_half_and_one_process_is_not_judged():
    # --quick: two workers, one x2 on both kernels against the other: half, disturbed.
    rows, workers = rows_and_workers([(1, 1), (2, 2)])
    assert verdict(c=perf.canary_checks(rows, len(workers), perf.slow_processes(workers)))["verdict"] == \
        "disturbed"
    # One worker: nothing to set it against, none left out, the check unknown.
    rows, workers = rows_and_workers([(3, 3)])
    assert perf.slow_processes(workers) == {}
    v = verdict(c=perf.canary_checks(rows, len(workers), {}))
    assert v["verdict"] == "quiet" and v["unknown"] == ["slow_process"]
