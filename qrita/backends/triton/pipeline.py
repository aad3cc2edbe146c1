"""``@triton.jit`` kernels of the three-launch pipeline (docs/algorithm.md). Imports triton only.

0. ``cutoff_kernel``, grid (B,): the σ-cutoff of each row from its first tile.
1. ``candidates_kernel``, grid (B, S): each program streams one segment of a row (segments depend
   on V only, so results never depend on the batch), applies the σ-cutoff of its row, compacts
   its candidates into its own scratch slots and writes the segment's max, mass and counts.
2. ``threshold_kernel``, grid (B,): merges the segments in a fixed order, runs the quaternary
   pivot search and tie counting on the candidates (registers), and writes per row the boundary
   key, tie budget and, per segment, how many ties / kept entries come before it. A row whose
   candidates do not suffice takes the exact full-row fallback here and writes its own output.
3. ``write_mask_kernel`` / ``write_select_kernel``, grid (B, S): each program writes its segment:
   fill, then the kept candidates (mask), or the kept candidates at their ranks (selection).

Kernel arguments: inputs, runtime scalars and strides, outputs, then constexprs.
"""

import triton
import triton.language as tl

from qrita.backends.triton.fallback import (
    full_row_search,
    keep_decision,
    top_p_budget,
    write_row_decide,
    write_row_select,
    write_span_decide,
    write_span_from,
)
from qrita.backends.triton.primitives import (  # noqa: I001
    KEY_FLOOR,
    KEY_MAX,
    KEY_NAN,
    RADIX,
    SEARCH_SPLIT_ROWS,
    compact_tile,
    count_search_radix,
    key_to_value,
    rank_key,
    retry_cutoff_key,
    sample_cutoff_key,
    search_in_registers,
    segment_tile,
    tile_ring_next,
    tile_ring_start,
    weights_of,
)

SEG_F: tl.constexpr = tl.constexpr(4)  # per segment floats: max, mass, candidate mass, -
SEG_I: tl.constexpr = tl.constexpr(8)  # per segment ints: candidates, +inf, +inf candidates, max key, cutoff key
ROW_I: tl.constexpr = tl.constexpr(16)  # per row ints: mode, T, budget, candidates, rounds, wide interval
ROW_F: tl.constexpr = tl.constexpr(8)  # per row floats (wide stage): max, target, +inf mode, mass above hi, row mass
# (and, with fixed-point masses, the int64 mass above hi in words 6-7: :func:`mass_hi_ptr`)


