"""Eager argument validation for the public functions (docs/spec.md, rule 6).

Everything here runs before any work is done. Messages name the argument and the offending value.
Per-row ``k`` / ``p`` arrays are checked for library, dtype, shape and device only; their values are
never read (on a GPU that would need a host synchronisation).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from qrita.backends import ArrayInfo, adapter_for

__all__ = [
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "Checked",
    "check_array",
    "check_mask_args",
    "check_top_k_args",
]

FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
INT_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
MODES = ("largest", "smallest")
_LIBS = "a numpy, torch, cupy or jax array"


def _describe_value(v: Any) -> str:
    """``repr``-ish text for an error message, kept short."""
    text = repr(v)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(v).__name__})"


def _is_int_scalar(v: Any) -> bool:
    if type(v) is int:  # the usual case, without the isinstance checks
        return True
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real_scalar(v: Any) -> bool:
    if type(v) is float or type(v) is int:  # the usual cases (bool is neither)
        return True
    return isinstance(v, (numbers.Real, np.integer, np.floating)) and not isinstance(
        v, (bool, np.bool_)
    )


def check_array(x: Any, name: str) -> tuple[ModuleType, ArrayInfo]:
    """The adapter and description of ``x``; TypeError if no supported library owns it."""
    adapter = adapter_for(x)
    if adapter is None:
        raise TypeError(f"{name} must be {_LIBS}, got {type(x).__name__}")
    return adapter, adapter.describe(x)


@dataclass(frozen=True)
class Checked:
    """Validated mask arguments.

    ``k`` / ``p`` are None, a Python scalar (int / float) or the caller's array (same library and
    device as logits; shape (B,), or (1,) / () for 1-D logits).
    """

    adapter: ModuleType
    info: ArrayInfo
    k: Any
    p: Any
    fill: float
    inplace: bool


def _check_row_array(
    v: Any, name: str, info: ArrayInfo, kinds: frozenset[str], kind_text: str, wanted: str
) -> None:
    """Library, dtype, shape and device of a per-row ``k`` / ``p`` array."""
    adapter = adapter_for(v)
    if adapter is None:
        raise TypeError(f"{name} must be {wanted}, got {_describe_value(v)}")
    vinfo = adapter.describe(v)
    if vinfo.library != info.library:
        raise TypeError(
            f"{name} is a {vinfo.library} array but logits is a {info.library} array; "
            f"mixed array libraries are not supported"
        )
    if vinfo.dtype not in kinds:
        raise TypeError(f"{name} array must have {kind_text} dtype, got dtype {vinfo.dtype}")
    batch = info.shape[0] if len(info.shape) == 2 else 1
    allowed = [(batch,)] if len(info.shape) == 2 else [(1,), ()]
    if vinfo.shape not in allowed:
        want = " or ".join(str(s) for s in allowed)
        hint = ""
        if vinfo.shape == ():
            hint = (f"; one {name} for every row is a Python number (under jax.jit, a static "
                    f"argument)")
        raise ValueError(
            f"{name} array must have shape {want} for logits of shape {info.shape}, "
            f"got shape {vinfo.shape}{hint}"
        )
    if vinfo.device != info.device and "traced" not in (vinfo.device, info.device):
        raise ValueError(
            f"{name} is on device {vinfo.device} but logits is on device {info.device}; "
            f"arrays on different devices are not supported"
        )


def _check_k(k: Any, info: ArrayInfo) -> Any:
    if k is None:
        return None
    if _is_int_scalar(k):
        return int(k)
    wanted = f"an integer (int, numpy integer or {info.library} integer array)"
    if isinstance(k, (bool, np.bool_)) or isinstance(k, numbers.Number):
        raise TypeError(f"k must be {wanted}, got {_describe_value(k)}")
    _check_row_array(k, "k", info, INT_DTYPES, "an integer", wanted)
    return k


def _check_p(p: Any, info: ArrayInfo) -> Any:
    if p is None:
        return None
    if _is_real_scalar(p):
        return float(p)
    wanted = f"a real number (int, float or {info.library} floating array)"
    if isinstance(p, (bool, np.bool_)) or isinstance(p, numbers.Number):
        raise TypeError(f"p must be {wanted}, got {_describe_value(p)}")
    _check_row_array(p, "p", info, FLOAT_DTYPES, "a floating", wanted)
    return p


def _check_fill(fill: Any) -> float:
    if not _is_real_scalar(fill):
        raise TypeError(f"fill must be a real number, got {_describe_value(fill)}")
    return float(fill)


def _check_inplace(inplace: Any, info: ArrayInfo) -> bool:
    if not isinstance(inplace, (bool, np.bool_)):
        raise TypeError(f"inplace must be a bool, got {_describe_value(inplace)}")
    inplace = bool(inplace)
    if inplace and not info.writable:
        raise ValueError(
            f"inplace=True needs a writable array, but logits ({info.library}, dtype "
            f"{info.dtype}, device {info.device}) cannot be written in place"
        )
    return inplace


def check_mask_args(logits: Any, k: Any, p: Any, fill: Any, inplace: Any) -> Checked:
    """Validate the arguments of the mask functions; raise TypeError / ValueError."""
    adapter, info = check_array(logits, "logits")
    if len(info.shape) not in (1, 2):
        raise ValueError(
            f"logits must have shape (V,) or (B, V), got shape {info.shape} "
            f"({len(info.shape)} dimensions)"
        )
    if info.shape[-1] == 0:
        raise ValueError(f"logits must have a non-empty last axis (V >= 1), got shape {info.shape}")
    if info.dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"logits must have a floating dtype (float16, bfloat16, float32, float64), "
            f"got dtype {info.dtype}"
        )
    k = _check_k(k, info)
    p = _check_p(p, info)
    fill = _check_fill(fill)
    inplace = _check_inplace(inplace, info)
    return Checked(adapter, info, k, p, fill, inplace)


def check_top_k_args(
    x: Any, k: Any, axis: Any, mode: Any, sorted: Any
) -> tuple[ModuleType, ArrayInfo, int, int]:
    """Validate :func:`qrita.top_k`'s arguments; return (adapter, info, k, normalised axis)."""
    adapter, info = check_array(x, "x")
    if info.dtype not in FLOAT_DTYPES and info.dtype not in INT_DTYPES:
        raise TypeError(f"x must have a floating or integer dtype, got dtype {info.dtype}")
    ndim = len(info.shape)
    if ndim == 0:
        raise ValueError("x must have at least one dimension, got shape ()")
    if not _is_int_scalar(axis):
        raise TypeError(f"axis must be an integer, got {_describe_value(axis)}")
    if not -ndim <= int(axis) < ndim:
        raise ValueError(f"axis {int(axis)} is out of range for x of shape {info.shape}")
    axis = int(axis) % ndim
    if not _is_int_scalar(k):
        raise TypeError(f"k must be an integer, got {_describe_value(k)}")
    n = info.shape[axis]
    if not 0 <= int(k) <= n:
        raise ValueError(
            f"k must satisfy 0 <= k <= x.shape[axis] = {n} (axis {axis}, shape {info.shape}), "
            f"got k={int(k)}"
        )
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be 'largest' or 'smallest', got {mode!r}")
    if not isinstance(sorted, (bool, np.bool_)):
        raise TypeError(f"sorted must be a bool, got {_describe_value(sorted)}")
    return adapter, info, int(k), axis
