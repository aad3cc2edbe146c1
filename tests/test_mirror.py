"""The algorithm mirror (qrita/reference/mirror.py) against the oracle.

Full masks are compared (assert_mask_matches with margin 1e-9: float64-tight), on thousands of rows
from qrita.testing.generators.cases, with small scratch capacities that force the fallback, and on
random tiny rows (Hypothesis) with tiny tiles and capacities.
"""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qrita.reference import mirror, oracle
from qrita.reference.keys import KEY_NAN, order_key
from qrita.testing import generators as gen
from qrita.testing.compare import assert_mask_matches

MARGIN = 1e-9
MAX_ROUNDS = 16


def _check(x, k, p, stats: collections.Counter | None = None, **kw):
    out, reps = mirror.top_k_top_p_mask(x, k, p, report=True, **kw)
    assert out.dtype == x.dtype and out.shape == x.shape
    assert_mask_matches(out, x, k, p, margin=MARGIN)
    for r in reps:
        assert r.rounds_k <= MAX_ROUNDS and r.rounds_p <= MAX_ROUNDS, r
        if stats is not None:
            stats[r.path] += 1
            stats["rows"] += 1
            stats["max_rounds"] = max(stats["max_rounds"], r.rounds_k, r.rounds_p)
    return out, reps


@pytest.mark.parametrize("cap", [4096, 64, 8])
def test_cases_small_vocab(cap):
    stats: collections.Counter = collections.Counter()
    for case in gen.cases((1, 2, 3, 1023), ("float32", "float16", "bfloat16"), seed=0):
        try:
            _check(case.logits, case.k, case.p, stats, cap=cap)
        except AssertionError as e:
            raise AssertionError(f"{case.name} cap={cap}: {e}") from None
    assert stats["rows"] > 5000
    assert stats["fallback"] > 0
    if cap == 4096:
        assert stats["hit"] > 1000
    else:
        assert stats["fallback"] > 500


@pytest.mark.parametrize("cap", [4096, 64])
def test_cases_large_vocab(cap):
    fams = [
        "zipf",
        "gaussian",
        "tied_boundary",
        "sorted_asc",
        "grammar",
        "posinf",
        "quantised2",
        "peaked",
    ]
    stats: collections.Counter = collections.Counter()
    for case in gen.cases((32001,), ("float32",), seed=1, families=fams):
        try:
            _check(case.logits, case.k, case.p, stats, cap=cap)
        except AssertionError as e:
            raise AssertionError(f"{case.name} cap={cap}: {e}") from None
    assert stats["hit"] > 0 and stats["fallback"] > 0


def test_cases_large_vocab_half_precision():
    fams = ["zipf", "tied_boundary", "extremes"]
    for dtype in ("float16", "bfloat16"):
        for case in gen.cases((32001,), (dtype,), seed=2, families=fams):
            if isinstance(case.k, np.ndarray) or isinstance(case.p, np.ndarray):
                continue
            _check(case.logits, case.k, case.p, cap=256)


def test_workloads_hit_and_fallback():
    """The common workloads hit with the default capacity; cap=8 forces every row to the fallback."""
    rng = np.random.default_rng(5)
    for x in (gen.zipf_logits(4, 32001, 1.1, rng), gen.gaussian_logits(4, 32001, 2.0, rng)):
        for k, p in [(50, None), (100, 0.9), (1000, None)]:
            _, reps = _check(x, k, p)
            if k < 1000:  # k = 1000: 4x oversampling is close to CAP = 4096, either path is fine
                assert all(r.path == "hit" for r in reps), [r.path for r in reps]
            _, reps = _check(x, k, p, cap=8)
            assert all(r.path == "fallback" and r.full_row_rounds > 0 for r in reps)
        _, reps = _check(x, None, 0.9, cap=8)
        assert all(r.path == "fallback" for r in reps)


def test_sorted_ascending_first_tile_is_wrong():
    """Ascending rows: the first tile holds the smallest values, the cutoff is far too low, there
    are far more candidates than CAP: the fallback decides."""
    x = gen.sorted_rows(3, 20000, True, 7)
    _, reps = _check(x, 50, None, block=1024, cap=512)
    assert all(r.path == "fallback" and r.count_cand > 512 for r in reps)
    _, reps = _check(x, None, 0.9, block=1024, cap=512)
    assert all(r.path == "fallback" for r in reps)
    # descending rows: the cutoff is far too high, too few candidates
    x = gen.sorted_rows(2, 20000, False, 8)
    _, reps = _check(x, 50, None, block=1024, cap=512)
    assert all(r.path == "fallback" and r.count_cand < 50 for r in reps)


