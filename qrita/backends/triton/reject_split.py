"""``@triton.jit`` kernels of the rejection draw for small batches: each row split over S
programs (docs/sampling.md, "The rejection draw"). Imports triton only.

One program per row (:mod:`qrita.backends.triton.reject_topp`) reads a 131072-entry row in about
45 µs on an H200: a single SM, bound by memory latency. Here the row's S groups of tiles (the
unit of the per-row masses) go to P programs, grid (B, P), each taking ``groups_per_program``
consecutive groups (1 for small batches; more as B grows, so the grid stays a few waves), and
the row's last arriving program (an integer arrival counter per row and phase, as in
:mod:`qrita.backends.triton.one_launch`) does the per-row step. No floating-point atomics and no
spin-waits. A group's sums are computed by the same machine code whichever program takes it
(``groups_per_program`` is not specialized on), so the tokens do not depend on P, nor on the
batch.

The grid is (B, P), or (P, B) with ROW_AXIS 1 (a row's programs adjacent in launch order; speed
only).

- ``reject_split_stats_kernel`` (phase 0): every program the max / mass / +inf count of its
  groups (or, for a greedy row, their first entries of the order); the last one merges them
  (the row's max and group masses, as ``reject_topp._row_stats`` computes them) and draws round
  0 (a row without mass: its last program reads the row for the first entry of the order). The
  groups whose max reaches the drawn entry's value bound the mass before it: where that bound
  is under p x Z the entry is kept here, with no check read (on Zipf rows at p = 0.9 about half
  the draws).
- ``reject_split_check_kernel`` (phases 1..R): every program the mass of its group's entries
  before the drawn entry in the rank order; the last one checks the entry and, if rejected, draws
  the next one from those masses. Rows already decided return at once.
- The last check launch (FINISH) lets a row still rejecting go on in its last program
  (``reject_topp.reject_rounds``): every row is decided after R >= 1 check launches.

The token is the reference's off the margins.

Scratch (one zero-initialised int32 buffer, also passed as float32, carved by ``_scratch``; the
arrival counters (R + 1, B) int32 at its end must be zero, the rest is written before it is read):
``seg_f`` (B, 3, NS) float32 (group max, group mass or mass before, +inf count), ``seg_i``
(B, 2, NS) int32 (group's first key, its index), ``row_f`` (B, 2) float32 (row max, mass),
``row_i`` (B, 4) int32 (drawn index, its key, rounds, flags: 1 decided, 2 +inf row).
"""

import triton
import triton.language as tl

from qrita.backends.triton.one_launch import arrive_last
from qrita.backends.triton.primitives import KEY_NAN, key_to_value, order_key
from qrita.backends.triton.reject_topp import (
    _draw,
    _first_of_order,
    _live_weights,
    _round_uniform,
    check_and_draw,
    online_mass,
    reject_check,
    reject_rounds,
    row_draw_params,
    row_filters,
)

__all__ = ["reject_split_stats_kernel", "reject_split_check_kernel"]


@triton.jit
def _scratch(ws_i_ptr, ws_f_ptr, NS_P2: tl.constexpr, ROW_AXIS: tl.constexpr):
    """This program's row (int32 and int64), its index among the row's programs, the row's
    program count, and the parts of the one scratch buffer (int32 ``ws_i_ptr``, the same memory
    as float32 ``ws_f_ptr``): seg_f (B, 3, NS_P2), seg_i (B, 2, NS_P2), row_f (B, 2), row_i
    (B, 4), then the arrival counters, (R + 1, B). ROW_AXIS: the grid axis of the rows (0: grid
    (B, P), a row's programs far apart in launch order; 1: grid (P, B), adjacent)."""
    row = tl.program_id(ROW_AXIS)
    B = tl.num_programs(ROW_AXIS)
    seg_f = ws_f_ptr
    seg_i = ws_i_ptr + B * 3 * NS_P2
    row_f = ws_f_ptr + B * 5 * NS_P2
    row_i = ws_i_ptr + B * (5 * NS_P2 + 2)
    arrivals = ws_i_ptr + B * (5 * NS_P2 + 6)
    return (row, (row * 0).to(tl.int64) + row, tl.program_id(1 - ROW_AXIS),
            tl.num_programs(1 - ROW_AXIS), seg_f, seg_i, row_f, row_i, arrivals)


