"""The histogram-levels top-p mirror (qrita/reference/levels.py) against the oracle."""

from __future__ import annotations

import numpy as np
import pytest

from qrita.reference import levels
from qrita.testing import compare, generators

P_VALUES = [1e-7, 0.3, 0.9, 0.99, 1 - 1e-6, 0.0, 1.0, float("nan")]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("V", [1000, 4099])
def test_levels_masks_match_the_oracle(dtype, V):
    """Every generator family (ties at the boundary, all-equal, grammar -inf, NaN, +inf,
    extremes, ...), p at its edges and inside: the levels' masks are the oracle's within the
    contract's margin, and smooth rows take the levels path (not the rules or a miss)."""
    rng = np.random.default_rng(V)
    paths = []
    failures = []
    for family, batch in generators._family_batches(V, rng):
        x = generators.to_dtype(batch, dtype)
        for p in P_VALUES:
            try:
                compare.assert_mask_matches(levels.top_p_mask(x, p), x, None, p)
            except AssertionError as err:
                failures.append(f"{family}/p={p}: {err}")
            if family in ("zipf", "gaussian") and 0 < p < 1:
                paths += [levels.levels_row(row, p).path for row in x]
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
