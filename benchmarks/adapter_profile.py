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
import pstats
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402


def _host_us(fn, sync, n: int = 2000) -> float:
    """Host µs per call, best of 5 x n back-to-back calls with one sync each."""
    for _ in range(20):
        fn()
    sync()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def _arrays(torch, host: np.ndarray) -> dict:
    """library -> (its GPU array of ``host``, a sync function)."""
    arrays = {"torch": (torch.from_numpy(host).cuda(), torch.cuda.synchronize)}
    try:
        import cupy

        arrays["cupy"] = (cupy.asarray(host), cupy.cuda.get_current_stream().synchronize)
    except ImportError:
        pass
    try:
        import jax

        gpus = [d for d in jax.devices() if d.platform == "gpu"]
        if gpus:
            x_j = jax.device_put(host, gpus[0])
            arrays["jax"] = (x_j, lambda: jax.block_until_ready(x_j))
    except ImportError:
        pass
    return arrays


def _steps(torch, arrays: dict) -> list[str]:
    """Host µs of the bare exchange steps (no qrita code)."""
    lines = []
    t = arrays["torch"][0]
    if "cupy" in arrays:
        import cupy

        x, sync = arrays["cupy"]
        lines.append(f"torch.from_dlpack(cupy array)      {_host_us(lambda: torch.from_dlpack(x), sync):8.1f}")
        lines.append(f"cupy.from_dlpack(torch tensor)     {_host_us(lambda: cupy.from_dlpack(t), sync):8.1f}")
        lines.append(f"cupy get_current_stream().ptr      {_host_us(lambda: cupy.cuda.get_current_stream().ptr, sync):8.1f}")
        lines.append(f"cupy.cuda.runtime.getDevice()      {_host_us(cupy.cuda.runtime.getDevice, sync):8.1f}")
        lines.append(f"torch.cuda.current_stream()        {_host_us(torch.cuda.current_stream, sync):8.1f}")
    if "jax" in arrays:
        import jax

        from qrita.backends import _jax

        x, sync = arrays["jax"]
        lines.append(f"torch.from_dlpack(jax array)       {_host_us(lambda: torch.from_dlpack(x), sync):8.1f}")
        lines.append(f"jax.dlpack.from_dlpack(torch)      {_host_us(lambda: jax.dlpack.from_dlpack(t), sync):8.1f}")
        lines.append(f"qrita _jax.to_torch(jax array)     {_host_us(lambda: _jax.to_torch(x), sync):8.1f}")
        lines.append(f"qrita _jax.from_torch(torch, like) {_host_us(lambda: _jax.from_torch(t, x), sync):8.1f}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--top", type=int, default=18)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import torch

    import qrita

    host = np.random.default_rng(1).normal(0.0, 3.0, size=(1, 131072)).astype(np.float32)
    arrays = _arrays(torch, host)
    calls = {
        "topk50 mask": lambda x: qrita.top_k_top_p_mask(x, 50, None),
        "top_k k50": lambda x: qrita.top_k(x, 50),
        "sample p0.9": lambda x: qrita.sample(x, p=0.9, seed=7),
    }
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
    text = "\n".join(report)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "adapter_profile.txt"), "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
