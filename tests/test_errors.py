"""Every validation error: raised eagerly, with a message naming the argument and the value."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

import qrita

has_torch = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not has_torch, reason="torch is not installed")
needs_jax = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None
    or importlib.util.find_spec("qrita.backends._jax") is None,
    reason="jax or qrita.backends._jax is not installed",
)

MASKS = [
    pytest.param(lambda x, **kw: qrita.top_k_top_p_mask(x, 3, 0.5, **kw), id="top_k_top_p_mask"),
    pytest.param(lambda x, **kw: qrita.top_k_mask(x, 3, **kw), id="top_k_mask"),
    pytest.param(lambda x, **kw: qrita.top_p_mask(x, 0.5, **kw), id="top_p_mask"),
]


@pytest.fixture
def logits() -> np.ndarray:
    return np.linspace(-3, 3, 4 * 16, dtype=np.float32).reshape(4, 16)


# ---------------------------------------------------------------------------------------------
# logits


@pytest.mark.parametrize("fn", MASKS)
@pytest.mark.parametrize(
    ("bad", "tname"),
    [([[1.0, 2.0]], "list"), ((1.0, 2.0), "tuple"), (3.0, "float"), (None, "NoneType")],
)
def test_logits_not_an_array(fn, bad, tname):
    msg = f"logits must be a numpy, torch, cupy or jax array, got {tname}"
    with pytest.raises(TypeError, match=re.escape(msg)):
        fn(bad)


def test_logits_numpy_scalar_is_not_an_array():
    with pytest.raises(TypeError, match="logits must be .* got float32"):
        qrita.top_k_mask(np.float32(1.0), 1)


@pytest.mark.parametrize("fn", MASKS)
@pytest.mark.parametrize("shape", [(2, 3, 4), (), (1, 1, 1, 5)])
def test_logits_wrong_ndim(fn, shape):
    x = np.zeros(shape, dtype=np.float32)
    with pytest.raises(
        ValueError, match=re.escape(f"logits must have shape (V,) or (B, V), got shape {shape}")
    ):
        fn(x)


@pytest.mark.parametrize("fn", MASKS)
@pytest.mark.parametrize("shape", [(0,), (3, 0)])
def test_logits_empty_vocab(fn, shape):
    with pytest.raises(
        ValueError,
        match=re.escape(f"logits must have a non-empty last axis (V >= 1), got shape {shape}"),
    ):
        fn(np.zeros(shape, dtype=np.float32))


@pytest.mark.parametrize("fn", MASKS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_, np.complex64])
def test_logits_not_floating(fn, dtype):
    x = np.zeros((2, 8), dtype=dtype)
    with pytest.raises(
        TypeError, match=f"logits must have a floating dtype .*got dtype {np.dtype(dtype).name}"
    ):
        fn(x)


@needs_torch
def test_logits_torch_not_floating():
    import torch

    with pytest.raises(TypeError, match="logits must have a floating dtype .*got dtype int64"):
        qrita.top_k_mask(torch.zeros(2, 8, dtype=torch.int64), 1)


# ---------------------------------------------------------------------------------------------
# k


@pytest.mark.parametrize(
    ("k", "shown"),
    [
        (5.0, "5.0 (float)"),
        (np.float32(2.0), "(float32)"),
        (True, "True (bool)"),
        (np.bool_(True), "(bool"),
    ],
)
def test_k_not_an_integer(logits, k, shown):
    for call in (
        lambda: qrita.top_k_mask(logits, k),
        lambda: qrita.top_k_top_p_mask(logits, k, 0.5),
    ):
        with pytest.raises(TypeError, match=r"k must be an integer.*got .*" + re.escape(shown)):
            call()


@pytest.mark.parametrize(
    ("k", "shown"),
    [("5", "'5' (str)"), ([1, 2, 3, 4], "[1, 2, 3, 4] (list)"), (1 + 2j, "(complex)")],
)
def test_k_not_an_array(logits, k, shown):
    with pytest.raises(TypeError, match=r"^k must be an integer.*got .*" + re.escape(shown)):
        qrita.top_k_mask(logits, k)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.bool_])
def test_k_array_wrong_dtype(logits, dtype):
    k = np.ones(4, dtype=dtype)
    with pytest.raises(
        TypeError, match=f"k array must have an integer dtype, got dtype {np.dtype(dtype).name}"
    ):
        qrita.top_k_mask(logits, k)


@pytest.mark.parametrize("shape", [(3,), (5,), (4, 1), (1,), ()])
def test_k_array_wrong_shape_2d(logits, shape):
    k = np.ones(shape, dtype=np.int64)
    msg = f"k array must have shape (4,) for logits of shape (4, 16), got shape {shape}"
    if shape == ():  # a 0-d k (a traced scalar under jax.jit): the error says what to pass
        msg += "; one k for every row is a Python number (under jax.jit, a static argument)"
    with pytest.raises(ValueError, match=re.escape(msg)):
        qrita.top_k_top_p_mask(logits, k, None)


@pytest.mark.parametrize("shape", [(2,), (1, 1)])
def test_k_array_wrong_shape_1d(logits, shape):
    k = np.ones(shape, dtype=np.int64)
    msg = f"k array must have shape (1,) or () for logits of shape (16,), got shape {shape}"
    with pytest.raises(ValueError, match=re.escape(msg)):
        qrita.top_k_mask(logits[0], k)


@needs_torch
def test_k_mixed_library(logits):
    import torch

    with pytest.raises(TypeError, match="k is a torch array but logits is a numpy array"):
        qrita.top_k_mask(logits, torch.ones(4, dtype=torch.int64))
    with pytest.raises(TypeError, match="k is a numpy array but logits is a torch array"):
        qrita.top_k_mask(torch.from_numpy(logits), np.ones(4, dtype=np.int64))


@needs_torch
def test_k_other_device(logits):
    import torch

    k = torch.ones(4, dtype=torch.int64, device="meta")
    with pytest.raises(ValueError, match="k is on device meta but logits is on device cpu"):
        qrita.top_k_mask(torch.from_numpy(logits), k)


# ---------------------------------------------------------------------------------------------
# p


@pytest.mark.parametrize(
    ("p", "shown"),
    [
        (True, "True (bool)"),
        ("0.5", "'0.5' (str)"),
        ([0.5] * 4, "(list)"),
        (0.5j, "0.5j (complex)"),
    ],
)
def test_p_not_a_number(logits, p, shown):
    with pytest.raises(TypeError, match=r"^p must be a real number.*got .*" + re.escape(shown)):
        qrita.top_p_mask(logits, p)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_p_array_wrong_dtype(logits, dtype):
    with pytest.raises(
        TypeError, match=f"p array must have a floating dtype, got dtype {np.dtype(dtype).name}"
    ):
        qrita.top_k_top_p_mask(logits, None, np.ones(4, dtype=dtype))


@pytest.mark.parametrize("shape", [(2,), (4, 1), ()])
def test_p_array_wrong_shape(logits, shape):
    msg = f"p array must have shape (4,) for logits of shape (4, 16), got shape {shape}"
    with pytest.raises(ValueError, match=re.escape(msg)):
        qrita.top_p_mask(logits, np.full(shape, 0.5))


@needs_torch
def test_p_mixed_library_and_device(logits):
    import torch

    with pytest.raises(TypeError, match="p is a torch array but logits is a numpy array"):
        qrita.top_p_mask(logits, torch.full((4,), 0.5))
    with pytest.raises(ValueError, match="p is on device meta but logits is on device cpu"):
        qrita.top_p_mask(torch.from_numpy(logits), torch.full((4,), 0.5, device="meta"))


@needs_jax
def test_p_mixed_library_jax(logits):
    import jax.numpy as jnp

    with pytest.raises(TypeError, match="p is a jax array but logits is a numpy array"):
        qrita.top_p_mask(logits, jnp.full((4,), 0.5))


# ---------------------------------------------------------------------------------------------
# fill / inplace


@pytest.mark.parametrize("fn", MASKS)
@pytest.mark.parametrize(
    ("fill", "shown"),
    [("x", "'x' (str)"), (None, "None (NoneType)"), (True, "True (bool)"), (1j, "(complex)")],
)
def test_fill_not_real(logits, fn, fill, shown):
    with pytest.raises(TypeError, match=r"fill must be a real number, got .*" + re.escape(shown)):
        fn(logits, fill=fill)


@pytest.mark.parametrize("fn", MASKS)
@pytest.mark.parametrize(
    ("inplace", "shown"), [(1, "1 (int)"), ("yes", "'yes' (str)"), (None, "None (NoneType)")]
)
def test_inplace_not_bool(logits, fn, inplace, shown):
    with pytest.raises(TypeError, match=r"inplace must be a bool, got " + re.escape(shown)):
        fn(logits, inplace=inplace)


@pytest.mark.parametrize("fn", MASKS)
def test_inplace_read_only_numpy(logits, fn):
    logits.flags.writeable = False
    with pytest.raises(
        ValueError, match=r"inplace=True needs a writable array, but logits \(numpy"
    ):
        fn(logits, inplace=True)
    fn(logits)  # out of place is fine


@needs_torch
def test_inplace_requires_grad_torch(logits):
    import torch

    x = torch.from_numpy(logits).requires_grad_(True)
    with pytest.raises(
        ValueError, match=r"inplace=True needs a writable array, but logits \(torch"
    ):
        qrita.top_k_mask(x, 2, inplace=True)


@needs_jax
def test_inplace_jax(logits):
    import jax.numpy as jnp

    with pytest.raises(ValueError, match=r"inplace=True needs a writable array, but logits \(jax"):
        qrita.top_k_top_p_mask(jnp.asarray(logits), 2, 0.5, inplace=True)


def test_errors_raised_before_any_work(logits):
    before = logits.copy()
    with pytest.raises(TypeError, match="p array"):
        qrita.top_k_top_p_mask(logits, 2, np.ones(4, dtype=np.int64), inplace=True)
    with pytest.raises(TypeError, match="fill"):
        qrita.top_k_mask(logits, 2, inplace=True, fill="x")
    np.testing.assert_array_equal(logits, before)


def test_positional_and_keyword_only(logits):
    with pytest.raises(TypeError):
        qrita.top_k_mask(logits, 2, True)  # inplace is keyword-only
    with pytest.raises(TypeError):
        qrita.top_k_mask(logits=logits, k=2)  # arrays are positional-only


# ---------------------------------------------------------------------------------------------
# top_k


@pytest.mark.parametrize(("bad", "tname"), [([1, 2, 3], "list"), (5, "int"), (None, "NoneType")])
def test_top_k_x_not_an_array(bad, tname):
    with pytest.raises(
        TypeError, match=re.escape(f"x must be a numpy, torch, cupy or jax array, got {tname}")
    ):
        qrita.top_k(bad, 1)


@pytest.mark.parametrize("dtype", [np.bool_, np.complex128, np.str_])
def test_top_k_x_bad_dtype(dtype):
    x = np.zeros(5, dtype=dtype)
    with pytest.raises(
        TypeError,
        match=f"x must have a floating or integer dtype, got dtype {np.dtype(dtype).name}",
    ):
        qrita.top_k(x, 1)


def test_top_k_x_zero_dim():
    with pytest.raises(
        ValueError, match=re.escape("x must have at least one dimension, got shape ()")
    ):
        qrita.top_k(np.ones((), dtype=np.float32), 0)


@pytest.mark.parametrize(
    ("k", "shown"),
    [
        (2.0, "2.0 (float)"),
        (True, "True (bool)"),
        (None, "None (NoneType)"),
        (np.array(2), "(ndarray)"),
    ],
)
def test_top_k_k_not_int(k, shown):
    with pytest.raises(TypeError, match=r"k must be an integer, got .*" + re.escape(shown)):
        qrita.top_k(np.zeros(5), k)


@pytest.mark.parametrize(
    ("shape", "k", "axis", "n"),
    [((5,), 6, -1, 5), ((5,), -1, -1, 5), ((2, 3), 3, 0, 2), ((2, 3), 4, 1, 3)],
)
def test_top_k_k_out_of_range(shape, k, axis, n):
    with pytest.raises(
        ValueError,
        match=re.escape(f"k must satisfy 0 <= k <= x.shape[axis] = {n}") + r".*got k=" + str(k),
    ):
        qrita.top_k(np.zeros(shape), k, axis=axis)


@pytest.mark.parametrize("axis", [2, -3, 10])
def test_top_k_axis_out_of_range(axis):
    with pytest.raises(
        ValueError, match=re.escape(f"axis {axis} is out of range for x of shape (2, 3)")
    ):
        qrita.top_k(np.zeros((2, 3)), 1, axis=axis)


@pytest.mark.parametrize(
    ("axis", "shown"), [(1.0, "1.0 (float)"), (None, "None (NoneType)"), (True, "True (bool)")]
)
def test_top_k_axis_not_int(axis, shown):
    with pytest.raises(TypeError, match=r"axis must be an integer, got " + re.escape(shown)):
        qrita.top_k(np.zeros((2, 3)), 1, axis=axis)


@pytest.mark.parametrize("mode", ["max", "LARGEST", None, 1])
def test_top_k_mode(mode):
    with pytest.raises(
        ValueError, match=r"mode must be 'largest' or 'smallest', got " + re.escape(repr(mode))
    ):
        qrita.top_k(np.zeros(3), 1, mode=mode)


@pytest.mark.parametrize(
    ("value", "shown"), [(1, "1 (int)"), ("no", "'no' (str)"), (None, "None (NoneType)")]
)
def test_top_k_sorted_not_bool(value, shown):
    with pytest.raises(TypeError, match=r"sorted must be a bool, got " + re.escape(shown)):
        qrita.top_k(np.zeros(3), 1, sorted=value)


@needs_torch
def test_top_k_torch_bool():
    import torch

    with pytest.raises(TypeError, match="x must have a floating or integer dtype, got dtype bool"):
        qrita.top_k(torch.zeros(4, dtype=torch.bool), 1)
