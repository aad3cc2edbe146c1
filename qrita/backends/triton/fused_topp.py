"""``@triton.jit`` kernel of the fused top-p sampler (docs/sampling.md, "fused path"): k off.
Imports triton only.

``fused_topp_sample_kernel``, grid (B,), one program per row, no V-sized output. The draw is two
*mass searches* over the row's rank order (docs/sampling.md steps 2 and 5):

- top-p keeps the entries before the first entry j whose cumulative mass c_j reaches p x Z (Z:
  the row's mass); that entry is the last one kept and M_k = c_j is the kept mass;
- the token is the first entry whose c_j exceeds u x M_k.

Each search narrows a key interval (lo, hi] that holds the crossing entry, one read of the row per
round: 16 pivots (the interval's lower end, 11 spread evenly over its values, 4 over its keys, so
every round shrinks it at least 5-fold), the count and mass above each, then the interval snapped
onto the keys that occur. When at most CAP entries are left inside, one more read gathers them
(value and index) into a per-row scratch, they are sorted by rank in registers (one int64 key per
entry: rank key x 2^32 + (2^32 - 1 - index)) and the crossing is found by a cumulative sum. An
interval of one value with more than CAP copies (ties) locates the crossing copy arithmetically
(equal weights) and gathers from there.

Masses are float32 weights exp((x - max) / t) (t: the scalar temperature), summed in float32
inside a tile and float64 across tiles; the targets come from the same sums, so the answer
differs from the float64 reference only within docs/sampling.md's margins. +inf rows weigh their
+inf entries 1 (the search then ends on one value); rows without mass draw their first entry.
"""

import triton
import triton.language as tl

from qrita.backends.triton.fused_sample import _row_param
from qrita.backends.triton.primitives import KEY_MAX, KEY_NAN, key_to_value, order_key

PAD_KEY = tl.constexpr(-(2**63))  # below every packed (rank key, index)


@triton.jit
def _weight(x, row_max, inv_t, inf_mode):
    """float32 weights: exp((x - row_max) * inv_t) for finite x, else 0; +inf rows weigh +inf 1."""
    finite = tl.abs(x) < float("inf")
    w = tl.where(finite, tl.exp((tl.where(finite, x, 0.0) - tl.where(finite, row_max, 0.0))
                                * inv_t), 0.0)
    return tl.where(inf_mode, tl.where(x == float("inf"), 1.0, 0.0), w)


@triton.jit
def _first_tile(x, offs, valid, lane_max, lane_min, n_pinf, n_nan, best_key, best_idx):
    finite = valid & (tl.abs(x) < float("inf"))
    lane_max = tl.maximum(lane_max, tl.where(finite, x, -float("inf")))
    lane_min = tl.minimum(lane_min, tl.where(finite, x, float("inf")))
    n_pinf += (valid & (x == float("inf"))).to(tl.int32)
    n_nan += (valid & (x != x)).to(tl.int32)
    key = order_key(x)
    better = valid & ((key > best_key) | ((key == best_key) & (offs < best_idx)))
    best_key = tl.where(better, key, best_key)
    best_idx = tl.where(better, offs, best_idx)
    return lane_max, lane_min, n_pinf, n_nan, best_key, best_idx


@triton.jit
def _load4(row_ptr, start, V, BLOCK: tl.constexpr):
    """Four consecutive tiles from ``start``, loaded before any is used (four loads in flight
    per thread: one program per row is bound by memory latency otherwise). Padding is NaN."""
    o0 = start + tl.arange(0, BLOCK)
    o1 = o0 + BLOCK
    o2 = o1 + BLOCK
    o3 = o2 + BLOCK
    x0 = tl.load(row_ptr + o0, mask=o0 < V, other=float("nan")).to(tl.float32)
    x1 = tl.load(row_ptr + o1, mask=o1 < V, other=float("nan")).to(tl.float32)
    x2 = tl.load(row_ptr + o2, mask=o2 < V, other=float("nan")).to(tl.float32)
    x3 = tl.load(row_ptr + o3, mask=o3 < V, other=float("nan")).to(tl.float32)
    return x0, x1, x2, x3, o0, o1, o2, o3


@triton.jit
def _first_pass(row_ptr, V, BLOCK: tl.constexpr):
    """One read: the largest and smallest finite value, the number of +inf and of NaN entries,
    and the first entry of the order (largest key, lowest index; an all-NaN row gives 0)."""
    lane_max = tl.full([BLOCK], -float("inf"), tl.float32)
    lane_min = tl.full([BLOCK], float("inf"), tl.float32)
    n_pinf = tl.zeros([BLOCK], tl.int32)
    n_nan = tl.zeros([BLOCK], tl.int32)
    best_key = tl.full([BLOCK], KEY_NAN, tl.int32)
    best_idx = tl.full([BLOCK], KEY_MAX, tl.int32)
    for start in range(0, V, 4 * BLOCK):
        x0, x1, x2, x3, o0, o1, o2, o3 = _load4(row_ptr, start, V, BLOCK)
        lane_max, lane_min, n_pinf, n_nan, best_key, best_idx = _first_tile(
            x0, o0, o0 < V, lane_max, lane_min, n_pinf, n_nan, best_key, best_idx)
        lane_max, lane_min, n_pinf, n_nan, best_key, best_idx = _first_tile(
            x1, o1, o1 < V, lane_max, lane_min, n_pinf, n_nan, best_key, best_idx)
        lane_max, lane_min, n_pinf, n_nan, best_key, best_idx = _first_tile(
            x2, o2, o2 < V, lane_max, lane_min, n_pinf, n_nan, best_key, best_idx)
        lane_max, lane_min, n_pinf, n_nan, best_key, best_idx = _first_tile(
            x3, o3, o3 < V, lane_max, lane_min, n_pinf, n_nan, best_key, best_idx)
    top_key = tl.max(best_key, axis=0)
    first = tl.min(tl.where(best_key == top_key, best_idx, KEY_MAX), axis=0)
    return (tl.max(lane_max, axis=0), tl.min(lane_min, axis=0), tl.sum(n_pinf, axis=0),
            tl.sum(n_nan, axis=0), top_key, first)


