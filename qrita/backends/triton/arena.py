"""A caller's scratch buffer for the launches of one call (this thread's), instead of torch's
allocator.

A program that XLA records into a CUDA graph (a command buffer) keeps every address its
launches used. Scratch from torch's caching allocator goes back to torch after the call and
serves other tensors, while each replay of the recorded graph still writes it. Inside
:func:`scratch_arena` the mask pipeline instead takes its scratch from a flat int32 buffer the
caller owns (for JAX's jit: an extra output of the ``buffer_callback``, allocated by XLA), in
order, each piece 128-byte aligned. Its path is chosen as under a capture: no graph of qrita's
own and no kept buffer (:func:`qrita.backends.triton.eager_graph.capturing`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

__all__ = ["ALIGN_WORDS", "active", "scratch_arena", "take"]

#: each piece starts at a multiple of this many int32 words (128 bytes), as the pieces of a
#: buffer from torch's allocator are aligned enough for every kernel's specialisation
ALIGN_WORDS = 32


class _Arena(threading.local):
    buffer: torch.Tensor | None = None
    used: int = 0


_ARENA = _Arena()


@contextlib.contextmanager
def scratch_arena(buffer: torch.Tensor) -> Iterator[None]:
    """Take this thread's scratch from ``buffer`` (flat, int32, contiguous) until the end.

    Parameters
    ----------
    buffer : torch.Tensor (W,) int32, on the device of the launches. Its size must cover the
        call: :func:`qrita.backends.triton.launch.mask_scratch_words`.
    """
    if buffer.dtype != torch.int32 or buffer.dim() != 1 or not buffer.is_contiguous():
        raise ValueError(f"scratch buffer must be a contiguous 1-D int32 tensor, got "
                         f"{buffer.dtype} of shape {tuple(buffer.shape)}")
    previous = (_ARENA.buffer, _ARENA.used)
    _ARENA.buffer, _ARENA.used = buffer, 0
    try:
        yield
    finally:
        _ARENA.buffer, _ARENA.used = previous


def active() -> bool:
    """Whether this thread's scratch now comes from a caller's buffer."""
    return _ARENA.buffer is not None


def take(words: int, *, zero: bool = False) -> torch.Tensor | None:
    """The next ``words`` int32 words of the arena (zeroed if asked), or None outside one.

    Raises RuntimeError when the buffer is too small (its size is set when the program is
    traced, so this is a bug in the size, never a data-dependent event)."""
    buffer = _ARENA.buffer
    if buffer is None:
        return None
    start = -(-_ARENA.used // ALIGN_WORDS) * ALIGN_WORDS
    end = start + words
    if end > buffer.numel():
        raise RuntimeError(f"qrita: the scratch buffer holds {buffer.numel()} int32 words, the "
                           f"call needs at least {end}")
    _ARENA.used = end
    piece = buffer[start:end]
    if zero:
        piece.zero_()
    return piece
