"""JAX adapter on CPU: detection, description, round trips through the public API, and jax.jit.

Everything here runs on JAX's CPU backend (CI). The GPU paths are in tests/test_backend_gpu.py.
"""

from __future__ import annotations

import subprocess
import sys
import types

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import qrita  # noqa: E402
from qrita.backends import _jax, adapter_for  # noqa: E402
from qrita.reference import oracle  # noqa: E402
from qrita.reference import sampling as ref_sampling  # noqa: E402

DTYPES = ["float32", "bfloat16", "float16"]
CPU = jax.devices("cpu")[0]


def _logits(rng: np.random.Generator, shape, dtype: str):
    """Distinct-ish logits with a few exact ties, on JAX's CPU device."""
    a = rng.normal(0.0, 2.0, size=shape).astype(np.float32)
    a[..., 3] = a[..., 7]  # a tie, ranked by index
    return jax.device_put(jnp.asarray(a, dtype=dtype), CPU)


def _host(x) -> np.ndarray:
    """The JAX array as NumPy, in its own dtype (ml_dtypes bfloat16 stays bfloat16)."""
    return np.asarray(x)


def _assert_same(out, want: np.ndarray) -> None:
    got = _host(out)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    # bit-for-bit (as float32 views: bfloat16/float16 widen exactly), NaN in the same places
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


@pytest.fixture(autouse=True)
def _on_cpu():
    """Every array these tests create lives on JAX's CPU device, even where JAX has a GPU."""
    with jax.default_device(CPU):
        yield


def _api():
    if not hasattr(qrita, "top_k_top_p_mask"):
        pytest.skip("qrita.top_k_top_p_mask is not available yet (qrita/_api.py missing)")
    return qrita


# ---------------------------------------------------------------------------------------------
# adapter logic


def test_import_qrita_imports_no_array_library():
    code = (
        "import sys, qrita; "
        "print(','.join(m for m in ('torch', 'jax', 'jaxlib', 'cupy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_adapter_for_concrete_array_and_tracer():
    x = jnp.ones((2, 3), jnp.float32)
    assert type(x).__module__.split(".")[0] in ("jaxlib", "jax")
    assert adapter_for(x) is _jax
    assert _jax.owns(x)
    assert not _jax.owns(np.ones(3))
    seen = {}

    @jax.jit
    def f(t):
        seen["adapter"] = adapter_for(t)
        seen["traced"] = _jax.is_traced(t)
        seen["info"] = _jax.describe(t)
        return t

    f(x)
    assert seen["adapter"] is _jax
    assert seen["traced"] is True
    info = seen["info"]
    assert (info.library, info.shape, info.dtype, info.device) == (
        "jax",
        (2, 3),
        "float32",
        "traced",
    )
    assert info.writable is False and info.on_gpu is False
    assert not _jax.is_traced(x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_describe_cpu_array(dtype):
    x = jax.device_put(jnp.zeros((4, 9), dtype), CPU)
    info = _jax.describe(x)
    assert info.library == "jax"
    assert info.shape == (4, 9)
    assert info.dtype == dtype
    assert info.device == "cpu"
    assert info.writable is False  # JAX arrays are immutable: never written in place
    assert info.on_gpu is False


def test_to_numpy_widens_bfloat16_and_from_numpy_restores(rng):
    x = _logits(rng, (3, 8), "bfloat16")
    a = _jax.to_numpy(x)
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    np.testing.assert_array_equal(a, np.asarray(x).astype(np.float32))
    back = _jax.from_numpy(a, like=x)
    assert isinstance(back, jax.Array)
    assert back.dtype == jnp.bfloat16
    assert back.devices() == x.devices()
    np.testing.assert_array_equal(np.asarray(back), np.asarray(x))
    idx = _jax.from_numpy(np.arange(3, dtype=np.int64), like=x)
    assert idx.dtype == _jax.index_dtype()


def test_to_numpy_refuses_tracers():
    @jax.jit
    def f(t):
        with pytest.raises(TypeError, match="traced"):
            _jax.to_numpy(t)
        return t

    f(jnp.ones(3))


def test_stream_scope_is_a_no_op_on_cpu():
    x = jnp.ones(3)
    with _jax.stream_scope(x):
        pass


@pytest.mark.parametrize("getter", [True, False])
@pytest.mark.parametrize("current, enters", [(1, False), (0, True)])
def test_stream_scope_enters_the_arrays_device_only_when_it_is_not_current(
        monkeypatch, getter, current, enters):
    """A GPU array on device 1 makes device 1 torch's current device for the kernel, entering
    torch's device context only when another device is current (read by torch's C getter where
    it has one, else ``torch.cuda.current_device``)."""
    import contextlib

    torch = pytest.importorskip("torch")
    monkeypatch.setattr(_jax, "_export_device", lambda x: 1)  # a single-GPU array on GPU 1
    if getter:
        monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: current, raising=False)
    else:
        monkeypatch.delattr(torch._C, "_cuda_getDevice", raising=False)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: current)
    entered = []
    monkeypatch.setattr(torch.cuda, "device",
                        lambda index: entered.append(index) or contextlib.nullcontext())
    scope = _jax.stream_scope(jnp.ones(3))
    with scope:
        pass
    assert entered == ([1] if enters else [])
    assert (scope is _jax._NO_SCOPE) == (not enters)  # no context built for nothing to enter


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int32", "bool", "int64"])
def test_from_torch_direct_import_is_zero_copy_and_exact(dtype):
    """The adapter's direct DLPack import (JAX internals, looked up once per device) returns the
    torch tensor's own buffer as a jax.Array with the same values and dtype; a dtype JAX would
    canonicalise (int64 without x64) takes the public ``jax.dlpack.from_dlpack`` instead, and
    ``from_torch`` gives the same result either way."""
    torch = pytest.importorskip("torch")
    t = (torch.randn(4, 96, generator=torch.Generator().manual_seed(5)) * 9).to(
        getattr(torch, dtype))
    direct = _jax._direct_import(t)
    x64 = bool(jax.config.jax_enable_x64)
    if dtype == "int64" and not x64:
        assert direct is None
    else:
        assert direct is not None and isinstance(direct, jax.Array)
        assert direct.unsafe_buffer_pointer() == t.data_ptr()
        assert str(direct.dtype) == dtype and direct.shape == tuple(t.shape)
        np.testing.assert_array_equal(np.asarray(direct).astype(np.float64),
                                      t.to(torch.float64).numpy())
    out = _jax.from_torch(t, like=jnp.zeros(1))
    want_dtype = "int32" if dtype == "int64" and not x64 else dtype
    assert str(out.dtype) == want_dtype
    np.testing.assert_array_equal(np.asarray(out).astype(np.float64),
                                  t.to(torch.float64).numpy())


