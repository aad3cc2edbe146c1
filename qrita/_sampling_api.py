"""The public sampling functions (docs/sampling.md): validate, then dispatch.

GPU arrays (torch CUDA / ROCm, CuPy, eager JAX on one GPU) run
:mod:`qrita.backends.triton.sampling_ops` on a zero-copy torch view, with no host
synchronisation; everything else runs the NumPy reference. Traced JAX arrays (inside
``jax.jit``) are staged into the program (:func:`qrita.backends._jax_jit.sampling`: the Triton
sampler through ``buffer_callback`` on CUDA, the reference through ``pure_callback``
elsewhere). No array library is imported here.
"""

from __future__ import annotations

import numbers
from types import ModuleType
from typing import Any

import numpy as np

from qrita._api import _eager_by_jit, _load_triton, _scope
from qrita._validate import (
    FLOAT_DTYPES,
    INT_DTYPES,
    Checked,
    _check_row_array,
    _describe_value,
    _is_int_scalar,
    _is_real_scalar,
    check_mask_args,
)
from qrita.backends import ArrayInfo
from qrita.reference import sampling as _ref
from qrita.reference.sampling import Candidates

__all__ = ["Candidates", "sample", "top_k_top_p_probs", "candidates"]

_U64 = 2**64


def _load_gpu() -> ModuleType | None:
    """The GPU sampler (:mod:`qrita.backends.triton.sampling_ops`), or None (with a one-time
    warning) if Triton / torch cannot be imported."""
    return _load_triton("sampling_ops")


def _torch_rows(adapter: ModuleType, v: Any) -> Any:
    """A per-row parameter as a 1-D torch tensor on the logits' device; scalars pass through."""
    if v is None or isinstance(v, (int, float)):
        return v
    return adapter.to_torch(v).reshape(-1)


def _torch_logits(adapter: ModuleType, logits: Any) -> Any:
    t = adapter.to_torch(logits)
    return t.reshape(1, -1) if t.dim() == 1 else t


def _check_float_param(v: Any, name: str, info: ArrayInfo, *, temperature: bool) -> Any:
    """None, a Python float, or the caller's per-row floating array (validated, not read)."""
    if v is None:
        return None
    if _is_real_scalar(v):
        f = float(v)
        if temperature and not (np.isfinite(f) and f >= 0):
            raise ValueError(
                f"temperature must be a finite number >= 0 (0 means greedy), got {_describe_value(v)}"
            )
        return f
    wanted = f"a real number (int, float or {info.library} floating array)"
    if isinstance(v, (bool, np.bool_)) or isinstance(v, numbers.Number):
        raise TypeError(f"{name} must be {wanted}, got {_describe_value(v)}")
    _check_row_array(v, name, info, FLOAT_DTYPES, "a floating", wanted)
    return v


def _check_counter(v: Any, name: str, info: ArrayInfo) -> Any:
    """A seed / offset: a Python int in [0, 2^64) or the caller's per-row integer array."""
    if _is_int_scalar(v):
        if not 0 <= int(v) < _U64:
            raise ValueError(f"{name} must satisfy 0 <= {name} < 2**64, got {int(v)}")
        return int(v)
    wanted = f"an integer (int, numpy integer or {info.library} integer array)"
    if isinstance(v, (bool, np.bool_)) or isinstance(v, numbers.Number):
        raise TypeError(f"{name} must be {wanted}, got {_describe_value(v)}")
    _check_row_array(v, name, info, INT_DTYPES, "an integer", wanted)
    return v


def _check_bool(v: Any, name: str) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {_describe_value(v)}")
    return bool(v)


def _check_common(
    logits: Any, k: Any, p: Any, temperature: Any, min_p: Any, name: str
) -> tuple[Checked, Any, Any]:
    c = check_mask_args(logits, k, p, -np.inf, False)
    t = _check_float_param(temperature, "temperature", c.info, temperature=True)
    m = _check_float_param(min_p, "min_p", c.info, temperature=False)
    return c, t, m


