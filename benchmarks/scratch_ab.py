"""Interleaved A/B of one environment knob in one process (not a test).

    python benchmarks/scratch_ab.py --out DIR [--knob QRITA_ONE_LAUNCH_SCRATCH] [--values keep,zero]
        [--rounds 6] [--batch 1,8] [--calls "topk50 mask,top_k k50"]

Separate processes on the device's host differ by up to 2x in host time (BENCHMARKS.md), so a
knob read at every call is compared here inside one process: the rounds alternate the values'
order, each timing is a ``triton.testing.do_bench`` median of eager calls (the host's time at
small batches) and of calls with a synchronise each (host + device). Every call is checked
against the oracle first, once per value. Writes ``scratch_ab.csv`` (one row per round, call,
batch and value) and prints each cell's median over the rounds.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics

import numpy as np
import torch
import triton.testing

import qrita
from qrita.reference import oracle
from qrita.testing import generators


def _calls(x_t: torch.Tensor):
    return {
        "topk50 mask": lambda: qrita.top_k_mask(x_t, 50),
        "top_k k50": lambda: qrita.top_k(x_t, 50),
        "top_k k1000": lambda: qrita.top_k(x_t, 1000),
    }


def _check(name: str, x: np.ndarray, out) -> None:
    if name == "topk50 mask":
        want = oracle.top_k_mask(x, 50)
        got = out.cpu().numpy()
        assert np.array_equal(np.isneginf(got), np.isneginf(want)), name
        return
    k = 50 if name.endswith("k50") else 1000
    want = oracle.top_k(x, k)
    values, indices = out
    assert np.array_equal(indices.cpu().numpy(), want.indices), name
    assert np.array_equal(values.cpu().numpy(), want.values), name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results")
    ap.add_argument("--knob", default="QRITA_ONE_LAUNCH_SCRATCH")
    ap.add_argument("--values", default="keep,zero")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--calls", default="", help="comma list of call names (default: all)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    values = args.values.split(",")
    rows = []
    rng = np.random.default_rng(5)
    for batch in [int(b) for b in args.batch.split(",")]:
        x = generators.zipf_logits(batch, 131072, 1.1, rng).astype(np.float32)
        x_t = torch.from_numpy(x).cuda()
        calls = {name: fn for name, fn in _calls(x_t).items()
                 if not args.calls or name in args.calls.split(",")}
        for value in values:
            os.environ[args.knob] = value
            for name, fn in calls.items():
                _check(name, x, fn())
        for rnd in range(args.rounds):
            order = values if rnd % 2 == 0 else values[::-1]
            for value in order:
                os.environ[args.knob] = value
                for name, fn in calls.items():
                    eager = triton.testing.do_bench(fn, warmup=10, rep=60,
                                                    return_mode="median") * 1e3

                    def synced(fn=fn):
                        fn()
                        torch.cuda.synchronize()

                    sync = triton.testing.do_bench(synced, warmup=10, rep=60,
                                                   return_mode="median") * 1e3
                    rows.append(dict(batch=batch, call=name, value=value, round=rnd,
                                     eager_us=round(eager, 2), sync_us=round(sync, 2)))
    with open(os.path.join(args.out, "scratch_ab.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{args.knob}: median over {args.rounds} rounds, eager / synced us")
    for batch in sorted({r["batch"] for r in rows}):
        for name in dict.fromkeys(r["call"] for r in rows if r["batch"] == batch):
            cells = []
            for value in values:
                mine = [r for r in rows if (r["batch"], r["call"], r["value"]) == (batch, name, value)]
                cells.append(f"{value} {statistics.median(r['eager_us'] for r in mine):7.1f} / "
                             f"{statistics.median(r['sync_us'] for r in mine):7.1f}")
            print(f"B={batch:<3} {name:12s} " + "   ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
