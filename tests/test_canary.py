"""The canary sees the machine run slow and the run sets those samples aside: slow spells are
injected deterministically into a short in-process run (the softmax made slower, the canary's
readings around it slower too, as a host's slow spell is assumed to slow both), then the figures, the counts
and the verdict are checked against the spells. The canary's reading rule by hand."""
import pytest

import perf
import synthetic

ARGS = ["--quick", "--in-process", "--T", "64", "--samples", "20", "--workers", "2",
        "--min-time", "0.002", "--threads", "1"]  # one thread: no one-thread samples in between
FAST = {"exp": 40e-6, "blas": 60e-6}


def slow_spells(monkeypatch, slow):
    """Every timed batch numbered in turn within a worker; batch k runs slow if slow(k): its
    softmax calls take 300 us more, and the canary readings on either side of it (the reading
    after batch k - 1 and after batch k) read twice their fast times. The timers read a fake timer
    that moves 50 us a reading and 300 us more inside a slow softmax: no wall-clock time in the
    figures."""
    state, timer = {"batch": 0, "log": []}, [0]
    real_run_for, real_softmax = perf.run_for, perf.softmax

    def now():
        timer[0] += 50_000
        return timer[0]

    def run_for(fn, min_time, now=now):
        state["batch"] += 1
        state["log"].append(slow(state["batch"]))
        return real_run_for(fn, min_time, now)

    def softmax(*args):  # whatever the softmax takes
        if state["log"] and state["log"][-1]:
            timer[0] += 300_000
        return real_softmax(*args)

    def make_canary():
        def read():  # between batch k and k + 1: slow if either is
            k = state["batch"]
            factor = 2.0 if slow(k) or slow(k + 1) else 1.0
            return {kernel: factor * t for kernel, t in FAST.items()}
        state["batch"] = 0  # a new worker: its batches from 1
        first = read()
        return {"read": read, "readings": [first]}

    monkeypatch.setattr(perf, "run_for", run_for)
    monkeypatch.setattr(perf.time, "perf_counter_ns", now)
    monkeypatch.setattr(perf, "softmax", softmax)
    monkeypatch.setattr(perf, "make_canary", make_canary)
    monkeypatch.setattr(perf, "glibc_malloc", lambda: lambda *a: 1)  # the test process's heap stays


def lab_run(tmp_path, monkeypatch, extra=()):
    return synthetic.lab_run_unplotted(monkeypatch, tmp_path, ARGS + list(extra))  # a later flag wins


def test_samples_in_slow_spells_are_set_aside_and_the_figures_are_the_fast_ones(tmp_path,
                                                                                  monkeypatch):
    # Batches 5-8 of every 12 run slow: a third of them, in spells of four.
    slow_spells(monkeypatch, lambda k: k % 12 in (5, 6, 7, 8))
    res = lab_run(tmp_path, monkeypatch)
    row, dflt = res["sweep"][0], res["sweep_default_heap"][0]
    # Each worker's first ten batches are its ten samples at T = 64 (a timer pair is no
    # batch); the default-heap worker's first three are its three.
    assert row["samples_set_aside"] == 8  # batches 5 to 8 of each worker's first ten
    assert row["set_aside_median_ratio"] == 2
    assert dflt["samples_set_aside"] == 0
    # The kept samples are all fast: on the test's timer a fast softmax takes one 50 us tick, a
    # slow one 300 us more, so every kept sample's is 50 us, with no spread.
    sm = row["ops"]["softmax"]
    assert sm["mean_s"] == pytest.approx(50e-6) and sm["std_s"] == pytest.approx(0, abs=1e-12)
    assert row["figures_from"] == "kept samples"
    # The check: the largest share of a T's samples set aside, within the limit: the run kept
    # enough samples from the fast side of its readings.
    check = res["conditions"]["checks"]["slow_samples"]
    assert check["value"] == pytest.approx(8 / 20) and check["ok"] is True


