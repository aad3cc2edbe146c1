"""Public API round trips on the CPU paths (NumPy, torch CPU, JAX CPU): type, dtype, shape and the
oracle's exact answer."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

import qrita
from qrita.reference import oracle

torch = pytest.importorskip("torch") if importlib.util.find_spec("torch") else None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

NP_FLOATS = [np.float16, np.float32, np.float64]
TORCH_FLOATS = ["float32", "bfloat16", "float16"]
B, V = 5, 300

# (k, p) combinations with scalars; per-row arrays are built in the tests
KP_CASES = [
    (7, None),
    (None, 0.8),
    (40, 0.5),
    (0, 0.9),
    (V, None),
    (-3, 0.3),
    (5, 1.0),
    (None, float("nan")),
    (12, 0.0),
    (None, -0.5),
    (1, None),
    (V + 10, 2.0),
    (None, None),
]


def make_logits(rng: np.random.Generator, shape=(B, V), dtype=np.float32) -> np.ndarray:
    """Gaussian logits on a 1/8 grid (many ties), a few -inf entries, a few NaN entries."""
    x = np.round(rng.standard_normal(shape) * 3 * 8) / 8
    flat = x.reshape(-1)
    idx = rng.choice(flat.size, size=max(1, flat.size // 50), replace=False)
    flat[idx[: len(idx) // 2]] = -np.inf
    flat[idx[len(idx) // 2 :]] = np.nan
    return x.astype(dtype)


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(
        {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    )


def assert_mask_ok(out: np.ndarray, logits: np.ndarray, k, p, fill: float) -> None:
    """Bit-exact against the oracle; a top-p boundary difference is accepted only via the rule-5
    checker (``qrita.testing.compare``) when it is available."""
    want = oracle.top_k_top_p_mask(logits, k, p, fill=fill)
    assert out.dtype == want.dtype and out.shape == want.shape
    if np.array_equal(bits(out), bits(want)):
        return
    try:
        from qrita.testing.compare import assert_mask_matches
    except ImportError:
        np.testing.assert_array_equal(bits(out), bits(want))
    else:
        assert_mask_matches(out, logits, k, p, fill)


def t_same(a, b) -> bool:
    """Bit equality of two torch tensors (NaN-safe)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.is_floating_point:
        iview = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        a, b = a.contiguous().view(iview), b.contiguous().view(iview)
    return torch.equal(a, b)


def to_np(t) -> np.ndarray:
    """A torch tensor on the host as NumPy (bfloat16 widened to float32, exactly)."""
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


# ---------------------------------------------------------------------------------------------
# NumPy


@pytest.mark.parametrize("dtype", NP_FLOATS)
@pytest.mark.parametrize(("k", "p"), KP_CASES)
def test_numpy_top_k_top_p_mask(rng, dtype, k, p):
    x = make_logits(rng, dtype=dtype)
    before = x.copy()
    out = qrita.top_k_top_p_mask(x, k, p)
    assert type(out) is np.ndarray and out.dtype == dtype and out.shape == x.shape
    assert out is not x
    assert np.array_equal(bits(x), bits(before)), "inplace=False must not write the input"
    assert_mask_ok(out, x, k, p, -np.inf)


@pytest.mark.parametrize("dtype", NP_FLOATS)
def test_numpy_single_masks_match_oracle(rng, dtype):
    x = make_logits(rng, dtype=dtype)
    out_k = qrita.top_k_mask(x, 17)
    np.testing.assert_array_equal(bits(out_k), bits(oracle.top_k_mask(x, 17)))
    out_p = qrita.top_p_mask(x, 0.7)
    assert out_p.dtype == dtype
    assert_mask_ok(out_p, x, None, 0.7, -np.inf)


def test_numpy_counts_on_distinct_values(rng):
    x = rng.permutation(V).astype(np.float32)[None, :].repeat(3, axis=0)
    out = qrita.top_k_mask(x, 10)
    assert ((out != -np.inf).sum(axis=1) == 10).all()
    assert (np.sort(out[0][out[0] != -np.inf]) == np.arange(V - 10, V)).all()


