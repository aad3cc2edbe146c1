"""The public functions on traced JAX arrays (inside ``jax.jit``, ``vmap``, ...).

A tracer has no data and no device when qrita sees it, so the work is staged into the program and
the platform is chosen when the program is lowered (:func:`jax.lax.platform_dependent`):

* **cuda**: :func:`jax.experimental.buffer_callback.buffer_callback`. At run time XLA hands the
  callback its device buffers and its CUDA stream; they cross to torch through DLPack (zero-copy)
  and the Triton kernel is launched on XLA's own stream, in place on the output buffer (which XLA
  aliases to the input, copying only if the input is still live). No data goes to the host and
  nothing synchronises, but it is still a *host callback*: Python runs at each execution, XLA
  cannot fuse across it, and CUDA graphs (command buffers) are not used for it.
* **cpu** and every other platform (and cuda when ``buffer_callback``, torch or the kernel for
  the op / dtype is missing, e.g. float64):
  :func:`jax.pure_callback` to the NumPy CPU implementation (:mod:`qrita.backends._numpy`); on a
  GPU this copies the operands to the host and back.

An in-graph kernel (``jax_triton.triton_call``) would remove the callback; see docs/backends.md.
"""

from __future__ import annotations

import contextlib
import functools
import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["masks", "top_k", "sampling", "command_buffers", "mask_scratch_words",
           "top_k_scratch_words", "top_k_copies_input", "TOP_K_COPY_MAX_BYTES",
           "sampling_records", "SAMPLING_COPY_MAX_BYTES"]


# --------------------------------------------------------------------------------------------
# operands


def _row_operand(value: Any, batch: int, kind: str) -> tuple[Any, Any]:
    """Split a k / p argument into (static Python value, None) or (None, (B,) JAX array)."""
    import jax.numpy as jnp

    from qrita.backends._jax import index_dtype

    if value is None or isinstance(value, (numbers.Number, np.generic)):
        if isinstance(value, np.generic):
            value = value.item()
        return value, None
    arr = jnp.asarray(value)
    if kind == "k":
        arr = arr.astype(index_dtype())
    elif not jnp.issubdtype(arr.dtype, jnp.floating):
        arr = arr.astype(jnp.float32)
    return None, jnp.broadcast_to(arr.reshape(-1), (batch,))