def test_a_run_that_ran_slow_most_of_the_time_does_not_call_itself_quiet(tmp_path, monkeypatch):
    # Of each worker's ten samples only the first two run fast: eight slow. The canary's
    # readings around those two, 2 of its 11, are fast, and its reference (REFERENCE_QUANTILE
    # of them) lands on them: a process slow for all its life is slow_process's to catch.
    slow_spells(monkeypatch, lambda k: 2 < k <= 10)
    res = lab_run(tmp_path, monkeypatch)
    assert res["sweep"][0]["samples_set_aside"] == 16
    cond = res["conditions"]
    assert cond["verdict"] == "disturbed"
    failed = {f["check"]: f for f in cond["failed"]}
    assert failed["slow_samples"]["reason"].startswith(
        "the canary's exp kernel ran slow around 80% of the samples at T = 64 (limit 75%)")
    assert failed["slow_samples"]["do"] == "rerun later"


def test_a_reading_caught_by_an_interrupt_is_not_a_slow_spell():
    reference = {"exp": 40e-6, "blas": 60e-6}
    fast, spike = dict(reference), {"exp": 120e-6, "blas": 60e-6}
    slow = {"exp": 80e-6, "blas": 60e-6}
    batches = [{"canary_around": [fast, spike]}, {"canary_around": [spike, fast]},
               {"canary_around": [slow, slow]}]
    perf.mark_samples({"by_T": {"64": {"samples": batches[:2], "one_thread": batches[2:]}}},
                      reference)
    # One slow reading beside a fast one: the faster of the two counts, per kernel.
    assert [b["canary_ratio"] for b in batches[:2]] == [1.0, 1.0]
    # Both readings slow: set aside.
    assert batches[2]["canary_ratio"] == 2.0
    assert [b for b in batches if not perf.set_aside(b)] == batches[:2]


def test_a_batch_slow_on_the_BLAS_part_alone_is_kept():
    # A batch is judged on SAMPLE_KERNEL alone (set by hand: the BLAS kernel's reading may move with
    # the T just run): twice its reference on both sides, the exp kernel fast, it stays.
    reference = {"exp": 40e-6, "blas": 60e-6}
    after_blas = {"exp": 41e-6, "blas": 120e-6}
    batch = {"canary_around": [after_blas, after_blas]}
    perf.mark_samples({"by_T": {"64": {"samples": [batch], "one_thread": []}}}, reference)
    assert batch["canary_ratio"] == 41 / 40 and not perf.set_aside(batch)


def test_a_machine_without_cpufreq_whose_clock_falls_a_third_is_caught_by_the_canary(
        tmp_path, monkeypatch):
    # No cpufreq (a VM, macOS, Windows): after the first worker every core computes at two
    # thirds of its speed, for good. The canary's exp kernel takes 1.5 times as long from the
    # second worker on: a sustained fall, never set aside, failing clock_drop with its numbers.
    monkeypatch.setattr(perf, "SYSROOT", tmp_path / "no-sys")
    workers = []

    def make_canary():
        workers.append(1)
        factor = 1.5 if len(workers) > 2 else 1.0  # the default-heap worker, then worker 1, worker 2

        def read():
            return {kernel: factor * t for kernel, t in FAST.items()}  # a slower clock: both kernels slower
        first = read()
        return {"read": read, "readings": [first]}
    monkeypatch.setattr(perf, "make_canary", make_canary)
    monkeypatch.setattr(perf, "glibc_malloc", lambda: lambda *a: 1)
    res = lab_run(tmp_path / "out", monkeypatch)
    check = res["conditions"]["checks"]["clock_drop"]
    assert check["basis"] == "canary" and check["value"] == pytest.approx(1 / 3)
    reason = next(f["reason"] for f in res["conditions"]["failed"] if f["check"] == "clock_drop")
    assert reason.startswith("the canary's exp reading took 40.0 us in the first counted worker and "
                             "60.0 in the last and the canary's blas reading took 60.0 us in the first "
                             "counted worker and "
                             "90.0 in the last (speed -33%)")


def whole_worker(monkeypatch, factors):
    """Each worker's canary kernels, fixed for its life, as {kernel: factor} per worker in turn (the
    default-heap worker first): a slow period covering a whole worker, or a process's own state."""
    workers = []

    def make_canary():
        f = factors[len(workers)]
        workers.append(f)

        def read():
            return {kernel: f.get(kernel, 1.0) * t for kernel, t in FAST.items()}
        first = read()
        return {"read": read, "readings": [first]}
    monkeypatch.setattr(perf, "make_canary", make_canary)
    monkeypatch.setattr(perf, "glibc_malloc", lambda: lambda *a: 1)
    monkeypatch.setattr(perf, "cpufreq_MHz", lambda dirs: [])  # the clock read by the canary alone


