"""The public functions: validate, then dispatch to the Triton kernels (GPU) or the NumPy reference.

No array library is imported here; :func:`qrita.backends.adapter_for` picks an adapter from the
array's type, and the kernels are imported only when a GPU array arrives.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import warnings
from types import ModuleType
from typing import Any

import numpy as np

from qrita._validate import Checked, check_mask_args, check_top_k_args
from qrita.backends import _numpy
from qrita.reference.oracle import TopK

__all__ = ["TopK", "top_k", "top_k_mask", "top_p_mask", "top_k_top_p_mask"]

_OPS_WARNED = False
_DEFAULT_KERNEL_DTYPES = frozenset({"float32", "bfloat16", "float16"})


_LOADED: dict[str, ModuleType] = {}  # the Triton modules imported (a lookup, not an import, per call)


def _load_triton(name: str) -> ModuleType | None:
    """``qrita.backends.triton.<name>``, or None (with a one-time warning) if the Triton kernels
    cannot be imported."""
    global _OPS_WARNED
    loaded = _LOADED.get(name)
    if loaded is not None:
        return loaded
    try:
        loaded = _LOADED[name] = importlib.import_module(f"qrita.backends.triton.{name}")
        return loaded
    except ImportError as exc:
        if not _OPS_WARNED:
            warnings.warn(
                f"qrita: the Triton kernels are unavailable ({exc}); GPU arrays take the slow "
                "NumPy reference path (install qrita[torch] for the kernels)",
                RuntimeWarning,
                stacklevel=4,
            )
            _OPS_WARNED = True
        return None


def _load_ops() -> ModuleType | None:
    """The Triton mask / selection entry points (:mod:`qrita.backends.triton.ops`), or None."""
    return _load_triton("ops")


def _scope(adapter: ModuleType, x: Any) -> contextlib.AbstractContextManager[Any]:
    """The adapter's ``stream_scope(x)`` for GPU work on ``x``, if it has one."""
    scope = getattr(adapter, "stream_scope", None)
    return scope(x) if scope is not None else contextlib.nullcontext()


def _is_traced(adapter: ModuleType, x: Any) -> bool:
    """True for an abstract array inside a transformation (JAX tracers under jit)."""
    is_traced = getattr(adapter, "is_traced", None)
    return bool(is_traced is not None and is_traced(x))


# ---------------------------------------------------------------------------------------------
# masks


def _row_to_torch(adapter: ModuleType, v: Any, is_k: bool) -> Any:
    """A per-row k / p array as a 1-D torch tensor on the logits' device (scalars pass through)."""
    if v is None or isinstance(v, (int, float)):
        return v
    import torch

    t = adapter.to_torch(v).reshape(-1)
    if is_k and t.dtype != torch.int64:
        t = t.to(torch.int64)
    elif not is_k and t.dtype in (torch.float16, torch.bfloat16):
        t = t.to(torch.float32)  # exact
    return t.contiguous()


def _row_to_numpy(adapter: ModuleType, v: Any, is_k: bool) -> Any:
    """A per-row k / p array as a 1-D NumPy array (int64 / float64); scalars pass through."""
    if v is None or isinstance(v, (int, float)):
        return v
    a = np.asarray(adapter.to_numpy(v)).reshape(-1)
    return a.astype(np.int64) if is_k else a.astype(np.float64)


def _mask_gpu(ops: ModuleType, logits: Any, c: Checked) -> Any:
    with _scope(c.adapter, logits):
        return _mask_gpu_scoped(ops, logits, c)


def _mask_gpu_scoped(ops: ModuleType, logits: Any, c: Checked) -> Any:
    adapter = c.adapter
    t = adapter.to_torch(logits)
    t2 = t.reshape(1, -1) if t.dim() == 1 else t
    work = t2 if t2.stride(-1) == 1 else t2.contiguous()
    k = _row_to_torch(adapter, c.k, True)
    p = _row_to_torch(adapter, c.p, False)
    out = ops.top_k_top_p_mask(work, k, p, inplace=c.inplace, fill=c.fill)
    if c.inplace:
        if work is not t2:
            t2.copy_(out)
        return logits
    return adapter.from_torch(out if t2 is t else out.reshape(t.shape), like=logits)


def _mask_cpu(logits: Any, c: Checked) -> Any:
    adapter = c.adapter
    a = adapter.to_numpy(logits)
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    k = _row_to_numpy(adapter, c.k, True)
    p = _row_to_numpy(adapter, c.p, False)
    res = np.asarray(_numpy.masks(a2, k, p, fill=c.fill)).reshape(a.shape)
    out = adapter.from_numpy(res, like=logits)
    if not c.inplace:
        return out
    if out is logits:
        return logits
    if hasattr(logits, "copy_"):  # torch
        logits.copy_(out)
    else:  # numpy (and cupy on the fallback path)
        logits[...] = out
    return logits


