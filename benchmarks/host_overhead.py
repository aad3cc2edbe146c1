"""Host-side cost of one call (not a test): where the eager time goes at small batches.

    python benchmarks/host_overhead.py [--out DIR]

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

from qrita.backends.triton import ops
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
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    x = torch.from_numpy(generators.zipf_logits(1, 131072, 1.1, np.random.default_rng(0))).cuda()
    lines = []
    for name, k, p in (("topk50", 50, None), ("topp0.9", None, 0.9)):
        call = lambda k=k, p=p: ops.top_k_top_p_mask(x, k, p)  # noqa: E731
        lines.append(f"{name} B=1 host {host_us(call):.1f} us/call, "
                     f"with sync {host_us(call, sync_each=True):.1f} us/call")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(200):
            call()
        prof.disable()
        torch.cuda.synchronize()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(22)
        lines.append(buf.getvalue())
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "host_overhead.txt"), "w") as fh:
        fh.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
