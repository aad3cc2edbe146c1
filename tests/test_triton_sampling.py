"""The GPU sampling path (qrita/backends/triton/sampling_ops.py, philox.py) against the NumPy
reference (qrita/reference/sampling.py), as docs/sampling.md "What an implementation must match"
allows: tokens compared exactly (full arrays) except where the documented 1e-6 margins apply,
probabilities and candidates compared too.

On a CPU-only machine the Triton kernels run under the interpreter (TRITON_INTERPRET=1) on CPU
torch tensors with small shapes; on a GPU the same tests run compiled, and the ``gpu`` tests add
real vocabularies, large batches, reproducibility, batch invariance, CUDA-graph capture and a
support test over many draws.
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import pytest
from _triton_env import DEVICE, ON_GPU, torch  # first: sets up triton

import qrita  # noqa: E402
from qrita.backends import _torch  # noqa: E402
from qrita.backends.triton import launch as launch_mod  # noqa: E402
from qrita.backends.triton import philox  # noqa: E402
from qrita.backends.triton import sampling_ops as so  # noqa: E402
from qrita.reference import sampling as ref  # noqa: E402
from qrita.testing import compare, generators  # noqa: E402

TORCH_DTYPES = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
}
INF, NAN = math.inf, math.nan
TOP_U = 1.0 - 2.0**-24  # the largest uniform


def _dev(x: np.ndarray, dtype: str) -> torch.Tensor:
    """Logits on the test device (a copy: torch.from_numpy would share the caller's array)."""
    return torch.from_numpy(np.array(x, copy=True)).to(DEVICE).to(TORCH_DTYPES[dtype])


def _arg(v):
    if isinstance(v, np.ndarray):
        return torch.from_numpy(np.array(v, copy=True)).to(DEVICE)
    return v


def _host(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy().copy()


def _as_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 logits on the dtype's grid, as the reference sees them (bfloat16 as float32)."""
    return generators.to_dtype(x, dtype)


def run_and_check(x, dtype, u, k=None, p=None, *, min_p=None, temperature=None,
                  max_candidates=None):
    """sample_with_distribution on the device against the reference; returns the result."""
    x = _as_dtype(x, dtype)
    xt = _dev(x, dtype)
    u = np.asarray(u, dtype=np.float32)
    res = so.sample_with_distribution(
        xt, _arg(u), _arg(k), _arg(p), min_p=_arg(min_p), temperature=_arg(temperature),
        max_candidates=max_candidates,
    )
    B, V = x.shape
    out = torch.float64 if dtype == "float64" else torch.float32
    assert res.tokens.dtype == torch.int64 and res.tokens.shape == (B,)
    assert res.logprobs.dtype == out and res.logprobs.shape == (B,)
    assert res.probs.dtype == out and res.probs.shape == (B, V)
    width = V if max_candidates is None else max_candidates
    assert res.candidates.indices.shape == (B, width) and res.candidates.indices.dtype == torch.int64
    assert res.candidates.probs.shape == (B, width) and res.candidates.probs.dtype == out
    assert res.candidates.counts.shape == (B,) and res.candidates.counts.dtype == torch.int64
    compare.assert_sampling_matches(
        x, u.astype(np.float64), k, p, min_p=min_p, temperature=temperature,
        tokens=_host(res.tokens), logprobs=_host(res.logprobs), probs=_host(res.probs),
        candidates=tuple(_host(a) for a in res.candidates),
    )
    return res


def _grid_uniforms(rng: np.random.Generator, n: int) -> np.ndarray:
    """Uniforms on Philox's 2**-24 grid, including 0 and the largest value."""
    u = np.floor(rng.random(n) * 2**24) / 2**24
    u[: min(n, 2)] = [0.0, TOP_U][: min(n, 2)]
    return u.astype(np.float32)


def _cycle(values, n, shift=0, dtype=np.float64):
    return np.array([values[(i + shift) % len(values)] for i in range(n)], dtype=dtype)


def _stacked_families(V: int, dtype: str, seed: int) -> np.ndarray:
    """Every generator family at V, stacked into one (B, V) float32 batch (B about 38)."""
    rng = np.random.default_rng([V, seed])
    return np.concatenate([b for _, b in generators._family_batches(V, rng)])


def _k_cycle(V):
    return [0, 1, 2, V - 1, V, V + 5, 50, 3, -1]


P_CYCLE = [1.0, 0.0, 1e-9, 0.5, 0.9, 1.0 - 1e-7, NAN, 0.3, 0.99, 0.75, -1.0]
MIN_P_CYCLE = [0.0, NAN, 0.05, 0.5, 1.0, 2.0, -1.0, 1e-9]
# greedy (0, NaN, negative), tiny / large / extreme (overflow, underflow, inf) temperatures
T_CYCLE = [1.0, 0.0, 0.7, 2.0, 1e-3, 50.0, NAN, -1.0, 1.0, 1e-30, 1e30, 3.0, 1e-300, INF, 0.25]


def _per_row_params(V, B, shift):
    return dict(
        k=_cycle(_k_cycle(V), B, shift, np.int64),
        p=_cycle(P_CYCLE, B, 2 * shift),
        min_p=_cycle(MIN_P_CYCLE, B, 3 * shift),
        temperature=_cycle(T_CYCLE, B, 5 * shift),
    )


# ------------------------------------------------------------------------------ the uniforms
def test_uniforms_match_the_reference_bit_for_bit():
    rng = np.random.default_rng(0)
    n = 257
    seeds = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)
    offs = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)
    seeds[:6] = [0, 1, 0, 12345678901234, -1, -(2**63)]
    offs[:6] = [0, 0, 1, 2**32 + 5, -1, 2**32 - 1]
    got = philox.uniforms(_arg(seeds), _arg(offs), n, DEVICE)
    assert got.dtype == torch.float32 and got.shape == (n,)
    np.testing.assert_array_equal(_host(got).astype(np.float64), ref.uniforms(seeds, offs))
    # Python ints up to 2**64 - 1, broadcast scalars, other integer dtypes
    for seed, off in [(0, 0), (2**64 - 1, 2**64 - 1), (2**63, 7), (12345678901234, 2**32 + 5)]:
        got = _host(philox.uniforms(seed, off, 3, DEVICE)).astype(np.float64)
        np.testing.assert_array_equal(got, np.full(3, ref.uniforms(seed, off)))
    got = philox.uniforms(99, torch.arange(5, dtype=torch.int32, device=DEVICE), 5, DEVICE)
    np.testing.assert_array_equal(_host(got), ref.uniforms(99, np.arange(5)).astype(np.float32))
    neg = torch.tensor([-1, -5], dtype=torch.int32, device=DEVICE)
    got = _host(philox.uniforms(neg, None, 2, DEVICE)).astype(np.float64)
    np.testing.assert_array_equal(got, ref.uniforms(np.array([2**64 - 1, 2**64 - 5], np.uint64), 0))


