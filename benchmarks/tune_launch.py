"""Measure launch parameters of the candidate pass (not a test): the data behind the launch table.

    python benchmarks/tune_launch.py [--batch 1,64,1024] [--vocab 131072] [--out DIR]

For each (dtype, V, B, scenario) and each (tile, warps) of the candidate pass, checks that the
mask is identical to the default configuration's, then records the candidate kernel's GPU time
(torch.profiler, median over repeats) and the whole call's do_bench median. Prints a table and
writes ``tune_launch.csv``; the winners go into ``qrita/backends/triton/launch.py``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os

import numpy as np
import torch
import triton

from qrita.backends.triton import launch
from qrita.testing import generators

try:  # the per-kernel timer of the profiling script (same folder)
    from profile_pipeline import kernel_times
except ImportError:  # pragma: no cover - run from the repository root
    from benchmarks.profile_pipeline import kernel_times

CANDIDATE_CONFIGS = [(512, 2), (512, 4), (1024, 2), (1024, 4), (1024, 8), (2048, 4), (2048, 8)]
SCENARIOS = {"topk50": (50, None), "topp0.9": (None, 0.9)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", default="1,64,1024")
    ap.add_argument("--vocab", default="131072")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--out", default="results")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(0)
    rows = []
    for V in map(int, args.vocab.split(",")):
        for B in map(int, args.batch.split(",")):
            x32 = torch.from_numpy(generators.zipf_logits(B, V, 1.1, rng)).cuda()
            for dtype in args.dtypes.split(","):
                x = x32.to(getattr(torch, dtype))
                base_cfg = launch.pipeline_config(V, x.dtype)
                for scen, (k, p) in SCENARIOS.items():
                    ref = launch.launch_mask(x, torch.empty_like(x), k, p, float("-inf"),
                                             config=base_cfg)
                    for block, warps in CANDIDATE_CONFIGS:
                        if base_cfg.seg_len % block:
                            continue
                        cfg = dataclasses.replace(base_cfg, block_cand=block, warps_cand=warps)
                        out = torch.empty_like(x)

                        def call(x=x, cfg=cfg, out=out, k=k, p=p):
                            return launch.launch_mask(x, out, k, p, float("-inf"), config=cfg)

                        call()
                        same = bool(torch.equal(out, ref))
                        kernels = kernel_times(call)
                        cand = sum(t for n, t in kernels.items() if n.startswith("candidates"))
                        total = triton.testing.do_bench(call, return_mode="median") * 1000
                        row = dict(dtype=dtype, V=V, B=B, scenario=scen, block=block,
                                   warps=warps, candidates_us=round(cand, 1),
                                   call_us=round(total, 1), identical=same)
                        rows.append(row)
                        print(" ".join(f"{k_}={v}" for k_, v in row.items()), flush=True)
    path = os.path.join(args.out, "tune_launch.csv")
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print("CSV:", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