def test_numpy_per_row_arrays(rng):
    x = make_logits(rng)
    k = np.array([0, 3, 50, V, -1], dtype=np.int32)
    p = np.array([0.5, np.nan, 0.95, 1.0, 0.0], dtype=np.float32)
    assert_mask_ok(qrita.top_k_top_p_mask(x, k, p), x, k, p, -np.inf)
    assert_mask_ok(qrita.top_k_mask(x, k.astype(np.int64)), x, k, None, -np.inf)
    assert_mask_ok(qrita.top_p_mask(x, p.astype(np.float64)), x, None, p, -np.inf)


def test_numpy_scalar_types(rng):
    x = make_logits(rng)
    want = oracle.top_k_top_p_mask(x, 9, 0.6)
    for k, p in [(np.int64(9), np.float32(0.6)), (np.int8(9), np.float64(0.6))]:
        out = qrita.top_k_top_p_mask(x, k, p)
        assert_mask_ok(out, x, int(k), float(p), -np.inf)
    assert_mask_ok(qrita.top_k_top_p_mask(x, 9, 0.6), x, 9, 0.6, -np.inf)
    assert want.shape == x.shape
    # an integer p is a real number: p=1 means off, p=0 keeps one entry
    assert np.array_equal(bits(qrita.top_p_mask(x, 1)), bits(x))
    assert ((qrita.top_p_mask(x, 0) != -np.inf).sum(axis=1) == 1).all()


@pytest.mark.parametrize("dtype", NP_FLOATS)
def test_numpy_1d(rng, dtype):
    x = make_logits(rng, shape=(V,), dtype=dtype)
    for k, p in [(5, None), (None, 0.9), (30, 0.4)]:
        out = qrita.top_k_top_p_mask(x, k, p)
        assert out.shape == (V,) and out.dtype == dtype
        assert_mask_ok(out, x, k, p, -np.inf)
    for k_arr in (np.array([6]), np.array(6)):
        assert_mask_ok(qrita.top_k_mask(x, k_arr), x, 6, None, -np.inf)
    for p_arr in (np.array([0.3]), np.array(0.3)):
        assert_mask_ok(qrita.top_p_mask(x, p_arr), x, None, 0.3, -np.inf)


@pytest.mark.parametrize("fill", [0.0, -1e4, -1, 7.5, float("inf")])
@pytest.mark.parametrize("dtype", NP_FLOATS)
def test_numpy_fill(rng, dtype, fill):
    x = make_logits(rng, dtype=dtype)
    out = qrita.top_k_top_p_mask(x, 20, 0.9, fill=fill)
    assert out.dtype == dtype
    assert_mask_ok(out, x, 20, 0.9, fill)


def test_numpy_fill_nan(rng):
    x = make_logits(rng)
    keep = oracle.keep_mask(x, 10, None)
    out = qrita.top_k_mask(x, 10, fill=float("nan"))
    assert np.isnan(out[~keep]).all()
    np.testing.assert_array_equal(bits(out[keep]), bits(x[keep]))


@pytest.mark.parametrize("dtype", NP_FLOATS)
def test_numpy_inplace(rng, dtype):
    x = make_logits(rng, dtype=dtype)
    want = qrita.top_k_top_p_mask(x, 25, 0.8)
    y = x.copy()
    out = qrita.top_k_top_p_mask(y, 25, 0.8, inplace=True)
    assert out is y
    np.testing.assert_array_equal(bits(y), bits(want))
    for fn, arg in [(qrita.top_k_mask, 4), (qrita.top_p_mask, 0.5)]:
        y = x.copy()
        assert fn(y, arg, inplace=True, fill=-5.0) is y
        np.testing.assert_array_equal(bits(y), bits(fn(x, arg, fill=-5.0)))