def test_direct_import_without_the_version_in_jax_dlpack(monkeypatch):
    """jax 0.11's dlpack module no longer imports ``jaxlib_extension_version`` (0.10's does): the
    direct import must not depend on it (it read it there up to the seventeenth session and fell
    back to the public path on the H200's jax, 65 µs per call)."""
    torch = pytest.importorskip("torch")
    from jax._src import dlpack as jdl

    monkeypatch.delattr(jdl, "jaxlib_extension_version", raising=False)
    _jax._jax_internals.cache_clear()
    try:
        t = torch.arange(12, dtype=torch.float32)
        direct = _jax._direct_import(t)
        assert direct is not None and direct.unsafe_buffer_pointer() == t.data_ptr()
    finally:
        monkeypatch.undo()
        _jax._jax_internals.cache_clear()


class _FakeStreams:
    """torch's CUDA getters as the direct exchanges see them, on a CPU machine: device 0 is
    current and its current stream has the handle ``current``; events and streams are logged."""

    def __init__(self, torch, current):
        self.torch, self.current, self.log = torch, current, []

    def getters(self):
        return (lambda: 0, lambda index: self.current, self.torch._C._from_dlpack,
                self.torch._C._to_dlpack, True)


@pytest.mark.parametrize("current, passed", [(0, 1), (1234, 1234)])
def test_direct_export_passes_torchs_current_stream(monkeypatch, current, passed):
    """``to_torch`` by jaxlib's export with torch's current stream on the array's device (the
    legacy default stream, handle 0, is passed as 1, as DLPack asks), imported by torch's C
    function: zero-copy and exact. Any failure falls back to ``torch.from_dlpack``."""
    torch = pytest.importorskip("torch")
    fake = _FakeStreams(torch, current)
    internals = _jax._jax_internals()
    assert internals is not None
    real_export = internals[2].buffer_to_dlpack_managed_tensor
    seen = []

    def export(x, stream=None):
        seen.append(stream)
        return real_export(x, stream=None)  # a CPU buffer takes no stream

    class Lib:  # jaxlib's module with the export logged
        def __getattr__(self, name):
            return export if name == "buffer_to_dlpack_managed_tensor" else getattr(
                internals[2], name)

    monkeypatch.setattr(_jax, "_torch_cuda_getters", fake.getters)
    monkeypatch.setattr(_jax, "_jax_internals", lambda: (internals[0], internals[1], Lib()))
    monkeypatch.setattr(_jax, "_export_device", lambda x: 0)
    x = jnp.arange(24, dtype=jnp.float32).reshape(2, 12) * 1.5
    t = _jax.to_torch(x)
    assert seen == [passed]
    assert t.data_ptr() == x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(t.numpy(), np.asarray(x))
    # another device than torch's current one: the public path (which raises there on a GPU)
    monkeypatch.setattr(_jax, "_export_device", lambda x: 1)
    assert _jax._direct_export(x) is None
    monkeypatch.setattr(_jax, "_export_device", lambda x: -1)  # not a single-GPU array
    assert _jax._direct_export(x) is None
    assert seen == [passed]


