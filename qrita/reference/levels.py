"""NumPy mirror of a histogram-levels top-p search (a candidate GPU path, not yet a kernel).

The wide top-p stage (docs/algorithm.md §7) places a band from a sample and narrows by 16-way
pivot rounds. This module is the step-by-step model of another route to the same boundary,
written so that a Triton port can follow it line by line and be checked against it:

1. *Stats* (one read): the row's max ``M`` and mass ``Z = Σ exp(x - M)`` (float32 weights,
   summed per segment, segments merged in their fixed order); ``target = p·Z``.
2. *Level 1* (one read): the mass and count of each of ``NB1`` value bins: bin
   ``floor((M - x) / w1)`` clamped to ``NB1 - 1``, ``w1 = min(ln(V / (1 - p)), 104) / (NB1 - 1)``
   (every float32 weight below ``M - 104`` is 0). Below
   ``M - ln(V / (1 - p))`` lies less than ``(1 - p)·Z``, so only rounding can put the boundary
   in the last bin. The bin where the cumulative mass from the top reaches the target holds T.
3. *Level 2* (one read): the same over ``NB2`` sub-bins of that bin (width ``w1 / NB2``).
4. *Gather* (one read): the entries of the crossing sub-bin (value, index), no weights needed:
   the count and mass above it come from the levels. ``capacity`` slots; more is a miss (the
   kernel would hand the row to the 16-way rounds; here it is reported).
5. *Resolve* (registers): T is the key at which the cumulative mass (from the mass above the
   sub-bin, entries by key descending) reaches the target; copies of T kept by the tie budget
   (docs/algorithm.md §6). Rounding can leave the target unreached inside the sub-bin, or
   reached above it: T then clamps to the sub-bin's lowest or highest key, as the pivot search
   clamps. Either way the answer is within the contract's margin (docs/spec.md rule 5).

*Fixed-point masses* (``mass="fixed"``, the model of the kernels' next step): every float32
weight becomes the integer ``trunc(w · 2^FIXED_BITS)`` (int64; a kernel computes it exactly,
``w · 2^40`` is a float32 power-of-two scaling), and every mass is an int64 sum of those. The
sums are exact, so no answer depends on how a row is split into segments, programs or lanes,
on a band's placement, or on the batch: the freedom the float32 sums forbid (a split that
follows B changes their rounding). The target is ``ceil(float64(Z) · p)`` (Z the integer mass),
the tie budget an integer ceiling division. The error against exact real masses: each weight
loses less than 2^-40, so a mass below T is off by less than V · 2^-40 against a row mass of
at least 1 (the max's weight): below 2^-22 ~ 2.4e-7 for V <= 2^18, inside the 1e-6 margin;
weights below 2^-40 count 0.

A bin index is ``floor(d·inv)`` of ``d = M - x`` in float32: weakly monotone in the value, so
every bin is a contiguous range of keys and an entry in an earlier bin ranks above every entry
of a later one; the passes compute it by the same float32 steps, so they agree on membership.
Rows with +inf entries, an undefined mass, or p outside (0, 1) follow the spec's rules directly
(the pipeline settles them before any wide stage).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qrita.reference import keys as keys_mod
from qrita.reference import oracle

__all__ = ["LevelsRow", "levels_row", "top_p_mask"]

F32 = np.float32
#: fractional bits of the fixed-point masses (``mass="fixed"``)
FIXED_BITS = 40


@dataclass
class LevelsRow:
    """What the levels decided for one row.

    keep : ndarray (V,), bool, the kept entries
    path : "rule" (settled by the spec's rules), "levels" (gathered and resolved) or "miss"
        (the crossing sub-bin held more than ``capacity`` entries; ``keep`` then comes from the
        exact sort, as the kernel's rounds would give it)
    level1, level2 : entries in the crossing bin / sub-bin (0 on the rule path)
    """

    keep: np.ndarray
    path: str
    level1: int = 0
    level2: int = 0


def _segment_sum(values: np.ndarray, seg_len: int) -> np.float32:
    """float32 sum: per segment (NumPy's pairwise float32 sum), then the segments in order."""
    total = F32(0.0)
    for start in range(0, values.size, seg_len):
        total = F32(total + np.add.reduce(values[start:start + seg_len], dtype=F32))
    return total


def _bin_sums(index: np.ndarray, weights: np.ndarray, member: np.ndarray, bins: int,
              seg_len: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 mass and int64 count per bin of the ``member`` entries: per segment and bin a
    pairwise float32 sum (a kernel's per-lane accumulators reduced by a tree are as accurate:
    a sequential sum over a bin's ~1000 entries is not, and its error reaches the margin),
    segments merged in their order."""
    mass = np.zeros(bins, dtype=F32)
    count = np.zeros(bins, dtype=np.int64)
    for start in range(0, index.size, seg_len):
        sl = slice(start, start + seg_len)
        idx, w = index[sl][member[sl]], weights[sl][member[sl]]
        for b in np.unique(idx):
            mass[b] = F32(mass[b] + np.add.reduce(w[idx == b], dtype=F32))
        count += np.bincount(idx, minlength=bins)
    return mass, count


def _fixed_bin_sums(index: np.ndarray, weights: np.ndarray, member: np.ndarray, bins: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """int64 mass and count per bin of the ``member`` entries (fixed-point weights): exact
    integer sums, the same in any order or split (no segments needed)."""
    mass = np.zeros(bins, dtype=np.int64)
    np.add.at(mass, index[member], weights[member])
    return mass, np.bincount(index[member], minlength=bins).astype(np.int64)


def _add(a, b):
    """a + b in the masses' arithmetic: float32 rounding, or exact int64."""
    return F32(a + b) if isinstance(a, np.floating) else a + b


def _crossing(mass: np.ndarray, count: np.ndarray, need):
    """The first bin whose cumulative mass (from the top; float32 or int64 as ``mass``) reaches
    ``need``, and the mass above it; if none does (rounding), the last non-empty bin."""
    cum = mass.dtype.type(0)
    last = 0
    for b in range(mass.size):
        if count[b] == 0:
            continue
        last = b
        if _add(cum, mass[b]) >= need:
            return b, cum
        cum = _add(cum, mass[b])
    return last, cum - mass[last]


def levels_row(x: np.ndarray, p: float, *, nb1: int = 64, nb2: int = 64, capacity: int = 2048,
               seg_len: int = 8192, mass: str = "float32") -> LevelsRow:
    """Top-p keep-mask of one row by the histogram levels.

    Parameters
    ----------
    x : ndarray (V,), float32, bfloat16 or float16 logits
    p : float, the top-p parameter
    nb1, nb2 : bins of level 1 / level 2; capacity : gather slots; seg_len : segment length of
        the float32 sums
    mass : "float32" (float32 sums per segment) or "fixed" (int64 sums of the weights in
        units of 2^-FIXED_BITS: exact, ``seg_len`` changes nothing)

    Returns
    -------
    LevelsRow
    """
    xf = keys_mod.as_float32(np.asarray(x)).astype(F32)
    V = xf.size
    key = keys_mod.order_key(xf).astype(np.int64)
    p32 = F32(p)
    finite = np.isfinite(xf)
    if not (0.0 < p32 < 1.0) or (xf == np.inf).any() or not finite.any():
        return LevelsRow(oracle.keep_mask(xf[None, :].astype(np.float64), None, p)[0], "rule")
    M = F32(xf[finite].max())
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.where(finite, F32(M) - xf, F32(0.0)).astype(F32)  # M - x, float32 (may be inf)
    w = np.where(finite, np.exp(-d, dtype=F32), F32(0.0)).astype(F32)
    if mass not in ("float32", "fixed"):
        raise ValueError(f"mass must be 'float32' or 'fixed', got {mass!r}")
    fixed = mass == "fixed"
    if fixed:
        # trunc(w · 2^FIXED_BITS): exact in float64 (w < 2, the product has w's 24 bits)
        w = np.trunc(w.astype(np.float64) * 2.0 ** FIXED_BITS).astype(np.int64)
        Z = np.int64(w.sum())
        target = np.int64(math.ceil(float(Z) * float(p32)))

        def bin_sums(index, member, bins):
            return _fixed_bin_sums(index, w, member, bins)

        def total(values):
            return np.int64(values.sum())
    else:
        Z = _segment_sum(w, seg_len)
        target = F32(p32 * Z)

        def bin_sums(index, member, bins):
            return _bin_sums(index, w, member, bins, seg_len)

        def total(values):
            return _segment_sum(values, seg_len)
    # level 1
    # below M - 104 every float32 weight is 0: the kernels cap the span there too
    span = F32(min(math.log(V / (1.0 - float(p32))), 104.0))
    w1 = F32(span / F32(nb1 - 1))
    inv1 = F32(F32(1.0) / w1)
    with np.errstate(over="ignore"):
        bin1 = np.minimum(np.floor(d * inv1), nb1 - 1).astype(np.int64)
    mass1, count1 = bin_sums(bin1, finite, nb1)
    b1, above1 = _crossing(mass1, count1, target)
    # level 2: the crossing bin's entries, relative to its top edge
    in1 = finite & (bin1 == b1)
    inv2 = F32(inv1 * F32(nb2))
    d1 = (d - F32(F32(b1) * w1)).astype(F32)
    with np.errstate(over="ignore", invalid="ignore"):
        bin2 = np.clip(np.floor(d1 * inv2), 0, nb2 - 1).astype(np.int64)
    mass2, count2 = bin_sums(bin2, in1, nb2)
    b2, above2 = _crossing(mass2, count2, target - above1 if fixed else F32(target - above1))
    mass_above = _add(above1, above2)
    gathered = in1 & (bin2 == b2)
    n1, n2 = int(in1.sum()), int(gathered.sum())
    if n2 > capacity:
        return LevelsRow(oracle.keep_mask(xf[None, :].astype(np.float64), None, p)[0], "miss",
                         n1, n2)
    # resolve: entries of the sub-bin by key descending, cumulative float32 mass
    g_idx = np.flatnonzero(gathered)
    g_key, g_w = key[g_idx], w[g_idx]
    distinct = np.unique(g_key)[::-1]
    cum = mass_above
    T = int(distinct[-1])  # clamp: the target not reached inside the sub-bin
    for q in distinct:
        mass_q = total(g_w[g_key == q])
        if _add(cum, mass_q) >= target:
            T, mass_gt = int(q), cum
            break
        cum = _add(cum, mass_q)
    else:
        mass_gt = cum - total(g_w[g_key == T])
    # (mass_above >= target already: the loop stops at the first, highest key: the clamp at hi)
    copies = int((g_key == T).sum())
    w_T = g_w[g_key == T][0]
    if fixed:  # an integer ceiling division (a weight truncated to 0 keeps every copy)
        need = -(-(int(target) - int(mass_gt)) // max(int(w_T), 1))
    else:
        need = math.ceil((float(target) - float(mass_gt)) / max(float(w_T), 1e-38))
    budget = min(max(need, 1), copies)
    tie_rank = np.cumsum(key == T) - 1
    keep = (key > T) | ((key == T) & (tie_rank < budget))
    return LevelsRow(keep, "levels", n1, n2)


def top_p_mask(logits: np.ndarray, p, /, *, fill: float = -np.inf, **kw) -> np.ndarray:
    """Top-p mask of (V,) or (B, V) logits by :func:`levels_row` (``p`` scalar or (B,))."""
    x2 = logits.reshape(1, -1) if logits.ndim == 1 else logits
    p_rows = np.broadcast_to(np.asarray(p, dtype=np.float64).reshape(-1), (x2.shape[0],))
    out = x2.copy()
    for b in range(x2.shape[0]):
        out[b, ~levels_row(x2[b], float(p_rows[b]), **kw).keep] = fill
    return out.reshape(logits.shape)