@triton.jit
def _prefetch(row_ptr, offs, end):
    """The tile at ``offs`` (-inf at and past ``end``, the program's last entry + 1 or V)."""
    return tl.load(row_ptr + offs, mask=offs < end, other=-float("inf"))


@triton.jit
def _start(row_ptr, first_g, end, BLOCK: tl.constexpr, GROUP: tl.constexpr,
           AHEAD: tl.constexpr):
    """The read-ahead of a program starting at group ``first_g``: its first AHEAD (1 or 2) tiles
    (the second is unused with AHEAD 1)."""
    offs = first_g * (GROUP * BLOCK) + tl.arange(0, BLOCK)
    x_next = _prefetch(row_ptr, offs, end)
    x_later = x_next
    if AHEAD == 2:
        x_later = _prefetch(row_ptr, offs + BLOCK, end)
    return x_next, x_later


@triton.jit
def _advance(row_ptr, offs, end, x_next, x_later, BLOCK: tl.constexpr, AHEAD: tl.constexpr):
    """The tile at ``offs`` (loaded earlier) as float32, and the read-ahead after it: the load
    of the tile AHEAD tiles further is issued before this one is used."""
    x = x_next.to(tl.float32)
    if AHEAD == 2:
        x_next = x_later
        x_later = _prefetch(row_ptr, offs + 2 * BLOCK, end)
    else:
        x_next = _prefetch(row_ptr, offs + BLOCK, end)
    return x, x_next, x_later


@triton.jit
def _max_and_sum(a_max, a_sum, b_max, b_sum):
    """Combine of a (max, sum) pair reduction."""
    return tl.maximum(a_max, b_max), a_sum + b_sum


@triton.jit
def _sum_and_sum(a0, a1, b0, b1):
    """Combine of a (sum, sum) pair reduction."""
    return a0 + b0, a1 + b1


@triton.jit
def _group_mass(row_ptr, g, end, x_next, x_later, inv_t, BLOCK: tl.constexpr,
                GROUP: tl.constexpr, AHEAD: tl.constexpr, NEAR: tl.constexpr):
    """Group g's max and mass relative to it (per lane an online max and mass, as
    ``reject_topp._row_stats``; the max and mass of its finite entries) and its +inf count.
    ``x_next`` / ``x_later``: the read-ahead (:func:`_start`, :func:`_advance`; -inf past
    ``end``), returned as it stands after the group. NEAR > 0: also the mass of the lanes whose
    max lies within NEAR + 1/64 nats (at 1 / t) of the group's max, an upper bound of the mass
    of the group's entries within NEAR of it (exact for one tile per group); else that is 0."""
    lanes = tl.arange(0, BLOCK)
    scale2 = inv_t * 1.4426950408889634
    lane_max = tl.full([BLOCK], -float("inf"), tl.float32)
    lane_mass = tl.zeros([BLOCK], tl.float32)
    lane_inf = tl.zeros([BLOCK], tl.float32)
    for j in range(0, GROUP):
        offs = (g * GROUP + j) * BLOCK + lanes
        x, x_next, x_later = _advance(row_ptr, offs, end, x_next, x_later, BLOCK, AHEAD)
        lane_max, lane_mass, lane_inf = online_mass(x, lane_max, lane_mass, lane_inf, scale2)
    # two reductions per group, (max, +inf count) then (mass, near mass): one shared-memory
    # round trip and barrier each (the statistics kernel is bound by its reductions)
    m, n_inf = tl.reduce((lane_max, lane_inf), 0, _max_and_sum)
    m_ref = tl.where(m > -float("inf"), m, 0.0)
    exponent = (lane_max - m_ref) * scale2
    scaled = lane_mass * tl.exp2(exponent)
    if NEAR > 0:
        near_lanes = tl.where(exponent >= -(NEAR + 1.0 / 64.0) * 1.4426950408889634, scaled,
                              0.0)
        mass, near = tl.reduce((scaled, near_lanes), 0, _sum_and_sum)
    else:
        mass = tl.sum(scaled, axis=0)
        near = mass * 0.0
    return m, mass, n_inf, near, x_next, x_later


