"""The fused top-p sampler's histogram band on the GPU: how many searches it answers and what the
sampler costs, per workload / dtype / batch, for the band's knobs (bins, histogram tile) and with
the band off (pivot rounds only). A measurement script (not a test): one CSV row per cell.

    python benchmarks/topp_hist.py --out DIR [--batch 1,1024] [--configs hist:1024:4096,...]

A config is mode:bins:hblock[:phases] (mode hist or rounds; phases: the kernel's PHASES
ablation, e.g. 1 = the first pass alone; the token is then meaningless).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys

import torch
import triton
import triton.testing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import make_device_logits  # noqa: E402

from qrita.backends.triton import launch as launch_mod  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results")
    ap.add_argument("--batch", default="1,1024")
    ap.add_argument("--vocab", type=int, default=131072)
    ap.add_argument("--p", type=float, default=0.9)
    ap.add_argument("--configs", default="hist:1024:4096,hist:512:4096,hist:2048:4096,rounds:0:0")
    ap.add_argument("--workloads", default="zipf,gaussian")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for workload in a.workloads.split(","):
        for dtype in [getattr(torch, d) for d in a.dtypes.split(",")]:
            for B in [int(b) for b in a.batch.split(",")]:
                x = make_device_logits(workload, B, a.vocab, 7, "cuda").to(dtype)
                u = torch.rand(B, device="cuda", dtype=torch.float32)
                for cfg in a.configs.split(","):
                    mode, bins, hblock, *phases = cfg.split(":")
                    os.environ["QRITA_TOPP_PHASES"] = phases[0] if phases else "9"
                    os.environ["QRITA_TOPP_HIST"] = "1" if mode == "hist" else "0"
                    if mode == "hist":
                        os.environ["QRITA_TOPP_BINS"] = bins
                        os.environ["QRITA_TOPP_HBLOCK"] = hblock
                    rounds = torch.zeros((B, 2), dtype=torch.int32, device="cuda")
                    tok, _ = launch_mod.launch_fused_topp_sample(x, u, None, a.p, logprob=False,
                                                                 rounds=rounds)
                    ref_tok = tok.clone()
                    def call(x=x, u=u):
                        return launch_mod.launch_fused_topp_sample(x, u, None, a.p,
                                                                   logprob=False)
                    us = triton.testing.do_bench(call, warmup=5, rep=20,
                                                 return_mode="median") * 1e3
                    tok2, _ = launch_mod.launch_fused_topp_sample(x, u, None, a.p, logprob=False)
                    hits = rounds[:, 0].float()
                    row = dict(workload=workload, dtype=str(dtype).split(".")[-1], B=B,
                               V=a.vocab, p=a.p, config=cfg, us=round(us, 1),
                               both_hit=round(float((hits == 2).float().mean()), 3),
                               mean_hits=round(float(hits.mean()), 3),
                               mean_round_reads=round(float(rounds[:, 1].float().mean()), 2),
                               repeat_equal=bool(torch.equal(ref_tok, tok2)),
                               device=torch.cuda.get_device_name(), torch=torch.__version__,
                               triton=triton.__version__)
                    rows.append(row)
                    print(" ".join(f"{k}={v}" for k, v in row.items()
                                   if k not in ("device", "torch", "triton")), flush=True)
                    with open(os.path.join(a.out, "topp_hist.csv"), "w", newline="") as f:
                        w = csv.DictWriter(f, fieldnames=list(rows[0]))
                        w.writeheader()
                        w.writerows(rows)
                for knob in ("QRITA_TOPP_HIST", "QRITA_TOPP_PHASES"):
                    os.environ.pop(knob, None)


if __name__ == "__main__":
    main()
