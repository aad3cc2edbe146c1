"""``@triton.jit`` kernels of the masks: top-k, top-p, top-k then top-p (docs/algorithm.md).

One program walks rows ``pid, pid + nprog, ...`` and owns ``CAP`` scratch slots (value, index),
reused row after row, so scratch is O(programs x CAP), never O(V) per program.
Imports triton only.
"""

import triton
import triton.language as tl

from qrita.backends.triton.primitives import (
    KEY_MAX,
    KEY_NAN,
    first_tile_stats,
    full_row_round,
    key_to_value,
    narrow,
    order_key,
    quarter_pivots,
    search_in_registers,
    upper_normal_quantile,
    weights_of,
)


@triton.jit
def compact_interval(row_ptr, V, lo, hi, cand_val, cand_idx, BLOCK: tl.constexpr):
    """Copy the entries with key in (lo, hi] (in index order) into the scratch."""
    count = 0
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        valid = offs < V
        x = tl.load(row_ptr + offs, mask=valid, other=0.0).to(tl.float32)
        key = order_key(x).to(tl.int64)
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
                    NEED_MASS: tl.constexpr):
    """Exact fallback: find the boundary key T in (lo, hi] reading the whole row.

    Invariant: the predicate holds at lo and fails at hi; ``cnt_lo`` / ``cnt_hi`` are the row's
    counts of keys above lo / hi and ``mass_hi`` the weight above hi. Quaternary rounds (one read
    each) narrow the interval until one key is left or at most CAP entries are inside; those are
    compacted and the search finishes in registers.
    Returns T, count above T, weight above T, count above T - 1, full-row rounds.
    """
    rounds = 0
    while (hi - lo > 1) & (cnt_lo - cnt_hi > CAP):
        piv = quarter_pivots(lo, hi)
        counts, masses, key_min, key_max = full_row_round(row_ptr, V, piv, lo, hi, row_max,
                                                          inf_mode, BLOCK, NEED_MASS)
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
        n = compact_interval(row_ptr, V, lo, hi, cand_val, cand_idx, BLOCK)
        tl.debug_barrier()
        offs_c = tl.arange(0, CAP)
        member = offs_c < n
        cx = tl.load(cand_val + offs_c, mask=member, other=0.0)
        ckey = order_key(cx)
        cw = weights_of(cx, row_max, inf_mode)
        T, r = search_in_registers(ckey, cw, member, lo, hi, cnt_hi, mass_hi, k_target,
                                   mass_target, USE_MASS)
        cnt_gt_t = cnt_hi + tl.sum((member & (ckey > T)).to(tl.int32), axis=0)
        mass_gt_t = mass_hi + tl.sum(tl.where(member & (ckey > T), cw, 0.0), axis=0)
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
def write_row_fill_scatter(row_out, V, cand_val, cand_idx, n_cand, T, budget, fill,
                           BLOCK: tl.constexpr, CAP: tl.constexpr):
    """Hit output: fill the whole row, then scatter the kept candidates (one write, no read)."""
    offs_c = tl.arange(0, CAP)
    member = offs_c < n_cand
    cx = tl.load(cand_val + offs_c, mask=member, other=0.0)
    cidx = tl.load(cand_idx + offs_c, mask=member, other=0)
    ckey = order_key(cx)
    tie = member & (ckey == T)
    tie_rank = tl.cumsum(tie.to(tl.int32), axis=0) - 1
    kept = member & ((ckey > T) | (tie & (tie_rank < budget)))
    out_ty = row_out.dtype.element_ty
    fill_block = (tl.zeros([BLOCK], tl.float32) + fill).to(out_ty)
    tl.debug_barrier()  # every thread has read the scratch and the row before it is overwritten
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        tl.store(row_out + offs, fill_block, mask=offs < V)
    tl.debug_barrier()  # the fill lands before the kept values
    tl.store(row_out + cidx, cx.to(out_ty), mask=kept)