def test_tie_larger_than_cap_found_in_full_row_rounds():
    x = gen.five_zeros_rows(2, 5000)
    out, reps = _check(x, 3, None, cap=8)
    assert np.flatnonzero(out[0] != -np.inf).tolist() == [0, 1, 2]
    assert reps[0].boundary_k == 0 and reps[0].tie_budget_k == 2
    x = gen.all_equal_rows(1, 3000, 1.25)
    out, reps = _check(x, 1000, 0.5, cap=16)
    assert np.flatnonzero(out[0] != -np.inf).tolist() == list(range(500))
    assert reps[0].tie_budget_k == 1000 and reps[0].tie_budget_p == 500


def test_top_p_tie_budget():
    x = gen.two_level_rows(1, 10, 3, 2.0)  # 3 x 2.0, 7 x 0.0
    for p in (0.1, 0.5, 0.8, 0.95, 0.999):
        for cap in (2, 4096):
            _check(x, None, p, cap=cap)
            _check(x, 5, p, cap=cap)
            _check(x, 2, p, cap=cap)


def test_plus_inf_and_nan_rows():
    x = np.array([[1.0, np.inf, np.nan, np.inf, -np.inf, np.inf, 3.0]], dtype=np.float32)
    for k in (None, 1, 2, 3, 5, 6):
        for p in (None, 0.2, 0.34, 0.5, 0.67, 0.9, 0.0):
            for cap in (1, 2, 4096):
                _check(x, k, p, cap=cap, block=2)
    nan_row = np.full((1, 6), np.nan, dtype=np.float32)
    for k, p in [(3, None), (None, 0.5), (2, 0.5), (None, 0.0)]:
        _check(nan_row, k, p, cap=2)
    out, _ = _check(np.array([[np.nan, -np.inf, np.nan, -np.inf]], np.float32), 3, None, cap=1)
    assert np.isnan(out[0, 0]) and out[0, 2] == -np.inf  # order: index 1, 3 (-inf), 0, 2 (NaN)


def test_float64_and_ml_dtypes_bfloat16():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 3000))
    x[0, :20] = x[0, 20]
    x[1, 5] = np.nan
    x[2, 7] = np.inf
    x[3, ::2] = -np.inf
    x = x + np.array([1e-13, 0, 0, 0])[:, None]  # values float32 cannot tell apart
    for k, p in [(50, None), (None, 0.9), (100, 0.9), (3, None), (None, 0.0)]:
        for cap in (8, 4096):
            _check(x, k, p, cap=cap)
    x = np.array([[1.0, 1.0 + 2**-40, 1.0 + 2**-41, 1.0]])
    out = mirror.top_k_mask(x, 2)
    assert np.flatnonzero(out[0] != -np.inf).tolist() == [1, 2]
    ml = pytest.importorskip("ml_dtypes")
    xb = rng.standard_normal((3, 2000)).astype(ml.bfloat16)
    for k, p in [(50, None), (None, 0.9), (7, 0.5)]:
        for cap in (8, 4096):
            out = mirror.top_k_top_p_mask(xb, k, p, cap=cap)
            assert out.dtype == xb.dtype
            assert_mask_matches(out.astype(np.float32), xb.astype(np.float32), k, p, margin=MARGIN)


def test_one_dimensional_fill_and_dtype():
    x = np.array([0.5, 3.0, -1.0, 3.0, np.nan], dtype=np.float16)
    out = mirror.top_k_mask(x, 2, fill=0.0)
    assert out.dtype == np.float16 and out.shape == (5,)
    assert out.tolist() == [0.0, 3.0, 0.0, 3.0, 0.0]
    out = mirror.top_p_mask(x, 0.4, fill=np.nan)
    assert out[1] == 3.0 and np.isnan(out[[0, 2, 3, 4]]).all()
    np.testing.assert_array_equal(mirror.top_k_top_p_mask(x), x)
    assert mirror.top_k_top_p_mask(np.zeros((2, 0), np.float32), 3, 0.5).shape == (2, 0)


