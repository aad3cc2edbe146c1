"""NumPy adapter and the CPU implementation of the public functions.

The adapter protocol is described in :mod:`qrita.backends`. NumPy arrays never go to a GPU: every
call runs the NumPy reference (the algorithm mirror when it is available, else the oracle).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qrita.backends import ArrayInfo

__all__ = ["owns", "describe", "to_torch", "from_torch", "to_numpy", "from_numpy", "masks", "top_k"]


def owns(x: object) -> bool:
    """True for a NumPy ndarray (NumPy scalars are not arrays)."""
    return isinstance(x, np.ndarray)


def describe(x: np.ndarray) -> ArrayInfo:
    """Library-neutral description of a NumPy array."""
    return ArrayInfo(
        library="numpy",
        shape=tuple(int(n) for n in x.shape),
        dtype=x.dtype.name,
        device="cpu",
        writable=bool(x.flags.writeable),
        on_gpu=False,
    )


def to_torch(x: np.ndarray) -> Any:
    """A torch CPU tensor sharing ``x``'s memory."""
    import torch

    return torch.from_numpy(x)


def from_torch(t: Any, like: np.ndarray) -> np.ndarray:
    """A NumPy array from a CPU torch tensor, with ``like``'s dtype for floating results."""
    a = t.detach().cpu()
    if a.dtype.is_floating_point and like.dtype.name != str(a.dtype).removeprefix("torch."):
        a = a.float()
    return from_numpy(a.numpy(), like)


def to_numpy(x: np.ndarray) -> np.ndarray:
    """``x`` itself; ml_dtypes bfloat16 is widened (exactly) to float32."""
    if x.dtype.name == "bfloat16":
        return x.astype(np.float32)
    return x


def from_numpy(a: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``a`` with ``like``'s dtype when ``a`` is floating; integer arrays (indices) stay as is."""
    if a.dtype.kind == "f" and a.dtype != like.dtype:
        return a.astype(like.dtype)
    return a


def masks(logits: np.ndarray, k: Any, p: Any, *, fill: float) -> np.ndarray:
    """Top-k then top-p mask of a (B, V) NumPy array (a new array).

    ``k`` / ``p`` are None, Python scalars or (B,) NumPy arrays. Uses the algorithm mirror when it
    is importable, else the oracle; both define the same answer (docs/spec.md).
    """
    try:
        from qrita.reference import mirror

        impl = mirror.top_k_top_p_mask
    except (ImportError, AttributeError):
        from qrita.reference import oracle

        impl = oracle.top_k_top_p_mask
    return impl(logits, k, p, fill=fill)


def top_k(x: np.ndarray, k: int, *, axis: int, mode: str, sorted: bool) -> tuple[Any, Any]:
    """The oracle's top_k (values, int64 indices) along ``axis``."""
    from qrita.reference import oracle

    return oracle.top_k(x, k, axis=axis, mode=mode, sorted=sorted)