def _traced(c: Checked, logits: Any) -> bool:
    """True for a traced JAX array (inside ``jax.jit``): the call is staged into the program."""
    is_traced = getattr(c.adapter, "is_traced", None)
    return is_traced is not None and bool(is_traced(logits))


def _staged(c: Checked, logits: Any, op: str, **kw: Any) -> tuple[Any, ...] | None:
    """``op``'s outputs for (B, V) rows from a JAX program: inside ``jax.jit`` the call is staged
    into the traced one (``traced_sampling``); an eager JAX GPU call may run a cached jitted
    program (``eager_sampling``, ``QRITA_JAX_EAGER_JIT``). None: the call takes the DLPack
    exchanges or the host."""
    if _traced(c, logits):
        return c.adapter.traced_sampling(op, logits, **kw)
    by_jit = getattr(c.adapter, "eager_sampling", None)
    if by_jit is not None and _eager_by_jit(c.adapter) and _gpu(c) is not None:
        return by_jit(op, logits, **kw)
    return None


def _gpu(c: Checked) -> ModuleType | None:
    """The GPU sampler when the logits live on a GPU and it can be imported."""
    return _load_gpu() if c.info.on_gpu else None


def _host(adapter: ModuleType, v: Any, dtype: Any) -> Any:
    """A per-row parameter as a 1-D NumPy array of ``dtype``; scalars and None pass through."""
    if v is None or isinstance(v, (int, float)):
        return v
    a = np.asarray(adapter.to_numpy(v)).reshape(-1)
    if dtype is np.uint64:
        return a.astype(np.int64 if a.dtype.kind == "i" else np.uint64).astype(np.uint64)
    return a.astype(dtype)


def _wrap(info: ArrayInfo, adapter: ModuleType, a: np.ndarray, like: Any) -> Any:
    """``a`` in the caller's library and device with ``a``'s own dtype (not ``like``'s)."""
    if info.library == "numpy":
        return a
    if info.library == "torch":
        import torch

        return torch.from_numpy(np.array(a, order="C"))  # keeps 0-d.to(device=like.device)
    if a.dtype.kind in "iu":  # jax: integers follow its index dtype, as for top_k indices
        return adapter.from_numpy(a, like)
    import jax

    return jax.device_put(a, list(like.devices())[0])


def _fresh_seeds(batch: int) -> np.ndarray:
    """One fresh 64-bit seed per row from NumPy's default entropy source."""
    return np.random.default_rng().integers(0, _U64, size=batch, dtype=np.uint64)


