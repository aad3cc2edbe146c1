"""Order keys (docs/algorithm.md section 0), weights, and the computed inverse normal CDF."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qrita.reference.keys import (
    KEY_NAN,
    KEY_NAN64,
    KEY_NEG_INF,
    KEY_POS_INF,
    key_to_value,
    order_key,
    weight,
)
from qrita.reference.ndtri import ndtri, ndtri_array


def _check_monotone_exact(x: np.ndarray) -> None:
    """Keys sort exactly like values: equal values (only ±0 among distinct bit patterns) share a
    key, larger values have larger keys, NaN has KEY_NAN, and key_to_value inverts."""
    keys = order_key(x)
    with np.errstate(invalid="ignore"):  # signalling NaN patterns
        nan = np.isnan(x.astype(np.float64))
    nan_key = KEY_NAN64 if x.dtype == np.float64 else KEY_NAN
    assert np.all(keys[nan] == nan_key)
    v = x[~nan].astype(np.float32).astype(np.float64) if x.dtype != np.float64 else x[~nan]
    kv = keys[~nan].astype(np.int64)
    assert np.all(kv > nan_key)
    o = np.argsort(v, kind="stable")
    vs, ks = v[o], kv[o]
    same = vs[1:] == vs[:-1]
    assert np.all(ks[1:][same] == ks[:-1][same])
    assert np.all(ks[1:][~same] > ks[:-1][~same])
    back = key_to_value(kv, 64 if x.dtype == np.float64 else 32).astype(np.float64)
    assert np.array_equal(back, np.where(v == 0, 0.0, v))
    assert not np.any(np.signbit(back[back == 0]))


def test_all_float16_bit_patterns():
    x = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    keys = order_key(x)
    assert keys.dtype == np.int32
    _check_monotone_exact(x)
    # the key of a float16 is the key of the same float32 value
    assert np.array_equal(keys, order_key(x.astype(np.float32)))


def test_all_bfloat16_bit_patterns():
    ml = pytest.importorskip("ml_dtypes")
    x = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(ml.bfloat16)
    keys = order_key(x)
    assert keys.dtype == np.int32
    _check_monotone_exact(x)
    assert np.array_equal(keys, order_key(x.astype(np.float32)))


def test_random_float32_bit_patterns():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, size=400_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    _check_monotone_exact(x)
    # pairwise: a > b iff key(a) > key(b), for non-NaN values
    a, b = x[: x.size // 2], x[x.size // 2 :]
    ok = ~(np.isnan(a) | np.isnan(b))
    ka, kb = order_key(a)[ok], order_key(b)[ok]
    assert np.array_equal(a[ok] > b[ok], ka > kb)
    assert np.array_equal(a[ok] == b[ok], ka == kb)


def test_random_float64_bit_patterns():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**64, size=200_000, dtype=np.uint64).view(np.float64)
    keys = order_key(x)
    assert keys.dtype == np.int64
    _check_monotone_exact(x)


def test_specials():
    x = np.array(
        [
            -np.inf,
            -np.finfo(np.float32).max,
            -1.0,
            -np.finfo(np.float32).smallest_subnormal,
            -0.0,
            0.0,
            np.finfo(np.float32).smallest_subnormal,
            1.0,
            np.finfo(np.float32).max,
            np.inf,
        ],
        dtype=np.float32,
    )
    k = order_key(x)
    assert k[0] == KEY_NEG_INF == -2139095041 and k[-1] == KEY_POS_INF == 2139095040
    assert k[4] == k[5] == 0 and k[6] == 1 and k[3] == -2
    assert np.all(np.diff(k[[0, 1, 2, 3, 4, 6, 7, 8, 9]].astype(np.int64)) > 0)
    nans = np.array([np.nan, -np.nan], dtype=np.float32)
    nans = np.concatenate(
        [nans, np.array([0x7FC00001, 0xFFFFFFFF, 0x7F800001], np.uint32).view(np.float32)]
    )
    assert np.all(order_key(nans) == KEY_NAN) and KEY_NAN == -(2**31) < KEY_NEG_INF
    assert order_key(np.array([np.nan])).tolist() == [KEY_NAN64]
    assert key_to_value(np.array([KEY_NEG_INF, 0, 1])).tolist()[0] == -np.inf
    with pytest.raises(TypeError):
        order_key(np.arange(3))


def test_weight():
    x = np.array([0.0, -1.0, -np.inf, np.nan, 2.0], dtype=np.float32)
    w = weight(x, 2.0)
    assert w.dtype == np.float64
    np.testing.assert_array_equal(w, [math.exp(-2.0), math.exp(-3.0), 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(
        weight(np.array([np.inf, 1.0, np.inf, np.nan]), np.inf), [1, 0, 1, 0]
    )
    np.testing.assert_array_equal(weight(np.array([-np.inf, np.nan]), -np.inf), [0, 0])


# -------------------------------------------------------------------------------------- ndtri
def test_ndtri_against_scipy():
    special = pytest.importorskip("scipy.special")
    p = np.concatenate(
        [
            np.logspace(-300, -1, 1500),
            np.linspace(1e-3, 1 - 1e-3, 4001),
            1 - np.logspace(-16, -1, 800),
            [1e-12, 1 - 1e-12, 0.25, 0.75, 0.5, 0.5 + 1e-12, 0.5 - 1e-15, 0.5 + 2**-53, 0.3, 0.7],
        ]
    )
    got = ndtri_array(p)
    want = special.ndtri(p)
    rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
    # around 1/2 the quantile itself is tiny: compare absolutely there
    ok = (rel <= 1e-12) | (np.abs(got - want) <= 1e-16)
    assert ok.all(), (p[~ok], got[~ok], want[~ok])


def test_ndtri_edges():
    assert ndtri(0.0) == -math.inf and ndtri(1.0) == math.inf and ndtri(0.5) == 0.0
    assert math.isnan(ndtri(-0.1)) and math.isnan(ndtri(1.5)) and math.isnan(ndtri(math.nan))
    assert ndtri(0.3) == -ndtri(0.7) or abs(ndtri(0.3) + ndtri(0.7)) < 1e-15
    assert ndtri_array(np.array([[0.5, 0.0]])).shape == (1, 2)
