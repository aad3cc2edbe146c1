"""Why the bench's eager column can read above the back-to-back time of the same calls (not a
test): ``triton.testing.do_bench`` of one eager call, against per-call event spans with and
without the L2 flush it puts before each call, and the GPU activities of a few flushed calls
(kernels and the idle time before each).

    python benchmarks/eager_probe.py [--case top_k:50:1024:float32] [--calls 50]

s45b's bench read ``top_k`` k50 at B = 1024 eager 369 µs against its graph replay's 266, while
back-to-back calls (``graph_probe.py --steps``, s46d) ran at 261 µs a call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402

import qrita  # noqa: E402
from benchmarks.graph_probe import _gpu_activities  # noqa: E402
from qrita.testing import generators  # noqa: E402


def spans(fn, calls: int, flush: torch.Tensor | None) -> list[float]:
    """Event spans (µs) of ``calls`` calls queued back to back, each after a flush if given."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    torch.cuda.synchronize()
    for i in range(calls):
        if flush is not None:
            flush.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="top_k:50:1024:float32")
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()
    op, k, batch, dtype = args.case.split(":")
    x = torch.tensor(generators.zipf_logits(int(batch), 131072, 1.1, np.random.default_rng(0)),
                     device="cuda").to(getattr(torch, dtype))
    if op == "top_k":
        fn = lambda: qrita.top_k(x, int(k))  # noqa: E731
    else:
        fn = lambda: qrita.top_p_mask(x, float(k))  # noqa: E731
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    flush = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda")
    print(f"{args.case}: do_bench median {triton.testing.do_bench(fn, return_mode='median') * 1e3:.1f} us")
    for label, buf in (("flushed", flush), ("no flush", None)):
        s = spans(fn, args.calls, buf)
        print(f"  event spans, {label}: median {statistics.median(s):.1f} us, first five "
              + " ".join(f"{v:.0f}" for v in s[:5]))
    _gpu_activities("four flushed calls", lambda: spans(fn, 4, flush))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