@triton.jit
def _pivots(lo, hi, v_floor, NP: tl.constexpr):
    """NP pivots (int64 keys) in [lo, hi): lane 0 is lo, the next NP - 1 - NP // 4 even in value
    between the interval's lowest value (at least v_floor) and its highest, the last NP // 4 even
    in key (so every round shrinks the interval at least NP // 4 + 1-fold)."""
    lanes = tl.arange(0, NP)
    NK: tl.constexpr = NP // 4
    NV: tl.constexpr = NP - 1 - NK
    kpiv = lo + ((hi - lo) * (lanes - NV).to(tl.int64)) // (NK + 1)
    v_lo = tl.maximum(key_to_value(tl.maximum(lo + 1, -2139095040).to(tl.int32)), v_floor)
    v_hi = key_to_value(hi.to(tl.int32))
    use_v = (tl.abs(v_lo) < float("inf")) & (tl.abs(v_hi) < float("inf")) & (v_hi > v_lo)
    frac = lanes.to(tl.float32) / (NV + 1)
    vpiv = order_key(v_lo + (v_hi - v_lo) * frac).to(tl.int64)
    vpiv = tl.where(use_v, vpiv, lo)
    piv = tl.where(lanes > NV, kpiv, tl.where(lanes == 0, lo, vpiv))
    return tl.minimum(tl.maximum(piv, lo), hi - 1)


@triton.jit
def _round_tile(x, piv32, lo32, hi32, row_max, inv_t, inf_mode, lane_counts, lane_mass,
                key_min, key_max):
    key = order_key(x)
    w = _weight(x, row_max, inv_t, inf_mode)
    above = key[:, None] > piv32[None, :]  # NaN (and the padding) never above a pivot
    lane_counts += above.to(tl.int32)
    lane_mass += tl.where(above, w[:, None], 0.0)
    inside = (key > lo32) & (key <= hi32)
    key_min = tl.minimum(key_min, tl.where(inside, key, KEY_MAX))
    key_max = tl.maximum(key_max, tl.where(inside, key, KEY_NAN))
    return lane_counts, lane_mass, key_min, key_max


