"""How tests apply the contract (docs/spec.md, "How tests apply rule 5").

:func:`assert_mask_matches` compares a mask with the oracle's bit for bit; where they differ, each
difference must be a top-p decision that rule 5 allows (the exact mass before the entry within
``margin`` of p), the value must be the input's (bit-identical) or ``fill``, the kept set must stay a
prefix of the order, and the first entry of the order is always kept. :func:`assert_topk_matches`
is exact.
"""

from __future__ import annotations

import numpy as np

from qrita.reference import oracle

__all__ = ["bits_of", "assert_mask_matches", "assert_topk_matches"]

_MAX_REPORTED = 12


def bits_of(a: np.ndarray) -> np.ndarray:
    """Integer view of a float array (NaN-safe bitwise comparison)."""
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _as_2d(a: np.ndarray) -> np.ndarray:
    return a.reshape(1, -1) if a.ndim == 1 else a


def assert_mask_matches(
    out, logits, k=None, p=None, fill: float = -np.inf, margin: float = 1e-6
) -> None:
    """Assert that ``out`` is a valid top-k-then-top-p mask of ``logits`` (docs/spec.md).

    Parameters
    ----------
    out : ndarray (V,) or (B, V), the implementation's result (same dtype as logits; bfloat16
        results converted exactly to float32 together with the logits)
    logits : ndarray, the input
    k, p : as given to the implementation (None, scalars, or (B,) arrays)
    fill : the fill value
    margin : allowed distance between p and the exact mass before an entry whose top-p decision
        differs from the oracle (1e-6 for float32 implementations, rule 5)

    Raises
    ------
    AssertionError naming row, index, oracle value, got value and why, for every disallowed entry
    (the first few).
    """
    out = np.asarray(out)
    logits = np.asarray(logits)
    if out.shape != logits.shape:
        raise AssertionError(f"shape {out.shape}, expected {logits.shape}")
    if out.dtype != logits.dtype:
        raise AssertionError(f"dtype {out.dtype}, expected {logits.dtype}")
    want = oracle.top_k_top_p_mask(logits, k, p, fill=fill)
    got_bits, want_bits = bits_of(out), bits_of(want)
    if np.array_equal(got_bits, want_bits):
        return
    x2, o2, w2 = _as_2d(logits), _as_2d(out), _as_2d(want)
    xb, ob, wb = _as_2d(bits_of(logits)), _as_2d(got_bits), _as_2d(want_bits)
    fill_bits = bits_of(np.array([fill], dtype=logits.dtype))[0]
    B, V = x2.shape
    k_rows, p_rows = oracle.row_params(k, p, B, V)
    errors: list[str] = []
    n_err = 0
    for b in range(B):
        diff = np.flatnonzero(ob[b] != wb[b])
        if diff.size == 0:
            continue
        ordr = oracle.order(x2[b : b + 1])[0]
        rank = np.empty(V, dtype=np.int64)
        rank[ordr] = np.arange(V)
        n_surv = int(k_rows[b]) if k_rows[b] > 0 else V
        pb = float(p_rows[b])
        before = None
        if not np.isnan(pb):
            before = oracle.mass_before(oracle.as_float64(x2[b, ordr[:n_surv]]))
        for i in diff:
            why = None
            if ob[b, i] != xb[b, i] and ob[b, i] != fill_bits:
                why = "value is neither the input's value (bit for bit) nor fill"
            elif np.isnan(pb):
                why = "top-p is off for this row: top-k decisions are exact"
            elif rank[i] >= n_surv:
                why = (
                    f"not a top-k survivor (rank {rank[i]} >= {n_surv}): top-k decisions are exact"
                )
            elif before is None:
                why = "the survivors' mass is undefined: top-p keeps every survivor"
            elif rank[i] == 0:
                why = "the first entry of the order is always kept"
            elif abs(before[rank[i]] - pb) > margin:
                why = (
                    f"top-p decision differs where the exact mass before the entry, "
                    f"{before[rank[i]]!r}, is not within {margin} of p={pb!r}"
                )
            if why is not None:
                n_err += 1
                if len(errors) < _MAX_REPORTED:
                    errors.append(
                        f"row {b}, index {i}: oracle {w2[b, i]!r}, got {o2[b, i]!r}: {why}"
                    )
        # the kept set must be a prefix of the order (entries equal to fill are ambiguous: skipped)
        surv = ordr[:n_surv]
        clear = xb[b, surv] != fill_bits
        kept = clear & (ob[b, surv] == xb[b, surv])
        dropped = clear & (ob[b, surv] == fill_bits)
        if kept.any() and dropped.any():
            first_drop = int(np.argmax(dropped))
            last_kept = int(np.flatnonzero(kept)[-1])
            if last_kept > first_drop:
                n_err += 1
                errors.append(
                    f"row {b}: kept set is not a prefix of the order: index {surv[last_kept]} (rank "
                    f"{last_kept}) kept after index {surv[first_drop]} (rank {first_drop}) dropped"
                )
    if n_err:
        more = f" (and {n_err - len(errors)} more)" if n_err > len(errors) else ""
        raise AssertionError(
            f"mask differs from the oracle (k={k!r}, p={p!r}):\n  " + "\n  ".join(errors) + more
        )


def assert_topk_matches(
    values, indices, x, k: int, axis: int = -1, mode: str = "largest", sorted: bool = True
) -> None:
    """Assert that (values, indices) is exactly the oracle's ``top_k(x, k, axis, mode, sorted)``.

    Indices must be equal (any integer dtype), values bit-identical with x's dtype.
    """
    values, indices, x = np.asarray(values), np.asarray(indices), np.asarray(x)
    ref = oracle.top_k(x, k, axis=axis, mode=mode, sorted=sorted)
    if indices.shape != ref.indices.shape or values.shape != ref.values.shape:
        raise AssertionError(
            f"shapes values {values.shape}, indices {indices.shape}; expected {ref.indices.shape}"
        )
    if indices.dtype.kind not in "iu":
        raise AssertionError(f"indices dtype {indices.dtype} is not an integer dtype")
    if not np.array_equal(indices.astype(np.int64), ref.indices):
        pos = np.argwhere(indices.astype(np.int64) != ref.indices)
        first = tuple(int(v) for v in pos[0])
        raise AssertionError(
            f"top_k indices differ at {len(pos)} positions; first {first}: got "
            f"{indices[first]}, expected {ref.indices[first]} (k={k}, axis={axis}, mode={mode}, "
            f"sorted={sorted})"
        )
    if values.dtype != x.dtype:
        raise AssertionError(f"values dtype {values.dtype}, expected {x.dtype}")
    if x.dtype.kind == "f":
        same = np.array_equal(bits_of(values), bits_of(ref.values))
    else:
        same = np.array_equal(values, ref.values)
    if not same:
        raise AssertionError(
            f"top_k values differ from x at the indices (k={k}, axis={axis}, mode={mode})"
        )
