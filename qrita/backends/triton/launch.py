"""Launch wrappers: segment layout, block sizes, scratch buffers and the three launches."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from qrita.backends.triton import fastlaunch
from qrita.backends.triton.pipeline import (
    candidates_kernel,
    cutoff_kernel,
    threshold_kernel,
    write_mask_kernel,
    write_select_kernel,
)
from qrita.backends.triton.wide import (
    wide_compact_kernel,
    wide_narrow_kernel,
    wide_round_kernel,
    wide_search_kernel,
)

__all__ = ["PipelineConfig", "pipeline_config", "launch_mask", "launch_select", "interpreting"]

ROW_INFO = 16  # per row: mode, boundary key, tie budget, candidates, pivot rounds, wide interval
WIDE_ROUNDS = 3  # 16-way rounds of the wide top-p stage for rows its band missed
WIDE_BLOCK = 128  # tile of the wide rounds: 16 per-lane pivot counters and masses per entry


def launch(kernel, grid: tuple[int, ...], *args, **kwargs) -> None:
    """``kernel[grid](*args, **kwargs)`` through :func:`qrita.backends.triton.fastlaunch.launch`
    (cached compiled kernels, ~2x less host time per launch on the H200); ``QRITA_FAST_LAUNCH=0``
    launches through Triton's own binder."""
    if os.environ.get("QRITA_FAST_LAUNCH", "1") == "1":
        fastlaunch.launch(kernel, grid, *args, **kwargs)
    else:
        kernel[grid](*args, **kwargs)


def _table_override(name: str, default: tuple[int, int]) -> tuple[int, int]:
    """Developer knob for measuring and bisecting on a GPU: ``QRITA_LAUNCH_TABLE="cand=512x2,
    wide=256x2"`` replaces the (tile, warps) of the candidate pass / wide compaction."""
    for item in os.environ.get("QRITA_LAUNCH_TABLE", "").split(","):
        key, _, value = item.partition("=")
        if key.strip() == name and "x" in value:
            tile, warps = value.split("x")
            return int(tile), int(warps)
    return default