def test_export_device_of_a_cpu_array_is_none():
    assert _jax._export_device(jnp.ones(3)) == -1
    assert _jax._direct_export(jnp.ones(3)) is None


@pytest.mark.parametrize("same_stream", [False, True])
def test_ordered_capsule_makes_jaxs_stream_wait(monkeypatch, same_stream):
    """``from_torch``'s capsule: an event recorded on torch's current stream and JAX's stream
    made to wait for it, once each per call (nothing when both are the same stream), then
    torch's export of the tensor itself (zero-copy)."""
    torch = pytest.importorskip("torch")
    fake = _FakeStreams(torch, 77 if same_stream else 5)
    log = fake.log

    class Event:
        def record(self, stream):
            log.append(("record", stream))

    class Stream:
        def __init__(self, name):
            self.name = name

        def wait_event(self, event):
            log.append(("wait", self))

        def __repr__(self):
            return self.name

    monkeypatch.setattr(_jax, "_torch_cuda_getters", fake.getters)
    monkeypatch.setattr(_jax, "_ORDER_EVENTS", {0: (Event(), Stream("jax"))})
    monkeypatch.setattr(_jax, "_TORCH_STREAMS", {(0, 5): Stream("torch")})
    t = torch.arange(10, dtype=torch.float32)
    for _ in range(2):
        capsule = _jax._ordered_capsule(t, (2, 0), 77)  # kDLCUDA, device 0, JAX's stream 77
        back = torch._C._from_dlpack(capsule)
        assert back.data_ptr() == t.data_ptr()
    want = [] if same_stream else [("record", "torch"), ("wait", "jax")] * 2
    assert [(a, repr(b)) for a, b in log] == want
    assert _jax._ordered_capsule(t, (1, 0), None) is None  # a CPU tensor: t.__dlpack__
    monkeypatch.setattr(_jax, "_torch_cuda_getters", lambda: None)
    assert _jax._ordered_capsule(t, (2, 0), 77) is None


def test_index_dtype_follows_x64():
    assert _jax.index_dtype() == (np.int64 if jax.config.jax_enable_x64 else np.int32)


# ---------------------------------------------------------------------------------------------
# traced path, directly (independent of the public API's wiring)


@pytest.mark.parametrize("dtype", DTYPES)
def test_traced_masks_under_jit_match_oracle(rng, dtype):
    x = _logits(rng, (5, 40), dtype)
    k = jnp.asarray([0, 1, 3, 39, 100], jnp.int32)
    p = jnp.asarray([0.5, 1.0, 0.0, 0.9, np.nan], jnp.float32)
    out = jax.jit(lambda x, k, p: _jax.traced_masks(x, k, p, fill=-7.0))(x, k, p)
    want = oracle.top_k_top_p_mask(_host(x), np.asarray(k), np.asarray(p), fill=-7.0)
    _assert_same(out, want)


def test_traced_masks_static_scalars_and_1d(rng):
    x = _logits(rng, (33,), "float32")
    out = jax.jit(lambda x: _jax.traced_masks(x, 4, 0.8))(x)
    _assert_same(out, oracle.top_k_top_p_mask(_host(x), 4, 0.8))


def test_traced_top_k_under_jit_match_oracle(rng):
    x = _logits(rng, (6, 3, 10), "bfloat16")
    for axis, mode, srt in [(-1, "largest", True), (0, "smallest", True), (1, "largest", False)]:
        v, i = jax.jit(
            lambda x, axis=axis, mode=mode, srt=srt: _jax.traced_top_k(
                x, 2, axis=axis, mode=mode, sorted=srt
            )
        )(x)
        ov, oi = oracle.top_k(_host(x), 2, axis=axis, mode=mode, sorted=srt)
        _assert_same(v, ov)
        assert i.dtype == _jax.index_dtype()
        np.testing.assert_array_equal(np.asarray(i), oi)


def test_traced_masks_under_vmap(rng):
    x = _logits(rng, (4, 20), "float32")
    out = jax.jit(jax.vmap(lambda r: _jax.traced_masks(r, 3)))(x)
    _assert_same(out, oracle.top_k_mask(_host(x), 3))


