"""Measure launch parameters (not a test): the data behind the launch table.

    python benchmarks/tune_launch.py [--stage cand|cand_warps|wide|wide_warps|band|wide_sparse|cand_sparse] [--batch 1,64,1024]
                                     [--vocab 131072] [--out DIR]

For each (dtype, V, B, scenario) and each (tile, warps) of the candidate pass (``cand``) or of the
wide top-p stage's compaction (``wide``), checks that the mask is identical to the default
configuration's, then records that kernel's GPU time (torch.profiler, median over repeats) and
the whole call's do_bench median. Prints a table and writes ``tune_launch[_wide].csv``; the
winners go into ``qrita/backends/triton/launch.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

import numpy as np
import torch
import triton

from qrita.backends.triton import launch
from qrita.testing import generators

try:  # the per-kernel timer and CSV writer of the profiling script (same folder)
    from profile_pipeline import kernel_times, write_rows
except ImportError:  # pragma: no cover - run from the repository root
    from benchmarks.profile_pipeline import kernel_times, write_rows

CANDIDATE_CONFIGS = [(512, 2), (512, 4), (1024, 2), (1024, 4), (1024, 8), (2048, 4), (2048, 8)]
WIDE_CONFIGS = [(256, 1), (256, 2), (512, 1), (512, 2), (1024, 2), (1024, 4)]
TOP_P = {"topp0.9": (None, 0.9), "topp0.99": (None, 0.99)}
STAGES = {  # configurations (PipelineConfig fields), scenarios, kernel name prefix timed
    "cand": ([dict(block_cand=b, warps_cand=w) for b, w in CANDIDATE_CONFIGS],
             {"topk50": (50, None), "topp0.9": (None, 0.9)}, "candidates"),
    "wide": ([dict(block_wide=b, warps_wide=w) for b, w in WIDE_CONFIGS], TOP_P, "wide_compact"),
    "band": ([dict(band_sample=n) for n in (1024, 2048, 4096, 8192)], TOP_P, "threshold"),
    # the band is 2-3% of the row: the one-by-one append (tiles with <= SPARSE candidates) may
    # lose to the tile's prefix sum there; 0 = prefix sums only
    "wide_sparse": ([dict(sparse_wide=s) for s in (0, 1, 2, 4, 8, 16)], TOP_P, "wide_compact"),
    # one warp per program: the per-tile count and the append reduce by shuffles alone
    "cand_warps": ([dict(block_cand=b, warps_cand=w) for b, w in
                    [(512, 2), (128, 1), (256, 1), (512, 1), (1024, 1), (256, 2)]],
                   {"topk50": (50, None), "topk1000": (1000, None), "topp0.9": (None, 0.9)},
                   "candidates"),
    "wide_warps": ([dict(block_wide=b, warps_wide=w) for b, w in [(256, 2), (256, 1), (128, 1)]],
                   TOP_P, "wide_compact"),
    "cand_sparse": ([dict(sparse=s, sparse_wide=8) for s in (0, 1, 2, 4, 8, 16)],
                    {"topk50": (50, None), "topk1000": (1000, None)}, "candidates"),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", default="cand", choices=sorted(STAGES))
    ap.add_argument("--batch", default="1,64,1024")
    ap.add_argument("--vocab", default="131072")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--out", default="results")
    args = ap.parse_args(argv)
    configs, scenarios, prefix = STAGES[args.stage]
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(0)
    rows = []
    for V in map(int, args.vocab.split(",")):
        for B in map(int, args.batch.split(",")):
            x32 = torch.from_numpy(generators.zipf_logits(B, V, 1.1, rng)).cuda()
            for dtype in args.dtypes.split(","):
                x = x32.to(getattr(torch, dtype))
                base_cfg = launch.pipeline_config(V, x.dtype)
                for scen, (k, p) in scenarios.items():
                    ref = launch.launch_mask(x, torch.empty_like(x), k, p, float("-inf"),
                                             config=base_cfg)
                    for fields in configs:
                        if base_cfg.seg_len % fields.get("block_cand", fields.get("block_wide", 1)):
                            continue
                        cfg = dataclasses.replace(base_cfg, **fields)
                        out = torch.empty_like(x)

                        def call(x=x, cfg=cfg, out=out, k=k, p=p):
                            return launch.launch_mask(x, out, k, p, float("-inf"), config=cfg)

                        stats = torch.zeros((B, launch.ROW_INFO), dtype=torch.int32,
                                            device=x.device)
                        launch.launch_mask(x, out, k, p, float("-inf"), row_info=stats,
                                           config=cfg)
                        same = bool(torch.equal(out, ref))
                        kernels = kernel_times(call)
                        kernel = sum(t for n, t in kernels.items() if n.startswith(prefix))
                        total = triton.testing.do_bench(call, return_mode="median") * 1000
                        row = dict(dtype=dtype, V=V, B=B, scenario=scen, **fields, kernel=prefix,
                                   kernel_us=round(kernel, 1), call_us=round(total, 1),
                                   band_hits=int((stats[:, 13] == 1).sum()), identical=same)
                        rows.append(row)
                        print(" ".join(f"{k_}={v}" for k_, v in row.items()), flush=True)
    name = "tune_launch.csv" if args.stage == "cand" else f"tune_launch_{args.stage}.csv"
    write_rows(rows, os.path.join(args.out, name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
