"""PyTorch adapter.

CUDA (and ROCm, which torch also calls "cuda") tensors go to the Triton kernels as they are; CPU
tensors take the NumPy reference path (bfloat16 crosses as float32, exactly, and is cast back).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from qrita.backends import ArrayInfo

__all__ = ["owns", "describe", "to_torch", "from_torch", "to_numpy", "from_numpy", "stream_scope"]


def owns(x: object) -> bool:
    """True for a ``torch.Tensor`` (including ``nn.Parameter``)."""
    import torch

    return isinstance(x, torch.Tensor)


_DTYPE_NAMES: dict[Any, str] = {}


def _dtype_name(dtype: Any) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def describe(x: Any) -> ArrayInfo:
    """Library-neutral description of a tensor.

    A tensor that requires grad, or an inference tensor outside inference mode, is not writable.
    """
    import torch

    writable = not x.requires_grad
    if writable and x.is_inference() and not torch.is_inference_mode_enabled():
        writable = False
    return ArrayInfo(
        library="torch",
        shape=tuple(x.shape),  # torch.Size holds Python ints
        dtype=_dtype_name(x.dtype),
        device=str(x.device),
        writable=writable,
        on_gpu=x.device.type == "cuda",
    )


def to_torch(x: Any) -> Any:
    """``x`` itself."""
    return x


def from_torch(t: Any, like: Any) -> Any:
    """``t`` itself (it already has ``like``'s dtype and device)."""
    return t


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy/view of ``x`` on the host; bfloat16 is widened (exactly) to float32."""
    import torch

    t = x.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()
    t = t.cpu()
    if t.is_conj():
        t = t.resolve_conj()
    return t.numpy()


def from_numpy(a: np.ndarray, like: Any) -> Any:
    """A tensor on ``like``'s device; floating arrays take ``like``'s dtype, integer ones stay."""
    import torch

    t = torch.from_numpy(np.ascontiguousarray(a))
    if t.dtype.is_floating_point:
        t = t.to(dtype=like.dtype)
    return t.to(device=like.device)


def stream_scope(x: Any) -> contextlib.AbstractContextManager[Any]:
    """Make ``x``'s CUDA device torch's current device (kernels launch there); else nothing.

    The current stream is left as it is: the caller's stream orders the kernel after the work that
    produced ``x``. When ``x``'s device is already the current one (the usual case) this is a
    ``nullcontext`` (entering ``torch.cuda.device`` costs host time on every call).
    """
    if x.device.type != "cuda":
        return contextlib.nullcontext()
    import torch

    index = x.device.index
    if index is None or index == torch.cuda.current_device():
        return contextlib.nullcontext()
    return torch.cuda.device(index)
