"""Host-side cost of one call (not a test): where the eager time goes at small batches.

    python benchmarks/host_overhead.py [--out DIR] [--only "topk50,public top_k k50"] [--rows N]

Times N back-to-back calls without synchronising (the host's cost per call, as long as the GPU
keeps up), the same with a synchronise per call, and prints a cProfile of the host work.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time

import numpy as np
import torch

import qrita
from qrita.backends.triton import ops, sampling_ops
from qrita.testing import generators


def host_us(fn, n: int = 300, sync_each: bool = False) -> float:
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
        if sync_each:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results")
    ap.add_argument("--only", default="", help="comma list of call names (default: all)")
    ap.add_argument("--rows", type=int, default=22, help="cProfile rows per call")
    ap.add_argument("--batch", type=int, default=1, help="rows B of the zipf logits (V = 131072)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    batch = args.batch
    x = torch.from_numpy(generators.zipf_logits(batch, 131072, 1.1,
                                                np.random.default_rng(0))).cuda()
    u = torch.rand(batch, device="cuda")
    lines = []
    calls = {
        "topk50": lambda: ops.top_k_top_p_mask(x, 50, None),
        "topp0.9": lambda: ops.top_k_top_p_mask(x, None, 0.9),
        "public topp0.9 mask": lambda: qrita.top_k_top_p_mask(x, None, 0.9),
        "public topk50 mask": lambda: qrita.top_k_top_p_mask(x, 50, None),
        "public top_k k50": lambda: qrita.top_k(x, 50),
        "ops.top_k k50 sorted": lambda: ops.top_k(x, 50),
        "ops.top_k k50 unsorted": lambda: ops.top_k(x, 50, sorted=False),
        "torch.topk k50": lambda: torch.topk(x, 50),
        "public sample k100 p0.9": lambda: qrita.sample(x, k=100, p=0.9, seed=1234),
        "public sample k50": lambda: qrita.sample(x, k=50, seed=1234),
        "public sample p0.9": lambda: qrita.sample(x, p=0.9, seed=1234),
        "ops sample_with_uniforms k100 p0.9": lambda: sampling_ops.sample_with_uniforms(
            x, u, 100, 0.9),
        "philox uniforms": lambda: sampling_ops.uniforms(1234, 0, batch, x.device),
    }
    only = [c.strip() for c in args.only.split(",")] if args.only else list(calls)
    for name in only:
        call = calls[name]
        lines.append(f"{name} B={batch} host {host_us(call):.1f} us/call, "
                     f"with sync {host_us(call, sync_each=True):.1f} us/call")
        print(lines[-1], flush=True)
        if name.startswith("torch"):
            continue
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(200):
            call()
        prof.disable()
        torch.cuda.synchronize()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(args.rows)
        lines.append(buf.getvalue())
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "host_overhead.txt"), "w") as fh:
        fh.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
