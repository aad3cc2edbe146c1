"""Entry points of the Triton path, on torch tensors (CUDA / ROCm, or CPU under TRITON_INTERPRET=1).

The public functions in :mod:`qrita._api` validate arguments once and call these. Nothing here
synchronises with the host: every call can be captured in a CUDA graph.
"""

from __future__ import annotations

import os

import torch

from qrita.backends.triton import eager_graph
from qrita.backends.triton.launch import (
    ROW_INFO,
    chunk_rows,
    fused_select_applies,
    interpreting,
    launch_mask,
    launch_select,
    launch_select_fused,
    launch_select_one,
    one_launch,
    pipeline_config,
    sort_selection_rows,
)
from qrita.backends.triton.one_launch import SORT_MAX

__all__ = ["top_k_top_p_mask", "top_k", "rank_keys", "SUPPORTED_DTYPES", "STATS_WIDTH"]

#: columns of the optional per-row ``stats`` tensor of :func:`top_k_top_p_mask`
STATS_WIDTH = ROW_INFO

SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
_INT32_MIN = -(2**31)
_INT64_MIN = -(2**63)


def _check_device(x: torch.Tensor) -> None:
    if x.device.type != "cuda" and not interpreting():
        raise ValueError(f"logits must be on a GPU for the Triton path, got device {x.device}")


def _row_slice(v, r0: int, r1: int):
    """Rows r0:r1 of a per-row (B,) tensor; scalars and None pass through."""
    return v[r0:r1] if isinstance(v, torch.Tensor) else v


def top_k_top_p_mask(
    logits: torch.Tensor,
    k: int | torch.Tensor | None = None,
    p: float | torch.Tensor | None = None,
    *,
    inplace: bool = False,
    fill: float = float("-inf"),
    stats: torch.Tensor | None = None,
) -> torch.Tensor:
    """Top-k then top-p mask of (B, V) logits (docs/spec.md); no host synchronisation.

    Parameters
    ----------
    logits : torch.Tensor (B, V), float32 / bfloat16 / float16
    k : None, int, or integer tensor (B,) on logits' device
    p : None, float, or floating tensor (B,) on logits' device
    inplace : write into ``logits`` and return it
    fill : value of the masked entries
    stats : optional int32 tensor (B, STATS_WIDTH) receiving per row: mode (0 nothing to do,
        1 the σ-truncated candidates sufficed, 2 exact single-program fallback, 4 the segmented
        top-p stage), boundary key, tie budget, candidates, pivot rounds

    Returns
    -------
    torch.Tensor (B, V), logits' dtype
    """
    _check_device(logits)
    if logits.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"logits dtype must be one of float32, bfloat16, float16, got {logits.dtype}")
    if logits.ndim != 2:
        raise ValueError(f"logits must be 2-D (B, V) here, got shape {tuple(logits.shape)}")
    src = logits if logits.stride(-1) == 1 else logits.contiguous()
    if not inplace and stats is None and eager_graph.usable(src) and chunk_rows(
            src.shape[0]) >= src.shape[0]:
        # QRITA_EAGER_GRAPHS=1: the same launches, replayed from a graph qrita captured
        return eager_graph.cached_call(
            "mask", _mask_launches, (src, k, p, fill),
            graph_run=_mask_launches_in_place if eager_graph.IN_PLACE else None)
    if inplace and src is logits:
        out = logits
    else:
        out = _new_output(src)
    batch = src.shape[0]
    chunk = chunk_rows(batch)
    if (stats is None and chunk >= batch and (out is src or not inplace)
            and eager_graph.usable_mask_by_address(src)):
        # QRITA_EAGER_GRAPHS_MASK_ADDRESS (default on): the same launches, replayed from a graph
        # that reads the logits and writes the mask where they are (their addresses in its key)
        if out is src:
            return eager_graph.cached_call("mask in place", _mask_launches_in_place,
                                           (src, k, p, fill), by_address=(0,), writes=0)
        return eager_graph.cached_call("mask into", _mask_into, (src, out, k, p, fill),
                                       by_address=(0, 1), writes=1)
    if chunk >= batch:
        launch_mask(src, out, k, p, fill, row_info=stats)
    else:  # QRITA_CHUNK_ROWS: rows in chunks bound the scratch; the same answer
        for r0 in range(0, batch, chunk):
            r1 = min(batch, r0 + chunk)
            launch_mask(src[r0:r1], out[r0:r1], _row_slice(k, r0, r1), _row_slice(p, r0, r1),
                        fill, row_info=None if stats is None else stats[r0:r1])
    if inplace and out is not logits:
        logits.copy_(out)
        return logits
    return out


def _mask_launches(src: torch.Tensor, k, p, fill: float) -> torch.Tensor:
    """A fresh (B, V) mask of ``src`` (one chunk)."""
    return _mask_into(src, _new_output(src), k, p, fill)


def _new_output(src: torch.Tensor) -> torch.Tensor:
    """An uninitialised (B, V) output like ``src`` (one place, so a test can see its address)."""
    return torch.empty(src.shape, dtype=src.dtype, device=src.device)


def _mask_into(src: torch.Tensor, out: torch.Tensor, k, p, fill: float) -> torch.Tensor:
    """``out`` (B, V), written with the mask of ``src`` (one chunk)."""
    launch_mask(src, out, k, p, fill)
    return out


def _mask_launches_in_place(src: torch.Tensor, k, p, fill: float) -> torch.Tensor:
    """``src`` (B, V) masked in place (one chunk): what :mod:`.eager_graph` captures on its
    static copy of the logits, so a graph keeps one (B, V) buffer."""
    launch_mask(src, src, k, p, fill)
    return src


