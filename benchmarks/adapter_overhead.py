"""Adapter overhead: the same qrita call on the same data from torch, CuPy and JAX (eager and jit).

Not a test. Prints microseconds per call and the difference to torch (the adapter-free path).

    python benchmarks/adapter_overhead.py [--batch 8] [--vocab 131072] [--k 50] [--p 0.9]

Two timings per library:

* ``do_bench``: ``triton.testing.do_bench`` (CUDA events on torch's current stream). torch and CuPy
  (CuPy's null stream is torch's default stream) are measured as launched; a JAX call ends with
  ``block_until_ready`` because JAX's work is not on torch's stream, so it also pays a host sync.
* ``sync``: a wall-clock loop that synchronises after every call, the same for all libraries.

Then a table of host µs per call at B = 1 (back-to-back calls, one sync per block: the caller's
thread's cost) for a mask, ``top_k`` and ``sample`` from each library, the libraries taking
turns block by block: the adapter's cost per call is the median of the per-round differences to
torch.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402


def _wall_us(fn, sync, reps: int = 200) -> float:
    for _ in range(10):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e6)


def _block_us(fn, sync, n: int) -> float:
    """Host µs per call of one block of ``n`` back-to-back calls, with one sync at the end."""
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t0) / n * 1e6


def _host_us(fn, sync, n: int = 400) -> float:
    """Host µs per call of ``n`` back-to-back calls (one sync at the end): the caller's thread's
    cost per call while the GPU keeps up (small inputs: GPU work below the host time)."""
    for _ in range(20):
        fn()
    sync()
    return min(_block_us(fn, sync, n) for _ in range(5))


def write_lines(out: str | None, name: str, lines: list[str]) -> None:
    """The probes' report: ``lines`` into ``out/name`` (nothing when ``out`` is None)."""
    if out:
        path = pathlib.Path(out)
        path.mkdir(parents=True, exist_ok=True)
        (path / name).write_text("\n".join(lines) + "\n")


def host_calls(qrita) -> dict:
    """The calls the host tables time: a mask, ``top_k`` and ``sample`` (B = 1 logits)."""
    return {
        "topk50 mask": lambda x: qrita.top_k_top_p_mask(x, 50, None),
        "top_k k50": lambda x: qrita.top_k(x, 50),
        "sample p0.9": lambda x: qrita.sample(x, p=0.9, seed=7),
    }


def gpu_arrays(torch, host: np.ndarray, last: list) -> dict:
    """library -> (``host`` on its first GPU, a sync function) for torch, CuPy and JAX (those
    importable with a GPU). JAX's sync waits for the newest result appended to ``last``."""
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
            arrays["jax"] = (x_j, lambda: jax.block_until_ready(last[-1]) if last else None)
    except ImportError:
        pass
    return arrays


def paired_host_us(fns: dict, syncs: dict, base: str, rounds: int = 15,
                   n: int = 100) -> tuple[dict, dict]:
    """Interleaved host timing: each round times one block of ``n`` calls of every entry of
    ``fns`` in turn (:func:`_block_us`), so a drift of the host's speed hits every entry alike.
    Returns (entry -> median µs per call over the rounds, entry -> median over the rounds of its
    difference to ``base`` in the same round)."""
    for name, fn in fns.items():
        for _ in range(20):
            fn()
        syncs[name]()
    per_round: dict = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            per_round[name].append(_block_us(fn, syncs[name], n))
    medians = {name: float(np.median(t)) for name, t in per_round.items()}
    diffs = {name: float(np.median(np.subtract(t, per_round[base])))
             for name, t in per_round.items() if name != base}
    return medians, diffs


