"""``@triton.jit`` kernels placing the wide top-p band from a count histogram of the whole row.

An alternative to ``wide.wide_band_kernel`` (one program per row, placing the band from a
sample), chosen by the launch table (``histband``). Every segment (B x S programs) counts its
entries in NB bins of ``d = M - x`` (M the row's max, exact from pass A) of width
``w = span / (NB - 1)``, ``span = min(ln(V / (1 - p)), 104)`` (below ``M - span`` lies less than
``(1 - p)`` of the mass, so the boundary is never there; the last bin holds all of it), and adds
the counts into the row's NB integer counters (integer atomics: their sum is the same in any
order). A per-row merge (B programs) estimates each bin's mass from its count (the mean of
``exp(-d)`` over the bin), finds the bin where the mass from the top (the exact row mass less
the estimated mass below) reaches the target, and widens the band around it evenly on both
sides while it holds at most ``limit`` entries. Its value range (widened by the float32 rounding of ``M - x``) becomes the
band (row_i[5:7]) inside the interval pass A proved. With ``MERGE`` the row's last counting
program does the merge itself (an integer arrival counter per row), and zeroes the counters
behind it, so the call needs neither a fill nor a second launch.

Only speed depends on the band: ``wide.wide_compact_kernel`` and ``wide.wide_search_kernel``
measure it with exact counts and masses, and a miss goes to the rounds. Rows with +inf entries
take the key of +inf, as the sampled band does. Imports triton only.
"""

import triton
import triton.language as tl

from qrita.backends.triton.one_launch import arrive_last
from qrita.backends.triton.primitives import KEY_NAN, order_key

ROW_I: tl.constexpr = tl.constexpr(16)  # as in wide.py
ROW_F: tl.constexpr = tl.constexpr(8)  # max, target, +inf mode, mass above hi, row mass


@triton.jit
def _bin_width(row_f_ptr, row64, V, NB: tl.constexpr):
    """The bin width w (float32), computed by the same steps in both kernels."""
    target = tl.load(row_f_ptr + row64 * ROW_F + 1)
    row_mass = tl.load(row_f_ptr + row64 * ROW_F + 4)
    p = target / tl.maximum(row_mass, 1e-30)
    span = tl.minimum(tl.log(V.to(tl.float32) / tl.maximum(1.0 - p, 1e-30)), 104.0)
    return tl.maximum(span, 1e-6) / (NB - 1)


@triton.jit
def hist_band_count_kernel(
    x_ptr, row_i_ptr, row_f_ptr,
    V, stride_x, seg_len, limit,
    bin_counts_ptr, arrivals_ptr,
    NB: tl.constexpr, BLOCK: tl.constexpr, MERGE: tl.constexpr, STEPS: tl.constexpr,
):
    """One segment's count of entries in each of NB bins of ``M - x``, added into its row's
    counters. bin_counts : (B, NB) int32, zero before the launch.

    MERGE: the row's last program to arrive (an integer counter per row, arrivals : (B,) int32,
    zero before the launch; release / acquire) also places the band, as
    :func:`hist_band_merge_kernel` does, and sets its counters and arrival counter back to zero
    (so a buffer kept between calls needs no fill: the caller's ``hist_band_scratch``). One
    launch instead of a fill and two launches; no program waits for another."""
    row = tl.program_id(0)
    seg = tl.program_id(1)
    nseg = tl.num_programs(1)
    row64 = (row * 0).to(tl.int64) + row
    mode = tl.load(row_i_ptr + row64 * ROW_I)
    inf_mode = tl.load(row_f_ptr + row64 * ROW_F + 2) > 0.0
    bins = tl.arange(0, NB)
    if (mode == 3) & (not inf_mode):
        row_max = tl.load(row_f_ptr + row64 * ROW_F + 0)
        inv_width = 1.0 / _bin_width(row_f_ptr, row64, V, NB)
        lanes = tl.arange(0, BLOCK)
        counts = tl.zeros([NB], tl.int32)
        row_x = x_ptr + row64 * stride_x
        seg_start = seg * seg_len
        for off in range(0, seg_len, BLOCK):
            offs = seg_start + off + lanes
            valid = offs < V
            x = tl.load(row_x + offs, mask=valid, other=0.0).to(tl.float32)
            finite = valid & (tl.abs(x) < float("inf"))
            d = tl.where(finite, row_max - x, 0.0)
            bin_index = tl.minimum(d * inv_width, NB - 1.0).to(tl.int32)
            counts += tl.histogram(bin_index, NB, mask=finite)
        tl.atomic_add(bin_counts_ptr + row64 * NB + bins, counts, mask=counts > 0, sem="relaxed")
    if MERGE:
        if mode == 3:
            if arrive_last(arrivals_ptr, row64, nseg):
                tl.debug_barrier()
                # read the row's totals from where the atomics made them, and zero them
                counts = tl.atomic_xchg(bin_counts_ptr + row64 * NB + bins,
                                        tl.zeros([NB], tl.int32), sem="relaxed", scope="gpu")
                tl.store(arrivals_ptr + row64, 0)
                _place_band(row_i_ptr, row_f_ptr, counts, row64, V, limit, NB, STEPS)


