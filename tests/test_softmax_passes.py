"""Block E's why by hand: the softmax's passes compared with the same call in cache and with a
copy of the same bytes, each a median over the processes (no interval), and nothing read
from the sweep's times."""
import copy
import functools

import pytest

import perf


def counted(T=512, at=(4e-4, 5e-4, 6e-4, 7e-4, 8e-4), in_cache=2e-5, copy_s=2e-4, queries=64):
    """Five workers that timed the passes at T: every pass `at[i]` s a call at T in
    process i, `in_cache` s on `queries` queries (rows of S), `copy_s` for its bytes' copy."""
    out = []
    for a in at:
        rec = {"in_cache_queries": queries}
        rec.update({p: {"at_T": a, "in_cache": in_cache, "copy": copy_s}
                    for p in perf.PASSES})
        rec["exp_float64"] = {"in_cache": 2 * in_cache}
        out.append({"apart": {str(T): copy.deepcopy(rec)}})
    return out


def row(T=512, time_s=3e-3):
    return {"T": T, "ops": {"softmax": {"time_s": time_s}}}


def test_each_cost_is_the_median_over_the_processes():
    (e,) = perf.softmax_pass_comparisons([row()], counted(), 64, 4)
    n = 4 * 512 * 512  # elements of the (h, T, T) array
    exp = next(p for p in e["passes"] if p["pass"] == "exp")
    # At T: the median of 4..8e-4 s over n elements (comparisons: no interval is written).
    assert exp["ns_per_element"] == pytest.approx(6e-4 / n * 1e9)
    assert not [k for k in exp if k.endswith("_interval")]
    # In cache: 2e-5 s over 64 queries of 512; the copy: 2e-4 s over the n elements of the pass.
    assert exp["in_cache_ns_per_element"] == pytest.approx(2e-5 / (64 * 512) * 1e9)
    assert exp["copy_ns_per_element"] == pytest.approx(2e-4 / n * 1e9)
    assert e["process_count"] == 5 and e["in_cache_queries"] == 64
    # float64's exp in cache at twice float32's time: x2.
    assert e["exp_precision"]["float64_over_float32"] == pytest.approx(2.0)


def test_the_scaling_pass_is_each_process_s_scores_less_its_matmul_then_the_median():
    # Three processes timed scores at 512, one did not: their differences 2, 1 and 6e-5 s, the
    # median 2e-5 s (the median of the wholes less that of the matmuls: 1.2e-4 - 9e-5, 3e-5).
    timed = [(1.0e-4, 8e-5), (1.2e-4, 1.1e-4), (1.5e-4, 9e-5)]
    workers = [{"apart": {"512": {"scores": {"whole": w, "matmul": m}}}} for w, m in timed]
    got = perf.scores_scale_times([row(), row(T=256)], workers + [{"apart": {}}])
    assert [e["T"] for e in got] == [512] and got[0]["scale_s"] == pytest.approx(2e-5)


def test_the_comparisons_never_read_the_sweep_s_times():
    a = perf.softmax_pass_comparisons([row(time_s=3e-3)], counted(), 64, 4)[0]
    b = perf.softmax_pass_comparisons([row(time_s=9e-3)], counted(), 64, 4)[0]
    assert a["passes"] == b["passes"]
    assert b["sweep_softmax_ns_per_element"] == pytest.approx(3 * a["sweep_softmax_ns_per_element"])


def test_a_slow_spell_in_one_repeat_of_the_passes_does_not_reach_their_figures(monkeypatch):
    """Each call's figure is the fastest of its CALL_REPEATS batches, taken in turn with every
    other call's: a spell that slows exp's first batch ten times, or the last batch of each
    functools.partial (the copies, scores whole, float64's exp), leaves each call at the level of
    its other batches."""
    repeats = perf.CALL_REPEATS
    seen = {}

    def run_for(fn, min_time):  # one call per batch, 1 ms, but the spell's
        k = seen[fn] = seen.get(fn, 0) + 1
        spell = (fn is exp_at and k == 1) or (isinstance(fn, functools.partial) and k == repeats)
        return 1, (10e-3 if spell else 1e-3)

    monkeypatch.setattr(perf, "run_for", run_for)
    monkeypatch.setattr(perf, "FOCUS_T", 64)  # float64's exp timed here too
    mha = perf.init_mha(64, 4, 0)
    task = {"call_Ts": [64], "d_model": 64, "n_heads": 4, "seed": 0, "cache_budget_bytes": 1 << 20}
    real = perf.softmax_pass_calls
    exp_at = None

    def passes(S, mask):  # keep the at-T exp call to slow it
        nonlocal exp_at
        calls, data = real(S, mask)
        exp_at = exp_at or calls["exp"]
        return calls, data

    monkeypatch.setattr(perf, "softmax_pass_calls", passes)
    rec = perf.calls_at(64, task, mha)
    assert repeats >= 2 and all(seen[fn] == repeats for fn in seen)
    assert rec["exp"]["at_T"] == 1e-3 and {rec[p]["copy"] for p in perf.PASSES} == {1e-3}
    assert set(rec["scores"]) == {"whole", "matmul"} and rec["exp_float64"]["in_cache"] == 1e-3
