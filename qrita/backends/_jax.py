"""JAX adapter.

JAX arrays are immutable, so every JAX array is described as not writable: ``inplace=True`` is an
error and the masks always run out of place (the DLPack view torch gets of a JAX buffer *is*
writable, so writing through it would silently mutate an immutable array; nothing here does).

* Eager arrays on one CUDA device go to the Triton kernels through a zero-copy DLPack view
  (``torch.from_dlpack``) and come back zero-copy (``jax.dlpack.from_dlpack``). DLPack orders the
  streams both ways: no host synchronisation is needed (see :func:`stream_scope`).
* Eager CPU arrays (and arrays sharded over several devices) take the NumPy reference path:
  ``np.asarray`` (bfloat16 arrives as ``ml_dtypes.bfloat16`` and is widened exactly to float32) and
  back with :func:`jax.device_put` to the original device or sharding and dtype.
* Inside :func:`jax.jit` (tracers) the public functions call :func:`traced_masks` /
  :func:`traced_top_k`, which stage the work into the traced program (see :mod:`._jax_jit`).

Indices: JAX's default integer is int32 unless ``jax_enable_x64`` is set, so ``top_k`` indices of
JAX arrays are int64 with x64 enabled and int32 otherwise (as ``jax.lax.top_k``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from typing import Any

import numpy as np

from qrita.backends import ArrayInfo

__all__ = [
    "owns",
    "describe",
    "to_torch",
    "from_torch",
    "to_numpy",
    "from_numpy",
    "stream_scope",
    "is_traced",
    "traced_masks",
    "traced_top_k",
    "traced_sampling",
    "index_dtype",
    "eager_by_jit",
    "eager_masks",
    "eager_top_k",
    "eager_sampling",
]


def owns(x: object) -> bool:
    """True for a ``jax.Array``: concrete arrays and tracers (inside jit, vmap, grad) alike."""
    import jax

    return isinstance(x, jax.Array)


def is_traced(x: Any) -> bool:
    """True if ``x`` is a JAX tracer (an abstract value inside a transformation such as jit)."""
    return isinstance(x, _tracer_type())


@functools.cache
def _tracer_type() -> type:
    import jax

    tracer = getattr(getattr(jax, "core", None), "Tracer", None)
    if tracer is None:  # pragma: no cover - if jax.core.Tracer leaves the public namespace
        from jax._src.core import Tracer as tracer
    return tracer


def _devices(x: Any) -> list[Any]:
    return sorted(x.sharding.device_set, key=lambda d: d.id)


#: sharding -> (device string, on a single GPU), for :func:`describe` (a few entries per process:
#: one per device or device set the caller's arrays live on)
_PLACEMENTS: dict[Any, tuple[str, bool]] = {}
#: dtype -> its NumPy name, for :func:`describe`
_DTYPE_NAMES: dict[Any, str] = {}


def _by_sharding(cache: dict[Any, Any], x: Any, compute: Any) -> Any:
    """``compute(x)``, looked up in ``cache`` by ``x``'s sharding (a few entries per process:
    one per device or device set the caller's arrays live on; none for an unhashable one)."""
    sharding = x.sharding
    try:
        found = cache.get(sharding)
    except TypeError:  # an unhashable sharding: no cache
        return compute(x)
    if found is None:
        found = compute(x)
        if len(cache) >= 256:
            cache.clear()
        cache[sharding] = found
    return found


def _placement(x: Any) -> tuple[str, bool]:
    """(device string, on a single GPU) of a concrete array, looked up by its sharding."""
    return _by_sharding(_PLACEMENTS, x, _find_placement)


def _find_placement(x: Any) -> tuple[str, bool]:
    devices = _devices(x)
    return (",".join(_device_name(d) for d in devices),
            len(devices) == 1 and devices[0].platform in ("gpu", "cuda"))


