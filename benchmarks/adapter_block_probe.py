"""Does an adapter step block the host until the GPU catches up? (issue 5; not a test)

The JAX eager call costs ~176 µs of host time more than the same call from torch (s43a), while
its exchange steps timed alone add up to ~80. A step that waits for queued GPU work would
explain the rest. Each step here runs twice: with the GPU idle, and right after a ~2 ms GPU
sleep queued on torch's current stream (or on JAX's stream for external ready events). A step
whose host time grows by about the sleep waits for the GPU; one that stays at its idle time
does not.

    python benchmarks/adapter_block_probe.py [--reps 15] [--sleep-us 2000] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402
from adapter_overhead import write_lines  # noqa: E402


def _sleep_cycles(torch, sleep_us: float) -> int:
    """GPU clock cycles of ``torch.cuda._sleep`` that take about ``sleep_us`` µs."""
    cycles = 1_000_000
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(2):
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
    ms = start.elapsed_time(end)
    return int(cycles * sleep_us / (ms * 1e3))


def _median_us(step, before, sync_all, reps: int) -> float:
    """Median host µs of ``step()`` called right after ``before()`` (each rep from an idle GPU)."""
    times = []
    for _ in range(reps):
        sync_all()
        state = before()
        t0 = time.perf_counter()
        step(state)
        times.append(time.perf_counter() - t0)
    sync_all()
    return float(np.median(times) * 1e6)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--sleep-us", type=float, default=2000.0)
    ap.add_argument("--vocab", type=int, default=131072)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import torch

    import qrita

    rng = np.random.default_rng(1)
    host = rng.normal(0.0, 3.0, size=(1, args.vocab)).astype(np.float32)
    cycles = _sleep_cycles(torch, args.sleep_us)
    x_t = torch.from_numpy(host).cuda()
    syncs = [torch.cuda.synchronize]
    libs = {"torch": x_t}
    try:
        import cupy

        libs["cupy"] = cupy.asarray(host)
        syncs.append(lambda: cupy.cuda.Device().synchronize())
    except ImportError:
        cupy = None
    jax = None
    try:
        import jax

        gpus = [d for d in jax.devices() if d.platform == "gpu"]
        if gpus:
            libs["jax"] = jax.device_put(host, gpus[0])
            jax.block_until_ready(libs["jax"])
        else:
            jax = None
    except ImportError:
        pass

    def sync_all():
        for s in syncs:
            s()
        if jax is not None:
            jax.effects_barrier()

    def idle():
        return None

    def torch_sleep():
        torch.cuda._sleep(cycles)

    calls = {
        "topk50 mask": lambda x: qrita.top_k_top_p_mask(x, 50, None),
        "top_k k50": lambda x: qrita.top_k(x, 50),
        "sample p0.9": lambda x: qrita.sample(x, p=0.9, seed=7),
    }
    for x in libs.values():  # compile and capture first
        for call in calls.values():
            call(x)
    sync_all()
    lines = [f"host µs per step, median of {args.reps} (B=1, V={args.vocab}, float32); "
             f"'after sleep': right after a {args.sleep_us:.0f} µs GPU sleep on the stream named"]
    lines.append(f"{'step':<46} {'idle GPU':>10} {'after sleep':>12}")

    def row(name, step, before_busy, before_idle=idle):
        held = []

        def keep(state, step=step):
            held.append(step(state))  # results stay alive: deleting them is its own step

        a = _median_us(keep, before_idle, sync_all, args.reps)
        held.clear()
        sync_all()
        b = _median_us(keep, before_busy, sync_all, args.reps)
        held.clear()
        sync_all()
        lines.append(f"{name:<46} {a:10.1f} {b:12.1f}")
        print(lines[-1], flush=True)

    for lib, x in libs.items():
        for cname, call in calls.items():
            row(f"{lib} {cname} (torch stream)", lambda s, x=x, call=call: call(x), torch_sleep)
    if "jax" in libs:
        from qrita.backends import _jax

        x_j = libs["jax"]
        device = next(iter(x_j.devices()))
        jax_stream = None
        try:
            ptr = int(device.get_stream_for_external_ready_events())
            jax_stream = torch.cuda.ExternalStream(ptr, device=x_t.device)
        except Exception as err:  # noqa: BLE001
            print("no JAX stream for external ready events:", err)

        def jax_sleep():
            with torch.cuda.stream(jax_stream):
                torch.cuda._sleep(cycles)

        out_t = torch.empty_like(x_t)

        def fresh_output():  # a torch result still being written when the step starts
            torch.cuda._sleep(cycles)
            out_t.copy_(x_t)
            return out_t

        row("jax to_torch (torch stream)", lambda s: _jax.to_torch(x_j), torch_sleep)
        if jax_stream is not None:
            row("jax to_torch (JAX stream)", lambda s: _jax.to_torch(x_j), jax_sleep)
        row("jax from_torch of a pending result", lambda s: _jax.from_torch(s, x_j),
            fresh_output, before_idle=lambda: out_t)
        if jax_stream is not None:
            row("jax from_torch (JAX stream)", lambda s: _jax.from_torch(out_t, x_j), jax_sleep)

        def imported_pending():
            out = _jax.from_torch(fresh_output(), x_j)
            return [out]

        def imported_idle():
            out = _jax.from_torch(out_t, x_j)
            sync_all()
            return [out]

        row("jax: delete an imported, pending array", lambda s: s.clear(), imported_pending,
            before_idle=imported_idle)

        def call_pending():
            torch.cuda._sleep(cycles)
            return [qrita.top_k_top_p_mask(x_j, 50, None)]

        def call_idle():
            out = [qrita.top_k_top_p_mask(x_j, 50, None)]
            sync_all()
            return out

        row("jax: delete a pending mask result", lambda s: s.clear(), call_pending,
            before_idle=call_idle)
        if jax_stream is not None:
            for cname, call in calls.items():
                row(f"jax {cname} (JAX stream)", lambda s, call=call: call(x_j), jax_sleep)
    write_lines(args.out, "adapter_block_probe.txt", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