@triton.jit
def mass_hi_ptr(row_f_ptr, row64, FIXED: tl.constexpr):
    """A wide row's mass above hi: row_f[3] (float32), or (FIXED, the wide stage's fixed-point
    masses) the int64 in row_f[6:8] (a row's 8 words are 32 bytes: it is 8-byte aligned where
    row_f is)."""
    if FIXED:
        return row_f_ptr.to(tl.pointer_type(tl.int64)) + row64 * (ROW_F // 2) + 3
    else:
        return row_f_ptr + row64 * ROW_F + 3


@triton.jit
def row_params(k_ptr, p_ptr, row, V, k_scalar, p_scalar, zero_i, HAS_K: tl.constexpr,
               K_ARRAY: tl.constexpr, HAS_P: tl.constexpr, P_ARRAY: tl.constexpr):
    """Per-row k (0 = off) and p after rules 2-3; p <= 0 becomes k = 1."""
    k = zero_i
    if HAS_K:
        if K_ARRAY:
            k_raw = tl.load(k_ptr + row).to(tl.int64)
        else:
            k_raw = zero_i.to(tl.int64) + k_scalar
        k = tl.where((k_raw > 0) & (k_raw < V), k_raw, 0).to(tl.int32)
    p = zero_i.to(tl.float32) + 2.0
    if HAS_P:
        if P_ARRAY:
            p = tl.load(p_ptr + row).to(tl.float32)
        else:
            p = zero_i.to(tl.float32) + p_scalar
    p_on = (p < 1.0) & (p == p)
    p_zero = p_on & (p <= 0.0)
    k = tl.where(p_zero, 1, k)
    p_on = p_on & (p > 0.0)
    return k, k > 0, p, p_on


@triton.jit
def cutoff_kernel(
    x_ptr, k_ptr, p_ptr,
    V, stride_x, k_scalar, p_scalar, max_cands,
    cutoff_ptr,
    HAS_K: tl.constexpr, K_ARRAY: tl.constexpr, HAS_P: tl.constexpr, P_ARRAY: tl.constexpr,
    SMALLEST: tl.constexpr, SAMPLE: tl.constexpr, OVERSAMPLE: tl.constexpr,
):
    """Step 2's σ-cutoff of one row, computed once per row from its SAMPLE-entry sample.

    cutoff_ptr : (B,) int32 rank keys (KEY_NAN for rows with nothing to do)
    """
    row = tl.program_id(0)
    zero_i = row * 0
    row_x = x_ptr + (zero_i.to(tl.int64) + row) * stride_x
    k, k_on, p, p_on = row_params(k_ptr, p_ptr, row, V, k_scalar, p_scalar, zero_i,
                                  HAS_K, K_ARRAY, HAS_P, P_ARRAY)
    cutoff_key = zero_i + KEY_NAN
    if k_on | p_on:
        cutoff_key = sample_cutoff_key(row_x, V, k, k_on, p, max_cands, SAMPLE, OVERSAMPLE,
                                       SMALLEST)
    tl.store(cutoff_ptr + row, cutoff_key)


@triton.jit
def online_mass(x, valid, is_cand, lane_max, lane_mass, lane_cand_mass):
    """One tile of a per-lane online softmax: each lane keeps its running max m and the sums of
    exp(x - m) over all finite entries and over the candidates (one exp per entry)."""
    finite = valid & (tl.abs(x) < float("inf"))
    xf = tl.where(finite, x, -float("inf"))
    grow = xf > lane_max
    new_max = tl.maximum(lane_max, xf)
    # exp(old max - x) when x raises the lane's max, exp(x - max) otherwise; 0 for -inf entries
    ratio = tl.where(finite, tl.exp(tl.minimum(lane_max, xf) - new_max), 0.0)
    cand = is_cand.to(tl.float32)
    lane_mass = tl.where(grow, lane_mass * ratio + 1.0, lane_mass + ratio)
    lane_cand_mass = tl.where(grow, lane_cand_mass * ratio + cand, lane_cand_mass + ratio * cand)
    return new_max, lane_mass, lane_cand_mass


@triton.jit
def fixed_ref_mass(x, valid, is_cand, ref, lane_mass, lane_cand_mass):
    """One tile of :func:`online_mass`'s sums relative to a fixed reference ``ref`` instead of
    each lane's running max: exp(x - ref) per non-NaN entry, no rescaling and no running max
    (the segment's max is its largest non-NaN value; -inf adds 0). The caller checks afterwards
    that no term could overflow (max - ref small) and redoes a segment holding +inf."""
    w = tl.exp(tl.where(valid & (x == x), x, -float("inf")) - ref)
    return lane_mass + w, lane_cand_mass + tl.where(is_cand, w, 0.0)


@triton.jit
def reduce_online(lane_max, lane_mass, lane_cand_mass, lane_inf):
    """A segment's max, mass, candidate mass and +inf counts (entries, candidates) from the
    per-lane accumulators of :func:`online_mass` (each lane's sums scaled to the segment max)."""
    seg_max = tl.max(lane_max, axis=0)
    lane_scale = tl.where(lane_max > -float("inf"), tl.exp(lane_max - seg_max), 0.0)
    return (seg_max, tl.sum(lane_mass * lane_scale, axis=0),
            tl.sum(lane_cand_mass * lane_scale, axis=0), tl.sum(lane_inf & 65535, axis=0),
            tl.sum(lane_inf >> 16, axis=0))


@triton.jit
def segment_mass_online(row_x, V, seg_start, seg_len, bound, lanes, BLOCK: tl.constexpr):
    """A segment's max, mass and candidate mass (entries >= bound) and its +inf counts
    (entries, + 65536 x candidates) by :func:`online_mass`: LEAN pass A's exact fallback."""
    lane_max = tl.full([BLOCK], -float("inf"), tl.float32)
    lane_mass = tl.zeros([BLOCK], tl.float32)
    lane_cand_mass = tl.zeros([BLOCK], tl.float32)
    lane_inf = tl.zeros([BLOCK], tl.int32)
    for off in range(0, seg_len, BLOCK):
        offs = seg_start + off + lanes
        valid = offs < V
        x = tl.load(row_x + offs, mask=valid, other=0.0).to(tl.float32)
        is_cand = valid & (x >= bound)
        lane_max, lane_mass, lane_cand_mass = online_mass(x, valid, is_cand, lane_max,
                                                          lane_mass, lane_cand_mass)
        is_inf = valid & (x == float("inf"))
        lane_inf += is_inf.to(tl.int32) + (is_inf & is_cand).to(tl.int32) * 65536
    return reduce_online(lane_max, lane_mass, lane_cand_mass, lane_inf)


@triton.jit
def pass_a_tile(x, tile_start, lanes, V, bound, ref, need_mass, lane_top, lane_max, lane_mass,
                lane_cand_mass, lane_inf, n_cand, row_x, cand_val, cand_idx,
                HAS_P: tl.constexpr, SMALLEST: tl.constexpr, BLOCK: tl.constexpr,
                CAP_SEG: tl.constexpr, SPARSE: tl.constexpr, LEAN: tl.constexpr,
                CAND_TOP: tl.constexpr):
    """One tile of pass A (:func:`candidates_kernel`): its candidates appended, the per-lane
    top, masses and +inf counts updated. ``x``: the tile in the row's dtype, entries at
    ``tile_start + lanes``. Returns (lane_top, lane_max, lane_mass, lane_cand_mass, lane_inf,
    n_cand)."""
    offs = tile_start + lanes
    valid = offs < V
    x = x.to(tl.float32)
    if SMALLEST:
        is_cand = valid & (x <= bound)
        if not CAND_TOP:
            lane_top = tl.maximum(lane_top, tl.where(valid & (x == x), -x, -float("inf")))
    else:
        is_cand = valid & (x >= bound)
        if not CAND_TOP:
            lane_top = tl.maximum(lane_top, tl.where(valid & (x == x), x, -float("inf")))
    if HAS_P:
        if LEAN:
            if need_mass:
                lane_mass, lane_cand_mass = fixed_ref_mass(x, valid, is_cand, ref,
                                                           lane_mass, lane_cand_mass)
        else:
            lane_max, lane_mass, lane_cand_mass = online_mass(
                x, valid, is_cand, lane_max, lane_mass, lane_cand_mass)
            is_inf = valid & (x == float("inf"))
            lane_inf += is_inf.to(tl.int32) + (is_inf & is_cand).to(tl.int32) * 65536
    n_tile = tl.sum(is_cand.to(tl.int32), axis=0)
    if n_tile > 0:
        if CAND_TOP:  # (a candidate is never NaN: it compared true)
            if SMALLEST:
                lane_top = tl.maximum(lane_top, tl.where(is_cand, -x, -float("inf")))
            else:
                lane_top = tl.maximum(lane_top, tl.where(is_cand, x, -float("inf")))
        compact_tile(x, tile_start, is_cand, lanes, n_tile, n_cand, row_x, cand_val, cand_idx,
                     BLOCK, CAP_SEG, SPARSE)
    n_cand += n_tile
    return lane_top, lane_max, lane_mass, lane_cand_mass, lane_inf, n_cand


@triton.jit
def candidates_kernel(
    x_ptr, k_ptr, p_ptr, cutoff_ptr,
    V, stride_x, seg_len, k_scalar, p_scalar, row_i_ptr,
    cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr,
    HAS_K: tl.constexpr, K_ARRAY: tl.constexpr, HAS_P: tl.constexpr, P_ARRAY: tl.constexpr,
    SMALLEST: tl.constexpr, BLOCK: tl.constexpr, CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr,
    SPARSE: tl.constexpr, ONLY_RETRY: tl.constexpr, LEAN: tl.constexpr = False,
    AHEAD: tl.constexpr = 1, CAND_TOP: tl.constexpr = False, SLOTS: tl.constexpr = 0,
):
    """Pass A of one segment: candidates (key >= cutoff) in index order, and segment statistics.
    AHEAD: tiles in flight per program (:func:`tile_ring_next`; no sum depends on it).
    SLOTS (2 or 4; 0: the ring of AHEAD tiles): SLOTS tiles a turn, each in its own load slot
    (AHEAD unused; the segment a multiple of SLOTS tiles); the same tiles in the same order, so
    the same bits.

    CAND_TOP (without HAS_P): the segment's largest key is taken over its candidates only, in
    the tiles that hold some, instead of over every entry of every tile: the same key where the
    segment has a candidate (its largest non-NaN entry is one), else the upper bound
    ``max(cutoff - 1, KEY_FLOOR)`` (every non-NaN key lies below the cutoff; an all-NaN
    segment's key is the floor, as before). Only the full-row fallback reads it, as the top of
    its interval, which an upper bound keeps exact.

    LEAN (with HAS_P; the default, ``lean=0x0`` turns it off): the masses are summed relative
    to a fixed reference, the first tile's largest finite entry (0 when it has none), with no
    per-entry rescaling and no +inf counting in the loop; a segment whose max lies more than 60
    above the reference or below it, or that holds +inf, is measured again by the online form.
    A row with top-k on sums no masses at all (its top-p runs over the top-k survivors, weighed
    from the candidates); only a segment holding +inf is measured again, for its +inf counts.

    x_ptr : (B, V) logits, unit stride along V; k_ptr / p_ptr : (B,) when K_ARRAY / P_ARRAY
    row_i_ptr : (B, 16) int32 (read when ONLY_RETRY: only rows in mode 5, the retry, run again,
    with the cutoff the threshold kernel picked; the other rows' results are left as they are)
    cand_val_ptr / cand_idx_ptr : (B, NSEG_P2, CAP_SEG) float32 / int32 (a row owns NSEG_P2 x
    CAP_SEG slots, which the fallback reuses as its scratch)
    seg_f_ptr : (B, S, 4) float32; seg_i_ptr : (B, S, 8) int32
    """
    row = tl.program_id(0)
    seg = tl.program_id(1)
    nseg = tl.num_programs(1)
    zero_i = row * 0
    slot = (zero_i.to(tl.int64) + row) * nseg + seg
    row_x = x_ptr + (zero_i.to(tl.int64) + row) * stride_x
    cand_slot = (zero_i.to(tl.int64) + row) * (NSEG_P2 * CAP_SEG) + seg * CAP_SEG
    cand_val = cand_val_ptr + cand_slot
    cand_idx = cand_idx_ptr + cand_slot
    k, k_on, p, p_on = row_params(k_ptr, p_ptr, row, V, k_scalar, p_scalar, zero_i,
                                  HAS_K, K_ARRAY, HAS_P, P_ARRAY)
    seg_max = zero_i.to(tl.float32) - float("inf")
    seg_mass = zero_i.to(tl.float32)
    cand_mass = zero_i.to(tl.float32)
    n_cand = zero_i
    n_inf = zero_i
    n_inf_cand = zero_i
    key_max = zero_i + KEY_NAN
    cutoff_key = zero_i + KEY_NAN
    go = k_on | p_on
    # LEAN: a row with top-k on sums no masses here: its top-p runs over the top-k survivors,
    # whose weights the threshold kernel takes from the candidates and the row's max
    need_mass = p_on & (not k_on)
    write = zero_i == 0
    if ONLY_RETRY:
        go = go & (tl.load(row_i_ptr + (zero_i.to(tl.int64) + row) * ROW_I) == 5)
        write = go
    if go:
        # entries ranked at or above the cutoff key; a cutoff below every non-NaN key becomes
        # that floor (NaN entries are never candidates), and the test is one float compare
        cutoff_key = tl.maximum(tl.load(cutoff_ptr + row), KEY_FLOOR)
        if SMALLEST:
            bound = key_to_value(~cutoff_key)
        else:
            bound = key_to_value(cutoff_key)
        seg_start = seg * seg_len
        # per-lane accumulators, reduced once after the loop (no cross-warp work per tile)
        lane_top = tl.full([BLOCK], -float("inf"), tl.float32)  # best non-NaN value (ranked)
        lane_max = tl.full([BLOCK], -float("inf"), tl.float32)
        lane_mass = tl.zeros([BLOCK], tl.float32)
        lane_cand_mass = tl.zeros([BLOCK], tl.float32)
        lane_inf = tl.zeros([BLOCK], tl.int32)  # +inf entries, + 65536 x +inf candidates
        lanes = tl.arange(0, BLOCK)
        seg_end = seg_start + seg_len
        if SLOTS >= 2:
            tile_a = segment_tile(row_x, seg_start + lanes, V, seg_end)
            tile_b = segment_tile(row_x, seg_start + BLOCK + lanes, V, seg_end)
            tile_c = tile_a
            tile_d = tile_b
            if SLOTS == 4:
                tile_c = segment_tile(row_x, seg_start + 2 * BLOCK + lanes, V, seg_end)
                tile_d = segment_tile(row_x, seg_start + 3 * BLOCK + lanes, V, seg_end)
            first = tile_a.to(tl.float32)
        else:
            t1, t2, t3, t4 = tile_ring_start(row_x, seg_start + lanes, V, seg_end, BLOCK, AHEAD)
            first = t1.to(tl.float32)
        ref = zero_i.to(tl.float32)
        if HAS_P and LEAN:
            ref = tl.max(tl.where((seg_start + lanes < V) & (tl.abs(first) < float("inf")),
                                  first, -float("inf")), axis=0)
            ref = tl.where(ref > -float("inf"), ref, 0.0)  # no finite entry: the check redoes it
        if SLOTS >= 2:
            # SLOTS tiles a turn, each with its own load slot: a slot is refilled right after
            # its tile is taken, so the other slots' loads stay in flight while this tile is
            # processed (SLOTS loads per program in flight; no ring turned at the loop's end,
            # whose register moves waited on the load just issued). The launcher passes SLOTS
            # only when the segment is a multiple of SLOTS tiles. Same tiles, same order.
            for off in range(0, seg_len, SLOTS * BLOCK):
                x = tile_a
                tile_a = segment_tile(row_x, seg_start + off + SLOTS * BLOCK + lanes, V, seg_end)
                lane_top, lane_max, lane_mass, lane_cand_mass, lane_inf, n_cand = pass_a_tile(
                    x, seg_start + off, lanes, V, bound, ref, need_mass, lane_top, lane_max,
                    lane_mass, lane_cand_mass, lane_inf, n_cand, row_x, cand_val, cand_idx,
                    HAS_P, SMALLEST, BLOCK, CAP_SEG, SPARSE, LEAN, CAND_TOP)
                x = tile_b
                tile_b = segment_tile(row_x, seg_start + off + (SLOTS + 1) * BLOCK + lanes, V,
                                      seg_end)
                lane_top, lane_max, lane_mass, lane_cand_mass, lane_inf, n_cand = pass_a_tile(
                    x, seg_start + off + BLOCK, lanes, V, bound, ref, need_mass, lane_top,
                    lane_max, lane_mass, lane_cand_mass, lane_inf, n_cand, row_x, cand_val,
                    cand_idx, HAS_P, SMALLEST, BLOCK, CAP_SEG, SPARSE, LEAN, CAND_TOP)
                if SLOTS == 4:
                    x = tile_c
                    tile_c = segment_tile(row_x, seg_start + off + 6 * BLOCK + lanes, V, seg_end)
                    lane_top, lane_max, lane_mass, lane_cand_mass, lane_inf, n_cand = pass_a_tile(
                        x, seg_start + off + 2 * BLOCK, lanes, V, bound, ref, need_mass,
                        lane_top, lane_max, lane_mass, lane_cand_mass, lane_inf, n_cand, row_x,
                        cand_val, cand_idx, HAS_P, SMALLEST, BLOCK, CAP_SEG, SPARSE, LEAN,
                        CAND_TOP)
                    x = tile_d
                    tile_d = segment_tile(row_x, seg_start + off + 7 * BLOCK + lanes, V, seg_end)
                    lane_top, lane_max, lane_mass, lane_cand_mass, lane_inf, n_cand = pass_a_tile(
                        x, seg_start + off + 3 * BLOCK, lanes, V, bound, ref, need_mass,
                        lane_top, lane_max, lane_mass, lane_cand_mass, lane_inf, n_cand, row_x,
                        cand_val, cand_idx, HAS_P, SMALLEST, BLOCK, CAP_SEG, SPARSE, LEAN,
                        CAND_TOP)
        else:
            for off in range(0, seg_len, BLOCK):
                # prefetch the next AHEAD tiles while this one is processed
                x, t1, t2, t3, t4 = tile_ring_next(t1, t2, t3, t4, row_x, seg_start + off + lanes,
                                                   V, seg_end, BLOCK, AHEAD)
                lane_top, lane_max, lane_mass, lane_cand_mass, lane_inf, n_cand = pass_a_tile(
                    x, seg_start + off, lanes, V, bound, ref, need_mass, lane_top, lane_max,
                    lane_mass, lane_cand_mass, lane_inf, n_cand, row_x, cand_val, cand_idx,
                    HAS_P, SMALLEST, BLOCK, CAP_SEG, SPARSE, LEAN, CAND_TOP)
        top = tl.max(lane_top, axis=0)
        if SMALLEST:
            top = -top
        key_max = rank_key(top, SMALLEST)  # an all-NaN segment gives the floor: an upper bound
        if CAND_TOP:
            key_max = tl.where(n_cand > 0, key_max, tl.maximum(cutoff_key - 1, KEY_FLOOR))
        if HAS_P:
            if LEAN:  # the largest non-NaN entry: finite, -inf (no finite entry) or +inf (redo)
                seg_max = top
                # as the online form when no sum can overflow (seg_len terms of at most
                # exp(60) each) and the reference is one of the segment's entries (the max is
                # not below it: a defaulted reference may lie above every entry), scaled to
                # the segment's max; otherwise (and with +inf) measured again
                scale = tl.exp(ref - seg_max)
                seg_mass = tl.sum(lane_mass, axis=0) * scale
                cand_mass = tl.sum(lane_cand_mass, axis=0) * scale
                # (a row without masses redoes only for +inf: the +inf counts set its weights)
                redo = (top == float("inf")) | (need_mass & (
                    (seg_max - ref > 60.0) | ((seg_max < ref) & (seg_max > -float("inf")))))
                if seg_max == -float("inf"):  # no finite entry: no mass (the online form's)
                    seg_mass = zero_i.to(tl.float32)
                    cand_mass = zero_i.to(tl.float32)
                if redo:
                    seg_max, seg_mass, cand_mass, n_inf, n_inf_cand = segment_mass_online(
                        row_x, V, seg_start, seg_len, bound, lanes, BLOCK)
            else:
                seg_max, seg_mass, cand_mass, n_inf, n_inf_cand = reduce_online(
                    lane_max, lane_mass, lane_cand_mass, lane_inf)
    if write:
        tl.store(seg_f_ptr + slot * SEG_F + 0, seg_max)
        tl.store(seg_f_ptr + slot * SEG_F + 1, seg_mass)
        tl.store(seg_f_ptr + slot * SEG_F + 2, cand_mass)
        tl.store(seg_i_ptr + slot * SEG_I + 0, n_cand)
        tl.store(seg_i_ptr + slot * SEG_I + 1, n_inf)
        tl.store(seg_i_ptr + slot * SEG_I + 2, n_inf_cand)
        tl.store(seg_i_ptr + slot * SEG_I + 3, key_max)
        tl.store(seg_i_ptr + slot * SEG_I + 4, cutoff_key)


@triton.jit
def merge_segments(seg_f_ptr, seg_i_ptr, row64, nseg, k, k_on, p, p_on, CAP_SEG: tl.constexpr,
                   NSEG_P2: tl.constexpr):
    """A row's statistics from its segments', merged in segment order (the same for any batch):
    max, mass, candidates' mass, candidates per segment and in all, the largest key, the cutoff
    key, whether +inf entries carry the mass, p_on on a defined mass, active, and whether the
    candidates suffice (``hit``: enough of them, no segment's slots overflowed)."""
    lanes = tl.arange(0, NSEG_P2)
    seg_ok = lanes < nseg
    seg_base = (row64 * nseg + lanes)
    seg_max = tl.load(seg_f_ptr + seg_base * SEG_F + 0, mask=seg_ok, other=-float("inf"))
    seg_mass = tl.load(seg_f_ptr + seg_base * SEG_F + 1, mask=seg_ok, other=0.0)
    seg_cmass = tl.load(seg_f_ptr + seg_base * SEG_F + 2, mask=seg_ok, other=0.0)
    seg_cand = tl.load(seg_i_ptr + seg_base * SEG_I + 0, mask=seg_ok, other=0)
    n_inf = tl.sum(tl.load(seg_i_ptr + seg_base * SEG_I + 1, mask=seg_ok, other=0), axis=0)
    n_inf_cand = tl.sum(tl.load(seg_i_ptr + seg_base * SEG_I + 2, mask=seg_ok, other=0), axis=0)
    key_max = tl.max(tl.load(seg_i_ptr + seg_base * SEG_I + 3, mask=seg_ok, other=KEY_NAN), axis=0)
    cutoff_key = tl.load(seg_i_ptr + row64 * nseg * SEG_I + 4)
    row_max = tl.max(seg_max, axis=0)
    seg_scale = tl.where(seg_max > -float("inf"), tl.exp(seg_max - row_max), 0.0)
    row_mass = tl.sum(seg_mass * seg_scale, axis=0)
    cand_mass = tl.sum(seg_cmass * seg_scale, axis=0)
    n_cand = tl.sum(seg_cand, axis=0)
    overflow = tl.max(seg_cand, axis=0) > CAP_SEG
    inf_mode = n_inf > 0
    row_mass = tl.where(inf_mode, n_inf.to(tl.float32), row_mass)
    cand_mass = tl.where(inf_mode, n_inf_cand.to(tl.float32), cand_mass)
    p_on = p_on & (k_on | (row_mass > 0.0))  # top-p alone on an undefined mass keeps all
    active = k_on | p_on
    enough = tl.where(k_on, n_cand >= k, cand_mass >= p * row_mass)
    hit = active & enough & (not overflow)
    return row_max, row_mass, cand_mass, seg_cand, n_cand, key_max, cutoff_key, inf_mode, p_on, \
        active, hit


@triton.jit
def row_boundary(ckey, cw, member, k, k_on, p, p_on, row_mass, V, zero_i):
    """Boundary key T, tie budget and pivot rounds of one row from its candidates in registers
    (top-k, then top-p over the renormalised survivors)."""
    zero_f = zero_i.to(tl.float32)
    rounds = zero_i
    T_k = zero_i + KEY_NAN  # top-k off: every key is above KEY_NAN - 1 ...
    budget_k = zero_i + V  # ... and every copy is within budget
    if k_on:
        if RADIX:
            T_k, r = count_search_radix(ckey, member, zero_i.to(tl.int64) + KEY_NAN - 1,
                                        zero_i.to(tl.int64) + KEY_MAX, zero_i, k)
        else:
            T_k, r = search_in_registers(ckey, cw, member, zero_i.to(tl.int64) + KEY_NAN - 1,
                                         zero_i.to(tl.int64) + KEY_MAX, zero_i, zero_f,
                                         k, zero_f, False, SPLIT=SEARCH_SPLIT_ROWS)
        rounds += r
        budget_k = k - tl.sum((member & (ckey > T_k)).to(tl.int32), axis=0)
    T = T_k
    budget = budget_k
    if p_on:
        w_tk = tl.max(tl.where(member & (ckey == T_k), cw, 0.0), axis=0)
        surv_mass = tl.sum(tl.where(member & (ckey > T_k), cw, 0.0), axis=0) + budget_k * w_tk
        surv_mass = tl.where(k_on, surv_mass, row_mass)
        if surv_mass > 0.0:
            target = p * surv_mass
            lo_p = tl.where(k_on, T_k.to(tl.int64) - 1, KEY_NAN - 1)
            T_p, r = search_in_registers(ckey, cw, member, lo_p, zero_i.to(tl.int64) + KEY_MAX,
                                         zero_i, zero_f, zero_i, target, True,
                                         SPLIT=SEARCH_SPLIT_ROWS)
            rounds += r
            at_t = member & (ckey == T_p)
            copies = tl.sum(at_t.to(tl.int32), axis=0)
            copies = tl.where(T_p == T_k, tl.minimum(copies, budget_k), copies)
            mass_gt = tl.sum(tl.where(member & (ckey > T_p), cw, 0.0), axis=0)
            w_t = tl.max(tl.where(at_t, cw, 0.0), axis=0)
            T = T_p
            budget = top_p_budget(target, mass_gt, w_t, copies)
    return T, budget, rounds


@triton.jit
def dense_slots(seg_i_ptr, row64, nseg, DENSE: tl.constexpr):
    """Segment and position of each of DENSE lanes when a row's candidates are packed densely
    in segment (= index) order: lane j holds the candidate of the segment whose span of the
    running count holds j (a loop over the segments' counts, no (DENSE, segments) tensor)."""
    j = tl.arange(0, DENSE)
    seg_of = j * 0
    start = j * 0
    end = tl.load(seg_i_ptr + row64 * nseg * SEG_I) * 0
    for s in range(0, nseg - 1):
        end += tl.load(seg_i_ptr + (row64 * nseg + s) * SEG_I)
        past = j >= end  # segment s ends at or before lane j
        seg_of += past.to(tl.int32)
        start = tl.where(past, end, start)
    return seg_of, j - start


@triton.jit
def store_seg_before(seg_before_ptr, row64, nseg, seg_of, tie, kept):
    """Per segment of a densely packed row: the copies of T and the kept entries in earlier
    segments (``seg_before``, (B, S, 2) int32), one reduction per segment (both counts packed in
    one int32: each is below 65536)."""
    both = tie.to(tl.int32) + kept.to(tl.int32) * 65536
    before = tl.sum(both * 0, axis=0)
    for s in range(0, nseg):
        tl.store(seg_before_ptr + (row64 * nseg + s) * 2 + 0, before & 65535)
        tl.store(seg_before_ptr + (row64 * nseg + s) * 2 + 1, before >> 16)
        before += tl.sum(tl.where(seg_of == s, both, 0), axis=0)


@triton.jit
def dense_boundary(cand_val_ptr, seg_i_ptr, seg_before_ptr, row64, nseg, n_cand, row_max,
                   inf_mode, k, k_on, p, p_on, row_mass, V, zero_i, SMALLEST: tl.constexpr,
                   CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr, DENSE: tl.constexpr):
    """:func:`row_boundary` on a row's n_cand <= DENSE candidates packed densely (segment order);
    writes the ties and kept entries before each segment."""
    seg_of, pos = dense_slots(seg_i_ptr, row64, nseg, DENSE)
    member = tl.arange(0, DENSE) < n_cand
    cx = tl.load(cand_val_ptr + row64 * (NSEG_P2 * CAP_SEG) + seg_of * CAP_SEG + pos,
                 mask=member, other=0.0)
    ckey = rank_key(cx, SMALLEST)
    T, budget, rounds = row_boundary(ckey, weights_of(cx, row_max, inf_mode), member, k, k_on,
                                     p, p_on, row_mass, V, zero_i)
    tie = member & (ckey == T)
    kept, n_ties = keep_decision(ckey, member, T, budget, zero_i)
    store_seg_before(seg_before_ptr, row64, nseg, seg_of, tie, kept)
    return T, budget, rounds


@triton.jit
def slot_boundary(cand_val_ptr, seg_i_ptr, seg_before_ptr, row64, nseg, row_max, inf_mode, k,
                  k_on, p, p_on, row_mass, V, zero_i, SMALLEST: tl.constexpr,
                  CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr):
    """:func:`row_boundary` on every candidate slot of a row (NSEG_P2 x CAP_SEG); writes the ties
    and kept entries before each segment."""
    j = tl.arange(0, NSEG_P2 * CAP_SEG)
    seg_of = j // CAP_SEG
    pos = j % CAP_SEG
    cnt = tl.load(seg_i_ptr + (row64 * nseg + seg_of) * SEG_I, mask=seg_of < nseg, other=0)
    member = (seg_of < nseg) & (pos < cnt)
    cx = tl.load(cand_val_ptr + row64 * (NSEG_P2 * CAP_SEG) + j, mask=member, other=0.0)
    ckey = rank_key(cx, SMALLEST)
    T, budget, rounds = row_boundary(ckey, weights_of(cx, row_max, inf_mode), member, k, k_on,
                                     p, p_on, row_mass, V, zero_i)
    tie = member & (ckey == T)
    kept, n_ties = keep_decision(ckey, member, T, budget, zero_i)
    seg_ties = tl.sum(tl.reshape(tie.to(tl.int32), [NSEG_P2, CAP_SEG]), axis=1)
    seg_kept = tl.sum(tl.reshape(kept.to(tl.int32), [NSEG_P2, CAP_SEG]), axis=1)
    lanes = tl.arange(0, NSEG_P2)
    before = (row64 * nseg + lanes) * 2
    seg_ok = lanes < nseg
    tl.store(seg_before_ptr + before + 0, tl.cumsum(seg_ties, axis=0) - seg_ties, mask=seg_ok)
    tl.store(seg_before_ptr + before + 1, tl.cumsum(seg_kept, axis=0) - seg_kept, mask=seg_ok)
    return T, budget, rounds


@triton.jit
def threshold_kernel(
    x_ptr, k_ptr, p_ptr, cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr,
    V, stride_x, stride_out, k_scalar, p_scalar, fill, nseg,
    out_ptr, sel_val_ptr, sel_idx_ptr, row_i_ptr, row_f_ptr, seg_before_ptr, cutoff_ptr,
    HAS_K: tl.constexpr, K_ARRAY: tl.constexpr, HAS_P: tl.constexpr, P_ARRAY: tl.constexpr,
    SMALLEST: tl.constexpr, SELECT: tl.constexpr, WIDE: tl.constexpr, BLOCK: tl.constexpr,
    CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr, DENSE: tl.constexpr,
    SAMPLE: tl.constexpr, RETRY: tl.constexpr, ONLY_RETRY: tl.constexpr, STAGE: tl.constexpr,
    WIDE_FIXED: tl.constexpr = False,
):
    """Boundary key and tie budget of one row (steps 3-5), the retry's choice, or the full-row
    fallback (step 7).

    STAGE 0: all of it. STAGE 1 (the first of two launches): only rows whose candidates fit the
    DENSE lanes are searched; every other active row is left pending (mode 7). STAGE 2: only
    pending rows run, the rest of the work (every slot in registers, the retry's cutoff, the
    fallback). The split keeps the common search's registers low:
    one kernel holding every path takes 255 registers per thread and spills (sm90), which leaves
    2 programs of 4 warps per SM; the dense path alone takes 72.

    RETRY: a top-k row whose candidates do not suffice (fewer than k, or a segment's slots
    overflowed) is not searched over the full row here: a second cutoff, placed from the sample
    with pass A's exact counts (:func:`retry_cutoff_key`), becomes its cutoff (cutoff_ptr) and
    its mode 5; pass A and this kernel then run again for mode-5 rows only (ONLY_RETRY), and a
    row whose second cutoff falls short too takes the fallback there. ONLY_RETRY: rows not in
    mode 5 are left as they are.

    out_ptr : (B, V) mask output (fallback rows only); sel_val_ptr / sel_idx_ptr : (B, k)
    selection output (fallback rows only, when SELECT); row_i_ptr : (B, 16) int32 mode
    (0 keep all, 1 candidates suffice, 2 fallback done, 3 top-p left to the wide stage when
    WIDE, 5 retry pending when RETRY, 7 left to STAGE 2 by STAGE 1), T, budget, candidates,
    rounds, then the wide stage's band
    (5-6) and the interval pass A proved (9-12), 14: 1 when this is the retry pass, 15: a
    retried row's first count; row_f_ptr : (B, 8) (wide rows: max, target, +inf mode, mass
    above hi, row mass);
    seg_before_ptr : (B, S, 2) int32 ties and kept entries in earlier segments;
    cutoff_ptr : (B,) int32, written for retried rows.
    WIDE_FIXED (with WIDE): the wide stage sums masses in fixed point (``wide``'s FIXED); a
    wide row's interval then starts at the row's top when pass A's candidates fall short (their
    float32 mass is not a fixed-point sum), with the mass above it 0 (:func:`mass_hi_ptr`).
    """
    row = tl.program_id(0)
    go = row >= 0
    if ONLY_RETRY:
        go = tl.load(row_i_ptr + ((row * 0).to(tl.int64) + row) * ROW_I) == 5
    if STAGE == 2:
        go = tl.load(row_i_ptr + ((row * 0).to(tl.int64) + row) * ROW_I) == 7
    if go:
        threshold_row(x_ptr, k_ptr, p_ptr, cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr,
                      V, stride_x, stride_out, k_scalar, p_scalar, fill, nseg,
                      out_ptr, sel_val_ptr, sel_idx_ptr, row_i_ptr, row_f_ptr, seg_before_ptr,
                      cutoff_ptr, row, HAS_K, K_ARRAY, HAS_P, P_ARRAY, SMALLEST,
                      SELECT, WIDE, BLOCK, CAP_SEG, NSEG_P2, DENSE, SAMPLE, RETRY,
                      ONLY_RETRY, STAGE, WIDE_FIXED)


@triton.jit
def proved_interval(above, cutoff_lo, key_max, n_cand, cand_mass, V):
    """The interval (lo, hi] pass A proves holds a missed row's boundary key, with the counts at
    both ends and the mass above hi: above the cutoff when the candidates suffice (``above``),
    else below it."""
    lo = tl.where(above, cutoff_lo, KEY_NAN - 1)
    hi = tl.where(above, key_max.to(tl.int64), cutoff_lo)
    cnt_lo = tl.where(above, n_cand, V)
    cnt_hi = tl.where(above, 0, n_cand)
    mass_hi = tl.where(above, 0.0, cand_mass)
    return lo, hi, cnt_lo, cnt_hi, mass_hi


@triton.jit
def threshold_row(
    x_ptr, k_ptr, p_ptr, cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr,
    V, stride_x, stride_out, k_scalar, p_scalar, fill, nseg,
    out_ptr, sel_val_ptr, sel_idx_ptr, row_i_ptr, row_f_ptr, seg_before_ptr, cutoff_ptr,
    row,
    HAS_K: tl.constexpr, K_ARRAY: tl.constexpr, HAS_P: tl.constexpr, P_ARRAY: tl.constexpr,
    SMALLEST: tl.constexpr, SELECT: tl.constexpr, WIDE: tl.constexpr, BLOCK: tl.constexpr,
    CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr, DENSE: tl.constexpr,
    SAMPLE: tl.constexpr, RETRY: tl.constexpr, RETRIED: tl.constexpr, STAGE: tl.constexpr,
    WIDE_FIXED: tl.constexpr = False,
):
    """:func:`threshold_kernel`'s work for one row (RETRIED: the row's second pass A; STAGE:
    as there)."""
    CAP: tl.constexpr = NSEG_P2 * CAP_SEG
    zero_i = row * 0
    zero_f = zero_i.to(tl.float32)
    row64 = zero_i.to(tl.int64) + row
    row_x = x_ptr + row64 * stride_x
    k, k_on, p, p_on = row_params(k_ptr, p_ptr, row, V, k_scalar, p_scalar, zero_i,
                                  HAS_K, K_ARRAY, HAS_P, P_ARRAY)
    # ---- merge the segments (fixed order: the same for any batch)
    row_max, row_mass, cand_mass, seg_cand, n_cand, key_max, cutoff_key, inf_mode, p_on, \
        active, hit = merge_segments(seg_f_ptr, seg_i_ptr, row64, nseg, k, k_on, p, p_on,
                                     CAP_SEG, NSEG_P2)
    mode = tl.where(active, tl.where(hit, 1, 2), 0)
    T_k = zero_i + KEY_NAN  # top-k off: every key is above KEY_NAN - 1 ...
    budget_k = zero_i + V  # ... and every NaN copy is within budget
    T = T_k
    budget = budget_k
    rounds = zero_i
    if hit:
        # ---- candidates of all segments, in segment (= index) order, in registers: densely
        # packed when they fit DENSE slots (the usual case), else every slot of the scratch;
        # both write where each segment's ties and kept entries start
        if n_cand <= DENSE:
            if STAGE != 2:
                T, budget, rounds = dense_boundary(
                    cand_val_ptr, seg_i_ptr, seg_before_ptr, row64, nseg, n_cand, row_max,
                    inf_mode, k, k_on, p, p_on, row_mass, V, zero_i, SMALLEST, CAP_SEG, NSEG_P2,
                    DENSE)
        else:
            if STAGE == 1:
                mode = zero_i + 7
            else:
                T, budget, rounds = slot_boundary(
                    cand_val_ptr, seg_i_ptr, seg_before_ptr, row64, nseg, row_max, inf_mode, k,
                    k_on, p, p_on, row_mass, V, zero_i, SMALLEST, CAP_SEG, NSEG_P2)
    elif active:
        if STAGE == 1:  # the retry's cutoff, the fallback, the band: the second launch
            mode = zero_i + 7
        else:
            retry = zero_i != 0
            if RETRY:
                if k_on:
                    retry, retry_key = retry_cutoff_key(row_x, V, k, n_cand,
                                                        tl.max(seg_cand, axis=0), cutoff_key,
                                                        CAP_SEG, SAMPLE, SMALLEST)
                    if retry:
                        tl.store(cutoff_ptr + row64, retry_key)
                        tl.store(row_i_ptr + row64 * ROW_I + 15, n_cand)  # the first pass's count
                        mode = zero_i + 5
            if not retry:
                # ---- exact fallback over the full row (scratch: this row's own candidate slots)
                scratch_val = cand_val_ptr + row64 * CAP
                scratch_idx = cand_idx_ptr + row64 * CAP
                cutoff_lo = cutoff_key.to(tl.int64) - 1
                if k_on:
                    lo, hi, cnt_lo, cnt_hi, mass_hi = proved_interval(
                        n_cand >= k, cutoff_lo, key_max, n_cand, cand_mass, V)
                    if HAS_P:
                        if n_cand < k:  # below the cutoff: pass A's lean form sums no mass
                            hi = key_max.to(tl.int64)  # above it for a top-k row, so the
                            cnt_hi = zero_i  # search starts from the row's top
                            mass_hi = zero_f
                    T_k, cnt_gt, mass_gt, cnt_ge, r = full_row_search(
                        row_x, V, lo, hi, cnt_lo, cnt_hi, mass_hi, k, zero_f, row_max, inf_mode,
                        scratch_val, scratch_idx, BLOCK, CAP, False, HAS_P, SMALLEST)
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
                                zero_i, zero_f, zero_i, target, row_max, inf_mode, scratch_val,
                                scratch_idx, BLOCK, CAP, True, True, SMALLEST)
                            rounds += r
                            copies = cnt_ge_p - cnt_gt_p
                            copies = tl.where(T_p == T_k, tl.minimum(copies, budget_k), copies)
                            w_t = weights_of(key_to_value(T_p), row_max, inf_mode)
                            T = T_p
                            budget = top_p_budget(target, mass_gt_p, w_t, copies)
                else:
                    target = p * row_mass
                    lo, hi, cnt_lo, cnt_hi, mass_hi = proved_interval(
                        cand_mass >= target, cutoff_lo, key_max, n_cand, cand_mass, V)
                    if WIDE:  # the segmented stage resolves it (wide.py): a band first, then rounds
                        mode = zero_i + 3
                        info = row_i_ptr + row64 * ROW_I
                        if WIDE_FIXED:  # from the row's top, mass 0 above it (exact)
                            hi = key_max.to(tl.int64)
                            cnt_hi = zero_i
                            tl.store(mass_hi_ptr(row_f_ptr, row64, True), zero_i.to(tl.int64))
                        # the band (5-6) is placed by wide_band_kernel, a launch of its own
                        # (this kernel's registers would leave it one program per SM)
                        tl.store(info + 9, (lo + 1).to(tl.int32))
                        tl.store(info + 10, hi.to(tl.int32))
                        tl.store(info + 11, cnt_lo)
                        tl.store(info + 12, cnt_hi)
                        tl.store(info + 13, 0)
                        tl.store(row_f_ptr + row64 * ROW_F + 0, row_max)
                        tl.store(row_f_ptr + row64 * ROW_F + 1, target)
                        tl.store(row_f_ptr + row64 * ROW_F + 2, inf_mode.to(tl.float32))
                        tl.store(mass_hi_ptr(row_f_ptr, row64, False), mass_hi)
                        tl.store(row_f_ptr + row64 * ROW_F + 4, row_mass)
                    else:
                        T_p, cnt_gt_p, mass_gt_p, cnt_ge_p, r = full_row_search(
                            row_x, V, lo, hi, cnt_lo, cnt_hi, mass_hi, zero_i, target, row_max,
                            inf_mode, scratch_val, scratch_idx, BLOCK, CAP, True, True, SMALLEST)
                        rounds += r
                        w_t = weights_of(key_to_value(T_p), row_max, inf_mode)
                        T = T_p
                        budget = top_p_budget(target, mass_gt_p, w_t, cnt_ge_p - cnt_gt_p)
                if mode == 2:
                    if SELECT:
                        write_row_select(row_x, sel_val_ptr + row64 * k_scalar,
                                         sel_idx_ptr + row64 * k_scalar, V, T, budget, BLOCK,
                                         SMALLEST)
                    else:
                        write_row_decide(row_x, out_ptr + row64 * stride_out, V, T, budget, fill,
                                         BLOCK, SMALLEST)
    info = row_i_ptr + row64 * ROW_I
    tl.store(info + 0, mode)
    tl.store(info + 1, T)
    tl.store(info + 2, budget)
    tl.store(info + 3, n_cand)
    tl.store(info + 4, rounds)
    if RETRIED:
        tl.store(info + 14, zero_i + 1)
    else:
        tl.store(info + 14, zero_i)