def _device_name(d: Any) -> str:
    """A torch-style device string: "cpu", "cuda:0", ... (other platforms: "<platform>:<id>")."""
    if d.platform == "cpu":
        return "cpu"
    index = getattr(d, "local_hardware_id", None)
    if index is None:
        index = d.id
    platform = "cuda" if d.platform in ("gpu", "cuda") else d.platform
    return f"{platform}:{index}"


def describe(x: Any) -> ArrayInfo:
    """Library-neutral description of a JAX array; ``writable`` is always False.

    A tracer has no device yet: its device is "traced" and ``on_gpu`` is False (the traced path
    picks CPU or GPU code when the program is lowered). An array sharded over several devices
    reports them joined by "," and ``on_gpu`` False (it takes the reference path).
    """
    shape = tuple(map(int, x.shape))
    dtype = _DTYPE_NAMES.get(x.dtype)
    if dtype is None:
        dtype = _DTYPE_NAMES[x.dtype] = np.dtype(x.dtype).name
    if is_traced(x):
        return ArrayInfo("jax", shape, dtype, "traced", writable=False, on_gpu=False)
    device, on_gpu = _placement(x)
    return ArrayInfo("jax", shape, dtype, device, writable=False, on_gpu=on_gpu)


def _require_concrete(x: Any, what: str) -> None:
    if is_traced(x):
        raise TypeError(
            f"qrita: {what} got a traced JAX array (inside jax.jit or another transformation); "
            "traced arrays take qrita.backends._jax.traced_masks / traced_top_k"
        )


def to_torch(x: Any) -> Any:
    """A zero-copy torch view of a single-device JAX array (same device, same dtype, bf16 too).

    The view is writable but must never be written: it is the JAX array's own buffer. The
    ``__dlpack__`` exchange makes torch's current stream wait until the buffer is ready.
    """
    _require_concrete(x, "to_torch")
    t = _direct_export(x)
    if t is not None:
        return t
    import torch

    return torch.from_dlpack(x)


#: sharding -> the CUDA / ROCm device index of a single-GPU array, or -1 (anything else), for
#: :func:`_direct_export`
_EXPORT_DEVICES: dict[Any, int] = {}


def _export_device(x: Any) -> int:
    """The GPU index of a single-GPU array (-1 for any other), looked up by its sharding."""
    return _by_sharding(_EXPORT_DEVICES, x, _find_export_device)


def _find_export_device(x: Any) -> int:
    devices = _devices(x)
    if len(devices) != 1 or devices[0].platform not in ("gpu", "cuda", "rocm"):
        return -1
    index = getattr(devices[0], "local_hardware_id", None)
    return int(devices[0].id if index is None else index)


def _direct_export(x: Any) -> Any:
    """``torch.from_dlpack(x)`` for a single-GPU array without the per-call Python of both
    libraries' DLPack exchange, or None (the caller then takes the public path).

    The steps are the exchange's own: jaxlib's ``buffer_to_dlpack_managed_tensor`` with torch's
    current stream on the array's device (jaxlib makes that stream wait until the buffer is
    ready; the CUDA legacy default stream is passed as 1, as DLPack asks) and torch's import of
    the capsule. This uses JAX internals (``jax._src``); any error gives None.
    """
    try:
        internals = _jax_internals()
        getters = _torch_cuda_getters()
        if internals is None or getters is None:
            return None
        index = _export_device(x)
        if index < 0:
            return None
        get_device, get_stream, from_capsule, _, is_cuda = getters
        if int(get_device()) != index:
            return None  # the public path raises the proper error (torch exports per device)
        stream = int(get_stream(index))
        if stream == 0 and is_cuda:
            stream = 1
        return from_capsule(internals[2].buffer_to_dlpack_managed_tensor(x, stream=stream))
    except Exception:  # noqa: BLE001 - any surprise: the public path
        return None


@functools.cache
def _torch_cuda_getters() -> tuple[Any, Any, Any, Any, bool] | None:
    """torch's C functions the direct exchanges use: the current device, the current raw
    stream of a device, the capsule import and export; and whether this is a CUDA (not ROCm)
    build. None where this torch lacks one (the public paths then answer)."""
    import torch

    names = ("_cuda_getDevice", "_cuda_getCurrentRawStream", "_from_dlpack", "_to_dlpack")
    found = [getattr(torch._C, n, None) for n in names]
    if any(f is None for f in found):
        return None
    return (*found, torch.version.hip is None)