def test_fresh_seeds_are_fresh_and_on_the_grid():
    a = _host(philox.uniforms(None, 0, 64, DEVICE)).astype(np.float64)
    b = _host(philox.uniforms(None, 0, 64, DEVICE)).astype(np.float64)
    assert len(set(a.tolist())) > 32 and not np.array_equal(a, b)
    assert a.min() >= 0 and a.max() < 1 and np.all(a * 2**24 == np.floor(a * 2**24))


# ------------------------------------------------------------------------------ against the reference
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("V", [1, 2, 7])
def test_every_family_per_row_parameters(V, dtype):
    """All generator families stacked, each row with its own k / p / min_p / temperature / u."""
    shift = {"float32": 0, "bfloat16": 1, "float16": 2}[dtype] + V
    x = _stacked_families(V, dtype, 1)
    B = x.shape[0]
    u = _grid_uniforms(np.random.default_rng([V, shift]), B)
    run_and_check(x, dtype, u, **_per_row_params(V, B, shift))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_every_family_scalar_temperature_one(dtype):
    """Temperature None: the two-call path where the kernel's order is the reference's."""
    V = 64
    x = _stacked_families(V, dtype, 2)
    B = x.shape[0]
    params = _per_row_params(V, B, 7)
    u = _grid_uniforms(np.random.default_rng(V), B)
    run_and_check(x, dtype, u, params["k"], params["p"], min_p=params["min_p"])


@pytest.mark.parametrize(
    "k,p,min_p,temperature",
    [
        (None, None, None, None),
        (1, None, None, None),
        (0, 0.0, None, 0.5),
        (5, 0.9, None, None),
        (None, 1e-9, 0.1, 2.0),
        (100, 1.0 - 1e-7, None, 1.0),
        (None, None, 0.5, 1e-4),
        (3, 0.5, 2.0, 7.0),
        (None, NAN, NAN, 0.0),
    ],
)
def test_scalar_parameters(k, p, min_p, temperature):
    rng = np.random.default_rng(3)
    V = 17
    x = np.concatenate([
        generators.gaussian_logits(1, V, 2.0, rng),
        generators.quantised(generators.gaussian_logits(1, V, 2.0, rng), 3),
        generators.inject_nan(generators.grammar_rows(1, V, 0.5, rng), 0.2, rng),
        generators.inject_posinf(generators.gaussian_logits(1, V, 2.0, rng), 2, rng),
    ])
    run_and_check(x, "float32", _grid_uniforms(rng, 4), k, p, min_p=min_p, temperature=temperature)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_odd_vocab_1023(dtype):
    rng = np.random.default_rng(1023)
    V = 1023
    x = np.concatenate([
        generators.zipf_logits(1, V, 1.1, rng),
        generators.tied_boundary_rows(1, V, 50, 7, rng),
        generators.quantised(generators.gaussian_logits(1, V, 2.0, rng), 8),
        generators.inject_nan(generators.inject_posinf(generators.grammar_rows(1, V, 0.5, rng), 2,
                                                       rng), 0.05, rng),
    ])
    u = _grid_uniforms(rng, 4)
    k = np.array([50, 0, 1022, 3], dtype=np.int64)
    p = np.array([0.9, 0.5, 1.0 - 1e-7, NAN])
    min_p = np.array([NAN, 0.01, 0.0, 0.2])
    t = np.array([0.8, 1.0, 1.5, 1e-3])
    run_and_check(x, dtype, u, k, p, min_p=min_p, temperature=t)
    run_and_check(x, dtype, u[::-1].copy(), 50, 0.9)


def test_float64_sort_path_every_family():
    """float64 logits take the exact sort path (the mask kernel is float32 / 16-bit)."""
    for V in (1, 2, 3, 7, 64, 1023):
        for shift in range(3):
            x = _stacked_families(V, "float32", shift).astype(np.float64)
            x[::5] *= 1.0 + 1e-12  # values float32 cannot tell apart
            B = x.shape[0]
            u = _grid_uniforms(np.random.default_rng([V, shift]), B)
            run_and_check(x, "float64", u, **_per_row_params(V, B, shift))
            run_and_check(x, "float64", u, 5, 0.8, min_p=0.1, temperature=None)


# ------------------------------------------------------------------------------ special cases
def test_float32_scaling_merges_are_ranked_by_the_logits():
    """(x / t - max) rounded to float32 merges neighbouring logits; the rank must still follow
    the logits (a merged pair broken by index would keep the wrong entry at a top-k boundary or
    draw the wrong one of the two)."""
    t = 3.0
    for j in range(64):  # two adjacent float32 logits whose scaled, shifted values merge
        a = np.float32(-3.0 - j * 2.0**-20)
        a_up = np.nextafter(a, np.float32(0.0))
        x = np.array([[10.0, a, a_up, -20.0], [10.0, a_up, a, -20.0]], dtype=np.float32)
        s = x.astype(np.float64) / t
        merged = (s - s.max(axis=1, keepdims=True)).astype(np.float32)
        if merged[0, 1] == merged[0, 2]:
            break
    assert merged[0, 1] == merged[0, 2] and s[0, 1] < s[0, 2]  # the kernel sees a tie
    res = run_and_check(x, "float32", np.array([TOP_U, TOP_U]), 2, None, temperature=t)
    assert _host(res.candidates.counts).tolist() == [2, 2]
    assert _host(res.candidates.indices)[:, :2].tolist() == [[0, 2], [0, 1]]
    assert _host(res.tokens).tolist() == [2, 1]
    res = run_and_check(x, "float32", np.array([TOP_U, 0.99]), 3, None, temperature=t)
    assert _host(res.candidates.indices)[:, :3].tolist() == [[0, 2, 1], [0, 1, 2]]
    tok = so.sample_with_uniforms(_dev(x, "float32"), TOP_U, 2, None, temperature=t)
    assert _host(tok).tolist() == [2, 1]


def test_greedy_rows():
    x = np.array([
        [1.0, 3.0, 3.0, NAN],
        [NAN, 2.0, 2.0, 0.0],
        [NAN, NAN, NAN, NAN],
        [-INF, NAN, -INF, NAN],
        [-0.0, 0.0, -1.0, -2.0],
        [1.0, INF, INF, 0.0],
    ], dtype=np.float32)
    want = [1, 1, 0, 0, 0, 1]
    for t in (0.0, np.zeros(6), np.array([0.0, -1.0, NAN, 0.0, -0.0, NAN])):
        for u in (0.0, 0.5, TOP_U):
            res = run_and_check(x, "float32", np.full(6, u), 1, 0.5, min_p=0.5, temperature=t)
            assert _host(res.tokens).tolist() == want
            assert np.all(_host(res.logprobs) == 0)
    tok = so.sample_with_uniforms(_dev(x, "float32"), 0.3, temperature=0.0)
    assert _host(tok).tolist() == want


