"""``@triton.jit`` kernel of the rejection draw of top-p (docs/sampling.md, "The rejection draw").
Imports triton only.

``reject_topp_sample_kernel``, grid (B,), one program per row, no scratch; top-p and min-p
(both keep a prefix of the rank order), top-k off. The draw needs no
top-p threshold: a first read gives the mass of every group of tiles (per lane an online max and
mass, reduced once per group: one read, not two), the token is drawn from the whole row by
inverse CDF in index order (the group by a cumulative sum over the groups' masses, the tile by
one over its tiles, the entry by one over the tile), and one more read sums the mass before the
drawn entry in the rank order, which decides whether top-p keeps it. If not, that read's group
masses (of the entries before it) are the next round's, and the next draw is made among those
entries. With min-p off each round keeps with probability >= p, so most rows take two reads;
with top-p and min-p off one read is all.

Masses are float32 weights exp((x - max) * inv_t), summed per lane in float32; the answer differs
from the float64 reference (:func:`qrita.reference.sampling.sample_topp_rejection`) only where a
draw's target or a top-p test lies within docs/sampling.md's margins.
"""

import triton
import triton.language as tl

from qrita.backends.triton.fused_sample import _row_param
from qrita.backends.triton.fused_topp import _weight
from qrita.backends.triton.primitives import KEY_NAN, key_to_value, order_key

__all__ = ["reject_topp_sample_kernel", "online_mass", "row_draw_params", "row_filters", "reject_check",
           "reject_rounds", "check_and_draw"]


