"""The run's verdict from synthetic records: each check fails when what it guards happened, with
its reason in plain words, and passes when it did not."""
import pytest

import perf

QUIET_FREQ = {"governor": "performance", "turbo": "on"}


def cpu(wall, busy, total, steal=0.0):
    return {"wall": wall, "busy": busy, "total": total, "steal": steal}


def worker(preempted=0, sampling_s=10.0, MHz=()):
    return {"preempted": preempted, "sampling_s": sampling_s, "MHz": list(MHz)}


def verdict(**parts):
    return perf.judge_conditions({k: v for p in parts.values() for k, v in p.items()})


def test_a_busy_process_beside_four_free_cores_is_quiet_when_no_worker_was_preempted():
    # 10 s of sweep: the whole machine was busy 25 CPU seconds, the run itself 15: others used
    # one CPU. The run left four cores free, so that is within 4 + 0.25.
    others = perf.interference_checks(cpu(0, 0, 0), cpu(10, 25, 80), 15.0, spare_cpus=4)
    assert others["other_processes_cpus"][0]["value"] == pytest.approx(1.0)
    v = verdict(a=others, b=perf.preemption_check([worker(0), worker(3)]))
    assert v["verdict"] == "quiet" and v["reasons"] == []


def test_the_same_busy_process_on_a_machine_without_spare_cores_disturbs():
    v = verdict(a=perf.interference_checks(cpu(0, 0, 0), cpu(10, 25, 80), 15.0, spare_cpus=0))
    assert v["verdict"] == "disturbed"
    assert v["reasons"] == ["other processes used 1.00 CPUs on average while the sweep ran, "
                            "and the run left 0 free (limit 0.25)"]


def test_preempted_workers_disturb_with_their_rate_over_all_their_sampling():
    # 30 + 1770 involuntary switches in 10 + 5 s of sampling: 120 a second, over the limit of 50.
    v = verdict(a=perf.preemption_check([worker(30, 10.0), worker(1770, 5.0)]))
    assert v["verdict"] == "disturbed" and "preempted 120 times a second" in v["reasons"][0]
    # A burst of 60 in one worker's 0.7 s, among five: 72 in 3.5 s, 21 a second: quiet.
    burst = verdict(a=perf.preemption_check([worker(60, 0.7)] + [worker(3, 0.7)] * 4))
    assert burst["verdict"] == "quiet"
    unknown = verdict(a=perf.preemption_check([worker(None)]))  # not Linux: not counted
    assert unknown["verdict"] == "quiet" and unknown["unknown"] == ["preemptions_per_s"]


def test_steal_over_two_percent_disturbs():
    v = verdict(a=perf.interference_checks(cpu(0, 0, 0), cpu(10, 10, 20, steal=1.0), 10.0, 0))
    assert v["checks"]["steal_fraction"]["value"] == pytest.approx(0.05)
    assert v["reasons"] == ["the hypervisor took 5.0% of the CPU time (steal; limit 2%)"]
    none = verdict(a=perf.interference_checks(cpu(0, 0, 0, None), cpu(10, 10, 20, None), 10.0, 0))
    assert none["verdict"] == "quiet" and none["unknown"] == ["steal_fraction"]


def test_two_threads_slower_than_one_is_disturbed_with_that_reason():
    windows = [{"T": 256, "threads_over_one": 1.40}, {"T": 512, "threads_over_one": 1.32}]
    v = verdict(a=perf.cooperation_check(windows, threads_ran=2))
    assert v["verdict"] == "disturbed"
    assert v["reasons"][0].startswith("2 BLAS threads took 1.32x one thread's time on scores + "
                                      "av at T = 512 (limit 0.9): the cores are not cooperating")
    good = verdict(a=perf.cooperation_check([{"T": 512, "threads_over_one": 0.75}], 2))
    assert good["verdict"] == "quiet" and good["unknown"] == []


def test_one_blas_thread_is_never_judged_on_cooperation():
    v = verdict(a=perf.cooperation_check([{"T": 512, "threads_over_one": 1.5}], threads_ran=1))
    assert v["verdict"] == "quiet" and v["unknown"] == [] and v["reasons"] == []
    assert v["checks"]["threads_cooperate"]["applies"] is False
    # Threads that could cooperate but were never sampled on one thread: unknown, not passed.
    assert verdict(a=perf.cooperation_check([], 2))["unknown"] == ["threads_cooperate"]


def test_a_laptop_whose_clock_falls_a_quarter_is_disturbed_with_the_MHz():
    workers = [worker(MHz=[2900, 2900, 2850]), worker(MHz=[2500]), worker(MHz=[2175, 2175])]
    v = verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, workers))
    assert v["checks"]["clock_drop"]["value"] == pytest.approx(0.25)
    assert "2900 MHz in the first worker and 2175 MHz in the last (-25%)" in v["reasons"][0]
    steady = verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, [worker(MHz=[2900])] * 3))
    assert steady["verdict"] == "quiet"
    no_clock = verdict(a=perf.clock_checks(QUIET_FREQ, QUIET_FREQ, [worker(), worker()]))
    assert no_clock["unknown"] == ["clock_drop"]


def test_a_governor_that_changes_mid_run_is_disturbed():
    v = verdict(a=perf.clock_checks(QUIET_FREQ, {"governor": "powersave", "turbo": "on"}, []))
    assert v["reasons"] == ["the CPU governor/turbo changed during the run: performance/on -> "
                            "powersave/on"]
