"""Sampling on the GPU (docs/sampling.md, "GPU path"): torch ops around the exact Triton mask.

Every function takes torch tensors of shape (B, V) on a GPU (or on the CPU under
``TRITON_INTERPRET=1``) and never synchronises with the host: no ``.item()``, no data-dependent
shapes, no Python branch on tensor values, so every call can be captured in a CUDA graph.

How the answer is made exact (float32 / bfloat16 / float16 logits)
-------------------------------------------------------------------
Everything the contract keeps is a *prefix of the rank order* of the scaled logits: the top-k /
top-p kept set; the min-p survivors (weights never increase along the order); the entries of
positive probability; and the prefix that the inverse CDF walks before it stops at the drawn
token. So the sampler works with *counts* of prefixes and turns a count into a set with the mask
kernel's exact top-k:

1. **count** ``n1``: :func:`qrita.backends.triton.ops.top_k_top_p_mask` on float32 scaled logits
   ``(x / t - max)`` (computed in float64, shifted so nothing overflows, rounded to float32), NaN
   replaced by -inf (both rank last and have probability 0, so the count is unchanged), with
   ``fill=NaN``: the kept entries are exactly those that are not NaN afterwards.
2. **rank**: float32 scaling can merge neighbouring logits into new ties, which the kernel would
   break by index, so the *set* comes from a second call with ``k = n1`` on a rank proxy whose
   order is the reference's: the unscaled logits (exact in float32), with the entries whose float64
   scaled value is ±inf, NaN or 0 replaced by that value. -inf and NaN (the tail of the order) are
   placed by index afterwards, -inf before NaN.
3. **min-p** in float64 torch, as the reference does (``w = exp(x/t - max) >= min_p``).
4. **draw**: with one Philox uniform ``u`` per row (:mod:`qrita.backends.triton.philox`), a call
   with ``k = n2`` (the kept count) and ``p = u`` counts the prefix ``n_u`` that the inverse CDF
   walks (the drawn token is the last entry of the top-p(u) prefix); a rank call with ``k = n_u``
   then gives that prefix exactly and the token is its last entry (the smallest rank key; among
   equal values the highest index).

With temperature None or 1 the kernel's own order is the reference's (up to where -inf and NaN sit
in the tail), so steps 2 and 4's rank call are skipped: 2 mask calls for :func:`sample`, 1 for
:func:`top_k_top_p_probs`. In general :func:`sample` costs 3 mask calls (4 with log-probabilities),
the distribution and candidates 2, plus a few elementwise float64 passes. :func:`sample` skips
all of this where a fused kernel applies (docs/sampling.md, "The fused paths"; default on,
``QRITA_FUSED_SAMPLER=0`` turns it off): a scalar k <= 1024 (``launch_fused_sample``), or top-k
and min-p off (``launch_fused_topp_sample``), at a scalar temperature.

float64 logits take an exact stable sort of float64 rank keys instead (the kernel is float32 /
bfloat16 / float16): O(V log V), with float64 cumulative sums, like the reference.
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from qrita.backends.triton import eager_graph, ops, philox
from qrita.backends.triton.launch import (
    launch_fused_sample,
    launch_fused_topp_sample,
    launch_reject_topp_sample,
)
from qrita.backends.triton.one_launch import SORT_MAX
from qrita.backends.triton.philox import uniforms as philox_uniforms
from qrita.reference.sampling import Candidates

__all__ = [
    "Candidates",
    "SampleResult",
    "uniforms",
    "sample",
    "sample_with_uniforms",
    "sample_with_distribution",
    "top_k_top_p_probs",
    "candidates",
    "keep_mask",
]

Row = int | float | torch.Tensor | None

_NAN = float("nan")
_INT64_MIN = -(2**63)
_SUM_BLOCK = 1024

uniforms = philox_uniforms


class SampleResult(NamedTuple):
    """Result of :func:`sample_with_distribution`.

    ``tokens`` (B,) int64; ``logprobs`` (B,) float32 (float64 for float64 logits); ``probs``
    (B, V) of the same float dtype; ``candidates`` a :class:`Candidates` of tensors.
    """

    tokens: torch.Tensor
    logprobs: torch.Tensor
    probs: torch.Tensor
    candidates: Candidates


# ---------------------------------------------------------------------------------------------
# a batch-invariant row sum


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, V, stride, BLOCK: tl.constexpr):
    """out[row] = sum of x[row, :V] (float64) in a fixed order that does not depend on B."""
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + offs, mask=offs < V, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def _row_sum(w: torch.Tensor) -> torch.Tensor:
    """Row sums of a (B, V) float64 tensor, bit-identical whatever the batch (torch's reductions
    may change their order with the shape)."""
    w = w.contiguous()
    batch, vocab = w.shape
    out = torch.empty(batch, dtype=torch.float64, device=w.device)
    if batch:
        block = min(_SUM_BLOCK, triton.next_power_of_2(vocab))
        _row_sum_kernel[(batch,)](w, out, vocab, w.stride(0), BLOCK=block)
    return out


# ---------------------------------------------------------------------------------------------
# per-row parameters


def _check_logits(x: torch.Tensor) -> torch.Tensor:
    if x.dim() != 2:
        raise ValueError(f"logits must be 2-D (B, V) here, got shape {tuple(x.shape)}")
    if x.dtype not in ops.SUPPORTED_DTYPES and x.dtype != torch.float64:
        raise TypeError(
            f"logits dtype must be float32, bfloat16, float16 or float64, got {x.dtype}"
        )
    if x.shape[1] == 0:
        raise ValueError(f"logits must have V >= 1, got shape {tuple(x.shape)}")
    ops._check_device(x)
    return x if x.stride(-1) == 1 else x.contiguous()


def _rows(v: torch.Tensor, batch: int) -> torch.Tensor:
    """A per-row tensor as (B,) (a (1,) or () tensor is broadcast)."""
    return v.reshape(-1).expand(batch)


def _kernel_k(k: Row) -> int | torch.Tensor | None:
    if isinstance(k, torch.Tensor):
        k = k.reshape(-1)
        return k if k.dtype in (torch.int32, torch.int64) else k.to(torch.int64)
    return None if k is None else int(k)


def _kernel_p(p: Row) -> float | torch.Tensor | None:
    if isinstance(p, torch.Tensor):
        p = p.reshape(-1)
        return p.to(torch.float32) if p.dtype in (torch.float16, torch.bfloat16) else p
    return None if p is None else float(p)


def _min_p_rows(min_p: Row, batch: int) -> float | torch.Tensor | None:
    """None (off), a Python float in (0, 1], or (B,) float64 with NaN where off."""
    if min_p is None:
        return None
    if isinstance(min_p, torch.Tensor):
        m = _rows(min_p, batch).to(torch.float64)
        m = torch.where(m > 0, m, torch.full_like(m, _NAN))
        return torch.clamp(m, max=1.0)  # NaN stays NaN
    m = float(min_p)
    if not m > 0:
        return None
    return min(m, 1.0)


class _Temperature(NamedTuple):
    scalar: float | None  # the temperature when it is one Python value for every row
    rows: torch.Tensor | None  # (B,) float64 divisor (1 on greedy rows) for per-row values
    greedy: torch.Tensor | None  # (B,) bool, None when no row can be greedy
    all_greedy: bool


def _clamped(temperature: Row) -> Row:
    """Temperatures > 0 clamped into [FUSED_T_MIN, FUSED_T_MAX] (docs/sampling.md item 1: as
    :func:`qrita.reference.sampling.row_sampling_params`); tensors as float64. Others unchanged."""
    if isinstance(temperature, torch.Tensor):
        t = temperature.to(torch.float64)
        return torch.where(t > 0, t.clamp(FUSED_T_MIN, FUSED_T_MAX), t)
    if temperature is not None and float(temperature) > 0:
        return min(max(float(temperature), FUSED_T_MIN), FUSED_T_MAX)
    return temperature


def _temperature(temperature: Row, batch: int) -> _Temperature:
    if temperature is None:
        return _Temperature(1.0, None, None, False)
    if isinstance(temperature, torch.Tensor):
        t = _rows(temperature, batch).to(torch.float64)
        greedy = ~(t > 0)  # 0, negative, NaN
        return _Temperature(None, torch.where(greedy, torch.ones_like(t), t), greedy, False)
    t = float(temperature)
    if not t > 0:
        return _Temperature(None, None, None, True)
    return _Temperature(t, None, None, False)


def _scaled(x: torch.Tensor, temp: _Temperature) -> torch.Tensor:
    """x / t in float64 from the exact float64 upcast (docs/sampling.md step 1)."""
    x64 = x.to(torch.float64)
    if temp.rows is not None:
        return x64 / temp.rows[:, None]
    if temp.scalar == 1.0:
        return x64
    return x64 / temp.scalar


# ---------------------------------------------------------------------------------------------
# small building blocks (all (B, V), no host synchronisation)


def _arange(x: torch.Tensor) -> torch.Tensor:
    return torch.arange(x.shape[-1], device=x.device)


def _first_of_order(keys: torch.Tensor) -> torch.Tensor:
    """Index of the first entry of each row's order (the largest key, ties by lower index)."""
    idx = _arange(keys)
    top = keys.amax(dim=-1, keepdim=True)
    return torch.where(keys == top, idx, keys.shape[-1]).amin(dim=-1)


