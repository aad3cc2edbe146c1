"""``@triton.jit`` kernel of the rejection draw of top-p (docs/sampling.md, "The rejection draw").
Imports triton only.

``reject_topp_sample_kernel``, grid (B,), one program per row, no scratch. The draw needs no
top-p threshold: a first read gives every tile's mass (relative to the tile's max, rescaled to
the row's max at the end: one read, not two), the token is drawn from the whole row by inverse CDF
in index order (the tile by a cumulative sum over the tiles' masses, the entry by one in the
tile), and one more read sums the mass before the drawn entry in the rank order, which decides
whether top-p keeps it. If not, that read's tile masses (of the entries before it) are the next
round's, and the next draw is made among those entries. Each round keeps with probability >= p,
so most rows take two reads; top-p off takes one.

Masses are float32 weights exp((x - max) * inv_t), summed per tile in float32; the answer differs
from the float64 reference (:func:`qrita.reference.sampling.sample_topp_rejection`) only where a
draw's target or a top-p test lies within docs/sampling.md's margins.
"""

import triton
import triton.language as tl

from qrita.backends.triton.fused_sample import _row_param
from qrita.backends.triton.fused_topp import _weight
from qrita.backends.triton.primitives import KEY_NAN, order_key

__all__ = ["reject_topp_sample_kernel"]


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
def _tile_stats(row_ptr, V, inv_t, BLOCK: tl.constexpr, NT_P2: tl.constexpr):
    """One read: per tile, the finite max, the mass relative to it and the +inf count; the first
    entry of the order (largest key, lowest index). Returns the tiles' masses relative to the row's
    max (or +inf counts when the row has +inf), the row's max and whether it has +inf."""
    lanes = tl.arange(0, BLOCK)
    tiles = tl.arange(0, NT_P2)
    tile_max = tl.full([NT_P2], -float("inf"), tl.float32)
    tile_mass = tl.zeros([NT_P2], tl.float32)
    tile_inf = tl.zeros([NT_P2], tl.float32)
    best_key = tl.max(lanes, axis=0) * 0 + KEY_NAN
    best_idx = tl.max(lanes, axis=0) * 0 + V
    for i in range(0, tl.cdiv(V, BLOCK)):
        offs = i * BLOCK + lanes
        valid = offs < V
        x = tl.load(row_ptr + offs, mask=valid, other=float("nan")).to(tl.float32)
        finite = valid & (tl.abs(x) < float("inf"))
        m = tl.max(tl.where(finite, x, -float("inf")), axis=0)
        w = tl.where(finite, tl.exp((tl.where(finite, x, 0.0) - tl.where(m > -float("inf"), m, 0.0))
                                    * inv_t), 0.0)
        s = tl.sum(w, axis=0)
        n_inf = tl.sum((valid & (x == float("inf"))).to(tl.float32), axis=0)
        key = tl.where(valid, order_key(x), KEY_NAN)
        k_max = tl.max(key, axis=0)
        i_min = tl.min(tl.where(valid & (key == k_max), offs, V), axis=0)
        better = (k_max > best_key) | ((k_max == best_key) & (i_min < best_idx))
        best_key = tl.where(better, k_max, best_key)
        best_idx = tl.where(better, i_min, best_idx)
        here = tiles == i
        tile_max = tl.where(here, m, tile_max)
        tile_mass = tl.where(here, s, tile_mass)
        tile_inf = tl.where(here, n_inf, tile_inf)
    row_max = tl.max(tile_max, axis=0)
    inf_mode = tl.sum(tile_inf, axis=0) > 0.0
    scale = tl.where(tile_max > -float("inf"),
                     tl.exp((tile_max - tl.where(row_max > -float("inf"), row_max, 0.0)) * inv_t),
                     0.0)
    masses = tl.where(inf_mode, tile_inf, tile_mass * scale)
    return masses, row_max, inf_mode, best_idx


@triton.jit
def _masses_before(row_ptr, V, row_max, inv_t, inf_mode, key_t, idx_t,
                   BLOCK: tl.constexpr, NT_P2: tl.constexpr):
    """One read: per tile, the mass of the entries before (key_t, idx_t) in the rank order (a
    larger key, or the same key at a lower index)."""
    lanes = tl.arange(0, BLOCK)
    tiles = tl.arange(0, NT_P2)
    masses = tl.zeros([NT_P2], tl.float32)
    for i in range(0, tl.cdiv(V, BLOCK)):
        offs = i * BLOCK + lanes
        valid = offs < V
        x = tl.load(row_ptr + offs, mask=valid, other=0.0).to(tl.float32)
        key = order_key(x)
        before = valid & ((key > key_t) | ((key == key_t) & (offs < idx_t)))
        s = tl.sum(tl.where(before, _weight(x, row_max, inv_t, inf_mode), 0.0), axis=0)
        masses = tl.where(tiles == i, s, masses)
    return masses