@triton.jit
def _group_first(row_ptr, V, g, end, x_next, x_later, BLOCK: tl.constexpr,
                 GROUP: tl.constexpr, AHEAD: tl.constexpr):
    """Group g's first entry of the order (its largest key, lowest index: a greedy row's
    candidate); the read-ahead as in :func:`_group_mass`."""
    lanes = tl.arange(0, BLOCK)
    best_key = tl.full([BLOCK], KEY_NAN, tl.int32)
    best_idx = tl.full([BLOCK], 0, tl.int32) + V
    for j in range(0, GROUP):
        offs = (g * GROUP + j) * BLOCK + lanes
        valid = offs < V
        x, x_next, x_later = _advance(row_ptr, offs, end, x_next, x_later, BLOCK, AHEAD)
        key = order_key(x)
        better = valid & ((key > best_key) | (best_idx == V))  # offsets grow: first copy stays
        best_key = tl.where(better, key, best_key)
        best_idx = tl.where(better, offs, best_idx)
    top = tl.max(best_key, axis=0)
    return top, tl.min(tl.where(best_key == top, best_idx, V), axis=0), x_next, x_later


@triton.jit
def _group_before(row_ptr, g, end, x_next, x_later, row_max, inv_t, inf_mode, key_t, idx_t,
                  BLOCK: tl.constexpr, GROUP: tl.constexpr, AHEAD: tl.constexpr):
    """Group g's mass of the entries before (key_t, idx_t) in the rank order (per-lane sums, one
    reduction: ``reject_topp._masses_before``'s value for the group); the read-ahead as in
    :func:`_group_mass`. A row without +inf compares values instead of order keys: the same
    entries (NaN is never before a finite value, -0.0 ties with 0.0) with the same weight
    formula, exp((x - max) / t), in fewer instructions."""
    lanes = tl.arange(0, BLOCK)
    lane_mass = tl.zeros([BLOCK], tl.float32)
    x_t = key_to_value(key_t)
    for j in range(0, GROUP):
        offs = (g * GROUP + j) * BLOCK + lanes
        x, x_next, x_later = _advance(row_ptr, offs, end, x_next, x_later, BLOCK, AHEAD)
        if inf_mode:
            lane_mass += _live_weights(x, offs, row_max, inv_t, inf_mode, key_t, idx_t, True)
        else:  # no +inf in the row: x_t, the row's max and every entry before t_r are finite
            ahead = (x > x_t) | ((x == x_t) & (offs < idx_t))
            lane_mass += tl.where(ahead, tl.exp((x - row_max) * inv_t), 0.0)
    return tl.sum(lane_mass, axis=0), x_next, x_later


@triton.jit
def _kept_by_bound(group_max, masses, near_masses, key_t, row_max, inv_t, inf_mode, p_on,
                   target, min_p_on, min_w, NEAR: tl.constexpr):
    """Whether round 0's entry is kept on the group statistics alone, without the check read.
    Every entry before it in the rank order (a larger value, or the same at a lower index) lies in
    a group whose max is at least its value, so those groups' masses bound the mass before it
    from above; with NEAR > 0, a group whose max is within NEAR nats (at 1 / t) of the entry's
    value counts only its near mass (:func:`_group_mass`), which holds every entry at or above
    that value. With 2^-10 of slack for the float32 sums, a bound under p x Z means the check
    read would keep it too (far from the margin: the token cannot change). Rows with +inf are
    left to the check read."""
    x_t = key_to_value(key_t)
    reach = tl.where(group_max >= x_t, masses, 0.0)
    if NEAR > 0:
        close = (group_max >= x_t) & ((group_max - x_t) * inv_t <= NEAR)
        reach = tl.where(close, tl.minimum(near_masses, masses), reach)
    bound = tl.sum(reach, axis=0) * (1.0 + 1.0 / 1024.0)
    return ~inf_mode & ~reject_check(bound, key_t, row_max, inv_t, inf_mode, p_on, target,
                                     min_p_on, min_w)


@triton.jit
def _program_groups(program, groups_per_program, V, BLOCK: tl.constexpr, GROUP: tl.constexpr):
    """This program's first group, its group count and its end (the entry after its last
    group's, at most V)."""
    first = program * groups_per_program
    count = tl.minimum(groups_per_program, tl.cdiv(V, BLOCK * GROUP) - first)
    return first, count, tl.minimum((first + count) * (GROUP * BLOCK), V)