def sample(
    logits: Any,
    /,
    *,
    k: Any = None,
    p: Any = None,
    min_p: Any = None,
    temperature: Any = None,
    seed: Any = None,
    offset: Any = None,
    return_logprob: bool = False,
) -> Any:
    """Draw one token per row from the top-k / top-p / min-p filtered softmax.

    Parameters
    ----------
    logits : array, shape (V,) or (B, V), dtype float16, bfloat16, float32 or float64
        A NumPy, torch, CuPy or JAX array. GPU arrays run the Triton path with no host
        synchronisation (docs/sampling.md, "GPU path"); CPU arrays run the NumPy reference.
    k, p : as in :func:`qrita.top_k_top_p_mask` (scalar or per-row), applied to the scaled logits.
    min_p : None, float, or floating array of shape (B,)
        Keep entries whose probability is >= min_p times the row's largest (after top-p).
        ``min_p <= 0``, NaN or None: off; values above 1 act as 1.
    temperature : None, float >= 0, or floating array of shape (B,)
        Logits are divided by it first (None means 1), after clamping values > 0 into
        [1e-30, 1e30]. 0 means greedy: the first entry of the order. Per-row values that are
        not > 0 (0, negative, NaN) are greedy too.
    seed : None, int in [0, 2**64), or integer array of shape (B,)
        Philox key. None draws a fresh seed per row (not reproducible).
    offset : None, int in [0, 2**64), or integer array of shape (B,)
        Philox counter (None means 0). A row's token depends only on its logits, parameters,
        seed and offset: with a scalar seed and offset every row uses the same uniform.
    return_logprob : bool, default False
        Also return the log-probability of each token under the distribution it was drawn from.

    Returns
    -------
    tokens : int64 array of shape (B,), or shape () for (V,) logits, in logits' library/device
        (JAX without x64: int32).
    logprobs : only with ``return_logprob``; float32 (float64 for float64 logits), same shape.

    Raises
    ------
    TypeError, ValueError
        As :func:`qrita.top_k_top_p_mask`; also for a bad temperature, min_p, seed, offset or
        return_logprob (the message names the argument and the value).
    Notes
    -----
    The contract, including exactly how the uniforms are made, is docs/sampling.md. Rows whose
    top-k is off (float16 / bfloat16 / float32 logits) are drawn by rejection (no top-p
    threshold search); the others by inverse CDF over the rank order ("Which draw"). Both
    draw from exactly the same distribution, and ``return_logprob`` never changes the token.
    """
    c, t, m = _check_common(logits, k, p, temperature, min_p, "sample")
    info = c.info
    s = None if seed is None else _check_counter(seed, "seed", info)
    o = 0 if offset is None else _check_counter(offset, "offset", info)
    want_logprob = _check_bool(return_logprob, "return_logprob")
    adapter = c.adapter
    staged = _staged(c, logits, "sample", k=c.k, p=c.p, min_p=m, temperature=t, seed=s,
                     offset=o, logprob=want_logprob)
    if staged is not None:
        tok, lp = staged
        if len(info.shape) == 1:
            tok, lp = tok.reshape(()), lp.reshape(())
        return (tok, lp) if want_logprob else tok
    gpu = _gpu(c)
    if gpu is not None:
        with _scope(adapter, logits):
            res = gpu.sample(
                _torch_logits(adapter, logits),
                _torch_rows(adapter, c.k),
                _torch_rows(adapter, c.p),
                min_p=_torch_rows(adapter, m),
                temperature=_torch_rows(adapter, t),
                seed=_torch_rows(adapter, s),
                offset=_torch_rows(adapter, o),
                return_logprob=want_logprob,
            )
            one_row = len(info.shape) == 1  # (V,) logits: scalar results; else (B,) already
            if not want_logprob:
                return adapter.from_torch(res.reshape(()) if one_row else res, like=logits)
            tok, lp = res
            if one_row:
                tok, lp = tok.reshape(()), lp.reshape(())
            return adapter.from_torch(tok, like=logits), adapter.from_torch(lp, like=logits)
    x = np.asarray(adapter.to_numpy(logits))
    batch = 1 if x.ndim == 1 else x.shape[0]
    s = _fresh_seeds(batch) if s is None else _host(adapter, s, np.uint64)
    tokens, logp = _ref.sample(
        x,
        _host(adapter, c.k, np.int64),
        _host(adapter, c.p, np.float64),
        min_p=_host(adapter, m, np.float64),
        temperature=_host(adapter, t, np.float64),
        seed=s,
        offset=_host(adapter, o, np.uint64),
        return_logprob=True,
    )
    tokens = _wrap(info, adapter, np.asarray(tokens, dtype=np.int64), logits)
    if not want_logprob:
        return tokens
    return tokens, _wrap(info, adapter, np.asarray(logp), logits)