def _host_table(qrita, torch) -> None:
    """Host µs per call of the same calls from torch, CuPy and JAX (eager), B = 1, V = 131072:
    a mask, top_k and sample; the difference to torch is the adapter's cost per call. The
    libraries take turns in blocks of 100 calls (15 rounds, :func:`paired_host_us`): the cost is
    the median of the per-round differences, which a drifting host speed does not bias."""
    rng = np.random.default_rng(1)
    host = rng.normal(0.0, 3.0, size=(1, 131072)).astype(np.float32)
    calls = host_calls(qrita)
    last: list = []
    arrays = gpu_arrays(torch, host, last)
    print("host µs per call, back-to-back (B=1, V=131072, float32; libraries interleaved in "
          "blocks of 100 calls, median of 15 rounds)")
    print(f"{'call':<14}" + "".join(f"{lib:>12}" for lib in arrays)
          + "   adapter cost vs torch (median of paired rounds)")
    for name, call in calls.items():
        fns, syncs = {}, {}
        for lib, (x, sync) in arrays.items():
            if lib == "jax":
                last.clear()
                fns[lib] = lambda x=x, call=call: last.append(call(x)) or (  # noqa: E731
                    last.pop(0) if len(last) > 2 else None)
            else:
                fns[lib] = lambda x=x, call=call: call(x)  # noqa: E731
            syncs[lib] = sync
        cells, diffs = paired_host_us(fns, syncs, "torch")
        cost = " ".join(f"{lib} {diffs[lib]:+.1f}" for lib in diffs)
        print(f"{name:<14}" + "".join(f"{cells[lib]:12.1f}" for lib in arrays) + f"   {cost}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=131072)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--p", type=float, default=0.9)
    args = ap.parse_args()

    import torch
    import triton.testing

    import qrita

    rng = np.random.default_rng(0)
    host = rng.normal(0.0, 3.0, size=(args.batch, args.vocab)).astype(np.float32)
    k, p = args.k, args.p
    rows: list[tuple[str, float, float]] = []

    x_t = torch.from_numpy(host).cuda()
    torch_fn = lambda: qrita.top_k_top_p_mask(x_t, k, p)  # noqa: E731
    rows.append(
        (
            "torch",
            triton.testing.do_bench(torch_fn) * 1e3,
            _wall_us(torch_fn, torch.cuda.synchronize),
        )
    )

    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        x_c = cupy.asarray(host)
        cupy_fn = lambda: qrita.top_k_top_p_mask(x_c, k, p)  # noqa: E731
        sync = cupy.cuda.get_current_stream().synchronize
        rows.append(("cupy", triton.testing.do_bench(cupy_fn) * 1e3, _wall_us(cupy_fn, sync)))

    try:
        import jax
    except ImportError:
        jax = None
    if jax is not None and any(d.platform == "gpu" for d in jax.devices()):
        gpu = next(d for d in jax.devices() if d.platform == "gpu")
        x_j = jax.device_put(host, gpu)
        eager = lambda: qrita.top_k_top_p_mask(x_j, k, p)  # noqa: E731
        jitted = jax.jit(lambda x: qrita.top_k_top_p_mask(x, k, p))
        for name, fn in (("jax eager", eager), ("jax jit", lambda: jitted(x_j))):
            last = []
            run = lambda fn=fn, last=last: last.append(fn())  # noqa: E731
            sync = lambda last=last: last[-1].block_until_ready() if last else None  # noqa: E731
            blocking = lambda fn=fn: fn().block_until_ready()  # noqa: E731
            rows.append((name, triton.testing.do_bench(blocking) * 1e3, _wall_us(run, sync)))
            last.clear()

    if jax is not None and any(d.platform == "gpu" for d in jax.devices()):
        _jax_steps(qrita, x_j, x_t, k, p)
    _host_table(qrita, torch)
    if cupy is not None:
        _cupy_steps(qrita, torch, cupy)
    base_bench, base_wall = rows[0][1], rows[0][2]
    print(f"top_k_top_p_mask B={args.batch} V={args.vocab} k={k} p={p} float32")
    print(f"{'library':<10} {'do_bench us':>12} {'diff':>9} {'sync us':>10} {'diff':>9}")
    for name, bench, wall in rows:
        print(
            f"{name:<10} {bench:12.1f} {bench - base_bench:+9.1f} {wall:10.1f} {wall - base_wall:+9.1f}"
        )


def _print_steps(steps: dict) -> None:
    """Each step's host µs per call (median of 200 after 10 warm-up calls; no syncs)."""
    for name, fn in steps.items():
        for _ in range(10):
            fn()
        times = []
        for _ in range(200):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        print(f"  {name:<32} {np.median(times) * 1e6:9.1f}")


def _jax_steps(qrita, x_j, x_t, k, p) -> None:
    """Host time of each step of a JAX eager call (no syncs: what the caller's thread pays), and
    the largest items of a cProfile of the whole call."""
    import cProfile
    import pstats

    import jax
    import torch

    from qrita.backends import _jax

    out_t = qrita.top_k_top_p_mask(x_t, k, p)
    steps = {
        "describe": lambda: _jax.describe(x_j),
        "to_torch (torch.from_dlpack)": lambda: _jax.to_torch(x_j),
        "from_torch (jax from_dlpack)": lambda: _jax.from_torch(out_t, x_j),
        "stream_scope": lambda: _jax.stream_scope(x_j).__enter__(),
        "torch call (same data)": lambda: qrita.top_k_top_p_mask(x_t, k, p),
        "jax eager call": lambda: qrita.top_k_top_p_mask(x_j, k, p),
    }
    print("JAX eager steps, host µs per call (no sync; median of 200)")
    _print_steps(steps)
    torch.cuda.synchronize()
    jax.block_until_ready(x_j)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(100):
        qrita.top_k_top_p_mask(x_j, k, p)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(14)


def _cupy_steps(qrita, torch, cupy) -> None:
    """Host time of each step of a CuPy eager ``top_k`` (k = 50, B = 1, V = 131072; no syncs)
    against the same torch call, and cProfiles of both calls (largest own times): where the
    CuPy call's extra host time goes."""
    import cProfile
    import pstats

    from qrita.backends import _cupy

    host = np.random.default_rng(1).normal(0.0, 3.0, size=(1, 131072)).astype(np.float32)
    x_c = cupy.asarray(host)
    x_t = torch.from_numpy(host).cuda()
    out_t = qrita.top_k(x_t, 50)[1]
    steps = {
        "describe": lambda: _cupy.describe(x_c),
        "to_torch": lambda: _cupy.to_torch(x_c),
        "from_torch": lambda: _cupy.from_torch(out_t, x_c),
        "stream_scope": lambda: _cupy.stream_scope(x_c).__enter__(),
        "torch top_k (same data)": lambda: qrita.top_k(x_t, 50),
        "cupy top_k": lambda: qrita.top_k(x_c, 50),
    }
    print("CuPy eager top_k k50 steps, host µs per call (no sync; median of 200)")
    _print_steps(steps)
    for name, x in (("cupy", x_c), ("torch", x_t)):
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(200):
            qrita.top_k(x, 50)
        prof.disable()
        print(f"cProfile of 200 {name} top_k calls")
        pstats.Stats(prof).sort_stats("tottime").print_stats(16)


if __name__ == "__main__":
    main()
