"""The sort-based oracle: docs/spec.md in code.

Every function here is a plain, readable, sort-based implementation. It defines the truth that the
algorithm mirror and the GPU kernels are tested against. Inputs are NumPy arrays; masses are
computed in float64.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "TopK",
    "as_float64",
    "order",
    "row_params",
    "top_k",
    "top_k_keep",
    "top_p_keep",
    "keep_mask",
    "mass_before",
    "top_k_mask",
    "top_p_mask",
    "top_k_top_p_mask",
]


class TopK(NamedTuple):
    """Result of :func:`top_k`: ``values`` (x's dtype) and ``indices`` (int64)."""

    values: np.ndarray
    indices: np.ndarray


def as_float64(x: np.ndarray) -> np.ndarray:
    """Exact float64 copy of a float16 / bfloat16 / float32 / float64 array."""
    if x.dtype.name == "bfloat16":  # ml_dtypes.bfloat16 (from JAX); no direct float64 cast on old numpy
        return x.astype(np.float32).astype(np.float64)
    return x.astype(np.float64)


def order(x: np.ndarray, mode: str = "largest") -> np.ndarray:
    """Rank order of every row (last axis), as indices.

    Parameters
    ----------
    x : ndarray, shape (..., V), float or integer
    mode : "largest" (descending) or "smallest" (ascending); ties by lower index, NaN last.

    Returns
    -------
    ndarray, shape (..., V), int64
    """
    x = np.asarray(x)
    data = x.tobytes()
    memo_key = (mode, x.dtype.str, x.shape, hash(data))
    hit = _ORDER_MEMO.get(memo_key)
    if hit is not None and hit[0] == data:  # the same values: the same order (a fresh copy)
        return hit[1].copy()
    if x.dtype.kind in "iu":
        key = ~x if mode == "largest" else x  # ~x reverses integer order without overflow
    else:
        xf = as_float64(x)
        key = -xf if mode == "largest" else xf  # NaN sorts last either way; -0.0 == 0.0
    result = np.argsort(key, axis=-1, kind="stable").astype(np.int64)
    if result.size >= _MEMO_MIN_SIZE:
        _ORDER_MEMO[memo_key] = (data, result.copy())
        while len(_ORDER_MEMO) > _MEMO_ENTRIES:
            _ORDER_MEMO.pop(next(iter(_ORDER_MEMO)))
    return result


# The tests check many (k, p) against one array: its order is computed once. Keyed by the values'
# bytes (compared in full on a hit), so a hit is exactly the order argsort would return.
_ORDER_MEMO: dict[tuple, tuple[bytes, np.ndarray]] = {}
_MEMO_ENTRIES = 4
_MEMO_MIN_SIZE = 1 << 16


def top_k(
    x: np.ndarray, k: int, /, *, axis: int = -1, mode: str = "largest", sorted: bool = True
) -> TopK:
    """The first k entries of the order along ``axis`` (docs/spec.md, top_k specifics).

    Parameters
    ----------
    x : ndarray, any shape, float or integer dtype
    k : int, 0 <= k <= x.shape[axis]

    Returns
    -------
    TopK(values, indices): shape x.shape with axis length k; values x.dtype, indices int64.
    """
    xm = np.moveaxis(x, axis, -1)
    idx = order(xm, mode)[..., :k]
    if not sorted:
        idx = np.sort(idx, axis=-1)
    vals = np.take_along_axis(xm, idx, axis=-1)
    return TopK(np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis))


