"""Array-library adapters and GPU kernels.

Every adapter module (``_numpy``, ``_torch``, ``_cupy``, ``_jax``) exposes the same small protocol,
so that the public functions in :mod:`qrita._api` never import an array library themselves:

``owns(x) -> bool``
    Is ``x`` this library's array?  Decided from ``type(x).__module__`` only; importing the library
    is allowed only once this returns True.
``describe(x) -> ArrayInfo``
    Library name, shape, dtype name ("float32", "bfloat16", ...), device string ("cpu", "cuda:0",
    ...), whether it can be written in place, and whether it lives on a GPU the kernels can use.
``to_torch(x)`` / ``from_torch(t, like)``
    Zero-copy views through DLPack (GPU path). ``like`` is the caller's original array.
``to_numpy(x)`` / ``from_numpy(a, like)``
    The reference path: a NumPy array (bfloat16 widened to float32 exactly) and back to ``like``'s
    library, dtype and device.

:func:`adapter_for` picks the adapter lazily from the array's type.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from types import ModuleType

__all__ = ["ArrayInfo", "adapter_for", "ADAPTERS"]


@dataclass(frozen=True)
class ArrayInfo:
    """What the public API needs to know about an array, library-neutral."""

    library: str  # "numpy", "torch", "cupy", "jax"
    shape: tuple[int, ...]
    dtype: str  # "float32", "bfloat16", "float16", "float64", "int32", ...
    device: str  # "cpu", "cuda:0", ...
    writable: bool
    on_gpu: bool


# type(x).__module__ prefix -> adapter module name; checked in order.
ADAPTERS: tuple[tuple[str, str], ...] = (
    ("numpy", "qrita.backends._numpy"),
    ("torch", "qrita.backends._torch"),
    ("cupy", "qrita.backends._cupy"),
    ("jax", "qrita.backends._jax"),
    ("jaxlib", "qrita.backends._jax"),
)


_OWNER: dict[type, ModuleType] = {}  # array type -> its adapter, once an adapter owned one


def adapter_for(x: object) -> ModuleType | None:
    """The adapter module that owns ``x``, or None if no adapter does. Ownership is a property
    of the type (every ``owns`` is an ``isinstance`` check), so it is remembered per type."""
    kind = type(x)
    adapter = _OWNER.get(kind)
    if adapter is not None:
        return adapter
    module = kind.__module__ or ""
    root = module.split(".", 1)[0]
    for prefix, name in ADAPTERS:
        if root == prefix:
            adapter = sys.modules.get(name) or importlib.import_module(name)
            if adapter.owns(x):
                _OWNER[kind] = adapter
                return adapter
    return None