def index_dtype() -> np.dtype:
    """The dtype of JAX integer results: int64 with ``jax_enable_x64``, else int32."""
    import jax

    return np.dtype(jax.dtypes.canonicalize_dtype(np.int64))


#: (DLPack device type, device id) -> (JAX device, JAX's stream for external ready events),
#: for :func:`_direct_import`
_IMPORT_TARGETS: dict[tuple[int, int], tuple[Any, Any]] = {}


def _direct_import(t: Any) -> Any:
    """``jax.dlpack.from_dlpack(t)`` without its per-call checks and lookups, or None.

    The public function looks up the backend, the device and the device's stream for external
    ready events on every call, and re-wraps the result with ``jnp.asarray``. Here the device and
    stream are looked up once per device and the same two exchange steps follow:
    ``t.__dlpack__(stream=...)`` (the producer makes that stream wait for its pending work) and
    jaxlib's ``dlpack_managed_tensor_to_buffer``. This uses JAX internals (``jax._src``): on any
    other jaxlib, a dtype JAX would canonicalise, or any error, it returns None and the caller
    takes the public path (measured on a CPU: 297 -> 34 µs per call, jax 0.10.2).
    """
    try:
        internals = _jax_internals()
        if internals is None:
            return None
        jdl, dtypes, _jax = internals
        dl_type, dev_id = t.__dlpack_device__()
        key = (int(dl_type), int(dev_id))
        target = _IMPORT_TARGETS.get(key)
        if target is None:
            if key[0] not in (int(jdl.DLDeviceType.kDLCPU), int(jdl.DLDeviceType.kDLCUDA),
                              int(jdl.DLDeviceType.kDLROCM)):
                return None
            backend = jdl.xla_bridge.get_backend(jdl._DL_DEVICE_TO_PLATFORM[dl_type])
            device = backend.device_from_local_hardware_id(dev_id)
            try:
                stream = device.get_stream_for_external_ready_events()
            except _jax.JaxRuntimeError as err:
                if "UNIMPLEMENTED" not in str(err):
                    return None
                stream = None
            target = _IMPORT_TARGETS[key] = (device, stream)
        device, stream = target
        capsule = _ordered_capsule(t, key, stream)
        if capsule is None:
            capsule = t.__dlpack__(stream=stream)
        arr = _jax.dlpack_managed_tensor_to_buffer(capsule, device, stream, None, key[0])
        if arr.dtype not in _CANONICAL and arr.dtype != dtypes.canonicalize_dtype(arr.dtype):
            return None
        return arr
    except Exception:  # noqa: BLE001 - any surprise: the public path (which raises properly)
        return None


#: (device index, raw stream handle) -> torch's Stream object of that handle; device index ->
#: (an Event to record, JAX's stream for external ready events as a torch ExternalStream)
_TORCH_STREAMS: dict[tuple[int, int], Any] = {}
_ORDER_EVENTS: dict[int, tuple[Any, Any]] = {}


def _ordered_capsule(t: Any, key: tuple[int, int], stream: Any) -> Any:
    """``t.__dlpack__(stream=stream)`` for a CUDA / ROCm tensor, without its per-call Python: an
    event recorded on torch's current stream, JAX's stream made to wait for it (nothing when
    they are the same stream), then torch's capsule export. The event and the streams' torch
    objects are made once per device. None where this cannot apply (CPU tensors, no stream,
    another device than the current one): the caller takes ``t.__dlpack__``."""
    import torch

    getters = _torch_cuda_getters()
    if getters is None or stream is None or key[0] == 1:  # 1: kDLCPU
        return None
    get_device, get_stream, _, to_capsule, _ = getters
    index = key[1]
    if int(get_device()) != index:
        return None
    current = int(get_stream(index))
    if current != int(stream):
        order = _ORDER_EVENTS.get(index)
        if order is None:
            device = torch.device("cuda", index)
            order = _ORDER_EVENTS[index] = (
                torch.cuda.Event(), torch.cuda.ExternalStream(int(stream), device=device))
        event, jax_stream = order
        torch_stream = _TORCH_STREAMS.get((index, current))
        if torch_stream is None:
            torch_stream = torch.cuda.current_stream(index)
            if len(_TORCH_STREAMS) >= 64:
                _TORCH_STREAMS.clear()
            _TORCH_STREAMS[(index, current)] = torch_stream
        event.record(torch_stream)
        jax_stream.wait_event(event)
    return to_capsule(t)


