"""Entry points of the Triton path, on torch tensors (CUDA / ROCm, or CPU under TRITON_INTERPRET=1).

The public functions in :mod:`qrita._api` validate arguments once and call these.
"""

from __future__ import annotations

import torch

from qrita.backends.triton.launch import interpreting, launch_mask

__all__ = ["top_k_top_p_mask", "SUPPORTED_DTYPES"]

SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _check_device(x: torch.Tensor) -> None:
    if x.device.type != "cuda" and not interpreting():
        raise ValueError(f"logits must be on a GPU for the Triton path, got device {x.device}")


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
    logits : torch.Tensor (B, V), float32 / bfloat16 / float16 (float64 is computed in float32
        keys only where exact: it is rejected here, the API routes it to the reference)
    k : None, int, or integer tensor (B,) on logits' device
    p : None, float, or floating tensor (B,) on logits' device
    inplace : write into ``logits`` and return it
    fill : value of the masked entries
    stats : optional int32 tensor (B, 4): hit, candidates, pivot rounds, boundary key per row

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
    if inplace and src is logits:
        out = logits
    else:
        out = torch.empty(src.shape, dtype=src.dtype, device=src.device)
    launch_mask(src, out, k, p, fill, stats=stats)
    if inplace and out is not logits:
        logits.copy_(out)
        return logits
    return out
