"""``@triton.jit`` steps of the exact full-row fallback and of whole-row output (docs/algorithm.md
§7): one program owns one row. Imports triton only."""

import triton
import triton.language as tl

from qrita.backends.triton.primitives import (
    fixed_weight,
    full_row_round,
    narrow,
    quarter_pivots,
    rank_key,
    search_in_registers,
    weights_of,
)


@triton.jit
def compact_interval(row_ptr, V, lo, hi, cand_val, cand_idx, BLOCK: tl.constexpr,
                     SMALLEST: tl.constexpr):
    """Copy the entries with key in (lo, hi] (in index order) into the scratch."""
    count = 0
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        valid = offs < V
        x = tl.load(row_ptr + offs, mask=valid, other=0.0).to(tl.float32)
        key = rank_key(x, SMALLEST).to(tl.int64)
        take = valid & (key > lo) & (key <= hi)
        pos = count + tl.cumsum(take.to(tl.int32), axis=0) - 1
        tl.store(cand_val + pos, x, mask=take)
        tl.store(cand_idx + pos, offs, mask=take)
        count += tl.sum(take.to(tl.int32), axis=0)
    return count


@triton.jit
def full_row_search(row_ptr, V, lo, hi, cnt_lo, cnt_hi, mass_hi, k_target, mass_target,
                    row_max, inf_mode, cand_val, cand_idx,
                    BLOCK: tl.constexpr, CAP: tl.constexpr, USE_MASS: tl.constexpr,
                    NEED_MASS: tl.constexpr, SMALLEST: tl.constexpr, FIXED: tl.constexpr = False):
    """Exact fallback: find the boundary key T in (lo, hi] reading the whole row.

    Invariant: the predicate holds at lo and fails at hi; ``cnt_lo`` / ``cnt_hi`` are the row's
    counts of keys above lo / hi and ``mass_hi`` the weight above hi. Quaternary rounds (one read
    each) narrow the interval until one key is left or at most CAP entries are inside; those are
    compacted and the search finishes in registers.
    FIXED: masses (``mass_hi``, ``mass_target``, the returned weight) are int64 fixed-point sums
    (:func:`~.primitives.fixed_weight`).
    Returns T, count above T, weight above T, count above T - 1, full-row rounds.
    """
    rounds = 0
    while (hi - lo > 1) & (cnt_lo - cnt_hi > CAP):
        piv = quarter_pivots(lo, hi)
        counts, masses, key_min, key_max = full_row_round(row_ptr, V, piv, lo, hi, row_max,
                                                          inf_mode, BLOCK, NEED_MASS, SMALLEST,
                                                          FIXED)
        if USE_MASS:
            holds = masses >= mass_target
        else:
            holds = counts >= k_target
        holds = holds | (piv == lo)
        new_lo, new_hi = narrow(piv, holds, lo, hi)
        new_cnt_lo = tl.min(tl.where(holds & (piv > lo), counts, cnt_lo), axis=0)
        new_cnt_hi = tl.max(tl.where(holds, cnt_hi, counts), axis=0)
        new_mass_hi = tl.max(tl.where(holds, mass_hi, masses), axis=0)
        # snap onto the occupied keys of the old interval (counts above are unchanged by it)
        lo = tl.maximum(new_lo, key_min.to(tl.int64) - 1)
        hi = tl.minimum(new_hi, key_max.to(tl.int64))
        cnt_lo = new_cnt_lo
        cnt_hi = new_cnt_hi
        mass_hi = new_mass_hi
        rounds += 1
    T = hi.to(tl.int32)
    cnt_gt_t = cnt_hi
    mass_gt_t = mass_hi
    cnt_gt_below = cnt_lo
    if hi - lo > 1:
        n = compact_interval(row_ptr, V, lo, hi, cand_val, cand_idx, BLOCK, SMALLEST)
        tl.debug_barrier()
        offs_c = tl.arange(0, CAP)
        member = offs_c < n
        cx = tl.load(cand_val + offs_c, mask=member, other=0.0)
        ckey = rank_key(cx, SMALLEST)
        cw = weights_of(cx, row_max, inf_mode)
        if FIXED:
            cw = fixed_weight(cw)
        T, r = search_in_registers(ckey, cw, member, lo, hi, cnt_hi, mass_hi, k_target,
                                   mass_target, USE_MASS)
        cnt_gt_t = cnt_hi + tl.sum((member & (ckey > T)).to(tl.int32), axis=0)
        mass_gt_t = mass_hi + tl.sum(tl.where(member & (ckey > T), cw, 0), axis=0)
        cnt_gt_below = cnt_gt_t + tl.sum((member & (ckey == T)).to(tl.int32), axis=0)
        tl.debug_barrier()
    return T, cnt_gt_t, mass_gt_t, cnt_gt_below, rounds


@triton.jit
def top_p_budget(target, mass_gt_t, weight_t, copies):
    """How many copies of the boundary value top-p keeps: copy j is kept iff
    mass_gt_t + j * weight_t < target."""
    need = tl.ceil((target - mass_gt_t) / tl.maximum(weight_t, 1e-38))
    need = tl.minimum(tl.maximum(need, 1.0), copies.to(tl.float32))
    return need.to(tl.int32)


