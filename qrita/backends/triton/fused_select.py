"""``@triton.jit`` kernel of ``top_k``'s per-row search fused with writing the selection
(docs/algorithm.md §8). Imports triton only.

``threshold_select_kernel``, grid (B,): the pipeline's per-row search (``threshold_row``, one
launch, no retry) and then, in the same program, the row's selection: the kept candidates at
their ranks in index order, and, when SORTED, the selection sorted by rank in registers
(:func:`~.one_launch.write_row_selection`, as the one-launch select kernel's last program
writes it). It replaces three launches of a sorted ``top_k`` (the search, ``write_select_kernel``
over (B, S) programs, ``sort_selection_kernel``) by one: the same integers decide every row
(the same search, the same keep rule), so the same values and indices bit for bit.
"""

import triton
import triton.language as tl

from qrita.backends.triton.one_launch import write_row_selection
from qrita.backends.triton.pipeline import threshold_row


@triton.jit
def threshold_select_kernel(
    x_ptr, cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr,
    V, stride_x, k, nseg,
    sel_val_ptr, sel_idx_ptr, row_i_ptr, row_f_ptr, seg_before_ptr,
    SMALLEST: tl.constexpr, SORTED: tl.constexpr, K_P2: tl.constexpr, BLOCK: tl.constexpr,
    CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr, DENSE: tl.constexpr, SAMPLE: tl.constexpr,
):
    """Boundary key and tie budget of one row from its candidates (or the exact full-row
    fallback), then its selection.

    x_ptr : (B, V) values, unit stride along V; cand_val_ptr / cand_idx_ptr, seg_f_ptr,
    seg_i_ptr : pass A's candidates and per-segment statistics (``candidates_kernel``, scalar
    k, no top-p); k : the scalar k (1 <= k <= V; k <= K_P2 when SORTED); sel_val_ptr : (B, k)
    x's dtype; sel_idx_ptr : (B, k) int64; row_i_ptr : (B, 16) int32 (mode, T, budget, ...);
    row_f_ptr : (B, 8) float32; seg_before_ptr : (B, S, 2) int32.
    """
    row = tl.program_id(0)
    row64 = (row * 0).to(tl.int64) + row
    # (k_ptr, p_ptr, out_ptr and cutoff_ptr are not read: scalar k, no top-p, SELECT, no retry)
    threshold_row(x_ptr, x_ptr, x_ptr, cand_val_ptr, cand_idx_ptr, seg_f_ptr, seg_i_ptr,
                  V, stride_x, 0, k, 0.0, 0.0, nseg,
                  x_ptr, sel_val_ptr, sel_idx_ptr, row_i_ptr, row_f_ptr, seg_before_ptr,
                  seg_before_ptr, row,
                  True, False, False, False, SMALLEST, True, False, BLOCK, CAP_SEG, NSEG_P2,
                  DENSE, SAMPLE, False, False, 0)
    tl.debug_barrier()  # the row's mode, T, budget and per-segment counts are written
    write_row_selection(x_ptr, V, stride_x, k, cand_val_ptr, cand_idx_ptr, seg_i_ptr,
                        row_i_ptr, seg_before_ptr, sel_val_ptr, sel_idx_ptr, row64, nseg,
                        SMALLEST, SORTED, K_P2, BLOCK, CAP_SEG, NSEG_P2)