def test_numpy_inplace_strided_view(rng):
    base = make_logits(rng, shape=(B, 2 * V))
    view = base[:, ::2]
    want = oracle.top_k_top_p_mask(np.ascontiguousarray(view), 8, 0.7)
    other = base[:, 1::2].copy()
    out = qrita.top_k_top_p_mask(view, 8, 0.7, inplace=True)
    assert out is view
    np.testing.assert_array_equal(bits(base[:, ::2]), bits(want))
    np.testing.assert_array_equal(bits(base[:, 1::2]), bits(other))


def test_numpy_single_column(rng):
    x = make_logits(rng, shape=(3, 1))
    for k, p in [(1, None), (0, 0.5), (None, 0.0)]:
        np.testing.assert_array_equal(bits(qrita.top_k_top_p_mask(x, k, p)), bits(x))


# ---------------------------------------------------------------------------------------------
# torch CPU


@needs_torch
@pytest.mark.parametrize("dtype", TORCH_FLOATS)
@pytest.mark.parametrize(("k", "p"), KP_CASES[:8])
def test_torch_cpu_mask(rng, dtype, k, p):
    tdtype = getattr(torch, dtype)
    x = torch.from_numpy(make_logits(rng)).to(tdtype)
    before = x.clone()
    out = qrita.top_k_top_p_mask(x, k, p)
    assert isinstance(out, torch.Tensor) and out.dtype == tdtype
    assert out.shape == x.shape and out.device == x.device
    assert t_same(x, before)
    ref_in = to_np(x)  # exact widening for bfloat16
    want = torch.from_numpy(oracle.top_k_top_p_mask(ref_in, k, p)).to(tdtype)
    if not t_same(out, want):
        assert_mask_ok(to_np(out), ref_in, k, p, -np.inf)


@needs_torch
@pytest.mark.parametrize("dtype", TORCH_FLOATS)
def test_torch_cpu_inplace_fill_rows(rng, dtype):
    tdtype = getattr(torch, dtype)
    x = torch.from_numpy(make_logits(rng)).to(tdtype)
    k = torch.tensor([1, 5, 0, 100, 7], dtype=torch.int32)
    p = torch.tensor([0.9, 0.5, 0.2, float("nan"), 1.0], dtype=torch.float32)
    want = qrita.top_k_top_p_mask(x, k, p, fill=-100.0)
    ref_in = to_np(x)
    expect = torch.from_numpy(oracle.top_k_top_p_mask(ref_in, k.numpy(), p.numpy(), fill=-100.0))
    assert t_same(want, expect.to(tdtype))
    y = x.clone()
    out = qrita.top_k_top_p_mask(y, k, p, inplace=True, fill=-100.0)
    assert out is y
    assert t_same(y, want)


@needs_torch
def test_torch_cpu_1d_and_noncontiguous(rng):
    x = torch.from_numpy(make_logits(rng, shape=(V,)))
    out = qrita.top_k_mask(x, torch.tensor([3]))
    assert out.shape == (V,)
    np.testing.assert_array_equal(bits(out.numpy()), bits(oracle.top_k_mask(x.numpy(), 3)))
    out = qrita.top_p_mask(x, torch.tensor(0.5, dtype=torch.float64))
    assert_mask_ok(out.numpy(), x.numpy(), None, 0.5, -np.inf)
    base = torch.from_numpy(make_logits(rng, shape=(V, B)))
    xt = base.t()  # (B, V) with a strided last axis
    want = oracle.top_k_top_p_mask(xt.contiguous().numpy(), 9, 0.9)
    assert qrita.top_k_top_p_mask(xt, 9, 0.9, inplace=True) is xt
    np.testing.assert_array_equal(bits(base.t().contiguous().numpy()), bits(want))


@needs_torch
def test_torch_cpu_no_grad_needed(rng):
    x = torch.from_numpy(make_logits(rng)).requires_grad_(True)
    out = qrita.top_k_mask(x, 3)
    assert isinstance(out, torch.Tensor) and out.shape == x.shape