@triton.jit
def _band_bins(counts, crossing, limit, NB: tl.constexpr, STEPS: tl.constexpr):
    """Bins [first, last] around ``crossing``, widened evenly on both sides (by bisection on the
    half-width) while they hold at most ``limit`` entries; the crossing bin alone when it holds
    more."""
    bins = tl.arange(0, NB)
    fits_half = crossing * 0  # the widest half-width known to fit (0: the bin alone)
    too_wide = fits_half + NB
    for _ in tl.static_range(STEPS):
        half = (fits_half + too_wide) // 2
        inside = tl.abs(bins - crossing) <= half
        fits = tl.sum(tl.where(inside, counts, 0), axis=0) <= limit
        fits_half = tl.where(fits, tl.maximum(half, fits_half), fits_half)
        too_wide = tl.where(fits, too_wide, tl.minimum(half, too_wide))
    first = tl.maximum(crossing - fits_half, 0)
    last = tl.minimum(crossing + fits_half, NB - 1)
    return first, last


@triton.jit
def hist_band_merge_kernel(
    row_i_ptr, row_f_ptr, bin_counts_ptr,
    V, limit,
    NB: tl.constexpr, STEPS: tl.constexpr,
):
    """Place each wide row's band (row_i[5:7] = b_lo + 1, b_hi) from its bin counts."""
    row = tl.program_id(0)
    row64 = (row * 0).to(tl.int64) + row
    if tl.load(row_i_ptr + row64 * ROW_I) == 3:
        counts = tl.load(bin_counts_ptr + row64 * NB + tl.arange(0, NB))
        _place_band(row_i_ptr, row_f_ptr, counts, row64, V, limit, NB, STEPS)


@triton.jit
def _place_band(row_i_ptr, row_f_ptr, counts, row64, V, limit, NB: tl.constexpr,
                STEPS: tl.constexpr):
    """Write a wide row's band (row_i[5:7] = b_lo + 1, b_hi) from its NB bin counts (int32)."""
    info = row_i_ptr + row64 * ROW_I
    lo = tl.load(info + 9).to(tl.int64) - 1  # the interval pass A proved
    hi = tl.load(info + 10).to(tl.int64)
    inf_mode = tl.load(row_f_ptr + row64 * ROW_F + 2) > 0.0
    if inf_mode:
        key_inf = tl.max(order_key(tl.full([1], float("inf"), tl.float32)).to(tl.int64),
                         axis=0)
        b_lo = tl.maximum(lo, key_inf - 1)
        b_hi = tl.minimum(hi, key_inf)
    else:
        bins = tl.arange(0, NB)
        row_max = tl.load(row_f_ptr + row64 * ROW_F + 0)
        target = tl.load(row_f_ptr + row64 * ROW_F + 1)
        width = _bin_width(row_f_ptr, row64, V, NB)
        # the mean of exp(-d) over a bin [b w, (b + 1) w) (the last bin: its top's weight)
        mean_weight = tl.exp(-bins.to(tl.float32) * width) * ((1.0 - tl.exp(-width)) / width)
        mean_weight = tl.where(bins == NB - 1, tl.exp(-(NB - 1.0) * width), mean_weight)
        # the mass from the top through each bin, as the exact row mass less the estimated
        # mass below the bin: the tail is many small weights, which counts estimate well,
        # while the mass at the top sits on a few entries placed anywhere in their bins
        # (from the top, zipf rows at p = 0.99 crossed two bins early)
        estimate = counts.to(tl.float32) * mean_weight
        row_mass = tl.load(row_f_ptr + row64 * ROW_F + 4)
        below = tl.sum(estimate, axis=0) - tl.cumsum(estimate, axis=0)
        reached = row_mass - below
        crossing = tl.minimum(tl.sum((reached < target).to(tl.int32), axis=0), NB - 1)
        first, last = _band_bins(counts, crossing, limit, NB, STEPS)
        d_top = first.to(tl.float32) * width
        d_bottom = (last + 1).to(tl.float32) * width
        # M - x rounds by half an ulp of the larger of |M|, |x|, d: widen by a few
        slack = 4e-7 * (tl.abs(row_max) + d_bottom + 1.0)
        top = row_max - d_top + slack
        bottom = row_max - d_bottom - slack
        key_top = tl.max(order_key(tl.full([1], 0.0, tl.float32) + top), axis=0)
        key_bottom = tl.max(order_key(tl.full([1], 0.0, tl.float32) + bottom), axis=0)
        b_hi = tl.where(first == 0, hi, tl.minimum(hi, key_top.to(tl.int64)))
        # the last bin holds the rest of the row: no floor
        b_lo = tl.where(last == NB - 1, lo, tl.maximum(lo, key_bottom.to(tl.int64) - 1))
    empty = b_hi <= b_lo
    b_lo = tl.where(empty, lo, b_lo)
    b_hi = tl.where(empty, hi, b_hi)
    b_lo = tl.maximum(b_lo, KEY_NAN - 1)
    tl.store(info + 5, (b_lo + 1).to(tl.int32))
    tl.store(info + 6, b_hi.to(tl.int32))