def top_k_top_p_probs(
    logits: Any,
    k: Any = None,
    p: Any = None,
    /,
    *,
    temperature: Any = None,
    min_p: Any = None,
) -> Any:
    """The distribution :func:`sample` draws from: renormalised over the kept set, 0 elsewhere.

    Parameters
    ----------
    logits, k, p, temperature, min_p : as in :func:`sample`.

    Returns
    -------
    array of logits' shape, library and device; float32 for float16 / bfloat16 / float32 logits,
    float64 for float64. Temperature 0 (greedy) gives a one-hot row.
    """
    c, t, m = _check_common(logits, k, p, temperature, min_p, "top_k_top_p_probs")
    adapter = c.adapter
    staged = _staged(c, logits, "probs", k=c.k, p=c.p, min_p=m, temperature=t)
    if staged is not None:
        return staged[0].reshape(c.info.shape)
    gpu = _gpu(c)
    if gpu is not None:
        with _scope(adapter, logits):
            probs = gpu.top_k_top_p_probs(
                _torch_logits(adapter, logits),
                _torch_rows(adapter, c.k),
                _torch_rows(adapter, c.p),
                temperature=_torch_rows(adapter, t),
                min_p=_torch_rows(adapter, m),
            )
            return adapter.from_torch(probs.reshape(c.info.shape), like=logits)
    x = np.asarray(adapter.to_numpy(logits))
    out = _ref.probs(
        x,
        _host(adapter, c.k, np.int64),
        _host(adapter, c.p, np.float64),
        min_p=_host(adapter, m, np.float64),
        temperature=_host(adapter, t, np.float64),
        dtype=np.float64 if c.info.dtype == "float64" else np.float32,
    )
    return _wrap(c.info, adapter, out, logits)


def candidates(
    logits: Any,
    k: Any = None,
    p: Any = None,
    /,
    *,
    temperature: Any = None,
    min_p: Any = None,
    max_candidates: Any = None,
) -> Candidates:
    """Per row, the kept entries in rank order with their probabilities, packed to the left.

    Parameters
    ----------
    logits, k, p, temperature, min_p : as in :func:`sample`.
    max_candidates : None or int >= 1
        Width M of the result (None: V). Rows with more kept entries keep their first M.

    Returns
    -------
    Candidates
        ``indices`` (B, M) int64, -1 after the kept entries; ``probs`` (B, M) float32 (float64
        for float64 logits), 0 after them; ``counts`` (B,) int64, the number of kept entries
        (can exceed M). For (V,) logits: shapes (M,), (M,), ().
    """
    c, t, m = _check_common(logits, k, p, temperature, min_p, "candidates")
    if max_candidates is not None:
        if not _is_int_scalar(max_candidates):
            raise TypeError(
                f"max_candidates must be None or an integer, got {_describe_value(max_candidates)}"
            )
        if int(max_candidates) < 1:
            raise ValueError(f"max_candidates must be >= 1, got {int(max_candidates)}")
        max_candidates = int(max_candidates)
    adapter = c.adapter
    staged = _staged(c, logits, "candidates", k=c.k, p=c.p, min_p=m, temperature=t,
                     max_candidates=max_candidates)
    if staged is not None:
        res = Candidates(*staged)
        if len(c.info.shape) == 1:
            res = Candidates(res.indices[0], res.probs[0], res.counts.reshape(()))
        return res
    gpu = _gpu(c)
    if gpu is not None:
        with _scope(adapter, logits):
            res = gpu.candidates(
                _torch_logits(adapter, logits),
                _torch_rows(adapter, c.k),
                _torch_rows(adapter, c.p),
                temperature=_torch_rows(adapter, t),
                min_p=_torch_rows(adapter, m),
                max_candidates=max_candidates,
            )
            if len(c.info.shape) == 1:
                res = Candidates(res.indices[0], res.probs[0], res.counts.reshape(()))
            return Candidates(*(adapter.from_torch(a, like=logits) for a in res))
    x = np.asarray(adapter.to_numpy(logits))
    res = _ref.candidates(
        x,
        _host(adapter, c.k, np.int64),
        _host(adapter, c.p, np.float64),
        min_p=_host(adapter, m, np.float64),
        temperature=_host(adapter, t, np.float64),
        max_candidates=max_candidates,
    )
    return Candidates(*(_wrap(c.info, adapter, np.asarray(a), logits) for a in res))