# ---------------------------------------------------------------------------------------------
# public API, eager


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(37,), (4, 37)])
def test_api_mask_round_trip(rng, dtype, shape):
    q = _api()
    x = _logits(rng, shape, dtype)
    for k, p in [(5, None), (None, 0.9), (10, 0.5), (0, 0.0)]:
        out = q.top_k_top_p_mask(x, k, p)
        assert isinstance(out, jax.Array)
        assert out.devices() == x.devices()
        _assert_same(out, oracle.top_k_top_p_mask(_host(x), k, p))
    _assert_same(q.top_k_mask(x, 3, fill=-1.0), oracle.top_k_mask(_host(x), 3, fill=-1.0))
    _assert_same(q.top_p_mask(x, 0.7), oracle.top_p_mask(_host(x), 0.7))


def test_api_mask_per_row_jax_arrays(rng):
    q = _api()
    x = _logits(rng, (4, 30), "bfloat16")
    k = jnp.asarray([1, 0, 5, 30], jnp.int32)
    p = jnp.asarray([0.9, 0.2, 1.0, 0.0], jnp.float32)
    out = q.top_k_top_p_mask(x, k, p)
    _assert_same(out, oracle.top_k_top_p_mask(_host(x), np.asarray(k), np.asarray(p)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_api_top_k_round_trip(rng, dtype):
    q = _api()
    x = _logits(rng, (3, 5, 12), dtype)
    for axis, mode, srt in [(-1, "largest", True), (1, "smallest", False), (0, "largest", True)]:
        res = q.top_k(x, 2, axis=axis, mode=mode, sorted=srt)
        v, i = res
        assert isinstance(v, jax.Array) and isinstance(i, jax.Array)
        ov, oi = oracle.top_k(_host(x), 2, axis=axis, mode=mode, sorted=srt)
        _assert_same(v, ov)
        assert i.dtype == _jax.index_dtype()  # int64 with jax_enable_x64, else int32
        np.testing.assert_array_equal(np.asarray(i), oi)


def test_api_inplace_on_jax_is_an_error(rng):
    q = _api()
    x = _logits(rng, (2, 10), "float32")
    before = np.asarray(x).copy()
    with pytest.raises(ValueError, match="inplace"):
        q.top_k_mask(x, 3, inplace=True)
    with pytest.raises(ValueError, match="inplace"):
        q.top_k_top_p_mask(x, 3, 0.5, inplace=True)
    np.testing.assert_array_equal(np.asarray(x), before)


def test_api_does_not_modify_input(rng):
    q = _api()
    x = _logits(rng, (3, 16), "float32")
    before = np.asarray(x).copy()
    q.top_k_top_p_mask(x, 2, 0.5)
    np.testing.assert_array_equal(np.asarray(x), before)


# ---------------------------------------------------------------------------------------------
# public API under jax.jit


@pytest.mark.parametrize("dtype", DTYPES)
def test_api_under_jit(rng, dtype):
    q = _api()
    x = _logits(rng, (4, 25), dtype)
    out = jax.jit(lambda x: q.top_k_mask(x, 5))(x)
    assert isinstance(out, jax.Array) and out.dtype == x.dtype
    _assert_same(out, oracle.top_k_mask(_host(x), 5))


def test_api_under_jit_with_traced_row_arrays(rng):
    q = _api()
    x = _logits(rng, (3, 25), "float32")
    k = jnp.asarray([2, 0, 7], jnp.int32)
    p = jnp.asarray([0.6, 0.95, 0.0], jnp.float32)
    out = jax.jit(lambda x, k, p: q.top_k_top_p_mask(x, k, p))(x, k, p)
    _assert_same(out, oracle.top_k_top_p_mask(_host(x), np.asarray(k), np.asarray(p)))
    out = jax.jit(lambda x, p: q.top_p_mask(x, p))(x, p)
    _assert_same(out, oracle.top_p_mask(_host(x), np.asarray(p)))


def test_api_top_k_under_jit(rng):
    q = _api()
    x = _logits(rng, (4, 25), "bfloat16")
    v, i = jax.jit(lambda x: tuple(q.top_k(x, 3)))(x)
    ov, oi = oracle.top_k(_host(x), 3)
    _assert_same(v, ov)
    np.testing.assert_array_equal(np.asarray(i), oi)


def test_api_under_jit_inplace_is_an_error(rng):
    q = _api()
    x = _logits(rng, (2, 10), "float32")
    with pytest.raises(ValueError, match="inplace"):
        jax.jit(lambda x: q.top_k_mask(x, 3, inplace=True))(x)


def test_xla_stream_objects_are_made_once_per_device_and_handle(monkeypatch):
    """The jit callback's torch object for XLA's stream is made once per (device, handle): the
    default stream for handle 0, an ExternalStream otherwise."""
    torch = pytest.importorskip("torch")
    from qrita.backends import _jax_jit

    made = []
    monkeypatch.setattr(torch.cuda, "ExternalStream",
                        lambda ptr, device: made.append(("external", ptr, device.index))
                        or f"external {ptr} on {device.index}")
    monkeypatch.setattr(torch.cuda, "default_stream",
                        lambda device: made.append(("default", device.index)) or "default")
    monkeypatch.setattr(_jax_jit, "_XLA_STREAMS", {})
    assert _jax_jit._xla_stream(0, 77) == "external 77 on 0"
    assert _jax_jit._xla_stream(0, 77) == "external 77 on 0"
    assert _jax_jit._xla_stream(0, 0) == "default"
    assert _jax_jit._xla_stream(1, 77) == "external 77 on 1"
    assert _jax_jit._xla_stream(0, 0) == "default"
    assert made == [("external", 77, 0), ("default", 0), ("external", 77, 1)]


def test_torch_view_of_a_dlpack_producer_is_zero_copy():
    torch = pytest.importorskip("torch")
    from qrita.backends import _jax_jit

    t = torch.arange(7, dtype=torch.float32)
    view = _jax_jit._torch_view(t)
    assert view.data_ptr() == t.data_ptr() and torch.equal(view, t)


@pytest.mark.parametrize("current_device", [0, 1])
def test_xla_stream_scope_sets_and_restores_by_torchs_setters(monkeypatch, current_device):
    """The jit callback's scope makes XLA's stream (and its device) torch's current ones by
    torch's C setters and restores the previous stream, then the previous device; a torch
    without those setters takes the public contexts."""
    import contextlib
    import types

    torch = pytest.importorskip("torch")
    from qrita.backends import _jax_jit

    log = []
    state = {"device": current_device}

    def set_device(index):
        log.append(("device", index))
        state["device"] = index

    def set_stream(stream_id, device_index, device_type):
        log.append(("stream", stream_id, device_index))
        state["device"] = device_index  # as torch's setter: the stream's device becomes current

    fakes = {"_cuda_getDevice": lambda: state["device"], "_cuda_setDevice": set_device,
             "_cuda_getCurrentStream": lambda index: (5, index, 1),
             "_cuda_setStream": set_stream}
    for name, fn in fakes.items():
        monkeypatch.setattr(torch._C, name, fn, raising=False)
    monkeypatch.setattr(_jax_jit, "_xla_stream", lambda index, ptr: types.SimpleNamespace(
        stream_id=ptr * 10, device_index=index, device_type=1))
    ctx = types.SimpleNamespace(stream=7)
    with _jax_jit._on_xla_stream(ctx, torch.device("cuda", 0)):
        assert state["device"] == 0
        log.append("body")
    moved = current_device != 0
    assert log == ([("device", 0)] if moved else []) + [("stream", 70, 0), "body",
                                                        ("stream", 5, 0)] + (
        [("device", current_device)] if moved else [])
    assert state["device"] == current_device

    monkeypatch.delattr(torch._C, "_cuda_setStream")
    entered = []
    monkeypatch.setattr(torch.cuda, "device",
                        lambda index: entered.append(("device", index)) or contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "stream",
                        lambda s: entered.append(("stream", s.stream_id)) or contextlib.nullcontext())
    with _jax_jit._on_xla_stream(ctx, torch.device("cuda", 0)):
        pass
    assert entered == [("device", 0), ("stream", 70)]


@pytest.mark.parametrize("devices, want", [
    ([("gpu", 0, 3)], 0),  # the local hardware id, even when 0 (not the global id)
    ([("cuda", None, 2)], 2),  # no local hardware id: the id
    ([("rocm", 1, 1)], 1),
    ([("cpu", None, 0)], -1),
    ([("gpu", 0, 0), ("gpu", 1, 1)], -1),  # sharded over two GPUs: the public path
])
def test_export_device_is_the_local_gpu_index(monkeypatch, devices, want):
    import types

    fake = [types.SimpleNamespace(platform=p, local_hardware_id=h, id=i) for p, h, i in devices]
    monkeypatch.setattr(_jax, "_devices", lambda x: fake)
    assert _jax._find_export_device(object()) == want


# ---------------------------------------------------------------------------------------------
# eager calls through a cached jitted program (QRITA_JAX_EAGER_JIT; the GPU dispatch is in
# tests/test_backend_gpu.py: here the programs themselves, on JAX's CPU backend)


def _host_param(v):
    """A k / p argument for the NumPy call: None and Python scalars as they are, arrays on host."""
    return v if v is None or isinstance(v, (int, float)) else np.asarray(v)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eager_masks_program_matches_the_oracle(dtype):
    rng = np.random.default_rng(21)
    x = _logits(rng, (3, 67), dtype)
    k_rows = jax.device_put(jnp.asarray([1, 66, 0], dtype=jnp.int32), CPU)
    p_rows = jax.device_put(jnp.asarray([0.5, 1.0, 0.0], dtype=jnp.float32), CPU)
    for k, p, fill in ((5, 0.9, float("-inf")), (k_rows, None, float("nan")),
                       (None, p_rows, -7.0), (k_rows, p_rows, float("-inf"))):
        _jax._SEEN.clear()
        assert _jax.eager_masks(x, k, p, fill=fill) is None  # a first sighting: the exchanges
        out = _jax.eager_masks(x, k, p, fill=fill)
        want = qrita.top_k_top_p_mask(_host(x), _host_param(k), _host_param(p), fill=fill)
        np.testing.assert_array_equal(_host(out).astype(np.float32), want.astype(np.float32))


def test_eager_masks_program_is_cached_per_static_arguments():
    """One program per (k, p, fill) statics, NaN fill included (a NaN key never equals
    itself: the fill is keyed by its bits); per-row arrays are operands, not keys."""
    rng = np.random.default_rng(22)
    x = _logits(rng, (2, 40), "float32")
    _jax._jitted_masks.cache_clear()
    _jax._SEEN.clear()
    firsts = []
    for _ in range(3):
        firsts.append(_jax.eager_masks(x, 4, None, fill=float("nan")) is None)
        _jax.eager_masks(x, jax.device_put(jnp.asarray([2, 9]), CPU), 0.5)
        _jax.eager_masks(x, jax.device_put(jnp.asarray([3, 1]), CPU), 0.5)
    assert _jax._jitted_masks.cache_info().misses == 2
    assert firsts == [True, False, False]
    # another shape is another key: its first call takes the exchanges again
    assert _jax.eager_masks(x[:1], 4, None, fill=float("nan")) is None


def test_eager_seen_keys_are_bounded(monkeypatch):
    monkeypatch.setattr(_jax, "_SEEN_MAX", 3)
    _jax._SEEN.clear()
    assert [_jax._seen_before(("k", i)) for i in range(3)] == [False] * 3
    assert _jax._seen_before(("k", 2))
    assert not _jax._seen_before(("k", 3)) and len(_jax._SEEN) == 1  # full: cleared, then noted


@pytest.mark.parametrize(("k", "axis", "mode", "sorted"),
                         [(1, -1, "largest", True), (7, 0, "smallest", False), (40, 1, "largest", True)])
def test_eager_top_k_program_matches_the_oracle(monkeypatch, k, axis, mode, sorted):
    rng = np.random.default_rng(23)
    x0 = _logits(rng, (9, 40), "float32")
    _jax._SEEN.clear()
    monkeypatch.setenv("QRITA_JAX_TOP_K_COPY", "0")
    assert _jax.eager_top_k(x0, k) is None and _jax.eager_top_k(x0, k) is None  # turned off
    monkeypatch.delenv("QRITA_JAX_TOP_K_COPY")  # the default: on
    x = _logits(rng, (9, 40), "bfloat16")
    _jax._SEEN.clear()
    assert _jax.eager_top_k(x, k, axis=axis, mode=mode, sorted=sorted) is None
    values, indices = _jax.eager_top_k(x, k, axis=axis, mode=mode, sorted=sorted)
    want_v, want_i = oracle.top_k(_host(x).astype(np.float32), k, axis=axis, mode=mode,
                                  sorted=sorted)
    np.testing.assert_array_equal(np.asarray(indices), want_i)
    np.testing.assert_array_equal(_host(values).astype(np.float32), want_v)
    assert indices.dtype == _jax.index_dtype()


def test_eager_sampling_program_matches_the_reference_and_keys_no_counters():
    """``_jax.eager_sampling``: None on a key's first call; later calls run one cached program per statics, with new seeds / offsets (ints below 2**31)
    and per-row arrays as operands, not keys; a seed above 2**31 is static. Tokens, log-probs,
    probabilities and candidates equal the NumPy reference's."""
    from qrita.reference import sampling as ref

    rng = np.random.default_rng(31)
    x = _logits(rng, (5, 300), "bfloat16")
    xh = _host(x).astype(np.float32)
    k_rows = jax.device_put(jnp.asarray([1, 7, 0, 300, 40], dtype=jnp.int32), CPU)
    _jax._jitted_sampling.cache_clear()
    _jax._SEEN.clear()
    assert _jax.eager_sampling("sample", x, k=k_rows, p=0.9, seed=None, offset=0) is None
    for seed in (3, 4, 2**31 - 1, 2**40 + 5):
        kw = dict(k=k_rows, p=0.9, min_p=None, temperature=0.7, seed=seed, offset=seed // 2)
        got = _jax.eager_sampling("sample", x, logprob=True, **kw)
        if got is None:  # a key's first call
            got = _jax.eager_sampling("sample", x, logprob=True, **kw)
        want_tok, want_lp = ref.sample(xh, np.asarray(k_rows, dtype=np.int64), 0.9,
                                       temperature=0.7, seed=seed, offset=seed // 2,
                                       return_logprob=True)
        np.testing.assert_array_equal(np.asarray(got[0]), want_tok)
        np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want_lp, np.float32))
    # seeds and offsets below 2**31 share one program; the large seed has its own
    assert _jax._jitted_sampling.cache_info().misses == 2
    for _ in range(2):
        probs = _jax.eager_sampling("probs", x, k=k_rows, p=0.5, min_p=0.1, temperature=None)
        cands = _jax.eager_sampling("candidates", x, k=k_rows, p=0.5, min_p=0.1,
                                    temperature=None, max_candidates=9)
    np.testing.assert_array_equal(
        np.asarray(probs[0]),
        ref.probs(xh, np.asarray(k_rows, dtype=np.int64), 0.5, min_p=0.1, dtype=np.float32))
    want = ref.candidates(xh, np.asarray(k_rows, dtype=np.int64), 0.5, min_p=0.1,
                          max_candidates=9)
    for got, expected in zip(cands, (want.indices, want.probs, want.counts), strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected).astype(got.dtype))


