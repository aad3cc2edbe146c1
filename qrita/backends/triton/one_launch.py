"""``@triton.jit`` kernels of the one-launch small-batch paths (docs/algorithm.md §8, "one launch
for small batches"). Imports triton only.

``one_launch_topk_mask_kernel`` and ``one_launch_select_kernel``, grid (B, S): every program runs
the pipeline's steps for its segment (the row's σ-cutoff from the same first-tile sample, pass A;
the mask also writes ``fill`` over its segment of the output) and then counts itself in, on an
integer arrival counter per row. The program that arrives last (which one varies from run to run;
what it does does not) merges the segments in their fixed order (the threshold kernel's body:
search, tie counting, or the exact full-row fallback) and writes the result: the kept candidates
over the fill (mask), or the selection in index order, then, when SORTED, sorted by rank.
No floating-point atomics and no spin-waits: no program waits for another.

Top-k only (top-k's answer is exact whatever path a row takes, so a row's result does not depend
on whether its batch took this launch); the mask out of place only (the fallback reads the row
after the other programs have written their fill).

Scratch: one int32 buffer (``ws_i_ptr``, and ``ws_f_ptr``, the same memory as float32), laid
out by :func:`scratch` (host side: ``launch.one_launch_words``); its arrival counters are zero
on entry and on exit.
"""

import triton
import triton.language as tl

from qrita.backends.triton.pipeline import (
    ROW_I,
    candidates_kernel,
    cutoff_kernel,
    segment_kept,
    threshold_kernel,
)
from qrita.backends.triton.primitives import rank_key

SORT_MAX = 1024  # largest k the selection kernel sorts in registers (host-side limit)
#: words of arrival counters at the start of the scratch (:func:`scratch`; at least B)
COUNTER_WORDS = tl.constexpr(64)
INT64_MIN: tl.constexpr = tl.constexpr(-(2**63))


@triton.jit
def scratch(ws_i_ptr, ws_f_ptr, B, nseg, CAP: tl.constexpr):
    """The pipeline's scratch parts inside one int32 buffer of max(B, COUNTER_WORDS) +
    B x (CAP x 2 + nseg x 14 + 22) words, in this order: the rows' arrival counters (zero on
    entry; the first max(B, COUNTER_WORDS) words, so their place does not depend on B while B <=
    COUNTER_WORDS), candidate values (B x CAP, float32) and indices (B x CAP), segment floats
    (B x S x 4) and ints (B x S x 8), ties / kept before each segment (B x S x 2), row floats
    (B x 4), row ints (B x 16), cutoff keys (B). Only the counters must be zero on entry (every
    other word is written before it is read), and each row's last program sets its counter back
    to zero, so a buffer may serve the next call on the same stream as it is."""
    arrivals = ws_i_ptr
    base = tl.maximum(B, COUNTER_WORDS)
    cand_val = ws_f_ptr + base
    cand_idx = ws_i_ptr + base + B * CAP
    small = base + 2 * B * CAP + 14 * B * nseg  # after the candidates and the per-segment parts
    seg_f = ws_f_ptr + base + 2 * B * CAP
    seg_i = ws_i_ptr + base + 2 * B * CAP + 4 * B * nseg
    seg_before = ws_i_ptr + base + 2 * B * CAP + 12 * B * nseg
    row_f = ws_f_ptr + small
    row_i = ws_i_ptr + small + 4 * B
    cutoff = ws_i_ptr + small + 20 * B
    return cutoff, cand_val, cand_idx, seg_f, seg_i, seg_before, row_f, row_i, arrivals


@triton.jit
def arrive_last(arrivals_ptr, row, nseg):
    """Count this program in on its row's counter after all its threads' writes (release); True
    for the last of the row's nseg programs, which then sees every program's writes (acquire)."""
    tl.debug_barrier()
    arrived = tl.atomic_add(arrivals_ptr + row, 1, sem="acq_rel", scope="gpu")
    return arrived == nseg - 1