@triton.jit
def _draw(row_ptr, V, row_max, inv_t, inf_mode, masses, u, key_t, idx_t, RESTRICT: tl.constexpr,
          BLOCK: tl.constexpr, NT_P2: tl.constexpr):
    """The entry (index order) where the cumulative mass over the live set crosses u x its mass:
    the tile from the tiles' masses, then the entry from a cumulative sum over that tile (the
    live set: every entry, or with RESTRICT those before (key_t, idx_t) in the rank order). A
    target past the last live entry (float32 rounding) takes the last one of positive weight."""
    tiles = tl.arange(0, NT_P2)
    lanes = tl.arange(0, BLOCK)
    cum = tl.cumsum(masses, axis=0)
    target = u * tl.sum(masses, axis=0)
    last_tile = tl.max(tl.where(masses > 0.0, tiles, -1), axis=0)
    tile = tl.minimum(tl.sum((cum <= target).to(tl.int32), axis=0), last_tile)
    target = target - tl.sum(tl.where(tiles < tile, masses, 0.0), axis=0)
    offs = tile * BLOCK + lanes
    valid = offs < V
    x = tl.load(row_ptr + offs, mask=valid, other=0.0).to(tl.float32)
    w = tl.where(valid, _weight(x, row_max, inv_t, inf_mode), 0.0)
    if RESTRICT:
        key = order_key(x)
        w = tl.where((key > key_t) | ((key == key_t) & (offs < idx_t)), w, 0.0)
    cw = tl.cumsum(w, axis=0)
    lane = tl.sum((cw <= target).to(tl.int32), axis=0)
    last_lane = tl.max(tl.where(w > 0.0, lanes, -1), axis=0)
    lane = tl.minimum(lane, last_lane)
    x_t = tl.sum(tl.where(lanes == lane, x, 0.0), axis=0)
    return tile * BLOCK + lane, order_key(x_t)


@triton.jit
def reject_topp_sample_kernel(
    x_ptr, p_ptr, seed_ptr, offset_ptr,
    V, stride_x, inv_t, p_bits, seed_scalar, offset_scalar, seed_stride, offset_stride,
    token_ptr, rounds_ptr,
    HAS_P: tl.constexpr, P_ARRAY: tl.constexpr, SEED_MODE: tl.constexpr,
    OFFSET_ARRAY: tl.constexpr, BLOCK: tl.constexpr, NT_P2: tl.constexpr,
):
    """One token per row: top-p (top-k and min-p off) at a scalar temperature, by rejection.

    x_ptr : (B, V) float32 / bfloat16 / float16 logits, unit stride along V
    p_ptr : (B,) floating when P_ARRAY, else the scalar p is ``p_bits`` (the int64 bit pattern of
        a float64); HAS_P False: top-p off
    seed_ptr / offset_ptr : int64 (uint64 bit patterns), read at ``row * stride`` (SEED_MODE 1,
        OFFSET_ARRAY); else the scalars; SEED_MODE 2: a seed per row derived from ``seed_scalar``
        as :mod:`qrita.backends.triton.philox` derives it
    inv_t : 1 / temperature (float32, > 0)
    token_ptr : (B,) int64; rounds_ptr : (B,) int32, the draws the row took (0: no mass, the
        first entry of the order)
    NT_P2 : tiles per row (cdiv(V, BLOCK)) rounded up to a power of two
    """
    row = tl.program_id(0)
    row64 = (row * 0).to(tl.int64) + row
    row_ptr = x_ptr + row64 * stride_x
    seed = row64 * 0 + seed_scalar
    if SEED_MODE == 1:
        seed = tl.load(seed_ptr + row64 * seed_stride)
    if SEED_MODE == 2:
        seed = seed + row64 * (-7046029254386353131)
    offset = row64 * 0 + offset_scalar
    if OFFSET_ARRAY:
        offset = tl.load(offset_ptr + row64 * offset_stride)
    masses, row_max, inf_mode, first = _tile_stats(row_ptr, V, inv_t, BLOCK, NT_P2)
    total = tl.sum(masses, axis=0)
    token = first
    rounds = row * 0
    if total > 0.0:
        if HAS_P:
            p = _row_param(p_ptr, p_bits, row64, P_ARRAY)
        else:
            p = (row * 0).to(tl.float64) + 1.0
        p_on = (p < 1.0) & (p == p)
        target = p * total.to(tl.float64)
        u = _round_uniform(seed, offset, rounds)
        idx_t, key_t = _draw(row_ptr, V, row_max, inv_t, inf_mode, masses, u, first, first,
                             False, BLOCK, NT_P2)
        rounds = rounds + 1
        more = p_on
        while more:
            masses = _masses_before(row_ptr, V, row_max, inv_t, inf_mode, key_t, idx_t, BLOCK,
                                    NT_P2)
            before = tl.sum(masses, axis=0)
            # kept: the mass before it is under p x Z (the first entry of the order always is)
            more = (before.to(tl.float64) >= target) & (before > 0.0)
            if more:
                u = _round_uniform(seed, offset, rounds)
                idx_t, key_t = _draw(row_ptr, V, row_max, inv_t, inf_mode, masses, u, key_t,
                                     idx_t, True, BLOCK, NT_P2)
                rounds = rounds + 1
        token = idx_t
    tl.store(token_ptr + row64, token.to(tl.int64))
    tl.store(rounds_ptr + row64, rounds)