def row_params(k, p, batch: int, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-row effective k (0 = off) and p (NaN = off) after rules 2-3.

    ``p <= 0`` becomes "top-k with k = 1 intersected with the given k" and top-p off.

    Returns
    -------
    k_eff : ndarray (B,), int64, 0 means top-k off
    p_eff : ndarray (B,), float64, NaN means top-p off
    """
    if k is None:
        k_rows = np.zeros(batch, dtype=np.int64)
    else:
        k_rows = np.broadcast_to(np.asarray(k, dtype=np.int64).reshape(-1), (batch,)).copy()
    k_rows[(k_rows <= 0) | (k_rows >= vocab)] = 0
    if p is None:
        p_rows = np.full(batch, np.nan)
    else:
        p_rows = np.broadcast_to(np.asarray(p, dtype=np.float64).reshape(-1), (batch,)).copy()
    p_rows[p_rows >= 1] = np.nan
    zero_p = p_rows <= 0
    k_rows[zero_p] = 1  # keeping the first entry; top-k with any k >= 1 keeps it too
    p_rows[zero_p] = np.nan
    return k_rows, p_rows


def _weights(vals: np.ndarray) -> np.ndarray | None:
    """Unnormalised probabilities of ``vals`` (float64, one row); None if the mass is undefined."""
    if np.any(vals == np.inf):
        return (vals == np.inf).astype(np.float64)
    finite = np.isfinite(vals)
    if not finite.any():
        return None
    w = np.zeros_like(vals)
    w[finite] = np.exp(vals[finite] - vals[finite].max())
    return w


def mass_before(row_sorted_survivors: np.ndarray) -> np.ndarray | None:
    """Exact (float64) probability mass before each entry of an ordered survivor list.

    Parameters
    ----------
    row_sorted_survivors : ndarray (n,), float64, the survivors' values in rank order

    Returns
    -------
    ndarray (n,), float64, ``mass_before[j] = Σ_{i<j} prob_i`` (normalised), or None where the mass is
    undefined (rule 4: top-p then keeps all survivors).
    """
    w = _weights(row_sorted_survivors)
    if w is None:
        return None
    csum = np.cumsum(w)
    total = csum[-1]
    before = np.concatenate(([0.0], csum[:-1]))
    return before / total


def top_k_keep(x: np.ndarray, k_rows: np.ndarray) -> np.ndarray:
    """Boolean keep-mask of top-k (rule 2) for a (B, V) array; ``k_rows[b] == 0`` keeps all."""
    keep = np.ones(x.shape, dtype=bool)
    ordr = order(x)
    for b in range(x.shape[0]):
        if k_rows[b] > 0:
            keep[b] = False
            keep[b, ordr[b, : k_rows[b]]] = True
    return keep


def top_p_keep(x: np.ndarray, p_rows: np.ndarray, survivors: np.ndarray) -> np.ndarray:
    """Boolean keep-mask of top-p (rules 3-4) over ``survivors`` (a prefix of each row's order)."""
    xf = as_float64(x)
    keep = survivors.copy()
    ordr = order(x)
    for b in range(x.shape[0]):
        p = p_rows[b]
        if np.isnan(p):
            continue
        n_surv = int(survivors[b].sum())
        surv_idx = ordr[b, :n_surv]
        before = mass_before(xf[b, surv_idx])
        if before is None:
            continue
        kept = surv_idx[before < p]
        keep[b] = False
        keep[b, kept] = True
    return keep


def keep_mask(logits: np.ndarray, k=None, p=None) -> np.ndarray:
    """Boolean keep-mask of top-k then top-p, for logits of shape (V,) or (B, V)."""
    x2 = logits.reshape(1, -1) if logits.ndim == 1 else logits
    k_rows, p_rows = row_params(k, p, x2.shape[0], x2.shape[1])
    survivors = top_k_keep(x2, k_rows)
    keep = top_p_keep(x2, p_rows, survivors)
    return keep.reshape(logits.shape)


def _apply(logits: np.ndarray, keep: np.ndarray, fill: float) -> np.ndarray:
    out = logits.copy()
    out[~keep] = fill
    return out


def top_k_mask(logits: np.ndarray, k, /, *, fill: float = -np.inf) -> np.ndarray:
    """Oracle of :func:`qrita.top_k_mask` (a new array)."""
    return _apply(logits, keep_mask(logits, k, None), fill)


def top_p_mask(logits: np.ndarray, p, /, *, fill: float = -np.inf) -> np.ndarray:
    """Oracle of :func:`qrita.top_p_mask` (a new array)."""
    return _apply(logits, keep_mask(logits, None, p), fill)


def top_k_top_p_mask(logits: np.ndarray, k=None, p=None, /, *, fill: float = -np.inf) -> np.ndarray:
    """Oracle of :func:`qrita.top_k_top_p_mask` (a new array)."""
    return _apply(logits, keep_mask(logits, k, p), fill)
