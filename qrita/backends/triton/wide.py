"""``@triton.jit`` kernels of the wide top-p stage (docs/algorithm.md §7, segmented).

Rows whose top-p set is too large for the candidate scratch (mode 3 after ``threshold_kernel``)
are resolved here with every segment of the row working in parallel. First a band, placed
from a sample by the band kernel here (``band_interval``) or from a count histogram of the row
(:mod:`.hist_band`; the launch table chooses per V and dtype): its entries are compacted, with exact
counts and masses above it, per segment (B x S), and checked and searched per row (B); on the
usual hit that is all. A missed or overflowing band leaves a narrowed interval to the rounds:
16-way pivot counts and masses per segment (B x S), merged per row in a fixed order (B); then the
entries left are compacted (B x S) and searched in registers (B). Rows in other modes return at
once. The launches after the band may take only the rows it missed, from a list the band's
search appends them to (LISTED: grid G x S or G, each program looping over listed rows), so a
large batch with a few misses does not launch B x S programs that only exit. Imports triton
only.
"""

import triton
import triton.language as tl

from qrita.backends.triton.fallback import (
    full_row_search,
    top_p_budget,
    top_p_budget_fixed,
    write_row_decide,
)
from qrita.backends.triton.one_launch import arrive_last
from qrita.backends.triton.pipeline import mass_hi_ptr
from qrita.backends.triton.primitives import (
    KEY_FLOOR,
    KEY_MAX,
    KEY_NAN,
    SEARCH_SPLIT,
    band_interval,
    compact_tile,
    fixed_target,
    fixed_weight,
    int32_bounds,
    key_to_value,
    lower_bound_value,
    order_key,
    rank_key,
    search_in_registers,
    segment_tile,
    tile_ring_next,
    tile_ring_start,
    upper_bound_value,
    weights_of,
)

ROW_I: tl.constexpr = tl.constexpr(16)  # mode, T, budget, candidates, rounds, lo + 1, hi, cnt_lo, cnt_hi
ROW_F: tl.constexpr = tl.constexpr(8)  # row max, target mass, +inf mode, mass above hi, row mass
SEG_I: tl.constexpr = tl.constexpr(8)
PART: tl.constexpr = tl.constexpr(32)  # per segment: 16 counts, key min, key max
WAYS: tl.constexpr = tl.constexpr(16)
BAND_ABOVE: tl.constexpr = tl.constexpr(20)  # part_i slot of a segment's count above the band
# the keyed band of 16-bit rows (KEY_SHIFT > 0): one count per value, KEY_BINS values at most;
# part_i holds KEY_PART words per segment (KEY_BINS counts, then the count above the band), for
# the rows that compact their band too (one launch: one layout)
KEY_BINS: tl.constexpr = tl.constexpr(64)
KEY_PART: tl.constexpr = tl.constexpr(80)


@triton.jit
def _above_slot(slot, KEY_SHIFT: tl.constexpr):
    """part_i's word of a segment's count above the band (slot = row * nseg + segment)."""
    if KEY_SHIFT > 0:
        return slot * KEY_PART + KEY_BINS
    else:
        return slot * PART + BAND_ABOVE


@triton.jit
def _masses_ptr(part_f_ptr, FIXED: tl.constexpr):
    """The segments' mass words, slot * WAYS + j: part_f's float32, or (FIXED) int64 fixed-point
    masses in the same buffer, twice as wide then (``launch._workspace``)."""
    if FIXED:
        return part_f_ptr.to(tl.pointer_type(tl.int64))
    else:
        return part_f_ptr


@triton.jit
def wide_pivots(lo, hi):
    """Lane j of 16 holds lo + (hi - lo) * j // 16 (int64); lane 0 is lo itself."""
    lanes = tl.arange(0, WAYS).to(tl.int64)
    return lo + ((hi - lo) * lanes) // WAYS


@triton.jit
def _interval(row_i_ptr, row64):
    info = row_i_ptr + row64 * ROW_I
    lo = tl.load(info + 5).to(tl.int64) - 1
    hi = tl.load(info + 6).to(tl.int64)
    return lo, hi


@triton.jit
def _search_state(row_i_ptr, row_f_ptr, row64, FIXED: tl.constexpr = False):
    """A wide row's interval (lo, hi], counts above lo / hi, target mass and mass above hi
    (FIXED: both int64 fixed-point, :func:`~.primitives.fixed_target`)."""
    info = row_i_ptr + row64 * ROW_I
    lo, hi = _interval(row_i_ptr, row64)
    cnt_lo = tl.load(info + 7)
    cnt_hi = tl.load(info + 8)
    target = tl.load(row_f_ptr + row64 * ROW_F + 1)
    if FIXED:
        target = fixed_target(target)
    mass_hi = tl.load(mass_hi_ptr(row_f_ptr, row64, FIXED))
    return lo, hi, cnt_lo, cnt_hi, target, mass_hi


@triton.jit
def _narrowing(row_i_ptr, row64, mode, lo, hi, fit):
    """Whether a round narrows this row: a wide row (mode 3) whose interval (lo, hi] spans more
    than one key and holds more than ``fit`` entries (counts above lo and hi, row_i[7:9]).
    Read before the round and again, unchanged, by its narrowing: both agree."""
    info = row_i_ptr + row64 * ROW_I
    held = tl.load(info + 7) - tl.load(info + 8)
    return (mode == 3) & (hi - lo > 1) & (held > fit)


@triton.jit
def keyed_band(b_lo, b_hi, KEY_SHIFT: tl.constexpr):
    """The band (b_lo, b_hi] (int64 keys) of a 16-bit row as values: the index of its first value
    (``key >> KEY_SHIFT``: a 16-bit value's float32 key has its low KEY_SHIFT bits all equal, 16
    for bfloat16 and 13 for float16, so the index names the value) and whether its values fit
    the KEY_BINS counts (and the band lies above NaN's key). Every kernel decides it this way."""
    first_value = (b_lo + 1) >> KEY_SHIFT
    last_value = b_hi >> KEY_SHIFT
    keyed = (last_value - first_value < KEY_BINS) & (b_lo >= KEY_FLOOR - 1) & (b_hi > b_lo)
    return first_value, keyed


@triton.jit
def value_key(value_index, KEY_SHIFT: tl.constexpr):
    """The int32 rank key of the 16-bit value with index ``value_index`` (int64, see
    :func:`keyed_band`): the low bits are zeros for keys >= 0 and ones below (a negative float's
    key is its bits with all but the sign flipped)."""
    low = tl.where(value_index < 0, (1 << KEY_SHIFT) - 1, 0)
    return ((value_index << KEY_SHIFT) | low).to(tl.int32)


