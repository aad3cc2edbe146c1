"""Peer implementations the benchmark times qrita against.

* ``torch_sort``: our own textbook sort-based mask (sort descending, softmax of the sorted survivors,
  cumulative sum, scatter the keep-mask back) and ``torch.topk`` for selection. It is what a serving
  stack without a fused kernel does, and it is the "speedup vs" reference of every table.
* ``flashinfer``: FlashInfer's fused kernels, only where the package imports (CUDA only).

Every entry point has the same shape as the qrita call it is compared with:
``mask(logits, k, p) -> tensor``, ``select(x, k) -> (values, indices)`` and
``sample(logits, k, p) -> token ids (B,)``.
"""

from __future__ import annotations

import torch

__all__ = [
    "torch_sort_mask",
    "torch_topk",
    "flashinfer_available",
    "flashinfer_mask",
    "flashinfer_topk",
    "torch_sort_sample",
    "flashinfer_sample",
    "MASK_IMPLS",
    "SELECT_IMPLS",
    "SAMPLE_IMPLS",
]


def _rows(v, batch: int, dtype, device) -> torch.Tensor:
    """A scalar or (B,) per-row parameter as a (B, 1) tensor."""
    if isinstance(v, torch.Tensor):
        return v.to(device=device, dtype=dtype).reshape(-1, 1).expand(batch, 1)
    return torch.full((batch, 1), v, dtype=dtype, device=device)


