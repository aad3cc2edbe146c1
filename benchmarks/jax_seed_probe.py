"""A jitted seeded ``sample`` whose seed array is a new argument at every call (issue 5 / 6;
not a test): does XLA record the callback again per call? µs per call (400 back to back, then
a sync; best of 3), B = 1 and 8, V = 131072 float32, top-p 0.9, for command buffers on (the
program compiled at minimum graph size 1) and off, with the seeds taken from a pool of 64
device arrays, or put on the device at every call.

    python benchmarks/jax_seed_probe.py [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402
from adapter_overhead import write_lines  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import jax

    import qrita

    gpu = jax.devices("cuda")[0]
    lines = [f"jax {jax.__version__}; µs per call (400 back to back, then a sync; best of 3)"]
    for batch in (1, 8):
        x = jax.device_put(np.random.default_rng(1).normal(0, 3, (batch, 131072))
                           .astype(np.float32), gpu)
        pool = [jax.device_put(np.arange(batch, dtype=np.int32) + 100 * i, gpu)
                for i in range(64)]
        for cb in ("1", "0"):
            os.environ["QRITA_JAX_COMMAND_BUFFER"] = cb
            options = {"xla_gpu_graph_min_graph_size": 1} if cb == "1" else None
            fn = jax.jit(lambda x, s: qrita.sample(x, p=0.9, seed=s), compiler_options=options)
            jax.block_until_ready(fn(x, pool[0]))
            for source in ("pool of 64", "device_put per call"):
                def seeds(i, source=source, pool=pool, batch=batch):
                    if source == "pool of 64":
                        return pool[i % 64]
                    return jax.device_put(np.arange(batch, dtype=np.int32) + i, gpu)
                best = float("inf")
                for _ in range(3):
                    last = []
                    t0 = time.perf_counter()
                    for i in range(400):
                        last.append(fn(x, seeds(i)))
                        del last[:-2]
                    jax.block_until_ready(last)
                    best = min(best, (time.perf_counter() - t0) / 400 * 1e6)
                lines.append(f"B={batch} cb {cb} seeds {source:<20} {best:8.1f}")
                print(lines[-1], flush=True)
    write_lines(args.out, "jax_seed_probe.txt", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