#: dtypes JAX never canonicalises (64-bit ones depend on ``jax_enable_x64``)
_CANONICAL = frozenset(np.dtype(n) for n in ("float32", "float16", "int32", "bool"))


@functools.cache
def _jax_internals() -> tuple[Any, Any, Any] | None:
    """The ``jax._src`` modules :func:`_direct_import` uses, or None where they differ."""
    try:
        from jax._src import dlpack as jdl
        from jax._src import dtypes
        from jax._src import lib as jax_lib
        from jax._src.lib import _jax
    except ImportError:
        return None
    # jaxlib >= 467 takes (capsule, device, stream, copy, DLPack device type). jax's dlpack
    # module imported the version up to 0.10 only (jax 0.11 dropped that import, which made
    # the direct path fall back on the H200's jax: BENCHMARKS.md, seventeenth session), so it
    # is read from jax._src.lib; a jaxlib that calls differently raises, and the caller falls
    # back to the public path.
    version = getattr(jax_lib, "jaxlib_extension_version", None)
    if version is None:
        version = getattr(jdl, "jaxlib_extension_version", 0)
    if version < 467 or not hasattr(_jax, "dlpack_managed_tensor_to_buffer"):
        return None
    for name in ("xla_bridge", "_DL_DEVICE_TO_PLATFORM", "DLDeviceType"):
        if not hasattr(jdl, name):
            return None
    return jdl, dtypes, _jax


def _from_dlpack(t: Any) -> Any:
    import jax

    arr = _direct_import(t)
    if arr is not None:
        return arr
    from_dlpack = getattr(getattr(jax, "dlpack", None), "from_dlpack", None)
    if from_dlpack is None:  # pragma: no cover - older/newer layouts
        import jax.numpy as jnp

        from_dlpack = jnp.from_dlpack
    return from_dlpack(t)


def from_torch(t: Any, like: Any) -> Any:
    """A ``jax.Array`` sharing ``t``'s memory (zero-copy, same device).

    Floating results keep their dtype (the kernels return ``like``'s dtype). Integer results (top-k
    indices, int64 in torch) are narrowed in torch to :func:`index_dtype` first when x64 is off,
    so the exchange itself stays zero-copy.
    """
    import torch

    t = t.detach()
    if not t.dtype.is_floating_point and t.dtype != torch.bool:
        want = getattr(torch, index_dtype().name)
        if t.dtype != want:
            t = t.to(want)
    if not t.is_contiguous():  # JAX cannot import non-compact strides
        t = t.contiguous()
    return _from_dlpack(t)


def to_numpy(x: Any) -> np.ndarray:
    """A host NumPy array of ``x`` (a read-only view on CPU); bfloat16 widened to float32."""
    _require_concrete(x, "to_numpy")
    a = np.asarray(x)
    if a.dtype.name == "bfloat16":
        a = a.astype(np.float32)
    return a