@triton.jit
def _round_uniform(seed, offset, r):
    """u_r = (word_{r mod 4} >> 8) * 2^-24 of Philox(key = seed, counter = (offset lo, offset hi,
    0, r // 4)): :func:`qrita.reference.sampling.round_uniform` bit for bit."""
    lo = offset.to(tl.uint32)
    hi = (offset >> 32).to(tl.uint32)
    zero = lo * 0
    w0, w1, w2, w3 = tl.philox(seed, lo, hi, zero, zero + (r // 4).to(tl.uint32))
    j = r % 4
    word = tl.where(j == 0, w0, tl.where(j == 1, w1, tl.where(j == 2, w2, w3)))
    return (word.to(tl.uint32, bitcast=True) >> 8).to(tl.float32) * (1.0 / 16777216.0)


@triton.jit
def online_mass(x, lane_max, lane_mass, lane_inf, scale2):
    """One tile into per-lane online (max, mass relative to it, +inf count): one exponential per
    entry, exp(-|x - max| / t), which is the entry's weight or, when x grows the lane's max, the
    old mass's rescaling (0 against a lane max of -inf; NaN only where x is not finite: unused).
    ``scale2`` = log2(e) / t."""
    finite = tl.abs(x) < float("inf")
    xf = tl.where(finite, x, -float("inf"))
    grow = xf > lane_max
    d = tl.exp2(-tl.abs(xf - lane_max) * scale2)
    lane_mass = tl.where(grow, lane_mass * tl.where(lane_max > -float("inf"), d, 0.0) + 1.0,
                         lane_mass + tl.where(finite, d, 0.0))
    return tl.maximum(lane_max, xf), lane_mass, lane_inf + (x == float("inf")).to(tl.float32)


@triton.jit
def _row_stats(row_ptr, V, inv_t, BLOCK: tl.constexpr, GROUP: tl.constexpr,
               NS_P2: tl.constexpr):
    """One read: the mass of every group of GROUP tiles relative to the row's max (or its +inf
    count when the row has +inf), the row's max and whether it has +inf. Per lane an online max
    and mass with one exponential per entry (a larger entry rescales the lane's mass by the same
    exponential), reduced once per group: no reduction per tile."""
    lanes = tl.arange(0, BLOCK)
    groups = tl.arange(0, NS_P2)
    scale2 = inv_t * 1.4426950408889634  # exp(y * inv_t) = exp2(y * scale2)
    group_max = tl.full([NS_P2], -float("inf"), tl.float32)
    group_mass = tl.zeros([NS_P2], tl.float32)
    group_inf = tl.zeros([NS_P2], tl.float32)
    # past V: -inf, which weighs nothing (no mask on the entries)
    x_next = tl.load(row_ptr + lanes, mask=lanes < V, other=-float("inf"))
    for g in range(0, tl.cdiv(V, BLOCK * GROUP)):
        lane_max = tl.full([BLOCK], -float("inf"), tl.float32)
        lane_mass = tl.zeros([BLOCK], tl.float32)
        lane_inf = tl.zeros([BLOCK], tl.float32)
        for j in range(0, GROUP):
            # the next tile's load is issued before this one is used (one program per row: each
            # tile would otherwise wait for its own load)
            x = x_next.to(tl.float32)
            offs = (g * GROUP + j + 1) * BLOCK + lanes
            x_next = tl.load(row_ptr + offs, mask=offs < V, other=-float("inf"))
            lane_max, lane_mass, lane_inf = online_mass(x, lane_max, lane_mass, lane_inf, scale2)
        m = tl.max(lane_max, axis=0)
        m_ref = tl.where(m > -float("inf"), m, 0.0)
        here = groups == g
        group_max = tl.where(here, m, group_max)
        group_mass = tl.where(here, tl.sum(lane_mass * tl.exp2((lane_max - m_ref) * scale2),
                                           axis=0), group_mass)
        group_inf = tl.where(here, tl.sum(lane_inf, axis=0), group_inf)
    row_max = tl.max(group_max, axis=0)
    inf_mode = tl.sum(group_inf, axis=0) > 0.0
    row_ref = tl.where(row_max > -float("inf"), row_max, 0.0)
    masses = tl.where(inf_mode, group_inf, group_mass * tl.exp((group_max - row_ref) * inv_t))
    return masses, row_max, inf_mode


@triton.jit
def _first_of_order(row_ptr, V, BLOCK: tl.constexpr):
    """One read: the first entry of the order (largest key, lowest index; rows without mass)."""
    lanes = tl.arange(0, BLOCK)
    best_key = tl.full([BLOCK], KEY_NAN, tl.int32)
    best_idx = tl.full([BLOCK], 0, tl.int32) + V
    for i in range(0, tl.cdiv(V, BLOCK)):
        offs = i * BLOCK + lanes
        valid = offs < V
        key = order_key(tl.load(row_ptr + offs, mask=valid, other=0.0).to(tl.float32))
        # offsets grow: a lane's first entry, then a larger key (the first copy stays)
        better = valid & ((key > best_key) | (best_idx == V))
        best_key = tl.where(better, key, best_key)
        best_idx = tl.where(better, offs, best_idx)
    top = tl.max(best_key, axis=0)
    return tl.min(tl.where(best_key == top, best_idx, V), axis=0)


@triton.jit
def _live_weights(x, offs, row_max, inv_t, inf_mode, key_t, idx_t, RESTRICT: tl.constexpr):
    """Weights of a tile's live entries (loaded with -inf past V: weight 0): every entry, or with
    RESTRICT those before (key_t, idx_t) in the rank order (a larger key, or the same key at a
    lower index; t_r has weight > 0, so never -inf)."""
    w = _weight(x, row_max, inv_t, inf_mode)
    if RESTRICT:
        key = order_key(x)
        w = tl.where((key > key_t) | ((key == key_t) & (offs < idx_t)), w, 0.0)
    return w


@triton.jit
def _masses_before(row_ptr, V, row_max, inv_t, inf_mode, key_t, idx_t,
                   BLOCK: tl.constexpr, GROUP: tl.constexpr, NS_P2: tl.constexpr):
    """One read: per group of GROUP tiles, the mass of the entries before (key_t, idx_t) in the
    rank order (per-lane sums, one reduction per group)."""
    lanes = tl.arange(0, BLOCK)
    groups = tl.arange(0, NS_P2)
    masses = tl.zeros([NS_P2], tl.float32)
    x_next = tl.load(row_ptr + lanes, mask=lanes < V, other=-float("inf"))
    for g in range(0, tl.cdiv(V, BLOCK * GROUP)):
        lane_mass = tl.zeros([BLOCK], tl.float32)
        for j in range(0, GROUP):
            x = x_next.to(tl.float32)  # loaded one tile ahead, as in _row_stats
            offs = (g * GROUP + j) * BLOCK + lanes
            x_next = tl.load(row_ptr + offs + BLOCK, mask=offs + BLOCK < V,
                             other=-float("inf"))
            lane_mass += _live_weights(x, offs, row_max, inv_t, inf_mode, key_t, idx_t, True)
        masses = tl.where(groups == g, tl.sum(lane_mass, axis=0), masses)
    return masses


@triton.jit
def _crossing(masses, target, ids):
    """(i, target left inside i): the first i whose cumulative mass exceeds target; past the end
    (float32 rounding) the last i of positive mass."""
    cum = tl.cumsum(masses, axis=0)
    last = tl.max(tl.where(masses > 0.0, ids, -1), axis=0)
    i = tl.minimum(tl.sum((cum <= target).to(tl.int32), axis=0), last)
    return i, target - tl.sum(tl.where(ids < i, masses, 0.0), axis=0)


@triton.jit
def _draw(row_ptr, V, row_max, inv_t, inf_mode, masses, u, key_t, idx_t, RESTRICT: tl.constexpr,
          BLOCK: tl.constexpr, GROUP: tl.constexpr, NS_P2: tl.constexpr):
    """The entry (index order) where the cumulative mass over the live set (every entry, or with
    RESTRICT those before (key_t, idx_t) in the rank order) crosses u x its mass: the group from
    the groups' masses, the tile from its GROUP tiles' sums, the entry from a cumulative sum over
    that tile. Returns its index and order key."""
    lanes = tl.arange(0, BLOCK)
    group, target = _crossing(masses, u * tl.sum(masses, axis=0), tl.arange(0, NS_P2))
    tiles = tl.arange(0, GROUP)
    tile_mass = tl.zeros([GROUP], tl.float32)
    for j in range(0, GROUP):
        offs = (group * GROUP + j) * BLOCK + lanes
        x = tl.load(row_ptr + offs, mask=offs < V, other=-float("inf")).to(tl.float32)
        w = _live_weights(x, offs, row_max, inv_t, inf_mode, key_t, idx_t, RESTRICT)
        tile_mass = tl.where(tiles == j, tl.sum(w, axis=0), tile_mass)
    tile, target = _crossing(tile_mass, target, tiles)
    offs = (group * GROUP + tile) * BLOCK + lanes
    x = tl.load(row_ptr + offs, mask=offs < V, other=-float("inf")).to(tl.float32)
    w = _live_weights(x, offs, row_max, inv_t, inf_mode, key_t, idx_t, RESTRICT)
    lane, target = _crossing(w, target, lanes)
    x_t = tl.sum(tl.where(lanes == lane, x, 0.0), axis=0)
    return (group * GROUP + tile) * BLOCK + lane, order_key(x_t)


@triton.jit
def row_draw_params(seed_ptr, offset_ptr, inv_t_ptr, inv_t, seed_scalar, offset_scalar,
                    seed_stride, offset_stride, row64, SEED_MODE: tl.constexpr,
                    OFFSET_ARRAY: tl.constexpr, TEMP_ARRAY: tl.constexpr):
    """A row's Philox seed and offset (scalars, per-row arrays, or SEED_MODE 2: derived per row
    from ``seed_scalar`` as :mod:`qrita.backends.triton.philox` does), its 1 / temperature and
    whether it is greedy (TEMP_ARRAY: ``inv_t_ptr[row]`` not > 0; its inv_t is then 1)."""
    seed = row64 * 0 + seed_scalar
    if SEED_MODE == 1:
        seed = tl.load(seed_ptr + row64 * seed_stride)
    if SEED_MODE == 2:
        seed = seed + row64 * (-7046029254386353131)
    offset = row64 * 0 + offset_scalar
    if OFFSET_ARRAY:
        offset = tl.load(offset_ptr + row64 * offset_stride)
    greedy = row64 < 0
    if TEMP_ARRAY:
        inv_t = tl.load(inv_t_ptr + row64)
        greedy = ~(inv_t > 0.0)
        inv_t = tl.where(greedy, 1.0, inv_t)
    return seed, offset, inv_t, greedy


@triton.jit
def row_filters(p_ptr, min_p_ptr, p_bits, min_p_bits, total, row64, HAS_P: tl.constexpr,
                P_ARRAY: tl.constexpr, HAS_MIN_P: tl.constexpr, MIN_P_ARRAY: tl.constexpr):
    """(p_on, target, min_p_on, min_w): whether top-p is on (p < 1, not NaN) and its target
    p x total (float64), whether min-p is on (> 0, not NaN) and its weight floor (min_p, at
    most 1)."""
    if HAS_P:
        p = _row_param(p_ptr, p_bits, row64, P_ARRAY)
    else:
        p = (row64 * 0).to(tl.float64) + 1.0
    if HAS_MIN_P:
        min_p = _row_param(min_p_ptr, min_p_bits, row64, MIN_P_ARRAY)
    else:
        min_p = (row64 * 0).to(tl.float64)
    return (p < 1.0) & (p == p), p * total.to(tl.float64), min_p > 0.0, tl.minimum(min_p, 1.0)


@triton.jit
def reject_check(before, key_t, row_max, inv_t, inf_mode, p_on, target, min_p_on, min_w):
    """Whether the round's entry is rejected: the mass before it (float32) reaches p x Z, or its
    weight (relative to the row's max) is under min_p; never when nothing is before it (the first
    entry of the order is always kept)."""
    w_t = _weight(key_to_value(key_t), row_max, inv_t, inf_mode).to(tl.float64)
    drop_p = p_on & (before.to(tl.float64) >= target)
    drop_min_p = min_p_on & (w_t < min_w)
    return (drop_p | drop_min_p) & (before > 0.0)


@triton.jit
def reject_rounds(row_ptr, V, row_max, inv_t, inf_mode, key_t, idx_t, rounds, more, p_on,
                  target, min_p_on, min_w, seed, offset, BLOCK: tl.constexpr,
                  GROUP: tl.constexpr, NS_P2: tl.constexpr):
    """The rounds from a drawn entry (key_t, idx_t; ``rounds`` draws made), one program: while
    ``more``, one read sums the mass before it per group, the check decides, and a rejected
    entry's group masses are the next draw's. Returns (token, rounds)."""
    while more:
        masses = _masses_before(row_ptr, V, row_max, inv_t, inf_mode, key_t, idx_t, BLOCK,
                                GROUP, NS_P2)
        more, idx_t, key_t, rounds = check_and_draw(
            row_ptr, V, masses, row_max, inv_t, inf_mode, key_t, idx_t, rounds, p_on, target,
            min_p_on, min_w, seed, offset, BLOCK, GROUP, NS_P2)
    return idx_t, rounds


@triton.jit
def check_and_draw(row_ptr, V, masses, row_max, inv_t, inf_mode, key_t, idx_t, rounds, p_on,
                   target, min_p_on, min_w, seed, offset, BLOCK: tl.constexpr,
                   GROUP: tl.constexpr, NS_P2: tl.constexpr):
    """One round's decision from the group masses of the entries before the drawn one: if it is
    rejected, the next entry is drawn among them. Returns (rejected, index, key, rounds)."""
    more = reject_check(tl.sum(masses, axis=0), key_t, row_max, inv_t, inf_mode, p_on, target,
                        min_p_on, min_w)
    if more:
        u = _round_uniform(seed, offset, rounds)
        idx_t, key_t = _draw(row_ptr, V, row_max, inv_t, inf_mode, masses, u, key_t, idx_t,
                             True, BLOCK, GROUP, NS_P2)
        rounds = rounds + 1
    return more, idx_t, key_t, rounds


@triton.jit(do_not_specialize=["p_bits", "min_p_bits", "seed_scalar", "offset_scalar"])
def reject_topp_sample_kernel(
    x_ptr, p_ptr, min_p_ptr, seed_ptr, offset_ptr, inv_t_ptr,
    V, stride_x, inv_t, p_bits, min_p_bits, seed_scalar, offset_scalar, seed_stride,
    offset_stride, token_ptr, rounds_ptr,
    HAS_P: tl.constexpr, P_ARRAY: tl.constexpr, HAS_MIN_P: tl.constexpr,
    MIN_P_ARRAY: tl.constexpr, SEED_MODE: tl.constexpr, OFFSET_ARRAY: tl.constexpr,
    TEMP_ARRAY: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr, NS_P2: tl.constexpr,
):
    """One token per row: top-p then min-p (top-k off), by rejection.

    x_ptr : (B, V) float32 / bfloat16 / float16 logits, unit stride along V
    p_ptr / min_p_ptr : (B,) floating when P_ARRAY / MIN_P_ARRAY, else the scalar is ``p_bits``
        / ``min_p_bits`` (the int64 bit pattern of a float64); HAS_P / HAS_MIN_P False: off
        (min-p also off where <= 0 or NaN; above 1 it acts as 1)
    seed_ptr / offset_ptr : int64 (uint64 bit patterns), read at ``row * stride`` (SEED_MODE 1,
        OFFSET_ARRAY); else the scalars; SEED_MODE 2: a seed per row derived from ``seed_scalar``
        as :mod:`qrita.backends.triton.philox` derives it
    inv_t : 1 / temperature (float32, > 0); with TEMP_ARRAY, ``inv_t_ptr`` (B,) float32 per row
        instead, where a value not > 0 marks a greedy row (the first entry of the order)
    token_ptr : (B,) int64; rounds_ptr : (B,) int32, the draws the row took (0: no mass, the
        first entry of the order)
    BLOCK : entries per tile; GROUP : tiles per group (a power of two), the unit of the per-row
        masses; NS_P2 : groups per row (cdiv(V, BLOCK * GROUP)) rounded up to a power of two
    """
    row = tl.program_id(0)
    row64 = (row * 0).to(tl.int64) + row
    row_ptr = x_ptr + row64 * stride_x
    seed, offset, inv_t, greedy = row_draw_params(
        seed_ptr, offset_ptr, inv_t_ptr, inv_t, seed_scalar, offset_scalar, seed_stride,
        offset_stride, row64, SEED_MODE, OFFSET_ARRAY, TEMP_ARRAY)
    masses, row_max, inf_mode = _row_stats(row_ptr, V, inv_t, BLOCK, GROUP, NS_P2)
    total = tl.where(greedy, 0.0, tl.sum(masses, axis=0))
    rounds = row * 0
    if total > 0.0:
        p_on, target, min_p_on, min_w = row_filters(p_ptr, min_p_ptr, p_bits, min_p_bits, total,
                                                    row64, HAS_P, P_ARRAY, HAS_MIN_P,
                                                    MIN_P_ARRAY)
        u = _round_uniform(seed, offset, rounds)
        idx_t, key_t = _draw(row_ptr, V, row_max, inv_t, inf_mode, masses, u, rounds, rounds,
                             False, BLOCK, GROUP, NS_P2)
        token, rounds = reject_rounds(row_ptr, V, row_max, inv_t, inf_mode, key_t, idx_t,
                                      rounds + 1, p_on | min_p_on, p_on, target, min_p_on,
                                      min_w, seed, offset, BLOCK, GROUP, NS_P2)
    else:  # greedy, or no mass (every entry -inf or NaN): the first entry of the order
        token = _first_of_order(row_ptr, V, BLOCK)
    tl.store(token_ptr + row64, token.to(tl.int64))
    tl.store(rounds_ptr + row64, rounds)