def test_edge_rows():
    x = np.array([
        [-INF, -INF, -INF, -INF],  # undefined mass: the first entry of the order
        [NAN, NAN, NAN, NAN],
        [NAN, -INF, NAN, -INF],
        [1.0, INF, 0.0, INF],  # +inf entries share the mass
        [2.0, 2.0, 2.0, 2.0],  # all equal: uniform
        [NAN, 1.0, -INF, 0.0],
    ], dtype=np.float32)
    for u in (0.0, 0.3, 0.49, 0.5, 0.6, TOP_U):
        for dtype in ("float32", "float64"):
            res = run_and_check(x, dtype, np.full(6, u))
            tok = _host(res.tokens)
            assert tok[:3].tolist() == [0, 0, 1] and np.all(_host(res.logprobs)[:3] == 0)
            assert tok[3] in (1, 3) and tok[5] in (1, 3)
    res = run_and_check(x, "float32", np.full(6, 0.25), 2, 0.4, min_p=1e-3)
    assert _host(res.candidates.counts).tolist() == [2, 2, 2, 1, 1, 1]


def test_min_p_edges():
    x = np.log(np.array([[1.0, 3.0, 2.0, 4.0]] * 6))  # ratio to the max: .25 .75 .5 1
    min_p = np.array([0.5, 0.25, 1.0, 5.0, NAN, -1.0])
    for dtype in ("float32", "float64"):
        res = run_and_check(x, dtype, np.full(6, 0.999), min_p=min_p)
        want = ref.candidates(_as_dtype(x, dtype), min_p=min_p).counts
        assert _host(res.candidates.counts).tolist() == want.tolist()
    assert want.tolist() == [3, 4, 1, 1, 4, 4]  # float64: the exact ratios
    y = np.array([[1.0, -INF, NAN], [1.0, -INF, NAN]])
    res = run_and_check(y, "float32", np.full(2, TOP_U), min_p=np.array([1e-9, 0.0]))
    assert _host(res.candidates.counts).tolist() == [1, 3]
    assert _host(res.tokens).tolist() == [0, 0]


def test_uniform_extremes_walk_the_rank_order():
    x = np.log(np.array([[1.0, 3.0, 2.0, 4.0]]))  # rank order 3, 1, 2, 0; cumulative .4 .7 .9 1
    for u, want in [(0.0, 3), (0.39, 3), (0.41, 1), (0.69, 1), (0.71, 2), (0.89, 2), (0.91, 0),
                    (TOP_U, 0)]:
        for dtype in ("float32", "float16", "float64"):
            res = run_and_check(x, dtype, np.array([u]))
            assert int(_host(res.tokens)[0]) == want, (u, dtype)


def test_zero_probability_entries_are_never_drawn():
    # -inf / NaN kept (min-p off) and a weight that underflows float64: never the token
    x = np.array([[0.0, -INF, NAN, -2000.0, 1.0, -INF]], dtype=np.float32)
    for u in (0.0, 0.5, 0.99, TOP_U):
        for dtype in ("float32", "float64"):
            res = run_and_check(x, dtype, np.array([u]))
            assert int(_host(res.tokens)[0]) in (0, 4)


def test_max_candidates_cut_and_pad():
    rng = np.random.default_rng(9)
    x = np.concatenate([generators.gaussian_logits(2, 9, 2.0, rng), generators.all_equal_rows(1, 9)])
    for width in (1, 3, 9, 20):
        for dtype in ("float32", "float64"):
            c = so.candidates(_dev(x, dtype), None, 0.95, temperature=0.8, max_candidates=width)
            want = ref.candidates(x.astype(np.float64 if dtype == "float64" else np.float32),
                                  None, 0.95, temperature=0.8, max_candidates=width)
            np.testing.assert_array_equal(_host(c.indices), want.indices)
            np.testing.assert_array_equal(_host(c.counts), want.counts)
            np.testing.assert_allclose(_host(c.probs), want.probs, rtol=1e-6, atol=1e-37)
    with pytest.raises(ValueError, match="max_candidates must be >= 1"):
        so.candidates(_dev(x, "float32"), max_candidates=0)


def test_public_functions_agree_with_each_other():
    rng = np.random.default_rng(10)
    V = 33
    x = np.concatenate([generators.zipf_logits(2, V, 1.1, rng),
                        generators.inject_nan(generators.gaussian_logits(1, V, 2.0, rng), 0.2, rng)])
    xt = _dev(x, "float32")
    kw = dict(min_p=0.02, temperature=torch.tensor([0.5, 1.0, 2.0], device=DEVICE))
    u = torch.from_numpy(_grid_uniforms(rng, 3)).to(DEVICE)
    full = so.sample_with_distribution(xt, u, 8, 0.9, **kw)
    tok, lp = so.sample_with_uniforms(xt, u, 8, 0.9, return_logprob=True, **kw)
    assert torch.equal(tok, full.tokens)
    np.testing.assert_allclose(_host(lp), _host(full.logprobs), rtol=1e-6)
    assert torch.equal(so.sample_with_uniforms(xt, u, 8, 0.9, **kw), tok)
    probs = so.top_k_top_p_probs(xt, 8, 0.9, **kw)
    assert torch.equal(probs, full.probs)
    c = so.candidates(xt, 8, 0.9, **kw)
    for a, b in zip(c, full.candidates):
        assert torch.equal(a, b)
    keep = so.keep_mask(xt, 8, 0.9, **kw)
    want = ref.keep_mask(x, 8, 0.9, min_p=0.02, temperature=np.array([0.5, 1.0, 2.0]))
    np.testing.assert_array_equal(_host(keep), want)
    assert bool((probs.gather(-1, tok[:, None]) > 0).all())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_seeded_sample_matches_the_reference(dtype):
    """seed / offset -> Philox uniforms -> tokens and log-probabilities, as ref.sample, for rows
    whose top-k is on (the rank-order draw; top-k-off rows: tests/test_triton_reject_topp.py)."""
    rng = np.random.default_rng(11)
    V = 40
    x = _as_dtype(np.concatenate([generators.zipf_logits(2, V, 1.1, rng),
                                  generators.quantised(generators.gaussian_logits(2, V, 2.0, rng),
                                                       4)]), dtype)
    seeds = np.array([0, 2**63 + 5, 12345, 2**64 - 1], dtype=np.uint64)
    offs = np.array([0, 1, 2**40, 7], dtype=np.uint64)
    k, p, t = np.array([1, 10, 3, 20]), np.array([0.9, 1.0, 0.5, 0.8]), np.array([1.0, 0.6, 2.0, 0.0])
    xt = _dev(x, dtype)
    tok, lp = so.sample(xt, _arg(k), _arg(p), temperature=_arg(t), min_p=0.05,
                        seed=torch.from_numpy(seeds.view(np.int64)).to(DEVICE),
                        offset=torch.from_numpy(offs.view(np.int64)).to(DEVICE),
                        return_logprob=True)
    u = ref.uniforms(seeds, offs)
    compare.assert_sampling_matches(x, u, k, p, min_p=0.05, temperature=t, tokens=_host(tok),
                                    logprobs=_host(lp))
    # scalars: every row the same uniform
    tok = so.sample(xt, 5, None, seed=2**64 - 1, offset=3)
    compare.assert_sampling_matches(x, ref.uniforms(2**64 - 1, 3), 5, None, tokens=_host(tok))
    # seed=None: fresh, still inside the kept set
    tok = _host(so.sample(xt, 5, None))
    kept = ref.keep_mask(x, 5, None)
    assert kept[np.arange(4), tok].all()