def _last_of(member: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Index of the last entry in rank order among ``member``: the smallest key, and among equal
    keys the highest index (-1 for an empty row)."""
    idx = _arange(keys)
    big = torch.iinfo(keys.dtype).max
    low = torch.where(member, keys, big).amin(dim=-1, keepdim=True)
    return torch.where(member & (keys == low), idx, -1).amax(dim=-1)


def _kept_by_kernel(values: torch.Tensor, k, p) -> torch.Tensor:
    """Boolean mask of the entries the Triton mask keeps; ``values`` must hold no NaN."""
    out = ops.top_k_top_p_mask(values, k, p, fill=_NAN)
    return out == out


def _prefix(head_kept: torch.Tensor, n: torch.Tensor, neginf: torch.Tensor,
            nan: torch.Tensor) -> torch.Tensor:
    """The first ``n`` entries of the reference order, given which entries above the tail (finite
    or +inf) a kernel call kept; the tail is -inf entries by index, then NaN entries by index."""
    head = head_kept & ~neginf & ~nan
    rest = n - head.sum(dim=-1)
    ninf_rank = torch.cumsum(neginf, dim=-1)
    nan_rank = torch.cumsum(nan, dim=-1)
    tail = neginf & (ninf_rank <= rest[:, None])
    tail |= nan & (nan_rank <= (rest - ninf_rank[:, -1])[:, None])
    return head | tail


def _one_hot(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return _arange(x)[None, :] == idx[:, None]


# ---------------------------------------------------------------------------------------------
# the kernel path (float32 / bfloat16 / float16)


class _Prepared:
    """Scaled values, weights and the kernel inputs of one call (docs/sampling.md steps 1-3)."""

    def __init__(self, x: torch.Tensor, k: Row, p: Row, min_p: Row, temp: _Temperature):
        batch = x.shape[0]
        self.x = x
        self.k = _kernel_k(k)
        self.p = _kernel_p(p)
        self.temp = temp
        # temperature None / 1: the kernel's order is the reference's
        self.fast = temp.scalar == 1.0
        s = _scaled(x, temp)
        finite = torch.isfinite(s)
        posinf = s == math.inf
        has_posinf = posinf.any(dim=-1)
        has_finite = finite.any(dim=-1)
        row_max = torch.where(finite, s, -math.inf).amax(dim=-1)
        shift = torch.where(has_finite, row_max, torch.zeros_like(row_max))
        #: mass defined: some +inf or finite entry (docs/sampling.md step 4)
        self.defined = has_posinf | has_finite
        #: unnormalised float64 weights, largest 1: the +inf entries if any, else exp(s - max)
        self.w = torch.where(
            has_posinf[:, None],
            posinf.to(torch.float64),
            torch.where(finite, torch.exp(s - shift[:, None]), torch.zeros_like(s)),
        )
        mp = _min_p_rows(min_p, batch)
        #: min-p survivors over the whole row (a prefix of the order), None when off
        self.min_p_ok: torch.Tensor | None = None
        if isinstance(mp, torch.Tensor):
            self.min_p_ok = (self.w >= mp[:, None]) | mp.isnan()[:, None] | ~self.defined[:, None]
        elif mp is not None:
            self.min_p_ok = (self.w >= mp) | ~self.defined[:, None]
        if self.fast:
            self.rank = x  # the rank proxy: the logits themselves
            self.counted = torch.where(torch.isnan(x), -math.inf, x)
            self.rank_in = self.counted
        else:
            nan_s = torch.isnan(s)
            # float32 values whose order is that of the float64 scaled values
            x32 = x.to(torch.float32)
            rank = torch.where(s == 0, torch.zeros_like(x32), x32)
            rank = torch.where(torch.isinf(s) | nan_s, s.to(torch.float32), rank)
            self.rank = rank
            self.rank_in = torch.where(nan_s, -math.inf, rank)
            shifted = torch.where(nan_s, -math.inf, s - shift[:, None])
            self.counted = shifted.to(torch.float32)
        self.neginf = self.rank == -math.inf
        self.nan = torch.isnan(self.rank)
        self.keys = ops.rank_keys(self.rank, smallest=False)
        #: first entry of the scaled order: the token of undefined-mass rows, and of greedy rows
        #: (their logits are divided by 1, so it is the first entry of the unscaled order)
        self.first = _first_of_order(self.keys)
        self.greedy = temp.greedy

    def count_and_kept(self, want_set: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Top-k then top-p: the kept count n1 (B,) and, if ``want_set``, the kept set."""
        kept = _kept_by_kernel(self.counted, self.k, self.p)
        n1 = kept.sum(dim=-1)
        if not want_set:
            return n1, None
        if not self.fast:
            kept = _kept_by_kernel(self.rank_in, n1, None)
        return n1, _prefix(kept, n1, self.neginf, self.nan)

    def final_count(self, n1: torch.Tensor) -> torch.Tensor:
        """Kept count after min-p (min-p survivors are a prefix of the order)."""
        if self.min_p_ok is None:
            return n1
        return torch.minimum(n1, self.min_p_ok.sum(dim=-1))

    def final_set(self, kept: torch.Tensor) -> torch.Tensor:
        return kept if self.min_p_ok is None else kept & self.min_p_ok

    def special_rows(self) -> torch.Tensor:
        """Rows whose distribution is one-hot: greedy rows and undefined-mass rows."""
        return ~self.defined if self.greedy is None else self.greedy | ~self.defined

    def special_token(self) -> torch.Tensor:
        """The token of greedy and undefined-mass rows: the first entry of the order."""
        return self.first

    def draw(self, u: torch.Tensor, n2: torch.Tensor) -> torch.Tensor:
        """The token of the inverse CDF over the first n2 entries of the order (docs step 5)."""
        positive = self.w > 0  # a prefix of the order: zero-probability entries are never drawn
        n_pos = torch.minimum(n2, positive.sum(dim=-1))
        walked = _kept_by_kernel(self.counted, n2, u)
        if self.fast:
            prefix = walked & positive  # the first min(n_u, n_pos) entries, exactly
        else:
            n_u = torch.clamp(torch.minimum(walked.sum(dim=-1), n_pos), min=1)
            prefix = _kept_by_kernel(self.rank_in, n_u, None)
        token = _last_of(prefix, self.keys)
        return torch.where(self.special_rows(), self.special_token(), token)

    def distribution(self, kept_final: torch.Tensor) -> torch.Tensor:
        """float64 probabilities over the kept set (one-hot on special rows), (B, V)."""
        w = torch.where(kept_final, self.w, torch.zeros_like(self.w))
        total = _row_sum(w)
        safe = torch.where(total > 0, total, torch.ones_like(total))
        probs = w / safe[:, None]
        return torch.where(self.special_rows()[:, None],
                           _one_hot(self.x, self.special_token()).to(torch.float64), probs)

    def support(self, kept_final: torch.Tensor) -> torch.Tensor:
        """The candidates' set: the kept set; greedy rows keep their one token."""
        if self.greedy is None:
            return kept_final
        return torch.where(self.greedy[:, None], _one_hot(self.x, self.first), kept_final)


def _greedy_only(x: torch.Tensor) -> torch.Tensor:
    return _first_of_order(ops.rank_keys(x, smallest=False))


# ---------------------------------------------------------------------------------------------
# the sort path (float64 logits)


class _Sorted(NamedTuple):
    order: torch.Tensor  # (B, V) int64: the scaled order
    keep: torch.Tensor  # (B, V) bool, in sorted positions: the candidates' set
    probs: torch.Tensor  # (B, V) float64, in sorted positions
    weights: torch.Tensor  # (B, V) float64, sorted, 0 outside the kept set
    total: torch.Tensor  # (B,) float64
    special: torch.Tensor  # (B,) bool: greedy or undefined mass


def _sorted_rows(x: torch.Tensor, k: Row, p: Row, min_p: Row, temp: _Temperature) -> _Sorted:
    """docs/sampling.md steps 1-4 by an exact stable sort of the scaled float64 values."""
    batch, vocab = x.shape
    dev = x.device
    if temp.all_greedy:
        s = x.to(torch.float64)
        greedy = torch.ones(batch, dtype=torch.bool, device=dev)
    else:
        s = _scaled(x, temp)
        greedy = temp.greedy if temp.greedy is not None else torch.zeros(
            batch, dtype=torch.bool, device=dev)
    order = torch.sort(ops.rank_keys(s, smallest=False), dim=-1, descending=True,
                       stable=True).indices
    sv = s.gather(-1, order)
    pos = torch.arange(vocab, device=dev)
    # rules 2-3 per row (oracle.row_params)
    if k is None:
        k_rows = torch.zeros(batch, dtype=torch.int64, device=dev)
    elif isinstance(k, torch.Tensor):
        k_rows = _rows(k, batch).to(torch.int64)
    else:
        k_rows = torch.full((batch,), int(k), dtype=torch.int64, device=dev)
    k_rows = torch.where((k_rows <= 0) | (k_rows >= vocab), vocab, k_rows)
    if p is None:
        p_rows = torch.full((batch,), _NAN, dtype=torch.float64, device=dev)
    elif isinstance(p, torch.Tensor):
        p_rows = _rows(p, batch).to(torch.float64)
    else:
        p_rows = torch.full((batch,), float(p), dtype=torch.float64, device=dev)
    zero_p = p_rows <= 0
    k_rows = torch.where(zero_p, 1, k_rows)
    p_on = (p_rows < 1) & ~zero_p  # NaN: off
    survivors = pos[None, :] < k_rows[:, None]
    # weights in sorted order; the first entry decides +inf / finite / undefined
    first = sv[:, 0]
    has_posinf = first == math.inf
    defined = has_posinf | torch.isfinite(first)
    shift = torch.where(torch.isfinite(first), first, torch.zeros_like(first))
    finite = torch.isfinite(sv)
    w = torch.where(has_posinf[:, None], (sv == math.inf).to(torch.float64),
                    torch.where(finite, torch.exp(sv - shift[:, None]), torch.zeros_like(sv)))
    # top-p over the survivors: entry j kept iff the mass before it is < p
    ws = torch.where(survivors, w, torch.zeros_like(w))
    csum = torch.cumsum(ws, dim=-1)
    total = csum[:, -1:]
    before = torch.cat([torch.zeros_like(csum[:, :1]), csum[:, :-1]], dim=-1)
    safe_total = torch.where(total > 0, total, torch.ones_like(total))
    in_p = before / safe_total < p_rows[:, None]
    keep = survivors & (in_p | ~(p_on & defined)[:, None])
    mp = _min_p_rows(min_p, batch)
    if isinstance(mp, torch.Tensor):
        keep &= (w >= mp[:, None]) | mp.isnan()[:, None] | ~defined[:, None]
    elif mp is not None:
        keep &= (w >= mp) | ~defined[:, None]
    special = greedy | ~defined
    keep = torch.where(greedy[:, None], pos[None, :] == 0, keep)
    wk = torch.where(keep, w, torch.zeros_like(w))
    tot = wk.sum(dim=-1)
    probs = wk / torch.where(tot > 0, tot, torch.ones_like(tot))[:, None]
    probs = torch.where(special[:, None], (pos[None, :] == 0).to(torch.float64), probs)
    return _Sorted(order, keep, probs, wk, tot, special)


def _sorted_draw(r: _Sorted, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Token and float64 log-probability: the first kept entry with c_j > u * c_last."""
    csum = torch.cumsum(r.weights, dim=-1)
    target = u.to(torch.float64) * r.total
    j = (csum <= target[:, None]).sum(dim=-1)
    j = torch.minimum(j, r.keep.sum(dim=-1) - 1)
    j = torch.where(r.special, torch.zeros_like(j), j)
    token = r.order.gather(-1, j[:, None])[:, 0]
    w_tok = r.weights.gather(-1, j[:, None])[:, 0]
    safe = torch.where(r.total > 0, r.total, torch.ones_like(r.total))
    logp = torch.where(r.special, torch.zeros_like(w_tok), torch.log(w_tok / safe))
    return token, logp


def _sorted_candidates(r: _Sorted, width: int) -> Candidates:
    batch, vocab = r.order.shape
    counts = r.keep.sum(dim=-1)
    valid = torch.arange(vocab, device=r.order.device)[None, :] < counts[:, None]
    idx = torch.where(valid, r.order, -1)
    probs = torch.where(valid, r.probs, torch.zeros_like(r.probs))
    return Candidates(*_fit(idx, probs, width), counts)


def _unsort(r: _Sorted) -> torch.Tensor:
    return torch.zeros_like(r.probs).scatter(-1, r.order, r.probs)


# ---------------------------------------------------------------------------------------------
# shared result shaping


def _out_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _fit(idx: torch.Tensor, probs: torch.Tensor, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Cut or pad (B, V) candidate columns to ``width``."""
    vocab = idx.shape[1]
    if width <= vocab:
        return idx[:, :width].contiguous(), probs[:, :width].contiguous()
    pad = width - vocab
    idx = torch.nn.functional.pad(idx, (0, pad), value=-1)
    probs = torch.nn.functional.pad(probs, (0, pad), value=0.0)
    return idx, probs


def _candidates_from(prep: _Prepared, support: torch.Tensor, probs: torch.Tensor,
                     width: int) -> Candidates:
    """Kept entries in rank order: a stable descending sort of rank keys (kept entries first)."""
    keys = torch.where(support, prep.keys.to(torch.int64), _INT64_MIN)
    order = torch.sort(keys, dim=-1, descending=True, stable=True).indices
    counts = support.sum(dim=-1)
    valid = torch.arange(order.shape[1], device=order.device)[None, :] < counts[:, None]
    idx = torch.where(valid, order, -1)
    pr = torch.where(valid, probs.gather(-1, order), torch.zeros_like(probs))
    return Candidates(*_fit(idx, pr, width), counts)


def _width(max_candidates: int | None, vocab: int) -> int:
    if max_candidates is None:
        return vocab
    if int(max_candidates) < 1:
        raise ValueError(f"max_candidates must be >= 1, got {max_candidates}")
    return int(max_candidates)


FUSED_T_MIN, FUSED_T_MAX = 1e-30, 1e30  # temperatures whose x / t keeps the row's own order


def _fused_enabled(x: torch.Tensor, temperature: Row) -> bool:
    """The fused samplers' shared conditions: ``QRITA_FUSED_SAMPLER`` not ``0`` (the default is
    on; 0 forces the multi-call path), float32 / bfloat16 / float16 logits, and a temperature that
    is None or one number in [1e-30, 1e30] (per-row temperatures could merge entries into new
    ties by overflow or underflow, which only the multi-call path handles)."""
    if os.environ.get("QRITA_FUSED_SAMPLER", "1") == "0" or x.dtype not in ops.SUPPORTED_DTYPES:
        return False
    if isinstance(temperature, torch.Tensor):
        return False
    return temperature is None or FUSED_T_MIN <= float(temperature) <= FUSED_T_MAX


def _fused(x: torch.Tensor, k: Row, temperature: Row) -> bool:
    """Whether :func:`sample_with_uniforms` takes the fused top-k-bounded sampler: a scalar k
    with 1 <= k <= SORT_MAX and k < V (and :func:`_fused_enabled`); any p and min-p."""
    if k is None or isinstance(k, torch.Tensor) or not 1 <= int(k) <= min(SORT_MAX, x.shape[1] - 1):
        return False
    return _fused_enabled(x, temperature)


def _fused_topp(x: torch.Tensor, k: Row, min_p: Row, temperature: Row) -> bool:
    """Whether :func:`sample_with_uniforms` takes the fused top-p sampler: top-k off (None, or a
    scalar k <= 0 or >= V), min-p off (None), any p (and :func:`_fused_enabled`)."""
    if isinstance(k, torch.Tensor) or (k is not None and 0 < int(k) < x.shape[1]):
        return False
    return min_p is None and _fused_enabled(x, temperature)


def _reject_rows(x: torch.Tensor, k: Row) -> torch.Tensor | bool:
    """Which rows :func:`sample` draws by rejection (docs/sampling.md, "Which draw"): those whose
    top-k is off (k None, <= 0 or >= V) of float32 / bfloat16 / float16 logits. True: every row;
    False: none; else a (B,) bool tensor."""
    batch, vocab = x.shape
    if x.dtype not in ops.SUPPORTED_DTYPES:
        return False
    if k is None:
        return True
    if isinstance(k, torch.Tensor):
        k_rows = _rows(k, batch)
        return (k_rows <= 0) | (k_rows >= vocab)
    return not 0 < int(k) < vocab


def _row_param(v: Row, batch: int) -> float | torch.Tensor | None:
    """A p / min-p for the fused kernel: None, a Python float, or a contiguous (B,) tensor."""
    if isinstance(v, torch.Tensor):
        return _rows(v, batch).contiguous()
    return None if v is None else float(v)


def _as_uniforms(u: float | torch.Tensor, batch: int, device: torch.device) -> torch.Tensor:
    if isinstance(u, torch.Tensor):
        return _rows(u, batch).to(torch.float32).contiguous()
    return torch.full((batch,), float(u), dtype=torch.float32, device=device)


def _greedy_result(x: torch.Tensor, width: int) -> SampleResult:
    token = _greedy_only(x)
    hot = _one_hot(x, token)
    probs = hot.to(_out_dtype(x))
    idx = torch.full(x.shape, -1, dtype=torch.int64, device=x.device)
    idx[:, 0] = token
    pr = torch.zeros(x.shape, dtype=_out_dtype(x), device=x.device)
    pr[:, 0] = 1.0
    counts = torch.ones(x.shape[0], dtype=torch.int64, device=x.device)
    logp = torch.zeros(x.shape[0], dtype=_out_dtype(x), device=x.device)
    return SampleResult(token, logp, probs, Candidates(*_fit(idx, pr, width), counts))


# ---------------------------------------------------------------------------------------------
# public functions


def sample_with_distribution(
    logits: torch.Tensor,
    uniforms: float | torch.Tensor,
    k: Row = None,
    p: Row = None,
    *,
    min_p: Row = None,
    temperature: Row = None,
    max_candidates: int | None = None,
) -> SampleResult:
    """Tokens drawn with the given uniforms, with their log-probabilities, the distribution and
    the candidates, from one shared computation of the kept set.

    Parameters
    ----------
    logits : torch.Tensor (B, V), float32 / bfloat16 / float16 / float64, on a GPU
    uniforms : float or float tensor (B,) on logits' device, values in [0, 1)
    k : None, int, or integer tensor (B,); as in :func:`qrita.backends.triton.ops.top_k_top_p_mask`
    p : None, float, or floating tensor (B,)
    min_p : None, float, or floating tensor (B,) (None, NaN or <= 0: off; > 1 acts as 1)
    temperature : None, float >= 0, or floating tensor (B,) (not > 0: greedy)
    max_candidates : None (V) or int >= 1, the width M of the candidates

    Returns
    -------
    SampleResult
        ``tokens`` (B,) int64; ``logprobs`` (B,) and ``probs`` (B, V) float32 (float64 for float64
        logits); ``candidates`` with ``indices`` (B, M) int64, ``probs`` (B, M), ``counts`` (B,)
        int64.
    """
    x = _check_logits(logits)
    temperature = _clamped(temperature)
    batch, vocab = x.shape
    width = _width(max_candidates, vocab)
    temp = _temperature(temperature, batch)
    if temp.all_greedy:
        return _greedy_result(x, width)
    u = _as_uniforms(uniforms, batch, x.device)
    if x.dtype == torch.float64:
        r = _sorted_rows(x, k, p, min_p, temp)
        token, logp = _sorted_draw(r, u)
        return SampleResult(token, logp, _unsort(r), _sorted_candidates(r, width))
    prep = _Prepared(x, k, p, min_p, temp)
    n1, kept = prep.count_and_kept(want_set=True)
    assert kept is not None
    final = prep.final_set(kept)
    n2 = torch.clamp(final.sum(dim=-1), min=1)
    token = prep.draw(u, n2)
    probs64 = prep.distribution(final)
    w_tok = probs64.gather(-1, token[:, None])[:, 0]
    logp = torch.where(prep.special_rows(), torch.zeros_like(w_tok), torch.log(w_tok))
    cands = _candidates_from(prep, prep.support(final), probs64, width)
    out = _out_dtype(x)
    cands = Candidates(cands.indices, cands.probs.to(out), cands.counts)
    return SampleResult(token, logp.to(out), probs64.to(out), cands)


def sample_with_uniforms(
    logits: torch.Tensor,
    uniforms: float | torch.Tensor,
    k: Row = None,
    p: Row = None,
    *,
    min_p: Row = None,
    temperature: Row = None,
    return_logprob: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Tokens drawn with the given uniforms (the GPU twin of
    :func:`qrita.reference.sampling.sample_with_uniforms`).

    Parameters
    ----------
    logits : torch.Tensor (B, V), float32 / bfloat16 / float16 / float64, on a GPU
    uniforms : float or float tensor (B,) on logits' device, values in [0, 1)
    k, p, min_p, temperature : as in :func:`sample_with_distribution`
    return_logprob : also return the log-probabilities

    Returns
    -------
    tokens : torch.Tensor (B,) int64
    logprobs : torch.Tensor (B,) float32 (float64 for float64 logits), with ``return_logprob``
    """
    x = _check_logits(logits)
    temperature = _clamped(temperature)
    batch = x.shape[0]
    temp = _temperature(temperature, batch)
    out = _out_dtype(x)
    if temp.all_greedy:
        token = _greedy_only(x)
        logp = torch.zeros(batch, dtype=out, device=x.device)
        return (token, logp) if return_logprob else token
    u = _as_uniforms(uniforms, batch, x.device)
    if x.dtype == torch.float64:
        token, logp = _sorted_draw(_sorted_rows(x, k, p, min_p, temp), u)
        return (token, logp) if return_logprob else token
    if _fused(x, k, temperature):
        token, logp = launch_fused_sample(x, int(k), u, temperature, _row_param(p, batch),
                                          _row_param(min_p, batch))
        return (token, logp.to(out)) if return_logprob else token
    if _fused_topp(x, k, min_p, temperature):
        token, logp = launch_fused_topp_sample(x, u, temperature, _row_param(p, batch),
                                               logprob=return_logprob)
        return (token, logp.to(out)) if return_logprob else token
    prep = _Prepared(x, k, p, min_p, temp)
    n1, kept = prep.count_and_kept(want_set=return_logprob)
    if kept is None:
        n2 = torch.clamp(prep.final_count(n1), min=1)
        return prep.draw(u, n2)
    final = prep.final_set(kept)
    n2 = torch.clamp(final.sum(dim=-1), min=1)
    token = prep.draw(u, n2)
    w = torch.where(final, prep.w, torch.zeros_like(prep.w))
    total = _row_sum(w)
    w_tok = prep.w.gather(-1, token[:, None])[:, 0]
    safe = torch.where(total > 0, total, torch.ones_like(total))
    logp = torch.where(prep.special_rows(), torch.zeros_like(w_tok), torch.log(w_tok / safe))
    return token, logp.to(out)


def sample(
    logits: torch.Tensor,
    k: Row = None,
    p: Row = None,
    *,
    min_p: Row = None,
    temperature: Row = None,
    seed: int | torch.Tensor | None = None,
    offset: int | torch.Tensor | None = None,
    return_logprob: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """One token per row, drawn with Philox uniforms (docs/sampling.md); no host synchronisation.

    Rows whose top-k is off (float32 / bfloat16 / float16 logits) take the rejection draw
    (:func:`qrita.backends.triton.launch.launch_reject_topp_sample`; reference
    :func:`qrita.reference.sampling.sample_topp_rejection`), the others the rank-order draw of
    :func:`sample_with_uniforms`; :func:`qrita.reference.sampling.sample` is the twin.

    Parameters
    ----------
    logits : torch.Tensor (B, V), float32 / bfloat16 / float16 / float64, on a GPU
    k, p, min_p, temperature : as in :func:`sample_with_distribution`
    seed : None, int in [0, 2**64), or integer tensor (B,) on logits' device
        The Philox key (values read as uint64 bit patterns). None: a fresh host-side random seed,
        spread over the rows on the device (not reproducible).
    offset : None (0), int in [0, 2**64), or integer tensor (B,) on logits' device
    return_logprob : also return the log-probabilities

    Returns
    -------
    tokens : torch.Tensor (B,) int64
    logprobs : torch.Tensor (B,) float32 (float64 for float64 logits), with ``return_logprob``
    """
    x = _check_logits(logits)
    static = (eager_graph.SAMPLE and not eager_graph.SAMPLE_ADDRESS
              and eager_graph.usable(x))
    if static or (eager_graph.SAMPLE and eager_graph.usable_by_address(x)):
        # QRITA_EAGER_GRAPHS_SAMPLE (default on): the same launches, replayed from a graph
        # qrita captured; the seed and offset go in as values (one pinned host buffer, copied
        # into the graph's static buffer), so a new seed or offset is not a new key; above the
        # static graphs' batches (QRITA_EAGER_GRAPHS_ADDRESS_ROWS), or at every batch with
        # QRITA_EAGER_GRAPHS_SAMPLE_ADDRESS, the logits by address
        counters, n_seed = _host_counters(seed, offset, x.shape[0], x.device)
        return eager_graph.cached_call(
            "sample", _sample_with_counters,
            (x, k, p, min_p, temperature,
             seed if isinstance(seed, torch.Tensor) else None,
             offset if isinstance(offset, torch.Tensor) else None,
             counters, n_seed, return_logprob),
            by_address=() if static else (0,))
    return _sample_launches(x, k, p, min_p, temperature, seed, offset, return_logprob)


def _host_counters(seed: int | torch.Tensor | None, offset: int | torch.Tensor | None,
                   batch: int, device: torch.device) -> tuple[torch.Tensor | None, int]:
    """The seed and offset values given on the host, as one int64 tensor of uint64 bit
    patterns (pinned, for a CUDA ``device``) and how many of its words are the seed's: a
    Python int as one value for every row, None as the seed as a fresh host seed plus
    ``row x philox.ROW_SEED_STEP`` per row (the kernels' SEED_MODE 2, B words), None as the
    offset 0; tensors are not in it (None when both are tensors). Copied to the device with no
    host synchronisation (``eager_graph.cached_call`` copies it into its static buffer,
    :func:`_sample_with_counters` otherwise; torch's pinned-memory cache keeps the block until
    the copy has run)."""
    host: list[int] = []
    if seed is None:
        base = philox.fresh_seed()
        host += [((base + row * philox.ROW_SEED_STEP + 2**63) % 2**64) - 2**63 for row in range(batch)]
    elif not isinstance(seed, torch.Tensor):
        host.append(philox._u64_scalar_bits(seed))
    n_seed = len(host)
    if not isinstance(offset, torch.Tensor):
        host.append(philox._u64_scalar_bits(offset))
    if not host:
        return None, 0
    return torch.tensor(host, dtype=torch.int64, pin_memory=device.type == "cuda"), n_seed


def _sample_with_counters(x: torch.Tensor, k: Row, p: Row, min_p: Row, temperature: Row,
                          seed: torch.Tensor | None, offset: torch.Tensor | None,
                          counters: torch.Tensor | None, n_seed: int,
                          return_logprob: bool) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """:func:`_sample_launches` with the seed and offset given as tensors (``seed`` /
    ``offset``) or, where those are None, as words of ``counters`` (:func:`_host_counters`: the
    seed's ``n_seed`` words, then the offset's), which are moved to x's device first if they
    are not there (a call that does not replay; a graph's static copy is there already)."""
    if counters is not None and counters.device != x.device:
        counters = counters.to(x.device, non_blocking=True)
    seeds = seed if seed is not None else counters[:n_seed]
    offsets = offset if offset is not None else counters[n_seed:]
    return _sample_launches(x, k, p, min_p, temperature, seeds, offsets, return_logprob)


def _sample_launches(x: torch.Tensor, k: Row, p: Row, min_p: Row, temperature: Row,
                     seed: int | torch.Tensor | None, offset: int | torch.Tensor | None,
                     return_logprob: bool) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """:func:`sample` on checked (B, V) logits: its launches (what :mod:`.eager_graph`
    captures)."""
    temperature = _clamped(temperature)
    batch = x.shape[0]
    reject = _reject_rows(x, k)
    temp = _temperature(temperature, batch)
    if reject is False or temp.all_greedy:
        u = philox_uniforms(seed, offset, batch, x.device)
        return sample_with_uniforms(x, u, k, p, min_p=min_p, temperature=temperature,
                                    return_logprob=return_logprob)
    token = launch_reject_topp_sample(x, temperature, _row_param(p, batch), seed, offset,
                                      _row_param(min_p, batch))
    logp = None
    if reject is not True:  # per-row k: the rank-order draw where top-k is on
        u = philox_uniforms(seed, offset, batch, x.device)
        other = sample_with_uniforms(x, u, k, p, min_p=min_p, temperature=temperature,
                                     return_logprob=return_logprob)
        other_token, logp = other if return_logprob else (other, None)
        token = torch.where(reject, token, other_token)
    if not return_logprob:
        return token
    # the drawn token's log-probability under the distribution (float64, as the reference)
    prep, _, probs64 = _probs_and_support(x, k, p, min_p, temp)
    w_tok = probs64.gather(-1, token[:, None])[:, 0]
    lp = torch.where(prep.special_rows(), torch.zeros_like(w_tok), torch.log(w_tok))
    if logp is not None:
        lp = torch.where(reject, lp, logp.to(lp.dtype))
    return token, lp.to(_out_dtype(x))


def _probs_and_support(x: torch.Tensor, k: Row, p: Row, min_p: Row,
                       temp: _Temperature) -> tuple[_Prepared, torch.Tensor, torch.Tensor]:
    prep = _Prepared(x, k, p, min_p, temp)
    _, kept = prep.count_and_kept(want_set=True)
    assert kept is not None
    final = prep.final_set(kept)
    return prep, final, prep.distribution(final)


def top_k_top_p_probs(
    logits: torch.Tensor,
    k: Row = None,
    p: Row = None,
    *,
    temperature: Row = None,
    min_p: Row = None,
) -> torch.Tensor:
    """The distribution :func:`sample` draws from (docs/sampling.md step 4).

    Parameters
    ----------
    logits : torch.Tensor (B, V), float32 / bfloat16 / float16 / float64, on a GPU
    k, p, temperature, min_p : as in :func:`sample_with_distribution`

    Returns
    -------
    torch.Tensor (B, V), float32 (float64 for float64 logits): renormalised over the kept set,
    0 elsewhere; one-hot on greedy and undefined-mass rows.
    """
    x = _check_logits(logits)
    temperature = _clamped(temperature)
    temp = _temperature(temperature, x.shape[0])
    if temp.all_greedy:
        return _one_hot(x, _greedy_only(x)).to(_out_dtype(x))
    if x.dtype == torch.float64:
        return _unsort(_sorted_rows(x, k, p, min_p, temp))
    _, _, probs = _probs_and_support(x, k, p, min_p, temp)
    return probs.to(_out_dtype(x))


def candidates(
    logits: torch.Tensor,
    k: Row = None,
    p: Row = None,
    *,
    temperature: Row = None,
    min_p: Row = None,
    max_candidates: int | None = None,
) -> Candidates:
    """Per row, the kept entries in rank order with their probabilities, packed to the left.

    Parameters
    ----------
    logits : torch.Tensor (B, V), float32 / bfloat16 / float16 / float64, on a GPU
    k, p, temperature, min_p : as in :func:`sample_with_distribution`
    max_candidates : None (V) or int >= 1, the width M

    Returns
    -------
    Candidates
        ``indices`` (B, M) int64, -1 after the kept entries; ``probs`` (B, M) float32 (float64
        for float64 logits), 0 after them; ``counts`` (B,) int64 (may exceed M).
    """
    x = _check_logits(logits)
    temperature = _clamped(temperature)
    width = _width(max_candidates, x.shape[1])
    temp = _temperature(temperature, x.shape[0])
    if temp.all_greedy:
        return _greedy_result(x, width).candidates
    if x.dtype == torch.float64:
        return _sorted_candidates(_sorted_rows(x, k, p, min_p, temp), width)
    prep, final, probs = _probs_and_support(x, k, p, min_p, temp)
    c = _candidates_from(prep, prep.support(final), probs, width)
    return Candidates(c.indices, c.probs.to(_out_dtype(x)), c.counts)


def keep_mask(
    logits: torch.Tensor,
    k: Row = None,
    p: Row = None,
    *,
    temperature: Row = None,
    min_p: Row = None,
) -> torch.Tensor:
    """The kept set: the entries :func:`sample` can draw, zero-probability kept entries included
    (the candidates' set), as :func:`qrita.reference.sampling.keep_mask`.

    Parameters
    ----------
    logits : torch.Tensor (B, V), float32 / bfloat16 / float16 / float64, on a GPU
    k, p, temperature, min_p : as in :func:`sample_with_distribution`

    Returns
    -------
    torch.Tensor (B, V), bool; greedy rows keep their one token.
    """
    x = _check_logits(logits)
    temperature = _clamped(temperature)
    temp = _temperature(temperature, x.shape[0])
    if temp.all_greedy:
        return _one_hot(x, _greedy_only(x))
    if x.dtype == torch.float64:
        r = _sorted_rows(x, k, p, min_p, temp)
        return torch.zeros_like(r.keep).scatter(-1, r.order, r.keep)
    prep, final, _ = _probs_and_support(x, k, p, min_p, temp)
    return prep.support(final)
