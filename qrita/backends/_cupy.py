"""CuPy adapter.

CuPy arrays always live on a GPU, so they always go to the Triton kernels: zero-copy to torch
(``torch.from_dlpack``) and back (``cupy.from_dlpack``), on the array's own device and on CuPy's
*current* stream for that device (see :func:`stream_scope`).

CuPy's floating dtypes are float16, float32 and float64 (no bfloat16). A result always has its
input's dtype, so a bfloat16 tensor never has to cross into CuPy.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import numpy as np

from qrita.backends import ArrayInfo

__all__ = ["owns", "describe", "to_torch", "from_torch", "to_numpy", "from_numpy", "stream_scope"]


def owns(x: object) -> bool:
    """True for a ``cupy.ndarray``."""
    import cupy

    return isinstance(x, cupy.ndarray)


_DTYPE_NAMES: dict[Any, str] = {}


def describe(x: Any) -> ArrayInfo:
    """Library-neutral description of a CuPy array: device "cuda:<id>", writable, on a GPU."""
    dtype = x.dtype
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES.setdefault(dtype, np.dtype(dtype).name)
    return ArrayInfo(
        library="cupy",
        shape=tuple(x.shape),
        dtype=name,
        device=f"cuda:{x.device.id}",
        writable=True,
        on_gpu=True,
    )


@functools.cache
def _direct_exchange() -> tuple[Any, Any, Any, int] | None:
    """What the adapter's direct exchange calls, or None where this CuPy or torch lacks it.

    Returns ``(cupy.from_dlpack, torch C import, torch C export, null stream handle)``. The
    public exchange (``torch.from_dlpack(x)``, ``cupy.from_dlpack(t)``) makes each side ask the
    other for its current stream and order the two (about 4 and 13 µs of host time per call on
    one H100 host, 11 and 29 on another; ``benchmarks/cupy_exchange_probe.py``, BENCHMARKS.md
    fiftieth and fifty-first sessions; the direct steps took 2.1 and 4.4 on the second).
    Inside :func:`stream_scope` both libraries already run on the same stream, so the adapter
    crosses with less:

    - CuPy -> torch: ``x.__dlpack__(stream=<CuPy's own current stream>)``, which has nothing to
      order (the stream it is given is the one it would wait on), then torch's C import.
    - torch -> CuPy: torch's C export, then ``cupy.from_dlpack`` of that capsule, which CuPy
      imports as it is (no stream handshake, no device switch).

    DLPack names a CUDA null stream 1 (the legacy default stream); on ROCm it stays 0. Neither
    step uses CuPy's deprecated ``toDlpack`` / ``fromDlpack``.
    """
    try:
        import cupy
        import torch
    except ImportError:
        return None
    from_cupy_capsule = getattr(cupy, "from_dlpack", None)
    to_torch_c = getattr(torch._C, "_from_dlpack", None)
    from_torch_c = getattr(torch._C, "_to_dlpack", None)
    if from_cupy_capsule is None or to_torch_c is None or from_torch_c is None:
        return None
    null_handle = 0 if getattr(cupy.cuda.runtime, "is_hip", False) else 1
    return from_cupy_capsule, to_torch_c, from_torch_c, null_handle


_DIRECT = {"ok": True}  # False (for the process) once the direct exchange's signatures do not fit


def _direct(cross: Any) -> Any:
    """``cross(exchange)`` through the direct exchange, or None where the public exchange must
    answer: no direct exchange, signatures that do not fit (then never again), or an error
    about this one array (a dtype, ...)."""
    exchange = _direct_exchange() if _DIRECT["ok"] else None
    if exchange is None:
        return None
    try:
        return cross(exchange)
    except (TypeError, AttributeError):  # another CuPy's or torch's internals
        _DIRECT["ok"] = False
    except Exception:  # noqa: BLE001 - this array: the public exchange says what is wrong
        pass
    return None


def _export_to_torch(x: Any, exchange: tuple[Any, Any, Any, int]) -> Any:
    import cupy

    ptr = int(cupy.cuda.get_current_stream().ptr)
    return exchange[1](x.__dlpack__(stream=ptr or exchange[3]))


def to_torch(x: Any) -> Any:
    """A torch CUDA tensor sharing ``x``'s memory (same device, same strides).

    Call it inside :func:`stream_scope`: torch's current stream is then CuPy's, and the array
    crosses with no stream handshake (:func:`_direct_exchange`).
    """
    import torch

    t = _direct(lambda exchange: _export_to_torch(x, exchange))
    return torch.from_dlpack(x) if t is None else t


def from_torch(t: Any, like: Any) -> Any:
    """A CuPy array sharing ``t``'s memory. Call it inside :func:`stream_scope` (see there)."""
    import cupy

    t = t.detach()
    # the array keeps the capsule's device: no device context
    out = _direct(lambda exchange: exchange[0](exchange[2](t)))
    if out is not None:
        return out
    if like.device.id == cupy.cuda.runtime.getDevice():  # the usual case: no context
        return cupy.from_dlpack(t)
    with like.device:
        return cupy.from_dlpack(t)


def to_numpy(x: Any) -> np.ndarray:
    """A host copy of ``x`` (synchronises with CuPy's current stream)."""
    import cupy

    return cupy.asnumpy(x)


def from_numpy(a: np.ndarray, like: Any) -> Any:
    """A CuPy array on ``like``'s device; floating arrays take ``like``'s dtype, integers stay."""
    import cupy

    a = np.asarray(a)
    if a.dtype.kind == "f" and a.dtype != like.dtype:
        a = a.astype(like.dtype)
    with like.device:
        return cupy.asarray(a)


@functools.cache
def _raw_stream_getters() -> tuple[Any, Any] | None:
    """torch's C getters of the current device and of its current stream's handle (what Triton's
    launcher reads too), or None where this torch lacks them (then the public API answers).
    ``torch.cuda.current_stream()`` builds a Stream object per call: about 6 µs of host time on
    the H200's host (BENCHMARKS.md eighteenth session), against well under 1 for the getter."""
    import torch

    get_device = getattr(torch._C, "_cuda_getDevice", None)
    get_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if get_device is None or get_stream is None:
        return None
    return get_device, get_stream


def _torch_runs_on(index: int, ptr: int) -> bool:
    """Whether torch's current device is ``index`` and its current stream there has the handle
    ``ptr`` (0: the legacy default stream), so work torch queues is ordered with CuPy's."""
    getters = _raw_stream_getters()
    if getters is not None:
        get_device, get_stream = getters
        return int(get_device()) == index and int(get_stream(index)) == ptr
    import torch

    return (index == torch.cuda.current_device()
            and int(torch.cuda.current_stream().cuda_stream) == ptr)


#: the scope of a call that needs no context (a reusable, shared ``nullcontext``)
_NO_SCOPE = contextlib.nullcontext()


def stream_scope(x: Any) -> contextlib.AbstractContextManager[Any]:
    """Run torch work on ``x``'s device and on CuPy's current stream for that device.

    Inside the scope torch's current device is ``x``'s and torch's current stream is CuPy's current
    stream of that device (its null stream maps to torch's default stream, any other stream to a
    ``torch.cuda.ExternalStream`` on the same handle). A kernel launched there is ordered after the
    CuPy work already queued on that stream, and CuPy work queued after the call is ordered after
    the kernel, with no host synchronisation. Call ``to_torch``, the kernel and ``from_torch``
    inside the scope. When torch already runs on that device and stream (the same handle; usually
    CuPy's null stream and torch's default stream of the current device) the scope is a shared
    ``nullcontext``, since entering device and stream contexts costs host time on every call.
    """
    import cupy

    index = int(x.device.id)
    if index == cupy.cuda.runtime.getDevice():
        ptr = int(cupy.cuda.get_current_stream().ptr)
    else:
        with cupy.cuda.Device(index):
            ptr = int(cupy.cuda.get_current_stream().ptr)
    if _torch_runs_on(index, ptr):
        return _NO_SCOPE  # torch already runs on this device and stream (usually both defaults)
    return _on_stream(index, ptr)


@contextlib.contextmanager
def _on_stream(index: int, ptr: int) -> Iterator[None]:
    """torch's device ``index`` and its stream of handle ``ptr`` (0: the default stream)."""
    import torch

    device = torch.device("cuda", index)
    stream = (
        torch.cuda.default_stream(device)
        if ptr == 0
        else torch.cuda.ExternalStream(ptr, device=device)
    )
    with torch.cuda.device(device), torch.cuda.stream(stream):
        yield