@triton.jit
def _undecided_row(x_ptr, p_ptr, min_p_ptr, seed_ptr, offset_ptr, inv_t_ptr, stride_x, inv_t,
                   p_bits, min_p_bits, seed_scalar, offset_scalar, seed_stride, offset_stride,
                   row_f_ptr, row_i_ptr, row64, HAS_P: tl.constexpr, P_ARRAY: tl.constexpr,
                   HAS_MIN_P: tl.constexpr, MIN_P_ARRAY: tl.constexpr, SEED_MODE: tl.constexpr,
                   OFFSET_ARRAY: tl.constexpr, TEMP_ARRAY: tl.constexpr):
    """An undecided row's state: its pointer, Philox seed / offset, 1 / t, max, the drawn entry
    (index, key), the draws made, and its filters (``reject_topp.row_filters``)."""
    seed, offset, inv_t, greedy = row_draw_params(
        seed_ptr, offset_ptr, inv_t_ptr, inv_t, seed_scalar, offset_scalar, seed_stride,
        offset_stride, row64, SEED_MODE, OFFSET_ARRAY, TEMP_ARRAY)
    p_on, target, min_p_on, min_w = row_filters(
        p_ptr, min_p_ptr, p_bits, min_p_bits, tl.load(row_f_ptr + row64 * 2 + 1), row64, HAS_P,
        P_ARRAY, HAS_MIN_P, MIN_P_ARRAY)
    return (x_ptr + row64 * stride_x, seed, offset, inv_t, tl.load(row_f_ptr + row64 * 2),
            tl.load(row_i_ptr + row64 * 4), tl.load(row_i_ptr + row64 * 4 + 1),
            tl.load(row_i_ptr + row64 * 4 + 2), p_on, target, min_p_on, min_w)


@triton.jit(do_not_specialize=["p_bits", "min_p_bits", "seed_scalar", "offset_scalar",
                                "groups_per_program"])
