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


def _fake_cupy_dlpack(monkeypatch, to_capsule, from_capsule):
    """A stand-in ``cupy._core.dlpack`` with the two capsule functions (no CuPy needed)."""
    import types

    cupy = types.ModuleType("cupy")
    core = types.ModuleType("cupy._core")
    dlpack = types.ModuleType("cupy._core.dlpack")
    dlpack.toDlpack, dlpack.fromDlpack = to_capsule, from_capsule
    cupy._core, core.dlpack = core, dlpack
    for name, mod in (("cupy", cupy), ("cupy._core", core), ("cupy._core.dlpack", dlpack)):
        monkeypatch.setitem(sys.modules, name, mod)


def _deprecated(fn):
    def wrapped(arg):
        import warnings

        warnings.warn("This function is deprecated and will be removed", DeprecationWarning,
                      stacklevel=2)
        return fn(arg)

    return wrapped


def test_bare_capsules_cross_both_ways_and_silence_only_their_own_warning(monkeypatch):
    torch = pytest.importorskip("torch")
    import warnings

    from qrita.backends import _cupy

    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    _fake_cupy_dlpack(monkeypatch, _deprecated(lambda a: torch.utils.dlpack.to_dlpack(a)),
                      _deprecated(torch.utils.dlpack.from_dlpack))
    monkeypatch.setitem(_cupy._BARE, "ok", True)
    _cupy._capsule_exchange.cache_clear()
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            exchange = _cupy._capsule_exchange()  # its filter goes before "always"
            assert exchange is not None
            there = _cupy.to_torch(t)  # the stand-in "CuPy array" is a CPU tensor here
            back = _cupy.from_torch(there, like=None)
            assert not seen  # called from the adapter: silenced
            exchange[0](t)  # called from anywhere else: still warned
            assert len(seen) == 1 and "deprecated" in str(seen[0].message)
        assert there.data_ptr() == t.data_ptr() and back.data_ptr() == t.data_ptr()
        assert _cupy._BARE["ok"]
    finally:
        _cupy._capsule_exchange.cache_clear()


@pytest.mark.parametrize("error, stays_on", [
    (TypeError("not this CuPy's signature"), False),  # another CuPy: off for the process
    (ValueError("unsupported dtype"), True),  # one array's problem: the next call tries again
])
def test_a_failing_bare_exchange_falls_back_to_the_public_one(monkeypatch, error, stays_on):
    torch = pytest.importorskip("torch")

    from qrita.backends import _cupy

    def fails(_):
        raise error

    _fake_cupy_dlpack(monkeypatch, fails, fails)
    monkeypatch.setitem(_cupy._BARE, "ok", True)
    _cupy._capsule_exchange.cache_clear()
    try:
        t = torch.ones(5)
        assert _cupy.to_torch(t).data_ptr() == t.data_ptr()  # torch.from_dlpack(t): public
        assert _cupy._BARE["ok"] is stays_on
    finally:
        _cupy._capsule_exchange.cache_clear()


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