@triton.jit
def widen_to_values(b_lo, b_hi, lo, hi, row_max, inf_mode, KEY_SHIFT: tl.constexpr,
                    NARROW: tl.constexpr = 0):
    """A keyed band (:func:`keyed_band`) widened evenly to KEY_BINS values, inside the interval
    (lo, hi] pass A proved (the side that reaches its end gives its share to the other): its
    counts are exact per value, so a wider band misses T less. Both are cut to the keys a row
    can hold first: none above the row's max, none but NaN's below -inf's. A band open below
    takes the KEY_BINS values from its top down. Any other band (more values than KEY_BINS
    between two sampled keys) is returned as it is. NARROW > 0: a band of at most NARROW
    values is widened to NARROW values only, which :func:`_count_band_values` counts without a
    histogram (the histogram, not the band's width, is what the count costs)."""
    top_key = tl.max(order_key(tl.full([1], 0.0, tl.float32) + row_max), axis=0).to(tl.int64)
    top_key = tl.where(inf_mode, KEY_MAX, top_key)
    hi = tl.minimum(hi, top_key)
    b_hi_held = tl.minimum(b_hi, top_key)
    lo_finite = tl.maximum(lo, KEY_FLOOR - 1)  # (below it only NaN's key, of weight 0)
    b_lo_finite = tl.maximum(b_lo, lo_finite)
    first_value, keyed = keyed_band(b_lo_finite, b_hi_held, KEY_SHIFT)
    last_value = b_hi_held >> KEY_SHIFT
    proven_first = (lo_finite + 1) >> KEY_SHIFT
    proven_last = hi >> KEY_SHIFT
    # a band open below (T̂ under the sample's lowest ranks, and pass A proved no lower end;
    # the row's min is not known): the KEY_BINS values from its top down. (A band that only
    # reaches pass A's lower end is not: cut, it missed T in float16 Gaussian rows, H200)
    open_below = (b_lo_finite == KEY_FLOOR - 1) & (lo_finite == KEY_FLOOR - 1) \
        & (b_hi_held > b_lo_finite)
    first_value = tl.where(keyed | (not open_below), first_value,
                           tl.maximum(last_value - (KEY_BINS - 1), proven_first))
    keyed = keyed | open_below
    values = (first_value * 0 + KEY_BINS).to(tl.int64)
    if NARROW > 0:
        values = tl.where(last_value - first_value < NARROW, NARROW, values)
    spare = values - 1 - (last_value - first_value)
    first = tl.maximum(first_value - spare // 2, proven_first)
    last = tl.minimum(first + (values - 1), proven_last)
    first = tl.maximum(tl.minimum(first, last - (values - 1)), proven_first)
    wide_lo = tl.maximum(tl.maximum((first << KEY_SHIFT) - 1, lo), KEY_FLOOR - 1)
    wide_hi = tl.minimum((last << KEY_SHIFT) | ((1 << KEY_SHIFT) - 1), hi)
    return tl.where(keyed, wide_lo, b_lo), tl.where(keyed, wide_hi, b_hi)


@triton.jit
def wide_band_kernel(
    x_ptr, row_i_ptr, row_f_ptr,
    V, stride_x, max_band,
    SAMPLE: tl.constexpr, KEY_SHIFT: tl.constexpr = 0, NARROW: tl.constexpr = 0,
):
    """Place the band of each wide row (mode 3) from a SAMPLE-entry sample of the row:
    row_i[5:7] = (b_lo + 1, b_hi) inside the interval pass A proved (row_i[9:11]). A launch of
    its own, grid (B,): inside the per-row search kernel it took 297 µs at B = 1024, V = 131072
    (fp32 zipf top-p 0.9, H200), here 235 (BENCHMARKS.md, thirteenth session; placed from the
    sorted sample instead, one bitonic sort and a cumulative sum: 430). max_band : entries the
    band aims below. KEY_SHIFT (16-bit rows): a band of at most KEY_BINS values is widened to
    KEY_BINS values (:func:`widen_to_values`; one of at most NARROW values to NARROW)."""
    row = tl.program_id(0)
    row64 = (row * 0).to(tl.int64) + row
    info = row_i_ptr + row64 * ROW_I
    if tl.load(info) == 3:
        lo = tl.load(info + 9).to(tl.int64) - 1
        hi = tl.load(info + 10).to(tl.int64)
        row_max = tl.load(row_f_ptr + row64 * ROW_F + 0)
        target = tl.load(row_f_ptr + row64 * ROW_F + 1)
        inf_mode = tl.load(row_f_ptr + row64 * ROW_F + 2) > 0.0
        row_mass = tl.load(row_f_ptr + row64 * ROW_F + 4)
        row_x = x_ptr + row64 * stride_x
        b_lo, b_hi = band_interval(row_x, V, lo, hi, row_max, row_mass, target, inf_mode,
                                   max_band, SAMPLE)
        if KEY_SHIFT > 0:
            b_lo, b_hi = widen_to_values(b_lo, b_hi, lo, hi, row_max, inf_mode, KEY_SHIFT,
                                         NARROW)
        tl.store(info + 5, (b_lo + 1).to(tl.int32))
        tl.store(info + 6, b_hi.to(tl.int32))


@triton.jit
def wide_round_kernel(
    x_ptr, row_i_ptr, row_f_ptr,
    V, stride_x, seg_len, fit,
    part_i_ptr, part_f_ptr, miss_ptr, arrive_ptr,
    BLOCK: tl.constexpr, LISTED: tl.constexpr = False, MERGE: tl.constexpr = False,
    NSEG_P2: tl.constexpr = 1, AHEAD: tl.constexpr = 1, PIVOT_ROWS: tl.constexpr = False,
    FIXED: tl.constexpr = False, ATOMIC: tl.constexpr = False,
):
    """One segment's count and mass above each of 16 pivots of its row's interval, and the
    smallest / largest key inside the interval. part_i : (B, S, 32) int32, part_f : (B, S, 16)
    (FIXED: int64 fixed-point masses, :func:`_masses_ptr`).
    A row whose interval is one key, or holds at most ``fit`` entries (the compaction after the
    rounds takes them), is settled: its programs return at once (:func:`_narrowing`).
    LISTED: grid (G, S), the rows the band missed (listed at miss_ptr by
    :func:`wide_search_kernel`) shared among the G programs of a segment; else grid (B, S),
    one row each.
    MERGE: the row's last program to arrive (an integer counter per row, arrive_ptr : (B,)
    int32, zeroed by the band's search, set back to zero here) merges the partials and narrows
    the interval itself, as :func:`wide_narrow_kernel` would in a launch of its own (the same
    sums in the same order: only who runs it changes). NSEG_P2: the next power of two of S.
    AHEAD: tiles in flight per program (:func:`tile_ring_next`; no sum depends on it).
    ATOMIC (with FIXED only): the segments' counts, int64 masses and key bounds are added into
    their row's totals by integer atomics (:func:`_round_accumulate`; part_i : (B, 16) int32,
    part_f : (B, 18) int64, zero before the first round), not stored per part: integer sums and
    maxima are the same in any order, so the totals equal the per-part merge, and the scratch
    no longer grows with the programs per segment."""
    if LISTED:
        n_listed = tl.load(miss_ptr)
        for i in range(tl.program_id(0), n_listed, tl.num_programs(0)):
            _round_row(x_ptr, row_i_ptr, row_f_ptr, V, stride_x, seg_len, fit, part_i_ptr,
                       part_f_ptr, arrive_ptr, tl.load(miss_ptr + 1 + i), BLOCK, MERGE,
                       NSEG_P2, AHEAD, PIVOT_ROWS, FIXED, ATOMIC)
    else:
        _round_row(x_ptr, row_i_ptr, row_f_ptr, V, stride_x, seg_len, fit, part_i_ptr,
                   part_f_ptr, arrive_ptr, tl.program_id(0), BLOCK, MERGE, NSEG_P2, AHEAD,
                   PIVOT_ROWS, FIXED, ATOMIC)


@triton.jit
def _round_row(x_ptr, row_i_ptr, row_f_ptr, V, stride_x, seg_len, fit, part_i_ptr, part_f_ptr,
               arrive_ptr, row, BLOCK: tl.constexpr, MERGE: tl.constexpr,
               NSEG_P2: tl.constexpr, AHEAD: tl.constexpr, PIVOT_ROWS: tl.constexpr,
               FIXED: tl.constexpr, ATOMIC: tl.constexpr):
    """:func:`wide_round_kernel`'s work for one row and segment (program_id(1))."""
    seg = tl.program_id(1)
    nseg = tl.num_programs(1)
    row64 = (row * 0).to(tl.int64) + row
    mode = tl.load(row_i_ptr + row64 * ROW_I)
    lo, hi = _interval(row_i_ptr, row64)
    if _narrowing(row_i_ptr, row64, mode, lo, hi, fit):
        row_max = tl.load(row_f_ptr + row64 * ROW_F + 0)
        inf_mode = tl.load(row_f_ptr + row64 * ROW_F + 2) > 0.0
        piv = wide_pivots(lo, hi)
        piv32 = tl.maximum(piv, KEY_NAN).to(tl.int32)  # lane 0 may be KEY_NAN - 1: unused
        # per-lane accumulators, reduced once after the loop (no cross-thread work per tile)
        MASS_TY: tl.constexpr = tl.int64 if FIXED else tl.float32
        lane_counts = tl.zeros([BLOCK, WAYS], dtype=tl.int32)
        lane_masses = tl.zeros([BLOCK, WAYS], dtype=MASS_TY)
        # PIVOT_ROWS: the same accumulators as (WAYS, BLOCK), so an entry stays in its
        # thread's lane (the 1-D tile's layout) and is compared with all 16 pivots there
        lane_counts_t = tl.zeros([WAYS, BLOCK], dtype=tl.int32)
        lane_masses_t = tl.zeros([WAYS, BLOCK], dtype=MASS_TY)
        lane_key_min = tl.full([BLOCK], KEY_MAX, tl.int32)
        lane_key_max = tl.full([BLOCK], KEY_NAN, tl.int32)
        lo32 = tl.maximum(lo, KEY_NAN).to(tl.int32)  # key > lo, as int32 (lo >= KEY_NAN - 1)
        row_x = x_ptr + row64 * stride_x
        seg_start = seg * seg_len
        lanes = tl.arange(0, BLOCK)
        t1, t2, t3, t4 = tile_ring_start(row_x, seg_start + lanes, V, seg_start + seg_len,
                                         BLOCK, AHEAD)
        for off in range(0, seg_len, BLOCK):
            offs = seg_start + off + lanes
            valid = offs < V
            # the next AHEAD tiles' loads are issued before this one is processed (AHEAD 1,
            # measured on the H200: 179.9 -> 178.9 µs for the rounds at topp0.9)
            x, t1, t2, t3, t4 = tile_ring_next(t1, t2, t3, t4, row_x, offs, V,
                                               seg_start + seg_len, BLOCK, AHEAD)
            x = x.to(tl.float32)
            key = rank_key(x, False)
            w = weights_of(x, row_max, inf_mode)
            if FIXED:
                w = fixed_weight(w)
            if PIVOT_ROWS:
                above_t = valid[None, :] & (key[None, :] > piv32[:, None])
                lane_counts_t += above_t.to(tl.int32)
                lane_masses_t += tl.where(above_t, w[None, :], 0)
            else:
                above = valid[:, None] & (key[:, None] > piv32[None, :])
                lane_counts += above.to(tl.int32)
                lane_masses += tl.where(above, w[:, None], 0)
            inside = valid & ((key > lo32) | (lo < KEY_NAN)) & (key <= hi)
            lane_key_min = tl.minimum(lane_key_min, tl.where(inside, key, KEY_MAX))
            lane_key_max = tl.maximum(lane_key_max, tl.where(inside, key, KEY_NAN))
        if PIVOT_ROWS:
            counts = tl.sum(lane_counts_t, axis=1)
            masses = tl.sum(lane_masses_t, axis=1)
        else:
            counts = tl.sum(lane_counts, axis=0)
            masses = tl.sum(lane_masses, axis=0)
        key_min = tl.min(lane_key_min, axis=0)
        key_max = tl.max(lane_key_max, axis=0)
        if ATOMIC:
            _round_accumulate(part_i_ptr, part_f_ptr, row64, counts, masses, key_min, key_max)
        else:
            slot = row64 * nseg + seg
            lanes = tl.arange(0, WAYS)
            tl.store(part_i_ptr + slot * PART + lanes, counts)
            tl.store(part_i_ptr + slot * PART + WAYS, key_min)
            tl.store(part_i_ptr + slot * PART + WAYS + 1, key_max)
            tl.store(_masses_ptr(part_f_ptr, FIXED) + slot * WAYS + lanes, masses)
        if MERGE:
            if arrive_last(arrive_ptr, row64, nseg):
                tl.store(arrive_ptr + row64, 0)
                _narrow_row(row_i_ptr, row_f_ptr, part_i_ptr, part_f_ptr, nseg, fit, row,
                            NSEG_P2, FIXED, ATOMIC)


@triton.jit
def _round_accumulate(acc_i_ptr, acc_f_ptr, row64, counts, masses, key_min, key_max):
    """Add one part's 16 counts (int32) and int64 masses into its row's totals, and its
    smallest / largest key inside the interval as maxima of ``KEY_MAX - key_min`` and
    ``key_max - KEY_NAN`` (int64, never negative: a zeroed total is the empty part's value)."""
    lanes = tl.arange(0, WAYS)
    tl.atomic_add(acc_i_ptr + row64 * WAYS + lanes, counts)
    acc = acc_f_ptr.to(tl.pointer_type(tl.int64)) + row64 * (WAYS + 2)
    tl.atomic_add(acc + lanes, masses)
    bounds = tl.arange(0, 2)
    zero = bounds.to(tl.int64) * 0
    tl.atomic_max(acc + WAYS + bounds, tl.where(bounds == 0, zero + KEY_MAX - key_min,
                                                zero + key_max - KEY_NAN))


@triton.jit
def _round_totals(acc_i_ptr, acc_f_ptr, row64):
    """A row's totals from :func:`_round_accumulate` (counts, masses, key min, key max), which
    are then set back to zero for the next round."""
    lanes = tl.arange(0, WAYS)
    acc = acc_f_ptr.to(tl.pointer_type(tl.int64)) + row64 * (WAYS + 2)
    counts = tl.load(acc_i_ptr + row64 * WAYS + lanes)
    masses = tl.load(acc + lanes)
    bounds = tl.arange(0, 2)
    stored = tl.load(acc + WAYS + bounds)
    key_min = tl.sum(tl.where(bounds == 0, -stored + KEY_MAX, 0), axis=0).to(tl.int32)
    key_max = tl.sum(tl.where(bounds == 1, stored + KEY_NAN, 0), axis=0).to(tl.int32)
    tl.store(acc_i_ptr + row64 * WAYS + lanes, counts * 0)
    tl.store(acc + lanes, masses * 0)
    tl.store(acc + WAYS + bounds, stored * 0)
    return counts, masses, key_min, key_max


@triton.jit
def wide_narrow_kernel(
    row_i_ptr, row_f_ptr, part_i_ptr, part_f_ptr, miss_ptr,
    nseg, fit,
    NSEG_P2: tl.constexpr, LISTED: tl.constexpr = False, FIXED: tl.constexpr = False,
    ATOMIC: tl.constexpr = False,
):
    """Merge the segments' pivot counts in a fixed order and narrow the row's interval
    (LISTED: grid (G,), the listed rows shared among the programs; else grid (B,)). ATOMIC:
    read the row's totals instead (:func:`wide_round_kernel`)."""
    if LISTED:
        n_listed = tl.load(miss_ptr)
        for i in range(tl.program_id(0), n_listed, tl.num_programs(0)):
            _narrow_row(row_i_ptr, row_f_ptr, part_i_ptr, part_f_ptr, nseg, fit,
                        tl.load(miss_ptr + 1 + i), NSEG_P2, FIXED, ATOMIC)
    else:
        _narrow_row(row_i_ptr, row_f_ptr, part_i_ptr, part_f_ptr, nseg, fit, tl.program_id(0),
                    NSEG_P2, FIXED, ATOMIC)


@triton.jit
def _narrow_row(row_i_ptr, row_f_ptr, part_i_ptr, part_f_ptr, nseg, fit, row,
                NSEG_P2: tl.constexpr, FIXED: tl.constexpr, ATOMIC: tl.constexpr = False):
    """:func:`wide_narrow_kernel`'s work for one row."""
    row64 = (row * 0).to(tl.int64) + row
    info = row_i_ptr + row64 * ROW_I
    mode = tl.load(info)
    lo, hi, cnt_lo, cnt_hi, target, mass_hi = _search_state(row_i_ptr, row_f_ptr, row64, FIXED)
    if _narrowing(row_i_ptr, row64, mode, lo, hi, fit):  # as in wide_round_kernel
        if ATOMIC:
            counts, masses, key_min, key_max = _round_totals(part_i_ptr, part_f_ptr, row64)
        else:
            segs = tl.arange(0, NSEG_P2)
            ok = segs < nseg
            lanes = tl.arange(0, WAYS)
            base = (row64 * nseg + segs) * PART
            counts = tl.sum(tl.load(part_i_ptr + base[:, None] + lanes[None, :],
                                    mask=ok[:, None], other=0), axis=0)
            masses = tl.sum(tl.load(_masses_ptr(part_f_ptr, FIXED)
                                    + (row64 * nseg + segs)[:, None] * WAYS + lanes[None, :],
                                    mask=ok[:, None], other=0), axis=0)
            key_min = tl.min(tl.load(part_i_ptr + base + WAYS, mask=ok, other=KEY_MAX), axis=0)
            key_max = tl.max(tl.load(part_i_ptr + base + WAYS + 1, mask=ok, other=KEY_NAN),
                             axis=0)
        piv = wide_pivots(lo, hi)
        holds = (masses >= target) | (piv == lo)
        new_lo = tl.max(tl.where(holds, piv, lo), axis=0)
        new_hi = tl.min(tl.where(holds, hi, piv), axis=0)
        new_cnt_lo = tl.min(tl.where(holds & (piv > lo), counts, cnt_lo), axis=0)
        new_cnt_hi = tl.max(tl.where(holds, cnt_hi, counts), axis=0)
        new_mass_hi = tl.max(tl.where(holds, mass_hi, masses), axis=0)
        lo = tl.maximum(new_lo, key_min.to(tl.int64) - 1)  # snap onto occupied keys
        hi = tl.minimum(new_hi, key_max.to(tl.int64))
        tl.store(info + 4, tl.load(info + 4) + 1)
        tl.store(info + 5, (lo + 1).to(tl.int32))
        tl.store(info + 6, hi.to(tl.int32))
        tl.store(info + 7, new_cnt_lo)
        tl.store(info + 8, new_cnt_hi)
        tl.store(mass_hi_ptr(row_f_ptr, row64, FIXED), new_mass_hi)


@triton.jit
def _count_band_values(x_ptr, row_f_ptr, V, stride_x, seg_len, seg_i_ptr, part_i_ptr,
                       part_f_ptr, row64, seg, nseg, b_lo, b_hi, first_value,
                       BLOCK: tl.constexpr, KEY_SHIFT: tl.constexpr, LEAN: tl.constexpr,
                       EXP2: tl.constexpr = False, UNSWITCH: tl.constexpr = False,
                       FIXED: tl.constexpr = False, NARROW: tl.constexpr = 0):
    """One segment's count of each value of a keyed band (b_lo, b_hi] (part_i[slot * KEY_PART
    + j]: value first_value + j), its count and mass above the band (part_i[... + KEY_BINS],
    part_f[slot * WAYS]) and the band's entries (seg_i). Integer counts: exact, in any order.
    LEAN: the band's and the above tests as float compares (a keyed band lies above NaN's key,
    :func:`keyed_band`), tiles padded with NaN, the weights without weights_of's guards (as in
    :func:`_compact_row`). UNSWITCH (LEAN): a row without +inf entries runs a loop without the
    +inf weights and with the band's value index from the bits (:func:`_count_values_loop`).
    FIXED: the mass above as an int64 fixed-point sum (:func:`_masses_ptr`). NARROW (with
    UNSWITCH): a row without +inf whose band holds at most NARROW values counts them in packed
    per-lane fields instead of the histogram (``tl.histogram`` is most of the count's time,
    whatever the band holds: ``benchmarks/keyed_probe.py``); the same integers."""
    row_x = x_ptr + row64 * stride_x
    row_max = tl.load(row_f_ptr + row64 * ROW_F + 0)
    inf_mode = tl.load(row_f_ptr + row64 * ROW_F + 2) > 0.0
    first, last = int32_bounds(b_lo, b_hi)
    after = tl.minimum(tl.maximum(b_hi + 1, KEY_NAN), KEY_MAX).to(tl.int32)
    first_value_f = lower_bound_value(first)
    last_value_f = upper_bound_value(last)
    after_value_f = lower_bound_value(after)
    first_value32 = first_value.to(tl.int32)
    value_counts = tl.zeros([KEY_BINS], tl.int32)
    lane_above = tl.zeros([BLOCK], tl.int32)
    lane_mass_above = tl.zeros([BLOCK], tl.int64 if FIXED else tl.float32)
    seg_start = seg * seg_len
    lanes = tl.arange(0, BLOCK)
    plain = False
    if UNSWITCH and LEAN:
        plain = inf_mode == 0
    narrow = False
    if NARROW > 0:
        narrow = plain & ((b_hi >> KEY_SHIFT) - first_value < NARROW)
    if narrow:
        value_counts, lane_above, lane_mass_above = _count_values_loop(
            row_x, V, seg_start, seg_len, lanes, first, last, after, first_value_f,
            last_value_f, after_value_f, first_value32, row_max, inf_mode, value_counts,
            lane_above, lane_mass_above, BLOCK, KEY_SHIFT, LEAN, EXP2, True, FIXED, NARROW)
    elif plain:
        value_counts, lane_above, lane_mass_above = _count_values_loop(
            row_x, V, seg_start, seg_len, lanes, first, last, after, first_value_f,
            last_value_f, after_value_f, first_value32, row_max, inf_mode, value_counts,
            lane_above, lane_mass_above, BLOCK, KEY_SHIFT, LEAN, EXP2, True, FIXED)
    else:
        value_counts, lane_above, lane_mass_above = _count_values_loop(
            row_x, V, seg_start, seg_len, lanes, first, last, after, first_value_f,
            last_value_f, after_value_f, first_value32, row_max, inf_mode, value_counts,
            lane_above, lane_mass_above, BLOCK, KEY_SHIFT, LEAN, EXP2, False, FIXED)
    slot = row64 * nseg + seg
    tl.store(part_i_ptr + slot * KEY_PART + tl.arange(0, KEY_BINS), value_counts)
    tl.store(part_i_ptr + _above_slot(slot, KEY_SHIFT), tl.sum(lane_above, axis=0))
    tl.store(_masses_ptr(part_f_ptr, FIXED) + slot * WAYS + 0, tl.sum(lane_mass_above, axis=0))
    tl.store(seg_i_ptr + slot * SEG_I, tl.sum(value_counts, axis=0))


@triton.jit
def _count_values_loop(row_x, V, seg_start, seg_len, lanes, first, last, after, first_value_f,
                       last_value_f, after_value_f, first_value32, row_max, inf_mode,
                       value_counts, lane_above, lane_mass_above, BLOCK: tl.constexpr,
                       KEY_SHIFT: tl.constexpr, LEAN: tl.constexpr, EXP2: tl.constexpr,
                       PLAIN: tl.constexpr, FIXED: tl.constexpr, NARROW: tl.constexpr = 0):
    """:func:`_count_band_values`'s loop over one segment's tiles; returns (value_counts,
    lane_above, lane_mass_above) carried on from the arguments. PLAIN (LEAN, a row without
    +inf entries): the weights exp's alone, and an entry's value index from its bits: -0.0
    made +0.0 by a select, then the order key's sign flip (the band holds no NaN, so the key's
    NaN case is not needed where the histogram counts). NARROW (PLAIN; the band holds at most
    NARROW <= 8 values): no histogram; each lane counts its entries of value j in the 4-bit
    field j of one uint32 (a lane meets one entry a tile, and a segment has at most 15 tiles:
    ``launch`` sets NARROW only then), and the fields are summed over the lanes once, after
    the loop."""
    OTHER: tl.constexpr = float("nan") if LEAN else 0.0
    lane_packed = tl.zeros([BLOCK], tl.uint32)
    x_next = segment_tile(row_x, seg_start + lanes, V, seg_start + seg_len, OTHER)
    for off in range(0, seg_len, BLOCK):
        offs = seg_start + off + lanes
        valid = offs < V
        x = x_next.to(tl.float32)
        x_next = segment_tile(row_x, offs + BLOCK, V, seg_start + seg_len, OTHER)
        if LEAN:
            inside = (x >= first_value_f) & (x <= last_value_f)  # (no NaN, nothing past V)
            above = x >= after_value_f
            if EXP2:  # (as in :func:`_compact_loop`)
                w_finite = tl.exp2((x - row_max) * 1.4426950408889634)
            else:
                w_finite = tl.exp(x - row_max)
            if PLAIN:
                w = w_finite
                bits = tl.where(x == 0.0, 0.0, x).to(tl.int32, bitcast=True)
                key = bits ^ ((bits >> 31) & 0x7FFFFFFF)
            else:
                w = tl.where(inf_mode, tl.where(x == float("inf"), 1.0, 0.0), w_finite)
                key = rank_key(x, False)
        else:
            key = rank_key(x, False)
            inside = valid & (key >= first) & (key <= last)
            above = valid & (key >= after)
            w = weights_of(x, row_max, inf_mode)
        lane_above += above.to(tl.int32)
        if FIXED:
            lane_mass_above += tl.where(above, fixed_weight(w), 0)
        else:
            lane_mass_above += tl.where(above, w, 0.0)
        if NARROW > 0:
            field = (((key >> KEY_SHIFT) - first_value32) * 4).to(tl.uint32)
            lane_packed += tl.where(inside, tl.full([BLOCK], 1, tl.uint32) << field, 0)
        else:
            value_counts += tl.histogram((key >> KEY_SHIFT) - first_value32, KEY_BINS,
                                         mask=inside)
    if NARROW > 0:
        bins = tl.arange(0, KEY_BINS)
        for j in tl.static_range(NARROW):
            count = tl.sum(((lane_packed >> (4 * j)) & 15).to(tl.int32), axis=0)
            value_counts += tl.where(bins == j, count, 0)
    return value_counts, lane_above, lane_mass_above


@triton.jit
def wide_compact_kernel(
    x_ptr, row_i_ptr, row_f_ptr,
    V, stride_x, seg_len,
    cand_val_ptr, cand_idx_ptr, seg_i_ptr, part_i_ptr, part_f_ptr, miss_ptr,
    BLOCK: tl.constexpr, CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr, SPARSE: tl.constexpr,
    BAND: tl.constexpr, FLAT: tl.constexpr = False, KEY_SHIFT: tl.constexpr = 0,
    LISTED: tl.constexpr = False, AHEAD: tl.constexpr = 1, PACKED: tl.constexpr = False,
    LEAN: tl.constexpr = False, UNSWITCH: tl.constexpr = False, EXP2: tl.constexpr = False,
    FIXED: tl.constexpr = False, PAIRED: tl.constexpr = False, NARROW: tl.constexpr = 0,
):
    """Copy one segment's entries with key in the row's interval into its candidate slots.

    BAND (the first wide launch, the interval is a band no round has measured): also the
    segment's count and mass above the band and the band's mass, part_i[..., 20] and
    part_f[..., 0:2], for :func:`wide_search_kernel` to check the band.

    FLAT: the tile's lanes as the compiler cannot prove contiguous, so every step keeps one
    entry per thread per row of the tile (32-bit loads, still coalesced) and the scattered
    appends need no layout conversion through shared memory (sm90 SASS at 128 x 1: without it,
    four conversions, with four barriers, per appending tile).

    KEY_SHIFT (with BAND, 16-bit rows): a band of at most KEY_BINS values (:func:`keyed_band`) is
    counted per value instead (:func:`_count_band_values`; NARROW: a band of at most NARROW
    values without a histogram), nothing is copied; any other band is compacted.

    BAND also empties the list of missed rows (miss_ptr[0] = 0) that
    :func:`wide_search_kernel` then fills. LISTED (after the rounds): grid (G, S), the listed
    rows shared among the G programs of a segment; else grid (B, S). AHEAD: tiles in flight
    per program (:func:`tile_ring_next`; no sum depends on it). PACKED: a tile's append
    positions by one 32-lane scan (:func:`packed_prefix_counts`; the same positions). LEAN: the
    interval's tests as float32 compares against its bounds' values (:func:`lower_bound_value`,
    :func:`upper_bound_value`) and the weights without weights_of's guards where nothing they
    guard is summed: no order key per entry, the same entries, weights and sums. UNSWITCH
    (LEAN): a row whose interval and band reach no NaN key and that holds no +inf runs a loop
    without the NaN terms and the +inf weights (the same entries and sums). EXP2 (LEAN, BAND): the weights summed as exp2 (:func:`_compact_loop`;
    those below 2^-126 weigh 0), in the keyed count too. FIXED (BAND): the masses as int64
    fixed-point sums (:func:`~.primitives.fixed_weight`, :func:`_masses_ptr`): exact, so they
    do not depend on where the band lies or how the row is split. PAIRED: two tiles a turn in
    their own load slots (:func:`_compact_loop`; AHEAD unused; an even number of tiles per
    segment).
    """
    if BAND:
        if (tl.program_id(0) == 0) & (tl.program_id(1) == 0):
            tl.store(miss_ptr, 0)
    if LISTED:
        n_listed = tl.load(miss_ptr)
        for i in range(tl.program_id(0), n_listed, tl.num_programs(0)):
            _compact_row(x_ptr, row_i_ptr, row_f_ptr, V, stride_x, seg_len, cand_val_ptr,
                         cand_idx_ptr, seg_i_ptr, part_i_ptr, part_f_ptr,
                         tl.load(miss_ptr + 1 + i), BLOCK, CAP_SEG, NSEG_P2, SPARSE, BAND, FLAT,
                         KEY_SHIFT, AHEAD, PACKED, LEAN, UNSWITCH, EXP2, FIXED, PAIRED, NARROW)
    else:
        _compact_row(x_ptr, row_i_ptr, row_f_ptr, V, stride_x, seg_len, cand_val_ptr,
                     cand_idx_ptr, seg_i_ptr, part_i_ptr, part_f_ptr, tl.program_id(0), BLOCK,
                     CAP_SEG, NSEG_P2, SPARSE, BAND, FLAT, KEY_SHIFT, AHEAD, PACKED, LEAN,
                     UNSWITCH, EXP2, FIXED, PAIRED, NARROW)


@triton.jit
def _compact_row(x_ptr, row_i_ptr, row_f_ptr, V, stride_x, seg_len, cand_val_ptr, cand_idx_ptr,
                 seg_i_ptr, part_i_ptr, part_f_ptr, row, BLOCK: tl.constexpr,
                 CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr, SPARSE: tl.constexpr,
                 BAND: tl.constexpr, FLAT: tl.constexpr, KEY_SHIFT: tl.constexpr,
                 AHEAD: tl.constexpr, PACKED: tl.constexpr, LEAN: tl.constexpr,
                 UNSWITCH: tl.constexpr, EXP2: tl.constexpr, FIXED: tl.constexpr,
                 PAIRED: tl.constexpr, NARROW: tl.constexpr = 0):
    """:func:`wide_compact_kernel`'s work for one row and segment (program_id(1))."""
    seg = tl.program_id(1)
    nseg = tl.num_programs(1)
    row64 = (row * 0).to(tl.int64) + row
    mode = tl.load(row_i_ptr + row64 * ROW_I)
    keyed = mode < 0  # (False)
    if KEY_SHIFT > 0:
        if BAND:
            if mode == 3:
                b_lo, b_hi = _interval(row_i_ptr, row64)
                first_value, keyed = keyed_band(b_lo, b_hi, KEY_SHIFT)
                if keyed:
                    _count_band_values(x_ptr, row_f_ptr, V, stride_x, seg_len, seg_i_ptr,
                                       part_i_ptr, part_f_ptr, row64, seg, nseg, b_lo, b_hi,
                                       first_value, BLOCK, KEY_SHIFT, LEAN, EXP2, UNSWITCH,
                                       FIXED, NARROW)
    if (mode == 3) & (not keyed):
        lo, hi = _interval(row_i_ptr, row64)
        cand = row64 * (NSEG_P2 * CAP_SEG) + seg * CAP_SEG
        row_x = x_ptr + row64 * stride_x
        count = row * 0
        row_max = tl.load(row_f_ptr + row64 * ROW_F + 0)
        inf_mode = tl.load(row_f_ptr + row64 * ROW_F + 2) > 0.0
        lane_above = tl.zeros([BLOCK], tl.int32)
        lane_mass_above = tl.zeros([BLOCK], tl.int64 if FIXED else tl.float32)
        lane_mass_band = tl.zeros([BLOCK], tl.int64 if FIXED else tl.float32)
        lanes = tl.arange(0, BLOCK)
        if FLAT:
            lanes = lanes ^ (mode - 3)  # mode is 3 here: the same lanes, contiguity unknown
        # key in (lo, hi] and key > hi as int32 compares per entry
        first, last = int32_bounds(lo, hi)
        after = tl.minimum(tl.maximum(hi + 1, KEY_NAN), KEY_MAX).to(tl.int32)
        # LEAN: the same tests as float32 compares against the bounds' values (no order key per
        # entry); NaN, whose key is the lowest, is inside only when the interval reaches it
        first_value = lower_bound_value(first)
        last_value = upper_bound_value(last)
        after_value = lower_bound_value(after)
        nan_inside = first == KEY_NAN
        nan_above = after == KEY_NAN
        # UNSWITCH (LEAN): the NaN terms of the tests and the +inf weights are dropped from
        # the loop of a row whose interval and band reach no NaN key and that holds no +inf
        # (nearly every row): a uniform branch, two loops
        plain = False
        if UNSWITCH and LEAN:
            plain = (nan_inside | nan_above | inf_mode) == 0
        if plain:
            count, lane_above, lane_mass_above, lane_mass_band = _compact_loop(
                row_x, V, seg, seg_len, lanes, first, last, after, first_value, last_value,
                after_value, nan_inside, nan_above, row_max, inf_mode, cand_val_ptr + cand,
                cand_idx_ptr + cand, count, lane_above, lane_mass_above, lane_mass_band,
                BLOCK, CAP_SEG, SPARSE, BAND, AHEAD, PACKED, LEAN, False, EXP2, FIXED,
                PAIRED)
        else:
            count, lane_above, lane_mass_above, lane_mass_band = _compact_loop(
                row_x, V, seg, seg_len, lanes, first, last, after, first_value, last_value,
                after_value, nan_inside, nan_above, row_max, inf_mode, cand_val_ptr + cand,
                cand_idx_ptr + cand, count, lane_above, lane_mass_above, lane_mass_band,
                BLOCK, CAP_SEG, SPARSE, BAND, AHEAD, PACKED, LEAN, True, EXP2, FIXED,
                PAIRED)
        slot = row64 * nseg + seg
        tl.store(seg_i_ptr + slot * SEG_I, count)
        if BAND:
            tl.store(part_i_ptr + _above_slot(slot, KEY_SHIFT), tl.sum(lane_above, axis=0))
            masses = _masses_ptr(part_f_ptr, FIXED) + slot * WAYS
            tl.store(masses + 0, tl.sum(lane_mass_above, axis=0))
            tl.store(masses + 1, tl.sum(lane_mass_band, axis=0))


@triton.jit
def _compact_step(x, off, seg, seg_len, lanes, V, first, last, after, first_value, last_value,
                  after_value, nan_inside, nan_above, row_max, inf_mode, row_x, cand_val_ptr,
                  cand_idx_ptr, count, lane_above, lane_mass_above, lane_mass_band,
                  BLOCK: tl.constexpr, CAP_SEG: tl.constexpr, SPARSE: tl.constexpr,
                  BAND: tl.constexpr, PACKED: tl.constexpr, LEAN: tl.constexpr,
                  NAN_TERMS: tl.constexpr, EXP2: tl.constexpr, FIXED: tl.constexpr):
    """One tile of :func:`_compact_loop` (``x``: the tile at ``seg * seg_len + off + lanes``
    in the row's dtype). Returns (count, lane_above, lane_mass_above, lane_mass_band)."""
    offs = seg * seg_len + off + lanes
    valid = offs < V
    x = x.to(tl.float32)
    if LEAN:
        in_values = (x >= first_value) & (x <= last_value)  # (no NaN, nothing past V)
        if NAN_TERMS:
            take = in_values | tl.where(nan_inside, valid & (x != x), False)
        else:
            take = in_values
    else:
        key = rank_key(x, False)
        take = valid & (key >= first) & (key <= last)
    if BAND:
        if LEAN:
            above_values = x >= after_value  # (no NaN, nothing past V)
            # weights_of's value wherever it is summed: the row's max is finite in a
            # wide row, exp(-inf - max) = 0, and NaN entries (weight 0) are not summed
            if EXP2:
                w_finite = tl.exp2((x - row_max) * 1.4426950408889634)
            else:
                w_finite = tl.exp(x - row_max)
            if NAN_TERMS:
                above = above_values | tl.where(nan_above, valid & (x != x), False)
                w = tl.where(inf_mode, tl.where(x == float("inf"), 1.0, 0.0), w_finite)
            else:  # (no +inf entry either: the caller's condition)
                above = above_values
                w = w_finite
            if FIXED:
                w = fixed_weight(w)
            # (the literal 0 keeps w's type: float32, or int64 with FIXED)
            lane_mass_above += tl.where(above_values, w, 0)
            lane_mass_band += tl.where(in_values, w, 0)
        else:
            above = valid & (key >= after)
            w = weights_of(x, row_max, inf_mode)
            if FIXED:
                w = fixed_weight(w)
            lane_mass_above += tl.where(above, w, 0)
            lane_mass_band += tl.where(take, w, 0)
        lane_above += above.to(tl.int32)
    n_tile = tl.sum(take.to(tl.int32), axis=0)
    if n_tile > 0:
        compact_tile(x, seg * seg_len + off, take, lanes, n_tile, count,
                     row_x, cand_val_ptr, cand_idx_ptr, BLOCK, CAP_SEG,
                     SPARSE, PACKED)
    count += n_tile
    return count, lane_above, lane_mass_above, lane_mass_band


@triton.jit
def _compact_loop(row_x, V, seg, seg_len, lanes, first, last, after, first_value, last_value,
                  after_value, nan_inside, nan_above, row_max, inf_mode, cand_val_ptr,
                  cand_idx_ptr, count, lane_above, lane_mass_above, lane_mass_band,
                  BLOCK: tl.constexpr, CAP_SEG: tl.constexpr, SPARSE: tl.constexpr,
                  BAND: tl.constexpr, AHEAD: tl.constexpr, PACKED: tl.constexpr,
                  LEAN: tl.constexpr, NAN_TERMS: tl.constexpr, EXP2: tl.constexpr,
                  FIXED: tl.constexpr, PAIRED: tl.constexpr = False):
    """:func:`_compact_row`'s loop over one segment's tiles: appends the entries of the interval
    to the segment's slots (cand_val_ptr / cand_idx_ptr: the segment's first slot) and, with
    BAND, sums per lane the count and mass above the band and the band's mass. Returns
    (count, lane_above, lane_mass_above, lane_mass_band) carried on from the arguments.
    NAN_TERMS off (LEAN only): the row's interval and band reach no NaN key (``nan_inside`` and
    ``nan_above`` false) and it holds no +inf (``inf_mode`` false), so the tests are the float
    compares alone and the weights exp's. EXP2 (LEAN, BAND): the
    weights as exp2((x - max) · log2 e), which is exp's own computation without its fix-up for
    results below 2^-126 (those weigh 0): 3 instructions per entry fewer (sm90 SASS). FIXED
    (BAND): the lane masses int64, of :func:`~.primitives.fixed_weight`'s weights. PAIRED: two
    tiles a turn, each in its own load slot (as pass A's, :func:`~.pipeline.candidates_kernel`;
    AHEAD unused; an even number of tiles per segment): the same tiles in the same order."""
    seg_start = seg * seg_len
    seg_end = seg_start + seg_len
    # (LEAN: NaN past V, which no float compare takes)
    OTHER: tl.constexpr = float("nan") if LEAN else 0.0
    if PAIRED:
        tile_a = segment_tile(row_x, seg_start + lanes, V, seg_end, OTHER)
        tile_b = segment_tile(row_x, seg_start + BLOCK + lanes, V, seg_end, OTHER)
        for off in range(0, seg_len, 2 * BLOCK):
            x = tile_a
            tile_a = segment_tile(row_x, seg_start + off + 2 * BLOCK + lanes, V, seg_end, OTHER)
            count, lane_above, lane_mass_above, lane_mass_band = _compact_step(
                x, off, seg, seg_len, lanes, V, first, last, after, first_value, last_value,
                after_value, nan_inside, nan_above, row_max, inf_mode, row_x, cand_val_ptr,
                cand_idx_ptr, count, lane_above, lane_mass_above, lane_mass_band, BLOCK,
                CAP_SEG, SPARSE, BAND, PACKED, LEAN, NAN_TERMS, EXP2, FIXED)
            x = tile_b
            tile_b = segment_tile(row_x, seg_start + off + 3 * BLOCK + lanes, V, seg_end, OTHER)
            count, lane_above, lane_mass_above, lane_mass_band = _compact_step(
                x, off + BLOCK, seg, seg_len, lanes, V, first, last, after, first_value,
                last_value, after_value, nan_inside, nan_above, row_max, inf_mode, row_x,
                cand_val_ptr, cand_idx_ptr, count, lane_above, lane_mass_above,
                lane_mass_band, BLOCK, CAP_SEG, SPARSE, BAND, PACKED, LEAN, NAN_TERMS, EXP2,
                FIXED)
    else:
        t1, t2, t3, t4 = tile_ring_start(row_x, seg_start + lanes, V, seg_end, BLOCK, AHEAD,
                                         OTHER)
        for off in range(0, seg_len, BLOCK):
            # the next AHEAD tiles' loads are issued before this one is processed (one warp
            # per program: without it each tile waits for its own load)
            x, t1, t2, t3, t4 = tile_ring_next(t1, t2, t3, t4, row_x, seg_start + off + lanes,
                                               V, seg_end, BLOCK, AHEAD, OTHER)
            count, lane_above, lane_mass_above, lane_mass_band = _compact_step(
                x, off, seg, seg_len, lanes, V, first, last, after, first_value, last_value,
                after_value, nan_inside, nan_above, row_max, inf_mode, row_x, cand_val_ptr,
                cand_idx_ptr, count, lane_above, lane_mass_above, lane_mass_band, BLOCK,
                CAP_SEG, SPARSE, BAND, PACKED, LEAN, NAN_TERMS, EXP2, FIXED)
    return count, lane_above, lane_mass_above, lane_mass_band


@triton.jit
def _store_ties(seg_before_ptr, row64, nseg, seg_ties, NSEG_P2: tl.constexpr):
    """A mode-4 row's copies of T per segment, seg_ties (NSEG_P2,) int32 (0 past nseg): for
    each segment the copies before it (seg_before[..., 0], the ranks the write continues from)
    and its own (seg_before[..., 1]: a segment whose copies are all kept, or none, writes
    without ranking them, ``write_mask_kernel``'s CUT)."""
    segs = tl.arange(0, NSEG_P2)
    at = (row64 * nseg + segs) * 2
    tl.store(seg_before_ptr + at, tl.cumsum(seg_ties, axis=0) - seg_ties, mask=segs < nseg)
    tl.store(seg_before_ptr + at + 1, seg_ties, mask=segs < nseg)


@triton.jit
def _finish_compacted(cand_val_ptr, seg_i_ptr, info, seg_before_ptr, row64, nseg, lo, hi,
                      cnt_hi, mass_hi, target, row_max, inf_mode, zero_i,
                      CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr, FIXED: tl.constexpr):
    """Every entry of (lo, hi] is in the candidate slots: search and count ties there (mode 4).
    FIXED: mass_hi and target int64 fixed-point, the candidates' weights too."""
    CAP: tl.constexpr = NSEG_P2 * CAP_SEG
    j = tl.arange(0, CAP)
    seg_of = j // CAP_SEG
    cnt = tl.load(seg_i_ptr + (row64 * nseg + seg_of) * SEG_I, mask=seg_of < nseg, other=0)
    member = (seg_of < nseg) & ((j % CAP_SEG) < cnt)
    cx = tl.load(cand_val_ptr + row64 * CAP + j, mask=member, other=0.0)
    ckey = rank_key(cx, False)
    cw = weights_of(cx, row_max, inf_mode)
    if FIXED:
        cw = fixed_weight(cw)
    T = hi.to(tl.int32)
    if hi - lo > 1:
        T, r = search_in_registers(ckey, cw, member, lo, hi, cnt_hi, mass_hi, zero_i, target,
                                   True, SPLIT=SEARCH_SPLIT)
    at_t = member & (ckey == T)
    mass_gt = mass_hi + tl.sum(tl.where(member & (ckey > T), cw, 0), axis=0)
    copies = tl.sum(at_t.to(tl.int32), axis=0)
    w_t = tl.max(tl.where(at_t, cw, 0), axis=0)
    if FIXED:
        budget = top_p_budget_fixed(target, mass_gt, w_t, copies)
    else:
        budget = top_p_budget(target, mass_gt, w_t, copies)
    seg_ties = tl.sum(tl.reshape(at_t.to(tl.int32), [NSEG_P2, CAP_SEG]), axis=1)
    _store_ties(seg_before_ptr, row64, nseg, seg_ties, NSEG_P2)
    tl.store(info + 0, 4)
    tl.store(info + 1, T)
    tl.store(info + 2, budget)


@triton.jit
def _finish_one_key(seg_cnt, info, seg_before_ptr, row64, nseg, hi, copies, mass_hi, target,
                    row_max, inf_mode, NSEG_P2: tl.constexpr, FIXED: tl.constexpr):
    """One key left whose copies overflow the slots: every copy is T, and the compaction counted
    each segment's copies (past the capacity too). FIXED: masses int64 fixed-point."""
    T = hi.to(tl.int32)
    w_t = weights_of(key_to_value(T), row_max, inf_mode)
    if FIXED:
        budget = top_p_budget_fixed(target, mass_hi, fixed_weight(w_t), copies)
    else:
        budget = top_p_budget(target, mass_hi, w_t, copies)
    _store_ties(seg_before_ptr, row64, nseg, seg_cnt, NSEG_P2)
    tl.store(info + 0, 4)
    tl.store(info + 1, T)
    tl.store(info + 2, budget)


@triton.jit
def _value_counts(part_i_ptr, row64, nseg, NSEG_P2: tl.constexpr):
    """A keyed band's counts per segment and value, (NSEG_P2, KEY_BINS) int32 (0 past nseg)."""
    segs = tl.arange(0, NSEG_P2)
    bins = tl.arange(0, KEY_BINS)
    return tl.load(part_i_ptr + (row64 * nseg + segs)[:, None] * KEY_PART + bins[None, :],
                   mask=(segs < nseg)[:, None], other=0)


@triton.jit
def _value_masses(counts, first_value, row_max, inf_mode, KEY_SHIFT: tl.constexpr,
                  FIXED: tl.constexpr = False):
    """Each value's mass, its count times its weight (every copy of a value weighs the same);
    0 for a value with no copies (one far above the row's max would weigh exp(> 88) = inf).
    FIXED: int64, the count times the value's fixed-point weight (exactly the sum of its
    copies' fixed-point weights)."""
    keys = value_key(first_value + tl.arange(0, KEY_BINS), KEY_SHIFT)
    w = weights_of(key_to_value(keys), row_max, inf_mode)
    if FIXED:
        mass = counts.to(tl.int64) * fixed_weight(tl.where(counts > 0, w, 0.0))
    else:
        mass = counts.to(tl.float32) * w
    return tl.where(counts > 0, mass, 0)


@triton.jit
def _finish_keyed(part_i_ptr, info, seg_before_ptr, row64, nseg, first_value, mass_above,
                  target, row_max, inf_mode, KEY_SHIFT: tl.constexpr, NSEG_P2: tl.constexpr,
                  FIXED: tl.constexpr):
    """A keyed band that holds T: T is its largest occupied value whose mass from the top (the
    mass above the band, then the band's values downwards) reaches the target, else its smallest
    occupied value (as the pivot search decides, :func:`search_in_registers`); the tie budget
    and each segment's copies of T before it follow from the counts (mode 4)."""
    bins = tl.arange(0, KEY_BINS)
    seg_counts = _value_counts(part_i_ptr, row64, nseg, NSEG_P2)
    counts = tl.sum(seg_counts, axis=0)
    mass = _value_masses(counts, first_value, row_max, inf_mode, KEY_SHIFT, FIXED)
    occupied = counts > 0
    mass_from_top = mass_above + tl.cumsum(mass, axis=0, reverse=True)
    t_bin = tl.max(tl.where(occupied & (mass_from_top >= target), bins, -1), axis=0)
    t_bin = tl.where(t_bin < 0, tl.min(tl.where(occupied, bins, KEY_BINS), axis=0), t_bin)
    at_t = bins == t_bin
    copies = tl.sum(tl.where(at_t, counts, 0), axis=0)
    mass_gt = mass_above + tl.sum(tl.where(bins > t_bin, mass, 0), axis=0)
    T = value_key(first_value + t_bin, KEY_SHIFT)
    w_t = weights_of(key_to_value(T), row_max, inf_mode)
    if FIXED:
        budget = top_p_budget_fixed(target, mass_gt, fixed_weight(w_t), copies)
    else:
        budget = top_p_budget(target, mass_gt, w_t, copies)
    seg_ties = tl.sum(tl.where(at_t[None, :], seg_counts, 0), axis=1)
    _store_ties(seg_before_ptr, row64, nseg, seg_ties, NSEG_P2)
    tl.store(info + 0, 4)
    tl.store(info + 1, T)
    tl.store(info + 2, budget)


@triton.jit
def wide_search_kernel(
    x_ptr, cand_val_ptr, cand_idx_ptr, seg_i_ptr, row_i_ptr, row_f_ptr, part_i_ptr, part_f_ptr,
    V, stride_x, stride_out, fill, nseg,
    out_ptr, seg_before_ptr, miss_ptr, arrive_ptr,
    BLOCK: tl.constexpr, CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr, BAND: tl.constexpr,
    KEY_SHIFT: tl.constexpr = 0, LISTED: tl.constexpr = False, FIXED: tl.constexpr = False,
):
    """Finish a wide row from its compacted interval: pivot search and tie counting (mode 4, the
    segments write the row).

    BAND: the interval is the band :func:`band_interval` placed; the segments' exact counts and
    masses above it say whether it holds T. If it does and its entries fit (or it is one key),
    finish; otherwise narrow the interval pass A proved to the side of the band that holds T (or
    to the band, when it holds T but overflowed) and leave the row (mode 3) to the rounds.
    A keyed band (KEY_SHIFT, :func:`keyed_band`) was counted per value: it finishes whenever it
    holds T (:func:`_finish_keyed`), however many copies its values have.
    Not BAND (after the rounds): finish, or if a segment overflowed, the exact single-program
    fallback (mode 2, written here).

    BAND: a row the band missed is appended to the list at miss_ptr (miss_ptr[0] rows, then
    their indices; integer atomics: the list's order varies, what each row computes does not).
    LISTED (after the rounds): grid (G,), the listed rows shared among the programs; else grid
    (B,). BAND also zeroes each row's arrival counter for the rounds (arrive_ptr : (B,) int32,
    :func:`wide_round_kernel`'s MERGE).
    FIXED: every mass an int64 fixed-point sum (:func:`~.primitives.fixed_weight`), the target
    :func:`~.primitives.fixed_target`: exact, so the answer does not depend on the band.
    """
    if BAND:
        tl.store(arrive_ptr + tl.program_id(0), 0)
    if LISTED:
        n_listed = tl.load(miss_ptr)
        for i in range(tl.program_id(0), n_listed, tl.num_programs(0)):
            _search_row(x_ptr, cand_val_ptr, cand_idx_ptr, seg_i_ptr, row_i_ptr, row_f_ptr,
                        part_i_ptr, part_f_ptr, V, stride_x, stride_out, fill, nseg, out_ptr,
                        seg_before_ptr, miss_ptr, tl.load(miss_ptr + 1 + i), BLOCK, CAP_SEG,
                        NSEG_P2, BAND, KEY_SHIFT, FIXED)
    else:
        _search_row(x_ptr, cand_val_ptr, cand_idx_ptr, seg_i_ptr, row_i_ptr, row_f_ptr,
                    part_i_ptr, part_f_ptr, V, stride_x, stride_out, fill, nseg, out_ptr,
                    seg_before_ptr, miss_ptr, tl.program_id(0), BLOCK, CAP_SEG, NSEG_P2, BAND,
                    KEY_SHIFT, FIXED)


@triton.jit
def _search_row(x_ptr, cand_val_ptr, cand_idx_ptr, seg_i_ptr, row_i_ptr, row_f_ptr, part_i_ptr,
                part_f_ptr, V, stride_x, stride_out, fill, nseg, out_ptr, seg_before_ptr,
                miss_ptr, row, BLOCK: tl.constexpr, CAP_SEG: tl.constexpr,
                NSEG_P2: tl.constexpr, BAND: tl.constexpr, KEY_SHIFT: tl.constexpr,
                FIXED: tl.constexpr):
    """:func:`wide_search_kernel`'s work for one row."""
    CAP: tl.constexpr = NSEG_P2 * CAP_SEG
    zero_i = row * 0
    row64 = zero_i.to(tl.int64) + row
    info = row_i_ptr + row64 * ROW_I
    mode = tl.load(info)
    if mode == 3:
        row_max = tl.load(row_f_ptr + row64 * ROW_F + 0)
        inf_mode = tl.load(row_f_ptr + row64 * ROW_F + 2) > 0.0
        segs = tl.arange(0, NSEG_P2)
        seg_ok = segs < nseg
        seg_cnt = tl.load(seg_i_ptr + (row64 * nseg + segs) * SEG_I, mask=seg_ok, other=0)
        fits = tl.max(seg_cnt, axis=0) <= CAP_SEG
        if BAND:
            b_lo, b_hi = _interval(row_i_ptr, row64)
            target = tl.load(row_f_ptr + row64 * ROW_F + 1)
            if FIXED:
                target = fixed_target(target)
            part = (row64 * nseg + segs)
            masses = _masses_ptr(part_f_ptr, FIXED) + part * WAYS
            if KEY_SHIFT > 0:
                first_value, keyed = keyed_band(b_lo, b_hi, KEY_SHIFT)
            else:
                first_value, keyed = b_lo, mode < 0
            mass_above = tl.sum(tl.load(masses + 0, mask=seg_ok, other=0), axis=0)
            cnt_above = tl.sum(tl.load(part_i_ptr + _above_slot(part, KEY_SHIFT), mask=seg_ok,
                                       other=0), axis=0)
            if keyed:
                value_counts = _value_counts(part_i_ptr, row64, nseg, NSEG_P2)
                mass_band = tl.sum(_value_masses(tl.sum(value_counts, axis=0), first_value,
                                                 row_max, inf_mode, KEY_SHIFT, FIXED), axis=0)
            else:
                mass_band = tl.sum(tl.load(masses + 1, mask=seg_ok, other=0), axis=0)
            n_band = tl.sum(seg_cnt, axis=0)
            # the interval pass A proved, (lo, hi], with its counts above lo / hi
            lo = tl.load(info + 9).to(tl.int64) - 1
            hi = tl.load(info + 10).to(tl.int64)
            cnt_lo = tl.load(info + 11)
            cnt_hi = tl.load(info + 12)
            # T is above / below the band only if entries of (lo, hi] lie there: the masses are
            # summed in another order than the row's, so near p = 1 (or a T with huge ties) the
            # mass comparison alone may point at an empty side
            t_above = (mass_above >= target) & (cnt_above > cnt_hi)
            t_below = (mass_above + mass_band < target) & (cnt_lo > cnt_above + n_band)
            in_band = (not t_above) & (not t_below)
            if keyed & in_band & (n_band > 0):
                _finish_keyed(part_i_ptr, info, seg_before_ptr, row64, nseg, first_value,
                              mass_above, target, row_max, inf_mode, KEY_SHIFT, NSEG_P2, FIXED)
                tl.store(info + 13, 1)
            elif (not keyed) & in_band & fits:
                _finish_compacted(cand_val_ptr, seg_i_ptr, info, seg_before_ptr, row64, nseg,
                                  b_lo, b_hi, cnt_above, mass_above, target, row_max, inf_mode,
                                  zero_i, CAP_SEG, NSEG_P2, FIXED)
                tl.store(info + 13, 1)
            elif (not keyed) & in_band & (b_hi - b_lo == 1):
                _finish_one_key(seg_cnt, info, seg_before_ptr, row64, nseg, b_hi, n_band,
                                mass_above, target, row_max, inf_mode, NSEG_P2, FIXED)
                tl.store(info + 13, 1)
            else:
                # the interval pass A proved, narrowed by the band's exact counts and masses
                mass_hi = tl.load(mass_hi_ptr(row_f_ptr, row64, FIXED))
                lo = tl.where(t_above, b_hi, tl.where(t_below, lo, b_lo))
                hi = tl.where(t_above, hi, tl.where(t_below, b_lo, b_hi))
                cnt_lo = tl.where(t_above, cnt_above,
                                  tl.where(t_below, cnt_lo, cnt_above + n_band))
                cnt_hi = tl.where(t_above, cnt_hi,
                                  tl.where(t_below, cnt_above + n_band, cnt_above))
                mass_hi = tl.where(t_above, mass_hi,
                                   tl.where(t_below, mass_above + mass_band, mass_above))
                tl.store(info + 5, (lo + 1).to(tl.int32))
                tl.store(info + 6, hi.to(tl.int32))
                tl.store(info + 7, cnt_lo)
                tl.store(info + 8, cnt_hi)
                tl.store(mass_hi_ptr(row_f_ptr, row64, FIXED), mass_hi)
                listed = tl.atomic_add(miss_ptr, 1)
                tl.store(miss_ptr + 1 + listed, row)
        else:
            lo, hi, cnt_lo, cnt_hi, target, mass_hi = _search_state(row_i_ptr, row_f_ptr, row64,
                                                                    FIXED)
            row_x = x_ptr + row64 * stride_x
            if fits:
                _finish_compacted(cand_val_ptr, seg_i_ptr, info, seg_before_ptr, row64, nseg,
                                  lo, hi, cnt_hi, mass_hi, target, row_max, inf_mode, zero_i,
                                  CAP_SEG, NSEG_P2, FIXED)
            elif hi - lo == 1:
                _finish_one_key(seg_cnt, info, seg_before_ptr, row64, nseg, hi, cnt_lo - cnt_hi,
                                mass_hi, target, row_max, inf_mode, NSEG_P2, FIXED)
            else:
                T, cnt_gt, mass_gt, cnt_ge, r = full_row_search(
                    row_x, V, lo, hi, cnt_lo, cnt_hi, mass_hi, zero_i, target, row_max,
                    inf_mode, cand_val_ptr + row64 * CAP, cand_idx_ptr + row64 * CAP, BLOCK,
                    CAP, True, True, False, FIXED)
                w_t = weights_of(key_to_value(T), row_max, inf_mode)
                if FIXED:
                    budget = top_p_budget_fixed(target, mass_gt, fixed_weight(w_t),
                                                cnt_ge - cnt_gt)
                else:
                    budget = top_p_budget(target, mass_gt, w_t, cnt_ge - cnt_gt)
                write_row_decide(row_x, out_ptr + row64 * stride_out, V, T, budget, fill, BLOCK,
                                 False)
                tl.store(info + 0, 2)
                tl.store(info + 1, T)
                tl.store(info + 2, budget)