def rank_keys(values: torch.Tensor, *, smallest: bool) -> torch.Tensor:
    """Integer keys whose descending order is the rank order (docs/algorithm.md §0): int32 for
    float32/bfloat16/float16, int64 for float64 and integers."""
    if values.dtype in SUPPORTED_DTYPES:
        x = values.float()
        x = torch.where(x == 0, torch.zeros_like(x), x)
        bits = x.view(torch.int32)
        key = torch.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)
        nan_key = _INT32_MIN
    elif values.dtype == torch.float64:
        x = torch.where(values == 0, torch.zeros_like(values), values)
        bits = x.view(torch.int64)
        key = torch.where(bits >= 0, bits, bits ^ 0x7FFFFFFFFFFFFFFF)
        nan_key = _INT64_MIN
    else:  # integers: no NaN, and ~x reverses the order without overflow
        key = values.to(torch.int64)
        return ~key if smallest else key
    if smallest:
        key = ~key
    return torch.where(values != values, torch.full_like(key, nan_key), key)


def top_k(x: torch.Tensor, k: int, *, mode: str = "largest", sorted: bool = True):
    """The first k entries of each row's order (docs/spec.md), 1 <= k <= V, on (B, V) rows.

    float32 / bfloat16 / float16 run the Triton pipeline (σ-truncation, pivot search, tie
    counting, then a sort of the k survivors when ``sorted``); float64 and integer rows take an
    exact stable sort of order keys (correct, slower).

    Returns
    -------
    values (B, k) of x's dtype, indices (B, k) int64
    """
    _check_device(x)
    smallest = mode == "smallest"
    if x.dtype in SUPPORTED_DTYPES:
        src = x if x.stride(-1) == 1 else x.contiguous()
        batch = src.shape[0]
        if batch < eager_graph.TOP_K_FROM and _one_launch_top_k(src, k, sorted):
            # a small batch: one kernel, which also sorts the k survivors in registers
            return launch_select_one(src, k, smallest=smallest, sorted=sorted)
        if chunk_rows(batch) >= batch and src is x and eager_graph.usable_by_address(src):
            # QRITA_EAGER_GRAPHS_ADDRESS_ROWS: the pipeline's launches, replayed from a graph
            # qrita captured, reading x where it is (its address is part of the key); a call
            # that does not replay runs as it is (the one-launch kernel where it applies, from
            # ``TOP_K_FROM`` rows: a capture and its warm-up take the pipeline,
            # ``launch.one_launch``)
            return eager_graph.cached_call("top_k", _top_k_eager, (src, k, smallest, sorted),
                                           by_address=(0,))
        return _top_k_eager(src, k, smallest, sorted)
    order = torch.sort(rank_keys(x, smallest=smallest), dim=-1, descending=True,
                       stable=True).indices[:, :k]
    if not sorted:
        order = torch.sort(order, dim=-1).values
    return x.gather(-1, order), order


def _one_launch_top_k(src: torch.Tensor, k: int, sorted: bool) -> bool:
    """Whether :func:`top_k` of ``src`` takes the one-launch kernel (a small batch, not while
    a graph is captured or warmed up; sorted only up to its in-register sort's k)."""
    return one_launch(src.shape[0], src) and (not sorted or k <= SORT_MAX)


def _top_k_eager(src: torch.Tensor, k: int, smallest: bool, sorted: bool):
    """:func:`top_k` of float32 / bfloat16 / float16 rows (B, V) with a contiguous vocab axis,
    as it runs outside a replay: at a small batch one kernel (``launch.one_launch``),
    otherwise (and in a capture or its warm-up) the pipeline. Values (B, k), indices (B, k)
    int64."""
    if _one_launch_top_k(src, k, sorted):
        return launch_select_one(src, k, smallest=smallest, sorted=sorted)
    return _top_k_launches(src, k, smallest, sorted)


def _top_k_launches(src: torch.Tensor, k: int, smallest: bool, sorted: bool):
    """:func:`top_k` of float32 / bfloat16 / float16 rows (B, V) with a contiguous vocab axis
    on the pipeline (what :mod:`.eager_graph` captures): values (B, k), indices (B, k) int64."""
    batch = src.shape[0]
    chunk = chunk_rows(batch)
    if chunk < batch:  # QRITA_CHUNK_ROWS: bounded scratch, the same answer
        parts = [top_k(src[r0:r0 + chunk], k, mode="smallest" if smallest else "largest",
                       sorted=sorted) for r0 in range(0, batch, chunk)]
        return torch.cat([v for v, _ in parts]), torch.cat([i for _, i in parts])
    kernel_sort = os.environ.get("QRITA_SELECT_SORT", "kernel") == "kernel"
    if ((not sorted or kernel_sort)
            and fused_select_applies(pipeline_config(src.shape[1], src.dtype), src.shape[1], k,
                                     sorted, batch)):
        # (``selfuse``) the per-row search writes the selection, sorted when asked
        return launch_select_fused(src, k, smallest=smallest, sorted=sorted)
    if not sorted:
        return launch_select(src, k, smallest=smallest)
    if k <= SORT_MAX and kernel_sort:
        # one program per row sorts its k survivors in registers (no torch sort, no gathers)
        vals, idx = launch_select(src, k, smallest=smallest)
        return sort_selection_rows(src, vals, idx, smallest=smallest)
    # the kernel also writes each survivor's rank key: one stable sort of k int32 keys
    vals, idx, keys = launch_select(src, k, smallest=smallest, with_key=True)
    order = torch.sort(keys, dim=-1, descending=True, stable=True).indices
    return vals.gather(-1, order), idx.gather(-1, order)