@triton.jit
def segment_kept(cand_val_ptr, cand_idx_ptr, seg_i_ptr, row_i_ptr, seg_before_ptr, row64, seg,
                 nseg, CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr, SMALLEST: tl.constexpr):
    """The kept candidates of one segment: values, indices, kept flags, rank among kept."""
    slot = row64 * nseg + seg
    cand_slot = row64 * (NSEG_P2 * CAP_SEG) + seg * CAP_SEG
    n = tl.load(seg_i_ptr + slot * SEG_I + 0)
    T = tl.load(row_i_ptr + row64 * ROW_I + 1)
    budget = tl.load(row_i_ptr + row64 * ROW_I + 2)
    ties_before = tl.load(seg_before_ptr + slot * 2 + 0)
    kept_before = tl.load(seg_before_ptr + slot * 2 + 1)
    offs = tl.arange(0, CAP_SEG)
    member = offs < n
    cx = tl.load(cand_val_ptr + cand_slot + offs, mask=member, other=0.0)
    cidx = tl.load(cand_idx_ptr + cand_slot + offs, mask=member, other=0)
    ckey = rank_key(cx, SMALLEST)
    kept, n_ties = keep_decision(ckey, member, T, budget, ties_before)
    kept_rank = kept_before + tl.cumsum(kept.to(tl.int32), axis=0) - 1
    return cx, cidx, kept, kept_rank


