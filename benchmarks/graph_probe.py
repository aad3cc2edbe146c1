"""Whether qrita's eager graphs replay for a public call, and what each call costs: per-call
host and synchronised time of sequential eager calls, then the eager graphs' bookkeeping
(graphs kept, keys seen once, keys whose capture failed and why, captures per family).

    python benchmarks/graph_probe.py --calls 12 --cases sample:topk50:8:float32,top_k:50:16:bfloat16

A case is ``op:scenario:B:dtype`` over zipf logits at V = ``--vocab``: op ``sample`` (scenario
topk50, topp0.9, topk100_topp0.9, ...), ``top_k`` (scenario: k), ``mask`` (topk50, topp0.9,
...). Each case starts from an empty set of graphs (``eager_graph.clear()``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import qrita  # noqa: E402
from qrita.backends.triton import eager_graph  # noqa: E402
from qrita.testing import generators  # noqa: E402


def _k_p(scenario: str) -> tuple[int | None, float | None]:
    k = p = None
    for part in scenario.split("_"):
        if part.startswith("topk"):
            k = int(part[4:])
        elif part.startswith("topp"):
            p = float(part[4:])
    return k, p


def _call(op: str, scenario: str, x: torch.Tensor):
    if op == "top_k":
        k = int(scenario)
        return lambda: qrita.top_k(x, k)
    k, p = _k_p(scenario)
    if op == "sample":
        return lambda: qrita.sample(x, k=k, p=p, seed=1234)
    if op == "mask":
        return lambda: qrita.top_k_top_p_mask(x, k, p)
    raise SystemExit(f"unknown op {op!r} (sample, top_k, mask)")


def time_calls(name: str, fn, calls: int) -> None:
    """Print the host / synchronised µs of ``calls`` sequential calls of ``fn``, then the eager
    graphs' bookkeeping (graphs, keys seen once, failed captures and why, captures)."""
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        times.append(f"{(t1 - t0) * 1e6:.0f}/{(t2 - t0) * 1e6:.0f}")
        del out
    print(f"{name}: host/synchronised us per call: {' '.join(times)}")
    print(f"  graphs {len(eager_graph._GRAPHS)} seen {len(eager_graph._SEEN)} failed "
          f"{len(eager_graph._FAILED)} captures {sum(eager_graph._CAPTURES.values())}")
    for op_name, why in eager_graph.FAILED_WHY:
        print(f"  capture of {op_name!r} failed: {why}")


def probe(case: str, vocab: int, calls: int) -> None:
    """One ``op:scenario:B:dtype`` case from an empty set of graphs (:func:`time_calls`)."""
    op, scenario, batch, dtype = case.split(":")
    rng = np.random.default_rng(0)
    x = torch.tensor(generators.zipf_logits(int(batch), vocab, 1.1, rng), device="cuda")
    x = x.to(getattr(torch, dtype))
    eager_graph.clear()
    time_calls(case, _call(op, scenario, x), calls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="sample:topk50:1:float32,sample:topk50:8:float32,"
                    "sample:topp0.9:8:float32,sample:topk50:8:bfloat16,sample:topp0.9:64:float32,"
                    "top_k:50:16:float32,top_k:50:16:bfloat16,top_k:1000:12:float32")
    ap.add_argument("--vocab", type=int, default=131072)
    ap.add_argument("--calls", type=int, default=12)
    args = ap.parse_args()
    print("device:", torch.cuda.get_device_name(), "torch", torch.__version__,
          "graphs: sample", eager_graph.SAMPLE, "top_k from", eager_graph.TOP_K_FROM)
    for case in args.cases.split(","):
        probe(case, args.vocab, args.calls)


if __name__ == "__main__":
    main()