# ---------------------------------------------------------------------------------------------
# top_k


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
@pytest.mark.parametrize("mode", ["largest", "smallest"])
@pytest.mark.parametrize("is_sorted", [True, False])
def test_top_k_numpy_3d(rng, axis, mode, is_sorted):
    x = make_logits(rng, shape=(4, 6, 9))
    n = x.shape[axis]
    for k in (0, 1, 3, n):
        res = qrita.top_k(x, k, axis=axis, mode=mode, sorted=is_sorted)
        assert isinstance(res, qrita.TopK)
        want = oracle.top_k(x, k, axis=axis, mode=mode, sorted=is_sorted)
        shape = list(x.shape)
        shape[axis] = k
        assert res.values.shape == tuple(shape) == res.indices.shape
        assert res.values.dtype == x.dtype and res.indices.dtype == np.int64
        np.testing.assert_array_equal(bits(res.values), bits(want.values))
        np.testing.assert_array_equal(res.indices, want.indices)


def test_top_k_semantics():
    x = np.array([1.0, 3.0, np.nan, 3.0, -np.inf, -0.0, 0.0, 2.0], dtype=np.float32)
    vals, idx = qrita.top_k(x, 4)
    assert idx.tolist() == [1, 3, 7, 0]
    assert vals.tolist() == [3.0, 3.0, 2.0, 1.0]
    vals, idx = qrita.top_k(x, 4, sorted=False)
    assert idx.tolist() == [0, 1, 3, 7]
    _, idx = qrita.top_k(x, 3, mode="smallest")
    assert idx.tolist() == [4, 5, 6]  # -inf, then -0.0 == 0.0 by index
    _, idx = qrita.top_k(x, 8)
    assert idx[-1] == 2  # NaN last
    _, idx = qrita.top_k(x, 8, mode="smallest")
    assert idx[-1] == 2


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint64, np.float16])
def test_top_k_dtypes(rng, dtype):
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is not None:
        x = rng.integers(info.min, info.max, size=(3, 50), dtype=dtype, endpoint=True)
        x[0, :5] = info.max
        x[1, :5] = info.min
    else:
        x = make_logits(rng, shape=(3, 50), dtype=dtype)
    for mode in ("largest", "smallest"):
        res = qrita.top_k(x, 7, mode=mode)
        want = oracle.top_k(x, 7, mode=mode)
        assert res.values.dtype == x.dtype and res.indices.dtype == np.int64
        np.testing.assert_array_equal(res.indices, want.indices)
        np.testing.assert_array_equal(
            bits(res.values) if info is None else res.values,
            bits(want.values) if info is None else want.values,
        )


def test_top_k_numpy_int_k_types(rng):
    x = make_logits(rng, shape=(2, 10))
    a = qrita.top_k(x, np.int32(4))
    b = qrita.top_k(x, 4, axis=np.int64(-1))
    np.testing.assert_array_equal(a.indices, b.indices)


def test_top_k_empty_other_axis():
    x = np.zeros((0, 5), dtype=np.float32)
    res = qrita.top_k(x, 2)
    assert res.values.shape == (0, 2) and res.indices.dtype == np.int64


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int32", "int64", "uint8"])
def test_top_k_torch_cpu(rng, dtype):
    tdtype = getattr(torch, dtype)
    if dtype.startswith(("int", "uint")):
        x = torch.from_numpy(rng.integers(0, 20, size=(3, 4, 30)).astype(np.int64)).to(tdtype)
    else:
        x = torch.from_numpy(make_logits(rng, shape=(3, 4, 30))).to(tdtype)
    for axis, k in [(-1, 5), (0, 2), (1, 0), (1, 4)]:
        for mode in ("largest", "smallest"):
            res = qrita.top_k(x, k, axis=axis, mode=mode, sorted=(k != 2))
            assert isinstance(res.values, torch.Tensor) and isinstance(res.indices, torch.Tensor)
            assert res.values.dtype == tdtype and res.indices.dtype == torch.int64
            want = oracle.top_k(to_np(x), k, axis=axis, mode=mode, sorted=(k != 2))
            assert torch.equal(res.indices, torch.from_numpy(want.indices))
            assert t_same(res.values, torch.from_numpy(want.values).to(tdtype))