def reject_split_stats_kernel(
    x_ptr, p_ptr, min_p_ptr, seed_ptr, offset_ptr, inv_t_ptr,
    V, stride_x, inv_t, p_bits, min_p_bits, seed_scalar, offset_scalar, seed_stride,
    offset_stride, groups_per_program, ws_i_ptr, ws_f_ptr, token_ptr, rounds_ptr,
    HAS_P: tl.constexpr, P_ARRAY: tl.constexpr, HAS_MIN_P: tl.constexpr,
    MIN_P_ARRAY: tl.constexpr, SEED_MODE: tl.constexpr, OFFSET_ARRAY: tl.constexpr,
    TEMP_ARRAY: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr, NS_P2: tl.constexpr,
    AHEAD: tl.constexpr, ROW_AXIS: tl.constexpr, BOUND: tl.constexpr, NEAR: tl.constexpr,
):
    """Phase 0, grid (B, P): group statistics, then (last program of the row) round 0's draw.

    Arguments as ``reject_topp.reject_topp_sample_kernel``'s, plus ``groups_per_program`` (each
    of the row's P programs takes that many consecutive groups; P x groups_per_program >= S =
    cdiv(V, BLOCK x GROUP), S <= NS_P2) and the scratch of the module docstring (``ws_i_ptr`` /
    ``ws_f_ptr``: one zeroed buffer as int32 / float32, carved by ``_scratch``); AHEAD: tiles
    loaded ahead of use (1 or 2; speed only); ROW_AXIS: the grid's row axis, grid (B, P) for 0,
    (P, B) for 1 (speed only); BOUND: keep round 0's entry without the check read where the
    group statistics bound the mass before it under p x Z (:func:`_kept_by_bound`; speed only);
    NEAR > 0: the bound also uses each group's mass within NEAR nats of its max (speed only).
    Decided rows (greedy, no mass, or top-p and min-p
    off) get their token and rounds here.
    """
    row, row64, program, n_programs, seg_f_ptr, seg_i_ptr, row_f_ptr, row_i_ptr, \
        arrivals_ptr = _scratch(ws_i_ptr, ws_f_ptr, NS_P2, ROW_AXIS)
    row_ptr = x_ptr + row64 * stride_x
    seed, offset, inv_t, greedy = row_draw_params(
        seed_ptr, offset_ptr, inv_t_ptr, inv_t, seed_scalar, offset_scalar, seed_stride,
        offset_stride, row64, SEED_MODE, OFFSET_ARRAY, TEMP_ARRAY)
    seg_f = seg_f_ptr + row64 * 3 * NS_P2
    seg_i = seg_i_ptr + row64 * 2 * NS_P2
    # a row that is not greedy leaves seg_i free: its group near masses go there, as float32
    seg_near = ws_f_ptr + tl.num_programs(ROW_AXIS) * 3 * NS_P2 + row64 * 2 * NS_P2
    n_groups = tl.cdiv(V, BLOCK * GROUP)
    first_g, count, end = _program_groups(program, groups_per_program, V, BLOCK, GROUP)
    x_next, x_later = _start(row_ptr, first_g, end, BLOCK, GROUP, AHEAD)
    if greedy:  # the first entry of the order is the token: only that is looked for
        for j in range(0, count):
            g = first_g + j
            top, first, x_next, x_later = _group_first(row_ptr, V, g, end, x_next, x_later,
                                                       BLOCK, GROUP, AHEAD)
            tl.store(seg_i + g, top)
            tl.store(seg_i + NS_P2 + g, first)
    else:
        for j in range(0, count):
            g = first_g + j
            m, mass, n_inf, near, x_next, x_later = _group_mass(
                row_ptr, g, end, x_next, x_later, inv_t, BLOCK, GROUP, AHEAD, NEAR)
            tl.store(seg_f + g, m)
            tl.store(seg_f + NS_P2 + g, mass)
            tl.store(seg_f + 2 * NS_P2 + g, n_inf)
            if NEAR > 0:
                tl.store(seg_near + g, near)
    if arrive_last(arrivals_ptr, row, n_programs):
        ids = tl.arange(0, NS_P2)
        here = ids < n_groups
        rounds = row * 0
        # greedy rows wrote no group masses: every load below is masked off for them
        here_f = ids < tl.where(greedy, 0, n_groups)
        group_max = tl.load(seg_f + ids, mask=here_f, other=-float("inf"))
        group_mass = tl.load(seg_f + NS_P2 + ids, mask=here_f, other=0.0)
        group_inf = tl.load(seg_f + 2 * NS_P2 + ids, mask=here_f, other=0.0)
        row_max = tl.max(group_max, axis=0)
        inf_mode = tl.sum(group_inf, axis=0) > 0.0
        row_ref = tl.where(row_max > -float("inf"), row_max, 0.0)
        masses = tl.where(inf_mode, group_inf,
                          group_mass * tl.exp((group_max - row_ref) * inv_t))
        total = tl.where(greedy, 0.0, tl.sum(masses, axis=0))
        flags = 1 + 2 * inf_mode.to(tl.int32)
        if total > 0.0:
            p_on, target, min_p_on, min_w = row_filters(
                p_ptr, min_p_ptr, p_bits, min_p_bits, total, row64, HAS_P, P_ARRAY, HAS_MIN_P,
                MIN_P_ARRAY)
            u = _round_uniform(seed, offset, rounds)
            token, key_t = _draw(row_ptr, V, row_max, inv_t, inf_mode, masses, u, rounds, rounds,
                                 False, BLOCK, GROUP, NS_P2)
            rounds = rounds + 1
            undecided = p_on | min_p_on
            if BOUND:
                near_masses = masses
                if NEAR > 0:
                    group_near = tl.load(seg_near + ids, mask=here_f, other=0.0)
                    near_masses = group_near * tl.exp((group_max - row_ref) * inv_t)
                undecided = undecided & ~_kept_by_bound(
                    group_max, masses, near_masses, key_t, row_max, inv_t, inf_mode, p_on,
                    target, min_p_on, min_w, NEAR)
            flags = tl.where(undecided, flags - 1, flags)
        elif greedy:  # the first entry of the order, from the groups' firsts
            keys = tl.load(seg_i + ids, mask=here, other=KEY_NAN)
            firsts = tl.load(seg_i + NS_P2 + ids, mask=here, other=V)
            best = tl.max(tl.where(here, keys, KEY_NAN), axis=0)
            token = tl.min(tl.where(here & (keys == best), firsts, V), axis=0)
            key_t = best
        else:  # no mass (every entry -inf or NaN; rare): one read of the row, here
            token = _first_of_order(row_ptr, V, BLOCK)
            key_t = KEY_NAN + row * 0  # unused: the row is decided
        tl.store(row_f_ptr + row64 * 2, row_max)
        tl.store(row_f_ptr + row64 * 2 + 1, total)
        tl.store(row_i_ptr + row64 * 4, token)
        tl.store(row_i_ptr + row64 * 4 + 1, key_t)
        tl.store(row_i_ptr + row64 * 4 + 2, rounds)
        tl.store(row_i_ptr + row64 * 4 + 3, flags)
        if flags % 2 == 1:
            tl.store(token_ptr + row64, token.to(tl.int64))
            tl.store(rounds_ptr + row64, rounds)


@triton.jit(do_not_specialize=["p_bits", "min_p_bits", "seed_scalar", "offset_scalar",
                                "groups_per_program", "phase"])