def test_bad_arguments():
    with pytest.raises(TypeError):
        mirror.top_k_mask(np.arange(4), 2)
    with pytest.raises(ValueError):
        mirror.top_k_mask(np.zeros((2, 2, 2), np.float32), 2)
    with pytest.raises(TypeError):
        mirror.top_k_mask(np.zeros(4, np.float32), 2.0)


def test_report_fields():
    x = gen.gaussian_logits(1, 5000, 2.0, 3)
    _, (r,) = mirror.top_k_top_p_mask(x, 50, 0.9, report=True)
    assert r.path == "hit" and r.k == 50 and r.p == 0.9
    assert r.cutoff_key == int(order_key(np.array([r.sigma_cutoff], np.float32))[0])
    assert r.count_cand == int((order_key(x[0]) >= r.cutoff_key).sum())
    assert 50 <= r.count_cand <= 4096 and r.n_finite_sample == 4096
    assert r.boundary_p >= r.boundary_k and 1 <= r.n_kept <= 50
    assert r.tie_budget_k == 1 and r.tie_budget_p == 1
    _, (r,) = mirror.top_k_top_p_mask(x, None, None, report=True)
    assert r.path == "off" and r.n_kept == 5000
    _, (r,) = mirror.top_k_top_p_mask(np.full((1, 4), -np.inf, np.float32), None, 0.5, report=True)
    assert r.path == "off" and r.n_kept == 4
    _, (r,) = mirror.top_k_top_p_mask(np.full((1, 4), np.nan, np.float32), 2, None, report=True)
    assert r.boundary_k == KEY_NAN and r.tie_budget_k == 2


# ------------------------------------------------------------------ random tiny rows (Hypothesis)
_VALUES = [-np.inf, np.inf, np.nan, -0.0, 0.0, 1.0, -1.0, 2.5, 0.5, 3.0, -30.0, 100.0, 1e-30]


@st.composite
def _tiny(draw):
    B = draw(st.integers(1, 3))
    V = draw(st.integers(1, 24))
    pool = draw(st.lists(st.sampled_from(_VALUES), min_size=1, max_size=6))
    vals = draw(st.lists(st.sampled_from(pool), min_size=B * V, max_size=B * V))
    dtype = draw(st.sampled_from([np.float32, np.float16, np.float64]))
    x = np.array(vals, dtype=np.float64).reshape(B, V).astype(dtype)
    k = draw(
        st.one_of(
            st.none(),
            st.integers(-1, V + 1),
            st.lists(st.integers(-1, V + 1), min_size=B, max_size=B).map(
                lambda a: np.array(a, np.int64)
            ),
        )
    )
    p_el = st.sampled_from(
        [0.0, 1e-9, 0.1, 0.25, 0.3, 0.5, 0.6, 0.75, 0.9, 1 - 1e-7, 1.0, math.nan, -1.0, 2.0]
    )
    p = draw(
        st.one_of(
            st.none(),
            p_el,
            st.lists(p_el, min_size=B, max_size=B).map(lambda a: np.array(a, np.float64)),
        )
    )
    cap = draw(st.sampled_from([1, 2, 3, 8, 4096]))
    block = draw(st.sampled_from([1, 2, 5, 4096]))
    return x, k, p, cap, block


@settings(max_examples=600)
@given(_tiny())
def test_mirror_tiny_rows_hypothesis(args):
    x, k, p, cap, block = args
    _check(x, k, p, cap=cap, block=block)


@settings(max_examples=150)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(2, 300),
    st.sampled_from([1, 4, 16, 4096]),
    st.sampled_from([1, 3, 8, 64]),
)
def test_mirror_random_rows_hypothesis(seed, V, levels, cap):
    rng = np.random.default_rng(seed)
    x = gen.quantised(gen.gaussian_logits(2, V, 2.0, rng), levels)
    k = int(rng.integers(0, V + 2))
    p = float(rng.choice([0.2, 0.5, 0.9, 0.99]))
    for kk, pp in [(k, None), (None, p), (k, p)]:
        _check(x, kk, pp, cap=cap, block=int(rng.integers(1, 64)))


def test_oracle_and_mirror_agree_on_keep_mask_directly():
    x = gen.zipf_logits(3, 2000, 1.1, 4)
    out = mirror.top_k_top_p_mask(x, np.array([10, 0, 300]), np.array([0.5, 0.9, 1.0]), cap=32)
    want = oracle.keep_mask(x, np.array([10, 0, 300]), np.array([0.5, 0.9, 1.0]))
    np.testing.assert_array_equal(out != -np.inf, want)
