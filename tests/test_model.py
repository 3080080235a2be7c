"""The naive attention against an independent float64 reference, and its timed twin."""
import math

import numpy as np
import pytest

import perf


def reference_attention(x, W_Q, W_K, W_V, W_O, h):
    """Causal MHA in float64, one head at a time, with an explicit masked softmax."""
    x, W_Q, W_K, W_V, W_O = (a.astype(np.float64) for a in (x, W_Q, W_K, W_V, W_O))
    T, d = x.shape
    d_k = d // h
    Q, K, V = x @ W_Q, x @ W_K, x @ W_V
    heads = []
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)
        out = np.zeros((T, d_k))
        for t in range(T):  # row t attends to positions 0..t only
            s = Q[t, cols] @ K[: t + 1, cols].T / math.sqrt(d_k)
            p = np.exp(s - s.max())
            out[t] = (p / p.sum()) @ V[: t + 1, cols]
        heads.append(out)
    return np.concatenate(heads, axis=1) @ W_O


def inputs(T, d=64, h=4, seed=0):
    mha = perf.init_mha(d, h, seed)
    x = np.random.default_rng(T).standard_normal((T, d)).astype(np.float32)
    return x, mha


def forward_by_op(x, mha, forward=perf.attention_forward):
    """One real forward, op by op: {op: (the arguments it was called with, what it returned)} for
    every op of perf.OPS, in the order the forward ran them, however many there are."""
    seen = {}
    with pytest.MonkeyPatch.context() as m:
        for op in perf.OPS:
            def record(*args, op=op, real=getattr(perf, op)):
                seen[op] = (args, real(*args))
                return seen[op][1]
            m.setattr(perf, op, record)
        out = forward(x, mha)
    assert list(seen) == list(perf.OPS)
    if forward is perf.attention_forward:  # the forward returns out_proj's result
        assert seen["out_proj"][1] is out
    else:  # the timed one, the lab's dict of seconds: every op's and the total
        assert list(out) == [*perf.OPS, "total"] and all(v > 0 for v in out.values())
    return seen


def test_intermediates_hands_back_the_arrays_the_ops_made_by_the_lab_s_names():
    """calls_at takes its Q, K and S from intermediates: each the array its op returned in that
    forward."""
    x, mha = inputs(96)
    made, ops = perf.attention_forward(x, mha, intermediates=True), forward_by_op(x, mha)
    by_op = dict(zip("QKV", ops["qkv_proj"][1]), S=ops["scores"][1], A=ops["softmax"][1],
                 O=ops["av"][1], out=ops["out_proj"][1])
    assert list(made) == list(by_op)
    for name, arr in by_op.items():
        np.testing.assert_allclose(made[name], arr, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("T,d,h", [(1, 64, 4), (64, 64, 4), (100, 64, 4), (37, 48, 3)])
def test_matches_float64_reference(T, d, h):
    x, mha = inputs(T, d, h)
    out = perf.attention_forward(x, mha)
    ref = reference_attention(x, mha.W_Q, mha.W_K, mha.W_V, mha.W_O, h)
    assert out.shape == (T, d) and out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_every_intermediate_stays_float32():
    ops = forward_by_op(*inputs(96))
    made = {op: [a.dtype for a in (out if isinstance(out, tuple) else (out,))]
            for op, (_, out) in ops.items()}
    assert made["qkv_proj"] == [np.float32] * 3  # Q, K, V
    assert made == {op: [np.float32] * len(made[op]) for op in perf.OPS}
    S, A, O = (ops[op][1] for op in ("scores", "softmax", "av"))
    assert S.shape == A.shape == (4, 96, 96) and O.shape == (4, 96, 16)
    np.testing.assert_allclose(A.sum(axis=-1), 1, rtol=1e-5)
    assert np.all(np.triu(A[0], 1) == 0)  # masked positions get exactly zero weight


def test_causal_future_tokens_do_not_change_the_past():
    x, mha = inputs(80)
    y = x.copy()
    y[50:] = np.random.default_rng(1).standard_normal((30, 64))
    a, b = perf.attention_forward(x, mha), perf.attention_forward(y, mha)
    np.testing.assert_allclose(a[:50], b[:50], rtol=1e-5, atol=1e-6)  # a BLAS may block rows apart
    assert not np.allclose(a[50:], b[50:])


def test_every_op_is_a_projection_or_a_T2_op_as_its_FLOPs_grow():
    # expected_observations splits each T's time into PROJECTIONS and T2_OPS (the T² ops): the two
    # shares make the whole only if every op of OPS is one or the other, and none both; and each
    # op's class is how its FLOPs grow (op_cost's, the lab's formulas): x2 from T = 64 to 128 for a
    # projection, x4 for a T² op.
    assert sorted(perf.PROJECTIONS + perf.T2_OPS) == sorted(perf.OPS)
    flops = lambda T: {op: f for op, (f, _) in perf.op_cost(T, 64, 4).items()}  # noqa: E731
    growth = {op: flops(128)[op] / flops(64)[op] for op in perf.OPS}
    assert growth == {**dict.fromkeys(perf.PROJECTIONS, 2.0), **dict.fromkeys(perf.T2_OPS, 4.0)}


def test_weights_deterministic_from_seed():
    a, b, c = perf.init_mha(seed=0), perf.init_mha(seed=0), perf.init_mha(seed=1)
    assert all(w.dtype == np.float32 and w.shape == (64, 64) for w in (a.W_Q, a.W_K, a.W_V, a.W_O))
    np.testing.assert_array_equal(a.W_O, b.W_O)
    assert not np.array_equal(a.W_Q, c.W_Q)
    with pytest.raises(ValueError):
        perf.init_mha(64, 5)


def test_timed_forward_contract_and_same_output():
    x, mha = inputs(128)
    times = perf.attention_forward_timed(x, mha)
    # The lab's contract, spelled as the lab spells it.
    assert tuple(times) == ("qkv_proj", "scores", "softmax", "av", "out_proj", "total")
    # The same ops, fed and making the same numbers, as the plain forward (to rounding: a BLAS may
    # take another path for buffers at other addresses).
    timed, plain = forward_by_op(x, mha, perf.attention_forward_timed), forward_by_op(x, mha)
    def leaves(v):  # an op's arguments and result, tuples (Q, K, V; the MHA) opened
        return [a for item in v for a in leaves(item)] if isinstance(v, tuple) else [v]
    for op in perf.OPS:
        for got, want in zip(leaves(timed[op]), leaves(plain[op]), strict=True):
            if isinstance(want, np.ndarray):
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=op)
            else:
                assert got == want, op