@triton.jit
def pass_a(x_ptr, k_ptr, V, stride_x, seg_len, k_scalar, max_cands, ws_i_ptr, ws_f_ptr,
           K_ARRAY: tl.constexpr, SMALLEST: tl.constexpr, SAMPLE: tl.constexpr,
           OVERSAMPLE: tl.constexpr, BLOCK_CAND: tl.constexpr, CAP_SEG: tl.constexpr,
           NSEG_P2: tl.constexpr, SPARSE: tl.constexpr):
    """This program's work before the merge (steps 2-3 for its segment): the row's σ-cutoff
    (every program of the row computes and stores the same key, from the same sample) and pass A
    over its segment. Returns the scratch parts after the cutoff (:func:`scratch`)."""
    nseg = tl.num_programs(1)
    cutoff_ptr, cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr, seg_before_ptr, row_f_ptr, \
        row_i_ptr, arrivals_ptr = scratch(ws_i_ptr, ws_f_ptr, tl.num_programs(0), nseg,
                                          NSEG_P2 * CAP_SEG)
    cutoff_kernel(x_ptr, k_ptr, x_ptr, V, stride_x, k_scalar, 0.0, max_cands, cutoff_ptr,
                  True, K_ARRAY, False, False, SMALLEST, SAMPLE, OVERSAMPLE)
    tl.debug_barrier()  # the cutoff this program stored is what it loads next
    candidates_kernel(x_ptr, k_ptr, x_ptr, cutoff_ptr, V, stride_x, seg_len, k_scalar, 0.0,
                      row_i_ptr, cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr,
                      True, K_ARRAY, False, False, SMALLEST, BLOCK_CAND, CAP_SEG, NSEG_P2, SPARSE,
                      False)
    return cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr, seg_before_ptr, row_f_ptr, \
        row_i_ptr, arrivals_ptr


@triton.jit
def one_launch_topk_mask_kernel(
    x_ptr, k_ptr,
    V, stride_x, stride_out, seg_len, k_scalar, fill, max_cands,
    ws_i_ptr, ws_f_ptr, out_ptr,
    K_ARRAY: tl.constexpr, SAMPLE: tl.constexpr, OVERSAMPLE: tl.constexpr,
    BLOCK: tl.constexpr, BLOCK_CAND: tl.constexpr, CAP_SEG: tl.constexpr,
    NSEG_P2: tl.constexpr, SPARSE: tl.constexpr, DENSE: tl.constexpr,
):
    """Top-k mask of (B, V) rows in one launch.

    x_ptr : (B, V) logits, unit stride along V; k_ptr : (B,) integer when K_ARRAY
    ws_i_ptr / ws_f_ptr : the zeroed scratch words (:func:`scratch`), as int32 / float32
    out_ptr : (B, V) output, not aliasing x_ptr
    """
    row = tl.program_id(0)
    seg = tl.program_id(1)
    nseg = tl.num_programs(1)
    row64 = (row * 0).to(tl.int64) + row
    cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr, seg_before_ptr, row_f_ptr, row_i_ptr, \
        arrivals_ptr = pass_a(x_ptr, k_ptr, V, stride_x, seg_len, k_scalar, max_cands, ws_i_ptr,
                              ws_f_ptr, K_ARRAY, False, SAMPLE, OVERSAMPLE, BLOCK_CAND, CAP_SEG,
                              NSEG_P2, SPARSE)
    row_o = out_ptr + row64 * stride_out
    out_ty = out_ptr.dtype.element_ty
    fill_block = (tl.zeros([BLOCK], tl.float32) + fill).to(out_ty)
    for off in range(0, seg_len, BLOCK):
        offs = seg * seg_len + off + tl.arange(0, BLOCK)
        tl.store(row_o + offs, fill_block, mask=offs < V)
    # candidates, statistics and fill are written before the row's counter moves
    if arrive_last(arrivals_ptr, row, nseg):
        tl.store(arrivals_ptr + row, 0)  # every program has arrived: zero for the next call
        tl.debug_barrier()
        threshold_kernel(x_ptr, k_ptr, x_ptr, cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr,
                         V, stride_x, stride_out, k_scalar, 0.0, fill, nseg,
                         out_ptr, x_ptr, cand_idx_ptr, row_i_ptr, row_f_ptr, seg_before_ptr,
                         seg_before_ptr,
                         True, K_ARRAY, False, False, False, False, False, BLOCK, CAP_SEG,
                         NSEG_P2, DENSE, SAMPLE, False, False, 0)
        tl.debug_barrier()  # the row's mode, T, budget and per-segment counts are written
        mode = tl.load(row_i_ptr + row64 * ROW_I + 0)
        if mode == 1:  # the kept candidates over the fill, segment by segment
            for s in range(0, nseg):
                cx, cidx, kept, kept_rank = segment_kept(
                    cand_val_ptr, cand_idx_ptr, seg_i_ptr, row_i_ptr, seg_before_ptr, row64, s,
                    nseg, CAP_SEG, NSEG_P2, False)
                tl.store(row_o + cidx, cx.to(out_ty), mask=kept)
        elif mode == 0:  # nothing masked: a copy
            row_x = x_ptr + row64 * stride_x
            for off in range(0, V, BLOCK):
                offs = off + tl.arange(0, BLOCK)
                valid = offs < V
                tl.store(row_o + offs, tl.load(row_x + offs, mask=valid), mask=valid)
        # mode 2: the fallback wrote the row


