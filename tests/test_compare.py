"""qrita.testing.compare: the assertions pass on valid masks and FAIL on wrong ones."""

from __future__ import annotations

import numpy as np
import pytest

from qrita.reference import oracle
from qrita.testing import generators as gen
from qrita.testing.compare import assert_mask_matches, assert_topk_matches


def _fails(fn, *args, match: str | None = None, **kw):
    with pytest.raises(AssertionError, match=match):
        fn(*args, **kw)


def test_passes_on_oracle_output():
    for case in gen.cases((1, 3, 1023), ("float32", "float16"), seed=3):
        out = oracle.top_k_top_p_mask(case.logits, case.k, case.p)
        assert_mask_matches(out, case.logits, case.k, case.p)
        assert_mask_matches(out, case.logits, case.k, case.p, margin=0.0)
    x = gen.gaussian_logits(2, 50, 2.0, 0)
    for fill in (0.0, np.nan, -1e9):
        out = oracle.top_k_top_p_mask(x, 5, 0.7, fill=fill)
        assert_mask_matches(out, x, 5, 0.7, fill=fill)


def test_off_by_one_top_k_fails():
    x = gen.gaussian_logits(1, 100, 2.0, 1)
    ordr = oracle.order(x)[0]
    good = oracle.top_k_mask(x, 10)
    more = good.copy()
    more[0, ordr[10]] = x[0, ordr[10]]
    _fails(assert_mask_matches, more, x, 10, match="top-k decisions are exact")
    less = good.copy()
    less[0, ordr[9]] = -np.inf
    _fails(assert_mask_matches, less, x, 10)
    # same with top-p on: a top-k error is never excused by the margin
    good = oracle.top_k_top_p_mask(x, 10, 0.999999)
    more = good.copy()
    more[0, ordr[10]] = x[0, ordr[10]]
    _fails(assert_mask_matches, more, x, 10, 0.999999, margin=1.0, match="not a top-k survivor")


def test_wrong_tie_index_fails():
    x = gen.five_zeros_rows(1, 6)  # [5, 0, 0, 0, 0, 0], k = 3 keeps indices 0, 1, 2
    good = oracle.top_k_mask(x, 3)
    assert np.flatnonzero(good[0] != -np.inf).tolist() == [0, 1, 2]
    bad = good.copy()
    bad[0, 2], bad[0, 5] = -np.inf, 0.0
    _fails(assert_mask_matches, bad, x, 3, match="row 0, index 2")


def test_wrong_top_p_far_from_margin_fails():
    x = np.log(np.array([[0.4, 0.3, 0.2, 0.1]], dtype=np.float32))
    good = oracle.top_p_mask(x, 0.65)  # mass before: 0, .4, .7, .9 -> keep 2
    assert np.flatnonzero(good[0] != -np.inf).tolist() == [0, 1]
    bad = good.copy()
    bad[0, 2] = x[0, 2]
    _fails(assert_mask_matches, bad, x, None, 0.65, match="not within")
    bad = good.copy()
    bad[0, 1] = -np.inf
    _fails(assert_mask_matches, bad, x, None, 0.65, match="not within")
    bad = good.copy()
    bad[0, 0] = -np.inf  # the first entry is always kept, even with p tiny
    _fails(assert_mask_matches, bad, np.asarray(x), None, 1e-9, margin=1.0, match="first entry")


def test_allowed_boundary_difference_passes():
    x = np.zeros((1, 4), dtype=np.float32)  # mass before: 0, .25, .5, .75
    p = 0.5 + 1e-7  # oracle keeps 3 (0.5 < p); dropping the third is allowed within 1e-6
    good = oracle.top_p_mask(x, p)
    assert np.flatnonzero(good[0] != -np.inf).tolist() == [0, 1, 2]
    alt = good.copy()
    alt[0, 2] = -np.inf
    assert_mask_matches(alt, x, None, p)  # margin 1e-6
    _fails(assert_mask_matches, alt, x, None, p, margin=1e-9)
    # keeping one past the boundary is allowed where its mass before is within the margin
    p = 0.75 - 1e-7
    good = oracle.top_p_mask(x, p)
    alt = good.copy()
    alt[0, 3] = 0.0
    assert_mask_matches(alt, x, None, p)
    # but the kept set must be a prefix of the order
    alt = oracle.top_p_mask(x, 0.5 + 1e-7)
    alt[0, 2], alt[0, 3] = -np.inf, 0.0
    _fails(assert_mask_matches, alt, x, None, 0.5 + 1e-7, margin=1.0, match="prefix")


