"""Where the time goes (not a test): per-launch GPU time of the mask pipeline, and paths taken.

    python benchmarks/profile_pipeline.py [--batch 1,64,1024] [--vocab 131072] [--out DIR]
        [--scenarios topk50,topp0.9,...,k50,k1000] [--workloads zipf,gaussian]

For each (workload, scenario, dtype, B): runs the whole call once with ``stats`` to count the
rows per path (mode 1: candidates sufficed, 2: single-program fallback, 4: segmented top-p
stage; ``retried``: top-k rows whose pass A ran a second time at a second cutoff), then times the
whole eager call, its CUDA-graph replay, and the GPU time per call of each kernel
(torch.profiler's CUDA kernel times, averaged over repeats). Prints one table; writes CSV rows.
Scenarios ``k50`` / ``k1000`` profile ``top_k`` (sorted) instead of a mask (no statistics);
``sample_*`` profile ``sample`` (for top-p alone, ``modes`` counts the draws per row).
"""

from __future__ import annotations

import argparse
import collections
import csv
import os

import numpy as np
import torch
import triton

from qrita.backends.triton import launch, ops, sampling_ops
from qrita.testing import generators

SCENARIOS = {"topk50": (50, None), "topp0.9": (None, 0.9), "topp0.99": (None, 0.99),
             "topk100_topp0.9": (100, 0.9),
             "topk1000": (1000, None)}
SELECTIONS = {"k50": 50, "k1000": 1000}  # ops.top_k (sorted), no per-row statistics
# sampling_ops.sample (seed 1234, offset 0); "modes" counts the rejection draw's draws per row
SAMPLES = {"sample_topp0.9": (None, 0.9), "sample_topp0.99": (None, 0.99),
           "sample_topk100_topp0.9": (100, 0.9)}


def kernel_times(fn, repeats: int = 20) -> dict[str, float]:
    """µs per call and kernel name, averaged over ``repeats`` calls of ``fn`` (CUDA activity
    only; a kernel launched twice per call, e.g. pass A and its retry, counts both)."""
    per_name: dict[str, list[float]] = collections.defaultdict(list)
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(repeats):
            fn()
        torch.cuda.synchronize()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            per_name[event.name].append(event.device_time if hasattr(event, "device_time")
                                        else event.cuda_time)
    return {name: sum(v) / repeats for name, v in per_name.items()}


def write_rows(rows: list[dict], path: str) -> None:
    """CSV of ``rows`` (columns: every key, in first-seen order)."""
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
        writer.writeheader()
        writer.writerows(rows)
    print("CSV:", path)


def graph_us(fn) -> float:
    fn()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    return triton.testing.do_bench(graph.replay, return_mode="median") * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", default="1,64,1024")
    ap.add_argument("--vocab", default="131072")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--out", default="results")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--workloads", default="zipf,gaussian")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(0)
    rows = []
    for V in map(int, args.vocab.split(",")):
        for B in map(int, args.batch.split(",")):
            for workload, make in (("zipf", generators.zipf_logits),
                                   ("gaussian", generators.gaussian_logits)):
                if workload not in args.workloads.split(","):
                    continue
                x32 = torch.from_numpy(make(B, V, 1.1 if workload == "zipf" else 2.0, rng)).cuda()
                for dtype in args.dtypes.split(","):
                    x = x32.to(getattr(torch, dtype))
                    for scen in args.scenarios.split(","):
                        if scen in SAMPLES:
                            k, p = SAMPLES[scen]
                            modes, band_hits, retried = {}, 0, -1
                            if k is None:
                                draws = torch.zeros(B, dtype=torch.int32, device="cuda")
                                launch.launch_reject_topp_sample(x, None, p, 1234, 0, rounds=draws)
                                modes = collections.Counter(draws.tolist())
                            call = lambda x=x, k=k, p=p: sampling_ops.sample(  # noqa: E731
                                x, k, p, seed=1234, offset=0)
                        elif scen in SELECTIONS:
                            modes, band_hits, retried = {}, 0, -1
                            call = lambda x=x, k=SELECTIONS[scen]: ops.top_k(x, k)  # noqa: E731
                        else:
                            k, p = SCENARIOS[scen]
                            stats = torch.zeros((B, ops.STATS_WIDTH), dtype=torch.int32,
                                                device="cuda")
                            ops.top_k_top_p_mask(x, k, p, stats=stats)
                            modes = collections.Counter(stats[:, 0].tolist())
                            band_hits = int((stats[:, 13] == 1).sum())  # wide rows the band finished
                            retried = int((stats[:, 14] == 1).sum())  # rows with pass A twice
                            call = lambda x=x, k=k, p=p: ops.top_k_top_p_mask(x, k, p)  # noqa: E731
                        eager = triton.testing.do_bench(call, return_mode="median") * 1000
                        kernels = kernel_times(call)
                        row = dict(workload=workload, scenario=scen, dtype=dtype, B=B, V=V,
                                   eager_us=round(eager, 1), graph_us=round(graph_us(call), 1),
                                   modes=dict(sorted(modes.items())), band_hits=band_hits,
                                   retried=retried,
                                   kernels={n.split("_kernel")[0]: round(t, 1)
                                            for n, t in kernels.items()})
                        rows.append(row)
                        print(f"{workload:8s} {scen:16s} {dtype:8s} B={B:5d} eager={eager:8.1f} "
                              f"graph={row['graph_us']:8.1f} modes={row['modes']} band={band_hits} "
                              f"retried={retried} "
                              f"kernels={row['kernels']}", flush=True)
    write_rows(rows, os.path.join(args.out, "profile_pipeline.csv"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
