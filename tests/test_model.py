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


@pytest.mark.parametrize("T,d,h", [(1, 64, 4), (64, 64, 4), (100, 64, 4), (37, 48, 3)])
def test_matches_float64_reference(T, d, h):
    x, mha = inputs(T, d, h)
    out = perf.attention_forward(x, mha)
    ref = reference_attention(x, mha.W_Q, mha.W_K, mha.W_V, mha.W_O, h)
    assert out.shape == (T, d) and out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_every_intermediate_stays_float32():
    x, mha = inputs(96)
    Q, K, V = perf.qkv_proj(x, mha)
    S = perf.scores(Q, K, mha.n_heads)
    A = perf.softmax(S, perf.causal_mask(96))
    O = perf.av(A, V, mha.n_heads)
    out = perf.out_proj(O, mha)
    assert [a.dtype for a in (Q, K, V, S, A, O, out)] == [np.float32] * 7
    assert S.shape == A.shape == (4, 96, 96) and O.shape == (4, 96, 16)
    np.testing.assert_allclose(A.sum(axis=-1), 1, rtol=1e-5)
    assert np.all(np.triu(A[0], 1) == 0)  # masked positions get exactly zero weight


def test_causal_future_tokens_do_not_change_the_past():
    x, mha = inputs(80)
    y = x.copy()
    y[50:] = np.random.default_rng(1).standard_normal((30, 64))
    a, b = perf.attention_forward(x, mha), perf.attention_forward(y, mha)
    np.testing.assert_array_equal(a[:50], b[:50])
    assert not np.allclose(a[50:], b[50:])


def test_weights_deterministic_from_seed():
    a, b, c = perf.init_mha(seed=0), perf.init_mha(seed=0), perf.init_mha(seed=1)
    assert all(w.dtype == np.float32 and w.shape == (64, 64) for w in (a.W_Q, a.W_K, a.W_V, a.W_O))
    np.testing.assert_array_equal(a.W_O, b.W_O)
    assert not np.array_equal(a.W_Q, c.W_Q)
    with pytest.raises(ValueError):
        perf.init_mha(64, 5)


def test_timed_forward_contract_and_same_output():
    x, mha = inputs(128)
    times, out = perf.attention_forward_timed(x, mha, return_output=True)
    assert set(times) == {"qkv_proj", "scores", "softmax", "av", "out_proj", "total"}
    assert all(isinstance(v, float) and v > 0 for v in times.values())
    assert math.isclose(sum(times[k] for k in perf.OPS), times["total"], rel_tol=1e-9)
    assert times["total"] < 10  # seconds, not nanoseconds
    np.testing.assert_array_equal(out, perf.attention_forward(x, mha))
    assert set(perf.attention_forward_timed(x, mha)) == set(times)


def test_softmax_anatomy_mirrors_softmax():
    mha = perf.init_mha()
    a = perf.softmax_anatomy(64, mha, seed=0, min_time=1e-4, repeats=2)
    assert list(a["steps"]) == ["mask_add", "max", "subtract", "exp", "sum", "divide"]
    big = 4 * 64 * 64 * 4
    assert a["steps"]["exp"]["bytes"] == 2 * big and a["steps"]["max"]["bytes"] == big
    assert a["bytes_lab_model"] == 4 * 8 * 64**2
    assert math.isclose(sum(s["share"] for s in a["steps"].values()), 1)
