"""The oracle against brute-force definitions of docs/spec.md on tiny rows.

The brute force is written independently: explicit Python sorting with tuple keys, and exact
rational masses (fractions.Fraction of the float64 weights), compared with the oracle's keep-masks
and top_k results.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qrita.reference import oracle
from qrita.testing.compare import bits_of

VALUES = [-math.inf, math.inf, math.nan, -0.0, 0.0, 1.0, -1.0, 2.5, 0.5, 3.0, -20.0]
P_EDGES = [0.0, -0.5, 1e-9, 0.1, 0.25, 0.3, 0.5, 0.6, 0.75, 0.9, 1 - 1e-7, 1.0, 1.5, math.nan]


def brute_order(vals: list[float], mode: str = "largest") -> list[int]:
    """Rank order by explicit sorting: value (desc or asc), then index; NaN last."""

    def key(i: int):
        v = vals[i]
        if isinstance(v, float) and math.isnan(v):
            return (1, 0.0, i)
        return (0, -v if mode == "largest" else v, i)

    return sorted(range(len(vals)), key=key)


def brute_keep_row(vals: list[float], k, p) -> list[bool]:
    """docs/spec.md rules 1-4 for one row, with exact rational masses."""
    V = len(vals)
    order = brute_order(vals)
    k_on = k is not None and 0 < k < V
    p_on = p is not None and not math.isnan(p) and p < 1
    if p_on and p <= 0:  # first entry only
        keep = [False] * V
        keep[order[0]] = True
        return keep
    surv = order[:k] if k_on else order
    kept = list(surv)
    if p_on:
        sv = [vals[i] for i in surv]
        if any(v == math.inf for v in sv):
            w = [Fraction(1) if v == math.inf else Fraction(0) for v in sv]
        elif any(math.isfinite(v) for v in sv):
            mx = max(v for v in sv if math.isfinite(v))
            w = [Fraction(math.exp(v - mx)) if math.isfinite(v) else Fraction(0) for v in sv]
        else:
            w = None  # undefined: keep all survivors
        if w is not None:
            total = sum(w)
            kept, before = [], Fraction(0)
            for i, wi in zip(surv, w):
                if before / total < Fraction(p):
                    kept.append(i)
                before += wi
    keep = [False] * V
    for i in kept:
        keep[i] = True
    return keep


@st.composite
def rows(draw, max_v: int = 8):
    B = draw(st.integers(1, 3))
    V = draw(st.integers(1, max_v))
    pool = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=5))
    vals = draw(st.lists(st.sampled_from(pool), min_size=B * V, max_size=B * V))
    dtype = draw(st.sampled_from([np.float32, np.float16, np.float64]))
    x = np.array(vals, dtype=np.float64).reshape(B, V).astype(dtype)
    k_el = st.integers(-2, V + 2)
    k = draw(
        st.one_of(
            st.none(),
            k_el,
            st.lists(k_el, min_size=B, max_size=B).map(lambda a: np.array(a, np.int64)),
        )
    )
    p_el = st.sampled_from(P_EDGES)
    p = draw(
        st.one_of(
            st.none(),
            p_el,
            st.lists(p_el, min_size=B, max_size=B).map(lambda a: np.array(a, np.float64)),
        )
    )
    return x, k, p


def _per_row(v, b):
    if v is None:
        return None
    a = np.asarray(v)
    return a.reshape(-1)[b].item() if a.ndim else a.item()


@settings(max_examples=1000)
@given(rows())
def test_keep_mask_matches_brute_force(args):
    x, k, p = args
    got = oracle.keep_mask(x, k, p)
    for b in range(x.shape[0]):
        vals = [float(v) for v in x[b].astype(np.float64)]
        want = brute_keep_row(vals, _per_row(k, b), _per_row(p, b))
        assert got[b].tolist() == want, (vals, k, p)
    out = oracle.top_k_top_p_mask(x, k, p, fill=-7.0)
    assert out.dtype == x.dtype
    assert np.array_equal(bits_of(out[got]), bits_of(x[got]))  # kept: bit for bit
    assert np.all(out[~got] == -7.0)


@settings(max_examples=500)
@given(rows(), st.sampled_from(["largest", "smallest"]), st.booleans(), st.data())
def test_top_k_matches_brute_force(args, mode, srt, data):
    x = args[0]
    axis = data.draw(st.sampled_from([0, 1, -1, -2]))
    n = x.shape[axis]
    k = data.draw(st.integers(0, n))
    res = oracle.top_k(x, k, axis=axis, mode=mode, sorted=srt)
    assert res.indices.dtype == np.int64 and res.values.dtype == x.dtype
    xm = np.moveaxis(x, axis, -1)
    vi = np.moveaxis(res.indices, axis, -1)
    vv = np.moveaxis(res.values, axis, -1)
    for r in range(xm.shape[0]):
        vals = [float(v) for v in xm[r].astype(np.float64)]
        want = brute_order(vals, mode)[:k]
        if not srt:
            want = sorted(want)
        assert vi[r].tolist() == want
        assert np.array_equal(vv[r], xm[r][want], equal_nan=True)


def test_top_k_integers_and_empty():
    x = np.array([[3, -5, 3, 7, -5]], dtype=np.int64)
    assert oracle.top_k(x, 3).indices.tolist() == [[3, 0, 2]]
    assert oracle.top_k(x, 3, mode="smallest").indices.tolist() == [[1, 4, 0]]
    x8 = np.array([[0, 255, 255, 1]], dtype=np.uint8)
    assert oracle.top_k(x8, 2).indices.tolist() == [[1, 2]]
    xi = np.array([[np.iinfo(np.int32).min, np.iinfo(np.int32).max, 0]], dtype=np.int32)
    assert oracle.top_k(xi, 3).indices.tolist() == [[1, 2, 0]]
    e = oracle.top_k(np.ones((2, 3), np.float32), 0)
    assert e.values.shape == (2, 0) and e.values.dtype == np.float32 and e.indices.dtype == np.int64


@pytest.mark.parametrize("p", P_EDGES)
def test_p_edges_on_a_fixed_row(p):
    x = np.array([[0.0, 1.0, -np.inf, 1.0, np.nan, -0.0, 2.5, 0.5]], dtype=np.float32)
    for k in (None, -1, 0, 1, 2, 3, 7, 8, 9):
        got = oracle.keep_mask(x, k, p)[0].tolist()
        assert got == brute_keep_row([float(v) for v in x[0]], k, p)
        if p <= 0:
            assert got == [i == 6 for i in range(8)]
        if (p >= 1 or math.isnan(p)) and k in (None, -1, 0, 8, 9):
            assert all(got)


def test_spec_examples():
    # ties by lower index; -0.0 == 0.0; NaN after -inf
    x = np.array([[0.0, -0.0, np.nan, -np.inf, 0.0]], dtype=np.float32)
    assert oracle.order(x)[0].tolist() == [0, 1, 4, 3, 2]
    assert oracle.order(x, "smallest")[0].tolist() == [3, 0, 1, 4, 2]
    # +inf entries share all the mass
    x = np.array([[np.inf, 5.0, np.inf, np.inf]], dtype=np.float32)
    assert oracle.keep_mask(x, None, 0.5)[0].tolist() == [True, False, True, False]
    # all -inf / NaN: top-p keeps all survivors
    x = np.array([[-np.inf, np.nan, -np.inf]], dtype=np.float32)
    assert oracle.keep_mask(x, 2, 0.1)[0].tolist() == [True, False, True]
    # mass before exactly p is not kept (< p)
    x = np.zeros((1, 4), dtype=np.float32)
    assert oracle.keep_mask(x, None, 0.5)[0].tolist() == [True, True, False, False]
    # exp overflow trap: a +100 peak holds all the mass
    x = np.array([[0.0, 100.0, 1.0]], dtype=np.float32)
    assert oracle.keep_mask(x, None, 0.999999)[0].tolist() == [False, True, False]


def test_row_params():
    k, p = oracle.row_params(
        np.array([0, 1, 5, 6, -3]), np.array([0.0, 1.0, np.nan, 0.5, -1]), 5, 6
    )
    assert k.tolist() == [1, 1, 5, 0, 1]
    assert np.isnan(p[:3]).all() and p[3] == 0.5 and np.isnan(p[4])


def test_order_memo_is_exact_and_private():
    """oracle.order remembers recent large arrays' orders: a hit must be exactly a fresh stable
    argsort, also after the same array is changed in place, and callers get their own copy."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 40000)).astype(np.float32)
    x[:, ::7] = 0.5  # ties
    first = oracle.order(x)
    first[0, 0] = -1  # the caller's copy: the memo must not see this
    again = oracle.order(x)
    want = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")
    np.testing.assert_array_equal(again, want)
    x[1, 123] = 99.0  # same array object, new values
    np.testing.assert_array_equal(oracle.order(x),
                                  np.argsort(-x.astype(np.float64), axis=-1, kind="stable"))
    np.testing.assert_array_equal(oracle.order(x, "smallest"),
                                  np.argsort(x.astype(np.float64), axis=-1, kind="stable"))
