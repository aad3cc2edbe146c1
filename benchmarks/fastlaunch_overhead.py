"""Host cost of one Triton launch: ``kernel[grid](...)`` against ``fastlaunch.launch(...)``.

Not a test. Needs a CUDA GPU.

    python benchmarks/fastlaunch_overhead.py [--n 2000] [--repeats 7] [--out DIR]

A trivial kernel with 20 parameters (4 pointers, 10 ints, 2 floats, a bool, 3 constexprs) that
reads 4 module-level ``tl.constexpr`` globals (qrita's kernels read 3 to 9) is launched N times
back to back without synchronising; the time of that loop over N is the host's cost per launch
(the GPU runs each launch in a few microseconds, so it keeps up or the launch queue absorbs the
difference; "until sync" also counts the wait for the GPU at the end). Rows:

* ``kernel[grid]``: Triton's normal path (``JITFunction.run``);
* ``launch``: qrita.backends.triton.fastlaunch (fast path after the first call);
* ``launcher only``: the compiled kernel's launcher called directly with precomputed stream and
  arguments: the floor that no Python wrapper goes below.

Each row is the median (and min) over the repeats. ``--out DIR`` also writes
``DIR/fastlaunch_overhead.txt``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import triton
import triton.language as tl

from qrita.backends.triton import fastlaunch

# module-level constants, read by the kernel as qrita's kernels do (Triton re-checks them per launch)
G0: tl.constexpr = tl.constexpr(1)
G1: tl.constexpr = tl.constexpr(2)
G2: tl.constexpr = tl.constexpr(3)
G3: tl.constexpr = tl.constexpr(4)


@triton.jit
def _trivial(a_ptr, b_ptr, c_ptr, d_ptr, n, s0, s1, s2, s3, i0, i1, i2, i3, i4, f0, f1, flag,
             BLOCK: tl.constexpr, MODE: tl.constexpr, EXTRA: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(a_ptr + offs * s0, mask=mask, other=0.0)
    y = x * f0 + f1 + (i0 + i1 + i2 + i3 + i4 + s1 + s2 + s3)
    if flag:
        y = -y
    if MODE == 1:
        y = y + EXTRA + G0 * G1 + G2 * G3
    tl.store(b_ptr + offs, y, mask=mask)


def _time(fn, n: int, repeats: int) -> tuple[list[float], list[float]]:
    """Per launch, in microseconds: host loop times and loop-plus-sync times."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    host, total = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        host.append((t1 - t0) / n * 1e6)
        total.append((t2 - t0) / n * 1e6)
    return host, total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="launches per timing")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None, help="directory for fastlaunch_overhead.txt")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2

    n_el = 1024
    a, b, c, d = (torch.randn(n_el, device="cuda") for _ in range(4))
    kargs = (a, b, c, d, n_el, 1, 16, 32, 48, 3, 5, 7, 2**31 + 9, 64, 0.5, 1.25, True)
    kw = dict(BLOCK=256, MODE=1, EXTRA=2, num_warps=4)
    grid = (triton.cdiv(n_el, 256),)

    def normal():
        _trivial[grid](*kargs, **kw)

    def fast():
        fastlaunch.launch(_trivial, grid, *kargs, **kw)

    fast()
    fast()
    active = fastlaunch.fast_path_active(_trivial)
    state = fastlaunch._kernels[id(_trivial)]
    rows = [("kernel[grid]", normal), ("launch", fast)]
    if active and len(state.cache) == 1:
        entry = next(iter(state.cache.values()))
        _, values = state.key(torch.cuda.current_device(), kargs, kw)
        stream = torch.cuda.current_stream().cuda_stream

        def floor():
            entry.run(grid[0], 1, 1, stream, entry.function, entry.packed_metadata,
                      None, None, None, *values)

        rows.append(("launcher only", floor))
        # the same launcher handed the four tensors' addresses: precomputed (what the
        # launcher's data_ptr calls and cuPointerGetAttribute checks cost), and converted per
        # call as fastlaunch does with QRITA_LAUNCH_POINTERS=1
        addresses = tuple(v.data_ptr() if isinstance(v, torch.Tensor) else v for v in values)
        convert = fastlaunch._make_pointer_converter(values)

        def floor_addresses():
            entry.run(grid[0], 1, 1, stream, entry.function, entry.packed_metadata,
                      None, None, None, *addresses)

        def floor_converted():
            entry.run(grid[0], 1, 1, stream, entry.function, entry.packed_metadata,
                      None, None, None, *convert(values))

        rows.append(("launcher, ints", floor_addresses))
        rows.append(("launcher, conv", floor_converted))

    # same answer both ways
    want = torch.empty_like(b)
    _trivial[grid](a, want, *kargs[2:], **kw)
    fastlaunch.launch(_trivial, grid, *kargs, **kw)
    torch.cuda.synchronize()
    assert torch.equal(want, b), "launch and kernel[grid] disagree"

    lines = [
        f"device: {torch.cuda.get_device_name()}, triton {triton.__version__}, "
        f"torch {torch.__version__}",
        f"fast path active: {active}" + ("" if active else f" ({state.reason})"),
        f"{args.n} launches x {args.repeats} repeats, 20-parameter kernel, grid {grid}",
        "",
        f"{'path':<16}{'host us/launch':>16}{'(min)':>10}{'until sync':>14}",
    ]
    results = {}
    for name, fn in rows:
        host, total = _time(fn, args.n, args.repeats)
        results[name] = statistics.median(host)
        lines.append(f"{name:<16}{statistics.median(host):>16.2f}{min(host):>10.2f}"
                     f"{statistics.median(total):>14.2f}")
    if "launch" in results and results["launch"] > 0:
        lines.append("")
        lines.append(f"kernel[grid] / launch: {results['kernel[grid]'] / results['launch']:.1f}x")
    text = "\n".join(lines)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "fastlaunch_overhead.txt"), "w") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
