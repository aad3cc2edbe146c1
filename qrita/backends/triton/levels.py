"""``@triton.jit`` kernels placing the wide top-p band by two levels of mass histograms.

An alternative to ``wide.wide_band_kernel`` (which places the band from a sample, one program
per row), off by default (the launch table's ``levels=1x0``); the NumPy model of the route is
``qrita/reference/levels.py``. Level 1 sums, per segment (B x S programs), the weights of each
of NB value bins ``floor((M - x) / w1)`` (clamped to NB - 1) with ``w1 = span / (NB - 1)``,
``span = min(ln(V / (1 - p)), 104)``: below ``M - ln(V / (1 - p))`` lies less than ``(1 - p)·Z``.
A per-row merge (B programs) sums the segments in their fixed order and picks the bin where the
cumulative mass from the top reaches the target. Level 2 does the same over NB sub-bins of that
bin, and its merge writes the crossing sub-bin's value range, widened by the float32 rounding of
``M - x``, as the band (row_i[5:7]) inside the interval pass A proved. Only speed depends on the
band: ``wide.wide_compact_kernel`` and ``wide.wide_search_kernel`` measure it exactly and hand
a miss to the rounds. Rows with +inf entries take the key of +inf, as the sampled band does.
Imports triton only.
"""

import triton
import triton.language as tl

from qrita.backends.triton.primitives import KEY_NAN, order_key

ROW_I: tl.constexpr = tl.constexpr(16)  # as in wide.py
ROW_F: tl.constexpr = tl.constexpr(8)  # max, target, +inf mode, mass above hi, row mass, level 1's mass above, bin
ABOVE1: tl.constexpr = tl.constexpr(5)
BIN1: tl.constexpr = tl.constexpr(6)


@triton.jit
def _bin_width(row_f_ptr, row64, V, NB: tl.constexpr):
    """Level 1's bin width w1 (float32), computed by the same steps in every kernel."""
    target = tl.load(row_f_ptr + row64 * ROW_F + 1)
    row_mass = tl.load(row_f_ptr + row64 * ROW_F + 4)
    p = target / tl.maximum(row_mass, 1e-30)
    span = tl.minimum(tl.log(V.to(tl.float32) / tl.maximum(1.0 - p, 1e-30)), 104.0)
    return tl.maximum(span, 1e-6) / (NB - 1)


@triton.jit
def levels_hist_kernel(
    x_ptr, row_i_ptr, row_f_ptr,
    V, stride_x, seg_len,
    part_f_ptr,
    LEVEL: tl.constexpr, NB: tl.constexpr, BLOCK: tl.constexpr,
):
    """One segment's mass in each of NB bins (LEVEL 1) or sub-bins of level 1's crossing bin
    (LEVEL 2). part_f : (B, S, NB) float32."""
    row = tl.program_id(0)
    seg = tl.program_id(1)
    nseg = tl.num_programs(1)
    row64 = (row * 0).to(tl.int64) + row
    mode = tl.load(row_i_ptr + row64 * ROW_I)
    inf_mode = tl.load(row_f_ptr + row64 * ROW_F + 2) > 0.0
    if (mode == 3) & (not inf_mode):
        row_max = tl.load(row_f_ptr + row64 * ROW_F + 0)
        w1 = _bin_width(row_f_ptr, row64, V, NB)
        inv1 = 1.0 / w1
        b1 = tl.load(row_f_ptr + row64 * ROW_F + BIN1)  # (level 2 only)
        inv2 = inv1 * NB
        bins = tl.arange(0, NB)
        lanes = tl.arange(0, BLOCK)
        acc = tl.zeros([NB], tl.float32)
        row_x = x_ptr + row64 * stride_x
        seg_start = seg * seg_len
        for off in range(0, seg_len, BLOCK):
            offs = seg_start + off + lanes
            valid = offs < V
            x = tl.load(row_x + offs, mask=valid, other=0.0).to(tl.float32)
            finite = valid & (tl.abs(x) < float("inf"))
            d = tl.where(finite, row_max - x, 0.0)
            level1 = tl.minimum(tl.floor(d * inv1), NB - 1.0)
            if LEVEL == 1:
                member = finite
                index = level1
            else:
                member = finite & (level1 == b1)
                index = tl.minimum(tl.maximum(tl.floor((d - b1 * w1) * inv2), 0.0), NB - 1.0)
            w = tl.where(member, tl.exp(-d), 0.0)
            hit = member[:, None] & (index.to(tl.int32)[:, None] == bins[None, :])
            acc += tl.sum(tl.where(hit, w[:, None], 0.0), axis=0)
        tl.store(part_f_ptr + (row64 * nseg + seg) * NB + bins, acc)


