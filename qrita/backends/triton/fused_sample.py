"""``@triton.jit`` kernel of the fused top-k-bounded sampler (docs/sampling.md, "fused path").
Imports triton only.

``fused_topk_sample_kernel``, grid (B, S): the one-launch selection of each row's first k entries
(:func:`qrita.backends.triton.one_launch.select_rows`, sorted by rank in registers, k <= 1024),
then, in the program that arrived last, the rest of the reference sampler on those k entries
(:mod:`qrita.reference.sampling`), in float64 registers: temperature, top-p over the top-k
survivors, min-p, and the inverse-CDF draw with the row's uniform. One read of the logits, no
V-sized output, one launch.

Why the selection may use the unscaled logits: for a temperature t with 1e-30 <= t <= 1e30 (the
host checks it), x / t in float64 neither overflows nor underflows for any float32 x, and float64
division keeps distinct float32 values distinct and in order, so the reference's order of the
scaled row is the order of the row itself.
"""

import triton
import triton.language as tl

from qrita.backends.triton.one_launch import select_rows, sort_selection


@triton.jit
def _row_param(ptr, bits, row64, ARRAY: tl.constexpr):
    """A per-row float64 parameter: ptr[row] (any float dtype) or a scalar passed as the int64 bit
    pattern of a float64 (exact: Python floats are float64)."""
    if ARRAY:
        v = tl.load(ptr + row64).to(tl.float64)
    else:
        v = (bits + row64 * 0).to(tl.int64).to(tl.float64, bitcast=True)
    return v


@triton.jit
def draw_from_sorted(sel_val, sel_idx, n, t, p, min_p, u, HAS_P: tl.constexpr,
                     HAS_MIN_P: tl.constexpr, K_P2: tl.constexpr):
    """Token and log-probability of one row from its first n entries in rank order (sel_val,
    sel_idx), as :func:`qrita.reference.sampling.sample_with_uniforms` draws them.

    t, p, min_p : float64 (t not > 0: greedy; p >= 1 or NaN: top-p off, p <= 0: the first entry;
    min_p <= 0 or NaN: off, above 1: 1); u : the row's uniform in [0, 1)
    """
    j = tl.arange(0, K_P2)
    valid = j < n
    idx = tl.load(sel_idx + j, mask=valid, other=0)
    x = tl.load(sel_val + j, mask=valid, other=0.0).to(tl.float64)
    positive = t > 0.0
    scaled = x / tl.where(positive, t, 1.0)
    # weights (largest 1): +inf entries share the mass; else exp(s - max) over finite entries
    is_pinf = valid & (scaled == float("inf"))
    finite = valid & (tl.abs(scaled) < float("inf"))
    any_pinf = tl.max(is_pinf.to(tl.int32), axis=0) > 0
    any_finite = tl.max(finite.to(tl.int32), axis=0) > 0
    top = tl.max(tl.where(finite, scaled, -float("inf")), axis=0)
    w = tl.where(finite, tl.exp(tl.where(finite, scaled, top) - top), 0.0)
    w = tl.where(any_pinf, is_pinf.to(tl.float64), w)
    defined = any_pinf | any_finite
    keep = valid
    if HAS_P:  # top-p over the top-k survivors: keep j iff the mass before it is < p
        p_on = (p < 1.0) & (p == p)
        csum = tl.cumsum(w, axis=0)
        total = tl.max(tl.where(valid, csum, 0.0), axis=0)
        before = (csum - w) / tl.where(total > 0.0, total, 1.0)
        keep = tl.where(p_on & defined & (p > 0.0), keep & (before < p), keep)
        keep = tl.where(p_on & (p <= 0.0), j == 0, keep)
    if HAS_MIN_P:  # weights over the kept prefix are the same (its first entry is the maximum)
        m_on = min_p > 0.0
        keep = tl.where(m_on & defined, keep & (w >= tl.minimum(min_p, 1.0)), keep)
    w_kept = tl.where(keep, w, 0.0)
    csum_w = tl.cumsum(w_kept, axis=0)
    total_w = tl.max(csum_w, axis=0)
    probs = w_kept / tl.where(total_w > 0.0, total_w, 1.0)
    cdf = tl.cumsum(probs, axis=0)
    last = tl.max(tl.where(keep, cdf, 0.0), axis=0)
    n_kept = tl.sum(keep.to(tl.int32), axis=0)
    pick = tl.sum((keep & (cdf <= u * last)).to(tl.int32), axis=0)
    pick = tl.minimum(pick, n_kept - 1)
    drawn = positive & defined
    pick = tl.where(drawn, pick, 0)
    token = tl.sum(tl.where(j == pick, idx, 0), axis=0)
    prob = tl.sum(tl.where(j == pick, probs, 0.0), axis=0)
    logp = tl.where(drawn, tl.log(tl.where(prob > 0.0, prob, 1.0)), 0.0)
    return token, logp


