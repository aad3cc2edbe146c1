"""First look on a GPU (not a test): correctness on real shapes, then eager timings per scenario.

    python benchmarks/smoke_gpu.py
"""

from __future__ import annotations

import time

import numpy as np
import torch
import triton

from qrita.backends.triton import ops
from qrita.testing import compare, generators

SCENARIOS = {"topk50": (50, None), "topp0.9": (None, 0.9), "topk100_topp0.9": (100, 0.9),
             "topk1000": (1000, None), "topp0.99": (None, 0.99)}


def main() -> int:
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__)
    rng = np.random.default_rng(0)
    t0 = time.time()
    for V in (32000, 131072):
        for name, make in (("zipf", generators.zipf_logits), ("gauss", generators.gaussian_logits)):
            x_np = make(8, V, 1.1 if name == "zipf" else 2.0, rng)
            for dtype in (torch.float32, torch.bfloat16):
                x = torch.from_numpy(x_np).cuda().to(dtype)
                xh = x.float().cpu().numpy()
                for scen, (k, p) in SCENARIOS.items():
                    st = torch.zeros((8, ops.STATS_WIDTH), dtype=torch.int32, device="cuda")
                    t = time.time()
                    out = ops.top_k_top_p_mask(x, k, p, stats=st)
                    torch.cuda.synchronize()
                    first = time.time() - t
                    try:
                        compare.assert_mask_matches(out.float().cpu().numpy(), xh, k, p)
                        ok = "ok"
                    except AssertionError as err:
                        ok = "FAIL " + str(err)[:300]
                    s = st.cpu().numpy()
                    print(f"check {name:5s} V={V:6d} {str(dtype):14s} {scen:16s} first={first:6.1f}s "
                          f"hit={(s[:, 0] == 1).mean():.2f} cands={int(s[:, 3].mean()):6d} "
                          f"rounds={s[:, 4].mean():4.1f} {ok}", flush=True)
    print(f"checks done in {time.time() - t0:.0f} s")
    copy_src = torch.empty(1024 * 131072, device="cuda")
    copy_dst = torch.empty_like(copy_src)
    ms = triton.testing.do_bench(lambda: copy_dst.copy_(copy_src), return_mode="median")
    bw = 2 * copy_src.numel() * 4 / (ms * 1e-3)
    print(f"copy bandwidth {bw / 1e12:.2f} TB/s")
    for dtype in (torch.float32, torch.bfloat16):
        for V in (131072,):
            for B in (1, 8, 64, 256, 1024):
                x = torch.from_numpy(generators.zipf_logits(B, V, 1.1, rng)).cuda().to(dtype)
                line = []
                for scen, (k, p) in SCENARIOS.items():
                    st = torch.zeros((B, ops.STATS_WIDTH), dtype=torch.int32, device="cuda")
                    ops.top_k_top_p_mask(x, k, p, stats=st)
                    ms = triton.testing.do_bench(lambda x=x, k=k, p=p: ops.top_k_top_p_mask(x, k, p),
                                                 warmup=5, rep=40, return_mode="median")
                    floor_us = 2 * B * V * x.element_size() / bw * 1e6
                    line.append(f"{scen}={ms * 1000:7.1f}us(x{ms * 1000 / floor_us:4.1f},"
                                f"hit{(st[:, 0] == 1).float().mean().item():.2f})")
                for k in (50, 1000):
                    ms = triton.testing.do_bench(lambda x=x, k=k: ops.top_k(x, k), warmup=5, rep=40,
                                                 return_mode="median")
                    ms_t = triton.testing.do_bench(lambda x=x, k=k: torch.topk(x, k), warmup=5, rep=40,
                                                   return_mode="median")
                    line.append(f"top_k{k}={ms * 1000:7.1f}us(torch.topk {ms_t * 1000:7.1f})")
                print(f"time {str(dtype):14s} V={V} B={B:5d} " + " ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