@triton.jit
def _round(row_ptr, V, piv, lo, hi, row_max, inv_t, inf_mode, NP: tl.constexpr,
           BLOCK: tl.constexpr, FOLD: tl.constexpr):
    """One read: count and mass (float64) above each pivot, and the lowest and highest key
    inside (lo, hi]. Each lane accumulates its own entries (float32 over FOLD tiles, then folded
    into float64), so the threads synchronise once per FOLD tiles, not per tile; tiles are
    loaded four at a time (FOLD is a multiple of 4)."""
    lane_counts = tl.zeros([BLOCK, NP], dtype=tl.int32)
    masses = tl.zeros([NP], dtype=tl.float64)
    key_min = tl.full([BLOCK], KEY_MAX, tl.int32)
    key_max = tl.full([BLOCK], KEY_NAN, tl.int32)
    piv32 = piv.to(tl.int32)
    lo32 = lo.to(tl.int32)
    hi32 = hi.to(tl.int32)
    for chunk in range(0, V, BLOCK * FOLD):
        lane_mass = tl.zeros([BLOCK, NP], dtype=tl.float32)
        for group in tl.static_range(FOLD // 4):
            x0, x1, x2, x3, o0, o1, o2, o3 = _load4(row_ptr, chunk + group * 4 * BLOCK, V, BLOCK)
            lane_counts, lane_mass, key_min, key_max = _round_tile(
                x0, piv32, lo32, hi32, row_max, inv_t, inf_mode, lane_counts, lane_mass,
                key_min, key_max)
            lane_counts, lane_mass, key_min, key_max = _round_tile(
                x1, piv32, lo32, hi32, row_max, inv_t, inf_mode, lane_counts, lane_mass,
                key_min, key_max)
            lane_counts, lane_mass, key_min, key_max = _round_tile(
                x2, piv32, lo32, hi32, row_max, inv_t, inf_mode, lane_counts, lane_mass,
                key_min, key_max)
            lane_counts, lane_mass, key_min, key_max = _round_tile(
                x3, piv32, lo32, hi32, row_max, inv_t, inf_mode, lane_counts, lane_mass,
                key_min, key_max)
        masses += tl.sum(lane_mass, axis=0).to(tl.float64)
    return (tl.sum(lane_counts, axis=0), masses, tl.min(key_min, axis=0),
            tl.max(key_max, axis=0))


@triton.jit
def _gather_tile(x, offs, lo32, hi32, counter, cand_val, cand_idx, CAP: tl.constexpr):
    """Entries of one tile with key in (lo, hi] into the slots an atomic counter hands out
    (padding is NaN: never inside)."""
    key = order_key(x)
    inside = (key > lo32) & (key <= hi32)
    slot = tl.atomic_add(counter + offs * 0, 1, mask=inside, sem="relaxed")
    keep = inside & (slot < CAP)
    tl.store(cand_val + slot, x, mask=keep)
    tl.store(cand_idx + slot, offs, mask=keep)


@triton.jit
def _gather(row_ptr, V, lo, hi, skip, counter, cand_val, cand_idx, CAP: tl.constexpr,
            BLOCK: tl.constexpr):
    """One read: the entries with key in (lo, hi] into cand_val (float32) / cand_idx (int32).

    skip == 0 (all of them, at most CAP): in any order, each taking a slot from an atomic counter
    (the caller sorts them, so the order does not matter); skip > 0 (one value's copies): in
    index order, from the skip-th on, at most CAP."""
    lo32 = lo.to(tl.int32)
    hi32 = hi.to(tl.int32)
    if skip == 0:
        tl.store(counter, 0)
        tl.debug_barrier()
        for start in range(0, V, 4 * BLOCK):
            x0, x1, x2, x3, o0, o1, o2, o3 = _load4(row_ptr, start, V, BLOCK)
            _gather_tile(x0, o0, lo32, hi32, counter, cand_val, cand_idx, CAP)
            _gather_tile(x1, o1, lo32, hi32, counter, cand_val, cand_idx, CAP)
            _gather_tile(x2, o2, lo32, hi32, counter, cand_val, cand_idx, CAP)
            _gather_tile(x3, o3, lo32, hi32, counter, cand_val, cand_idx, CAP)
    else:
        seen = skip * 0
        for start in range(0, V, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            valid = offs < V
            x = tl.load(row_ptr + offs, mask=valid, other=float("nan")).to(tl.float32)
            key = order_key(x)
            inside = valid & (key > lo32) & (key <= hi32)
            slot = seen + tl.cumsum(inside.to(tl.int32), axis=0) - 1 - skip
            keep = inside & (slot >= 0) & (slot < CAP)
            tl.store(cand_val + slot, x, mask=keep)
            tl.store(cand_idx + slot, offs, mask=keep)
            seen += tl.sum(inside.to(tl.int32), axis=0)


@triton.jit
def _narrow(piv, counts, masses, tau, lo, hi, cnt_lo, cnt_hi, mass_hi, STRICT: tl.constexpr):
    """The sub-interval of (lo, hi] between the pivots that bracket the crossing (mass above a
    pivot reaches the target: the crossing lies above it), with the counts above its ends and
    the mass above its upper end."""
    if STRICT:
        holds = masses > tau
    else:
        holds = masses >= tau
    holds = holds | (piv <= lo)
    new_hi = tl.min(tl.where(holds, hi, piv), axis=0)
    holds = holds & (piv < new_hi)
    new_lo = tl.max(tl.where(holds, piv, lo), axis=0)
    at_hi = (piv == new_hi) & (new_hi < hi)
    found_hi = tl.max(at_hi.to(tl.int32), axis=0) > 0
    cnt_hi = tl.where(found_hi, tl.max(tl.where(at_hi, counts, -1), axis=0), cnt_hi)
    mass_hi = tl.where(found_hi, tl.max(tl.where(at_hi, masses, -1.0), axis=0), mass_hi)
    at_lo = (piv == new_lo) & (new_lo > lo)
    cnt_lo = tl.where(tl.max(at_lo.to(tl.int32), axis=0) > 0,
                      tl.max(tl.where(at_lo, counts, -1), axis=0), cnt_lo)
    return new_lo, new_hi, cnt_lo, cnt_hi, mass_hi


@triton.jit
def mass_search(row_ptr, V, row_max, inv_t, inf_mode, n_nan, top_key, v_floor, frac, tau,
                counter, cand_val, cand_idx, table_piv, table_cnt, table_mass, table_rounds,
                STRICT: tl.constexpr, NP: tl.constexpr, CAP: tl.constexpr, BLOCK: tl.constexpr,
                FOLD: tl.constexpr, MAX_ROUNDS: tl.constexpr, TABLE_ROUNDS: tl.constexpr):
    """The first entry of the row's order whose cumulative mass c_j reaches the target (c_j >=
    target; STRICT: c_j > target), among entries of positive weight.

    The target is ``tau`` if tau >= 0, else ``frac`` x the row's mass (as this search sums it).
    The first ``table_rounds`` (<= TABLE_ROUNDS) rounds of an earlier search over the same row
    (their pivots, counts and masses in table_*) narrow the start; this search's first
    TABLE_ROUNDS rounds are written there.
    Returns the entry's rank key, index (-1 if none was found), c_j, its weight, the row's mass
    (-1 when tau was given and no round measured it) and the number of rounds (reads) used.
    """
    lo = (n_nan * 0).to(tl.int64) + KEY_NAN  # NaN entries (weight 0, last) stay outside
    hi = top_key.to(tl.int64)
    cnt_lo = V - n_nan
    cnt_hi = n_nan * 0
    mass_hi = (n_nan * 0).to(tl.float64)
    total = mass_hi - 1.0
    if table_rounds > 0:  # an earlier search's pivots: facts about the same row
        slots = tl.arange(0, TABLE_ROUNDS * NP)
        known = slots < table_rounds * NP
        t_piv = tl.load(table_piv + slots, mask=known, other=KEY_NAN)
        t_cnt = tl.load(table_cnt + slots, mask=known, other=0)
        t_mass = tl.load(table_mass + slots, mask=known, other=0.0)
        lo, hi, cnt_lo, cnt_hi, mass_hi = _narrow(t_piv, t_cnt, t_mass, tau, lo, hi, cnt_lo,
                                                  cnt_hi, mass_hi, STRICT)
    from_start = lo == KEY_NAN
    n_in = cnt_lo - cnt_hi
    rounds = n_nan * 0
    lanes = tl.arange(0, NP)
    while (n_in > CAP) & (hi - lo > 1) & (rounds < MAX_ROUNDS):
        piv = _pivots(lo, hi, v_floor, NP)
        counts, masses, key_min, key_max = _round(row_ptr, V, piv, lo, hi, row_max, inv_t,
                                                  inf_mode, NP, BLOCK, FOLD)
        if rounds < TABLE_ROUNDS:
            tl.store(table_piv + rounds * NP + lanes, piv)
            tl.store(table_cnt + rounds * NP + lanes, counts)
            tl.store(table_mass + rounds * NP + lanes, masses)
        if (rounds == 0) & from_start:  # lane 0 is the initial lo: the row's mass
            total = tl.sum(tl.where(lanes == 0, masses, 0.0), axis=0)
            if tau < 0.0:
                tau = frac * total
        new_lo, new_hi, cnt_lo, cnt_hi, mass_hi = _narrow(piv, counts, masses, tau, lo, hi,
                                                          cnt_lo, cnt_hi, mass_hi, STRICT)
        # snap onto the keys that occur in the old interval (no entry lies between)
        lo = tl.maximum(new_lo, key_min.to(tl.int64) - 1)
        hi = tl.minimum(new_hi, key_max.to(tl.int64))
        n_in = cnt_lo - cnt_hi
        rounds += 1
    # one value left with more copies than CAP: the crossing copy from the equal weights
    target = tau
    w_one = _weight(key_to_value(hi.to(tl.int32)), row_max, inv_t, inf_mode).to(tl.float64)
    skip = n_in * 0
    if (n_in > CAP) & (hi - lo == 1) & (tau >= 0.0):
        need = (target - mass_hi) / tl.where(w_one > 0.0, w_one, 1.0)
        if STRICT:
            copies = tl.floor(need)
        else:
            copies = tl.ceil(need) - 1.0
        copies = tl.minimum(tl.maximum(copies, 0.0), (n_in - 1).to(tl.float64))
        skip = tl.where(w_one > 0.0, copies.to(tl.int32), 0)
    _gather(row_ptr, V, lo, hi, skip, counter, cand_val, cand_idx, CAP, BLOCK)
    tl.debug_barrier()  # the gathered entries are visible to every thread
    n = tl.minimum(n_in - skip, CAP)
    j, valid, s_key, s_idx, s_w, cum = _sorted_gathered(
        cand_val, cand_idx, n, mass_hi + skip.to(tl.float64) * w_one, row_max, inv_t, inf_mode,
        CAP)
    if total < 0.0:
        if (rounds == 0) & from_start:  # no round ran: everything (but NaN) was gathered
            total = tl.max(tl.where(valid, cum, 0.0), axis=0)
    if tau < 0.0:
        target = frac * total
    if STRICT:
        before = valid & (cum <= target)
    else:
        before = valid & (cum < target)
    pos = tl.sum(before.to(tl.int32), axis=0)
    last_positive = tl.max(tl.where(valid & (s_w > 0.0), j, -1), axis=0)
    pos = tl.minimum(pos, last_positive)
    key_r, idx_r, cum_r, w_r = _entry_at(pos, j, s_key, s_idx, s_w, cum)
    tl.debug_barrier()  # the scratch may be reused by the next search
    return key_r, idx_r, cum_r, w_r, total, rounds


@triton.jit
def _sorted_gathered(cand_val, cand_idx, n, base, row_max, inv_t, inf_mode, CAP: tl.constexpr):
    """The n gathered entries (any order) sorted by the row's order in registers (one int64 key
    per entry: rank key x 2^32 + (2^32 - 1 - index)), their weights and cumulative masses from
    ``base`` (the mass of every entry before them)."""
    j = tl.arange(0, CAP)
    valid = j < n
    gidx = tl.load(cand_idx + j, mask=valid, other=0)
    gkey = order_key(tl.load(cand_val + j, mask=valid, other=0.0))
    packed = gkey.to(tl.int64) * 4294967296 + (4294967295 - gidx.to(tl.int64))
    packed = tl.where(valid, packed, PAD_KEY)
    ordered = tl.sort(packed, descending=True)
    s_idx = (4294967295 - (ordered & 4294967295)).to(tl.int32)
    s_key = (ordered >> 32).to(tl.int32)
    s_w = tl.where(valid, _weight(key_to_value(s_key), row_max, inv_t, inf_mode), 0.0)
    cum = base + tl.cumsum(s_w.to(tl.float64), axis=0)
    return j, valid, s_key, s_idx, s_w, cum


@triton.jit
def _entry_at(pos, j, s_key, s_idx, s_w, cum):
    """Rank key, index (-1 for pos < 0), cumulative mass and weight of sorted entry ``pos``."""
    hit = j == pos
    key_r = tl.sum(tl.where(hit, s_key, 0), axis=0)
    idx_r = tl.where(pos >= 0, tl.sum(tl.where(hit, s_idx, 0), axis=0), -1)
    cum_r = tl.sum(tl.where(hit, cum, 0.0), axis=0)
    w_r = tl.sum(tl.where(hit, s_w, 0.0), axis=0)
    return key_r, idx_r, cum_r, w_r


# ---- the histogram band: most rows' searches in four reads (first pass, coarse histogram,
# ---- fine histogram, band) and small sorts

@triton.jit
def _bin_of(x, hist_floor, scale, NB: tl.constexpr):
    """Histogram bin of each value: bins 1 .. NB - 1 split [hist_floor, hist_floor + (NB - 1) /
    scale] evenly (values above go to NB - 1); bin 0 holds everything below hist_floor (and
    -inf, NaN, the padding). Monotone in x (a float subtraction, a product with a positive
    scale, truncation), so a higher bin means a larger value; every pass computes it the same
    way."""
    in_range = x >= hist_floor
    pos = tl.minimum((tl.where(in_range, x, hist_floor) - hist_floor) * scale, NB - 2.0)
    return tl.where(in_range, pos.to(tl.int32) + 1, 0)


@triton.jit
def _fine_bin(b1, x, win_lo, win_hi, floor2, scale2, NB2: tl.constexpr):
    """Fine bin of the entries whose coarse bin b1 lies in the window [win_lo, win_hi]: 0 ..
    NB2 - 2, monotone in x among them; NB2 - 1 for every other entry."""
    inside = (b1 >= win_lo) & (b1 <= win_hi)
    return tl.where(inside, _bin_of(x, floor2, scale2, NB2 - 1), NB2 - 1)


@triton.jit
def _coarse_pass(row_ptr, V, row_max, inv_t, inf_mode, floor1, scale1, zero64,
                 NB1: tl.constexpr, HBLOCK: tl.constexpr, HMASK: tl.constexpr):
    """One read: the count of entries in each coarse bin (int32, exact) and the row's mass Z
    (float32 weights summed per tile, float64 across tiles)."""
    counts = tl.zeros([NB1], dtype=tl.int32)
    total = zero64
    for start in range(0, V, HBLOCK):
        offs = start + tl.arange(0, HBLOCK)
        x = tl.load(row_ptr + offs, mask=offs < V, other=float("nan")).to(tl.float32)
        b1 = _bin_of(x, floor1, scale1, NB1)
        if HMASK:  # bin 0 (below the range) is never used: not counted
            counts += tl.histogram(b1, NB1, mask=b1 >= 1)
        else:
            counts += tl.histogram(b1, NB1)
        total += tl.sum(_weight(x, row_max, inv_t, inf_mode), axis=0).to(tl.float64)
    return counts, total


@triton.jit
def _fine_pass(row_ptr, V, row_max, inv_t, inf_mode, floor1, scale1, win_lo_p, win_hi_p,
               floor2_p, scale2_p, win_lo_u, win_hi_u, floor2_u, scale2_u, zero64,
               NB1: tl.constexpr, NB2: tl.constexpr, HBLOCK: tl.constexpr,
               HMASK: tl.constexpr):
    """One read for both searches: the fine-bin counts inside each search's coarse window and
    the exact mass of the entries above each window."""
    counts_p = tl.zeros([NB2], dtype=tl.int32)
    counts_u = tl.zeros([NB2], dtype=tl.int32)
    above_p = zero64
    above_u = zero64
    for start in range(0, V, HBLOCK):
        offs = start + tl.arange(0, HBLOCK)
        x = tl.load(row_ptr + offs, mask=offs < V, other=float("nan")).to(tl.float32)
        b1 = _bin_of(x, floor1, scale1, NB1)
        w = _weight(x, row_max, inv_t, inf_mode)
        b2_p = _fine_bin(b1, x, win_lo_p, win_hi_p, floor2_p, scale2_p, NB2)
        b2_u = _fine_bin(b1, x, win_lo_u, win_hi_u, floor2_u, scale2_u, NB2)
        if HMASK:  # only the windows' entries are counted (the others, most of the row, all
            # fall in bin NB2 - 1)
            counts_p += tl.histogram(b2_p, NB2, mask=b2_p < NB2 - 1)
            counts_u += tl.histogram(b2_u, NB2, mask=b2_u < NB2 - 1)
        else:
            counts_p += tl.histogram(b2_p, NB2)
            counts_u += tl.histogram(b2_u, NB2)
        above_p += tl.sum(tl.where(b1 > win_hi_p, w, 0.0), axis=0).to(tl.float64)
        above_u += tl.sum(tl.where(b1 > win_hi_u, w, 0.0), axis=0).to(tl.float64)
    return counts_p, counts_u, above_p, above_u


@triton.jit
def _estimated_above(counts, base, floor, scale, row_max, inv_t, first_bin, last_bin,
                     NB: tl.constexpr):
    """Estimated mass of the entries in bins >= b among bins first_bin .. last_bin (each entry
    weighed at its bin's centre, plus ``base`` for everything above last_bin: only where to
    look, never the answer) and the estimated mass of those bins."""
    bins = tl.arange(0, NB)
    centre = floor + (bins.to(tl.float32) - 0.5) / tl.where(scale > 0.0, scale, 1.0)
    centre = tl.where(scale > 0.0, tl.minimum(centre, row_max), row_max)
    used = (bins >= first_bin) & (bins <= last_bin)
    est = tl.where(used, counts.to(tl.float32) * tl.exp((centre - row_max) * inv_t), 0.0)
    est_total = tl.sum(est, axis=0)
    return base + est_total - tl.cumsum(est, axis=0) + est, est_total


@triton.jit
def _crossing_bin(est_above, target_est, first_bin, last_bin, NB: tl.constexpr):
    """The highest bin of first_bin .. last_bin whose estimated cumulative mass reaches the
    target (first_bin - 1 if none does)."""
    bins = tl.arange(0, NB)
    reach = (est_above >= target_est) & (bins >= first_bin) & (bins <= last_bin)
    return tl.max(tl.where(reach, bins, first_bin - 1), axis=0)


@triton.jit
def _widen(counts, b_hat, first_bin, last_bin, LIMIT: tl.constexpr, NB: tl.constexpr,
           STEPS: tl.constexpr):
    """Bins [band_lo, band_hi] around b_hat, widened evenly on both sides (by bisection over the
    half-width) while at most LIMIT entries are inside; empty (band_lo > band_hi) when b_hat is
    outside first_bin .. last_bin or holds more than LIMIT entries alone."""
    bins = tl.arange(0, NB)
    ok_width = b_hat * 0  # half-width + 1: 0 = empty, always fits
    bad_width = ok_width + NB + 1
    for _ in tl.static_range(STEPS):
        mid = (ok_width + bad_width) // 2
        inside = (tl.abs(bins - b_hat) < mid) & (bins >= first_bin) & (bins <= last_bin)
        fits = tl.sum(tl.where(inside, counts, 0), axis=0) <= LIMIT
        ok_width = tl.where(fits, mid, ok_width)
        bad_width = tl.where(fits, bad_width, mid)
    usable = (ok_width > 0) & (b_hat >= first_bin) & (b_hat <= last_bin)
    band_lo = tl.where(usable, tl.maximum(b_hat - ok_width + 1, first_bin), last_bin + 1)
    band_hi = tl.where(usable, tl.minimum(b_hat + ok_width - 1, last_bin), last_bin)
    return band_lo, band_hi


@triton.jit
def _band_bins(counts, b_hat, NB2: tl.constexpr, SMALL: tl.constexpr, CAP: tl.constexpr,
               STEPS: tl.constexpr):
    """A search's fine bins: widened to at most SMALL entries (a cheap sort), or, when the
    crossing's bin alone holds more (ties: 16-bit values repeat hundreds of times), at most
    CAP."""
    lo, hi = _widen(counts, b_hat, 0, NB2 - 2, SMALL, NB2, STEPS)
    if lo > hi:
        lo, hi = _widen(counts, b_hat, 0, NB2 - 2, CAP, NB2, STEPS)
    return lo, hi


@triton.jit
def _window(est_above1, target_est, floor1, scale1, inv_t, NB1: tl.constexpr,
            NB2: tl.constexpr):
    """The coarse window of one search: the bins whose estimated cumulative mass, give or take
    its error, can reach the target, and one more on each side (bins 1 .. NB1 - 1); and the
    fine bins' floor and scale over it. Weighing a bin's entries at its centre misses their
    mass by about (width / t)^2 / 24 (relative: the first-order terms cancel over the bin), so
    the window allows that plus 1e-3 (a larger allowance widens the window for p close to 1
    until the fine bins overflow; a miss costs the pivot rounds, never exactness)."""
    step = 1.0 / tl.where(scale1 > 0.0, scale1, 1.0)
    slack = tl.minimum((step * inv_t) * (step * inv_t) / 24.0 + 1e-3, 0.5)
    b_max = _crossing_bin(est_above1, target_est / (1.0 + slack), 1, NB1 - 1, NB1)
    b_min = _crossing_bin(est_above1, target_est / (1.0 - slack), 1, NB1 - 1, NB1)
    win_lo = tl.maximum(b_min - 1, 1)
    win_hi = tl.where(b_max >= 1, tl.minimum(b_max + 1, NB1 - 1), 0)  # b_max 0: empty
    floor2 = floor1 + (win_lo - 1).to(tl.float32) * step
    width = (win_hi - win_lo + 1).to(tl.float32) * step
    scale2 = tl.where(scale1 > 0.0, (NB2 - 2.0) / tl.where(width > 0.0, width, 1.0), 0.0)
    return win_lo, win_hi, floor2, scale2


@triton.jit
def _band_tile(x, offs, floor1, scale1, win_lo, win_hi, floor2, scale2, band_lo, band_hi,
               row_max, inv_t, inf_mode, counter, cand_val, cand_idx, lane_above,
               CAP: tl.constexpr, NB1: tl.constexpr, NB2: tl.constexpr):
    """One tile of the band pass for one band: the weights of the entries above the band, and
    the band's entries into slots an atomic counter hands out (the caller sorts them)."""
    b1 = _bin_of(x, floor1, scale1, NB1)
    b2 = _fine_bin(b1, x, win_lo, win_hi, floor2, scale2, NB2)
    above = (b1 > win_hi) | ((b2 > band_hi) & (b2 < NB2 - 1))
    lane_above += tl.where(above, _weight(x, row_max, inv_t, inf_mode), 0.0)
    inside = (b2 >= band_lo) & (b2 <= band_hi)
    slot = tl.atomic_add(counter + offs * 0, 1, mask=inside, sem="relaxed")
    keep = inside & (slot < CAP)
    tl.store(cand_val + slot, x, mask=keep)
    tl.store(cand_idx + slot, offs, mask=keep)
    return lane_above


@triton.jit
def _band_pass(row_ptr, V, row_max, inv_t, inf_mode, floor1, scale1,
               win_lo_p, win_hi_p, floor2_p, scale2_p, lo_p, hi_p,
               win_lo_u, win_hi_u, floor2_u, scale2_u, lo_u, hi_u,
               counter, cand_val, cand_idx, zero64, CAP: tl.constexpr, NB1: tl.constexpr,
               NB2: tl.constexpr, BLOCK: tl.constexpr):
    """One read for both searches' bands: the mass above each band (float64 across tiles) and
    each band's entries (the top-p band into cand_*[0:CAP], the draw's into cand_*[CAP:2 CAP]).
    Returns the two masses and the two entry counts (as the counters saw them)."""
    tl.store(counter + tl.arange(0, 2), tl.zeros([2], dtype=tl.int32))
    tl.debug_barrier()
    above_p = zero64
    above_u = zero64
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + offs, mask=offs < V, other=float("nan")).to(tl.float32)
        lane_p = _band_tile(x, offs, floor1, scale1, win_lo_p, win_hi_p, floor2_p, scale2_p,
                            lo_p, hi_p, row_max, inv_t, inf_mode, counter, cand_val, cand_idx,
                            tl.zeros([BLOCK], dtype=tl.float32), CAP, NB1, NB2)
        lane_u = _band_tile(x, offs, floor1, scale1, win_lo_u, win_hi_u, floor2_u, scale2_u,
                            lo_u, hi_u, row_max, inv_t, inf_mode, counter + 1, cand_val + CAP,
                            cand_idx + CAP, tl.zeros([BLOCK], dtype=tl.float32), CAP, NB1, NB2)
        above_p += tl.sum(lane_p, axis=0).to(tl.float64)
        above_u += tl.sum(lane_u, axis=0).to(tl.float64)
    tl.debug_barrier()  # the gathered entries and the counters are visible to every thread
    return above_p, above_u, tl.load(counter), tl.load(counter + 1)


@triton.jit
def _pick(cand_val, cand_idx, n, base, target, row_max, inv_t, inf_mode, STRICT: tl.constexpr,
          SORT: tl.constexpr):
    j, valid, s_key, s_idx, s_w, cum = _sorted_gathered(cand_val, cand_idx, n, base, row_max,
                                                        inv_t, inf_mode, SORT)
    if STRICT:
        before = valid & (cum <= target)
    else:
        before = valid & (cum < target)
    pos = tl.sum(before.to(tl.int32), axis=0)
    key_r, idx_r, cum_r, w_r = _entry_at(pos, j, s_key, s_idx, s_w, cum)
    return pos, key_r, idx_r, cum_r, w_r


@triton.jit
def _band_search(cand_val, cand_idx, n, base, target, row_max, inv_t, inf_mode,
                 STRICT: tl.constexpr, CAP: tl.constexpr, SMALL: tl.constexpr):
    """The crossing (first entry with c_j >= target; STRICT: > target) if it lies among the n
    gathered band entries, whose predecessors weigh ``base`` (sorted in SMALL slots when they
    fit, else CAP). Returns found (int32 0/1: 0 when the crossing lies outside the band or the
    band overflowed), its rank key, index, c_j and weight."""
    n_in = tl.minimum(n, CAP)
    if n_in <= SMALL:
        pos, key_r, idx_r, cum_r, w_r = _pick(cand_val, cand_idx, n_in, base, target, row_max,
                                              inv_t, inf_mode, STRICT, SMALL)
    else:
        pos, key_r, idx_r, cum_r, w_r = _pick(cand_val, cand_idx, n_in, base, target, row_max,
                                              inv_t, inf_mode, STRICT, CAP)
    if STRICT:
        base_ok = base <= target
    else:
        base_ok = base < target
    found = base_ok & (pos < n_in) & (n <= CAP) & (w_r > 0.0)
    return found.to(tl.int32), key_r, idx_r, cum_r, w_r


@triton.jit
def _kept_mass64(row_ptr, V, row_max, t, inf_mode, key_p, idx_p, BLOCK: tl.constexpr):
    """One read: the float64 mass (weights exp((x - row_max) / t) in float64, as the reference)
    of the entries up to the kept prefix's last entry (rank key key_p, index idx_p)."""
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    m64 = tl.where(inf_mode, 0.0, row_max).to(tl.float64)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        valid = offs < V
        x = tl.load(row_ptr + offs, mask=valid, other=float("nan")).to(tl.float32)
        key = order_key(x)
        kept = (key > key_p) | ((key == key_p) & (offs <= idx_p))
        finite = kept & (tl.abs(x) < float("inf"))
        x64 = tl.where(finite, x, 0.0).to(tl.float64)
        w = tl.where(finite, tl.exp((x64 - m64) / t), 0.0)
        w = tl.where(inf_mode, tl.where(kept & (x == float("inf")), 1.0, 0.0).to(tl.float64), w)
        acc += w
    return tl.sum(acc, axis=0)


@triton.jit(do_not_specialize=["t_bits", "p_bits"])
def fused_topp_sample_kernel(
    x_ptr, p_ptr, u_ptr,
    V, stride_x, inv_t, t_bits, p_bits,
    counter_ptr, cand_val_ptr, cand_idx_ptr, table_piv_ptr, table_cnt_ptr, table_mass_ptr,
    token_ptr, logp_ptr, rounds_ptr, done_ptr,
    HAS_P: tl.constexpr, P_ARRAY: tl.constexpr, LOGPROB: tl.constexpr, NP: tl.constexpr,
    CAP: tl.constexpr, BLOCK: tl.constexpr, FOLD: tl.constexpr, MAX_ROUNDS: tl.constexpr,
    TABLE_ROUNDS: tl.constexpr, HIST: tl.constexpr, NB1: tl.constexpr, NB2: tl.constexpr,
    SMALL: tl.constexpr, HBLOCK: tl.constexpr, STEPS: tl.constexpr, ROUNDS: tl.constexpr,
    SKIP_DONE: tl.constexpr, PHASES: tl.constexpr = 9, HMASK: tl.constexpr = False,
):
    """One token per row, top-p (k off) at a scalar temperature, drawn with the row's uniform.

    x_ptr : (B, V) float32 / bfloat16 / float16 logits, unit stride along V
    p_ptr : (B,) floating when P_ARRAY, else the scalar p is ``p_bits`` (int64 bit pattern of a
        float64); HAS_P False: top-p off
    u_ptr : (B,) float32 uniforms in [0, 1); inv_t : 1 / temperature (float32, > 0); t_bits :
        the temperature as the int64 bit pattern of a float64 (LOGPROB only)
    counter_ptr : (B, 2) int32, cand_val_ptr / cand_idx_ptr : (B, 2 * CAP) float32 / int32, and
        table_piv_ptr / table_cnt_ptr / table_mass_ptr : (B, TABLE_ROUNDS * NP) int64 / int32 /
        float64: scratch (no zeroing needed)
    token_ptr : (B,) int64; logp_ptr : (B,) float32, written when LOGPROB (one more read: the
        kept mass in float64, and log w_token = (x - max) / t in float64); rounds_ptr : (B, 2)
        int32 diagnostics: the searches the histogram band answered, and the reads of the row
        the other (pivot-round) searches took; done_ptr : (B,) int32, 1 where this launch wrote
        the row's token (written unless SKIP_DONE)

    HIST (rows without +inf): after the first pass, one read counts the entries per coarse bin
    (NB1 bins over the range that can hold the crossings) and sums the row's mass Z; a second
    read counts, for each search (top-p, then the draw), the entries per fine bin (NB2) inside
    the coarse bins around its estimated crossing (``_window``), and the exact mass above them; the fine
    bins around each estimated crossing, widened to at most SMALL entries, are gathered in one
    more read with the exact mass above each band. A search whose crossing lies inside its band
    (checked exactly, after sorting the band) is done; the others take the pivot rounds
    (ROUNDS), or are left to a second launch (ROUNDS, not HIST, SKIP_DONE: rows whose done
    flag is set return at once), so the first launch carries no pivot-round code (measured:
    its registers slowed every row by ~40% at B = 1024).

    PHASES < 9 is an ablation for measuring (the token is then meaningless): 1 the first pass
    only, 2 + the coarse histogram, 3 + the fine one, 4 + the band pass, 5 + the bands' sorts,
    6 + pivot rounds. HMASK (an experiment, not yet measured on a GPU): the histograms skip the
    entries whose bin is never used (same counts in the used bins).
    """
    row = tl.program_id(0)
    row64 = (row * 0).to(tl.int64) + row
    skip = row * 0
    if SKIP_DONE:
        skip = tl.load(done_ptr + row64)
    if skip == 0:
        row_ptr = x_ptr + row64 * stride_x
        cand_val = cand_val_ptr + row64 * (2 * CAP)
        cand_idx = cand_idx_ptr + row64 * (2 * CAP)
        counter = counter_ptr + row64 * 2
        table_piv = table_piv_ptr + row64 * (TABLE_ROUNDS * NP)
        table_cnt = table_cnt_ptr + row64 * (TABLE_ROUNDS * NP)
        table_mass = table_mass_ptr + row64 * (TABLE_ROUNDS * NP)
        row_max, row_min, n_pinf, n_nan, top_key, first = _first_pass(row_ptr, V, BLOCK)
        v_hist = V  # the ablation's reads: 0 skips a pass (its loop runs no iteration)
        v_fine = V
        v_band = V
        if PHASES < 2:
            v_hist = 0
        if PHASES < 3:
            v_fine = 0
        if PHASES < 4:
            v_band = 0
        inf_mode = n_pinf > 0
        defined = inf_mode | (row_max > -float("inf"))
        v_floor = tl.maximum(row_min, row_max - 104.0 / inv_t)
        if HAS_P:
            p = _row_param(p_ptr, p_bits, row64, P_ARRAY)
        else:
            p = (n_nan * 0).to(tl.float64) + 1.0
        u = tl.load(u_ptr + row64).to(tl.float64)
        p_on = (p < 1.0) & (p == p)
        token = first
        logp = (n_nan * 0).to(tl.float32)
        rounds = n_nan * 0
        hits = n_nan * 0
        done = n_nan * 0 + 1
        if defined & ((p > 0.0) | (p != p)):  # p <= 0 keeps (and draws) the first entry alone
            key_p = top_key * 0 + KEY_NAN
            idx_p = V
            w_p = (n_nan * 0).to(tl.float32) + 1.0
            kept = (n_nan * 0).to(tl.float64) - 1.0  # not from p: p may be NaN (top-p off)
            found_p = n_nan * 0
            found_u = n_nan * 0
            key_u = key_p
            idx_u = idx_p
            w_u = w_p
            above_u = kept
            n_u = n_nan * 0
            total = kept
            if HIST & (n_pinf == 0):
                # the crossings lie where the mass below is under (1 - q) Z: within
                # ln(V / (1 - q)) / t of the max, q = p (the draw's crossing lies above p's) or u
                q = tl.where(p_on, p, u)
                reach = tl.log((n_nan * 0 + V).to(tl.float64) / tl.maximum(1.0 - q, 1e-30)) + 1.0
                floor1 = tl.maximum(row_min, row_max - tl.minimum(reach, 100.0).to(tl.float32)
                                    / inv_t)
                span = row_max - floor1
                scale1 = tl.where(span > 0.0, (NB1 - 1.0) / tl.where(span > 0.0, span, 1.0), 0.0)
                counts1, total = _coarse_pass(row_ptr, v_hist, row_max, inv_t, inf_mode, floor1,
                                              scale1, kept * 0.0, NB1, HBLOCK, HMASK)
                est1, est_total = _estimated_above(counts1, kept.to(tl.float32) * 0.0, floor1,
                                                   scale1, row_max, inv_t, 1, NB1 - 1, NB1)
                # targets in the estimate's units (the draw's: u x the top-p target)
                tgt_p = (p * total).to(tl.float32)
                tgt_u = tl.where(p_on, u * p * total, u * total).to(tl.float32)
                win_lo_p, win_hi_p, floor2_p, scale2_p = _window(est1, tgt_p, floor1, scale1, inv_t,
                                                                 NB1, NB2)
                win_lo_u, win_hi_u, floor2_u, scale2_u = _window(est1, tgt_u, floor1, scale1, inv_t,
                                                                 NB1, NB2)
                counts_p, counts_u, win_above_p, win_above_u = _fine_pass(
                    row_ptr, v_fine, row_max, inv_t, inf_mode, floor1, scale1, win_lo_p, win_hi_p,
                    floor2_p, scale2_p, win_lo_u, win_hi_u, floor2_u, scale2_u, kept * 0.0, NB1, NB2,
                    HBLOCK, HMASK)
                est_p, _ = _estimated_above(counts_p, win_above_p.to(tl.float32), floor2_p,
                                            scale2_p, row_max, inv_t, 0, NB2 - 2, NB2)
                est_u, _ = _estimated_above(counts_u, win_above_u.to(tl.float32), floor2_u,
                                            scale2_u, row_max, inv_t, 0, NB2 - 2, NB2)
                lo_p, hi_p = _band_bins(counts_p, _crossing_bin(est_p, tgt_p, 0, NB2 - 2, NB2),
                                        NB2, SMALL, CAP, STEPS)
                lo_u, hi_u = _band_bins(counts_u, _crossing_bin(est_u, tgt_u, 0, NB2 - 2, NB2),
                                        NB2, SMALL, CAP, STEPS)
                above_p, above_u, n_p, n_u = _band_pass(
                    row_ptr, v_band, row_max, inv_t, inf_mode, floor1, scale1,
                    win_lo_p, win_hi_p, floor2_p, scale2_p, lo_p, hi_p,
                    win_lo_u, win_hi_u, floor2_u, scale2_u, lo_u, hi_u,
                    counter, cand_val, cand_idx, kept * 0.0, CAP, NB1, NB2, BLOCK)
                # the ablation keeps every pass it runs (no result of theirs is dropped as unused)
                probe = lo_p + hi_p + lo_u + hi_u + n_p + n_u
                hits += tl.where((probe == -7) & (above_p + above_u == -7.0), 1, 0)
                if p_on & (PHASES >= 5):
                    found_p, key_p, idx_p, kept, w_p = _band_search(
                        cand_val, cand_idx, n_p, above_p, p * total, row_max, inv_t, inf_mode,
                        False, CAP, SMALL)
                hits += found_p
            if ROUNDS:
                if p_on & (found_p == 0) & (PHASES >= 6):
                    key_p, idx_p, kept, w_p, total_p, rounds_p = mass_search(
                        row_ptr, V, row_max, inv_t, inf_mode, n_nan, top_key, v_floor, p,
                        kept * 0.0 - 1.0, counter, cand_val, cand_idx, table_piv, table_cnt,
                        table_mass, rounds * 0, False, NP, CAP, BLOCK, FOLD, MAX_ROUNDS,
                        TABLE_ROUNDS)
                    rounds += rounds_p
            # a pivot-round search compares with its own sums (p or u times the row's mass as it
            # sums it); the draw after a top-p search aims at u times that search's kept mass
            tau_u = tl.where(p_on, u * kept, -1.0)
            if HIST & (n_pinf == 0) & (PHASES >= 5):
                found_u, key_u, idx_u, cum_u, w_u = _band_search(
                    cand_val + CAP, cand_idx + CAP, n_u, above_u, tl.where(p_on, tau_u, u * total),
                    row_max, inv_t, inf_mode, True, CAP, SMALL)
                hits += found_u
            if ROUNDS:
                if (found_u == 0) & (PHASES >= 6):
                    key_u, idx_u, cum_u, w_u, total_u, rounds_u = mass_search(
                        row_ptr, V, row_max, inv_t, inf_mode, n_nan, top_key, v_floor, u,
                        tau_u, counter, cand_val, cand_idx, table_piv, table_cnt, table_mass,
                        tl.minimum(rounds, TABLE_ROUNDS), True, NP, CAP, BLOCK, FOLD,
                        MAX_ROUNDS, TABLE_ROUNDS)
                    rounds += rounds_u
            else:  # the second launch answers the rows a band missed
                done = tl.where((found_u == 1) & (tl.where(p_on, found_p, 1) == 1), 1, 0)
            # a float32 rounding may step past the kept prefix (u close to 1): its last entry; no
            # entry found (rounding, top-p off): the first entry (weight 1) keeps the support
            past = (key_u < key_p) | ((key_u == key_p) & (idx_u > idx_p)) | (idx_u < 0) | (w_u <= 0.0)
            token = tl.where(past, tl.where(p_on, idx_p, first), idx_u)
            if LOGPROB & (done == 1):
                t = (t_bits + row64 * 0).to(tl.float64, bitcast=True)
                kept64 = _kept_mass64(row_ptr, V, row_max, t, inf_mode, key_p, idx_p, BLOCK)
                x_tok = tl.load(row_ptr + token).to(tl.float64)
                log_w = tl.where(inf_mode, 0.0, (x_tok - row_max.to(tl.float64)) / t)
                logp = (log_w - tl.log(tl.where(kept64 > 0.0, kept64, 1.0))).to(tl.float32)
        if done == 1:
            tl.store(token_ptr + row64, token.to(tl.int64))
            if LOGPROB:
                tl.store(logp_ptr + row64, logp)
        tl.store(rounds_ptr + row64 * 2, hits)
        tl.store(rounds_ptr + row64 * 2 + 1, rounds)
        if not SKIP_DONE:
            tl.store(done_ptr + row64, done)
