"""``@triton.jit`` kernel of the one-launch top-k mask for small batches (docs/algorithm.md §8,
"one launch for small batches"). Imports triton only.

``one_launch_topk_mask_kernel``, grid (B, S): every program runs the pipeline's steps for its
segment (the row's σ-cutoff from the same first-tile sample, pass A), writes ``fill`` over its
segment of the output and then counts itself in, on an integer arrival counter per row. The
program that arrives last (which one varies from run to run; what it does does not) merges the
segments in their fixed order (the threshold kernel's body: search, tie counting, or the exact
full-row fallback, which writes the row itself) and writes the kept candidates over the fill.
No floating-point atomics and no spin-waits: no program waits for another.

Top-k only (top-k's answer is exact whatever path a row takes, so a row's mask does not depend
on whether its batch took this launch); out of place only (the fallback reads the row after the
other programs have written their fill).
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


@triton.jit
def one_launch_topk_mask_kernel(
    x_ptr, k_ptr,
    V, stride_x, stride_out, seg_len, k_scalar, fill, max_cands,
    cutoff_ptr, cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr, row_i_ptr, row_f_ptr,
    seg_before_ptr, arrivals_ptr,
    out_ptr,
    K_ARRAY: tl.constexpr, SAMPLE: tl.constexpr, OVERSAMPLE: tl.constexpr,
    BLOCK: tl.constexpr, BLOCK_CAND: tl.constexpr, CAP_SEG: tl.constexpr,
    NSEG_P2: tl.constexpr, SPARSE: tl.constexpr, DENSE: tl.constexpr,
):
    """Top-k mask of (B, V) rows in one launch.

    x_ptr : (B, V) logits, unit stride along V; k_ptr : (B,) integer when K_ARRAY
    cutoff_ptr ... seg_before_ptr : the pipeline's scratch (launch.py ``_workspace``)
    arrivals_ptr : (B,) int32, zero on entry (programs of a row counted in; left at S)
    out_ptr : (B, V) output, not aliasing x_ptr
    """
    row = tl.program_id(0)
    seg = tl.program_id(1)
    nseg = tl.num_programs(1)
    row64 = (row * 0).to(tl.int64) + row
    # steps 2-3 for this segment; every program of the row computes (and stores) the same cutoff
    cutoff_kernel(x_ptr, k_ptr, x_ptr, V, stride_x, k_scalar, 0.0, max_cands, cutoff_ptr,
                  True, K_ARRAY, False, False, False, SAMPLE, OVERSAMPLE)
    tl.debug_barrier()  # the cutoff this program stored is what it loads next
    candidates_kernel(x_ptr, k_ptr, x_ptr, cutoff_ptr, V, stride_x, seg_len, k_scalar, 0.0,
                      cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr,
                      True, K_ARRAY, False, False, False, BLOCK_CAND, CAP_SEG, NSEG_P2, SPARSE)
    row_o = out_ptr + row64 * stride_out
    out_ty = out_ptr.dtype.element_ty
    fill_block = (tl.zeros([BLOCK], tl.float32) + fill).to(out_ty)
    for off in range(0, seg_len, BLOCK):
        offs = seg * seg_len + off + tl.arange(0, BLOCK)
        tl.store(row_o + offs, fill_block, mask=offs < V)
    # every thread's candidates, statistics and fill are written before the row's counter moves
    # (release); the last program reads them after it (acquire)
    tl.debug_barrier()
    arrived = tl.atomic_add(arrivals_ptr + row, 1, sem="acq_rel", scope="gpu")
    if arrived == nseg - 1:
        tl.debug_barrier()
        threshold_kernel(x_ptr, k_ptr, x_ptr, cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr,
                         V, stride_x, stride_out, k_scalar, 0.0, fill, nseg, 0.0,
                         out_ptr, x_ptr, cand_idx_ptr, row_i_ptr, row_f_ptr, seg_before_ptr,
                         True, K_ARRAY, False, False, False, False, False, BLOCK, CAP_SEG,
                         NSEG_P2, DENSE, 16)
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