@triton.jit
def sort_selection(row_x, sel_val, sel_idx, k, SMALLEST: tl.constexpr, K_P2: tl.constexpr):
    """Reorder one row's k selected entries (index order) by rank: value order, lower index first
    among equal values, NaN last (the oracle's order), in registers (k <= K_P2 <= SORT_MAX).

    Each entry packs into one int64, rank key x 2^32 + (2^32 - 1 - index), so a descending sort
    of distinct integers gives the order; the values are re-read from the row (exact bits)."""
    j = tl.arange(0, K_P2)
    valid = j < k
    idx = tl.load(sel_idx + j, mask=valid, other=0)
    key = rank_key(tl.load(sel_val + j, mask=valid, other=0.0).to(tl.float32), SMALLEST)
    packed = key.to(tl.int64) * 4294967296 + (4294967295 - idx)
    packed = tl.where(valid, packed, INT64_MIN)
    ordered = tl.sort(packed, descending=True)
    idx = 4294967295 - (ordered & 4294967295)
    idx = tl.where(valid, idx, 0)
    val = tl.load(row_x + idx, mask=valid)
    tl.debug_barrier()  # every thread has read the unsorted selection
    tl.store(sel_val + j, val, mask=valid)
    tl.store(sel_idx + j, idx, mask=valid)


@triton.jit
def select_rows(
    x_ptr, V, stride_x, seg_len, k, max_cands, ws_i_ptr, ws_f_ptr, sel_val_ptr, sel_idx_ptr,
    SMALLEST: tl.constexpr, SORTED: tl.constexpr, K_P2: tl.constexpr,
    SAMPLE: tl.constexpr, OVERSAMPLE: tl.constexpr, BLOCK: tl.constexpr,
    BLOCK_CAND: tl.constexpr, CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr,
    SPARSE: tl.constexpr, DENSE: tl.constexpr,
):
    """The body of :func:`one_launch_select_kernel`; returns whether this program was its row's
    last (the one that wrote the row's selection, and may go on using it)."""
    row = tl.program_id(0)
    nseg = tl.num_programs(1)
    row64 = (row * 0).to(tl.int64) + row
    cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr, seg_before_ptr, row_f_ptr, row_i_ptr, \
        arrivals_ptr = pass_a(x_ptr, x_ptr, V, stride_x, seg_len, k, max_cands, ws_i_ptr,
                              ws_f_ptr, False, SMALLEST, SAMPLE, OVERSAMPLE, BLOCK_CAND, CAP_SEG,
                              NSEG_P2, SPARSE)
    is_last = arrive_last(arrivals_ptr, row, nseg)
    if is_last:
        tl.store(arrivals_ptr + row, 0)  # every program has arrived: zero for the next call
        tl.debug_barrier()
        # mode 2 rows: the full-row fallback writes the selection (index order) itself
        threshold_kernel(x_ptr, x_ptr, x_ptr, cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr,
                         V, stride_x, 0, k, 0.0, 0.0, nseg,
                         x_ptr, sel_val_ptr, sel_idx_ptr, row_i_ptr, row_f_ptr, seg_before_ptr,
                         seg_before_ptr,
                         True, False, False, False, SMALLEST, True, False, BLOCK, CAP_SEG,
                         NSEG_P2, DENSE, SAMPLE, False, False, 0)
        tl.debug_barrier()  # the row's mode, T, budget and per-segment counts are written
        write_row_selection(x_ptr, V, stride_x, k, cand_val_ptr, cand_idx_ptr, seg_i_ptr,
                            row_i_ptr, seg_before_ptr, sel_val_ptr, sel_idx_ptr, row64, nseg,
                            SMALLEST, SORTED, K_P2, BLOCK, CAP_SEG, NSEG_P2)
    return is_last


