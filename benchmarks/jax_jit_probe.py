"""Where a qrita call inside ``jax.jit`` spends its host time (issue 5; not a test).

Inside jit the kernels run from a ``buffer_callback``: at each execution XLA calls back into
Python, which launches the Triton kernels on XLA's stream. This times µs per call back to back
(one sync after each 400, so a GPU slower than the host shows; best of 5 x 400, B = 1,
V = 131072, float32):

- a jitted ``x + 1`` (JAX's own dispatch floor);
- a jitted ``buffer_callback`` that does nothing, and one that runs a torch add on XLA's buffers
  and stream, each with ``command_buffer_compatible`` False and True (True lets XLA record the
  callback's launches into its CUDA graphs, where its command buffers apply);
- the jitted qrita topk50 mask, with the time spent inside qrita's callback measured apart, and
  the jitted ``top_k`` k50 (both checked against the reference first);
- a cProfile of the jitted mask calls (largest own times).

Run it once as it is and once with ``XLA_FLAGS=--xla_gpu_graph_min_graph_size=1`` (XLA only
makes command buffers of enough operations).

    python benchmarks/jax_jit_probe.py [--out DIR] [--tag NAME]
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
from adapter_overhead import _host_us, write_lines  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--tag", default="default")
    args = ap.parse_args()
    import jax
    import torch
    from jax.experimental.buffer_callback import buffer_callback

    import qrita
    from qrita.backends import _jax_jit

    gpu = jax.devices("cuda")[0]
    host = np.random.default_rng(2).normal(0.0, 3.0, size=(1, 131072)).astype(np.float32)
    x = jax.device_put(host, gpu)
    last: list = []

    def keep(fn):
        def run():
            last.append(fn())
            if len(last) > 4:
                last.pop(0)
        return run

    def sync():
        if last:
            jax.block_until_ready(last[-1])

    lines = [f"jax {jax.__version__} torch {torch.__version__}; XLA_FLAGS="
             f"{os.environ.get('XLA_FLAGS', '')!r} ({args.tag}); host µs per call, no sync"]

    def report(name, fn):
        try:
            lines.append(f"{name:<58} {_host_us(keep(fn), sync):8.1f}")
        except Exception as err:  # noqa: BLE001
            lines.append(f"{name:<58} failed: {type(err).__name__}: {err}"[:240])
        print(lines[-1], flush=True)

    plus_one = jax.jit(lambda x: x + 1)
    report("jit x + 1", lambda: plus_one(x))
    result = jax.ShapeDtypeStruct(x.shape, x.dtype)

    def nothing(ctx, out, x_buf):
        return None

    def torch_add(ctx, out, x_buf):
        t_out = torch.from_dlpack(out.__dlpack__())
        t_x = torch.from_dlpack(x_buf.__dlpack__())
        ptr = int(ctx.stream)
        stream = torch.cuda.ExternalStream(ptr) if ptr else torch.cuda.default_stream()
        with torch.cuda.stream(stream):
            torch.add(t_x, 1.0, out=t_out)

    for cb_name, cb in (("nothing", nothing), ("torch add", torch_add)):
        for compatible in (False, True):
            try:
                call = buffer_callback(cb, result, command_buffer_compatible=compatible)
                fn = jax.jit(lambda x, call=call: call(x) * 2.0)
                report(f"jit buffer_callback {cb_name} (command buffer {compatible}) * 2",
                       lambda fn=fn: fn(x))
            except Exception as err:  # noqa: BLE001
                lines.append(f"buffer_callback {cb_name} {compatible}: {type(err).__name__}: {err}")
                print(lines[-1])
    # the callback's stream scope alone, both ways, on this host: torch's public contexts
    # against the C setters (what _on_xla_stream takes where torch has them)
    side = torch.cuda.Stream()
    ctx = type("Ctx", (), {"stream": side.cuda_stream})()
    device = torch.device("cuda", torch.cuda.current_device())

    def public_scope():
        with _jax_jit._public_stream_scope(device.index, side):
            pass

    def raw_scope():
        with _jax_jit._on_xla_stream(ctx, device):
            pass

    for name, fn in (("stream scope: torch.cuda.device + torch.cuda.stream", public_scope),
                     ("stream scope: _on_xla_stream (C setters)", raw_scope)):
        lines.append(f"{name:<58} {_host_us(fn, lambda: None, n=3000):8.2f}")
        print(lines[-1], flush=True)
    inner = {"s": 0.0, "n": 0}
    real = _jax_jit._gpu_masks_callback

    def timed(*a, **kw):
        t0 = time.perf_counter()
        real(*a, **kw)
        inner["s"] += time.perf_counter() - t0
        inner["n"] += 1

    _jax_jit._gpu_masks_callback = timed
    try:
        masked = jax.jit(lambda x: qrita.top_k_top_p_mask(x, 50, None))
        out = masked(x)
        want = qrita.top_k_top_p_mask(np.asarray(host), 50, None)
        assert np.array_equal(np.asarray(out), want), "the jitted mask differs from the reference"
        inner.update(s=0.0, n=0)
        report("jit qrita topk50 mask", lambda: masked(x))
        if inner["n"]:
            lines.append(f"  of which inside qrita's callback: {inner['s'] / inner['n'] * 1e6:.1f}"
                         f" µs per call ({inner['n']} calls)")
            print(lines[-1])
        top = jax.jit(lambda x: qrita.top_k(x, 50))
        values, indices = top(x)
        want_v, want_i = qrita.top_k(np.asarray(host), 50)
        assert np.array_equal(np.asarray(values), want_v), "the jitted top_k's values differ"
        assert np.array_equal(np.asarray(indices), want_i), "the jitted top_k's indices differ"
        report("jit qrita top_k k50", lambda: top(x))
        from qrita.backends import _jax as jax_adapter

        eager = lambda: qrita.top_k_top_p_mask(x, 50, None)  # noqa: E731
        jax_adapter.EAGER_JIT = False  # QRITA_JAX_EAGER_JIT=0: the DLPack exchanges
        report("eager qrita topk50 mask (JAX array)", eager)
        x_t = torch.from_numpy(host).cuda()
        report("eager qrita topk50 mask (torch tensor)",
               lambda: qrita.top_k_top_p_mask(x_t, 50, None))
        report("eager qrita top_k k50 (torch tensor)", lambda: qrita.top_k(x_t, 50))
        report("eager qrita top_k k50 (JAX array)", lambda: qrita.top_k(x, 50))
        jax_adapter.EAGER_JIT = True  # the default: a cached jitted program
        report("eager qrita topk50 mask (JAX array, by jit)", eager)
        report("eager qrita top_k k50 (JAX array, by jit)", lambda: qrita.top_k(x, 50))
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(300):
            masked(x)
        prof.disable()
        sync()
        stream = io.StringIO()
        pstats.Stats(prof, stream=stream).sort_stats("tottime").print_stats(18)
        lines.append(stream.getvalue())
    finally:
        _jax_jit._gpu_masks_callback = real
    print(lines[-1][:4000])
    write_lines(args.out, f"jax_jit_probe_{args.tag}.txt", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