def from_numpy(a: np.ndarray, like: Any) -> Any:
    """A ``jax.Array`` on ``like``'s device (its sharding, for a result of ``like``'s shape).

    Floating arrays take ``like``'s dtype (bfloat16 included); integer arrays become
    :func:`index_dtype`.
    """
    import jax

    a = np.asarray(a)
    if a.dtype.kind == "f":
        if a.dtype != np.dtype(like.dtype):
            a = a.astype(like.dtype)
    elif a.dtype.kind in "iu":
        a = a.astype(index_dtype(), copy=False)
    if is_traced(like):
        return jax.numpy.asarray(a)
    if a.shape == tuple(like.shape):
        return jax.device_put(a, like.sharding)
    # A result of another shape (top_k): on like's device; a sharded like gives its first device.
    return jax.device_put(a, _devices(like)[0])


#: the scope of a call that needs no context (a reusable, shared ``nullcontext``)
_NO_SCOPE = contextlib.nullcontext()


def stream_scope(x: Any) -> contextlib.AbstractContextManager[Any]:
    """Context for running a kernel on ``x``'s torch view.

    For a single-device GPU array it makes that device torch's current device (an array on GPU 1
    runs on GPU 1). Streams need nothing more: the DLPack exchange orders them both ways
    (``to_torch`` makes torch's current stream wait for the JAX buffer, ``from_torch`` makes JAX's
    stream wait for torch's), so nothing blocks the host. Call ``to_torch``, the kernel and
    ``from_torch`` inside the scope. Elsewhere, and when the array's device is already torch's
    current one (the usual case), it is a shared ``nullcontext``: entering a context costs host
    time on every call.
    """
    if is_traced(x):
        return _NO_SCOPE
    index = _export_device(x)
    if index < 0:
        return _NO_SCOPE
    import torch

    # (torch's C getter where it has one: ``torch.cuda.current_device`` adds a Python layer)
    current = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
    if index == current():
        return _NO_SCOPE
    return torch.cuda.device(index)


def traced_masks(logits: Any, k: Any = None, p: Any = None, *, fill: float = float("-inf")) -> Any:
    """Top-k then top-p mask of a traced (or any) JAX array of shape (V,) or (B, V), out of place.

    ``k`` / ``p``: None, Python scalars, or arrays of shape (B,) (JAX arrays, tracers included, or
    NumPy). Returns a ``jax.Array`` (a tracer inside jit) of ``logits``' shape and dtype.
    """
    from qrita.backends import _jax_jit

    return _jax_jit.masks(logits, k, p, fill=fill)


def traced_top_k(
    x: Any, k: int, *, axis: int = -1, mode: str = "largest", sorted: bool = True
) -> tuple[Any, Any]:
    """``(values, indices)`` of the top ``k`` along ``axis`` of a traced (or any) JAX array."""
    from qrita.backends import _jax_jit

    return _jax_jit.top_k(x, k, axis=axis, mode=mode, sorted=sorted)


def traced_sampling(op: str, logits: Any, *, max_candidates: int | None = None,
                    logprob: bool = True, **params: Any) -> tuple[Any, ...]:
    """``sample`` / ``probs`` / ``candidates`` of a traced (or any) JAX array (V,) or (B, V):
    the outputs for (B, V) rows (:func:`qrita.backends._jax_jit.sampling`; ``logprob=False``:
    ``sample``'s log-probabilities are not computed)."""
    from qrita.backends import _jax_jit

    return _jax_jit.sampling(op, logits, max_candidates=max_candidates, logprob=logprob,
                             **params)


# --------------------------------------------------------------------------------------------
# eager calls through a cached jitted program (QRITA_JAX_EAGER_JIT, default on)

#: ``QRITA_JAX_EAGER_JIT`` (read at import; default on, ``0`` turns it off): an eager mask on a
#: GPU array whose shape, dtype and static arguments were seen before runs a jitted program
#: cached for them (:func:`eager_masks`; :func:`eager_top_k` unless
#: ``QRITA_JAX_TOP_K_COPY=0``) instead of the DLPack exchanges;
#: the first sighting takes the exchanges, so values seen once (a new k per call) never
#: compile. JAX's C++ dispatch then replaces the exchanges' Python, and the program is compiled
#: so that XLA records it into a command buffer (:data:`_COMMAND_BUFFER_OPTIONS`): a call runs
#: no Python of qrita's. H100, B = 1, V = 131072, µs per call back to back (BENCHMARKS.md
#: fifty-second session): topk50 mask 40.8 against 173.6 by the exchanges (torch: 71.7), and
#: 49.0 against 139.5 over a pool of 64 inputs (s52c).
EAGER_JIT = os.environ.get("QRITA_JAX_EAGER_JIT", "1") != "0"

