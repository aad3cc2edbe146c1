"""Per-row uniforms for sampling on the GPU: Philox-4x32-10 keyed by (seed, offset), docs/sampling.md.

One uniform per row, ``u = (w0 >> 8) * 2**-24`` with ``w0 = tl.randint(seed, offset)`` (the first
word of ``tl.randint4x``: key = seed, counter = (offset lo, offset hi, 0, 0)), bit for bit the
NumPy reference :func:`qrita.reference.sampling.uniforms`. ``tl.rand`` is *not* used: its
integer-to-float conversion is different.

Seeds and offsets are uint64 values carried as int64 bit patterns (two's complement); nothing here
reads device data on the host, so every call can be captured in a CUDA graph.
"""

from __future__ import annotations

import numbers
import secrets
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from qrita.backends.triton import fastlaunch

__all__ = ["uniforms", "as_u64_bits", "fresh_seed", "ROW_SEED_STEP", "SeedOffsetArgs",
           "seed_offset_args"]

_U64 = 2**64
_I64_MAX = 2**63 - 1
_BLOCK = 128


@triton.jit(do_not_specialize=["seed_scalar", "offset_scalar"])
def _uniform_kernel(seed_ptr, offset_ptr, n, seed_scalar, offset_scalar, seed_stride,
                    offset_stride, out_ptr,
                    SEED_MODE: tl.constexpr, OFFSET_ARRAY: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = uniform of (seed[i], offset[i]) (uint64 values as int64 bit patterns).

    SEED_MODE 0: one seed, ``seed_scalar``; 1: seeds ``seed_ptr[i * seed_stride]`` (stride 0: one
    device value for every row); 2 (fresh): a distinct seed per row derived from
    ``seed_scalar``. OFFSET_ARRAY: offsets ``offset_ptr[i * offset_stride]``, else
    ``offset_scalar``. Scalars widen to int64 by sign extension (a small value arrives as
    int32), so they mean the same bits as a loaded int64."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    valid = i < n
    rows = i.to(tl.int64)
    seed = rows * 0 + seed_scalar  # int64 (a constexpr when Triton specialised a 1)
    if SEED_MODE == 1:
        seed = tl.load(seed_ptr + rows * seed_stride, mask=valid, other=0)
    if SEED_MODE == 2:
        # 0x9E3779B97F4A7C15 as int64 (odd): distinct seeds per row, wrapping int64 arithmetic
        seed = seed + rows * (-7046029254386353131)
    offset = rows * 0 + offset_scalar
    if OFFSET_ARRAY:
        offset = tl.load(offset_ptr + rows * offset_stride, mask=valid, other=0)
    word = tl.randint(seed, offset).to(tl.uint32, bitcast=True)
    u = (word >> 8).to(tl.float32) * (1.0 / 16777216.0)
    tl.store(out_ptr + i, u, mask=valid)


#: the int64 step between the rows' seeds that a fresh seed derives (SEED_MODE 2: seed + row x
#: this, wrapping), the literal in ``_uniform_kernel`` and ``reject_topp.row_draw_params``
ROW_SEED_STEP = -7046029254386353131


def _u64_scalar_bits(v: int | None) -> int:
    """A Python seed / offset in [0, 2**64) (None: 0) as its int64 bit pattern."""
    v = 0 if v is None else int(v)
    if not 0 <= v < _U64:
        raise ValueError(f"seeds and offsets must lie in [0, 2**64), got {v}")
    return v - _U64 if v > _I64_MAX else v


def as_u64_bits(v: int | torch.Tensor | None, batch: int, device: torch.device) -> torch.Tensor:
    """A seed / offset as an int64 tensor of uint64 bit patterns, shape (batch,) or (1,).

    Parameters
    ----------
    v : None (0), a Python int in [0, 2**64), or an integer tensor of shape (batch,), (1,) or ()
        on ``device``. Signed values are read as their two's-complement uint64 bit patterns
        (-1 is 2**64 - 1); a uint64 tensor is reinterpreted, not converted.
    batch : number of rows
    device : where the result lives

    Returns
    -------
    torch.Tensor, int64, shape (batch,) for a per-row tensor, else (1,) (broadcast by the kernel).
    """
    if v is None or isinstance(v, numbers.Integral):
        return torch.full((1,), _u64_scalar_bits(v), dtype=torch.int64, device=device)
    t = v.reshape(-1)
    if t.numel() not in (1, batch):
        raise ValueError(f"per-row seeds / offsets must have {batch} entries, got {t.numel()}")
    if t.dtype == torch.uint64:
        t = t.view(torch.int64)
    elif t.dtype != torch.int64:
        t = t.to(torch.int64)  # sign-extends signed types, zero-extends unsigned ones
    return t.contiguous()


def fresh_seed() -> int:
    """A fresh host-side random int in [0, 2**63) (no device data is read)."""
    return secrets.randbits(63)


def uniforms(
    seed: int | torch.Tensor | None,
    offset: int | torch.Tensor | None,
    batch: int,
    device: torch.device | str,
) -> torch.Tensor:
    """One uniform per row in [0, 1) on a 2**-24 grid, from Philox-4x32-10.

    Parameters
    ----------
    seed : None, int in [0, 2**64), or integer tensor (batch,) on ``device``
        The Philox key. None draws a fresh seed on the host (:func:`fresh_seed`) and derives a
        distinct seed per row from it on the device (not reproducible; under CUDA-graph capture
        the host draw happens once, at capture, so pass seeds explicitly there).
    offset : None (0), int in [0, 2**64), or integer tensor (batch,) on ``device``
        The Philox counter.
    batch : number of rows B
    device : the device of the result

    Returns
    -------
    torch.Tensor (B,), float32: ``(tl.randint(seed, offset) >> 8) * 2**-24`` per row, equal bit
    for bit to :func:`qrita.reference.sampling.uniforms` of the same uint64 seed and offset.
    """
    device = torch.device(device)
    out = torch.empty(batch, dtype=torch.float32, device=device)
    if batch == 0:
        return out
    a = seed_offset_args(seed, offset, batch, device, out)
    fastlaunch.launch(_uniform_kernel, (triton.cdiv(batch, _BLOCK),),
                      a.seeds, a.offsets, batch, a.seed_bits, a.offset_bits, a.seed_stride,
                      a.offset_stride, out,
                      SEED_MODE=a.seed_mode, OFFSET_ARRAY=a.offset_array, BLOCK=_BLOCK)
    return out


class SeedOffsetArgs(NamedTuple):
    """A kernel's seed / offset arguments (see ``_uniform_kernel``): pointers, scalar bit
    patterns, row strides, SEED_MODE and OFFSET_ARRAY."""

    seeds: torch.Tensor
    offsets: torch.Tensor
    seed_bits: int
    offset_bits: int
    seed_stride: int
    offset_stride: int
    seed_mode: int
    offset_array: bool


def seed_offset_args(seed: int | torch.Tensor | None, offset: int | torch.Tensor | None,
                     batch: int, device: torch.device, placeholder: torch.Tensor
                     ) -> SeedOffsetArgs:
    """Scalars go to a kernel as arguments (no device tensor to fill: host time per call), with
    ``placeholder`` as the unused pointer; tensors as int64 bit patterns (stride 0 for one
    value); seed None draws a fresh host seed that the kernel spreads over the rows."""
    if offset is None or type(offset) is int or isinstance(offset, numbers.Integral):
        off, off_bits, off_array = placeholder, _u64_scalar_bits(offset), False
    else:
        off, off_bits, off_array = as_u64_bits(offset, batch, device), 0, True
    if seed is None:
        seeds, seed_bits, seed_mode = placeholder, fresh_seed(), 2
    elif type(seed) is int or isinstance(seed, numbers.Integral):
        seeds, seed_bits, seed_mode = placeholder, _u64_scalar_bits(seed), 0
    else:
        seeds, seed_bits, seed_mode = as_u64_bits(seed, batch, device), 0, 1
    return SeedOffsetArgs(seeds, off, seed_bits, off_bits, int(seeds.numel() != 1),
                          int(off.numel() != 1), seed_mode, off_array)