@pytest.mark.parametrize("slow", perf.OPS)
def test_each_timer_wraps_its_own_op(monkeypatch, slow):
    """On a clock that moves only inside one op (30 ms): that op and the total take the 30 ms,
    no other op any of it; no wall-clock time is read."""
    real, clock = getattr(perf, slow), [0]

    def slowed(*args):
        clock[0] += 30_000_000
        return real(*args)
    monkeypatch.setattr(perf, slow, slowed)
    monkeypatch.setattr(perf.time, "perf_counter_ns", lambda: clock[0])
    x, mha = inputs(64)
    times = perf.attention_forward_timed(x, mha)
    assert times == pytest.approx({k: 0.03 if k in (slow, "total") else 0.0 for k in perf.OPS + ("total",)})


def test_the_byte_model_weighs_the_forward_s_real_arrays():
    x, mha = inputs(64)
    ops = forward_by_op(x, mha)
    (Q, K, V), S, A, O, out = (ops[op][1] for op in ("qkv_proj", "scores", "softmax", "av",
                                                      "out_proj"))
    real = {"x": x, "W": mha.W_O, "Q": Q, "K": K, "V": V, "S": S, "mask": perf.causal_mask(64),
            "A": A, "O": O, "out": out}
    model = perf.forward_arrays(64, 64, 4)
    assert {k: v.nbytes for k, v in real.items()} == {k: model[k] for k in real}
    # By hand, T = d = 64, h = 4: (T, d) 16 KiB, (h, T, T) 64 KiB, (T, T) 16 KiB, (h, T, 1) 1 KiB.
    assert (model["Q"], model["S"], model["mask"], model["m"]) == (16384, 65536, 16384, 1024)


def test_the_scaling_and_passes_mirror_the_ops_and_count_their_bytes():
    # scores whole, its matmul scaled by hand, and the softmax's passes, run in turn, make the
    # forward's own S and A, and the arrays they make weigh what forward_arrays says: if softmax()
    # or scores() changed and the calls did not, or the byte model did not, this goes red. Each
    # takes what its op took.
    ops = forward_by_op(*inputs(64))
    calls, S = perf.scores_calls(*ops["scores"][0]), ops["scores"][1]
    for got in (calls["scores", "whole"](), calls["scores", "matmul"]() / 4.0):  # sqrt(d_k) = 4
        np.testing.assert_allclose(got, S, rtol=1e-6)  # a BLAS: equal to rounding
    calls, data = perf.softmax_pass_calls(*ops["softmax"][0])
    Z, m, D, E, s = (data[k] for k in "ZmDEs")
    assert list(calls) == list(perf.PASSES)
    np.testing.assert_array_equal(E / s, ops["softmax"][1])
    np.testing.assert_array_equal(calls["divide"](), ops["softmax"][1])
    model = perf.forward_arrays(64, 64, 4)
    assert {k: v.nbytes for k, v in dict(Z=Z, m=m, D=D, E=E, s=s).items()} == {
        k: model[k] for k in "ZmDEs"}
    big, mask_b, row, qk = 65536, 16384, 1024, 16384  # (h, T, T), (T, T), (h, T, 1), (T, d) bytes
    n = perf.array_bytes(64, 64, 4)
    assert n["scores/matmul"] == 2 * qk + big  # Q and K read, Q K^T written
    by_hand = {"mask_add": 2 * big + mask_b, "max": big + row, "subtract": 2 * big + row,
               "exp": 2 * big, "sum": big + row, "divide": 2 * big + row}  # each pass by its name
    assert {p: n[f"softmax/{p}"] for p in perf.PASSES} == {p: by_hand[p] for p in perf.PASSES}