def interpreting() -> bool:
    """True when Triton runs kernels on the CPU (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


@dataclass(frozen=True)
class PipelineConfig:
    """Launch parameters. They depend on V and dtype only (never on B, so a row's answer does not
    depend on its batch) and change speed, never the answer."""

    block: int  # streaming tile of the segment passes
    seg_len: int  # entries per segment (a multiple of block)
    nseg: int  # segments per row
    nseg_p2: int  # nseg rounded up to a power of two
    cap_seg: int  # candidate slots per segment; nseg_p2 * cap_seg = candidates in registers
    sample: int  # first-tile sample of the σ-cutoff
    warps_stream: int
    warps_search: int
    dense: int = 1024  # candidates searched densely packed when a row has at most this many
    block_cand: int = 0  # tile of the candidate pass (0: ``block``)
    warps_cand: int = 0  # warps of the candidate pass (0: ``warps_stream``)
    sparse: int = 8  # a tile with at most this many candidates appends them one by one
    oversample: float = 4.0
    band_sample: int = 4096  # sample placing the wide top-p band (entries)
    block_wide: int = 0  # tile of the wide stage's compaction (0: ``block_cand``)
    warps_wide: int = 0  # its warps (0: ``warps_cand``)

    @property
    def cap(self) -> int:
        return self.nseg_p2 * self.cap_seg

    @property
    def max_band(self) -> float:
        """Entries the wide top-p band aims below: three quarters of the real slots."""
        return 0.75 * self.nseg * self.cap_seg

    @property
    def max_cands(self) -> float:
        """Candidates the σ-cutoff aims below: half the real slots, so segments rarely overflow."""
        return 0.5 * self.nseg * self.cap_seg


def pipeline_config(vocab: int, dtype: torch.dtype) -> PipelineConfig:
    """The launch table (measured on the H200, BENCHMARKS.md)."""
    if interpreting():
        block, seg_min, max_segs, cap, sample, dense = 128, 256, 64, 256, 128, 64
        block_cand, warps_cand, sparse = 128, 4, 4
        block_wide, warps_wide = 128, 2
    else:
        block = 2048 if dtype == torch.float32 else 4096
        seg_min, max_segs, cap, sample, dense = 8192, 64, 4096, 2048, 1024
        # candidate pass and wide compaction: measured on the H200 (BENCHMARKS.md,
        # benchmarks/tune_launch.py --stage cand / wide)
        block_cand, warps_cand, sparse = 512, 2, 8
        block_wide, warps_wide = (256, 2) if dtype == torch.float32 else (256, 1)
        block_cand, warps_cand = _table_override("cand", (block_cand, warps_cand))
        block_wide, warps_wide = _table_override("wide", (block_wide, warps_wide))
    block = min(block, next_pow2(vocab))
    seg_len = max(seg_min, -(-vocab // max_segs))
    seg_len = -(-seg_len // block) * block
    seg_len = min(seg_len, -(-vocab // block) * block)
    nseg = -(-vocab // seg_len)
    nseg_p2 = next_pow2(nseg)
    band_sample = max(16, min(2 * sample, next_pow2(vocab)))
    sample = max(16, min(sample, next_pow2(vocab)))
    return PipelineConfig(block=block, seg_len=seg_len, nseg=nseg, nseg_p2=nseg_p2,
                          cap_seg=max(cap // nseg_p2, 16), sample=sample,
                          warps_stream=4, warps_search=8, dense=dense,
                          block_cand=min(block_cand, block), warps_cand=warps_cand, sparse=sparse,
                          band_sample=band_sample, block_wide=min(block_wide, block),
                          warps_wide=warps_wide)


def _flags(k, p):
    k_array = isinstance(k, torch.Tensor)
    p_array = isinstance(p, torch.Tensor)
    return dict(HAS_K=k is not None, K_ARRAY=k_array, HAS_P=p is not None, P_ARRAY=p_array)


def _scalar(v, default):
    return default if (v is None or isinstance(v, torch.Tensor)) else v


def _workspace(batch: int, cfg: PipelineConfig, device: torch.device, row_info, wide: bool):
    """All scratch of one call in one allocation (int32 words; float32 parts are views).

    Size per row: cap candidates x 8 bytes + 60 bytes per segment + 36 bytes, i.e.
    O(B x cap), never O(V) per program.
    """
    sizes = {"cutoff": 1, "cand_val": cfg.cap, "cand_idx": cfg.cap, "seg_f": cfg.nseg * 4,
             "seg_i": cfg.nseg * 8, "seg_before": cfg.nseg * 2, "row_f": 4,
             "part_i": cfg.nseg * 32 if wide else 0, "part_f": cfg.nseg * 16 if wide else 0,
             "row_info": 0 if row_info is not None else ROW_INFO}
    flat = torch.empty(batch * sum(sizes.values()), dtype=torch.int32, device=device)
    parts, start = {}, 0
    for name, width in sizes.items():
        parts[name] = flat[start:start + batch * width].view(batch, width)
        start += batch * width
    for name in ("cand_val", "seg_f", "row_f", "part_f"):
        parts[name] = parts[name].view(torch.float32)
    if row_info is not None:
        parts["row_info"] = row_info
    return parts


def _search(x, k, p, cfg, *, smallest, select, out, sel_val, sel_idx, fill, row_info):
    """Launches 0, 1 and 2: cutoff per row, candidates per segment, then the per-row search
    (and fallback); with top-p on a mask, the wide stage's launches."""
    batch, vocab = x.shape
    wide = p is not None and not select
    ws = _workspace(batch, cfg, x.device, row_info, wide)
    cand_val, cand_idx, seg_f, seg_i = ws["cand_val"], ws["cand_idx"], ws["seg_f"], ws["seg_i"]
    seg_before, row_info = ws["seg_before"], ws["row_info"]
    flags = _flags(k, p)
    k_ptr = k if flags["K_ARRAY"] else seg_i
    p_ptr = p if flags["P_ARRAY"] else seg_f
    k_scalar = int(_scalar(k, 0))
    p_scalar = float(_scalar(p, 0.0))
    launch(cutoff_kernel, (batch,),
           x, k_ptr, p_ptr, vocab, x.stride(0), k_scalar, p_scalar, cfg.max_cands, ws["cutoff"],
           **flags, SMALLEST=smallest, SAMPLE=cfg.sample, OVERSAMPLE=cfg.oversample,
           num_warps=cfg.warps_stream)
    launch(candidates_kernel, (batch, cfg.nseg),
           x, k_ptr, p_ptr, ws["cutoff"], vocab, x.stride(0), cfg.seg_len, k_scalar, p_scalar,
           cand_val, cand_idx, seg_f, seg_i,
           **flags, SMALLEST=smallest, BLOCK=cfg.block_cand or cfg.block, CAP_SEG=cfg.cap_seg,
           NSEG_P2=cfg.nseg_p2, SPARSE=cfg.sparse, num_warps=cfg.warps_cand or cfg.warps_stream)
    launch(threshold_kernel, (batch,),
           x, k_ptr, p_ptr, cand_val, cand_idx, seg_f, seg_i,
           vocab, x.stride(0), out.stride(0) if out is not None else 0, k_scalar, p_scalar,
           float(fill), cfg.nseg, cfg.max_band,
           out if out is not None else x, sel_val if sel_val is not None else x,
           sel_idx if sel_idx is not None else cand_idx, row_info, ws["row_f"], seg_before,
           **flags, SMALLEST=smallest, SELECT=select, WIDE=wide, BLOCK=cfg.block,
           CAP_SEG=cfg.cap_seg, NSEG_P2=cfg.nseg_p2, DENSE=min(cfg.dense, cfg.cap),
           BAND_SAMPLE=cfg.band_sample, num_warps=cfg.warps_search)
    if wide:
        grid_seg = (batch, cfg.nseg)

        def compact_and_search(band: bool):
            launch(wide_compact_kernel, grid_seg,
                   x, row_info, ws["row_f"], vocab, x.stride(0), cfg.seg_len, cand_val, cand_idx,
                   seg_i, ws["part_i"], ws["part_f"],
                   BLOCK=cfg.block_wide or cfg.block_cand or cfg.block, CAP_SEG=cfg.cap_seg, NSEG_P2=cfg.nseg_p2,
                   SPARSE=cfg.sparse, BAND=band,
                   num_warps=cfg.warps_wide or cfg.warps_cand or cfg.warps_stream)
            launch(wide_search_kernel, (batch,),
                   x, cand_val, cand_idx, seg_i, row_info, ws["row_f"], ws["part_i"],
                   ws["part_f"], vocab, x.stride(0), out.stride(0), float(fill), cfg.nseg, out,
                   seg_before,
                   BLOCK=cfg.block, CAP_SEG=cfg.cap_seg, NSEG_P2=cfg.nseg_p2, BAND=band,
                   num_warps=cfg.warps_search)

        compact_and_search(True)  # the band: finishes the rows it holds
        for _ in range(WIDE_ROUNDS):  # the rows it missed
            launch(wide_round_kernel, grid_seg,
                   x, row_info, ws["row_f"], vocab, x.stride(0), cfg.seg_len, ws["part_i"],
                   ws["part_f"], BLOCK=min(WIDE_BLOCK, cfg.block), num_warps=cfg.warps_stream)
            launch(wide_narrow_kernel, (batch,),
                   row_info, ws["row_f"], ws["part_i"], ws["part_f"], cfg.nseg,
                   NSEG_P2=cfg.nseg_p2, num_warps=cfg.warps_stream)
        compact_and_search(False)
    return cand_val, cand_idx, seg_i, seg_before, row_info


