"""qrita.sample / top_k_top_p_probs / candidates: library round trips, agreement with the
reference, routing of GPU arrays, and every validation error (docs/sampling.md)."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

import qrita
from qrita.backends import ArrayInfo, _numpy, adapter_for
from qrita.reference import sampling as ref

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="no torch")
needs_jax = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None
    or importlib.util.find_spec("qrita.backends._jax") is None,
    reason="no jax",
)


@pytest.fixture
def logits() -> np.ndarray:
    return np.random.default_rng(1).normal(size=(6, 20)).astype(np.float32)


def test_exports():
    for name in ("sample", "top_k_top_p_probs", "candidates", "Candidates"):
        assert hasattr(qrita, name)


def test_numpy_matches_reference(logits):
    seeds = np.arange(6, dtype=np.int64) * 1000
    offs = np.array([0, 1, 2, 3, 4, 2**40], dtype=np.int64)
    k = np.array([0, 1, 3, 5, 20, 7], dtype=np.int32)
    p = np.array([1.0, 0.5, 0.9, 0.2, 0.7, 0.95], dtype=np.float32)
    t = np.array([1.0, 0.5, 0.0, 2.0, 1.3, 0.8], dtype=np.float32)
    m = np.array([0.0, 0.1, 0.2, 0.3, 0.05, 0.5], dtype=np.float32)
    tok, lp = qrita.sample(
        logits, k=k, p=p, min_p=m, temperature=t, seed=seeds, offset=offs, return_logprob=True
    )
    want_tok, want_lp = ref.sample(
        logits, k, p, min_p=m, temperature=t, seed=seeds, offset=offs, return_logprob=True
    )
    assert tok.dtype == np.int64 and tok.shape == (6,)
    assert lp.dtype == np.float32
    np.testing.assert_array_equal(tok, want_tok)
    np.testing.assert_array_equal(lp, want_lp)
    assert tok[2] == np.argmax(logits[2])  # temperature 0
    probs = qrita.top_k_top_p_probs(logits, k, p, temperature=t, min_p=m)
    np.testing.assert_array_equal(probs, ref.probs(logits, k, p, min_p=m, temperature=t))
    assert probs.dtype == np.float32 and probs.shape == logits.shape
    assert np.all(probs[np.arange(6), tok] > 0)
    np.testing.assert_allclose(lp, np.log(probs[np.arange(6), tok]), rtol=1e-6)
    c = qrita.candidates(logits, k, p, temperature=t, min_p=m, max_candidates=4)
    assert isinstance(c, qrita.Candidates) and c.indices.shape == (6, 4)
    want = ref.candidates(logits, k, p, min_p=m, temperature=t, max_candidates=4)
    for a, b in zip(c, want):
        np.testing.assert_array_equal(a, b)


def test_scalars_broadcast_and_1d(logits):
    row = logits[0]
    tok = qrita.sample(row, k=5, p=0.9, seed=3, offset=8)
    assert isinstance(tok, np.ndarray) and tok.shape == () and tok.dtype == np.int64
    batch = qrita.sample(logits, k=5, p=0.9, seed=3, offset=8)
    assert int(tok) == int(batch[0])
    tok, lp = qrita.sample(row.astype(np.float64), seed=3, return_logprob=True)
    assert lp.dtype == np.float64 and lp.shape == ()
    assert qrita.top_k_top_p_probs(row.astype(np.float64)).dtype == np.float64
    c = qrita.candidates(row, 3)
    assert c.indices.shape == (20,) and c.counts.shape == () and int(c.counts) == 3
    assert qrita.sample(row, temperature=0) == np.argmax(row)


def test_defaults_offset_zero_and_fresh_seeds():
    x = np.zeros((64, 1000), dtype=np.float32)
    assert int(qrita.sample(x[0], seed=5)) == int(qrita.sample(x[0], seed=5, offset=0))
    same = qrita.sample(x, seed=5)  # scalar seed and offset: one uniform for every row
    assert np.all(same == same[0])
    fresh = qrita.sample(x)  # seed=None: a fresh seed per row
    assert len(set(fresh.tolist())) > 1
    assert fresh.min() >= 0 and fresh.max() < 1000


def test_batch_invariance_through_the_api():
    rng = np.random.default_rng(2)
    row = rng.normal(size=100).astype(np.float32)
    batch = rng.normal(size=(256, 100)).astype(np.float32)
    batch[200] = row
    seeds = rng.integers(0, 2**63, size=256)
    offs = rng.integers(0, 2**63, size=256)
    seeds[200], offs[200] = 42, 77
    got = qrita.sample(batch, p=0.8, seed=seeds, offset=offs)
    assert int(got[200]) == int(qrita.sample(row, p=0.8, seed=42, offset=77))
    assert np.array_equal(got, qrita.sample(batch, p=0.8, seed=seeds, offset=offs))


@needs_torch
def test_torch_round_trip(logits):
    import torch

    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
        t = torch.from_numpy(logits).to(dtype)
        a = adapter_for(t).to_numpy(t)
        seeds = torch.arange(6, dtype=torch.int64)
        tok, lp = qrita.sample(
            t, k=4, p=torch.full((6,), 0.9), seed=seeds, offset=3, return_logprob=True
        )
        assert isinstance(tok, torch.Tensor) and tok.dtype == torch.int64 and tok.shape == (6,)
        want_lp = torch.float64 if dtype == torch.float64 else torch.float32
        assert lp.dtype == want_lp
        want = ref.sample(a, 4, np.full(6, 0.9), seed=np.arange(6), offset=3)
        assert tok.tolist() == want.tolist()
        probs = qrita.top_k_top_p_probs(t, 4, None, temperature=0.7)
        assert isinstance(probs, torch.Tensor) and probs.dtype == want_lp
        c = qrita.candidates(t, 4)
        assert c.indices.dtype == torch.int64 and c.probs.dtype == want_lp
    assert qrita.sample(torch.from_numpy(logits[0]), seed=1).shape == ()


@needs_jax
def test_jax_round_trip(logits):
    import jax
    import jax.numpy as jnp

    cpu = jax.devices("cpu")[0]
    x = jax.device_put(jnp.asarray(logits), cpu)
    tok, lp = qrita.sample(x, k=3, seed=jax.device_put(jnp.arange(6), cpu), return_logprob=True)
    assert isinstance(tok, jax.Array) and tok.shape == (6,)
    assert np.asarray(tok).tolist() == ref.sample(logits, 3, seed=np.arange(6)).tolist()
    assert lp.dtype == jnp.float32
    assert qrita.top_k_top_p_probs(x, 3).dtype == jnp.float32


@needs_jax
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_jax_jit_matches_the_reference(logits, dtype):
    """Inside jax.jit (CPU: the reference through pure_callback) every sampling function gives
    what the eager reference gives, with static and traced per-row parameters."""
    import jax
    import jax.numpy as jnp

    cpu = jax.devices("cpu")[0]
    x = jax.device_put(jnp.asarray(logits).astype(dtype), cpu)
    a = np.asarray(x.astype(jnp.float32))
    k_rows = jnp.array([1, 2, 3, 6, 0, 4])
    p_rows = jnp.array([0.5, 0.9, 1.0, 0.3, 0.99, 0.0], jnp.float32)
    temp_rows = jnp.array([1.0, 0.7, 0.0, 2.0, 1.0, 0.5], jnp.float32)
    seeds = jnp.arange(6) * 7 + 1

    @jax.jit
    def staged(x, k, p, t, seed):
        tok, lp = qrita.sample(x, k=k, p=p, temperature=t, min_p=0.05, seed=seed, offset=5,
                               return_logprob=True)
        probs = qrita.top_k_top_p_probs(x, k, p, temperature=t, min_p=0.05)
        c = qrita.candidates(x, k, p, temperature=t, min_p=0.05, max_candidates=4)
        return tok, lp, probs, c.indices, c.probs, c.counts

    tok, lp, probs, ci, cp, cn = staged(x, k_rows, p_rows, temp_rows, seeds)
    kw = dict(min_p=0.05, temperature=np.asarray(temp_rows, np.float64))
    k_np, p_np = np.asarray(k_rows), np.asarray(p_rows, np.float64)
    want_tok, want_lp = ref.sample(a, k_np, p_np, seed=np.asarray(seeds).astype(np.uint64),
                                   offset=5, return_logprob=True, **kw)
    assert np.asarray(tok).tolist() == want_tok.tolist()
    np.testing.assert_array_equal(np.asarray(lp), want_lp.astype(np.float32))
    # tokens only (no log-probabilities computed): the same tokens
    tok_only = jax.jit(lambda x, k, p, t, s: qrita.sample(
        x, k=k, p=p, temperature=t, min_p=0.05, seed=s, offset=5))(x, k_rows, p_rows, temp_rows,
                                                                      seeds)
    assert np.asarray(tok_only).tolist() == want_tok.tolist()
    np.testing.assert_array_equal(np.asarray(probs), ref.probs(a, k_np, p_np, **kw))
    want_c = ref.candidates(a, k_np, p_np, max_candidates=4, **kw)
    assert np.asarray(ci).tolist() == want_c.indices.tolist()
    np.testing.assert_array_equal(np.asarray(cp), want_c.probs.astype(np.float32))
    assert np.asarray(cn).tolist() == want_c.counts.tolist()
    assert tok.dtype == ci.dtype == cn.dtype and lp.dtype == cp.dtype == probs.dtype
    # static parameters and (V,) rows: shapes as in eager
    one = jax.jit(lambda r: qrita.sample(r, k=3, seed=9))(x[2])
    assert one.shape == () and int(one) == int(ref.sample(a[2], 3, seed=9))
    c1 = jax.jit(lambda r: qrita.candidates(r, 3))(x[2])
    assert c1.indices.shape == (a.shape[1],) and c1.counts.shape == ()
    # seed=None: a fresh seed at every execution, not one frozen at trace time
    fresh = jax.jit(lambda r: qrita.sample(r))
    draws = {tuple(np.asarray(fresh(x)).tolist()) for _ in range(8)}
    assert len(draws) > 1


@needs_jax
def test_jax_jit_under_vmap(logits):
    """jax.vmap over a stack of (B, V) blocks inside jit: each block as the eager reference."""
    import jax
    import jax.numpy as jnp

    stack = np.stack([logits, logits[::-1] * 0.5, logits + 1.0]).astype(np.float32)
    x = jax.device_put(jnp.asarray(stack), jax.devices("cpu")[0])
    tokens = jax.jit(jax.vmap(lambda r: qrita.sample(r, k=5, p=0.9, seed=3)))(x)
    probs = jax.jit(jax.vmap(lambda r: qrita.top_k_top_p_probs(r, 5, 0.9)))(x)
    for i, block in enumerate(stack):
        assert np.asarray(tokens[i]).tolist() == ref.sample(block, 5, 0.9, seed=3).tolist()
        np.testing.assert_array_equal(np.asarray(probs[i]), ref.probs(block, 5, 0.9))


CALLS = [
    lambda x: qrita.sample(x, seed=0),
    lambda x: qrita.top_k_top_p_probs(x),
    lambda x: qrita.candidates(x),
]
CALL_IDS = ["sample", "top_k_top_p_probs", "candidates"]


class _Routed(Exception):
    pass


def _describe_on_gpu(x):
    return ArrayInfo("numpy", tuple(x.shape), x.dtype.name, "cuda:0", True, True)


@needs_torch
@pytest.mark.parametrize("call", CALLS, ids=CALL_IDS)
def test_gpu_arrays_take_the_gpu_sampler(monkeypatch, logits, call):
    """GPU arrays go to qrita.backends.triton.sampling_ops (replaced here by a stub that records
    the call), never to the host reference."""
    from qrita import _sampling_api

    seen = []

    class Stub:
        def __getattr__(self, name):
            def fn(x, *args, **kwargs):
                seen.append((name, tuple(x.shape)))
                raise _Routed

            return fn

    monkeypatch.setattr(_numpy, "describe", _describe_on_gpu)
    monkeypatch.setattr(_sampling_api, "_load_gpu", lambda: Stub())
    monkeypatch.setattr(ref, "sample", None)  # the reference must not run
    with pytest.raises(_Routed):
        call(logits)
    assert len(seen) == 1 and seen[0][1] == logits.shape
    with pytest.raises(_Routed):
        call(logits[0])
    assert seen[1][1] == (1, logits.shape[1])


@pytest.mark.parametrize("call", CALLS, ids=CALL_IDS)
def test_gpu_arrays_without_the_kernels_take_the_reference(monkeypatch, logits, call):
    """Without Triton (the sampler cannot be imported) GPU arrays fall back to the reference."""
    from qrita import _sampling_api

    monkeypatch.setattr(_numpy, "describe", _describe_on_gpu)
    monkeypatch.setattr(_sampling_api, "_load_gpu", lambda: None)
    got = call(logits)
    monkeypatch.undo()
    want = call(logits)
    for a, b in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple)
                    else [want]):
        np.testing.assert_array_equal(a, b)


ERRORS = [
    (
        dict(logits=np.zeros((2, 2, 2), np.float32)),
        ValueError,
        "logits must have shape (V,) or (B, V)",
    ),
    (dict(logits=np.zeros((2, 0), np.float32)), ValueError, "non-empty last axis"),
    (dict(logits=np.zeros((2, 3), np.int32)), TypeError, "logits must have a floating dtype"),
    (
        dict(logits=[1.0, 2.0]),
        TypeError,
        "logits must be a numpy, torch, cupy or jax array, got list",
    ),
    (dict(k=2.0), TypeError, "k must be an integer"),
    (dict(k=np.zeros(3, np.int64)), ValueError, "k array must have shape (2,)"),
    (dict(p="0.5"), TypeError, "p must be a real number"),
    (dict(p=np.zeros(2, np.int64)), TypeError, "p array must have a floating dtype"),
    (
        dict(temperature=-0.5),
        ValueError,
        "temperature must be a finite number >= 0 (0 means greedy), got -0.5",
    ),
    (dict(temperature=float("nan")), ValueError, "temperature must be a finite number >= 0"),
    (dict(temperature=float("inf")), ValueError, "temperature must be a finite number >= 0"),
    (dict(temperature=True), TypeError, "temperature must be a real number"),
    (dict(temperature=1j), TypeError, "temperature must be a real number"),
    (
        dict(temperature=np.ones(3, np.float32)),
        ValueError,
        "temperature array must have shape (2,)",
    ),
    (
        dict(temperature=np.ones(2, np.int32)),
        TypeError,
        "temperature array must have a floating dtype, got dtype int32",
    ),
    (dict(temperature="hot"), TypeError, "temperature must be a real number"),
    (dict(min_p="x"), TypeError, "min_p must be a real number"),
    (dict(min_p=np.ones((2, 1), np.float32)), ValueError, "min_p array must have shape (2,)"),
]
SAMPLE_ERRORS = [
    (dict(seed=-1), ValueError, "seed must satisfy 0 <= seed < 2**64, got -1"),
    (dict(seed=2**64), ValueError, "seed must satisfy 0 <= seed < 2**64, got 18446744073709551616"),
    (dict(seed=1.5), TypeError, "seed must be an integer"),
    (dict(seed=True), TypeError, "seed must be an integer"),
    (dict(seed=np.zeros(2, np.float32)), TypeError, "seed array must have an integer dtype"),
    (dict(seed=np.zeros(5, np.int64)), ValueError, "seed array must have shape (2,)"),
    (dict(offset=-3), ValueError, "offset must satisfy 0 <= offset < 2**64, got -3"),
    (dict(offset="0"), TypeError, "offset must be an integer"),
    (dict(return_logprob=1), TypeError, "return_logprob must be a bool, got 1 (int)"),
]


@pytest.mark.parametrize("kwargs,exc,msg", ERRORS + SAMPLE_ERRORS)
def test_sample_errors(kwargs, exc, msg):
    kwargs = dict(kwargs)
    x = kwargs.pop("logits", np.zeros((2, 4), np.float32))
    with pytest.raises(exc, match=re.escape(msg)):
        qrita.sample(x, **kwargs)


@pytest.mark.parametrize("kwargs,exc,msg", ERRORS)
@pytest.mark.parametrize("fn", [qrita.top_k_top_p_probs, qrita.candidates])
def test_probs_and_candidates_errors(fn, kwargs, exc, msg):
    kwargs = dict(kwargs)
    x = kwargs.pop("logits", np.zeros((2, 4), np.float32))
    k, p = kwargs.pop("k", None), kwargs.pop("p", None)
    with pytest.raises(exc, match=re.escape(msg)):
        fn(x, k, p, **kwargs)


@pytest.mark.parametrize(
    "value,exc,msg",
    [
        (0, ValueError, "max_candidates must be >= 1, got 0"),
        (-2, ValueError, "max_candidates must be >= 1, got -2"),
        (2.0, TypeError, "max_candidates must be None or an integer, got 2.0 (float)"),
        (True, TypeError, "max_candidates must be None or an integer"),
    ],
)
def test_max_candidates_errors(value, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        qrita.candidates(np.zeros((2, 4), np.float32), max_candidates=value)


@needs_torch
def test_mixed_libraries_and_1d_arrays():
    import torch

    x = np.zeros((2, 4), np.float32)
    with pytest.raises(TypeError, match="seed is a torch array but logits is a numpy array"):
        qrita.sample(x, seed=torch.zeros(2, dtype=torch.int64))
    with pytest.raises(TypeError, match="temperature is a numpy array but logits is a torch array"):
        qrita.sample(torch.zeros(2, 4), temperature=np.ones(2, np.float32))
    # 1-D logits take (1,) or () per-row arrays
    tok = qrita.sample(np.zeros(4, np.float32), seed=np.array([3]), offset=np.array(2))
    assert int(tok) == int(qrita.sample(np.zeros(4, np.float32), seed=3, offset=2))


def test_sample_draws_by_rejection_where_top_k_is_off():
    """docs/sampling.md, "Which draw": on NumPy and CPU torch arrays ``sample`` takes the
    rejection draw for the rows whose top-k is off (scalar and per-row temperatures, min-p,
    with or without log-probabilities) and the rank-order draw where top-k is on (per row too)
    or the logits are float64."""
    rng = np.random.default_rng(5)
    x = rng.normal(0, 2, size=(40, 64)).astype(np.float32)
    seeds = np.arange(40, dtype=np.uint64) + 3
    want = ref.sample_topp_rejection(x, 0.8, temperature=0.7, seed=seeds, offset=2)
    assert np.array_equal(qrita.sample(x, p=0.8, temperature=0.7, seed=seeds, offset=2), want)
    assert np.array_equal(qrita.sample(x, k=64, p=0.8, temperature=0.7, seed=seeds, offset=2),
                          want)
    rank = ref.sample_with_uniforms(x, ref.uniforms(seeds, 2), None, 0.8, temperature=0.7)
    assert not np.array_equal(want, rank)  # the two draws differ: the routing is visible
    assert np.array_equal(qrita.sample(x, p=0.8, min_p=0.1, seed=seeds),
                          ref.sample_topp_rejection(x, 0.8, min_p=0.1, seed=seeds))
    temps = np.linspace(0.0, 2.0, 40)
    assert np.array_equal(qrita.sample(x, p=0.8, temperature=temps, seed=seeds),
                          ref.sample_topp_rejection(x, 0.8, temperature=temps, seed=seeds))
    ks = np.where(np.arange(40) % 2 == 0, 0, 10)
    mixed = qrita.sample(x, k=ks, p=0.8, seed=seeds)
    alone = ref.sample_topp_rejection(x, 0.8, seed=seeds)
    topk = ref.sample_with_uniforms(x, ref.uniforms(seeds, 0), 10, 0.8)
    assert np.array_equal(mixed, np.where(ks == 0, alone, topk))
    tok, lp = qrita.sample(x, p=0.8, seed=seeds, return_logprob=True)
    assert np.array_equal(tok, alone)
    pr = ref.probs(x, None, 0.8)
    np.testing.assert_allclose(lp, np.log(pr[np.arange(40), tok]), rtol=1e-6)
    x64 = x.astype(np.float64)
    assert np.array_equal(qrita.sample(x64, p=0.8, seed=seeds),
                          ref.sample_with_uniforms(x64, ref.uniforms(seeds, 0), None, 0.8))
    torch = pytest.importorskip("torch")
    got = qrita.sample(torch.from_numpy(x), p=0.8, seed=torch.from_numpy(seeds.view(np.int64)))
    assert isinstance(got, torch.Tensor)
    assert np.array_equal(got.numpy(), alone)