@triton.jit(do_not_specialize=["t_bits", "p_bits", "min_p_bits"])
def fused_topk_sample_kernel(
    x_ptr, t_ptr, p_ptr, min_p_ptr, u_ptr,
    V, stride_x, seg_len, k, max_cands, t_bits, p_bits, min_p_bits,
    ws_i_ptr, ws_f_ptr, sel_val_ptr, sel_idx_ptr, token_ptr, logp_ptr,
    T_ARRAY: tl.constexpr, HAS_P: tl.constexpr, P_ARRAY: tl.constexpr,
    HAS_MIN_P: tl.constexpr, MIN_P_ARRAY: tl.constexpr, K_P2: tl.constexpr,
    SAMPLE: tl.constexpr, OVERSAMPLE: tl.constexpr, BLOCK: tl.constexpr,
    BLOCK_CAND: tl.constexpr, CAP_SEG: tl.constexpr, NSEG_P2: tl.constexpr,
    SPARSE: tl.constexpr, DENSE: tl.constexpr,
):
    """One token per row, top-k (1 <= k <= K_P2 <= 1024, k < V) then top-p / min-p, in one launch.

    x_ptr : (B, V) logits, unit stride along V
    t_ptr / p_ptr / min_p_ptr : (B,) floating when T_ARRAY / P_ARRAY / MIN_P_ARRAY, else the
        scalar is ``*_bits`` (the int64 bit pattern of a float64)
    u_ptr : (B,) float32 uniforms in [0, 1)
    ws_i_ptr / ws_f_ptr : the zeroed one-launch scratch; sel_val_ptr / sel_idx_ptr : (B, k) x's
        dtype / int64 scratch (the sorted selection)
    token_ptr : (B,) int64; logp_ptr : (B,) float32
    """
    is_last = select_rows(x_ptr, V, stride_x, seg_len, k, max_cands, ws_i_ptr, ws_f_ptr,
                          sel_val_ptr, sel_idx_ptr, False, True, K_P2, SAMPLE, OVERSAMPLE, BLOCK,
                          BLOCK_CAND, CAP_SEG, NSEG_P2, SPARSE, DENSE)
    if is_last:
        tl.debug_barrier()  # the sorted selection is written
        _draw_row(t_ptr, p_ptr, min_p_ptr, u_ptr, k, t_bits, p_bits, min_p_bits, sel_val_ptr,
                  sel_idx_ptr, token_ptr, logp_ptr, T_ARRAY, HAS_P, P_ARRAY, HAS_MIN_P,
                  MIN_P_ARRAY, K_P2)


@triton.jit
def _draw_row(t_ptr, p_ptr, min_p_ptr, u_ptr, k, t_bits, p_bits, min_p_bits, sel_val_ptr,
              sel_idx_ptr, token_ptr, logp_ptr, T_ARRAY: tl.constexpr, HAS_P: tl.constexpr,
              P_ARRAY: tl.constexpr, HAS_MIN_P: tl.constexpr, MIN_P_ARRAY: tl.constexpr,
              K_P2: tl.constexpr):
    """This program's row: its parameters, then :func:`draw_from_sorted` over its sorted k
    entries; stores the token and the float32 log-probability."""
    row = tl.program_id(0)
    row64 = (row * 0).to(tl.int64) + row
    t = _row_param(t_ptr, t_bits, row64, T_ARRAY)
    p = _row_param(p_ptr, p_bits, row64, P_ARRAY)
    min_p = _row_param(min_p_ptr, min_p_bits, row64, MIN_P_ARRAY)
    u = tl.load(u_ptr + row64).to(tl.float64)
    token, logp = draw_from_sorted(sel_val_ptr + row64 * k, sel_idx_ptr + row64 * k, k, t, p,
                                   min_p, u, HAS_P, HAS_MIN_P, K_P2)
    tl.store(token_ptr + row64, token)
    tl.store(logp_ptr + row64, logp.to(tl.float32))


@triton.jit(do_not_specialize=["t_bits", "p_bits", "min_p_bits"])
def selection_sample_kernel(
    x_ptr, t_ptr, p_ptr, min_p_ptr, u_ptr,
    stride_x, k, t_bits, p_bits, min_p_bits,
    sel_val_ptr, sel_idx_ptr, token_ptr, logp_ptr,
    T_ARRAY: tl.constexpr, HAS_P: tl.constexpr, P_ARRAY: tl.constexpr,
    HAS_MIN_P: tl.constexpr, MIN_P_ARRAY: tl.constexpr, K_P2: tl.constexpr,
):
    """The large-batch form of :func:`fused_topk_sample_kernel`, grid (B,): each row's first k
    entries come from the pipeline's selection (index order, ``launch_select``); this kernel
    sorts them by rank in registers and draws, as the fused kernel's last program does.

    x_ptr : (B, V) logits, unit stride along V (the sort re-reads the selected values)
    sel_val_ptr / sel_idx_ptr : (B, k) x's dtype / int64, each row's selection (overwritten by
        the sorted selection)
    other arguments as in :func:`fused_topk_sample_kernel`
    """
    row = tl.program_id(0)
    row64 = (row * 0).to(tl.int64) + row
    sort_selection(x_ptr + row64 * stride_x, sel_val_ptr + row64 * k, sel_idx_ptr + row64 * k,
                   k, False, K_P2)
    tl.debug_barrier()  # the sorted selection is written
    _draw_row(t_ptr, p_ptr, min_p_ptr, u_ptr, k, t_bits, p_bits, min_p_bits, sel_val_ptr,
              sel_idx_ptr, token_ptr, logp_ptr, T_ARRAY, HAS_P, P_ARRAY, HAS_MIN_P, MIN_P_ARRAY,
              K_P2)
