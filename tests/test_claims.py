"""Every claim of the write-up can fail: for each, some mutation of the committed run and its
reruns makes its predicate false: one fact of the runs changed, as a run could have come out, or
(where a claim ties two facts, as β and the classes) one changed and the other held, to show the
claim reads it.
A claim that no mutation here moves is a constant, or tests something its sentence does not say:
add the mutation its sentence invites, or rewrite the claim. A claim of the lab's formulas and
figures (bindings.ARITHMETIC) holds on every run: it fails where perf.py's formula or figure
changes, as FORMULA_CHANGES changes them."""
import copy
import functools
import json

import pytest

import bindings
import perf
from bindings import ARITHMETIC, CLAIMS
from conftest import EXP

RESULTS = json.loads((EXP / "results.json").read_text())
MANIFEST = json.loads((EXP / "manifest.json").read_text())
RERUNS = json.loads((EXP / "reruns.json").read_text())["runs"]


def each_rerun(edit):
    """A mutation that edits every rerun's summary (so that a claim over most runs moves too)."""
    return lambda r, m, runs: [edit(x) for x in runs]


def passes(edit):
    return each_rerun(lambda x: [edit(e) for e in x["softmax_passes"]])


def no_drift(r, m, runs):
    for i, x in enumerate(runs):  # β, the ridge and the forward alternate, whatever the time
        x["beta"], x["ridge"] = (30.0, 6.0) if i % 2 else (31.0, 6.2)
        x["forward_s"]["512"] = 0.003 if i % 2 else 0.0031


def processes_alike(r, m, runs):
    for x in runs:
        for ops in x["process_rsd"].values():
            for v in ops.values():
                v[0] = 0.0
    for row in r["sweep"]:
        for o in row["ops"].values():
            o["between_process_rsd"] = 0.0


MUTATIONS = {
    "another machine": lambda r, m, runs: r["hardware"].update(
        cpu_model="Intel(R) Core(TM) i5-8250U", virtualized=False, physical_cores=4, simd_flags=["AVX2"],
        numpy_softmax_kernels={**r["hardware"]["numpy_softmax_kernels"], "exp": "X86_V3"}),
    "another script": each_rerun(lambda x: x.update(perf_py_code_digest="0" * 64)),
    "av's class apart from scores'": each_rerun(lambda x: x["dram_bound"].update(av=["compute"] * 4)),
    "the softmax compute-bound once": each_rerun(lambda x: x["dram_bound"]["softmax"].__setitem__(0, "compute")),
    "a projection memory-bound once": each_rerun(lambda x: x["dram_bound"]["qkv_proj"].__setitem__(0, "memory")),
    "β from one thread": each_rerun(lambda x: x.update(beta_from="1thread")),
    "the bytes catch up": passes(lambda e: [p.update(copy_ns_per_element=p["ns_per_element"],
                                                     in_cache_ns_per_element=0.2 * p["ns_per_element"])
                                            for p in e["passes"].values()]),
    "the passes a sliver of the softmax": passes(lambda e: e.update(
        passes_ns_per_element=0.1 * e["sweep_softmax_ns_per_element"])),
    "sum the dearest pass": passes(lambda e: e["passes"]["sum"].update(ns_per_element=100.0)),
    "exp most of the passes": passes(lambda e: e["passes"]["exp"].update(
        ns_per_element=e["passes_ns_per_element"])),
    "the fused op short of the ridge": each_rerun(lambda x: x.update(phase_27_past_ridge=False)),
    "the softmax under L2's roof": lambda r, m, runs: runs[0]["softmax_at_T_512"].update(level="L2"),
    "an L3 smaller than the softmax": lambda r, m, runs: r["ceilings"]["levels"]["L3"].update(capacity_bytes=1 << 20),
    "the projections lead at T = 64": each_rerun(lambda x: (x.update(
        expected_observations_held=[True, True, True]), x["time_s"]["64"].update(softmax=0.0))),
    "the smallest op the softmax": each_rerun(lambda x: x.update(expected_observations_held=[False, True, False])),
    "another largest op": each_rerun(lambda x: x["dominant_op_per_T"].update({"64": "scores"})),
    "the scaling pass a sliver of the gap": each_rerun(lambda x: x["scores_scale_at_T_512"].update(scale_s=1e-7)),
    "one thread's gap as wide": each_rerun(lambda x: x["threads_at_T_512"].update(
        one_thread_s=dict(x["threads_at_T_512"]["all_threads_s"]))),
    "no faults": each_rerun(lambda x: [v.update(page_faults_per_forward=0.0) for v in x["default_heap"].values()]),
    "a few faults": each_rerun(lambda x: [v.update(page_faults_per_forward=10.0) for v in x["default_heap"].values()]),
    "the runs overlap": each_rerun(lambda x: x.update(ended=x["ended"] + 1000)),
    "no drift": no_drift,
    "few timer pairs": lambda r, m, runs: [x.update(timer_overhead_interval_coverage=0.5)
                                           for x in r["sweep"]],
    "the ridge against β": each_rerun(lambda x: x.update(ridge=x["beta"] / 5)),
    "a governor": lambda r, m, runs: r["hardware"].update(cpu_governor_at_run="performance"),
    "timers that cost": each_rerun(lambda x: x["timers"]["512"].__setitem__(0, 0.2)),
    "processes alike": processes_alike,
    "the two roofs swapped": each_rerun(lambda x: x["softmax_at_T_512"].update(
        ratio_to_memory_roof=2 * x["softmax_at_T_512"]["ratio_to_1thread_dram_copy"])),
    "the default heap as fast": each_rerun(lambda x: x["default_heap"]["512"].update(forward_s=x["forward_s"]["512"])),
    "eleven reruns": lambda r, m, runs: runs.pop(),
}