def test_eager_sampling_takes_the_exchanges_for_a_seed_seen_once():
    """A seed / offset value's first call takes the exchanges (a device transfer per call cost
    more than they do, s53d), even once the program exists; its later calls take the
    program."""
    x = _logits(np.random.default_rng(32), (3, 64), "float32")
    _jax._SEEN.clear()
    _jax._COUNTER_ARRAYS.clear()
    kw = dict(k=None, p=0.9, min_p=None, temperature=None, offset=0)
    assert _jax.eager_sampling("sample", x, seed=1, **kw) is None  # the program's first call
    assert _jax.eager_sampling("sample", x, seed=1, **kw) is not None
    assert _jax.eager_sampling("sample", x, seed=2, **kw) is None  # a new value
    assert _jax.eager_sampling("sample", x, seed=2, **kw) is not None
    assert len(_jax._COUNTER_ARRAYS) == 3  # the values 0, 1 and 2, kept on the device


@pytest.mark.parametrize("shape", [(200,), (6, 200)])
def test_eager_unseeded_sample_draws_fresh_streams_kept_on_the_device(monkeypatch, shape):
    """``sample`` without a seed by jit (``_jax._FreshDraws``): from a key's second call, each
    call draws with the rows' seeds kept on the device and an offset the program advances by
    one; the tokens equal the reference's with those seeds and offsets; the seeds are distinct
    per row and the offsets distinct per call; a nonzero offset takes the exchanges."""
    from qrita.reference import sampling as ref

    rng = np.random.default_rng(34)
    x = _logits(rng, shape, "float32")
    xh = np.atleast_2d(_host(x))
    batch = xh.shape[0]
    _jax._SEEN.clear()
    _jax._FRESH.clear()
    _jax._jitted_sampling.cache_clear()
    kw = dict(k=None, p=0.95, min_p=None, temperature=1.5, seed=None)
    monkeypatch.delenv("QRITA_JAX_EAGER_UNSEEDED", raising=False)  # off by default
    assert _jax.eager_sampling("sample", x, offset=0, **kw) is None
    assert _jax.eager_sampling("sample", x, offset=0, **kw) is None
    monkeypatch.setenv("QRITA_JAX_EAGER_UNSEEDED", "1")
    _jax._SEEN.clear()
    assert _jax.eager_sampling("sample", x, offset=0, **kw) is None  # the key's first call
    assert _jax.eager_sampling("sample", x, offset=5, **kw) is None  # an offset: exchanges
    key = (next(iter(x.devices())), batch)
    draws = []
    for call in range(6):
        tok, lp = _jax.eager_sampling("sample", x, offset=None if call % 2 else 0, **kw)
        seeds, offset = (np.asarray(a) for a in _jax._FRESH._state[key])
        assert int(offset) == call + 1  # advanced by the program, on the device
        want_tok, want_lp = ref.sample(xh, None, 0.95, temperature=1.5,
                                       seed=seeds.astype(np.int64).astype(np.uint64),
                                       offset=call, return_logprob=True)
        np.testing.assert_array_equal(np.atleast_1d(np.asarray(tok)), want_tok)
        np.testing.assert_array_equal(np.atleast_1d(np.asarray(lp)), want_lp.astype(np.float32))
        draws.append(np.atleast_1d(np.asarray(tok)))
    assert seeds.shape == (batch,) and len(set(seeds.tolist())) == batch
    assert _jax._jitted_sampling.cache_info().misses == 1  # one program for every call
    assert len({tuple(d) for d in draws}) > 1  # fresh draws (a flat-ish row of 200 entries)


