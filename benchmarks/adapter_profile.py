"""Where an adapter's host time goes: cProfile of the same qrita call from torch, CuPy and JAX.

Not a test. For each library with a GPU array (B = 1, V = 131072, float32) it runs ``--calls``
back-to-back calls of a mask, ``top_k`` and ``sample`` under ``cProfile`` and prints the
functions with the most own time, plus host µs per call of the bare DLPack steps each adapter
takes (the library's import of a torch tensor and torch's import of the library's array), so the
difference to torch (``adapter_overhead.py``) can be split into qrita's own Python and the
libraries' exchange.

    python benchmarks/adapter_profile.py [--calls 2000] [--top 18] [--out DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pathlib
import pstats
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402
from adapter_overhead import _host_us, gpu_arrays, host_calls  # noqa: E402


def _steps(torch, arrays: dict) -> list[str]:
    """Host µs of the bare exchange steps (no qrita code)."""
    t = arrays["torch"][0]
    steps = []
    if "cupy" in arrays:
        import cupy

        x, sync = arrays["cupy"]
        steps += [("torch.from_dlpack(cupy array)", lambda: torch.from_dlpack(x), sync),
                  ("cupy.from_dlpack(torch tensor)", lambda: cupy.from_dlpack(t), sync),
                  # the CUDA array interface: CuPy keeps the exporter alive (its memory's owner);
                  # torch exports version 2, no stream, so CuPy does not synchronise
                  ("cupy.asarray(torch tensor) (CAI)", lambda: cupy.asarray(t), sync),
                  ("cupy get_current_stream().ptr", lambda: cupy.cuda.get_current_stream().ptr,
                   sync),
                  ("torch.cuda.current_stream()", torch.cuda.current_stream, sync)]
    if "jax" in arrays:
        import jax

        from qrita.backends import _jax

        x_j, sync_j = arrays["jax"]
        steps += [("torch.from_dlpack(jax array)", lambda: torch.from_dlpack(x_j), sync_j),
                  ("jax.dlpack.from_dlpack(torch)", lambda: jax.dlpack.from_dlpack(t), sync_j),
                  ("qrita _jax.to_torch(jax array)", lambda: _jax.to_torch(x_j), sync_j),
                  ("qrita _jax.from_torch(torch, like)", lambda: _jax.from_torch(t, x_j),
                   sync_j)]
    return [f"{label:<35}{_host_us(fn, sync, 2000):8.1f}" for label, fn, sync in steps]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--top", type=int, default=18)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import torch

    import qrita

    host = np.random.default_rng(1).normal(0.0, 3.0, size=(1, 131072)).astype(np.float32)
    arrays = gpu_arrays(torch, host, [])
    calls = host_calls(qrita)
    report = ["host µs per call of the bare exchange steps (B=1, V=131072, float32)"]
    report += _steps(torch, arrays)
    for name, call in calls.items():
        for lib, (x, sync) in arrays.items():
            for _ in range(50):
                call(x)
            sync()
            prof = cProfile.Profile()
            t0 = time.perf_counter()
            prof.enable()
            for _ in range(args.calls):
                call(x)
            prof.disable()
            sync()
            per_call = (time.perf_counter() - t0) / args.calls * 1e6
            text = io.StringIO()
            stats = pstats.Stats(prof, stream=text)
            stats.sort_stats("tottime").print_stats(args.top)
            body = [ln for ln in text.getvalue().splitlines() if ln.strip()][3:]
            report.append(f"\n== {name} from {lib}: {per_call:.1f} µs per call under cProfile "
                          f"({args.calls} calls; tottime / percall in s)")
            report += [ln[:160] for ln in body]
    print("\n".join(report))
    if args.out:
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "adapter_profile.txt").write_text("\n".join(report) + "\n")


if __name__ == "__main__":
    main()
