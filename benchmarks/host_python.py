"""The Python host work of eager calls that replay a graph, measured on a CPU (not a test).

    python benchmarks/host_python.py [--calls 3000] [--profile]

An eager call at a small batch replays a CUDA graph qrita captured (``eager_graph``); its host
time (H100 host, s46d: ``sample`` p0.9 B = 1 78 µs, mask topp0.9 B = 1 60, ``top_k`` k50
B = 64 101) is the replay and a few torch copies (25-36 µs) plus the Python around them. This
script times that Python alone on a CPU machine: CPU tensors are described as GPU ones, the
graphs as in ``tests/test_eager_graph.py`` are stand-ins (the capture runs the launches once
under ``TRITON_INTERPRET=1``, a replay does nothing), so what is timed is the public call's
validation, dispatch, keys and the copies' torch calls (on small CPU tensors, V = ``--vocab``).
The numbers are this machine's, not the GPU host's: compare them with each other.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import io
import os
import pstats
import sys
import time

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import qrita  # noqa: E402
from qrita.backends import _torch as torch_adapter  # noqa: E402
from qrita.backends.triton import eager_graph  # noqa: E402
from qrita.testing import generators  # noqa: E402


class _NoReplay:
    def replay(self) -> None:
        pass


class _OnceCapture:
    """The launches run once (the warm-up is skipped), a replay runs nothing."""

    @staticmethod
    def warm_up(run, static, device) -> None:
        pass

    @staticmethod
    def capture(run, static, device):
        return _NoReplay(), run(*static)


def _as_gpu() -> None:
    describe = torch_adapter.describe

    def gpu_describe(x):
        return dataclasses.replace(describe(x), on_gpu=True)

    torch_adapter.describe = gpu_describe
    eager_graph.usable = lambda x: 0 < x.shape[0] <= eager_graph.MAX_ROWS  # noqa: E731
    eager_graph.usable_by_address = (  # noqa: E731
        lambda x: 0 < x.shape[0] <= eager_graph.ADDRESS_ROWS)
    eager_graph.usable_mask_by_address = lambda x: (  # noqa: E731
        eager_graph.MASK_ADDRESS and eager_graph.usable_by_address(x))
    eager_graph._CAPTURE = _OnceCapture


CASES = {
    "sample p0.9 B=1": (1, lambda x: qrita.sample(x, p=0.9, seed=1234)),
    "sample k50 B=1": (1, lambda x: qrita.sample(x, k=50, seed=1234)),
    "mask topp0.9 B=1": (1, lambda x: qrita.top_p_mask(x, 0.9)),
    "mask topk50 B=1": (1, lambda x: qrita.top_k_mask(x, 50)),
    "top_k k50 B=64": (64, lambda x: qrita.top_k(x, 50)),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--profile", action="store_true", help="also print a cProfile per case")
    args = ap.parse_args(argv)
    _as_gpu()
    rng = np.random.default_rng(0)
    for name, (batch, call) in CASES.items():
        if args.only and name not in args.only.split(","):
            continue
        x = torch.tensor(generators.zipf_logits(batch, args.vocab, 1.1, rng))
        eager_graph.clear()
        call(x)
        call(x)  # the capture
        if not eager_graph._GRAPHS:
            print(f"{name}: no graph kept ({eager_graph.FAILED_WHY})")
            continue
        for _ in range(100):
            call(x)
        t0 = time.perf_counter()
        for _ in range(args.calls):
            call(x)
        us = (time.perf_counter() - t0) / args.calls * 1e6
        print(f"{name:20s} {us:7.1f} us per call (V = {args.vocab}, {args.calls} calls)")
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(args.calls):
                call(x)
            prof.disable()
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
            print(s.getvalue()[:6000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