# ---------------------------------------------------------------------------------------------
# JAX CPU (through the JAX adapter, when present)

needs_jax = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None
    or importlib.util.find_spec("qrita.backends._jax") is None,
    reason="jax or qrita.backends._jax is not installed",
)


@needs_jax
def test_jax_cpu_round_trip(rng):
    import jax
    import jax.numpy as jnp

    x_np = make_logits(rng)
    x = jnp.asarray(x_np)
    out = qrita.top_k_top_p_mask(x, 10, 0.8)
    assert type(out) is type(x) and out.dtype == x.dtype and out.shape == x.shape
    assert_mask_ok(np.asarray(out), x_np, 10, 0.8, -np.inf)
    res = qrita.top_k(x, 3, axis=0)
    want = oracle.top_k(x_np, 3, axis=0)
    np.testing.assert_array_equal(np.asarray(res.indices), want.indices)
    # JAX integers are int64 only with jax_enable_x64 (else int32, as jax.lax.top_k)
    want_idx = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32
    assert res.indices.dtype == want_idx
    assert res.values.dtype == x.dtype


def test_version_and_exports():
    assert qrita.__version__ == "0.1.0"
    assert set(qrita.__all__) >= {"top_k", "top_k_mask", "top_p_mask", "top_k_top_p_mask", "TopK"}
    assert qrita.TopK is oracle.TopK
    assert math.isinf(qrita.top_k_mask.__kwdefaults__["fill"])


# ---------------------------------------------------------------------------------------------
# The GPU dispatch (reshape, per-row tensors, in place, dtype routing), run on the CPU: torch CPU
# tensors are reported as GPU tensors and Triton runs its interpreter (TRITON_INTERPRET=1). Runs in
# a subprocess so that the interpreter setting cannot leak into other tests' kernel imports.