@functools.cache
def mutated(name):
    """The committed run and its reruns with one mutation made, once for every claim (the
    predicates only read them)."""
    r, m, runs = copy.deepcopy(RESULTS), copy.deepcopy(MANIFEST), copy.deepcopy(RERUNS)
    MUTATIONS[name](r, m, runs)
    return r, m, runs


def falls(holds, name):
    r, m, runs = mutated(name)
    bindings.use_reruns(runs)
    return not holds(r, m)  # a crash is no falsification: it errors the test


@pytest.mark.parametrize("name,phrase,holds", CLAIMS, ids=[f"{n}:{p[:40]}" for n, p, _ in CLAIMS])
def test_every_claim_fails_on_some_run_that_could_have_been(name, phrase, holds, reruns_restored):
    bindings.use_reruns(RERUNS)
    assert holds(RESULTS, MANIFEST)
    assert any(falls(holds, mutation) for mutation in MUTATIONS), phrase


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_every_mutation_falsifies_some_claim(mutation, reruns_restored):
    """A mutation no claim falls to guards nothing: its claim was reworded or went, so it goes."""
    def moves(holds):  # a claim that holds on the committed run and falls to the mutation
        bindings.use_reruns(RERUNS)
        return holds(RESULTS, MANIFEST) and falls(holds, mutation)
    assert any(moves(holds) for _, _, holds in CLAIMS), mutation


def counts_every_array_the_passes_touch(mp):
    cost = perf.op_cost
    mp.setattr(perf, "op_cost", lambda T, d, h: {**cost(T, d, h), "softmax": (
        cost(T, d, h)["softmax"][0], sum(perf.array_bytes(T, d, h, perf.PASS_ARRAYS).values()))})


FORMULA_CHANGES = {
    "a laptop of twice the bandwidth": lambda mp: mp.setattr(
        perf, "LAB_LAPTOP", {**perf.LAB_LAPTOP, "beta_GBps": [30, 38]}),
    "the lab's byte count the passes' own": counts_every_array_the_passes_touch,
    "Flash Attention writing S and A": lambda mp: mp.setattr(
        perf, "FLASH_ARRAYS", perf.FLASH_ARRAYS + ("S", "A")),
}


@pytest.mark.parametrize("name,phrase,holds", ARITHMETIC, ids=[f"{n}:{p[:40]}" for n, p, _ in ARITHMETIC])
def test_every_claim_of_the_formulas_fails_where_a_formula_or_figure_changes(name, phrase, holds,
                                                                             monkeypatch):
    assert holds(RESULTS, MANIFEST)
    falls = []
    for change in FORMULA_CHANGES.values():
        with monkeypatch.context() as mp:
            change(mp)
            falls.append(not holds(RESULTS, MANIFEST))
    assert any(falls), phrase