def torch_sort_mask(logits: torch.Tensor, k=None, p=None) -> torch.Tensor:
    """Top-k then top-p mask of ``logits`` (B, V) by a full sort; masked entries become -inf.

    A textbook implementation: one stable descending sort per row, top-k by position in the sorted
    order (exactly k kept, ties by lower index), softmax over the top-k survivors in float32, top-p
    keeps sorted position j iff the mass before j is < p, then the keep-mask is scattered back to the
    original positions. ``k`` / ``p`` are scalars or (B,) tensors; ``k <= 0`` or ``k >= V`` and
    ``p >= 1`` mean "off", ``p <= 0`` keeps the first entry. Its temporaries are several times the
    logits (sorted values, int64 indices, probabilities, cumulative sums, masks).
    """
    squeeze = logits.dim() == 1
    x = logits.reshape(1, -1) if squeeze else logits
    if k is None and p is None:
        out = x.clone()
        return out.reshape(logits.shape)
    batch, vocab = x.shape
    dev = x.device
    vals, idx = torch.sort(x, dim=-1, descending=True, stable=True)
    pos = torch.arange(vocab, device=dev).reshape(1, -1)
    keep_sorted = torch.ones((batch, vocab), dtype=torch.bool, device=dev)
    if k is not None:
        kr = _rows(k, batch, torch.int64, dev)
        k_on = (kr > 0) & (kr < vocab)
        keep_sorted = keep_sorted & (~k_on | (pos < kr))
    if p is not None:
        pr = _rows(p, batch, torch.float32, dev)
        p_on = pr < 1  # NaN compares False: off
        surv = vals.float().masked_fill(~keep_sorted, float("-inf"))
        probs = torch.softmax(surv, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs
        top_p = before < pr
        top_p[:, 0] = True  # p <= 0 keeps the first entry; the first entry is always kept otherwise
        keep_sorted = keep_sorted & (~p_on | top_p)
    keep = torch.zeros_like(keep_sorted).scatter_(1, idx, keep_sorted)
    out = x.masked_fill(~keep, float("-inf"))
    return out.reshape(logits.shape)


def torch_topk(x: torch.Tensor, k: int):
    """``torch.topk`` along the last axis, sorted (tie order unspecified)."""
    r = torch.topk(x, k, dim=-1, largest=True, sorted=True)
    return r.values, r.indices


def torch_sort_sample(logits: torch.Tensor, k=None, p=None) -> torch.Tensor:
    """One token per row from the top-k / top-p filtered softmax, the textbook way: the sort-based
    mask above, a float32 softmax, then an exponential race (the token maximising prob / E with
    E ~ Exp(1) per entry, drawn from torch's default generator: a sample from the softmax)."""
    probs = torch.softmax(torch_sort_mask(logits, k, p).float(), dim=-1)
    # E = 0 can be drawn (about 2^-24 per entry): 0 / 0 would be NaN, which argmax picks
    race = torch.empty_like(probs).exponential_().clamp_(min=torch.finfo(torch.float32).tiny)
    return torch.argmax(probs / race, dim=-1)


# --------------------------------------------------------------------------------------- FlashInfer
_FI = None
_FI_ERR = None


def _flashinfer():
    global _FI, _FI_ERR
    if _FI is None and _FI_ERR is None:
        try:
            import flashinfer  # noqa: F401
            import flashinfer.sampling  # noqa: F401

            _FI = flashinfer
        except Exception as e:  # ImportError, or a CUDA / build error at import
            _FI_ERR = f"{type(e).__name__}: {e}"
    return _FI


def flashinfer_available() -> tuple[bool, str]:
    """(True, "") if FlashInfer imports, else (False, why)."""
    fi = _flashinfer()
    return (fi is not None), (_FI_ERR or "")


def flashinfer_mask(logits: torch.Tensor, k=None, p=None) -> torch.Tensor:
    """FlashInfer's nearest equivalent of a top-k / top-p mask.

    * k only: ``top_k_mask_logits`` (masked logits; keeps every tie at the k-th value).
    * p involved: FlashInfer has no top-p mask of logits; we time ``softmax`` (float32) followed by
      ``top_p_renorm_probs`` (after ``top_k_mask_logits`` when k is given too). The output is
      renormalised probabilities: kept entries are those > 0.
    """
    fi = _flashinfer()
    if fi is None:
        raise RuntimeError(f"flashinfer unavailable: {_FI_ERR}")
    x = logits
    if k is not None:
        x = fi.sampling.top_k_mask_logits(x, k)
        if p is None:
            return x
    if p is None:
        return x.clone()
    probs = torch.softmax(x.float(), dim=-1)
    return fi.sampling.top_p_renorm_probs(probs, p)


def flashinfer_topk(x: torch.Tensor, k: int):
    """``flashinfer.top_k`` (radix selection), sorted descending like the others."""
    fi = _flashinfer()
    if fi is None:
        raise RuntimeError(f"flashinfer unavailable: {_FI_ERR}")
    return fi.top_k(x, k, sorted=True)


def flashinfer_sample(logits: torch.Tensor, k=None, p=None) -> torch.Tensor:
    """FlashInfer's samplers (rejection sampling): ``top_k_top_p_sampling_from_logits`` when both
    filters are on, else ``top_k_sampling_from_probs`` / ``top_p_sampling_from_probs`` after a
    float32 softmax (included in the time), as its API takes probabilities there."""
    fi = _flashinfer()
    if fi is None:
        raise RuntimeError(f"flashinfer unavailable: {_FI_ERR}")
    if k is not None and p is not None:
        return fi.sampling.top_k_top_p_sampling_from_logits(logits, k, p)
    probs = torch.softmax(logits.float(), dim=-1)
    if k is not None:
        return fi.sampling.top_k_sampling_from_probs(probs, k)
    if p is not None:
        return fi.sampling.top_p_sampling_from_probs(probs, p)
    return fi.sampling.sampling_from_probs(probs)


#: name -> (callable, what its output is: "logits" = masked logits, "probs" = kept where > 0)
MASK_IMPLS = {
    "torch_sort": (torch_sort_mask, "logits"),
    "flashinfer": (flashinfer_mask, None),  # "logits" for k only, "probs" when p is given
}
SELECT_IMPLS = {
    "torch_sort": torch_topk,
    "flashinfer": flashinfer_topk,
}
SAMPLE_IMPLS = {
    "torch_sort": torch_sort_sample,
    "flashinfer": flashinfer_sample,
}