@triton.jit
def levels_merge_kernel(
    row_i_ptr, row_f_ptr, part_f_ptr,
    V, nseg,
    LEVEL: tl.constexpr, NB: tl.constexpr, NSEG_P2: tl.constexpr,
):
    """Merge the segments' bins in their fixed order and pick the crossing bin (LEVEL 1: kept in
    row_f[5:7]); LEVEL 2: write the band (row_i[5:7]) from the crossing sub-bin."""
    row = tl.program_id(0)
    row64 = (row * 0).to(tl.int64) + row
    info = row_i_ptr + row64 * ROW_I
    mode = tl.load(info)
    inf_mode = tl.load(row_f_ptr + row64 * ROW_F + 2) > 0.0
    if mode == 3:
        lo = tl.load(info + 9).to(tl.int64) - 1  # the interval pass A proved
        hi = tl.load(info + 10).to(tl.int64)
        b_lo = lo
        b_hi = hi
        if inf_mode:
            key_inf = order_key(tl.full([1], float("inf"), tl.float32)).to(tl.int64)
            key_inf = tl.max(key_inf, axis=0)
            b_lo = tl.maximum(lo, key_inf - 1)
            b_hi = tl.minimum(hi, key_inf)
        else:
            segs = tl.arange(0, NSEG_P2)
            bins = tl.arange(0, NB)
            part = part_f_ptr + (row64 * nseg + segs)[:, None] * NB + bins[None, :]
            mass = tl.sum(tl.load(part, mask=(segs < nseg)[:, None], other=0.0), axis=0)
            cum = tl.cumsum(mass, axis=0)
            target = tl.load(row_f_ptr + row64 * ROW_F + 1)
            above1 = tl.load(row_f_ptr + row64 * ROW_F + ABOVE1)
            need = target if LEVEL == 1 else target - above1
            crossing = tl.minimum(tl.sum((cum < need).to(tl.int32), axis=0), NB - 1)
            above = tl.sum(tl.where(bins < crossing, mass, 0.0), axis=0)
            if LEVEL == 1:
                tl.store(row_f_ptr + row64 * ROW_F + ABOVE1, above)
                tl.store(row_f_ptr + row64 * ROW_F + BIN1, crossing.to(tl.float32))
            else:
                row_max = tl.load(row_f_ptr + row64 * ROW_F + 0)
                w1 = _bin_width(row_f_ptr, row64, V, NB)
                b1 = tl.load(row_f_ptr + row64 * ROW_F + BIN1)
                w2 = w1 / NB
                d_top = b1 * w1 + crossing.to(tl.float32) * w2
                d_bottom = d_top + w2
                # M - x rounds by half an ulp of the larger of |M|, |x|, d: widen by a few
                slack = 4e-7 * (tl.abs(row_max) + d_bottom + 1.0)
                top = row_max - d_top + slack
                bottom = row_max - d_bottom - slack
                key_top = tl.max(order_key(tl.full([1], 0.0, tl.float32) + top), axis=0)
                key_bottom = tl.max(order_key(tl.full([1], 0.0, tl.float32) + bottom), axis=0)
                b_hi = tl.minimum(hi, key_top.to(tl.int64))
                last = (b1 == NB - 1) & (crossing == NB - 1)  # the rest of the row: no floor
                b_lo = tl.where(last, lo, tl.maximum(lo, key_bottom.to(tl.int64) - 1))
        if LEVEL == 2:
            empty = b_hi <= b_lo
            b_lo = tl.where(empty, lo, b_lo)
            b_hi = tl.where(empty, hi, b_hi)
            b_lo = tl.maximum(b_lo, KEY_NAN - 1)
            tl.store(info + 5, (b_lo + 1).to(tl.int32))
            tl.store(info + 6, b_hi.to(tl.int32))
