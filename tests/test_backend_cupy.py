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


def _fake_cupy_exchange(monkeypatch, stream_ptr: int, is_hip: bool = False):
    """A stand-in ``cupy`` for the direct exchange (no CuPy, no GPU needed): its current stream
    has the handle ``stream_ptr``, and its ``from_dlpack`` imports a capsule as torch does."""
    import types

    import torch

    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(is_hip=is_hip),
        get_current_stream=lambda: types.SimpleNamespace(ptr=stream_ptr))
    cupy.from_dlpack = torch.utils.dlpack.from_dlpack  # a bare capsule goes straight in
    monkeypatch.setitem(sys.modules, "cupy", cupy)


class _StandInArray:
    """A stand-in CuPy array over a CPU tensor whose ``__dlpack__`` records the stream it is
    given (CuPy waits on its current stream only when the consumer names another one)."""

    def __init__(self, tensor):
        self.tensor, self.streams = tensor, []

    def __dlpack__(self, stream=None):
        import torch

        self.streams.append(stream)
        return torch._C._to_dlpack(self.tensor)


@pytest.mark.parametrize("stream_ptr, is_hip, handle", [
    (0, False, 1),  # CUDA's null stream: DLPack's legacy default stream, 1
    (0, True, 0),  # ROCm's null stream stays 0
    (7, False, 7),  # any other stream: its own handle
])
def test_direct_exchange_crosses_both_ways_on_cupys_own_stream(
        monkeypatch, stream_ptr, is_hip, handle):
    """The adapter hands CuPy its own current stream (nothing for CuPy to order), imports the
    capsule by torch's C import, and goes back by ``cupy.from_dlpack`` of torch's capsule: the
    same memory both ways, and no warning (CuPy's deprecated ``toDlpack`` / ``fromDlpack``
    warn; they are not called)."""
    torch = pytest.importorskip("torch")
    import warnings

    from qrita.backends import _cupy

    _fake_cupy_exchange(monkeypatch, stream_ptr, is_hip)
    monkeypatch.setitem(_cupy._DIRECT, "ok", True)
    _cupy._direct_exchange.cache_clear()
    try:
        x = _StandInArray(torch.arange(12, dtype=torch.float32).reshape(3, 4))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            there = _cupy.to_torch(x)
            back = _cupy.from_torch(there, like=None)
        assert x.streams == [handle]
        assert there.data_ptr() == x.tensor.data_ptr() and back.data_ptr() == x.tensor.data_ptr()
        assert _cupy._DIRECT["ok"]
    finally:
        _cupy._direct_exchange.cache_clear()


@pytest.mark.parametrize("error, stays_on", [
    (TypeError("not this CuPy's signature"), False),  # another CuPy: off for the process
    (ValueError("unsupported dtype"), True),  # one array's problem: the next call tries again
])
def test_a_failing_direct_exchange_falls_back_to_the_public_one(monkeypatch, error, stays_on):
    torch = pytest.importorskip("torch")

    from qrita.backends import _cupy

    def fails(*_):
        raise error

    _fake_cupy_exchange(monkeypatch, 0)
    monkeypatch.setattr(_cupy, "_direct_exchange", lambda: (fails, fails, fails, 1))
    monkeypatch.setitem(_cupy._DIRECT, "ok", True)
    x = _StandInArray(torch.ones(5))
    public = []
    monkeypatch.setattr(torch, "from_dlpack", lambda a: public.append(a) or a.tensor)
    assert _cupy.to_torch(x) is x.tensor and public == [x]  # the public exchange answered
    assert x.streams == [1]  # after the direct one was tried
    assert _cupy._DIRECT["ok"] is stays_on


def _fake_cupy_streams(monkeypatch, device: int, stream_ptr: int):
    """A stand-in ``cupy`` whose current device is ``device`` and whose current stream there
    has the handle ``stream_ptr`` (no CuPy, no GPU needed)."""
    import contextlib
    import types

    cupy = types.ModuleType("cupy")
    cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDevice=lambda: device),
        get_current_stream=lambda: types.SimpleNamespace(ptr=stream_ptr),
        Device=lambda index: contextlib.nullcontext())
    cupy.cuda = cuda
    monkeypatch.setitem(sys.modules, "cupy", cupy)


@pytest.mark.parametrize("getters", [True, False])
@pytest.mark.parametrize("torch_device, torch_stream, cupy_stream, enters", [
    (0, 0, 0, False),  # both on the legacy default stream of device 0: nothing to enter
    (0, 7, 7, False),  # the same non-default stream handle: nothing either
    (0, 0, 7, True),  # CuPy on another stream: torch must run on it
    (1, 0, 0, True),  # torch's current device is another one
])
def test_stream_scope_enters_contexts_only_when_torch_runs_elsewhere(
        monkeypatch, getters, torch_device, torch_stream, cupy_stream, enters):
    """:func:`_cupy.stream_scope` leaves torch's device and stream alone when torch already
    runs on the array's device and on CuPy's current stream there (the same handle), read by
    torch's raw getters where it has them or by its public API; otherwise it enters torch's
    device and stream contexts for that stream."""
    import contextlib
    import types

    torch = pytest.importorskip("torch")
    from qrita.backends import _cupy

    _fake_cupy_streams(monkeypatch, 0, cupy_stream)
    entered = []
    if getters:
        monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: torch_device, raising=False)
        monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream",
                            lambda index: torch_stream if index == torch_device else -1,
                            raising=False)
    else:
        monkeypatch.setattr(_cupy, "_raw_stream_getters", lambda: None)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: torch_device)
        monkeypatch.setattr(torch.cuda, "current_stream",
                            lambda device=None: types.SimpleNamespace(cuda_stream=torch_stream))
    monkeypatch.setattr(torch.cuda, "device",
                        lambda d: entered.append(("device", d.index)) or contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "stream",
                        lambda s: entered.append(("stream", s)) or contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "default_stream", lambda device: "default")
    monkeypatch.setattr(torch.cuda, "ExternalStream",
                        lambda ptr, device: f"external {ptr}")
    if getters:
        _cupy._raw_stream_getters.cache_clear()
    try:
        x = types.SimpleNamespace(device=types.SimpleNamespace(id=0))
        with _cupy.stream_scope(x):
            pass
    finally:
        if getters:
            _cupy._raw_stream_getters.cache_clear()
    want = ([("device", 0), ("stream", "external 7" if cupy_stream else "default")]
            if enters else [])
    assert entered == want