def test_a_process_slow_for_its_whole_life_is_left_out_of_every_T_and_named(tmp_path,
                                                                           monkeypatch, capsys):
    # Worker 2 of three ran its whole life slow: its canary's BLAS kernel twice the others'. Its own
    # reference cannot see it (none of its samples is set aside); the processes' references side
    # by side do: it is left out of every T's figures, named, and the run stays quiet.
    whole_worker(monkeypatch, [{}, {}, {"blas": 2.0}, {}])
    res = lab_run(tmp_path, monkeypatch, ["--workers", "3", "--samples", "21"])
    assert all(r["samples_set_aside"] == 0 for r in res["sweep"])
    assert res["canary"]["left_out"] == {"worker 2": {"canary_kernel": "blas", "ratio": 2.0,
                                                    "other_ratio": 1.0}}
    assert all(r["processes"] == ["worker 1", "worker 3"] for r in res["sweep"])
    assert all(len(r["ops"]["softmax"]["process_estimates"]) == 2 for r in res["sweep"])
    # Quiet as far as the canary goes (the machine's own load, read for real, is not this test's).
    assert not {f["check"] for f in res["conditions"]["failed"]} & {
        "slow_process", "slow_samples", "clock_drop"}
    assert res["conditions"]["checks"]["slow_process"] == {
        "value": 0, "limit": 1, "ok": True}
    perf.report(res, tmp_path)
    assert "note: worker 2 left out: blas canary x2.0 the others' fast side; figures from 2 of 3" in \
        capsys.readouterr().out


def test_two_processes_each_slower_on_one_canary_kernel_are_no_clock_drop_and_none_left_out(
        tmp_path, monkeypatch):
    # Three workers; one's BLAS kernel x1.15 for its whole life, another's exp kernel
    # x1.3: neither the clock check nor the process rule
    # fires, no process is left out, and no sample is set aside (each process judged against its
    # own reference).
    whole_worker(monkeypatch, [{}, {}, {"blas": 1.15}, {"exp": 1.3}])
    res = lab_run(tmp_path, monkeypatch, ["--workers", "3", "--samples", "21"])
    checks = res["conditions"]["checks"]
    assert checks["clock_drop"]["ok"] is True and checks["slow_process"]["ok"] is True
    assert res["canary"]["left_out"] == {}
    assert all(r["samples_set_aside"] == 0 for r in res["sweep"])


def test_the_default_heap_worker_s_preemptions_count_in_the_verdict(tmp_path, monkeypatch):
    # The default-heap worker (the first) is preempted 10,000 times, the workers never: every
    # worker process is the run's, so the rate over all their sampling is far over the limit.
    switches = iter([0, 10_000] + [0] * 100)  # each worker reads it before and after it samples
    monkeypatch.setattr(perf, "preemptions", lambda: next(switches))
    res = lab_run(tmp_path, monkeypatch)
    assert res["conditions"]["checks"]["preemptions_per_s"]["ok"] is False
    assert res["worker_processes"][0]["preempted"] == 10_000


def test_a_run_slow_from_start_to_end_passes_every_canary_check(tmp_path, monkeypatch):
    # What the canary cannot see (the solution says so: run more than once): every worker process's
    # canary twice as slow as FAST, from the first reading to the last. Each sample is judged
    # against its own process's readings, each process against the others': nothing stands out.
    whole_worker(monkeypatch, [{"exp": 2.0, "blas": 2.0}] * 3)
    res = lab_run(tmp_path, monkeypatch)
    assert res["canary"]["left_out"] == {} and all(r["samples_set_aside"] == 0 for r in res["sweep"])
    checks = res["conditions"]["checks"]  # the others read the host, not the canary: not judged
    assert [checks[c]["ok"] for c in ("clock_drop", "slow_samples", "slow_process")] == [True] * 3
    # The same slowness in one worker alone stands out against the others: it is left out.
    whole_worker(monkeypatch, [{}, {}, {"exp": 2.0, "blas": 2.0}])
    assert list(lab_run(tmp_path, monkeypatch)["canary"]["left_out"]) == ["worker 2"]