def _host_dtype_in(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype.name == "bfloat16" else a


def _torch_view(buf: Any) -> Any:
    """A torch tensor on a buffer_callback Buffer (or any DLPack producer), zero-copy.

    The Buffer's capsule goes to torch's C import directly (``torch.from_dlpack`` would ask the
    producer for its device and stream first: host time at every execution)."""
    import torch

    from_capsule = getattr(torch._C, "_from_dlpack", None)
    if from_capsule is None:  # pragma: no cover - a torch without the C import
        return torch.from_dlpack(buf.__dlpack__())
    return from_capsule(buf.__dlpack__())


#: (device index, XLA's stream handle) -> torch's Stream object on it, made once (XLA runs a
#: device's work on the same stream at every execution)
_XLA_STREAMS: dict[tuple[int, int], Any] = {}


def _xla_stream(index: int, ptr: int) -> Any:
    """torch's Stream object for XLA's stream handle ``ptr`` on device ``index`` (cached)."""
    import torch

    stream = _XLA_STREAMS.get((index, ptr))
    if stream is None:
        device = torch.device("cuda", index)
        stream = (torch.cuda.default_stream(device) if ptr == 0
                  else torch.cuda.ExternalStream(ptr, device=device))
        if len(_XLA_STREAMS) >= 64:
            _XLA_STREAMS.clear()
        _XLA_STREAMS[(index, ptr)] = stream
    return stream


class _RawStreamScope:
    """torch's current device and stream set to XLA's by torch's C setters, and restored.

    ``torch.cuda.device`` and ``torch.cuda.stream`` do the same through Python layers: 11.8 µs
    of host time per enter and exit against 3.9 for these setters, on one H100 host
    (BENCHMARKS.md fiftieth session, ``jax_jit_probe.py``).
    """

    __slots__ = ("index", "stream", "prev_device", "prev_stream")

    def __init__(self, index: int, stream: tuple[int, int, int]) -> None:
        self.index, self.stream = index, stream

    def __enter__(self) -> None:
        import torch

        c = torch._C
        self.prev_device = int(c._cuda_getDevice())
        if self.prev_device != self.index:
            c._cuda_setDevice(self.index)
        self.prev_stream = c._cuda_getCurrentStream(self.index)
        stream_id, device_index, device_type = self.stream
        c._cuda_setStream(stream_id=stream_id, device_index=device_index,
                          device_type=device_type)

    def __exit__(self, *exc: object) -> bool:
        import torch

        c = torch._C
        stream_id, device_index, device_type = self.prev_stream[:3]
        c._cuda_setStream(stream_id=stream_id, device_index=device_index,
                          device_type=device_type)
        if self.prev_device != self.index:
            c._cuda_setDevice(self.prev_device)
        return False


_RAW_SETTERS = ("_cuda_getDevice", "_cuda_setDevice", "_cuda_getCurrentStream",
                "_cuda_setStream")


def _on_xla_stream(ctx: Any, device: Any) -> contextlib.AbstractContextManager[Any]:
    """Make XLA's stream for this execution torch's current stream on ``device`` (and that
    device torch's current one) inside the returned context; restored after it."""
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    stream = _xla_stream(index, int(ctx.stream))
    if all(hasattr(torch._C, name) for name in _RAW_SETTERS):
        return _RawStreamScope(index, (stream.stream_id, stream.device_index,
                                       stream.device_type))
    return _public_stream_scope(index, stream)


@contextlib.contextmanager
def _public_stream_scope(index: int, stream: Any) -> Iterator[None]:
    """:func:`_on_xla_stream` through torch's public contexts (a torch without the setters)."""
    import torch

    with torch.cuda.device(index), torch.cuda.stream(stream):
        yield


def _gpu_branches(op: str, dtype: Any, gpu: Any) -> dict[str, Any]:
    """``{"cuda": gpu}`` when the device path can run ``op`` on ``dtype``, else ``{}`` (host).

    Needs JAX's ``buffer_callback``, torch and the Triton kernels (``ops.<op>``), and a dtype the
    kernels take (float64 always goes to the reference, as in the eager API).
    """
    import jax

    try:
        if not jax.devices("cuda"):
            return {}
    except RuntimeError:  # no CUDA backend in this process: nothing to lower for
        return {}
    try:
        from jax.experimental import buffer_callback  # noqa: F401

        from qrita.backends.triton import ops
    except ImportError:
        return {}
    supported = getattr(ops, "SUPPORTED_DTYPES", None)
    if not hasattr(ops, op) or supported is None:
        return {}
    if np.dtype(dtype).name not in {str(d).removeprefix("torch.") for d in supported}:
        return {}
    return {"cuda": gpu}


# --------------------------------------------------------------------------------------------
# device-side work (overridable in tests)


def _device_masks(t: Any, k: Any, p: Any, fill: float) -> None:
    """Mask the (B, V) CUDA tensor ``t`` in place (it already holds the logits)."""
    from qrita.backends.triton import ops

    ops.top_k_top_p_mask(t, k, p, inplace=True, fill=fill)


def _device_top_k(t: Any, k: int, mode: str, sorted: bool) -> tuple[Any, Any]:
    """(values, int64 indices) of the top ``k`` of each row of the (B, n) CUDA tensor ``t``."""
    from qrita.backends.triton import ops

    return ops.top_k(t, k, mode=mode, sorted=sorted)


# --------------------------------------------------------------------------------------------
# masks


def _host_masks(x, *arrays, k_static, p_static, has_k, has_p, fill):
    from qrita.backends import _numpy

    arrays = list(arrays)
    k = np.asarray(arrays.pop(0)).astype(np.int64) if has_k else k_static
    p = np.asarray(arrays.pop(0)).astype(np.float64) if has_p else p_static
    out = _numpy.masks(_host_dtype_in(x), k, p, fill=fill)
    return np.asarray(out).astype(np.asarray(x).dtype, copy=False)


def _gpu_masks_callback(ctx, out, x, *arrays, k_static, p_static, has_k, has_p, fill,
                        scratch=False):
    """The Triton masks on XLA's buffers and stream. ``scratch`` (command buffers, see
    :func:`command_buffers`): ``out`` is (the mask, a flat int32 scratch buffer), and every
    piece of the call's scratch comes from that XLA buffer (:mod:`..triton.arena`)."""
    scratch_buffer = None
    if scratch:
        out, scratch_buffer = out
    t = _torch_view(out)  # normally aliased to x (it already holds the logits)
    with _on_xla_stream(ctx, t.device), _scratch_scope(scratch_buffer):
        tx = _torch_view(x)
        if tx.data_ptr() != t.data_ptr():  # not aliased (e.g. under vmap): copy on XLA's stream
            t.copy_(tx)
        arrays = list(arrays)
        k = _as_int64(_torch_view(arrays.pop(0))) if has_k else k_static
        p = _torch_view(arrays.pop(0)) if has_p else p_static
        _device_masks(t, k, p, fill)


def command_buffers() -> bool:
    """``QRITA_JAX_COMMAND_BUFFER`` (read when a program is traced; default on, ``0`` turns it
    off): the jitted masks' and top-k's callbacks are declared ``command_buffer_compatible``
    and take their scratch from an extra XLA output, so XLA may record their launches into a
    CUDA graph and replay them without Python (docs/backends.md). H100, masks (top-k 50, B = 1,
    V = 131072) at ``--xla_gpu_graph_min_graph_size=1``: 33.0 host µs per jitted call against
    83.3 without, and 30.5 for a jitted ``x + 1`` (BENCHMARKS.md fifty-second session)."""
    import os

    return os.environ.get("QRITA_JAX_COMMAND_BUFFER", "1") != "0"


def _recording(device: Any) -> bool:
    """Whether XLA now records the callback's launches (its stream, torch's current one inside
    :func:`_on_xla_stream`, is capturing a CUDA graph)."""
    import torch

    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


def _scratch_scope(buffer: Any) -> contextlib.AbstractContextManager[Any]:
    """The arena over XLA's scratch ``buffer`` (a buffer_callback Buffer) while XLA records
    the callback into a command buffer; otherwise (no buffer, or XLA runs the callback as it
    comes: e.g. below ``--xla_gpu_graph_min_graph_size``) nothing, and the call takes the
    eager path (its one-launch kernels and kept scratch)."""
    if buffer is None:
        return contextlib.nullcontext()
    view = _torch_view(buffer)
    if not _recording(view.device):
        return contextlib.nullcontext()
    from qrita.backends.triton import arena

    return arena.scratch_arena(view)


def _as_int64(t: Any) -> Any:
    """``t`` as int64: itself, or a cast into the scratch arena when one is active (else a new
    tensor)."""
    import torch

    if t.dtype == torch.int64:
        return t
    from qrita.backends.triton import arena

    piece = arena.take(2 * t.numel()) if arena.active() else None
    if piece is None:
        return t.to(torch.int64)
    return piece.view(torch.int64).view(t.shape).copy_(t)


def mask_scratch_words(batch: int, vocab: int, dtype: Any, k_static: Any, has_k: bool,
                       p_static: Any, has_p: bool) -> int:
    """Int32 words of the scratch output a command-buffer masks callback needs: the
    pipeline's (:func:`qrita.backends.triton.launch.mask_scratch_words`) and a per-row k cast
    to int64."""
    import torch

    from qrita.backends.triton import arena, launch

    rows = torch.empty(batch, device="meta")
    k = rows.long() if has_k else k_static
    p = rows if has_p else p_static
    torch_dtype = getattr(torch, np.dtype(dtype).name)
    words = launch.mask_scratch_words(batch, vocab, torch_dtype, k, p)
    return words + (2 * batch + arena.ALIGN_WORDS if has_k else 0)


def masks(logits: Any, k: Any = None, p: Any = None, *, fill: float = float("-inf")) -> Any:
    """Top-k then top-p mask of a JAX array (V,) or (B, V), staged into the traced program."""
    import jax
    import jax.numpy as jnp

    x = jnp.asarray(logits)
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    batch, vocab = x2.shape
    if batch == 0 or vocab == 0:
        return x
    k_static, k_arr = _row_operand(k, batch, "k")
    p_static, p_arr = _row_operand(p, batch, "p")
    operands = [a for a in (k_arr, p_arr) if a is not None]
    options = dict(
        k_static=k_static,
        p_static=p_static,
        has_k=k_arr is not None,
        has_p=p_arr is not None,
        fill=float(fill),
    )
    result = jax.ShapeDtypeStruct(x2.shape, x2.dtype)

    def host(x2, *ops):
        return jax.pure_callback(
            functools.partial(_host_masks, **options), result, x2, *ops, vmap_method="sequential"
        )

    def gpu(x2, *ops):
        from jax.experimental.buffer_callback import buffer_callback

        if command_buffers():
            words = mask_scratch_words(batch, vocab, x2.dtype, k_static, k_arr is not None,
                                       p_static, p_arr is not None)
            call = buffer_callback(
                functools.partial(_gpu_masks_callback, scratch=True, **options),
                (result, jax.ShapeDtypeStruct((max(words, 1),), jnp.int32)),
                vmap_method="sequential",
                input_output_aliases={0: 0},
                command_buffer_compatible=True,
            )
            return call(x2, *ops)[0]
        call = buffer_callback(
            functools.partial(_gpu_masks_callback, **options),
            result,
            vmap_method="sequential",
            input_output_aliases={0: 0},
        )
        return call(x2, *ops)

    branches = _gpu_branches("top_k_top_p_mask", x2.dtype, gpu)
    out = jax.lax.platform_dependent(x2, *operands, default=host, **branches)
    return out.reshape(x.shape)


# --------------------------------------------------------------------------------------------
# top_k


def _host_top_k(x, *, k, mode, sorted, index_dtype):
    from qrita.backends import _numpy

    values, indices = _numpy.top_k(_host_dtype_in(x), k, axis=-1, mode=mode, sorted=sorted)
    dtype = np.asarray(x).dtype
    return np.asarray(values).astype(dtype, copy=False), np.asarray(indices).astype(index_dtype)


def _gpu_top_k_callback(ctx, outs, x, *, k, mode, sorted, scratch=False):
    """The Triton top-k on XLA's buffers and stream. ``scratch`` (command buffers, see
    :func:`command_buffers`): ``outs`` ends with a flat int32 scratch buffer, from which the
    selection and every piece of the pipeline's scratch come, then an XLA-owned copy of ``x``
    (an output aliased to it), which the kernels read instead of ``x``."""
    scratch_buffer = None
    if scratch:
        if len(outs) == 4:  # QRITA_JAX_TOP_K_COPY: the kernels read XLA's copy of x
            *outs, scratch_buffer, x = outs
        else:
            *outs, scratch_buffer = outs
    out_values, out_indices = outs
    t = _torch_view(x)
    with _on_xla_stream(ctx, t.device), _scratch_scope(scratch_buffer):
        values, indices = _device_top_k(t, k, mode, sorted)
        ov, oi = _torch_view(out_values), _torch_view(out_indices)
        ov.copy_(values)
        oi.copy_(indices)  # int64 -> int32 when x64 is off


#: the largest input (bytes) a command-buffer ``top_k`` copies into a buffer of XLA's own
TOP_K_COPY_MAX_BYTES = 64 << 20


def top_k_copies_input() -> bool:
    """``QRITA_JAX_TOP_K_COPY`` (read when a program is traced; default on, ``0`` turns it off):
    a command-buffer ``top_k`` reads an XLA-owned copy of its input (see
    :func:`top_k_scratch_words`), and eager ``top_k`` calls on JAX GPU arrays may take cached
    jitted programs (``qrita.backends._jax.eager_top_k``). H100, B = 1, V = 131072, k50, µs per
    eager call back to back over a pool of 1 / 64 inputs: 53.6 / 59.4 by jit against 199.9 /
    249.8 by the exchanges; B = 8: 56.2 / 61.5 against 260.3 / 258.8 (BENCHMARKS.md
    fifty-third session, s52d)."""
    import os

    return os.environ.get("QRITA_JAX_TOP_K_COPY", "1") != "0"


def top_k_scratch_words(rows: int, n: int, dtype: Any, k: int, sorted: bool) -> int | None:
    """Int32 words of the scratch output a command-buffer top-k callback needs, or None where
    the call keeps the plain callback: where it cannot take all its scratch from that output (a
    sorted k above the in-register sort's ``SORT_MAX`` sorts with torch; ``QRITA_CHUNK_ROWS``
    chunks are joined by ``torch.cat``), and inputs over ``TOP_K_COPY_MAX_BYTES``.

    A recorded graph keeps the addresses it was recorded with, and XLA records again for
    other addresses (a few recordings are cached). An input that is a new array at every call
    (an eager call's, or a program's argument) then costs a recording per call: H100, ``top_k``
    k50 over a pool of 64 inputs, 466.5 µs per jitted call at B = 1 and 770.8 at B = 8,
    against 35.9 / 51.2 for the same input every call (BENCHMARKS.md fifty-second session).
    The masks work on a copy of XLA's own (their output, aliased to the logits) and did not
    record again. With :func:`top_k_copies_input` the callback reads such a copy too (an
    output aliased to the input; inputs up to ``TOP_K_COPY_MAX_BYTES``)."""
    import torch

    from qrita.backends.triton import launch
    from qrita.backends.triton.one_launch import SORT_MAX

    if (sorted and k > SORT_MAX) or launch.chunk_rows(rows) < rows:
        return None
    if top_k_copies_input() and rows * n * np.dtype(dtype).itemsize > TOP_K_COPY_MAX_BYTES:
        return None
    torch_dtype = getattr(torch, np.dtype(dtype).name)
    return launch.select_scratch_words(rows, n, torch_dtype, k)


def top_k(x: Any, k: int, *, axis: int = -1, mode: str = "largest", sorted: bool = True):
    """``(values, indices)`` of the top ``k`` along ``axis``, staged into the traced program."""
    import jax
    import jax.numpy as jnp

    from qrita.backends._jax import index_dtype

    x = jnp.asarray(x)
    xm = jnp.moveaxis(x, axis, -1)
    lead = xm.shape[:-1]
    n = xm.shape[-1]
    rows = int(np.prod(lead, dtype=np.int64))
    idx_dtype = index_dtype()
    k = int(k)
    if k == 0 or rows == 0:
        values = jnp.zeros(lead + (k,), x.dtype)
        indices = jnp.zeros(lead + (k,), idx_dtype)
    else:
        x2 = xm.reshape(rows, n)
        result = (
            jax.ShapeDtypeStruct((rows, k), x.dtype),
            jax.ShapeDtypeStruct((rows, k), idx_dtype),
        )

        def host(x2):
            return jax.pure_callback(
                functools.partial(
                    _host_top_k, k=k, mode=mode, sorted=sorted, index_dtype=idx_dtype
                ),
                result,
                x2,
                vmap_method="sequential",
            )

        def gpu(x2):
            from jax.experimental.buffer_callback import buffer_callback

            options = dict(k=k, mode=mode, sorted=sorted)
            words = top_k_scratch_words(rows, n, x2.dtype, k, sorted) if command_buffers() \
                else None
            if words is not None:
                outs = (*result, jax.ShapeDtypeStruct((max(words, 1),), jnp.int32))
                aliases = {}
                if top_k_copies_input():  # x in a buffer of XLA's: a stable address
                    outs, aliases = (*outs, jax.ShapeDtypeStruct(x2.shape, x2.dtype)), {0: 3}
                call = buffer_callback(
                    functools.partial(_gpu_top_k_callback, scratch=True, **options),
                    outs,
                    vmap_method="sequential",
                    input_output_aliases=aliases,
                    command_buffer_compatible=True,
                )
                return tuple(call(x2)[:2])
            call = buffer_callback(
                functools.partial(_gpu_top_k_callback, **options),
                result,
                vmap_method="sequential",
            )
            return call(x2)

        branches = _gpu_branches("top_k", x2.dtype, gpu)
        values, indices = jax.lax.platform_dependent(x2, default=host, **branches)
        values = values.reshape(lead + (k,))
        indices = indices.reshape(lead + (k,))
    return jnp.moveaxis(values, -1, axis), jnp.moveaxis(indices, -1, axis)


# --------------------------------------------------------------------------------------------
# sampling: sample, top_k_top_p_probs, candidates

_SAMPLING_PARAMS = ("k", "p", "min_p", "temperature", "seed", "offset")
_PARAM_KIND = {"k": "k", "p": "p", "min_p": "p", "temperature": "p", "seed": "counter",
               "offset": "counter"}


def _sampling_operand(value: Any, batch: int, kind: str) -> tuple[Any, Any]:
    """(static Python value, None) or (None, (B,) JAX array) of a sampling parameter."""
    import jax.numpy as jnp

    if kind != "counter":
        return _row_operand(value, batch, kind)
    if value is None or isinstance(value, (numbers.Number, np.generic)):
        return (value.item() if isinstance(value, np.generic) else value), None
    arr = jnp.asarray(value)  # any integer dtype; read as uint64 bit patterns, as in eager
    return None, jnp.broadcast_to(arr.reshape(-1), (batch,))


def _host_row(a: Any, dtype: Any) -> np.ndarray:
    a = np.asarray(a).reshape(-1)
    if dtype is np.uint64:
        return a.astype(np.int64 if a.dtype.kind == "i" else np.uint64).astype(np.uint64)
    return a.astype(dtype)


_HOST_DTYPE = {"k": np.int64, "p": np.float64, "min_p": np.float64, "temperature": np.float64,
               "seed": np.uint64, "offset": np.uint64}


def _host_params(arrays: tuple, names: tuple[str, ...], statics: dict[str, Any]) -> dict:
    params = dict(statics)
    for name, a in zip(names, arrays, strict=True):
        params[name] = _host_row(a, _HOST_DTYPE[name])
    return params


def _host_sampling(x, *arrays, op, names, statics, width, logprob, index_dtype, out_float):
    """The NumPy reference of ``op`` on one (B, V) block (``jax.pure_callback``)."""
    from qrita.reference import sampling as ref

    x = _host_dtype_in(x)
    prm = _host_params(arrays, names, statics)
    filters = dict(min_p=prm["min_p"], temperature=prm["temperature"])
    if op == "sample":
        seed = prm["seed"]
        if seed is None:  # a fresh seed per row at every execution, as in eager
            from qrita._sampling_api import _fresh_seeds

            seed = _fresh_seeds(x.shape[0])
        tokens, logp = ref.sample(x, prm["k"], prm["p"], seed=seed,
                                  offset=0 if prm["offset"] is None else prm["offset"],
                                  return_logprob=True, **filters)
        if not logprob:  # asked for tokens only: the log-probabilities are not returned
            logp = np.zeros(np.shape(tokens))
        return (np.asarray(tokens).astype(index_dtype),
                np.asarray(logp).astype(out_float))
    if op == "probs":
        return np.asarray(ref.probs(x, prm["k"], prm["p"], dtype=np.float32, **filters)).astype(
            out_float)
    res = ref.candidates(x, prm["k"], prm["p"], max_candidates=width, **filters)
    return (np.asarray(res.indices).astype(index_dtype), np.asarray(res.probs).astype(out_float),
            np.asarray(res.counts).astype(index_dtype))


#: the largest logits (bytes) a command-buffer sampler copies into a buffer of XLA's own (the
#: same bound as ``top_k``'s)
SAMPLING_COPY_MAX_BYTES = TOP_K_COPY_MAX_BYTES


class _SamplingPools:
    """The private torch memory pools (one per device) of one traced sampling call site.

    While XLA records the sampler's callback into a command buffer, every torch allocation of
    the call comes from this site's pool (``torch.cuda.use_mem_pool``): a recorded graph keeps
    the addresses it was recorded with, and the blocks of a private pool never go back to
    torch's general use, so no other tensor takes them between replays. Within the pool, blocks
    freed at the end of one recording serve the next recording of the same site (replays of
    one site run one after another on XLA's stream). The pool lives as long as the traced
    program that holds this object; its size is one call's scratch."""

    def __init__(self) -> None:
        self._pools: dict[int, Any] = {}

    def scope(self, device: Any) -> contextlib.AbstractContextManager[Any]:
        """Allocations of this thread into the pool of ``device`` while XLA records; else
        nothing (the call as it comes: torch's allocator as usual)."""
        if not _recording(device):
            return contextlib.nullcontext()
        import torch

        pool = self._pools.get(device.index)
        if pool is None:
            pool = self._pools[device.index] = torch.cuda.MemPool()
        return torch.cuda.use_mem_pool(pool, device)


def sampling_records(op: str, batch: int, vocab: int, dtype: Any, seeded: bool) -> bool:
    """Whether a jitted sampling call is declared ``command_buffer_compatible`` (with
    :func:`command_buffers`): its callback then reads XLA-owned copies of the logits and the
    per-row arrays (outputs aliased to them: their addresses repeat from call to call, as
    s52c / s52d measured for the masks and ``top_k``), and its torch allocations come from a
    private pool while XLA records (:class:`_SamplingPools`). Not for ``sample`` without a seed
    (a seed drawn on the host at recording would be replayed forever: those calls keep the
    plain callback, which draws a fresh seed per execution), nor for logits above
    ``SAMPLING_COPY_MAX_BYTES``."""
    if not command_buffers() or (op == "sample" and not seeded):
        return False
    return batch * vocab * np.dtype(dtype).itemsize <= SAMPLING_COPY_MAX_BYTES


def _gpu_sampling_callback(ctx, outs, x, *arrays, op, names, statics, width, logprob,
                           pools=None):
    """The Triton sampler on XLA's buffers and stream (``buffer_callback``). With ``pools``
    (:func:`sampling_records`): ``outs`` ends with XLA-owned copies of ``x`` and ``arrays``
    (outputs aliased to them), which the sampler reads instead, and its torch allocations come
    from ``pools`` while XLA records."""
    import torch

    from qrita.backends.triton import sampling_ops

    if pools is not None:  # the copies of x and arrays are the last 1 + len(arrays) outputs
        n_results = len(outs) - 1 - len(arrays)
        outs, x, arrays = outs[:n_results], outs[n_results], tuple(outs[n_results + 1:])
    t = _torch_view(x)
    scope = contextlib.nullcontext() if pools is None else pools.scope(t.device)
    with _on_xla_stream(ctx, t.device), scope:
        prm = dict(statics)
        for name, a in zip(names, arrays, strict=True):
            view = _torch_view(a).reshape(-1)
            prm[name] = view.to(torch.int64) if name in ("k", "seed", "offset") else view
        filters = dict(min_p=prm["min_p"], temperature=prm["temperature"])
        if op == "sample":
            results = sampling_ops.sample(t, prm["k"], prm["p"], seed=prm["seed"],
                                          offset=prm["offset"], return_logprob=logprob, **filters)
            if not logprob:  # tokens only (the token does not depend on it): zeros, unread
                results = (results, torch.zeros(results.shape, dtype=torch.float32,
                                                device=results.device))
        elif op == "probs":
            results = (sampling_ops.top_k_top_p_probs(t, prm["k"], prm["p"], **filters),)
        else:
            results = tuple(sampling_ops.candidates(t, prm["k"], prm["p"], max_candidates=width,
                                                    **filters))
        for out, res in zip(outs, results, strict=True):
            _torch_view(out).copy_(res.reshape(_torch_view(out).shape))


def sampling(op: str, logits: Any, *, max_candidates: int | None = None, logprob: bool = True,
             **params: Any):
    """``sample`` (tokens, logprobs), ``probs`` or ``candidates`` (indices, probs, counts) of a
    JAX array (V,) or (B, V), staged into the traced program; params: k, p, min_p, temperature,
    seed, offset (None, Python scalars or (B,) arrays). Shapes as in :mod:`qrita._sampling_api`
    (for (B, V); the caller reshapes (V,) results). ``logprob=False`` (``sample``): the
    log-probabilities are not computed (zeros; the tokens are the same)."""
    import jax
    import jax.numpy as jnp

    from qrita.backends._jax import index_dtype

    x = jnp.asarray(logits)
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    batch, vocab = x2.shape
    statics, names, operands = {}, [], []
    for name in _SAMPLING_PARAMS:
        static, arr = _sampling_operand(params.get(name), batch, _PARAM_KIND[name])
        if arr is None:
            statics[name] = static
        else:
            names.append(name)
            operands.append(arr)
    idx_dtype = index_dtype()
    out_float = jnp.float64 if x2.dtype == jnp.float64 else jnp.float32
    width = vocab if max_candidates is None else int(max_candidates)
    if op == "sample":
        result = (jax.ShapeDtypeStruct((batch,), idx_dtype),
                  jax.ShapeDtypeStruct((batch,), out_float))
    elif op == "probs":
        result = (jax.ShapeDtypeStruct((batch, vocab), out_float),)
    elif op == "candidates":
        result = (jax.ShapeDtypeStruct((batch, width), idx_dtype),
                  jax.ShapeDtypeStruct((batch, width), out_float),
                  jax.ShapeDtypeStruct((batch,), idx_dtype))
    else:
        raise ValueError(f"unknown sampling op {op!r}")
    options = dict(op=op, names=tuple(names), statics=statics, width=width,
                   logprob=bool(logprob))

    def host(x2, *ops):
        fn = functools.partial(_host_sampling, index_dtype=np.dtype(idx_dtype),
                               out_float=np.dtype(out_float), **options)
        if op == "probs":  # one output: the callback returns the array itself
            return (jax.pure_callback(fn, result[0], x2, *ops, vmap_method="sequential"),)
        return jax.pure_callback(fn, result, x2, *ops, vmap_method="sequential")

    seeded = "seed" in names or statics.get("seed") is not None
    records = sampling_records(op, batch, vocab, x2.dtype, seeded)

    def gpu(x2, *ops):
        from jax.experimental.buffer_callback import buffer_callback

        if records:  # the inputs' XLA-owned copies follow the results (stable addresses)
            inputs = (x2, *ops)
            copies = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in inputs)
            aliases = {i: len(result) + i for i in range(len(inputs))}
            call = buffer_callback(
                functools.partial(_gpu_sampling_callback, pools=_SamplingPools(), **options),
                (*result, *copies), vmap_method="sequential", input_output_aliases=aliases,
                command_buffer_compatible=True)
            return tuple(call(x2, *ops)[:len(result)])
        call = buffer_callback(functools.partial(_gpu_sampling_callback, **options), result,
                               vmap_method="sequential")
        return tuple(call(x2, *ops))

    branches = _gpu_branches("top_k_top_p_mask", x2.dtype, gpu)
    return tuple(jax.lax.platform_dependent(x2, *operands, default=host, **branches))