@triton.jit
def top_p_budget_fixed(target, mass_gt_t, weight_t, copies):
    """:func:`top_p_budget` in fixed point (int64 target, mass and weight: the integers of
    :func:`~.primitives.fixed_target` and :func:`~.primitives.fixed_weight`): copy j is kept iff
    mass_gt_t + j * weight_t < target, so ceil((target - mass_gt_t) / weight_t) copies, at least
    one and at most ``copies``; a weight of 0 (below 2^-40) keeps every copy."""
    short = tl.maximum(target - mass_gt_t, 1)
    step = tl.maximum(weight_t, 1)
    need = tl.where(weight_t > 0, (short + step - 1) // step, copies.to(tl.int64))
    return tl.minimum(need, copies.to(tl.int64)).to(tl.int32)


@triton.jit
def keep_decision(key, member, T, budget, ties_before):
    """Kept flags of a run of entries in index order: key > T, or a copy of T whose rank among the
    row's copies (``ties_before`` earlier ones) is below ``budget``. Also the run's copies of T."""
    tie = member & (key == T)
    tie_rank = ties_before + tl.cumsum(tie.to(tl.int32), axis=0) - 1
    kept = member & ((key > T) | (tie & (tie_rank < budget)))
    return kept, tl.sum(tie.to(tl.int32), axis=0)


@triton.jit
def write_span_decide(row_in, row_out, start, stop, V, T, budget, ties_before, fill,
                      BLOCK: tl.constexpr, SMALLEST: tl.constexpr):
    """Read entries [start, min(stop, V)) and write each one kept, or ``fill`` (in place safe)."""
    out_ty = row_out.dtype.element_ty
    fill_block = (tl.zeros([BLOCK], tl.float32) + fill).to(out_ty)
    ties_before = budget * 0 + ties_before  # a tensor, also when the caller passes 0
    for off in range(start, stop, BLOCK):
        offs = off + tl.arange(0, BLOCK)
        valid = (offs < V) & (offs < stop)
        x_raw = tl.load(row_in + offs, mask=valid, other=0.0)
        key = rank_key(x_raw.to(tl.float32), SMALLEST)
        kept = valid & (key > T)
        n_ties = tl.sum((valid & (key == T)).to(tl.int32), axis=0)
        if n_ties > 0:  # ranks among the row's copies of T only where the tile has any
            kept, n_ties = keep_decision(key, valid, T, budget, ties_before)
        tl.store(row_out + offs, tl.where(kept, x_raw.to(out_ty), fill_block), mask=valid)
        ties_before += n_ties


@triton.jit
def write_span_from(row_in, row_out, start, stop, V, lowest, fill, BLOCK: tl.constexpr,
                    SMALLEST: tl.constexpr):
    """Read entries [start, min(stop, V)) and write each one whose rank key is at least
    ``lowest`` (int32), or ``fill`` (in place safe): a span where every copy of T is kept
    (``lowest`` = T) or none is (T + 1), so no copy is ranked and no tile counts them."""
    out_ty = row_out.dtype.element_ty
    fill_block = (tl.zeros([BLOCK], tl.float32) + fill).to(out_ty)
    for off in range(start, stop, BLOCK):
        offs = off + tl.arange(0, BLOCK)
        valid = (offs < V) & (offs < stop)
        x_raw = tl.load(row_in + offs, mask=valid, other=0.0)
        kept = rank_key(x_raw.to(tl.float32), SMALLEST) >= lowest
        tl.store(row_out + offs, tl.where(kept, x_raw.to(out_ty), fill_block), mask=valid)


@triton.jit
def write_row_decide(row_in, row_out, V, T, budget, fill, BLOCK: tl.constexpr,
                     SMALLEST: tl.constexpr):
    """Fallback output: read and write the whole row."""
    write_span_decide(row_in, row_out, 0, V, V, T, budget, 0, fill, BLOCK, SMALLEST)


@triton.jit
def write_row_select(row_in, sel_val, sel_idx, V, T, budget, BLOCK: tl.constexpr,
                     SMALLEST: tl.constexpr):
    """Fallback selection: the kept entries (key > T and the first ``budget`` ties), in index
    order, into ``sel_val`` / ``sel_idx``."""
    ties_before = 0
    kept_before = 0
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        valid = offs < V
        x_raw = tl.load(row_in + offs, mask=valid, other=0.0)
        key = rank_key(x_raw.to(tl.float32), SMALLEST)
        kept, n_ties = keep_decision(key, valid, T, budget, ties_before)
        pos = kept_before + tl.cumsum(kept.to(tl.int32), axis=0) - 1
        tl.store(sel_val + pos, x_raw.to(sel_val.dtype.element_ty), mask=kept)
        tl.store(sel_idx + pos, offs.to(tl.int64), mask=kept)
        ties_before += n_ties
        kept_before += tl.sum(kept.to(tl.int32), axis=0)
