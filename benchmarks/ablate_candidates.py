"""Ablation of the candidate pass (not a test): which part of the streaming loop costs the time.

    python benchmarks/ablate_candidates.py [--batch 1024] [--vocab 131072] [--out DIR]

Stand-alone copies of the candidate loop with parts switched off (STEP 0: load and sum only;
1: + the cutoff compare and count; 2: + an order-preserving compaction by prefix sum over every
tile with candidates; 3: + the pipeline's compaction, one by one in sparse tiles),
in both grid orders (row-fastest, as the pipeline launches, or segment-fastest), for a few tiles
and warp counts. Times are do_bench medians in µs; the HBM floor of one read is printed.
"""

from __future__ import annotations

import argparse
import functools
import os

import numpy as np
import torch
import triton
import triton.language as tl

from qrita.backends.triton.primitives import compact_tile
from qrita.testing import generators


@triton.jit
def ablate_kernel(x_ptr, V, stride_x, seg_len, nseg, bound, cand_val_ptr, cand_idx_ptr, out_ptr,
                  BLOCK: tl.constexpr, CAP_SEG: tl.constexpr, STEP: tl.constexpr,
                  SEG_FAST: tl.constexpr):
    pid = tl.program_id(0)
    if SEG_FAST:
        row = pid // nseg
        seg = pid % nseg
    else:
        row = pid % (tl.num_programs(0) // nseg)
        seg = pid // (tl.num_programs(0) // nseg)
    row64 = (row * 0).to(tl.int64) + row
    row_x = x_ptr + row64 * stride_x
    slot = (row64 * nseg + seg) * CAP_SEG
    lanes = tl.arange(0, BLOCK)
    seg_start = seg * seg_len
    acc = tl.zeros([BLOCK], tl.float32)
    n_cand = row * 0
    for off in range(0, seg_len, BLOCK):
        offs = seg_start + off + lanes
        valid = offs < V
        x = tl.load(row_x + offs, mask=valid, other=0.0).to(tl.float32)
        if STEP == 0:
            acc += x
        else:
            is_cand = valid & (x >= bound)
            n_tile = tl.sum(is_cand.to(tl.int32), axis=0)
            if STEP == 3:  # the pipeline's compaction: one by one in sparse tiles
                if n_tile > 0:
                    compact_tile(x, seg_start + off, is_cand, lanes, n_tile, n_cand, row_x,
                                 cand_val_ptr + slot, cand_idx_ptr + slot, BLOCK, CAP_SEG, 8)
            elif STEP == 2:
                if n_tile > 0:
                    pos = n_cand + tl.cumsum(is_cand.to(tl.int32), axis=0) - 1
                    keep = is_cand & (pos < CAP_SEG)
                    tl.store(cand_val_ptr + slot + pos, x, mask=keep)
                    tl.store(cand_idx_ptr + slot + pos, offs, mask=keep)
            n_cand += n_tile
    tl.store(out_ptr + row64 * nseg + seg, tl.sum(acc, axis=0) + n_cand.to(tl.float32))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", default="1024")
    ap.add_argument("--vocab", default="131072")
    ap.add_argument("--out", default="results")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    lines = []
    for V in map(int, args.vocab.split(",")):
        for B in map(int, args.batch.split(",")):
            x = torch.from_numpy(generators.zipf_logits(B, V, 1.1, np.random.default_rng(0))).cuda()
            # a cutoff keeping about 450 entries per row (as the σ-cutoff does for top-k 50)
            bound = float(torch.kthvalue(x[0].cpu(), V - 450).values)
            seg_len, nseg, cap_seg = 8192, -(-V // 8192), 256
            cand_val = torch.empty(B * nseg * cap_seg, device="cuda")
            cand_idx = torch.empty(B * nseg * cap_seg, device="cuda", dtype=torch.int32)
            out = torch.empty(B * nseg, device="cuda")
            copy = triton.testing.do_bench(x.clone, return_mode="median") * 1000
            floor = copy / 2
            lines.append(f"B={B} V={V}: one read (half a clone) {floor:.1f} us")
            for step in (1, 2, 3):
                for seg_fast in (False,):
                    for block, warps in ((512, 2), (1024, 4), (2048, 4), (2048, 8), (4096, 8)):
                        call = functools.partial(
                            ablate_kernel[(B * nseg,)], x, V, x.stride(0), seg_len, nseg, bound,
                            cand_val, cand_idx, out, BLOCK=block, CAP_SEG=cap_seg, STEP=step,
                            SEG_FAST=seg_fast, num_warps=warps)
                        us = triton.testing.do_bench(call, return_mode="median") * 1000
                        lines.append(f"step={step} seg_fast={int(seg_fast)} block={block} "
                                     f"warps={warps}: {us:.1f} us ({us / floor:.2f}x floor)")
                        print(lines[-1], flush=True)
    with open(os.path.join(args.out, "ablate_candidates.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