_DISPATCH_SCRIPT = r"""
import os
os.environ["TRITON_INTERPRET"] = "1"
import dataclasses
import numpy as np
import torch
import qrita
from qrita.backends import _torch
from qrita.backends.triton import ops
from qrita.reference import oracle

real_describe = _torch.describe
_torch.describe = lambda x: dataclasses.replace(real_describe(x), on_gpu=True)
calls = []
real_mask = ops.top_k_top_p_mask

def mask(t, k, p, *, inplace, fill):
    assert t.dim() == 2 and t.stride(-1) == 1
    for v in (k, p):
        assert v is None or isinstance(v, (int, float)) or (v.dim() == 1 and v.shape[0] == t.shape[0])
    calls.append(("mask", t.data_ptr()))
    return real_mask(t, k, p, inplace=inplace, fill=fill)

def fake_top_k(t, k, *, mode, sorted):
    assert t.dim() == 2 and t.is_contiguous() and isinstance(k, int) and k > 0
    calls.append(("top_k", t.data_ptr()))
    a = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    v, i = oracle.top_k(a, k, mode=mode, sorted=sorted)
    return torch.from_numpy(np.ascontiguousarray(v)).to(t.dtype), torch.from_numpy(np.ascontiguousarray(i))

ops.top_k_top_p_mask = mask
ops.top_k = fake_top_k  # the plumbing is under test here; tests/test_triton_* test the kernels

rng = np.random.default_rng(0)
x_np = (np.round(rng.standard_normal((3, 300)) * 16) / 16).astype(np.float32)
k_np, p_np = np.array([5, 0, 40]), np.array([0.9, 0.5, 1.0], dtype=np.float32)

def host(t):
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()

for dtype in (torch.float32, torch.bfloat16, torch.float16):
    x = torch.from_numpy(x_np).to(dtype)
    ref = host(x)
    want = torch.from_numpy(oracle.top_k_top_p_mask(ref, k_np, p_np)).to(dtype)
    n = len(calls)
    out = qrita.top_k_top_p_mask(x, torch.from_numpy(k_np).int(), torch.from_numpy(p_np))
    assert len(calls) == n + 1 and calls[-1][1] == x.data_ptr()
    assert out.dtype == dtype and out.shape == x.shape and torch.equal(out, want), dtype
    y = x.clone()
    assert qrita.top_k_top_p_mask(y, torch.from_numpy(k_np), torch.from_numpy(p_np), inplace=True) is y
    assert calls[-1][1] == y.data_ptr() and torch.equal(y, want)

# 1-D logits with shape-(1,) and shape-() rows; scalar k / p; fill
x1 = torch.from_numpy(x_np[0].copy())
for kk in (torch.tensor([7]), torch.tensor(7), 7):
    out = qrita.top_k_mask(x1, kk, fill=-1.0)
    assert out.shape == (300,)
    assert torch.equal(out, torch.from_numpy(oracle.top_k_mask(x_np[0], 7, fill=-1.0)))

# a strided last axis, in place: the caller's view is written
base = torch.from_numpy(np.ascontiguousarray(x_np.T))
xt = base.t()
want = torch.from_numpy(oracle.top_k_top_p_mask(x_np, 9, 0.8))
assert qrita.top_k_top_p_mask(xt, 9, 0.8, inplace=True) is xt
assert torch.equal(base.t(), want)

# float64 is not a kernel dtype: the reference path answers
n = len(calls)
x64 = torch.from_numpy(x_np.astype(np.float64))
out = qrita.top_k_mask(x64, 4)
assert len(calls) == n and out.dtype == torch.float64
assert torch.equal(out, torch.from_numpy(oracle.top_k_mask(x64.numpy(), 4)))

# top_k: any axis, k = 0, empty batch
x3 = torch.from_numpy(x_np.reshape(3, 20, 15))
for axis in (0, 1, -1):
    for k in (0, 1, 3):
        for mode in ("largest", "smallest"):
            v, i = qrita.top_k(x3, k, axis=axis, mode=mode, sorted=(k != 3))
            ov, oi = oracle.top_k(x3.numpy(), k, axis=axis, mode=mode, sorted=(k != 3))
            assert i.dtype == torch.int64 and v.dtype == x3.dtype
            assert torch.equal(v, torch.from_numpy(ov)) and torch.equal(i, torch.from_numpy(oi))
v, i = qrita.top_k(torch.zeros((0, 5)), 2)
assert v.shape == (0, 2) and i.dtype == torch.int64
assert any(c[0] == "top_k" for c in calls)
print("DISPATCH OK", len(calls))
"""


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("triton") is None,
    reason="torch and triton are needed for the interpreter run",
)
def test_gpu_dispatch_under_triton_interpreter(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    try:
        import qrita.backends.triton.ops  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"qrita.backends.triton.ops does not import: {exc}")
    script = tmp_path / "dispatch.py"
    script.write_text(_DISPATCH_SCRIPT)
    env = dict(os.environ, TRITON_INTERPRET="1")
    env["PYTHONPATH"] = os.pathsep.join([str(repo), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    r = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "DISPATCH OK" in r.stdout


@pytest.mark.skipif(importlib.util.find_spec("ml_dtypes") is None, reason="ml_dtypes missing")
def test_numpy_bfloat16(rng):
    import ml_dtypes

    x = make_logits(rng).astype(ml_dtypes.bfloat16)
    wide = x.astype(np.float32)
    out = qrita.top_k_top_p_mask(x, 12, 0.7)
    assert out.dtype == x.dtype and out.shape == x.shape
    want = oracle.top_k_top_p_mask(wide, 12, 0.7).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(bits(out), bits(want))
    res = qrita.top_k(x, 4, mode="smallest")
    assert res.values.dtype == x.dtype and res.indices.dtype == np.int64
    np.testing.assert_array_equal(res.indices, oracle.top_k(wide, 4, mode="smallest").indices)
    y = x.copy()
    assert qrita.top_k_top_p_mask(y, 12, 0.7, inplace=True) is y
    np.testing.assert_array_equal(bits(y), bits(want))
