"""Launch wrappers: shapes, grid, block sizes and scratch for the Triton kernels."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import torch

from qrita.backends.triton.mask_kernels import top_k_top_p_mask_kernel

__all__ = ["MaskConfig", "mask_config", "launch_mask", "interpreting"]


def interpreting() -> bool:
    """True when Triton runs kernels on the CPU (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


@dataclass(frozen=True)
class MaskConfig:
    """Launch parameters of the mask kernel. They change speed, never the answer."""

    block: int  # tile of the streaming passes
    cap: int  # scratch entries per program
    num_warps: int
    programs_per_sm: int
    oversample: float = 4.0


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def mask_config(dtype: torch.dtype, vocab: int, batch: int) -> MaskConfig:
    """Launch parameters by dtype, V and B (a table, measured on the H200; see BENCHMARKS.md)."""
    if interpreting():
        return MaskConfig(block=256, cap=256, num_warps=4, programs_per_sm=1)
    block = 2048 if dtype == torch.float32 else 4096
    block = min(block, max(256, triton_next_pow2(vocab)))
    return MaskConfig(block=block, cap=4096, num_warps=8, programs_per_sm=2)


def triton_next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def _program_count(x: torch.Tensor, batch: int, cfg: MaskConfig) -> int:
    if x.device.type != "cuda":
        return min(batch, 4)
    return max(1, min(batch, _sm_count(x.device.index or 0) * cfg.programs_per_sm))


def launch_mask(
    x: torch.Tensor,
    out: torch.Tensor,
    k: int | torch.Tensor | None,
    p: float | torch.Tensor | None,
    fill: float,
    *,
    config: MaskConfig | None = None,
    stats: torch.Tensor | None = None,
) -> torch.Tensor:
    """Launch the mask kernel on (B, V) rows with unit stride along V.

    Parameters
    ----------
    x, out : torch.Tensor (B, V), float32 / bfloat16 / float16; ``out`` may be ``x`` (in place)
    k : None, int, or int tensor (B,) on x's device
    p : None, float, or float tensor (B,) on x's device
    stats : optional int32 tensor (B, 4) receiving per row: hit, candidates, pivot rounds, boundary key
    """
    batch, vocab = x.shape
    cfg = config or mask_config(x.dtype, vocab, batch)
    nprog = _program_count(x, batch, cfg)
    cand_val = torch.empty((nprog, cfg.cap), dtype=torch.float32, device=x.device)
    cand_idx = torch.empty((nprog, cfg.cap), dtype=torch.int32, device=x.device)
    k_array = isinstance(k, torch.Tensor)
    p_array = isinstance(p, torch.Tensor)
    dummy = cand_idx  # any pointer for absent arrays
    top_k_top_p_mask_kernel[(nprog,)](
        x, out,
        k if k_array else dummy,
        p if p_array else dummy,
        cand_val, cand_idx,
        stats if stats is not None else dummy,
        batch, vocab, x.stride(0), out.stride(0),
        0 if (k is None or k_array) else int(k),
        0.0 if (p is None or p_array) else float(p),
        float(fill),
        HAS_K=k is not None, K_ARRAY=k_array, HAS_P=p is not None, P_ARRAY=p_array,
        INPLACE=out.data_ptr() == x.data_ptr(), WRITE_STATS=stats is not None,
        BLOCK=cfg.block, CAP=cfg.cap, OVERSAMPLE=cfg.oversample,
        num_warps=cfg.num_warps,
    )
    return out
