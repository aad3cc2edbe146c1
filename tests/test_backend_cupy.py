"""CuPy adapter: detection and description (no GPU needed for the first tests), round trips when
CuPy and a GPU are present. Stream ordering and zero-copy pointers are in tests/test_backend_gpu.py.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from qrita.backends import ADAPTERS


def test_cupy_prefix_maps_to_the_cupy_adapter():
    assert ("cupy", "qrita.backends._cupy") in ADAPTERS


def test_importing_the_adapter_does_not_import_cupy():
    already = "cupy" in sys.modules
    mod = importlib.import_module("qrita.backends._cupy")
    for name in ("owns", "describe", "to_torch", "from_torch", "to_numpy", "from_numpy"):
        assert callable(getattr(mod, name))
    assert callable(mod.stream_scope)
    if not already:
        assert "cupy" not in sys.modules


def _cupy_with_gpu():
    cupy = pytest.importorskip("cupy")
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDA driver / runtime missing
        pytest.skip(f"cupy is installed but no CUDA device is usable: {exc}")
    if n == 0:
        pytest.skip("cupy is installed but no CUDA device is visible")
    return cupy


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_owns_and_describe(dtype):
    cupy = _cupy_with_gpu()
    from qrita.backends import _cupy, adapter_for

    x = cupy.zeros((3, 7), dtype=dtype)
    assert adapter_for(x) is _cupy
    assert _cupy.owns(x) and not _cupy.owns(np.zeros(3))
    info = _cupy.describe(x)
    assert info.library == "cupy"
    assert info.shape == (3, 7)
    assert info.dtype == dtype
    assert info.device == f"cuda:{x.device.id}"
    assert info.writable is True and info.on_gpu is True


def test_numpy_round_trip_keeps_dtype_and_device():
    cupy = _cupy_with_gpu()
    from qrita.backends import _cupy

    x = cupy.arange(6, dtype=cupy.float16).reshape(2, 3)
    a = _cupy.to_numpy(x)
    assert isinstance(a, np.ndarray)
    back = _cupy.from_numpy(a.astype(np.float32), like=x)
    assert isinstance(back, cupy.ndarray) and back.dtype == cupy.float16
    assert back.device.id == x.device.id
    idx = _cupy.from_numpy(np.arange(3, dtype=np.int64), like=x)
    assert idx.dtype == np.int64


@pytest.mark.gpu
def test_torch_round_trip_is_zero_copy():
    cupy = _cupy_with_gpu()
    pytest.importorskip("torch")
    from qrita.backends import _cupy

    x = cupy.arange(12, dtype=cupy.float32).reshape(3, 4)
    with _cupy.stream_scope(x):
        t = _cupy.to_torch(x)
        assert t.data_ptr() == x.data.ptr
        assert t.device.index == x.device.id
        back = _cupy.from_torch(t, like=x)
    assert back.data.ptr == x.data.ptr