@triton.jit
def write_mask_kernel(
    x_ptr, cand_val_ptr, cand_idx_ptr, seg_i_ptr, row_i_ptr, seg_before_ptr,
    V, stride_x, stride_out, seg_len, fill,
    out_ptr,
    INPLACE: tl.constexpr, BLOCK: tl.constexpr, CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr,
    CUT: tl.constexpr = False,
):
    """Write one segment of the mask: fill, then the kept candidates (rows in mode 1); a copy
    (mode 0, out of place); read, decide and write every entry (mode 4, the wide stage's rows);
    nothing for rows the fallback wrote (mode 2). CUT (mode 4): a segment whose copies of T
    are all kept, or none (the wide stage's counts per segment, seg_before[..., 1]), keeps the
    entries at or above one key with no rank and no count per tile (the same entries); only
    the segment where the tie budget ends ranks its copies."""
    row = tl.program_id(0)
    seg = tl.program_id(1)
    nseg = tl.num_programs(1)
    row64 = (row * 0).to(tl.int64) + row
    mode = tl.load(row_i_ptr + row64 * ROW_I + 0)
    row_x = x_ptr + row64 * stride_x
    row_o = out_ptr + row64 * stride_out
    out_ty = out_ptr.dtype.element_ty
    seg_start = seg * seg_len
    if mode == 1:
        cx, cidx, kept, kept_rank = segment_kept(cand_val_ptr, cand_idx_ptr, seg_i_ptr, row_i_ptr,
                                                 seg_before_ptr, row64, seg, nseg, CAP_SEG,
                                                 NSEG_P2, False)
        fill_block = (tl.zeros([BLOCK], tl.float32) + fill).to(out_ty)
        tl.debug_barrier()  # in place: the segment's candidates are read before it is overwritten
        for off in range(0, seg_len, BLOCK):
            offs = seg_start + off + tl.arange(0, BLOCK)
            tl.store(row_o + offs, fill_block, mask=offs < V)
        tl.debug_barrier()  # the fill lands before the kept values
        tl.store(row_o + cidx, cx.to(out_ty), mask=kept)
    elif mode == 4:
        T = tl.load(row_i_ptr + row64 * ROW_I + 1)
        budget = tl.load(row_i_ptr + row64 * ROW_I + 2)
        ties_before = tl.load(seg_before_ptr + (row64 * nseg + seg) * 2)
        ranked = True
        if CUT:
            # the segment's copies of T are all kept, or none: no ranks, no count per tile
            seg_ties = tl.load(seg_before_ptr + (row64 * nseg + seg) * 2 + 1)
            ranked = (ties_before < budget) & (ties_before + seg_ties > budget)
            if not ranked:
                write_span_from(row_x, row_o, seg_start, seg_start + seg_len, V,
                                tl.where(ties_before >= budget, T + 1, T), fill, BLOCK, False)
        if ranked:
            write_span_decide(row_x, row_o, seg_start, seg_start + seg_len, V, T, budget,
                              ties_before, fill, BLOCK, False)
    elif mode == 0:
        if not INPLACE:
            for off in range(0, seg_len, BLOCK):
                offs = seg_start + off + tl.arange(0, BLOCK)
                valid = offs < V
                tl.store(row_o + offs, tl.load(row_x + offs, mask=valid), mask=valid)