def test_row_sum_is_the_float64_sum():
    rng = np.random.default_rng(12)
    w = rng.random((3, 2500))
    got = _host(so._row_sum(torch.from_numpy(w).to(DEVICE)))
    np.testing.assert_allclose(got, w.sum(axis=1), rtol=1e-14)


_COMPILE = """
from qrita.backends.triton import aot, philox, sampling_ops
for target in aot.TARGETS.values():
    for seed_mode in (0, 1, 2):  # one seed, per-row seeds, fresh seeds
        for scalar in ("i32", "i64"):  # Triton types a small Python int as i32
            aot._compile(philox._uniform_kernel, {
                "seed_ptr": "*i64", "offset_ptr": "*i64", "n": "i32", "seed_scalar": scalar,
                "offset_scalar": scalar, "seed_stride": "i32", "offset_stride": "i32",
                "out_ptr": "*fp32"},
                dict(SEED_MODE=seed_mode, OFFSET_ARRAY=seed_mode == 1, BLOCK=128), target, 4)
    aot._compile(sampling_ops._row_sum_kernel, {
        "x_ptr": "*fp64", "out_ptr": "*fp64", "V": "i32", "stride": "i64"},
        dict(BLOCK=1024), target, 4)
    print("built", target)
"""


def test_sampling_kernels_compile_for_nvidia_and_amd():
    """The Philox and row-sum kernels build for sm90, sm100, gfx942 and gfx950 without a GPU."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", _COMPILE], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.count("built") == 4, proc.stdout


# ------------------------------------------------------------------------------ the comparison helper
def test_comparison_helper_fails_on_wrong_results():
    x = np.log(np.array([[1.0, 3.0, 2.0, 4.0]]))
    u = np.array([0.5])
    tok, lp = ref.sample_with_uniforms(x, u, return_logprob=True)
    probs = ref.probs(x)
    cand = ref.candidates(x)
    compare.assert_sampling_matches(x, u, tokens=tok, logprobs=lp, probs=probs, candidates=cand)
    with pytest.raises(AssertionError, match="token 3"):
        compare.assert_sampling_matches(x, u, tokens=np.array([3]))
    with pytest.raises(AssertionError, match="logprob"):
        compare.assert_sampling_matches(x, u, tokens=tok, logprobs=lp + 1e-3)
    with pytest.raises(AssertionError, match="probs differ"):
        compare.assert_sampling_matches(x, u, tokens=tok, probs=probs * 1.001)
    bad = ref.candidates(x, 3)
    with pytest.raises(AssertionError, match="kept 3 entries"):
        compare.assert_sampling_matches(x, u, tokens=tok, candidates=bad)
    swapped = (bad.indices[:, [1, 0, 2, 3]], bad.probs, bad.counts)
    with pytest.raises(AssertionError, match="not the first"):
        compare.assert_sampling_matches(x, u, 3, tokens=tok, candidates=swapped)
    # u * c_last on a cumulative boundary (0.7): either neighbour is accepted
    compare.assert_sampling_matches(x, np.array([0.7]), tokens=np.array([1]))
    compare.assert_sampling_matches(x, np.array([0.7]), tokens=np.array([2]))


# ------------------------------------------------------------------------------ the public API
def test_public_api_routes_gpu_arrays_to_the_triton_path(monkeypatch):
    """A GPU tensor goes to sampling_ops (here a CPU tensor described as on a GPU: the kernels run
    under the interpreter) and gives the reference's answer in the caller's shapes."""
    if ON_GPU:
        pytest.skip("the GPU tests below call the public API with real CUDA tensors")
    describe = _torch.describe

    def on_gpu(x):
        return dataclasses.replace(describe(x), on_gpu=True)

    calls = []
    for name in ("sample", "top_k_top_p_probs", "candidates"):
        real = getattr(so, name)

        def spy(*a, _real=real, _name=name, **kw):
            calls.append(_name)
            return _real(*a, **kw)

        monkeypatch.setattr(so, name, spy)
    monkeypatch.setattr(_torch, "describe", on_gpu)
    rng = np.random.default_rng(13)
    x = rng.normal(size=(3, 12)).astype(np.float32)
    xt = torch.from_numpy(x)
    seeds = torch.tensor([1, 2, 3])
    tok, lp = qrita.sample(xt, k=4, p=torch.tensor([0.9, 0.5, 1.0]), seed=seeds, offset=5,
                           temperature=0.7, return_logprob=True)
    want_tok, want_lp = ref.sample(x, 4, np.array([0.9, 0.5, 1.0]), seed=np.array([1, 2, 3]),
                                   offset=5, temperature=0.7, return_logprob=True)
    assert tok.dtype == torch.int64 and tok.tolist() == want_tok.tolist()
    np.testing.assert_allclose(lp.numpy(), want_lp, rtol=1e-6)
    one = qrita.sample(xt[0], k=4, seed=1, offset=5)
    assert one.shape == () and int(one) == int(ref.sample(x[0], 4, seed=1, offset=5))
    probs = qrita.top_k_top_p_probs(xt[0], 4, None, temperature=0.7)
    assert probs.shape == (12,) and probs.dtype == torch.float32
    np.testing.assert_allclose(probs.numpy(), ref.probs(x[0], 4, temperature=0.7), rtol=1e-6)
    c = qrita.candidates(xt[0], 4, max_candidates=6)
    want = ref.candidates(x[0], 4, max_candidates=6)
    assert c.indices.tolist() == want.indices.tolist() and c.counts.shape == ()
    assert int(c.counts) == 4
    assert calls == ["sample", "sample", "top_k_top_p_probs", "candidates"]


# ------------------------------------------------------------------------------ GPU only
GPU_V = 131072


def _gpu_rows(B: int, rng: np.random.Generator) -> np.ndarray:
    x = generators.zipf_logits(B, GPU_V, 1.1, rng)
    x[1::3] = generators.gaussian_logits(len(x[1::3]), GPU_V, 2.0, rng)
    x[2::7] = generators.quantised(x[2::7], 16)
    return x


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("B", [1, 64, 1024])
def test_gpu_real_shapes(B, dtype):
    rng = np.random.default_rng(B)
    x = _as_dtype(_gpu_rows(B, rng), dtype)
    xt = _dev(x, dtype)
    rows = np.sort(rng.choice(B, size=min(B, 24), replace=False))
    sel = torch.from_numpy(rows).to(DEVICE)
    u = _grid_uniforms(rng, B)
    for k, p, min_p, t in [(50, None, None, None), (None, 0.9, None, 0.8), (100, 0.95, 0.05, 1.2),
                           (None, None, 0.1, None), (1000, 0.99, None, 0.5),
                           (None, 0.9, None, None), (None, None, None, 2.0)]:
        res = so.sample_with_distribution(xt, _arg(u), k, p, min_p=min_p, temperature=t)
        compare.assert_sampling_matches(
            x[rows], u[rows].astype(np.float64), k, p, min_p=min_p, temperature=t,
            tokens=_host(res.tokens[sel]), logprobs=_host(res.logprobs[sel]),
            probs=_host(res.probs[sel]),
            candidates=tuple(_host(a[sel]) for a in res.candidates),
        )
        # sample_with_uniforms takes the fused samplers where they apply: the same contract
        tok, logp = so.sample_with_uniforms(xt, _arg(u), k, p, min_p=min_p, temperature=t,
                                            return_logprob=True)
        compare.assert_sampling_matches(
            x[rows], u[rows].astype(np.float64), k, p, min_p=min_p, temperature=t,
            tokens=_host(tok[sel]), logprobs=_host(logp[sel]))


@pytest.mark.gpu
def test_gpu_per_row_parameters_real_vocab():
    rng = np.random.default_rng(21)
    B = 64
    x = _gpu_rows(B, rng)
    params = _per_row_params(GPU_V, B, 3)
    u = _grid_uniforms(rng, B)
    run_and_check(x, "float32", u, **params)


@pytest.mark.gpu
def test_gpu_reproducible():
    rng = np.random.default_rng(22)
    B = 256
    xt = _dev(_gpu_rows(B, rng), "float32")
    seeds = torch.arange(B, device="cuda") * 7919
    offs = torch.full((B,), 12, device="cuda")
    kw = dict(min_p=0.02, temperature=0.9, seed=seeds, offset=offs, return_logprob=True)
    first, first_lp = so.sample(xt, 50, 0.9, **kw)
    for _ in range(9):
        tok, lp = so.sample(xt, 50, 0.9, **kw)
        assert torch.equal(tok, first)
        assert torch.equal(lp.view(torch.int32), first_lp.view(torch.int32))
    p1 = so.top_k_top_p_probs(xt, 50, 0.9, temperature=0.9)
    assert torch.equal(p1.view(torch.int32), so.top_k_top_p_probs(xt, 50, 0.9,
                                                                   temperature=0.9).view(torch.int32))


@pytest.mark.gpu
def test_gpu_batch_invariant():
    rng = np.random.default_rng(23)
    B = 256
    big = _dev(_gpu_rows(B, rng), "float32")
    seeds = torch.randint(0, 2**62, (B,), device="cuda")
    offs = torch.randint(0, 2**40, (B,), device="cuda")
    k = torch.randint(0, 200, (B,), device="cuda")
    p = torch.rand(B, device="cuda")
    t = torch.rand(B, device="cuda", dtype=torch.float64) * 2
    kw = dict(temperature=t, min_p=0.01)
    tok, lp = so.sample(big, k, p, seed=seeds, offset=offs, return_logprob=True, **kw)
    for row in [0, 17, 128, 255]:
        alone, alone_lp = so.sample(big[row:row + 1].clone(), k[row:row + 1], p[row:row + 1],
                                    seed=seeds[row:row + 1], offset=offs[row:row + 1],
                                    return_logprob=True, temperature=t[row:row + 1], min_p=0.01)
        assert int(alone[0]) == int(tok[row])
        assert torch.equal(alone_lp[0:1].view(torch.int32), lp[row:row + 1].view(torch.int32))
        for pos in (0, 100, 255):
            perm = torch.arange(B, device="cuda")
            perm[pos], perm[row] = row, pos
            moved = so.sample(big[perm], k[perm], p[perm], seed=seeds[perm], offset=offs[perm],
                              temperature=t[perm], min_p=0.01)
            assert int(moved[pos]) == int(tok[row])


def _sampling_kernels():
    """Every sampling kernel that takes a seed, an offset or a float64 bit pattern as a Python
    int, with the names of those parameters."""
    from qrita.backends.triton import fused_sample, fused_topp, reject_split, reject_topp

    counters = ("seed_scalar", "offset_scalar")
    bits = ("p_bits", "min_p_bits")
    return [
        (philox._uniform_kernel, counters),
        (reject_topp.reject_topp_sample_kernel, counters + bits),
        (reject_split.reject_split_stats_kernel, counters + bits + ("groups_per_program",)),
        (reject_split.reject_split_check_kernel,
         counters + bits + ("groups_per_program", "phase")),
        (fused_sample.fused_topk_sample_kernel, ("t_bits",) + bits),
        (fused_sample.selection_sample_kernel, ("t_bits",) + bits),
        (fused_topp.fused_topp_sample_kernel, ("t_bits", "p_bits")),
    ]


def test_sampling_scalars_are_not_specialized():
    """Seeds, offsets and parameters that change from call to call (a decode loop's offset, a
    request's seed) must not pick new compiled kernels: Triton would specialise a Python int on
    == 1 and % 16, compiling up to three variants per value class of each (seconds each on a
    GPU). Listed in ``do_not_specialize``, they are keyed on their type only (i32 / i64 / u64:
    see tests/test_fastlaunch.py)."""
    for kernel, names in _sampling_kernels():
        if hasattr(kernel, "params"):  # compiled mode
            unspecialized = {param.name for param in kernel.params if param.do_not_specialize}
        else:  # the interpreter's wrapper keeps the decorator's arguments
            unspecialized = set(kernel.kwargs.get("do_not_specialize") or ())
        assert set(names) <= unspecialized, (kernel.fn.__name__, set(names) - unspecialized)


def _compiled_kernels(kernel) -> int:
    """Kernels Triton holds compiled for ``kernel`` (Triton 3.6 - 3.9: ``device_caches``)."""
    return sum(len(cache[0]) for cache in kernel.device_caches.values())


@pytest.mark.gpu
def test_gpu_no_compile_per_seed_offset_or_p():
    """A decode loop's offsets (0, 1, 2, 16, ...), other seeds in the same int32 range, and
    other p / min_p / temperature values reuse the kernels the first call compiled."""
    rng = np.random.default_rng(31)
    B, V = 4, 32000
    x = _dev(generators.zipf_logits(B, V, 1.1, rng), "float32")
    calls = [dict(p=0.9), dict(k=50, p=0.9, temperature=0.7), dict(p=0.9, min_p=0.05)]
    for kw in calls:
        so.sample(x, seed=3, offset=2, **kw)
    torch.cuda.synchronize()
    before = {k.fn.__name__: _compiled_kernels(k) for k, _ in _sampling_kernels()}
    for seed, offset, p, t, min_p in [(16, 0, 0.5, 1.3, 0.01), (1, 1, 0.75, 0.5, 0.2),
                                      (17, 16, 0.95, 0.9, 0.5), (2**31 - 1, 33, 0.25, 1.0, 0.1)]:
        so.sample(x, p=p, seed=seed, offset=offset)
        so.sample(x, k=50, p=p, temperature=t, seed=seed, offset=offset)
        so.sample(x, p=p, min_p=min_p, seed=seed, offset=offset)
    torch.cuda.synchronize()
    after = {k.fn.__name__: _compiled_kernels(k) for k, _ in _sampling_kernels()}
    assert after == before


@pytest.mark.gpu
def test_gpu_cuda_graph_capture_and_replay():
    rng = np.random.default_rng(24)
    B, V = 64, 128256
    x = _dev(generators.zipf_logits(B, V, 1.1, rng), "float32")
    k = torch.full((B,), 50, dtype=torch.int64, device="cuda")
    p = torch.full((B,), 0.9, dtype=torch.float32, device="cuda")
    t = torch.full((B,), 0.8, dtype=torch.float32, device="cuda")
    seeds = torch.arange(B, device="cuda")
    offs = torch.zeros(B, dtype=torch.int64, device="cuda")
    kw = dict(temperature=t, min_p=0.01, seed=seeds, offset=offs, return_logprob=True)
    so.sample(x, k, p, **kw)  # compile outside the capture
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        tok, lp = so.sample(x, k, p, **kw)
    torch.cuda.current_stream().wait_stream(stream)
    fresh = generators.gaussian_logits(B, V, 2.0, rng)
    x.copy_(torch.from_numpy(fresh))
    offs.fill_(41)
    k.fill_(20)
    graph.replay()
    torch.cuda.synchronize()
    u = ref.uniforms(np.arange(B), 41)
    p32, t32 = float(np.float32(0.9)), float(np.float32(0.8))  # the tensors' values
    compare.assert_sampling_matches(fresh, u, 20, p32, min_p=0.01, temperature=t32,
                                    tokens=_host(tok), logprobs=_host(lp))
    eager = so.sample(x, k, p, **kw)
    assert torch.equal(eager[0], tok)


@pytest.mark.gpu
def test_gpu_support_and_fit_over_many_draws():
    """Many draws of a few rows never leave the kept set and follow the distribution."""
    from scipy.stats import chisquare

    rng = np.random.default_rng(25)
    V, n = 32000, 8192
    rows = np.concatenate([generators.zipf_logits(1, V, 1.1, rng),
                           generators.quantised(generators.gaussian_logits(1, V, 2.0, rng), 6),
                           generators.inject_nan(generators.grammar_rows(1, V, 0.9, rng), 0.05, rng)])
    for r, (k, p, min_p, t) in enumerate([(40, 0.9, None, 0.7), (None, 0.5, 0.05, 1.3),
                                          (0, 0.95, None, None)]):
        x = torch.from_numpy(np.repeat(rows[r:r + 1], n, axis=0)).to("cuda")
        tok = _host(so.sample(x, k, p, min_p=min_p, temperature=t, seed=2026,
                              offset=torch.arange(n, device="cuda")))
        probs = ref.probs(rows[r], k, p, min_p=min_p, temperature=t, dtype=np.float64)
        kept = np.flatnonzero(probs)
        assert np.isin(tok, kept).all()
        counts = np.bincount(tok, minlength=V)[kept]
        expected = probs[kept] * n
        big = expected >= 5
        if big.sum() > 1:
            obs = np.append(counts[big], counts[~big].sum())
            exp = np.append(expected[big], expected[~big].sum())
            if exp[-1] == 0:
                obs, exp = obs[:-1], exp[:-1]
            assert chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-6


@pytest.mark.gpu
def test_gpu_public_api_torch_and_1d():
    rng = np.random.default_rng(26)
    x = generators.zipf_logits(8, 50000, 1.1, rng)
    xt = torch.from_numpy(x).cuda()
    seeds = torch.arange(8, device="cuda")
    tok, lp = qrita.sample(xt, k=40, p=0.9, seed=seeds, offset=3, return_logprob=True)
    assert tok.is_cuda and tok.dtype == torch.int64 and lp.dtype == torch.float32
    compare.assert_sampling_matches(x, ref.uniforms(np.arange(8), 3), 40, 0.9,
                                    tokens=_host(tok), logprobs=_host(lp))
    one = qrita.sample(xt[3], k=40, p=0.9, seed=3, offset=3)
    assert one.shape == () and int(one) == int(tok[3])
    probs = qrita.top_k_top_p_probs(xt.half(), 40, 0.9)
    assert probs.is_cuda and probs.dtype == torch.float32
    c = qrita.candidates(xt.double(), 40, 0.9, max_candidates=64)
    assert c.indices.shape == (8, 64) and c.probs.dtype == torch.float64


FUSED_FAMILIES = ["zipf", "gaussian", "quantised2", "all_equal", "grammar", "nan", "posinf",
                  "inf_nan_mix", "tied_boundary", "extremes"]


@pytest.mark.parametrize("one_launch,dtype", [
    ("1", "float32"), ("1", "bfloat16"), ("1", "float16"), ("0", "float32"), ("0", "bfloat16")])
def test_fused_sampler_matches_the_reference(monkeypatch, count_calls, one_launch, dtype):
    """QRITA_FUSED_SAMPLER=1: scalar k <= 1024 (k < V) takes the fused sampler (checked): one
    launch for a small batch (QRITA_ONE_LAUNCH=1:64), else the pipeline's selection and one draw
    launch (=0); its tokens and log-probabilities agree with the reference on the edge families,
    with scalar and per-row p / min-p, scalar temperatures (greedy rows included) and uniforms at
    0, the top and in between; k beyond the fused limits, per-row temperatures and k arrays take
    the multi-call path."""
    monkeypatch.setenv("QRITA_FUSED_SAMPLER", "1")
    # "1:64": the batch below has 20 rows, above the one-launch default limit of 16
    monkeypatch.setenv("QRITA_ONE_LAUNCH", "1:64" if one_launch == "1" else "0")
    taken = count_calls(so, "launch_fused_sample")
    selections = count_calls(launch_mod, "launch_select")
    V = 1023
    rng = np.random.default_rng(41)
    families = dict(generators._family_batches(V, rng))
    x = np.concatenate([families[name][:2] for name in FUSED_FAMILIES])
    x = _as_dtype(x, dtype)
    B = x.shape[0]
    cases = [
        dict(k=1), dict(k=50), dict(k=50, p=0.9), dict(k=V - 1, p=0.5),
        dict(k=7, p=_cycle(P_CYCLE, B, 1), min_p=_cycle(MIN_P_CYCLE, B, 2)),
        dict(k=20, p=0.75, min_p=0.05, temperature=0.7),
        dict(k=20, temperature=1e-30), dict(k=20, p=0.9, temperature=1e30),
        dict(k=3, p=0.0), dict(k=3, p=1e-9, min_p=2.0),
    ]
    if dtype != "float32":  # the 16-bit dtypes differ only in the loads (CI time): main cases
        cases = [cases[i] for i in (2, 4, 5, 9)]
    failures = []
    for i, case in enumerate(cases):
        u = _grid_uniforms(np.random.default_rng(i), B)
        xt = _dev(x, dtype)
        args = {name: _arg(v) for name, v in case.items()}
        tokens, logp = so.sample_with_uniforms(
            xt, _arg(u), args.get("k"), args.get("p"), min_p=args.get("min_p"),
            temperature=args.get("temperature"), return_logprob=True)
        try:
            compare.assert_sampling_matches(
                x, u.astype(np.float64), case.get("k"), case.get("p"), min_p=case.get("min_p"),
                temperature=case.get("temperature"), tokens=_host(tokens), logprobs=_host(logp))
        except AssertionError as err:
            failures.append(f"{case}: {err}")
    assert not failures, f"{len(failures)} failing:\n" + "\n".join(failures[:5])
    assert len(taken) == len(cases)
    assert len(selections) == (0 if one_launch == "1" else len(cases))
    # outside the fused path's limits: the multi-call path (same answers, checked above's way;
    # float32 only: the routing does not depend on the dtype)
    outside = (dict(k=V), dict(k=5, temperature=np.full(B, 0.5)),
               dict(k=np.full(B, 5, dtype=np.int64)))
    for case in outside if dtype == "float32" else ():
        u = _grid_uniforms(np.random.default_rng(99), B)
        args = {name: _arg(v) for name, v in case.items()}
        tokens = so.sample_with_uniforms(_dev(x, dtype), _arg(u), args.get("k"),
                                         temperature=args.get("temperature"))
        compare.assert_sampling_matches(x, u.astype(np.float64), case.get("k"),
                                        temperature=case.get("temperature"), tokens=_host(tokens))
    assert len(taken) == len(cases)


def _fused_topp_cases(V, B, dtype):
    """The fused top-p sampler's cases, in the order the seeds of their uniforms follow."""
    cases = [
        dict(p=0.9), dict(), dict(p=_cycle(P_CYCLE, B, 3)), dict(p=0.0), dict(p=1e-9),
        dict(p=0.999, temperature=0.7), dict(p=0.5, temperature=3.0), dict(k=V, p=0.9),
        dict(k=0, temperature=1e-30), dict(p=0.9, temperature=1e30),
        dict(p=_cycle(P_CYCLE, B, 5).astype(np.float32), temperature=0.25),
    ]
    if dtype != "float32":  # the 16-bit dtypes differ only in the loads (CI time): main cases
        cases = [cases[i] for i in (0, 2, 5, 10)]
    return cases


# (dtype, first case, end of the cases): split so that the parallel CI run spreads them
FUSED_TOPP_PARTS = [("float32", 0, 3), ("float32", 3, 6), ("float32", 6, 9), ("float32", 9, 11),
                    ("bfloat16", 0, 2), ("bfloat16", 2, 4), ("float16", 0, 2), ("float16", 2, 4)]


@pytest.mark.parametrize("dtype,first,end", FUSED_TOPP_PARTS)
def test_fused_topp_sampler_matches_the_reference(count_calls, dtype, first, end):
    """With top-k off and min-p off, ``sample`` takes the fused top-p sampler (checked): two mass
    searches over the row, gathering at most 64 entries per search under the interpreter. Tokens
    and log-probabilities agree with the reference on every generator family, with scalar,
    per-row, 0, tiny and off p, scalar temperatures and uniforms at 0, the top and in between.
    The cases are split into parts (CI time); together the parts cover every case."""
    taken = count_calls(so, "launch_fused_topp_sample")
    V = 509
    x = _as_dtype(_stacked_families(V, dtype, 5), dtype)
    B = x.shape[0]
    cases = _fused_topp_cases(V, B, dtype)
    assert end <= len(cases)
    failures = []
    for i in range(first, end):
        case = cases[i]
        u = _grid_uniforms(np.random.default_rng(100 + i), B)
        args = {name: _arg(v) for name, v in case.items()}
        tokens, logp = so.sample_with_uniforms(
            _dev(x, dtype), _arg(u), args.get("k"), args.get("p"),
            temperature=args.get("temperature"), return_logprob=True)
        try:
            if i in (0, 2, 5):  # the same tokens without the log-probabilities' extra read
                tokens_only = so.sample_with_uniforms(
                    _dev(x, dtype), _arg(u), args.get("k"), args.get("p"),
                    temperature=args.get("temperature"))
                assert torch.equal(tokens, tokens_only), "tokens differ with return_logprob"
            compare.assert_sampling_matches(
                x, u.astype(np.float64), case.get("k"), case.get("p"),
                temperature=case.get("temperature"), tokens=_host(tokens), logprobs=_host(logp))
        except AssertionError as err:
            failures.append(f"{case}: {err}")
    assert not failures, f"{len(failures)} failing:\n" + "\n".join(failures[:5])
    checked_twice = sum(1 for i in range(first, end) if i in (0, 2, 5))
    assert len(taken) == end - first + checked_twice


def test_fused_topp_sampler_parts_cover_every_case():
    """The parts of the split test above cover each dtype's cases once, in order."""
    for dtype in ("float32", "bfloat16", "float16"):
        parts = [(a, b) for d, a, b in FUSED_TOPP_PARTS if d == dtype]
        assert parts[0][0] == 0 and all(b == a2 for (_, b), (a2, _) in zip(parts, parts[1:]))
        assert parts[-1][1] == len(_fused_topp_cases(509, 8, dtype))


def test_fused_topp_sampler_takes_both_routes():
    """Both routes of the fused top-p sampler run on the generator families: the histogram
    band answers both mass searches on many rows, and pivot rounds over the row (not only the
    final gather) take the others (tie-heavy families)."""
    V = 509
    x = _as_dtype(_stacked_families(V, "float32", 5), "float32")
    B = x.shape[0]
    rounds = torch.zeros((B, 2), dtype=torch.int32, device=DEVICE)
    launch_mod.launch_fused_topp_sample(_dev(x, "float32"), _arg(_grid_uniforms(
        np.random.default_rng(7), B)), None, 0.9, logprob=False, rounds=rounds, cap=64)
    hits, reads = rounds[:, 0].cpu(), rounds[:, 1].cpu()
    assert int((hits == 2).sum()) >= B // 3, hits.tolist()
    assert int((reads >= 2).sum()) >= B // 6, reads.tolist()


def test_fused_topp_sampler_leaves_what_it_does_not_fuse(count_calls):
    """Min-p, per-row k and per-row temperatures are not fused: the multi-call path, with the
    reference's tokens (float32 only: the routing does not depend on the dtype)."""
    taken = count_calls(so, "launch_fused_topp_sample")
    V = 509
    x = _as_dtype(_stacked_families(V, "float32", 5), "float32")
    B = x.shape[0]
    outside = (dict(p=0.9, min_p=0.1), dict(k=np.full(B, V, dtype=np.int64)),
               dict(temperature=np.full(B, 0.5)))
    for case in outside:
        u = _grid_uniforms(np.random.default_rng(99), B)
        args = {name: _arg(v) for name, v in case.items()}
        tokens = so.sample_with_uniforms(_dev(x, "float32"), _arg(u), args.get("k"),
                                         args.get("p"), min_p=args.get("min_p"),
                                         temperature=args.get("temperature"))
        compare.assert_sampling_matches(x, u.astype(np.float64), case.get("k"), case.get("p"),
                                        min_p=case.get("min_p"),
                                        temperature=case.get("temperature"), tokens=_host(tokens))
    assert len(taken) == 0


@pytest.mark.parametrize("knobs", [{"QRITA_TOPP_SPLIT": "0"}, {"QRITA_TOPP_HIST": "0"},
                                   {"QRITA_TOPP_HMASK": "1"}])
def test_fused_topp_sampler_routes_match_the_reference(monkeypatch, knobs):
    """The fused top-p sampler's measuring knobs keep it exact: the band and the pivot rounds in
    one launch (SPLIT=0), the pivot rounds alone (HIST=0), masked histograms (HMASK=1); every
    generator family, p = 0.9 and per-row p, float32."""
    for name, value in knobs.items():
        monkeypatch.setenv(name, value)
    V = 509
    x = _as_dtype(_stacked_families(V, "float32", 6), "float32")
    B = x.shape[0]
    for i, p in enumerate([0.9, _cycle(P_CYCLE, B, 1)]):
        u = _grid_uniforms(np.random.default_rng(200 + i), B)
        rounds = torch.zeros((B, 2), dtype=torch.int32, device=DEVICE)
        tokens, logp = launch_mod.launch_fused_topp_sample(
            _dev(x, "float32"), _arg(u), None, _arg(p), logprob=True, rounds=rounds, cap=64)
        compare.assert_sampling_matches(x, u.astype(np.float64), None, p, tokens=_host(tokens),
                                        logprobs=_host(logp))
        hits = rounds[:, 0].cpu()
        if knobs.get("QRITA_TOPP_HIST") == "0":
            assert int(hits.sum()) == 0, hits.tolist()
        else:
            assert int((hits == 2).sum()) >= B // 3, hits.tolist()


@pytest.mark.gpu
@pytest.mark.parametrize("k,p,t", [(None, 0.9, None), (None, None, 0.7), (50, 0.9, None),
                                   (1000, 0.95, 0.8)])
def test_gpu_fused_samplers_reproducible_invariant_capturable(count_calls, k, p, t):
    """The fused top-k sampler and the rejection draw (top-k off; default for these arguments,
    checked): tokens and log-probabilities match the reference at V = 131072; bit-identical over 5 repeats, for a row alone (a one-launch
    kernel for top-k) and in a batch of 256 at any position (the pipeline's selection), and under
    CUDA-graph capture and replay."""
    fused = count_calls(so, "launch_fused_sample" if k else "launch_reject_topp_sample")
    rng = np.random.default_rng(31)
    B = 256
    x = _gpu_rows(B, rng)
    big = _dev(x, "float32")
    seeds = torch.randint(0, 2**62, (B,), device="cuda")
    offs = torch.randint(0, 2**40, (B,), device="cuda")
    kw = dict(temperature=t, return_logprob=True)
    tok, lp = so.sample(big, k, p, seed=seeds, offset=offs, **kw)
    rows = np.arange(0, B, 11)
    s64, o64 = _host(seeds).astype(np.uint64), _host(offs).astype(np.uint64)
    if k:  # the rank-order draw
        compare.assert_sampling_matches(x[rows], ref.uniforms(s64, o64)[rows], k, p,
                                        temperature=t, tokens=_host(tok)[rows],
                                        logprobs=_host(lp)[rows])
    else:  # the rejection draw: equal off the margins, else a kept token
        want, want_lp = ref.sample(x[rows], None, p, temperature=t, seed=s64[rows],
                                   offset=o64[rows], return_logprob=True)
        _, trace = ref.sample_topp_rejection(x[rows], p, temperature=t, seed=s64[rows],
                                             offset=o64[rows], return_trace=True)
        got = _host(tok)[rows]
        assert np.array_equal(got[~trace.near], want[~trace.near])
        assert ref.keep_mask(x[rows], None, p, temperature=t)[np.arange(len(rows)), got].all()
        same = got == want
        np.testing.assert_allclose(_host(lp)[rows][same], want_lp[same], rtol=2e-6, atol=1e-6)
    for _ in range(5):
        again, again_lp = so.sample(big, k, p, seed=seeds, offset=offs, **kw)
        assert torch.equal(again, tok) and torch.equal(again_lp.view(torch.int32),
                                                       lp.view(torch.int32))
    for row in [0, 17, 255]:
        alone, alone_lp = so.sample(big[row:row + 1].clone(), k, p, seed=seeds[row:row + 1],
                                    offset=offs[row:row + 1], **kw)
        assert int(alone[0]) == int(tok[row])
        assert torch.equal(alone_lp.view(torch.int32), lp[row:row + 1].view(torch.int32))
        perm = torch.arange(B, device="cuda")
        perm[100], perm[row] = row, 100
        moved = so.sample(big[perm], k, p, seed=seeds[perm], offset=offs[perm], temperature=t)
        assert int(moved[100]) == int(tok[row])
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        g_tok, g_lp = so.sample(big, k, p, seed=seeds, offset=offs, **kw)
    torch.cuda.current_stream().wait_stream(stream)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(g_tok, tok) and torch.equal(g_lp.view(torch.int32), lp.view(torch.int32))
    assert len(fused) >= 10
