"""Host µs of ways to cross a DLPack capsule between CuPy and torch (issue 5; not a test).

The CuPy adapter crosses inside a scope where torch and CuPy run on the same stream. Up to the
fiftieth session it used CuPy's deprecated ``toDlpack`` / ``fromDlpack`` with their warning
filtered; since the fifty-first it uses ``x.__dlpack__(stream=<CuPy's current stream>)`` and
``cupy.from_dlpack(<torch's capsule>)`` (``qrita.backends._cupy._direct_exchange``). This times
the ways on one (1, 131072) float32 array, back to back (best of 5 x 2000 calls):

- CuPy -> torch: the deprecated ``toDlpack`` + torch's C import; CuPy's ``__dlpack__`` with the
  current stream's handle (nothing to order) + torch's C import; ``torch.from_dlpack``;
- torch -> CuPy: torch's C export + the deprecated ``fromDlpack``; ``cupy.from_dlpack`` of a
  holder whose ``__dlpack__`` returns torch's capsule; ``cupy.from_dlpack`` of torch's capsule
  itself (the adapter's way); ``cupy.from_dlpack(t)``.

    python benchmarks/cupy_exchange_probe.py [--out DIR]
"""

from __future__ import annotations

import argparse
import warnings

from adapter_overhead import _host_us, write_lines


class _Held:
    """A DLPack producer that hands over a capsule already made (torch's), for one import."""

    __slots__ = ("capsule", "device")

    def __init__(self, capsule, device):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def _unowned(cupy, t):
    """A CuPy array over a torch tensor's memory without DLPack: ``UnownedMemory`` keeps ``t``
    alive; shape, dtype and strides from torch (the candidate for ``_cupy.from_torch``)."""
    item = t.element_size()
    memory = cupy.cuda.UnownedMemory(t.data_ptr(), t.numel() * item, t, t.device.index)
    return cupy.ndarray(tuple(t.shape), _DTYPES[t.dtype], cupy.cuda.MemoryPointer(memory, 0),
                        tuple(s * item for s in t.stride()))


_DTYPES: dict = {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import cupy
    import torch
    from cupy._core import dlpack as cdl

    from qrita.backends import _cupy

    warnings.filterwarnings("ignore", message="This function is deprecated")
    _DTYPES.update({torch.float32: cupy.float32, torch.float16: cupy.float16,
                    torch.int64: cupy.int64, torch.int32: cupy.int32})
    x = cupy.zeros((1, 131072), dtype=cupy.float32)
    t = torch.zeros((1, 131072), dtype=torch.float32, device="cuda")
    ptr = int(cupy.cuda.get_current_stream().ptr)
    handle = 1 if ptr == 0 else ptr  # DLPack's name for CUDA's legacy default stream
    device = t.__dlpack_device__()
    from_c, to_c = torch._C._from_dlpack, torch._C._to_dlpack
    cases = {
        "cupy -> torch: toDlpack + torch C import": lambda: from_c(cdl.toDlpack(x)),
        "cupy -> torch: x.__dlpack__(stream=current) + C": lambda: from_c(
            x.__dlpack__(stream=handle)),
        "cupy -> torch: torch.from_dlpack(x)": lambda: torch.from_dlpack(x),
        "torch -> cupy: torch C export + fromDlpack": lambda: cdl.fromDlpack(to_c(t)),
        "torch -> cupy: cupy.from_dlpack(held capsule)": lambda: cupy.from_dlpack(
            _Held(to_c(t), device)),
        "torch -> cupy: cupy.from_dlpack(torch C capsule)": lambda: cupy.from_dlpack(to_c(t)),
        "torch -> cupy: cupy.from_dlpack(t)": lambda: cupy.from_dlpack(t),
        "torch -> cupy: ndarray over UnownedMemory(t.data_ptr())": lambda: _unowned(cupy, t),
        "torch: t.detach()": t.detach,
        "torch: t.data_ptr()": t.data_ptr,
        "qrita _cupy.to_torch (direct)": lambda: _cupy.to_torch(x),
        "qrita _cupy.from_torch (direct)": lambda: _cupy.from_torch(t, x),
        "qrita _cupy.describe": lambda: _cupy.describe(x),
        "qrita _cupy.stream_scope": lambda: _cupy.stream_scope(x),
        "cupy x.device.id": lambda: x.device.id,
        "cupy current stream ptr": lambda: cupy.cuda.get_current_stream().ptr,
        "cupy runtime getDevice": cupy.cuda.runtime.getDevice,
    }
    lines = [f"cupy {cupy.__version__} torch {torch.__version__}; stream handle {ptr}; "
             f"{len(warnings.filters)} warning filters; host µs per call, best of 5 x 2000"]
    for name, fn in cases.items():
        try:
            lines.append(f"{name:<52} {_host_us(fn, lambda: None, n=2000):8.2f}")
        except Exception as err:  # noqa: BLE001
            lines.append(f"{name:<52} failed: {type(err).__name__}: {err}"[:200])
        print(lines[-1], flush=True)
    back = cupy.from_dlpack(_Held(to_c(t), device))
    there = from_c(x.__dlpack__(stream=handle))
    unowned = _unowned(cupy, t)
    lines.append(f"zero-copy: held {back.data.ptr == t.data_ptr()}, "
                 f"__dlpack__ {there.data_ptr() == x.data.ptr}, "
                 f"unowned {unowned.data.ptr == t.data_ptr() and unowned.shape == tuple(t.shape)}")
    print(lines[-1])
    write_lines(args.out, "cupy_exchange_probe.txt", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