def test_fresh_draws_give_concurrent_calls_distinct_offsets():
    """``_jax._FreshDraws.call`` from several threads at once: every call gets its own offset
    (the lock), the seeds are drawn once per (device, batch) and are distinct per row, and the
    kept offset ends at the number of calls."""
    import threading

    fresh = _jax._FreshDraws()
    device = jax.devices("cpu")[0]
    seen: list[int] = []
    seeds_seen: list[tuple] = []

    def run(seeds, offset):
        seen.append(int(offset))  # the host value while the lock is held
        seeds_seen.append(tuple(np.asarray(seeds).tolist()))
        return "token", offset + 1

    def worker():
        for _ in range(25):
            assert fresh.call(device, 5, run) == ("token",)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == list(range(100))
    assert len(set(seeds_seen)) == 1 and len(set(seeds_seen[0])) == 5
    assert int(fresh._state[(device, 5)][1]) == 100


@pytest.mark.parametrize("shape", [(300,), (4, 300)])
def test_public_sampling_calls_through_eager_sampling_keep_their_shapes(monkeypatch, shape):
    """The public ``sample`` / ``top_k_top_p_probs`` / ``candidates`` as an eager GPU call takes
    them (here JAX's CPU backend stands in: the sampler's GPU module is faked present): from a
    key's second call the outputs come from ``_jax.eager_sampling``, with the shapes, dtypes
    and values of the reference's, (V,) logits included."""
    from qrita import _sampling_api

    rng = np.random.default_rng(33)
    x = _logits(rng, shape, "float32")
    xh = np.atleast_2d(_host(x))
    class Exchanges(Exception):
        pass

    def exchanges(*args, **kwargs):
        raise Exchanges

    fake = types.SimpleNamespace(sample=exchanges, top_k_top_p_probs=exchanges,
                                 candidates=exchanges)
    monkeypatch.setattr(_sampling_api, "_gpu", lambda c: fake)
    monkeypatch.setattr(_jax, "EAGER_JIT", True)
    monkeypatch.setattr(_jax, "to_torch", exchanges)
    _jax._SEEN.clear()
    _jax._jitted_sampling.cache_clear()
    calls = [
        lambda: qrita.sample(x, k=9, p=0.8, temperature=0.9, seed=5, offset=1,
                             return_logprob=True),
        lambda: qrita.top_k_top_p_probs(x, 9, 0.8, temperature=0.9),
        lambda: qrita.candidates(x, 9, 0.8, temperature=0.9, max_candidates=12),
    ]
    for call in calls:  # a key's first call takes the exchanges
        with pytest.raises(Exchanges):
            call()
    (tok, lp), probs, cands = (call() for call in calls)
    assert _jax._jitted_sampling.cache_info().currsize == 3
    want_tok, want_lp = ref_sampling.sample(xh, 9, 0.8, temperature=0.9, seed=5, offset=1,
                                            return_logprob=True)
    one = len(shape) == 1
    assert tok.shape == shape[:-1] and lp.shape == shape[:-1] and probs.shape == shape
    np.testing.assert_array_equal(np.atleast_1d(np.asarray(tok)), want_tok)
    np.testing.assert_array_equal(np.atleast_1d(np.asarray(lp)), want_lp.astype(np.float32))
    np.testing.assert_array_equal(
        np.atleast_2d(np.asarray(probs)),
        ref_sampling.probs(xh, 9, 0.8, temperature=0.9, dtype=np.float32))
    want = ref_sampling.candidates(xh, 9, 0.8, temperature=0.9, max_candidates=12)
    for got, expected in zip(cands, (want.indices, want.probs, want.counts), strict=True):
        expected = np.asarray(expected)[0] if one else np.asarray(expected)
        assert got.shape == expected.shape
        np.testing.assert_array_equal(np.asarray(got), expected.astype(got.dtype))