def reject_split_check_kernel(
    x_ptr, p_ptr, min_p_ptr, seed_ptr, offset_ptr, inv_t_ptr,
    V, stride_x, inv_t, p_bits, min_p_bits, seed_scalar, offset_scalar, seed_stride,
    offset_stride, groups_per_program, phase, ws_i_ptr, ws_f_ptr, token_ptr, rounds_ptr,
    HAS_P: tl.constexpr, P_ARRAY: tl.constexpr, HAS_MIN_P: tl.constexpr,
    MIN_P_ARRAY: tl.constexpr, SEED_MODE: tl.constexpr, OFFSET_ARRAY: tl.constexpr,
    TEMP_ARRAY: tl.constexpr, BLOCK: tl.constexpr, GROUP: tl.constexpr, NS_P2: tl.constexpr,
    FINISH: tl.constexpr, AHEAD: tl.constexpr, ROW_AXIS: tl.constexpr,
):
    """Phase r >= 1, grid (B, P): the undecided rows' check of the drawn entry (the mass before
    it, per group), then (last program of the row) accept it or draw the next one.
    ``phase``: this launch's row of the (R + 1, B) arrival counters. FINISH (the last check
    launch): a row still rejecting goes on in its last program (``reject_topp.reject_rounds``).
    Arguments as :func:`reject_split_stats_kernel`'s."""
    row, row64, program, n_programs, seg_f_ptr, seg_i_ptr, row_f_ptr, row_i_ptr, \
        arrivals_ptr = _scratch(ws_i_ptr, ws_f_ptr, NS_P2, ROW_AXIS)
    flags = tl.load(row_i_ptr + row64 * 4 + 3)
    if flags % 2 == 0:
        row_ptr, seed, offset, inv_t, row_max, idx_t, key_t, rounds, p_on, target, min_p_on, \
            min_w = _undecided_row(x_ptr, p_ptr, min_p_ptr, seed_ptr, offset_ptr, inv_t_ptr,
                                   stride_x, inv_t, p_bits, min_p_bits, seed_scalar,
                                   offset_scalar, seed_stride, offset_stride, row_f_ptr,
                                   row_i_ptr, row64, HAS_P, P_ARRAY, HAS_MIN_P, MIN_P_ARRAY,
                                   SEED_MODE, OFFSET_ARRAY, TEMP_ARRAY)
        inf_mode = flags >= 2
        seg_b = seg_f_ptr + row64 * 3 * NS_P2 + NS_P2
        n_groups = tl.cdiv(V, BLOCK * GROUP)
        first_g, count, end = _program_groups(program, groups_per_program, V, BLOCK, GROUP)
        x_next, x_later = _start(row_ptr, first_g, end, BLOCK, GROUP, AHEAD)
        for j in range(0, count):
            before, x_next, x_later = _group_before(row_ptr, first_g + j, end, x_next, x_later,
                                                    row_max, inv_t, inf_mode, key_t, idx_t,
                                                    BLOCK, GROUP, AHEAD)
            tl.store(seg_b + first_g + j, before)
        if arrive_last(arrivals_ptr + phase * tl.num_programs(ROW_AXIS), row, n_programs):
            ids = tl.arange(0, NS_P2)
            masses = tl.load(seg_b + ids, mask=ids < n_groups, other=0.0)
            more, idx_t, key_t, rounds = check_and_draw(
                row_ptr, V, masses, row_max, inv_t, inf_mode, key_t, idx_t, rounds, p_on, target,
                min_p_on, min_w, seed, offset, BLOCK, GROUP, NS_P2)
            if FINISH:  # a row still rejecting goes on here, in one program
                idx_t, rounds = reject_rounds(row_ptr, V, row_max, inv_t, inf_mode, key_t, idx_t,
                                              rounds, more, p_on, target, min_p_on, min_w, seed,
                                              offset, BLOCK, GROUP, NS_P2)
                more = rounds < 0  # decided
            if more:
                tl.store(row_i_ptr + row64 * 4, idx_t)
                tl.store(row_i_ptr + row64 * 4 + 1, key_t)
                tl.store(row_i_ptr + row64 * 4 + 2, rounds)
            else:
                tl.store(row_i_ptr + row64 * 4 + 3, flags + 1)
                tl.store(token_ptr + row64, idx_t.to(tl.int64))
                tl.store(rounds_ptr + row64, rounds)