@triton.jit
def write_select_kernel(
    x_ptr, cand_val_ptr, cand_idx_ptr, seg_i_ptr, row_i_ptr, seg_before_ptr,
    V, stride_x, seg_len, k,
    sel_val_ptr, sel_idx_ptr, sel_key_ptr,
    BLOCK: tl.constexpr, CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr, SMALLEST: tl.constexpr,
    WITH_KEY: tl.constexpr,
):
    """Write one segment's share of the selection (B, k): kept candidates at their ranks in index
    order (mode 1), or every entry (mode 0: k == V). WITH_KEY: also each one's int32 rank key
    (larger = earlier in the order, NaN last) into sel_key (B, k), for the caller's sort."""
    row = tl.program_id(0)
    seg = tl.program_id(1)
    nseg = tl.num_programs(1)
    row64 = (row * 0).to(tl.int64) + row
    mode = tl.load(row_i_ptr + row64 * ROW_I + 0)
    sel_val = sel_val_ptr + row64 * k
    sel_idx = sel_idx_ptr + row64 * k
    seg_start = seg * seg_len
    if mode == 1:
        cx, cidx, kept, kept_rank = segment_kept(cand_val_ptr, cand_idx_ptr, seg_i_ptr, row_i_ptr,
                                                 seg_before_ptr, row64, seg, nseg, CAP_SEG,
                                                 NSEG_P2, SMALLEST)
        tl.store(sel_val + kept_rank, cx.to(sel_val_ptr.dtype.element_ty), mask=kept)
        tl.store(sel_idx + kept_rank, cidx.to(tl.int64), mask=kept)
        if WITH_KEY:
            tl.store(sel_key_ptr + row64 * k + kept_rank, rank_key(cx, SMALLEST), mask=kept)
    elif mode == 0:
        row_x = x_ptr + row64 * stride_x
        for off in range(0, seg_len, BLOCK):
            offs = seg_start + off + tl.arange(0, BLOCK)
            valid = offs < V
            xv = tl.load(row_x + offs, mask=valid)
            tl.store(sel_val + offs, xv, mask=valid)
            tl.store(sel_idx + offs, offs.to(tl.int64), mask=valid)
            if WITH_KEY:
                tl.store(sel_key_ptr + row64 * k + offs, rank_key(xv.to(tl.float32), SMALLEST),
                         mask=valid)
    elif WITH_KEY:  # mode 2: the threshold kernel wrote the selection; key this segment's share
        share = (k + nseg - 1) // nseg
        stop = tl.minimum(seg * share + share, k)
        for off in range(seg * share, stop, BLOCK):
            j = off + tl.arange(0, BLOCK)
            valid = j < stop
            xv = tl.load(sel_val + j, mask=valid, other=0.0).to(tl.float32)
            tl.store(sel_key_ptr + row64 * k + j, rank_key(xv, SMALLEST), mask=valid)
