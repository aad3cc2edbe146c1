"""The histogram-levels top-p mirror (qrita/reference/levels.py) against the oracle."""

from __future__ import annotations

import numpy as np
import pytest

from qrita.reference import levels
from qrita.testing import compare, generators

P_VALUES = [1e-7, 0.3, 0.9, 0.99, 1 - 1e-6, 0.0, 1.0, float("nan")]


@pytest.mark.parametrize("mass", ["float32", "fixed"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("V", [1000, 4099])
def test_levels_masks_match_the_oracle(dtype, V, mass):
    """Every generator family (ties at the boundary, all-equal, grammar -inf, NaN, +inf,
    extremes, ...), p at its edges and inside: the levels' masks are the oracle's within the
    contract's margin, and smooth rows take the levels path (not the rules or a miss); with
    float32 masses and with fixed-point ones (``mass="fixed"``)."""
    rng = np.random.default_rng(V)
    paths = []
    failures = []
    for family, batch in generators._family_batches(V, rng):
        x = generators.to_dtype(batch, dtype)
        for p in P_VALUES:
            try:
                compare.assert_mask_matches(levels.top_p_mask(x, p, mass=mass), x, None, p)
            except AssertionError as err:
                failures.append(f"{family}/p={p}: {err}")
            if family in ("zipf", "gaussian") and 0 < p < 1:
                paths += [levels.levels_row(row, p, mass=mass).path for row in x]
    assert not failures, f"{len(failures)} failing:\n" + "\n".join(failures[:5])
    assert paths and set(paths) == {"levels"}, set(paths)


def test_levels_bins_and_misses():
    """Fewer bins leave more entries to gather; a gather over capacity is a miss (the rounds'
    job in a kernel), still exact; per-row p."""
    rng = np.random.default_rng(3)
    x = np.concatenate([generators.zipf_logits(2, 20001, 1.1, rng),
                        generators.gaussian_logits(2, 20001, 2.0, rng)])
    coarse = [levels.levels_row(row, 0.9, nb1=8, nb2=8) for row in x]
    fine = [levels.levels_row(row, 0.9, nb1=64, nb2=64) for row in x]
    assert all(f.level2 < c.level2 for f, c in zip(fine, coarse, strict=True))
    missed = [levels.levels_row(row, 0.99, nb1=8, nb2=8, capacity=16) for row in x]
    assert {r.path for r in missed} == {"miss"}
    p_rows = np.array([0.5, 0.9, 0.99, 0.2])
    compare.assert_mask_matches(levels.top_p_mask(x, p_rows), x, None, p_rows)
    compare.assert_mask_matches(levels.top_p_mask(x, 0.99, nb1=8, nb2=8, capacity=16), x, None,
                                0.99)


def test_fixed_point_masses_stay_inside_the_margin():
    """The fixed-point weights (``trunc(w · 2^FIXED_BITS)``) of a row, summed over any prefix of
    its order, are within V · 2^-FIXED_BITS of the exact (float64) mass of the same float32
    weights, relative to a row mass >= 1: under the contract's 1e-6 margin at V = 2^18. Large
    rows (V = 262144), the order from the oracle; and the fixed-point masks at p near the
    boundary of a heavy tie group are the oracle's."""
    from qrita.reference import keys as keys_mod

    rng = np.random.default_rng(11)
    V = 262144
    rows = np.concatenate([generators.zipf_logits(1, V, 1.1, rng),
                           generators.gaussian_logits(1, V, 2.0, rng)])
    bound = V * 2.0 ** -levels.FIXED_BITS
    assert bound < 1e-6
    for x in rows:
        w32 = np.exp(x - x.max(), dtype=np.float32)
        fixed = np.trunc(w32.astype(np.float64) * 2.0 ** levels.FIXED_BITS).astype(np.int64)
        order = np.argsort(-keys_mod.order_key(x).astype(np.int64), kind="stable")
        exact = np.cumsum(w32[order].astype(np.float64))
        approx = np.cumsum(fixed[order]).astype(np.float64) * 2.0 ** -levels.FIXED_BITS
        err = np.abs(exact - approx).max() / exact[-1]
        assert 0 < err < bound, (err, bound)
    tied = generators.quantised(generators.gaussian_logits(2, 3001, 2.0, rng), 2)
    for p in (0.3, 0.9, 0.99):
        compare.assert_mask_matches(levels.top_p_mask(tied, p, mass="fixed"), tied, None, p)
    with pytest.raises(ValueError, match="mass"):
        levels.levels_row(tied[0], 0.9, mass="float64")