@triton.jit
def write_row_selection(x_ptr, V, stride_x, k, cand_val_ptr, cand_idx_ptr, seg_i_ptr,
                        row_i_ptr, seg_before_ptr, sel_val_ptr, sel_idx_ptr, row64, nseg,
                        SMALLEST: tl.constexpr, SORTED: tl.constexpr, K_P2: tl.constexpr,
                        BLOCK: tl.constexpr, CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr):
    """One row's selection (B, k) once its search has run in this program (mode, T, budget and
    the segments' counts written, and visible: a barrier before): the kept candidates at their
    ranks in index order (mode 1), every entry (mode 0: k == V), or what the full-row fallback
    wrote (mode 2); then, when SORTED, reordered by rank (:func:`sort_selection`; k <= K_P2)."""
    mode = tl.load(row_i_ptr + row64 * ROW_I + 0)
    sel_val = sel_val_ptr + row64 * k
    sel_idx = sel_idx_ptr + row64 * k
    if mode == 1:  # the kept candidates at their ranks in index order
        for s in range(0, nseg):
            cx, cidx, kept, kept_rank = segment_kept(
                cand_val_ptr, cand_idx_ptr, seg_i_ptr, row_i_ptr, seg_before_ptr, row64, s,
                nseg, CAP_SEG, NSEG_P2, SMALLEST)
            tl.store(sel_val + kept_rank, cx.to(sel_val_ptr.dtype.element_ty), mask=kept)
            tl.store(sel_idx + kept_rank, cidx.to(tl.int64), mask=kept)
    elif mode == 0:  # k == V: every entry
        row_x = x_ptr + row64 * stride_x
        for off in range(0, V, BLOCK):
            offs = off + tl.arange(0, BLOCK)
            valid = offs < V
            tl.store(sel_val + offs, tl.load(row_x + offs, mask=valid), mask=valid)
            tl.store(sel_idx + offs, offs.to(tl.int64), mask=valid)
    if SORTED:
        tl.debug_barrier()  # the whole selection is written
        sort_selection(x_ptr + row64 * stride_x, sel_val, sel_idx, k, SMALLEST, K_P2)


@triton.jit
def one_launch_select_kernel(
    x_ptr,
    V, stride_x, seg_len, k, max_cands,
    ws_i_ptr, ws_f_ptr, sel_val_ptr, sel_idx_ptr,
    SMALLEST: tl.constexpr, SORTED: tl.constexpr, K_P2: tl.constexpr,
    SAMPLE: tl.constexpr, OVERSAMPLE: tl.constexpr, BLOCK: tl.constexpr,
    BLOCK_CAND: tl.constexpr, CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr,
    SPARSE: tl.constexpr, DENSE: tl.constexpr,
):
    """The first k entries of each of B rows' order (1 <= k <= V) in one launch: in index order,
    or by rank when SORTED (then k <= K_P2 <= SORT_MAX).

    x_ptr : (B, V) values, unit stride along V
    ws_i_ptr / ws_f_ptr : the zeroed scratch words (:func:`scratch`), as int32 / float32
    sel_val_ptr : (B, k) x's dtype; sel_idx_ptr : (B, k) int64
    """
    select_rows(x_ptr, V, stride_x, seg_len, k, max_cands, ws_i_ptr, ws_f_ptr, sel_val_ptr,
                sel_idx_ptr, SMALLEST, SORTED, K_P2, SAMPLE, OVERSAMPLE, BLOCK, BLOCK_CAND,
                CAP_SEG, NSEG_P2, SPARSE, DENSE)


@triton.jit
def sort_selection_kernel(
    x_ptr,
    stride_x, k,
    sel_val_ptr, sel_idx_ptr,
    SMALLEST: tl.constexpr, K_P2: tl.constexpr,
):
    """Grid (B,): each row's k selected entries (index order, written by the pipeline's
    ``write_select_kernel``) reordered by rank in registers (:func:`sort_selection`), in place.

    x_ptr : (B, V) values, unit stride along V; sel_val_ptr : (B, k) x's dtype; sel_idx_ptr :
    (B, k) int64; k <= K_P2 <= SORT_MAX.
    """
    row64 = tl.program_id(0).to(tl.int64)
    sort_selection(x_ptr + row64 * stride_x, sel_val_ptr + row64 * k, sel_idx_ptr + row64 * k,
                   k, SMALLEST, K_P2)