def launch_mask(x: torch.Tensor, out: torch.Tensor, k, p, fill: float, *,
                row_info: torch.Tensor | None = None,
                config: PipelineConfig | None = None) -> torch.Tensor:
    """Top-k then top-p mask of (B, V) rows with unit stride along V into ``out`` (may be ``x``).

    k / p : None, Python scalars or (B,) tensors on x's device. ``row_info`` : optional (B, 8)
    int32 tensor receiving per row mode (0 keep all, 1 candidates, 2 fallback), boundary key,
    tie budget, candidates and pivot rounds.
    """
    batch, vocab = x.shape
    cfg = config or pipeline_config(vocab, x.dtype)
    cand_val, cand_idx, seg_i, seg_before, row_info = _search(
        x, k, p, cfg, smallest=False, select=False, out=out, sel_val=None, sel_idx=None,
        fill=fill, row_info=row_info)
    launch(write_mask_kernel, (batch, cfg.nseg),
        x, cand_val, cand_idx, seg_i, row_info, seg_before,
        vocab, x.stride(0), out.stride(0), cfg.seg_len, float(fill), out,
        INPLACE=out.data_ptr() == x.data_ptr(), BLOCK=cfg.block, CAP_SEG=cfg.cap_seg,
        NSEG_P2=cfg.nseg_p2, num_warps=cfg.warps_stream,
    )
    return out


def launch_select(x: torch.Tensor, k: int, *, smallest: bool,
                  row_info: torch.Tensor | None = None,
                  config: PipelineConfig | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The first k entries of each row's order (1 <= k <= V), in index order.

    Returns values (B, k) of x's dtype and indices (B, k) int64.
    """
    batch, vocab = x.shape
    cfg = config or pipeline_config(vocab, x.dtype)
    sel_val = torch.empty((batch, k), dtype=x.dtype, device=x.device)
    sel_idx = torch.empty((batch, k), dtype=torch.int64, device=x.device)
    cand_val, cand_idx, seg_i, seg_before, row_info = _search(
        x, k, None, cfg, smallest=smallest, select=True, out=None, sel_val=sel_val,
        sel_idx=sel_idx, fill=0.0, row_info=row_info)
    launch(write_select_kernel, (batch, cfg.nseg),
        x, cand_val, cand_idx, seg_i, row_info, seg_before,
        vocab, x.stride(0), cfg.seg_len, k, sel_val, sel_idx,
        BLOCK=cfg.block, CAP_SEG=cfg.cap_seg, NSEG_P2=cfg.nseg_p2, SMALLEST=smallest,
        num_warps=cfg.warps_stream,
    )
    return sel_val, sel_idx