#: XLA records a program into a CUDA graph only from this many operations on (its default, 5 in
#: the XLA we ran, left the one-callback program unrecorded: 136.1 µs per jitted mask call
#: against 34.6 at 1, fifty-second session)
_COMMAND_BUFFER_OPTIONS = {"xla_gpu_graph_min_graph_size": 1}

_SEEN: dict[tuple, bool] = {}  # the keys of eager calls seen once (bounded: cleared when full)
_SEEN_MAX = 4096


def eager_by_jit() -> bool:
    """Whether eager GPU calls may take :func:`eager_masks` / :func:`eager_top_k` /
    :func:`eager_sampling`."""
    return EAGER_JIT


def _seen_before(key: tuple) -> bool:
    """Whether ``key`` was seen before (and note it)."""
    if key in _SEEN:
        return True
    if len(_SEEN) >= _SEEN_MAX:
        _SEEN.clear()
    _SEEN[key] = True
    return False


def _jit(fn: Any) -> Any:
    """``jax.jit(fn)``, compiled for command buffers where this JAX takes compiler options
    (``QRITA_JAX_COMMAND_BUFFER``, see :func:`qrita.backends._jax_jit.command_buffers`)."""
    import jax

    from qrita.backends import _jax_jit

    if _jax_jit.command_buffers():
        try:
            return jax.jit(fn, compiler_options=dict(_COMMAND_BUFFER_OPTIONS))
        except TypeError:  # a JAX without per-program compiler options
            pass
    return jax.jit(fn)


def _is_row_array(v: Any) -> bool:
    return v is not None and not isinstance(v, (int, float))


@functools.lru_cache(maxsize=256)
def _jitted_masks(k_static: Any, k_array: bool, p_static: Any, p_array: bool,
                  fill_hex: str) -> Any:
    from qrita.backends import _jax_jit

    fill = float.fromhex(fill_hex)

    def run(x: Any, *arrays: Any) -> Any:
        rest = list(arrays)
        k = rest.pop(0) if k_array else k_static
        p = rest.pop(0) if p_array else p_static
        return _jax_jit.masks(x, k, p, fill=fill)

    return _jit(run)


def eager_masks(logits: Any, k: Any = None, p: Any = None, *,
                fill: float = float("-inf")) -> Any:
    """:func:`traced_masks` of an eager JAX array through a jitted program cached per static
    arguments (``k`` / ``p``: None, Python scalars, or (B,) JAX arrays, which are operands), or
    None the first time a (shape, dtype, statics) key is seen (the caller then takes the
    exchanges). Returns a new ``jax.Array`` of ``logits``' shape, dtype and device."""
    k_array, p_array = _is_row_array(k), _is_row_array(p)
    statics = (None if k_array else k, k_array, None if p_array else p, p_array,
               float(fill).hex())
    if not _seen_before(("masks", logits.shape, logits.dtype, *statics)):
        return None
    return _jitted_masks(*statics)(
        logits, *[v for v, is_array in ((k, k_array), (p, p_array)) if is_array])


@functools.lru_cache(maxsize=256)
def _jitted_top_k(k: int, axis: int, mode: str, sorted: bool) -> Any:
    from qrita.backends import _jax_jit

    return _jit(lambda x: tuple(_jax_jit.top_k(x, k, axis=axis, mode=mode, sorted=sorted)))