@functools.lru_cache(maxsize=8)
def _kernel_dtypes(ops: ModuleType) -> frozenset[str]:
    """Dtype names the mask kernel takes (others, i.e. float64, go to the reference)."""
    supported = getattr(ops, "SUPPORTED_DTYPES", None)
    if supported is None:
        return _DEFAULT_KERNEL_DTYPES
    return frozenset(str(d).removeprefix("torch.") for d in supported)


def _mask(logits: Any, k: Any, p: Any, fill: Any, inplace: Any) -> Any:
    c = check_mask_args(logits, k, p, fill, inplace)
    if _is_traced(c.adapter, logits):  # inside jax.jit: staged into the traced program
        return c.adapter.traced_masks(logits, c.k, c.p, fill=c.fill)
    if c.info.on_gpu:
        ops = _load_ops()
        if ops is not None and c.info.dtype in _kernel_dtypes(ops):
            if _eager_by_jit(c.adapter):  # JAX: a cached jitted program, from a key's 2nd call
                out = c.adapter.eager_masks(logits, c.k, c.p, fill=c.fill)
                if out is not None:
                    return out
            return _mask_gpu(ops, logits, c)
    return _mask_cpu(logits, c)


def _eager_by_jit(adapter: ModuleType) -> bool:
    """Whether ``adapter`` runs eager GPU calls through a cached jitted program."""
    by_jit = getattr(adapter, "eager_by_jit", None)
    return by_jit is not None and by_jit()


def top_k_top_p_mask(
    logits: Any,
    k: Any = None,
    p: Any = None,
    /,
    *,
    inplace: bool = False,
    fill: float = -np.inf,
) -> Any:
    """Keep the top-k entries of each row, then the top-p nucleus of those; mask the rest.

    Parameters
    ----------
    logits : array, shape (V,) or (B, V), dtype float16, bfloat16, float32 or float64
        A NumPy, torch, CuPy or JAX array.
    k : None, int, or integer array of shape (B,), optional
        Per-row top-k. ``k <= 0`` or ``k >= V`` (or None) means top-k off for that row. For 1-D
        logits an array must have shape (1,) or (). Arrays must be the same library and on the
        same device as ``logits``.
    p : None, float, or floating array of shape (B,), optional
        Per-row top-p over the top-k survivors. ``p >= 1``, NaN (or None) means top-p off;
        ``p <= 0`` keeps only the first entry of the order.
    inplace : bool, default False
        Write the result into ``logits`` and return it (not possible for JAX arrays).
    fill : float, default -inf
        Value written over every entry that is not kept.

    Returns
    -------
    array
        Same library, type, dtype, shape and device as ``logits``. Kept entries are bit-identical
        to the input; all others equal ``fill``.

    Raises
    ------
    TypeError
        ``logits`` is not a supported array or not floating; ``k`` given as a float; ``k`` / ``p``
        array of the wrong dtype or of another array library.
    ValueError
        ``logits`` not 1-D or 2-D, or with V == 0; ``k`` / ``p`` array of the wrong shape or on
        another device; ``inplace=True`` on a read-only array.

    Notes
    -----
    The exact rules (order, ties, NaN, ±inf, the 1e-6 top-p margin) are in docs/spec.md.
    """
    return _mask(logits, k, p, fill, inplace)


def top_k_mask(logits: Any, k: Any, /, *, inplace: bool = False, fill: float = -np.inf) -> Any:
    """Keep the k largest entries of each row (ties by lower index); set the rest to ``fill``.

    Parameters
    ----------
    logits : array, shape (V,) or (B, V), dtype float16, bfloat16, float32 or float64
    k : int or integer array of shape (B,)
        ``k <= 0`` or ``k >= V`` keeps the whole row.
    inplace : bool, default False
        Write the result into ``logits`` and return it.
    fill : float, default -inf

    Returns
    -------
    array
        Same library, type, dtype, shape and device as ``logits``; kept entries bit-identical.

    See Also
    --------
    top_k_top_p_mask : the combined mask; errors are the same.
    """
    return _mask(logits, k, None, fill, inplace)