def test_values_must_be_original_or_fill():
    x = gen.gaussian_logits(2, 20, 2.0, 2)
    good = oracle.top_k_mask(x, 4)
    bad = good.copy()
    i = int(np.flatnonzero(good[1] != -np.inf)[0])
    bad[1, i] = np.nextafter(bad[1, i], np.float32(np.inf))
    _fails(assert_mask_matches, bad, x, 4, match="neither the input")
    bad = good.copy()
    bad[bad == -np.inf] = -1e30
    _fails(assert_mask_matches, bad, x, 4)
    # NaN payloads compare bit for bit
    y = np.array([[np.nan, 1.0, 2.0]], dtype=np.float32)
    out = oracle.top_k_mask(y, 1)
    assert_mask_matches(out, y, 1)
    z = y.copy()
    z.view(np.uint32)[0, 0] = 0x7FC00001  # another NaN: not the input's value bit for bit
    _fails(assert_mask_matches, z, y, None, None, match="neither the input")


def test_shape_dtype_and_off_rows():
    x = gen.gaussian_logits(1, 8, 2.0, 4)
    _fails(assert_mask_matches, x.astype(np.float16), x, 3, match="dtype")
    _fails(assert_mask_matches, x[0], x, 3, match="shape")
    bad = x.copy()
    bad[0, 0] = -np.inf
    _fails(assert_mask_matches, bad, x, None, None, match="top-p is off")
    _fails(assert_mask_matches, bad, x, None, 1.0)
    all_inf = np.full((1, 4), -np.inf, np.float32)
    all_inf[0, 2] = np.nan
    bad = all_inf.copy()
    bad[0, 2] = -np.inf
    _fails(assert_mask_matches, bad, all_inf, None, 0.5, match="undefined")


def test_topk_assertion():
    rng = np.random.default_rng(6)
    x = gen.quantised(gen.gaussian_logits(3, 40, 2.0, rng), 5)
    for axis in (0, 1, -1):
        for mode in ("largest", "smallest"):
            for srt in (True, False):
                k = 3
                ref = oracle.top_k(x, k, axis=axis, mode=mode, sorted=srt)
                assert_topk_matches(ref.values, ref.indices, x, k, axis, mode, srt)
    ref = oracle.top_k(x, 6)
    idx = ref.indices.copy()
    # swap two tied entries' indices: same values, wrong tie order
    row = 0
    vals = ref.values[row]
    j = next(j for j in range(5) if vals[j] == vals[j + 1])
    idx[row, j], idx[row, j + 1] = idx[row, j + 1], idx[row, j]
    _fails(assert_topk_matches, ref.values, idx, x, 6, match="indices differ")
    _fails(assert_topk_matches, ref.values, ref.indices[:, :5], x, 6, match="shape")
    bad_vals = ref.values.copy()
    bad_vals[1, 0] += 1
    _fails(assert_topk_matches, bad_vals, ref.indices, x, 6, match="values")
    unsorted = oracle.top_k(x, 6, sorted=False)
    _fails(assert_topk_matches, unsorted.values, unsorted.indices, x, 6, -1, "largest", True)
    xi = np.array([[3, 1, 3, 2]], dtype=np.int32)
    r = oracle.top_k(xi, 2)
    assert_topk_matches(r.values, r.indices, xi, 2)
    assert r.indices.tolist() == [[0, 2]]