def eager_top_k(x: Any, k: int, *, axis: int = -1, mode: str = "largest",
                sorted: bool = True) -> tuple[Any, Any] | None:
    """:func:`traced_top_k` of an eager JAX array through a jitted program cached per
    (k, axis, mode, sorted): ``(values, indices)``, indices of :func:`index_dtype`; or None the
    first time a (shape, dtype, k, axis, mode, sorted) key is seen, and always with
    ``QRITA_JAX_TOP_K_COPY=0`` (:func:`qrita.backends._jax_jit.top_k_copies_input`)."""
    from qrita.backends import _jax_jit

    if not _jax_jit.top_k_copies_input():
        # a recorded top_k reads its input where it is: a new array every call would be a new
        # recording (481.4 µs per eager call over 64 inputs against 210.3 by the exchanges,
        # H100, B = 1; BENCHMARKS.md fifty-second session)
        return None
    statics = (int(k), int(axis), str(mode), bool(sorted))
    if not _seen_before(("top_k", x.shape, x.dtype, *statics)):
        return None
    return _jitted_top_k(*statics)(x)


#: seed / offset values that an eager sampling call by jit passes as int32 operands (a new value
#: is not a new program; the callback reads them as the same uint64 bit patterns)
_COUNTER_OPERAND_MAX = 2**31


_COUNTER_ARRAYS: dict[tuple[int, Any], Any] = {}  # (value, device): a 0-d int32 device array
_COUNTER_ARRAYS_MAX = 1024


def _counter_operand(value: int, like: Any) -> Any | None:
    """A seed / offset below 2**31 as a 0-d int32 array on ``like``'s device, kept per value,
    or None the first time a value is seen (the call then takes the exchanges, which pass it
    as a kernel argument). A host-to-device transfer per call costs more than the exchanges:
    a NumPy scalar argument made eager seeded ``sample`` by jit as slow as the exchanges (s53c,
    166 µs at B = 1), and a new seed every call through ``jax.device_put`` took 1323 µs
    against 249 by the exchanges (s53d); a jitted ``sample`` with seeds put on the device per
    call 315 µs against 45 from a pool of device arrays (``jax_seed_probe.py``)."""
    device = next(iter(like.devices()))
    key = (value, device)
    array = _COUNTER_ARRAYS.get(key)
    if array is None:
        if not _seen_before(("counter", *key)):
            return None
        import jax

        if len(_COUNTER_ARRAYS) >= _COUNTER_ARRAYS_MAX:
            _COUNTER_ARRAYS.clear()
        array = _COUNTER_ARRAYS[key] = jax.device_put(np.int32(value), device)
    return array


@functools.lru_cache(maxsize=256)
def _jitted_sampling(op: str, statics: tuple, array_names: tuple, max_candidates: Any,
                     logprob: bool, advance: bool = False) -> Any:
    """The jitted program of :func:`eager_sampling`. ``advance`` (unseeded ``sample``): the
    last output is the offset operand plus 1, the next call's offset (:func:`_fresh_draw`)."""
    from qrita.backends import _jax_jit

    def run(x: Any, *arrays: Any) -> tuple[Any, ...]:
        params = dict(statics)
        params.update(zip(array_names, arrays, strict=True))
        outs = tuple(_jax_jit.sampling(op, x, max_candidates=max_candidates, logprob=logprob,
                                       **params))
        return outs + (params["offset"] + 1,) if advance else outs

    return _jit(run)


def _sampling_operands(params: dict[str, Any], logits: Any) -> tuple[tuple, tuple, list]:
    """An eager sampling call's parameters split, in name order, into (statics: (name, value)
    pairs, part of the program's key; the names of the operands; the operands): per-row arrays,
    and seeds / offsets given as ints below 2**31 (:func:`_counter_operand`: None for a value's
    first call); the rest is static."""
    statics, names, arrays = [], [], []
    for name, v in sorted(params.items()):
        if _is_row_array(v):
            names.append(name)
            arrays.append(v)
        elif name in ("seed", "offset") and isinstance(v, int) and 0 <= v < _COUNTER_OPERAND_MAX:
            names.append(name)
            arrays.append(_counter_operand(v, logits))  # None: a value's first call
        else:
            statics.append((name, v))
    return tuple(statics), tuple(names), arrays