def top_p_mask(logits: Any, p: Any, /, *, inplace: bool = False, fill: float = -np.inf) -> Any:
    """Keep the smallest prefix of each row's order whose softmax mass reaches ``p``.

    Parameters
    ----------
    logits : array, shape (V,) or (B, V), dtype float16, bfloat16, float32 or float64
    p : float or floating array of shape (B,)
        ``p >= 1`` or NaN keeps the whole row; ``p <= 0`` keeps only the first entry.
    inplace : bool, default False
        Write the result into ``logits`` and return it.
    fill : float, default -inf

    Returns
    -------
    array
        Same library, type, dtype, shape and device as ``logits``; kept entries bit-identical.

    See Also
    --------
    top_k_top_p_mask : the combined mask; errors are the same.
    """
    return _mask(logits, None, p, fill, inplace)


# ---------------------------------------------------------------------------------------------
# top_k


def _top_k_gpu(
    ops: ModuleType, adapter: ModuleType, x: Any, k: int, axis: int, mode: str, sorted: bool
) -> TopK:
    with _scope(adapter, x):
        return _top_k_gpu_scoped(ops, adapter, x, k, axis, mode, sorted)


def _top_k_gpu_scoped(
    ops: ModuleType, adapter: ModuleType, x: Any, k: int, axis: int, mode: str, sorted: bool
) -> TopK:
    import torch

    t = adapter.to_torch(x)
    last = axis == t.dim() - 1  # (no movedim / reshape calls where none is needed: host time)
    tm = t if last else t.movedim(axis, -1)
    lead, n = tuple(tm.shape[:-1]), tm.shape[-1]
    if k == 0 or tm.numel() == 0:
        vals = tm[..., :k].clone()
        idx = torch.empty(vals.shape, dtype=torch.int64, device=t.device)
    else:
        x2 = tm if tm.dim() == 2 else tm.reshape(-1, n)
        vals, idx = ops.top_k(x2.contiguous(), k, mode=mode, sorted=sorted)
        if tm.dim() != 2:
            vals, idx = vals.reshape(*lead, k), idx.reshape(*lead, k)
    if not last:
        vals, idx = vals.movedim(-1, axis), idx.movedim(-1, axis)
    return TopK(adapter.from_torch(vals, like=x), adapter.from_torch(idx, like=x))


def top_k(x: Any, k: int, /, *, axis: int = -1, mode: str = "largest", sorted: bool = True) -> TopK:
    """The k largest (or smallest) entries along an axis, with their indices.

    Parameters
    ----------
    x : array, any shape with ndim >= 1, floating or integer dtype (not bool)
        A NumPy, torch, CuPy or JAX array.
    k : int
        ``0 <= k <= x.shape[axis]``.
    axis : int, default -1
    mode : {"largest", "smallest"}, default "largest"
        "largest": descending order; "smallest": ascending. Ties go to the lower index; NaN ranks
        last in both modes; -0.0 == +0.0.
    sorted : bool, default True
        True: results in rank order; False: the same set in ascending index order.

    Returns
    -------
    TopK
        Named tuple ``(values, indices)``, both of ``x``'s library and device with ``x.shape``
        except ``axis`` has length k; values have ``x``'s dtype, indices are int64.

    Raises
    ------
    TypeError
        ``x`` not a supported array, bool dtype, or ``k`` / ``axis`` not an integer.
    ValueError
        ``k`` out of range, ``axis`` out of range, unknown ``mode``.

    Notes
    -----
    On GPU arrays of float32 / bfloat16 / float16 the Triton pipeline runs with no host
    synchronisation; its σ-truncated candidate path holds 4096 candidates per row, enough for k up
    to about 1000; larger k (up to the axis length) is exact on a slower full-row path. float64 and
    integer GPU arrays take an exact stable sort of order keys.
    """
    adapter, info, k, axis = check_top_k_args(x, k, axis, mode, sorted)
    sorted = bool(sorted)
    if _is_traced(adapter, x):  # inside jax.jit
        return TopK(*adapter.traced_top_k(x, k, axis=axis, mode=mode, sorted=sorted))
    if info.on_gpu:
        ops = _load_ops()
        if ops is not None and hasattr(ops, "top_k"):
            if info.dtype in _kernel_dtypes(ops) and _eager_by_jit(adapter):
                out = adapter.eager_top_k(x, k, axis=axis, mode=mode, sorted=sorted)
                if out is not None:  # JAX: a cached jitted program, from a key's 2nd call
                    return TopK(*out)
            return _top_k_gpu(ops, adapter, x, k, axis, mode, sorted)
    a = adapter.to_numpy(x)
    vals, idx = _numpy.top_k(a, k, axis=axis, mode=mode, sorted=sorted)
    vals, idx = np.ascontiguousarray(vals), np.ascontiguousarray(idx, dtype=np.int64)
    return TopK(adapter.from_numpy(vals, like=x), adapter.from_numpy(idx, like=x))
