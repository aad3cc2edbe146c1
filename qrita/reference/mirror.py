"""The Qrita algorithm in NumPy, step by step (docs/algorithm.md, sections 0-7).

This is the executable specification of the GPU kernels: the same passes, the same integer key
search with quaternary pivots, the same tie budgets and the same fallback. It loops over rows and
uses vectorised NumPy inside a row; tiles matter only where the algorithm depends on them (the
first-tile statistics of pass A, and the index order of the compaction). It must return exactly
the oracle's mask (top-p boundary decisions may differ only by float64 rounding, i.e. where the
exact mass before an entry is within ~1e-15 of p).

Rules this mirror fixes where docs/algorithm.md leaves a choice (the kernels follow them):

* Sample statistics (pass A): mean and *sample* std (``ddof=1``) of the finite entries of the first
  tile; ``finite_fraction = n_finite_sample / len(first tile)``. The quantile is computed as
  ``-ndtri(f)`` (top-k) and ``ndtri((1 - p) / OVERSAMPLE)`` (top-p), the same numbers as
  ``ndtri(1 - f)`` / ``ndtri(1 - p')`` without the cancellation. A NaN or non-finite statistic gives
  ``sigma_cutoff = -inf``. ``cutoff_key = order_key(float32(sigma_cutoff))`` (float64 logits:
  ``order_key(sigma_cutoff)``, 64-bit keys).
* Pass A's masses are streaming: per tile ``m' = max(m, tile max)``,
  ``mass = mass * exp(m - m') + Σ exp(x - m')``; +inf entries are counted apart, and if there are
  any, ``row_mass`` / ``mass_cand`` are those counts (weight 1 each). The search's weights are
  ``exp(x - row_max)`` with the final row max.
* Every count / mass at a pivot q is a direct masked sum ``base + Σ where(key > q, w, 0)`` over the
  working set (never obtained by subtraction), so the predicate is monotone in q and an entry of
  weight 0 never changes it.
* Tie-counting stop: after a round, ``next_key`` = smallest key of the working set above lo; if the
  predicate is false there, ``T = next_key``; otherwise lo moves up to ``next_key`` (the predicate
  holds there, so this is a valid narrowing). Pivots equal to lo are not evaluated.
* Top-p tie budget: ``copies`` = copies of T among the survivors; 0 copies keep none (only possible
  through rounding); ``w_T == 0`` keeps all copies (their mass before is mass_gt < target);
  otherwise ``clip(ceil((target - mass_gt) / w_T), 1, copies)``. This clip *is* the rounding guard:
  if the search's sums put T at the lowest survivor key, every copy the formula allows is kept.
* Initial intervals of the fallback (count_cand / mass_cand from pass A):
  top-k: ``count_cand >= k`` -> (cutoff_key - 1, max_key], else (min_key - 1, cutoff_key - 1];
  top-p: ``mass_cand >= target`` -> (cutoff_key - 1, max_key], else (min_key - 1, cutoff_key - 1];
  the T_p search after top-k: (T_k - 1, max_key] over the survivors. Bounds are clamped to
  [min_key - 1, max_key]. Full-row rounds run while the interval holds more than CAP entries
  (``count_above(lo) - count_above(hi)``) and T is not found; then the entries of (lo, hi] are
  compacted in index order and the search goes on over them with the count and mass above hi
  carried in. T may be found in full-row rounds (e.g. a tie of more than CAP copies).
* p <= 0 becomes k = 1 (intersected with the given k) and top-p off; an undefined mass (row max
  -inf, or only NaN) turns top-p off. Rows with neither top-k nor top-p report path "off".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from qrita.reference import oracle
from qrita.reference.keys import KEY_NAN, KEY_NAN64, key_bits, key_to_value, order_key, weight
from qrita.reference.ndtri import ndtri

__all__ = ["RowReport", "top_k_top_p_mask", "top_k_mask", "top_p_mask", "row_params"]

MAX_ROUNDS_32 = 16


@dataclass
class RowReport:
    """What the algorithm did on one row.

    path : "hit" (the candidates of pass A sufficed), "fallback" (full-row rounds) or "off"
        (neither top-k nor top-p active: the row is returned as is)
    k, p : the effective parameters (k 0 = off, p NaN = off)
    sigma_cutoff, cutoff_key : the σ-truncation cutoff and its order key
    n_finite_sample : finite entries in the first tile
    count_cand : entries with key >= cutoff_key (beyond CAP they are counted, not stored)
    mass_cand, row_mass : their mass and the row's (relative to the row max; +inf rows: counts)
    rounds : pivot rounds on the scratch (candidates, or the compacted interval), both searches
    full_row_rounds : pivot rounds over the whole row (fallback), both searches
    rounds_k, rounds_p : all rounds of the top-k / top-p search (each at most 16 for 32-bit keys)
    boundary_k, tie_budget_k, boundary_p, tie_budget_p : boundary keys T and their tie budgets
        (None when that search did not run)
    n_kept : entries kept
    """

    path: str = "off"
    k: int = 0
    p: float = math.nan
    sigma_cutoff: float = -math.inf
    cutoff_key: int = 0
    n_finite_sample: int = 0
    count_cand: int = 0
    mass_cand: float = 0.0
    row_mass: float = 0.0
    rounds: int = 0
    full_row_rounds: int = 0
    rounds_k: int = 0
    rounds_p: int = 0
    boundary_k: int | None = None
    tie_budget_k: int | None = None
    boundary_p: int | None = None
    tie_budget_p: int | None = None
    n_kept: int = 0
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ 1. row parameters
def row_params(k, p, batch: int, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-row effective k (0 = off) and p (NaN = off), docs/algorithm.md section 1: the
    oracle's rules (``k <= 0`` or ``k >= V`` off, ``p >= 1`` or NaN off, ``p <= 0`` -> k = 1)."""
    if k is not None and np.asarray(k).dtype.kind not in "iu":
        raise TypeError(f"k must be an integer or an integer array, got {k!r}")
    return oracle.row_params(k, p, batch, vocab)