class _FreshDraws:
    """The device state of unseeded eager ``sample`` calls by jit, per (device, batch): one
    random int32 seed per row, distinct within the batch and drawn once from NumPy's entropy
    source, and an int32 offset that every call advances by one on the device (the program's
    extra output). A row's Philox stream at a call is (its seed, that call's offset): no two
    calls and no two rows of one call share a stream (until 2**32 calls), the same freshness
    as the exchanges' fresh host seed per row and call, with no host-to-device transfer per
    call (the transfer cost more than the exchanges, s53d). A lock makes concurrent calls take
    distinct offsets."""

    def __init__(self) -> None:
        self._state: dict[tuple[Any, int], list[Any]] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._state.clear()

    def call(self, device: Any, batch: int, run: Any) -> tuple[Any, ...]:
        """``run(seeds, offset)`` with this (device, batch)'s state; its last output becomes the
        next offset. Returns its other outputs."""
        import jax

        key = (device, batch)
        with self._lock:
            state = self._state.get(key)
            if state is None:
                seeds = np.random.default_rng().choice(2**32, size=batch, replace=False)
                state = self._state[key] = [
                    jax.device_put((seeds - 2**31).astype(np.int32), device),
                    jax.device_put(np.int32(0), device)]
            *outs, state[1] = run(state[0], state[1])
        return tuple(outs)


_FRESH = _FreshDraws()


def _fresh_draw(op: str, logits: Any, max_candidates: Any, logprob: bool,
                params: dict[str, Any]) -> tuple[Any, ...] | None:
    """:func:`eager_sampling` of ``sample`` without a seed (:class:`_FreshDraws`), or None: a
    key's first call, an offset other than 0 / None (those take the exchanges), and always
    unless ``QRITA_JAX_EAGER_UNSEEDED=1`` (opt-in until it has run on a GPU)."""
    if os.environ.get("QRITA_JAX_EAGER_UNSEEDED", "0") != "1":
        return None
    if params.get("offset") not in (None, 0):
        return None
    rest = {name: v for name, v in params.items() if name not in ("seed", "offset")}
    statics, names, arrays = _sampling_operands(rest, logits)
    key = (op, statics, (*names, "seed", "offset"), max_candidates, bool(logprob), True)
    if not _seen_before(("sampling", logits.shape, logits.dtype, *key)):
        return None
    program = _jitted_sampling(*key)
    batch = 1 if logits.ndim == 1 else logits.shape[0]
    device = next(iter(logits.devices()))
    return _FRESH.call(device, batch,
                       lambda seeds, offset: program(logits, *arrays, seeds, offset))


def eager_sampling(op: str, logits: Any, *, max_candidates: int | None = None,
                   logprob: bool = True, **params: Any) -> tuple[Any, ...] | None:
    """:func:`traced_sampling` of an eager JAX GPU array through a jitted program cached per
    (op, static parameters, which parameters are arrays, max_candidates, logprob), or None: the
    first time a key (with the shape and dtype) is seen. Per-row arrays are operands, and so
    are seeds and offsets given as Python ints below 2**31 (int32 device scalars kept per value:
    a value's first call takes the exchanges, so a new seed every call does too; larger ones
    are static). ``sample`` without a seed (and offset 0) draws from seeds and an offset kept
    on the device (:class:`_FreshDraws`; opt-in, ``QRITA_JAX_EAGER_UNSEEDED=1``). The program
    is recorded into a command buffer where :func:`qrita.backends._jax_jit.sampling_records`
    allows. Outputs as :func:`traced_sampling`'s."""
    if op == "sample" and params.get("seed") is None:
        return _fresh_draw(op, logits, max_candidates, logprob, params)
    statics, names, arrays = _sampling_operands(params, logits)
    key = (op, statics, names, max_candidates, bool(logprob))
    if not _seen_before(("sampling", logits.shape, logits.dtype, *key)) \
            or any(a is None for a in arrays):
        return None
    return _jitted_sampling(*key)(logits, *arrays)
