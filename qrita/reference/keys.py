"""Order keys and weights (docs/algorithm.md, section 0).

Every floating value is mapped to a signed integer *order key* such that a larger value has a larger
key, ``-0.0`` and ``+0.0`` share the key 0, and NaN gets the lowest key of all. With these keys the
rank order of docs/spec.md (value descending, ties by lower index, NaN last) is (key descending,
index ascending), and every comparison of the algorithm is an exact integer comparison.

The GPU kernels use the same mapping, so it is kept deliberately simple:

* float16, bfloat16 (``ml_dtypes``, ``dtype.name == "bfloat16"``) and float32 are upcast to float32
  (exact); ``-0.0 -> +0.0``; ``bits = bitcast_int32(x)``;
  ``key = bits if bits >= 0 else bits ^ 0x7FFFFFFF``; NaN -> :data:`KEY_NAN` ``= -2**31``.
  The key of -inf is ``-2139095041``, of +inf ``2139095040``.
* float64 is *not* narrowed to float32 (that would merge distinct values and break exactness):
  it gets the same construction on 64 bits, an int64 key with ``KEY_NAN64 = -2**63``.
  Only the NumPy mirror accepts float64; its pivot arithmetic is done in Python integers there.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "KEY_NAN",
    "KEY_NAN64",
    "KEY_NEG_INF",
    "KEY_POS_INF",
    "key_bits",
    "order_key",
    "key_to_value",
    "as_float32",
    "weight",
]

#: Key of every NaN (32-bit keys): below the key of -inf.
KEY_NAN: int = -(2**31)
#: Key of every NaN for float64 input (64-bit keys).
KEY_NAN64: int = -(2**63)
#: Keys of -inf / +inf (32-bit keys).
KEY_NEG_INF: int = -2139095041
KEY_POS_INF: int = 2139095040

_SUPPORTED = ("float16", "bfloat16", "float32", "float64")


def as_float32(x: np.ndarray) -> np.ndarray:
    """Exact float32 copy of a float16 / bfloat16 / float32 array (float64 is refused)."""
    x = np.asarray(x)
    name = x.dtype.name
    if name not in ("float16", "bfloat16", "float32"):
        raise TypeError(f"as_float32: expected float16/bfloat16/float32, got dtype {name}")
    return x.astype(np.float32)


def key_bits(x: np.ndarray) -> int:
    """Width of the order keys of ``x``'s dtype: 32 (fp16/bf16/fp32) or 64 (float64)."""
    name = np.asarray(x).dtype.name
    if name not in _SUPPORTED:
        raise TypeError(f"order_key: unsupported dtype {name}; expected one of {_SUPPORTED}")
    return 64 if name == "float64" else 32


def order_key(x: np.ndarray) -> np.ndarray:
    """Order keys of ``x`` (any shape).

    Parameters
    ----------
    x : ndarray, float16 / bfloat16 / float32 (-> int32 keys) or float64 (-> int64 keys)

    Returns
    -------
    ndarray, same shape, int32 (or int64 for float64 input). ``key(a) > key(b)`` iff ``a > b``
    for non-NaN a, b; ``key(-0.0) == key(+0.0) == 0``; NaN -> ``KEY_NAN`` (``KEY_NAN64``).
    """
    x = np.asarray(x)
    if key_bits(x) == 64:
        xf = x.astype(np.float64)  # a copy
        ity, mask, nan_key = np.int64, np.int64(0x7FFFFFFFFFFFFFFF), np.int64(KEY_NAN64)
    else:
        xf = x.astype(np.float32)  # exact upcast, a copy
        ity, mask, nan_key = np.int32, np.int32(0x7FFFFFFF), np.int32(KEY_NAN)
    xf[xf == 0] = 0.0  # -0.0 -> +0.0
    bits = xf.view(ity)
    key = np.where(bits >= 0, bits, bits ^ mask)
    key = np.where(np.isnan(xf), nan_key, key)
    return key.astype(ity, copy=False)


def key_to_value(key: np.ndarray, bits: int = 32) -> np.ndarray:
    """Inverse of :func:`order_key` for non-NaN keys.

    Parameters
    ----------
    key : ndarray of integers (keys of width ``bits``); must not be ``KEY_NAN``
    bits : 32 (returns float32) or 64 (returns float64)

    Returns
    -------
    ndarray of float32 (float64): the value whose key is ``key`` (0 gives +0.0).
    """
    if bits == 64:
        k = np.asarray(key, dtype=np.int64)
        b = np.where(k >= 0, k, k ^ np.int64(0x7FFFFFFFFFFFFFFF))
        return b.astype(np.int64).view(np.float64)
    k = np.asarray(key, dtype=np.int64)
    if np.any((k < KEY_NAN) | (k > 2**31 - 1)):
        raise ValueError("key_to_value: key out of int32 range")
    k = k.astype(np.int32)
    b = np.where(k >= 0, k, k ^ np.int32(0x7FFFFFFF)).astype(np.int32)
    return b.view(np.float32)


def weight(x: np.ndarray, row_max: float) -> np.ndarray:
    """Unnormalised probabilities (float64) of values ``x`` in a row whose non-NaN max is ``row_max``.

    ``exp(x - row_max)`` for finite x, 0 for -inf and NaN; if ``row_max`` is +inf, 1 for the +inf
    entries and 0 for all others. ``row_max`` = -inf or NaN (no finite, no +inf entry: the mass is
    undefined) gives all zeros.

    Parameters
    ----------
    x : ndarray, any float dtype (converted exactly to float64)
    row_max : float, the max over the row's non-NaN values

    Returns
    -------
    ndarray, float64, same shape as x
    """
    x = np.asarray(x)
    xf = (
        x.astype(np.float32).astype(np.float64)
        if x.dtype.name == "bfloat16"
        else x.astype(np.float64)
    )
    if row_max == np.inf:
        return (xf == np.inf).astype(np.float64)
    w = np.zeros(xf.shape, dtype=np.float64)
    if not np.isfinite(row_max):
        return w
    fin = np.isfinite(xf)
    w[fin] = np.exp(xf[fin] - row_max)
    return w