# ----------------------------------------------------------------------------------- helpers
def _to_float64(x: np.ndarray) -> np.ndarray:
    if x.dtype.name == "bfloat16":
        return x.astype(np.float32).astype(np.float64)
    return x.astype(np.float64)


class _WorkingSet:
    """Entries a search runs over: keys (int64) and weights (float64) in index order, plus the
    count and mass of the entries above the set that are not in it (carried in)."""

    def __init__(
        self, keys: np.ndarray, w: np.ndarray | None, base_c: int = 0, base_m: float = 0.0
    ):
        self.keys = keys
        self.w = w
        self.base_c = base_c
        self.base_m = base_m

    def count_above(self, q: int) -> int:
        return self.base_c + int(np.count_nonzero(self.keys > q))

    def mass_above(self, q: int) -> float:
        return self.base_m + float(np.sum(np.where(self.keys > q, self.w, 0.0)))

    def min_key_above(self, q: int) -> int | None:
        sel = self.keys[self.keys > q]
        return int(sel.min()) if sel.size else None


@dataclass
class _Bound:
    key: int
    count: int  # count_above(key)
    mass: float  # mass_above(key) (0.0 and unused for top-k)


class _Search:
    """Quaternary pivot search for the boundary key T (docs/algorithm.md sections 4 and 7).

    ``kind`` "k": predicate(q) = count_above(q) >= target (an int);
    ``kind`` "p": predicate(q) = mass_above(q) >= target (a float).
    T > q iff predicate(q). Invariant: predicate(lo) true, predicate(hi) false.
    """

    def __init__(self, kind: str, target, ws: _WorkingSet, lo: _Bound, hi: _Bound, cap: int | None):
        self.kind, self.target, self.ws, self.lo, self.hi = kind, target, ws, lo, hi
        self.full = cap is not None  # full-row mode until the interval holds <= cap entries
        self.cap = cap
        self.rounds_scratch = 0
        self.rounds_full = 0

    def _eval(self, q: int) -> _Bound:
        c = self.ws.count_above(q)
        m = self.ws.mass_above(q) if self.kind == "p" else 0.0
        return _Bound(q, c, m)

    def _holds(self, b: _Bound) -> bool:
        return b.count >= self.target if self.kind == "k" else b.mass >= self.target

    def _compact(self) -> None:
        """Compact the entries of (lo, hi] in index order; carry in what lies above hi."""
        ws = self.ws
        sel = (ws.keys > self.lo.key) & (ws.keys <= self.hi.key)
        w = ws.w[sel] if ws.w is not None else None
        self.ws = _WorkingSet(ws.keys[sel], w, self.hi.count, self.hi.mass)
        self.full = False

    def run(self) -> _Bound:
        while True:
            lo, hi = self.lo, self.hi
            if hi.key - lo.key <= 1:
                return hi
            if self.full and lo.count - hi.count <= self.cap:
                self._compact()
                continue
            # one round: three pivots at 1/4, 1/2, 3/4 of (lo, hi] (integer arithmetic)
            span = hi.key - lo.key
            pivots = sorted({lo.key + span * j // 4 for j in (1, 2, 3)})
            new_lo, new_hi = lo, hi
            for q in pivots:
                if q <= lo.key or q >= hi.key:
                    continue
                b = self._eval(q)
                if self._holds(b):
                    if q > new_lo.key:
                        new_lo = b
                elif q < new_hi.key:
                    new_hi = b
            self.lo, self.hi = new_lo, new_hi
            if self.full:
                self.rounds_full += 1
            else:
                self.rounds_scratch += 1
            # tie-counting stop at the smallest key above the new lo
            nk = self.ws.min_key_above(self.lo.key)
            if nk is None or nk > self.hi.key:  # nothing inside (only through rounding)
                return self.hi
            bn = self._eval(nk)
            if not self._holds(bn):
                return bn
            self.lo = bn

    @property
    def rounds(self) -> int:
        return self.rounds_scratch + self.rounds_full


def _tie_rank(keys: np.ndarray, T: int) -> np.ndarray:
    """Running rank (in index order) of each entry among the copies of T; -1 elsewhere."""
    eq = keys == T
    r = np.cumsum(eq) - 1
    return np.where(eq, r, -1)


def _keep_of(keys: np.ndarray, T: int, budget: int) -> np.ndarray:
    """(key > T) plus the first ``budget`` copies of T in index order."""
    tr = _tie_rank(keys, T)
    return (keys > T) | ((tr >= 0) & (tr < budget))


def _p_budget(T: _Bound, target: float, w_T: float, copies: int) -> int:
    if copies <= 0:
        return 0
    if not w_T > 0.0:
        return copies
    need = math.ceil((target - T.mass) / w_T)
    return int(min(max(need, 1), copies))


# --------------------------------------------------------------------------------------- a row
def _row(
    x: np.ndarray, k: int, p: float, *, block: int, cap: int, oversample: float
) -> tuple[np.ndarray, RowReport]:
    """Keep-mask of one row (V,) of any supported dtype, and its report."""
    V = x.shape[0]
    rep = RowReport(k=int(k), p=float(p))
    keep_all = np.ones(V, dtype=bool)
    k_on = k > 0
    p_on = not np.isnan(p)
    if not k_on and not p_on:
        rep.n_kept = V
        return keep_all, rep

    nbits = key_bits(x)
    keys = order_key(x).astype(np.int64)
    xf = _to_float64(x)

    # ---------------------------------------------------------------- 2. pass A: σ-truncation
    tile0 = xf[: min(block, V)]
    fin0 = np.isfinite(tile0)
    n_fin = int(fin0.sum())
    rep.n_finite_sample = n_fin
    cutoff = -math.inf
    if n_fin >= 2:
        mean = float(tile0[fin0].mean())
        std = float(tile0[fin0].std(ddof=1))
        if math.isfinite(mean) and math.isfinite(std) and std > 0:
            if k_on:
                frac = n_fin / tile0.shape[0]
                f = min(1.0, oversample * k / (V * frac))
                cutoff = -math.inf if f >= 1.0 else mean + std * (-ndtri(f))
            else:
                cutoff = mean + std * std + std * ndtri((1.0 - p) / oversample)
    if math.isnan(cutoff):
        cutoff = -math.inf
    rep.sigma_cutoff = cutoff
    if nbits == 32:
        with np.errstate(over="ignore"):
            cutoff_key = int(order_key(np.array([cutoff], dtype=np.float32))[0])
    else:
        cutoff_key = int(order_key(np.array([cutoff], dtype=np.float64))[0])
    rep.cutoff_key = cutoff_key

    # streaming over tiles: row max, row mass, candidates (count, mass, compaction in index order)
    m = -math.inf
    s = 0.0
    sc = 0.0
    n_inf = 0
    n_inf_c = 0
    count_cand = 0
    cand_idx: list[np.ndarray] = []
    n_stored = 0
    min_key = None
    max_key = None
    for start in range(0, V, block):
        t = xf[start : start + block]
        tk = keys[start : start + block]
        is_cand = tk >= cutoff_key
        fin = np.isfinite(t)
        tmax = float(t[~np.isnan(t)].max()) if np.any(~np.isnan(t)) else -math.inf
        new_m = max(m, tmax)
        if math.isfinite(new_m):
            scale = math.exp(m - new_m) if math.isfinite(m) else 0.0
            e = np.exp(np.where(fin, t, new_m) - new_m) * fin
            s = s * scale + float(e.sum())
            sc = sc * scale + float((e * is_cand).sum())
        m = new_m
        pinf = t == np.inf
        n_inf += int(pinf.sum())
        n_inf_c += int((pinf & is_cand).sum())
        n_c = int(is_cand.sum())
        if n_c:
            room = max(0, cap - n_stored)
            idx = start + np.flatnonzero(is_cand)[:room]
            cand_idx.append(idx)
            n_stored += idx.size
        count_cand += n_c
        tmin_k, tmax_k = int(tk.min()), int(tk.max())
        min_key = tmin_k if min_key is None else min(min_key, tmin_k)
        max_key = tmax_k if max_key is None else max(max_key, tmax_k)
    if n_inf > 0:
        row_max, row_mass, mass_cand = math.inf, float(n_inf), float(n_inf_c)
    else:
        row_max, row_mass, mass_cand = m, (s if math.isfinite(m) else 0.0), sc
    rep.count_cand, rep.mass_cand, rep.row_mass = count_cand, mass_cand, row_mass
    if p_on and not row_mass > 0.0:
        p_on = False  # undefined mass: top-p keeps every survivor
        rep.notes.append("mass undefined: top-p off")
    if not k_on and not p_on:
        rep.path = "off"
        rep.n_kept = V
        return keep_all, rep
    w_all = weight(xf, row_max)

    # ---------------------------------------------------------------------------- 3. hit test
    target_p = p * row_mass if (p_on and not k_on) else None
    if k_on:
        hit = count_cand <= cap and count_cand >= k
    else:
        hit = count_cand <= cap and mass_cand >= target_p
    rep.path = "hit" if hit else "fallback"
    lo_min = min_key - 1
    nan_key = KEY_NAN if nbits == 32 else KEY_NAN64
    assert min_key >= nan_key

    if hit:
        cidx = np.concatenate(cand_idx) if cand_idx else np.zeros(0, dtype=np.int64)
        ck, cw = keys[cidx], w_all[cidx]
        ws0 = _WorkingSet(ck, cw)
        lo0 = int(ck.min()) - 1
        hi0 = int(ck.max())
        mass_c = float(np.sum(cw)) if not k_on else 0.0
    else:
        cidx = None
        ws0 = _WorkingSet(keys, w_all)

    keep_sub: np.ndarray  # keep-mask over the current entries (candidates on a hit, the row else)
    sub_keys = ws0.keys
    sub_w = ws0.w

    # ---------------------------------------------------------- 4-5. top-k boundary and budget
    if k_on:
        if hit:
            lo, hi = _Bound(lo0, count_cand, 0.0), _Bound(hi0, 0, 0.0)
            search = _Search("k", k, ws0, lo, hi, None)
        else:
            if count_cand >= k:
                lk = max(cutoff_key - 1, lo_min)
                lo, hi = _Bound(lk, count_cand, 0.0), _Bound(max_key, 0, 0.0)
            else:
                hk = min(cutoff_key - 1, max_key)
                lo, hi = _Bound(lo_min, V, 0.0), _Bound(hk, count_cand, 0.0)
            search = _Search("k", k, ws0, lo, hi, cap)
        Tk = search.run()
        rep.rounds_k = search.rounds
        rep.rounds += search.rounds_scratch
        rep.full_row_rounds += search.rounds_full
        budget_k = k - Tk.count
        rep.boundary_k, rep.tie_budget_k = Tk.key, budget_k
        keep_sub = _keep_of(sub_keys, Tk.key, budget_k)
    else:
        keep_sub = np.ones(sub_keys.shape[0], dtype=bool)

    # ------------------------------------------------------------------------- top-p boundary
    if p_on:
        if k_on:
            # survivors of top-k; their mass; T_p >= T_k
            sk, sw = sub_keys[keep_sub], sub_w[keep_sub]
            mass_gt_k = float(np.sum(np.where(sub_keys > Tk.key, sub_w, 0.0)))
            w_tk = float(weight(key_to_value(np.array([Tk.key]), nbits), row_max)[0])
            surv_mass = mass_gt_k + budget_k * w_tk
            if not surv_mass > 0.0:
                rep.notes.append("survivor mass 0: top-p off")
                target = None
            else:
                target = p * surv_mass
                ws_p = _WorkingSet(sk, sw)
                lo = _Bound(Tk.key - 1, k, surv_mass)
                hi = _Bound(max_key, 0, 0.0)
                search = _Search("p", target, ws_p, lo, hi, None if hit else cap)
        else:
            target = target_p
            if hit:
                lo, hi = _Bound(lo0, count_cand, mass_c), _Bound(hi0, 0, 0.0)
                search = _Search("p", target, ws0, lo, hi, None)
            else:
                if mass_cand >= target:
                    lk = max(cutoff_key - 1, lo_min)
                    lo, hi = _Bound(lk, count_cand, mass_cand), _Bound(max_key, 0, 0.0)
                else:
                    hk = min(cutoff_key - 1, max_key)
                    lo, hi = _Bound(lo_min, V, row_mass), _Bound(hk, count_cand, mass_cand)
                search = _Search("p", target, ws0, lo, hi, cap)
        if target is not None:
            Tp = search.run()
            rep.rounds_p = search.rounds
            rep.rounds += search.rounds_scratch
            rep.full_row_rounds += search.rounds_full
            # copies of T_p among the survivors (T_p == T_k: capped at the top-k tie budget)
            surv_T = keep_sub & (sub_keys == Tp.key)
            copies = int(np.count_nonzero(surv_T))
            w_tp = (
                float(weight(key_to_value(np.array([Tp.key]), nbits), row_max)[0])
                if Tp.key != nan_key
                else 0.0
            )
            budget_p = _p_budget(Tp, target, w_tp, copies)
            rep.boundary_p, rep.tie_budget_p = Tp.key, budget_p
            tr = np.cumsum(surv_T) - 1
            keep_sub = keep_sub & ((sub_keys > Tp.key) | (surv_T & (tr < budget_p)))

    # ----------------------------------------------------------------------------- 6. output
    if hit:
        keep = np.zeros(V, dtype=bool)
        keep[cidx[keep_sub]] = True  # scatter the kept candidates
    else:
        keep = keep_sub  # one pass over the row: decided by key and running tie rank
    rep.n_kept = int(keep.sum())
    return keep, rep


# ------------------------------------------------------------------------------ public functions
def top_k_top_p_mask(
    logits: np.ndarray,
    k=None,
    p=None,
    *,
    fill: float = -np.inf,
    block: int = 4096,
    cap: int = 4096,
    oversample: float = 4.0,
    report: bool = False,
):
    """Top-k then top-p mask by the Qrita algorithm (a new array).

    Parameters
    ----------
    logits : ndarray (V,) or (B, V), float16 / bfloat16 (ml_dtypes) / float32 / float64
    k : None, int, or (B,) integer array (``k <= 0`` or ``k >= V``: off)
    p : None, float, or (B,) float array (``p >= 1`` or NaN: off; ``p <= 0``: first entry only)
    fill : value written over the masked entries
    block : tile size of pass A (its first tile gives the σ-truncation statistics)
    cap : scratch capacity (candidates per row; the fallback compacts at most this many)
    oversample : safety factor of the σ-truncation
    report : also return a list of per-row :class:`RowReport`

    Returns
    -------
    ndarray of logits' shape and dtype (kept entries bit-identical), or (array, reports)
    """
    x = np.asarray(logits)
    if x.dtype.name not in ("float16", "bfloat16", "float32", "float64"):
        raise TypeError(f"logits must be float16/bfloat16/float32/float64, got dtype {x.dtype}")
    if x.ndim not in (1, 2):
        raise ValueError(f"logits must have shape (V,) or (B, V), got ndim {x.ndim}")
    if block < 1 or cap < 1:
        raise ValueError(f"block and cap must be >= 1 (block={block}, cap={cap})")
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    B, V = x2.shape
    k_rows, p_rows = row_params(k, p, B, V)
    keep = np.ones((B, V), dtype=bool)
    reports: list[RowReport] = []
    for b in range(B):
        if V == 0:
            reports.append(RowReport())
            continue
        keep[b], rep = _row(
            x2[b], int(k_rows[b]), float(p_rows[b]), block=block, cap=cap, oversample=oversample
        )
        reports.append(rep)
    out = x2.copy()
    out[~keep] = fill
    out = out.reshape(x.shape)
    return (out, reports) if report else out


def top_k_mask(logits: np.ndarray, k, **kw):
    """Top-k mask by the Qrita algorithm (see :func:`top_k_top_p_mask`)."""
    return top_k_top_p_mask(logits, k, None, **kw)


def top_p_mask(logits: np.ndarray, p, **kw):
    """Top-p mask by the Qrita algorithm (see :func:`top_k_top_p_mask`)."""
    return top_k_top_p_mask(logits, None, p, **kw)