@triton.jit
def write_row_decide(row_in, row_out, V, T, budget, fill, BLOCK: tl.constexpr):
    """Fallback output: read and write the row, keeping key > T and the first ``budget`` ties."""
    out_ty = row_out.dtype.element_ty
    ties_before = 0
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        valid = offs < V
        x_raw = tl.load(row_in + offs, mask=valid, other=0.0)
        key = order_key(x_raw.to(tl.float32))
        tie = valid & (key == T)
        tie_rank = ties_before + tl.cumsum(tie.to(tl.int32), axis=0) - 1
        kept = (key > T) | (tie & (tie_rank < budget))
        fill_block = (tl.zeros([BLOCK], tl.float32) + fill).to(out_ty)
        out = tl.where(kept, x_raw.to(out_ty), fill_block)
        tl.store(row_out + offs, out, mask=valid)
        ties_before += tl.sum(tie.to(tl.int32), axis=0)


@triton.jit
def copy_row(row_in, row_out, V, BLOCK: tl.constexpr):
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        valid = offs < V
        x = tl.load(row_in + offs, mask=valid)
        tl.store(row_out + offs, x.to(row_out.dtype.element_ty), mask=valid)


@triton.jit
def top_k_top_p_mask_kernel(
    x_ptr, out_ptr, k_ptr, p_ptr, cand_val_ptr, cand_idx_ptr, stats_ptr,
    B, V, stride_x, stride_out, k_scalar, p_scalar, fill,
    HAS_K: tl.constexpr, K_ARRAY: tl.constexpr, HAS_P: tl.constexpr, P_ARRAY: tl.constexpr,
    INPLACE: tl.constexpr, WRITE_STATS: tl.constexpr,
    BLOCK: tl.constexpr, CAP: tl.constexpr, OVERSAMPLE: tl.constexpr,
):
    """Mask one or more rows: keep top-k, then top-p of the survivors; everything else -> fill.

    x_ptr, out_ptr : (B, V) rows with unit stride along V (out_ptr == x_ptr when in place)
    k_ptr, p_ptr   : (B,) per-row k (int) / p (float) when K_ARRAY / P_ARRAY, else the scalars
    cand_*_ptr     : (nprog, CAP) scratch, float32 values and int32 indices
    stats_ptr      : (B, 4) int32 per-row report when WRITE_STATS: hit, candidates, rounds, T
    """
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    zero_i = pid * 0
    zero_f = zero_i.to(tl.float32)
    cand_val = cand_val_ptr + (zero_i.to(tl.int64) + pid) * CAP
    cand_idx = cand_idx_ptr + (zero_i.to(tl.int64) + pid) * CAP
    for row in range(pid, B, nprog):
        tl.debug_barrier()  # the scratch is free again
        row64 = zero_i.to(tl.int64) + row
        row_x = x_ptr + row64 * stride_x
        row_o = out_ptr + row64 * stride_out

        # ---- per-row parameters (rules 2-3)
        k = zero_i
        if HAS_K:
            if K_ARRAY:
                k_raw = tl.load(k_ptr + row).to(tl.int64)
            else:
                k_raw = zero_i.to(tl.int64) + k_scalar
            k = tl.where((k_raw > 0) & (k_raw < V), k_raw, 0).to(tl.int32)
        p = zero_f + 2.0
        if HAS_P:
            if P_ARRAY:
                p = tl.load(p_ptr + row).to(tl.float32)
            else:
                p = zero_f + p_scalar
        p_on = (p < 1.0) & (p == p)
        p_zero = p_on & (p <= 0.0)
        k = tl.where(p_zero, 1, k)
        p_on = p_on & (p > 0.0)
        k_on = k > 0

        if k_on | p_on:
            # ---- σ-truncation: cutoff from the first tile's statistics
            mean, std, frac_finite, n_finite = first_tile_stats(row_x, V, BLOCK)
            frac_k = OVERSAMPLE * k.to(tl.float32) / (V * tl.maximum(frac_finite, 1e-6))
            cut_k = mean + std * upper_normal_quantile(tl.minimum(tl.maximum(frac_k, 1e-30), 0.999))
            cut_k = tl.where(frac_k >= 1.0, -float("inf"), cut_k)
            tail_p = tl.maximum((1.0 - p) / OVERSAMPLE, 1e-30)
            cut_p = mean + std * std - std * upper_normal_quantile(tl.minimum(tail_p, 0.999))
            cutoff = tl.where(k_on, cut_k, cut_p)
            usable = (n_finite >= 2) & (std > 0.0) & (std < float("inf"))
            cutoff = tl.where(usable, cutoff, -float("inf"))
            cutoff_key = order_key(cutoff)

            # ---- pass A: max, mass, candidates (one read)
            row_max = zero_f - float("inf")
            row_mass = zero_f
            n_inf = zero_i
            n_inf_cand = zero_i
            cand_mass = zero_f
            n_cand = zero_i
            key_max = zero_i + KEY_NAN
            for start in range(0, V, BLOCK):
                offs = start + tl.arange(0, BLOCK)
                valid = offs < V
                x = tl.load(row_x + offs, mask=valid, other=0.0).to(tl.float32)
                key = order_key(x)
                key_max = tl.maximum(key_max, tl.max(tl.where(valid, key, KEY_NAN), axis=0))
                is_cand = valid & (key >= cutoff_key)
                if HAS_P:
                    finite = valid & (tl.abs(x) < float("inf"))
                    new_max = tl.maximum(row_max, tl.max(tl.where(finite, x, -float("inf")), axis=0))
                    scale = tl.where(row_max > -float("inf"), tl.exp(row_max - new_max), 0.0)
                    e = tl.where(finite, tl.exp(tl.where(finite, x, 0.0) - new_max), 0.0)
                    row_mass = row_mass * scale + tl.sum(e, axis=0)
                    cand_mass = cand_mass * scale + tl.sum(tl.where(is_cand, e, 0.0), axis=0)
                    row_max = new_max
                    is_inf = valid & (x == float("inf"))
                    n_inf += tl.sum(is_inf.to(tl.int32), axis=0)
                    n_inf_cand += tl.sum((is_inf & is_cand).to(tl.int32), axis=0)
                pos = n_cand + tl.cumsum(is_cand.to(tl.int32), axis=0) - 1
                keep_slot = is_cand & (pos < CAP)
                tl.store(cand_val + pos, x, mask=keep_slot)
                tl.store(cand_idx + pos, offs, mask=keep_slot)
                n_cand += tl.sum(is_cand.to(tl.int32), axis=0)
            inf_mode = n_inf > 0
            row_mass = tl.where(inf_mode, n_inf.to(tl.float32), row_mass)
            cand_mass = tl.where(inf_mode, n_inf_cand.to(tl.float32), cand_mass)
            p_on = p_on & (k_on | (row_mass > 0.0))  # top-p alone on an undefined mass keeps all
            keep_all = (not k_on) & (not p_on)

            # ---- hit test
            enough = tl.where(k_on, n_cand >= k, cand_mass >= p * row_mass)
            hit = (n_cand <= CAP) & enough & (not keep_all)
            T_k = zero_i + KEY_NAN  # "top-k off": every key is above KEY_NAN - 1 ...
            budget_k = zero_i + V  # ... and every NaN copy is within budget
            T = T_k
            budget = budget_k
            rounds = zero_i
            tl.debug_barrier()  # the compacted candidates are visible to every thread
            if hit:
                offs_c = tl.arange(0, CAP)
                member = offs_c < n_cand
                cx = tl.load(cand_val + offs_c, mask=member, other=0.0)
                ckey = order_key(cx)
                cw = weights_of(cx, row_max, inf_mode)
                if k_on:
                    T_k, r = search_in_registers(ckey, cw, member, zero_i.to(tl.int64) + KEY_NAN - 1,
                                                 zero_i.to(tl.int64) + KEY_MAX, zero_i, zero_f,
                                                 k, zero_f, False)
                    rounds += r
                    budget_k = k - tl.sum((member & (ckey > T_k)).to(tl.int32), axis=0)
                T = T_k
                budget = budget_k
                if p_on:
                    above_tk = member & (ckey > T_k)
                    w_tk = tl.max(tl.where(member & (ckey == T_k), cw, 0.0), axis=0)
                    surv_mass = tl.sum(tl.where(above_tk, cw, 0.0), axis=0) + budget_k * w_tk
                    surv_mass = tl.where(k_on, surv_mass, row_mass)
                    if surv_mass > 0.0:
                        target = p * surv_mass
                        lo_p = tl.where(k_on, T_k.to(tl.int64) - 1, KEY_NAN - 1)
                        T_p, r = search_in_registers(ckey, cw, member, lo_p,
                                                     zero_i.to(tl.int64) + KEY_MAX, zero_i,
                                                     zero_f, zero_i, target, True)
                        rounds += r
                        above = member & (ckey > T_p)
                        at_t = member & (ckey == T_p)
                        copies = tl.sum(at_t.to(tl.int32), axis=0)
                        copies = tl.where(T_p == T_k, tl.minimum(copies, budget_k), copies)
                        mass_gt = tl.sum(tl.where(above, cw, 0.0), axis=0)
                        w_t = tl.max(tl.where(at_t, cw, 0.0), axis=0)
                        T = T_p
                        budget = top_p_budget(target, mass_gt, w_t, copies)
                write_row_fill_scatter(row_o, V, cand_val, cand_idx, n_cand, T, budget, fill,
                                       BLOCK, CAP)
            else:
                # ---- exact fallback over the full row
                cutoff_lo = cutoff_key.to(tl.int64) - 1
                if k_on:
                    lo = tl.where(n_cand >= k, cutoff_lo, KEY_NAN - 1)
                    hi = tl.where(n_cand >= k, key_max.to(tl.int64), cutoff_lo)
                    cnt_lo = tl.where(n_cand >= k, n_cand, V)
                    cnt_hi = tl.where(n_cand >= k, 0, n_cand)
                    mass_hi = tl.where(n_cand >= k, 0.0, cand_mass)
                    T_k, cnt_gt, mass_gt, cnt_ge, r = full_row_search(
                        row_x, V, lo, hi, cnt_lo, cnt_hi, mass_hi, k, zero_f, row_max, inf_mode,
                        cand_val, cand_idx, BLOCK, CAP, False, HAS_P)
                    rounds += r
                    budget_k = k - cnt_gt
                    T = T_k
                    budget = budget_k
                    if p_on:
                        w_tk = weights_of(key_to_value(T_k), row_max, inf_mode)
                        surv_mass = mass_gt + budget_k * w_tk
                        if surv_mass > 0.0:
                            target = p * surv_mass
                            T_p, cnt_gt_p, mass_gt_p, cnt_ge_p, r = full_row_search(
                                row_x, V, T_k.to(tl.int64) - 1, key_max.to(tl.int64), cnt_ge,
                                zero_i, zero_f, zero_i, target, row_max, inf_mode, cand_val, cand_idx,
                                BLOCK, CAP, True, True)
                            rounds += r
                            copies = cnt_ge_p - cnt_gt_p
                            copies = tl.where(T_p == T_k, tl.minimum(copies, budget_k), copies)
                            w_t = weights_of(key_to_value(T_p), row_max, inf_mode)
                            T = T_p
                            budget = top_p_budget(target, mass_gt_p, w_t, copies)
                elif p_on:
                    target = p * row_mass
                    enough_p = cand_mass >= target
                    lo = tl.where(enough_p, cutoff_lo, KEY_NAN - 1)
                    hi = tl.where(enough_p, key_max.to(tl.int64), cutoff_lo)
                    cnt_lo = tl.where(enough_p, n_cand, V)
                    cnt_hi = tl.where(enough_p, 0, n_cand)
                    mass_hi = tl.where(enough_p, 0.0, cand_mass)
                    T_p, cnt_gt_p, mass_gt_p, cnt_ge_p, r = full_row_search(
                        row_x, V, lo, hi, cnt_lo, cnt_hi, mass_hi, zero_i, target, row_max, inf_mode,
                        cand_val, cand_idx, BLOCK, CAP, True, True)
                    rounds += r
                    w_t = weights_of(key_to_value(T_p), row_max, inf_mode)
                    T = T_p
                    budget = top_p_budget(target, mass_gt_p, w_t, cnt_ge_p - cnt_gt_p)
                write_row_decide(row_x, row_o, V, T, budget, fill, BLOCK)
            if WRITE_STATS:
                tl.store(stats_ptr + row * 4 + 0, hit.to(tl.int32))
                tl.store(stats_ptr + row * 4 + 1, n_cand)
                tl.store(stats_ptr + row * 4 + 2, rounds)
                tl.store(stats_ptr + row * 4 + 3, T)
        else:
            if not INPLACE:
                copy_row(row_x, row_o, V, BLOCK)
