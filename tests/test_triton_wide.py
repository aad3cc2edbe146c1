"""The keyed band's steps (qrita/backends/triton/wide.py) in small kernels: a 16-bit value's
index (``key >> KEY_SHIFT``) and back (``value_key``), and the values' masses
(``_value_masses``), on every bfloat16 / float16 value kind (negative, -0.0, subnormal, +-inf)."""

from __future__ import annotations

import numpy as np
import pytest
from _triton_env import DEVICE, torch, triton  # first: sets up triton

from qrita.backends.triton import wide  # noqa: E402
from qrita.backends.triton.primitives import key_to_value, order_key  # noqa: E402
from qrita.reference.keys import order_key as order_key_host  # noqa: E402

tl = triton.language

BINS = 64
SHIFTS = {"bfloat16": 16, "float16": 13}


@triton.jit
def _round_trip_kernel(x_ptr, key_ptr, back_ptr, value_ptr, KEY_SHIFT: tl.constexpr,
                       N: tl.constexpr):
    lanes = tl.arange(0, N)
    key = order_key(tl.load(x_ptr + lanes).to(tl.float32))
    back = wide.value_key((key >> KEY_SHIFT).to(tl.int64), KEY_SHIFT)
    tl.store(key_ptr + lanes, key)
    tl.store(back_ptr + lanes, back)
    tl.store(value_ptr + lanes, key_to_value(back))


@triton.jit
def _masses_kernel(counts_ptr, params_ptr, out_ptr, KEY_SHIFT: tl.constexpr):
    counts = tl.load(counts_ptr + tl.arange(0, 64))
    first_value = tl.load(params_ptr + 0).to(tl.int64)
    row_max = tl.load(params_ptr + 1).to(tl.float32, bitcast=True)
    inf_mode = tl.load(params_ptr + 2) != 0
    tl.store(out_ptr + tl.arange(0, 64),
             wide._value_masses(counts, first_value, row_max, inf_mode, KEY_SHIFT))


def _values(dtype: str, rng: np.random.Generator) -> torch.Tensor:
    """64 values of the dtype: random bit patterns and the edge kinds. (NaN and subnormals
    replaced by 0: Triton 3.9's interpreter widens bfloat16 subnormals to float32 inexactly,
    e.g. bits 0x000B -> 0x00300000, not 0x000B0000; a GPU shifts the bits.)"""
    bits = rng.integers(0, 1 << 16, size=64, dtype=np.int64).astype(np.uint16)
    x = torch.from_numpy(bits.view(np.int16)).view(getattr(torch, dtype))
    tiny = torch.finfo(x.dtype).tiny
    x = torch.where(torch.isnan(x) | (x.float().abs() < tiny), torch.zeros_like(x), x)
    edges = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 1.0, -1.0, 1e-7, -1e-7,
                          65504.0, -65504.0, tiny, -tiny], dtype=getattr(torch, dtype))
    x[: edges.numel()] = edges
    return x.to(DEVICE)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_value_index_round_trips(dtype):
    """For every 16-bit value, ``value_key(key >> KEY_SHIFT)`` is its float32 rank key and that
    key's value is the value itself (-0.0 as +0.0): the index names the value."""
    x = _values(dtype, np.random.default_rng(3))
    key, back = (torch.empty(64, dtype=torch.int32, device=DEVICE) for _ in range(2))
    value = torch.empty(64, dtype=torch.float32, device=DEVICE)
    _round_trip_kernel[(1,)](x, key, back, value, KEY_SHIFT=SHIFTS[dtype], N=64)
    want = order_key_host(x.float().cpu().numpy())
    np.testing.assert_array_equal(key.cpu().numpy(), want)
    np.testing.assert_array_equal(back.cpu().numpy(), want)
    expected = x.float().cpu().numpy()
    expected[expected == 0] = 0.0
    np.testing.assert_array_equal(value.cpu().numpy().view(np.int32), expected.view(np.int32))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_value_masses_of_empty_values_are_zero(dtype):
    """A value's mass is its count times its weight, exp(x - max); a value with no copies weighs
    nothing even where exp overflows (values far above the row's max: 0 x inf would be NaN)."""
    shift = SHIFTS[dtype]
    row_max = torch.tensor([8192.0], dtype=getattr(torch, dtype)).float()
    top = int(order_key_host(row_max.numpy())[0]) >> shift
    first_value = top - 2  # bins 0..2: up to the max; bins 3..63: above it
    counts = np.zeros(BINS, dtype=np.int32)
    counts[[0, 2]] = [7, 3]
    params = torch.tensor([first_value, int(row_max.numpy().view(np.int32)[0]), 0],
                          dtype=torch.int32, device=DEVICE)
    out = torch.empty(BINS, dtype=torch.float32, device=DEVICE)
    _masses_kernel[(1,)](torch.from_numpy(counts).to(DEVICE), params, out, KEY_SHIFT=shift)
    got = out.cpu().numpy()
    assert np.isfinite(got).all(), got
    values = np.array([np.float32(torch.tensor(v).float()) for v in
                       [wide_value(first_value + j, shift) for j in (0, 2)]])
    want = counts[[0, 2]] * np.exp(values.astype(np.float64) - 8192.0)
    np.testing.assert_allclose(got[[0, 2]], want, rtol=1e-6)
    assert (got[3:] == 0).all() and got[1] == 0


def wide_value(index: int, shift: int) -> float:
    """The float32 value whose rank key has index ``index`` (``wide.value_key`` on the host)."""
    low = (1 << shift) - 1 if index < 0 else 0
    key = np.int64((index << shift) | low).astype(np.int32)
    bits = key if key >= 0 else key ^ np.int32(0x7FFFFFFF)
    return float(np.array([bits], dtype=np.int32).view(np.float32)[0])
