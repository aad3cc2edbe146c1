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
import warnings
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
def _capsule_exchange() -> tuple[Any, Any] | None:
    """CuPy's own DLPack capsule functions (array -> capsule, capsule -> array), or None.

    The public exchange (``torch.from_dlpack(x)``, ``cupy.from_dlpack(t)``) passes the consumer's
    stream to the producer, which looks up its own current stream and orders the two (about 10
    and 28 µs of host time per call on the H200's host, BENCHMARKS.md eighteenth session).
    Inside :func:`stream_scope` both libraries already run on the same stream, so the adapter
    exchanges bare capsules instead: the same memory, no stream handshake. None (the public
    exchange) where this CuPy lacks them.
    """
    try:
        from cupy._core import dlpack
    except ImportError:
        return None
    to_capsule = getattr(dlpack, "toDlpack", None)
    from_capsule = getattr(dlpack, "fromDlpack", None)
    if to_capsule is None or from_capsule is None:
        return None
    # CuPy marks these deprecated (a VisibleDeprecationWarning per call site): silenced for the
    # calls of this module only; where CuPy removes them, the public exchange takes over
    warnings.filterwarnings("ignore", message="This function is deprecated",
                            module=r"qrita\.backends\._cupy")
    return to_capsule, from_capsule


_BARE = {"ok": True}  # False (for the process) once the capsule functions' signatures do not fit


def _bare(cross: Any) -> Any:
    """``cross(exchange)`` through the bare capsules, or None where the public exchange must
    answer: no capsule functions, signatures that do not fit (then never again), or an error
    about this one array (a dtype, ...)."""
    exchange = _capsule_exchange() if _BARE["ok"] else None
    if exchange is None:
        return None
    try:
        return cross(exchange)
    except (TypeError, AttributeError):  # another CuPy's internals
        _BARE["ok"] = False
    except Exception:  # noqa: BLE001 - this array: the public exchange says what is wrong
        pass
    return None


def to_torch(x: Any) -> Any:
    """A torch CUDA tensor sharing ``x``'s memory (same device, same strides).

    Call it inside :func:`stream_scope`: torch's current stream is then CuPy's, and the capsule
    crosses with no stream handshake (:func:`_capsule_exchange`).
    """
    import torch

    t = _bare(lambda exchange: torch.utils.dlpack.from_dlpack(exchange[0](x)))
    return torch.from_dlpack(x) if t is None else t


def from_torch(t: Any, like: Any) -> Any:
    """A CuPy array sharing ``t``'s memory. Call it inside :func:`stream_scope` (see there)."""
    import cupy
    import torch

    t = t.detach()
    # the array keeps the capsule's device: no device context
    out = _bare(lambda exchange: exchange[1](torch.utils.dlpack.to_dlpack(t)))
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
