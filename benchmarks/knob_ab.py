"""Interleaved A/B of one environment knob in one process (not a test).

    python benchmarks/knob_ab.py --out DIR [--knob QRITA_ONE_LAUNCH_SCRATCH] [--values keep,zero]
        [--rounds 6] [--batch 1,8] [--calls "topk50 mask,top_k k50"]

Any knob the library reads at each call works: ``QRITA_ONE_LAUNCH_SCRATCH``,
``QRITA_LAUNCH_TABLE`` (``--values "default|search=2048x8"``: values split on ``|`` when one
holds a comma), ``QRITA_ONE_LAUNCH``. Calls: top-k masks (k = 50, 1000), top-p and
top-k + top-p masks (p = 0.9), ``top_k`` (k = 50, 1000); V = 131072, fp32 zipf rows.

Separate processes on the device's host differ by up to 2x in host time (BENCHMARKS.md), so a
knob read at every call is compared here inside one process: the rounds alternate the values'
order, each timing is a ``triton.testing.do_bench`` median of eager calls (the host's time at
small batches) and of calls with a synchronise each (host + device). Every call is checked
against the oracle first, once per value (``qrita.testing.compare``). Writes ``knob_ab.csv``
(one row per round, call, batch and value, with the device, versions, commit and command) and
prints each cell's median over the rounds.
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import statistics
import sys
import time

import numpy as np
import torch
import triton.testing

import qrita
from benchmarks.bench import git_commit, versions
from qrita.testing import compare, generators

#: call name -> (k, p, selection): a mask call unless ``selection`` (``qrita.top_k``)
CALLS = {
    "topk50 mask": (50, None, False),
    "topk1000 mask": (1000, None, False),
    "topp0.9 mask": (None, 0.9, False),
    "topk100_topp0.9 mask": (100, 0.9, False),
    "top_k k50": (50, None, True),
    "top_k k1000": (1000, None, True),
}


def _calls(x_t: torch.Tensor, names: list[str]):
    def call(k, p, selection):
        if selection:
            return lambda: qrita.top_k(x_t, k)
        return lambda: qrita.top_k_top_p_mask(x_t, k, p)

    return {name: call(*CALLS[name]) for name in names}


def _check(name: str, x: np.ndarray, out) -> None:
    k, p, selection = CALLS[name]
    if selection:
        values, indices = out
        compare.assert_topk_matches(values.cpu().numpy(), indices.cpu().numpy(), x, k)
    else:
        compare.assert_mask_matches(out.cpu().numpy(), x, k, p)


def _median_us(fn, device: str) -> float:
    """``triton.testing.do_bench``'s median on a GPU; on the CPU (the script's own test) the
    median of 5 timed calls."""
    if device != "cpu":
        return triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median") * 1e3
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def _run(args: argparse.Namespace, values: list[str], names: list[str]) -> list[dict]:
    """Oracle checks, then the timed rounds; one row per (batch, round, value, call)."""
    rows = []
    rng = np.random.default_rng(5)
    for batch in [int(b) for b in args.batch.split(",")]:
        x = generators.zipf_logits(batch, args.vocab, 1.1, rng).astype(np.float32)
        x_t = torch.from_numpy(x).to(args.device)
        calls = _calls(x_t, names)
        for value in values:
            os.environ[args.knob] = value
            for name, fn in calls.items():
                _check(name, x, fn())
        for rnd in range(args.rounds):
            order = values if rnd % 2 == 0 else values[::-1]
            for value in order:
                os.environ[args.knob] = value
                for name, fn in calls.items():
                    eager = _median_us(fn, args.device)

                    def synced(fn=fn):
                        fn()
                        if args.device != "cpu":
                            torch.cuda.synchronize()

                    sync = _median_us(synced, args.device)
                    rows.append(dict(batch=batch, call=name, value=value, round=rnd,
                                     eager_us=round(eager, 2), sync_us=round(sync, 2)))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results")
    ap.add_argument("--knob", default="QRITA_ONE_LAUNCH_SCRATCH")
    ap.add_argument("--values", default="keep,zero",
                    help="comma list (or |-separated when a value holds a comma)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--batch", default="1,8")
    ap.add_argument("--vocab", type=int, default=131072)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--calls", default="topk50 mask,top_k k50",
                    help=f"comma list of call names from {', '.join(CALLS)}")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    values = args.values.split("|" if "|" in args.values else ",")
    names = [name.strip() for name in args.calls.split(",")]
    unknown = [name for name in names if name not in CALLS]
    if unknown:
        ap.error(f"unknown calls {unknown}; known: {list(CALLS)}")
    before = os.environ.get(args.knob)
    try:
        rows = _run(args, values, names)
    finally:  # the knob as it was
        if before is None:
            os.environ.pop(args.knob, None)
        else:
            os.environ[args.knob] = before
    meta = dict(device=(torch.cuda.get_device_name() if args.device != "cpu" else "cpu"),
                **versions(), commit=git_commit(), knob=args.knob,
                command=shlex.join([sys.executable, *sys.argv]))
    rows = [dict(row, **meta) for row in rows]
    with open(os.path.join(args.out, "knob_ab.csv"), "w", newline="") as f:
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
