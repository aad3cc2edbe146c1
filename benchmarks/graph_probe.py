"""Whether qrita's eager graphs replay for a public call, and what each call costs: per-call
host and synchronised time of sequential eager calls, then the eager graphs' bookkeeping
(graphs kept, keys seen once, keys whose capture failed and why, captures per family).

    python benchmarks/graph_probe.py --calls 12 --cases sample:topk50:8:float32,top_k:50:16:bfloat16
    python benchmarks/graph_probe.py --steps --cases sample:topp0.9:1:float32

With ``--steps``, each case whose graph replays also times the host steps of its eager call one
by one (``--step-calls`` back-to-back calls each, no synchronisation between them: the host's
cost as long as the GPU keeps up): the whole call, the graph's replay alone, the static copies
into it, a pinned host tensor like the sampler's seed and offset, the output's copy; and lists
the GPU activities one replay runs (torch.profiler), e.g. fills torch adds to a replay.

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


def _host_us(fn, calls: int) -> tuple[float, float]:
    """Host µs per call of ``calls`` back-to-back calls (no synchronisation between them), and
    wall µs per call once the GPU has finished them too."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / calls * 1e6, (t2 - t0) / calls * 1e6


def _gpu_activities(label: str, fn) -> None:
    """Print the GPU activities (kernels, copies, fills) of one ``fn()`` by torch.profiler:
    each one's name, µs, and the idle µs before it."""
    try:
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        gpu = sorted((e for e in prof.events() if e.device_type.name == "CUDA"),
                     key=lambda e: e.time_range.start)
        parts, last_end = [], None
        for e in gpu:
            gap = 0.0 if last_end is None else e.time_range.start - last_end
            parts.append(f"{e.name[:44]} {e.time_range.elapsed_us():.1f} (+{gap:.1f})")
            last_end = e.time_range.end
        busy = sum(e.time_range.elapsed_us() for e in gpu)
        span = (gpu[-1].time_range.end - gpu[0].time_range.start) if gpu else 0.0
        print(f"  {label}: {len(gpu)} GPU activities, busy {busy:.1f} us of a {span:.1f} us "
              f"span: " + "; ".join(parts))
    except Exception as error:  # noqa: BLE001 (a probe: say why and go on)
        print(f"  {label}: profiler: {error!r}"[:300])


def host_steps(name: str, fn, calls: int) -> None:
    """Host µs of back-to-back calls and the wall µs per call with them; for a call that replays
    a graph (the most recently used one), host µs per step; the GPU activities of one call (and
    of one replay alone)."""
    host, wall = _host_us(fn, calls)
    print(f"{name}: back-to-back ({calls} calls): host {host:.1f} us/call, wall {wall:.1f} "
          f"us/call")
    _gpu_activities("one call", fn)
    if not eager_graph._GRAPHS:
        return
    entry = next(reversed(eager_graph._GRAPHS.values()))
    tensors = [t for t in entry.inputs if isinstance(t, torch.Tensor)]
    steps = {"graph.replay()": entry.graph.replay}
    for i, t in enumerate(tensors):
        src = t.clone() if t.is_cuda else t
        if t.is_cuda and t.numel() <= 64:  # a counters buffer: its source is pinned host memory
            src = t.cpu().pin_memory()
        steps[f"static[{i}].copy_({tuple(t.shape)}, {src.device.type})"] = (
            lambda t=t, src=src: t.copy_(src, non_blocking=True))
    steps["torch.tensor([2 words], pin_memory=True)"] = (
        lambda: torch.tensor([1, 2], dtype=torch.int64, pin_memory=True))
    outputs = entry.output if isinstance(entry.output, tuple) else (entry.output,)
    for i, o in enumerate(outputs):
        if isinstance(o, torch.Tensor):
            steps[f"output[{i}].clone() {tuple(o.shape)}"] = o.clone
    steps["torch.cuda.current_device()"] = torch.cuda.current_device
    parts = [f"{step} {_host_us(f, calls)[0]:.1f}" for step, f in steps.items()]
    print(f"  host us per step ({calls} calls each): " + "; ".join(parts))
    _gpu_activities("one replay", entry.graph.replay)


def probe(case: str, vocab: int, calls: int, steps: int = 0) -> None:
    """One ``op:scenario:B:dtype`` case from an empty set of graphs (:func:`time_calls`)."""
    op, scenario, batch, dtype = case.split(":")
    rng = np.random.default_rng(0)
    x = torch.tensor(generators.zipf_logits(int(batch), vocab, 1.1, rng), device="cuda")
    x = x.to(getattr(torch, dtype))
    eager_graph.clear()
    fn = _call(op, scenario, x)
    time_calls(case, fn, calls)
    if steps:
        host_steps(case, fn, steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="sample:topk50:1:float32,sample:topk50:8:float32,"
                    "sample:topp0.9:8:float32,sample:topk50:8:bfloat16,sample:topp0.9:64:float32,"
                    "top_k:50:16:float32,top_k:50:16:bfloat16,top_k:1000:12:float32")
    ap.add_argument("--vocab", type=int, default=131072)
    ap.add_argument("--calls", type=int, default=12)
    ap.add_argument("--steps", action="store_true", help="also time each host step")
    ap.add_argument("--step-calls", type=int, default=300)
    args = ap.parse_args()
    print("device:", torch.cuda.get_device_name(), "torch", torch.__version__,
          "graphs: sample", eager_graph.SAMPLE, "top_k from", eager_graph.TOP_K_FROM)
    for case in args.cases.split(","):
        probe(case, args.vocab, args.calls, args.step_calls if args.steps else 0)


if __name__ == "__main__":
    main()
