"""``@triton.jit`` kernel that writes a mask from each row's kept-prefix bound. Imports triton
only.

``bound_mask_kernel``, grid (B, cdiv(V, BLOCK)): a row keeps exactly the entries of its order
up to its bound, the (rank key, index) of the last kept entry (``fused_topp`` with BOUND finds
it): an entry is kept iff its key is above the bound's key, or equal to it at an index no larger
than the bound's index (the order puts equal values in ascending index order, docs/spec.md
rule 1). Out of place every entry is written (the kept ones copied); in place only the dropped
ones (their ``fill``).
"""

import triton
import triton.language as tl

from qrita.backends.triton.primitives import order_key


@triton.jit
def bound_mask_kernel(x_ptr, bound_ptr, V, stride_x, stride_out, fill, out_ptr,
                      INPLACE: tl.constexpr, BLOCK: tl.constexpr):
    """Mask one tile of one row from the row's bound.

    x_ptr : (B, V) float32 / bfloat16 / float16 logits, unit stride along V
    bound_ptr : (B, 2) int64: per row the rank key (int32 range) and the index of the last
        kept entry
    fill : float32 value of the dropped entries (stored in the output's dtype)
    out_ptr : (B, V) of x's dtype, unit stride along V (x itself when INPLACE)
    """
    row = tl.program_id(0).to(tl.int64)
    tile = tl.program_id(1)
    bound_key = tl.load(bound_ptr + row * 2)
    bound_idx = tl.load(bound_ptr + row * 2 + 1)
    offs = tile * BLOCK + tl.arange(0, BLOCK)
    valid = offs < V
    x = tl.load(x_ptr + row * stride_x + offs, mask=valid, other=0.0)
    key = order_key(x.to(tl.float32)).to(tl.int64)
    keep = (key > bound_key) | ((key == bound_key) & (offs.to(tl.int64) <= bound_idx))
    dst = out_ptr + row * stride_out + offs
    out_ty = out_ptr.dtype.element_ty
    fill_block = (tl.zeros([BLOCK], tl.float32) + fill).to(out_ty)
    if INPLACE:
        tl.store(dst, fill_block, mask=valid & (keep == 0))
    else:
        tl.store(dst, tl.where(keep, x.to(out_ty), fill_block), mask=valid)
