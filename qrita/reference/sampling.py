"""NumPy reference of sampling: docs/sampling.md in code.

The keep-set of top-k then top-p is :func:`qrita.reference.oracle.keep_mask` applied to the
temperature-scaled logits (float64); min-p then filters the survivors; the token is drawn by inverse
CDF over the kept entries in rank order from one uniform per row, and the uniform comes from a
NumPy Philox-4x32-10 keyed by the row's seed and counted by the row's offset.
Everything is computed in float64.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from qrita.reference import oracle

__all__ = [
    "Candidates",
    "PHILOX_M0",
    "PHILOX_M1",
    "PHILOX_W0",
    "PHILOX_W1",
    "philox4x32",
    "random_words",
    "uniforms",
    "T_MIN",
    "T_MAX",
    "row_sampling_params",
    "top_k_off",
    "keep_mask",
    "probs",
    "candidates",
    "sample_with_uniforms",
    "sample",
    "round_uniform",
    "RejectionTrace",
    "sample_topp_rejection",
]

# Philox-4x32 constants (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3",
# SC'11): round multipliers and the Weyl sequence that bumps the key between rounds.
PHILOX_M0 = np.uint64(0xD2511F53)
PHILOX_M1 = np.uint64(0xCD9E8D57)
PHILOX_W0 = np.uint32(0x9E3779B9)
PHILOX_W1 = np.uint32(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)
_TWO_POW_M24 = 2.0**-24


class Candidates(NamedTuple):
    """Result of :func:`candidates`.

    ``indices`` (B, M) int64: the kept entries in rank order, then -1; ``probs`` (B, M): their
    probabilities, then 0; ``counts`` (B,) int64: the number of kept entries (may exceed M).
    """

    indices: np.ndarray
    probs: np.ndarray
    counts: np.ndarray


# ---------------------------------------------------------------------------------------------
# the generator


def philox4x32(c0, c1, c2, c3, k0, k1, rounds: int = 10):
    """Philox-4x32 with ``rounds`` rounds (10 by default) on uint32 arrays (broadcast together).

    One round maps counter (c0, c1, c2, c3) and key (k0, k1) to
    ``(hi(M1*c2) ^ c1 ^ k0, lo(M1*c2), hi(M0*c0) ^ c3 ^ k1, lo(M0*c0))``, where hi / lo are the
    upper / lower 32 bits of the 64-bit product; the key then advances by (W0, W1) mod 2^32.

    Returns
    -------
    tuple of four uint32 ndarrays, the output words.
    """
    c0, c1, c2, c3, k0, k1 = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.uint32) for v in (c0, c1, c2, c3, k0, k1))
    )
    c0, c1, c2, c3 = (c.astype(np.uint64) for c in (c0, c1, c2, c3))
    k0, k1 = k0.astype(np.uint64), k1.astype(np.uint64)
    for _ in range(rounds):
        p0 = PHILOX_M0 * c0  # < 2^64: no wrap-around
        p1 = PHILOX_M1 * c2
        c0, c1, c2, c3 = (
            (p1 >> _SHIFT32) ^ c1 ^ k0,
            p1 & _MASK32,
            (p0 >> _SHIFT32) ^ c3 ^ k1,
            p0 & _MASK32,
        )
        k0 = (k0 + np.uint64(PHILOX_W0)) & _MASK32
        k1 = (k1 + np.uint64(PHILOX_W1)) & _MASK32
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def _as_u64(v) -> np.ndarray:
    """Integers (Python ints in [0, 2^64) or integer arrays) as uint64 bit patterns."""
    a = np.asarray(v)
    if a.dtype == object or a.dtype.kind not in "iu":
        a = np.asarray(v, dtype=np.uint64)
    return a.astype(np.uint64)  # signed values: two's complement reinterpretation


def random_words(seed, offset, counter3: int = 0):
    """The four Philox words for key = seed (lo, hi) and counter = (offset lo, offset hi, 0,
    counter3).

    With ``counter3 = 0`` this is Triton's ``tl.randint4x(seed, offset)`` for a 64-bit
    ``offset``; the rejection draw's later rounds use ``counter3 = r // 4``.
    """
    s, o = np.broadcast_arrays(_as_u64(seed), _as_u64(offset))
    return philox4x32(
        (o & _MASK32).astype(np.uint32),
        (o >> _SHIFT32).astype(np.uint32),
        np.zeros(o.shape, np.uint32),
        np.full(o.shape, counter3, np.uint32),
        (s & _MASK32).astype(np.uint32),
        (s >> _SHIFT32).astype(np.uint32),
    )


def uniforms(seed, offset) -> np.ndarray:
    """One uniform in [0, 1) per (seed, offset): the top 24 bits of the first word, times 2^-24.

    Exactly representable in float32 and float64; float64 is returned.
    """
    w0 = random_words(seed, offset)[0]
    return (w0 >> np.uint32(8)).astype(np.float64) * _TWO_POW_M24


# ---------------------------------------------------------------------------------------------
# the distribution


def _rows(v, batch: int, dtype, default) -> np.ndarray:
    if v is None:
        return np.full(batch, default, dtype=dtype)
    return np.broadcast_to(np.asarray(v, dtype=dtype).reshape(-1), (batch,)).copy()


# temperatures > 0 act as if clamped into [T_MIN, T_MAX] (docs/sampling.md item 1): there x / t of
# float16 / bfloat16 / float32 logits neither overflows nor underflows in float64, so the scaled
# values keep the logits' order and ties
T_MIN, T_MAX = 1e-30, 1e30


def row_sampling_params(temperature, min_p, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-row temperature (float64; greedy where not > 0; else clamped into [T_MIN, T_MAX]) and
    min-p (float64; NaN = off)."""
    t = _rows(temperature, batch, np.float64, 1.0)
    pos = t > 0
    t[pos] = np.clip(t[pos], T_MIN, T_MAX)
    m = _rows(min_p, batch, np.float64, np.nan)
    m[m <= 0] = np.nan
    m[m > 1] = 1.0
    return t, m


def _weights(vals: np.ndarray) -> np.ndarray | None:
    """Unnormalised float64 probabilities of one row's values (largest weight 1); None if undefined.

    +inf entries share all the mass; otherwise ``exp(x - max)`` over finite entries, 0 elsewhere.
    """
    if np.any(vals == np.inf):
        return (vals == np.inf).astype(np.float64)
    finite = np.isfinite(vals)
    if not finite.any():
        return None
    w = np.zeros(vals.shape, dtype=np.float64)
    w[finite] = np.exp(vals[finite] - vals[finite].max())
    return w


def _distributions(logits, k, p, min_p, temperature):
    """Per row: kept indices in rank order and their normalised float64 probabilities.

    Returns (x2, list of (indices, probs)) with x2 the (B, V) input view.
    """
    x2 = logits.reshape(1, -1) if logits.ndim == 1 else logits
    batch = x2.shape[0]
    t_rows, m_rows = row_sampling_params(temperature, min_p, batch)
    xf = oracle.as_float64(x2)
    greedy = ~(t_rows > 0)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        scaled = xf / np.where(greedy, 1.0, t_rows)[:, None]
    keep = oracle.keep_mask(scaled, k, p)
    ordr = oracle.order(scaled)
    out = []
    for b in range(batch):
        if greedy[b]:
            idx = oracle.order(xf[b])[:1]
            out.append((idx, np.ones(1)))
            continue
        idx = ordr[b][keep[b, ordr[b]]]
        w = _weights(scaled[b, idx])
        if w is None:  # mass undefined: all of it on the first entry of the order
            w = np.zeros(idx.shape[0])
            w[0] = 1.0
        elif not np.isnan(m_rows[b]):
            sel = w >= m_rows[b]
            idx, w = idx[sel], w[sel]
        out.append((idx, w / w.sum()))
    return x2, out


def _float_out(logits: np.ndarray):
    return np.float64 if logits.dtype == np.float64 else np.float32


def keep_mask(logits, k=None, p=None, *, min_p=None, temperature=None) -> np.ndarray:
    """Boolean (B, V) / (V,) mask of the entries that can be sampled (zero-probability ones too)."""
    x2, dists = _distributions(logits, k, p, min_p, temperature)
    keep = np.zeros(x2.shape, dtype=bool)
    for b, (idx, _) in enumerate(dists):
        keep[b, idx] = True
    return keep.reshape(logits.shape)


def probs(logits, k=None, p=None, *, min_p=None, temperature=None, dtype=None) -> np.ndarray:
    """The renormalised distribution over the kept set, zeros elsewhere.

    dtype: float32 for float16 / bfloat16 / float32 logits, float64 for float64 (default).
    """
    x2, dists = _distributions(logits, k, p, min_p, temperature)
    out = np.zeros(x2.shape, dtype=np.float64)
    for b, (idx, pr) in enumerate(dists):
        out[b, idx] = pr
    return out.reshape(logits.shape).astype(dtype or _float_out(logits))


def candidates(
    logits, k=None, p=None, *, min_p=None, temperature=None, max_candidates=None
) -> Candidates:
    """Kept indices in rank order (-1 padded), their probabilities (0 padded) and the counts.

    The width M is ``max_candidates`` or V; rows with more kept entries are cut to the first M.
    For (V,) logits the results have shapes (M,), (M,) and ().
    """
    x2, dists = _distributions(logits, k, p, min_p, temperature)
    width = x2.shape[1] if max_candidates is None else int(max_candidates)
    idx_out = np.full((x2.shape[0], width), -1, dtype=np.int64)
    pr_out = np.zeros((x2.shape[0], width), dtype=np.float64)
    counts = np.zeros(x2.shape[0], dtype=np.int64)
    for b, (idx, pr) in enumerate(dists):
        n = min(width, idx.shape[0])
        idx_out[b, :n] = idx[:n]
        pr_out[b, :n] = pr[:n]
        counts[b] = idx.shape[0]
    pr_out = pr_out.astype(_float_out(logits))
    if logits.ndim == 1:
        return Candidates(idx_out[0], pr_out[0], counts.reshape(()))
    return Candidates(idx_out, pr_out, counts)


# ---------------------------------------------------------------------------------------------
# sampling


def _draw(idx: np.ndarray, pr: np.ndarray, u: float) -> tuple[int, float]:
    """Inverse CDF over the rank order: the first entry whose cumulative mass exceeds u * total."""
    csum = np.cumsum(pr)
    j = int(np.searchsorted(csum, u * csum[-1], side="right"))
    j = min(j, idx.shape[0] - 1)  # u < 1 makes this unreachable; kept for safety
    return int(idx[j]), float(np.log(pr[j]))


def sample_with_uniforms(
    logits, uniforms, k=None, p=None, *, min_p=None, temperature=None, return_logprob=False
):
    """Tokens drawn with the given uniforms (one per row, in [0, 1)).

    Parameters
    ----------
    logits : ndarray (V,) or (B, V), floating
    uniforms : float or ndarray (B,), values in [0, 1)
    k, p, min_p, temperature : None, scalars or (B,) arrays (docs/sampling.md)

    Returns
    -------
    tokens : int64, shape (B,) or () ; with ``return_logprob`` also the log-probabilities
    (float32, or float64 for float64 logits) of the drawn tokens under the sampled distribution.
    """
    x2, dists = _distributions(logits, k, p, min_p, temperature)
    u = np.broadcast_to(np.asarray(uniforms, dtype=np.float64).reshape(-1), (x2.shape[0],))
    tokens = np.zeros(x2.shape[0], dtype=np.int64)
    logp = np.zeros(x2.shape[0], dtype=np.float64)
    for b, (idx, pr) in enumerate(dists):
        tokens[b], logp[b] = _draw(idx, pr, float(u[b]))
    logp = logp.astype(_float_out(logits))
    if logits.ndim == 1:
        tokens, logp = tokens.reshape(()), logp.reshape(())
    return (tokens, logp) if return_logprob else tokens


def top_k_off(k, batch: int, vocab: int) -> np.ndarray:
    """(B,) bool: the rows whose top-k keeps every entry (k None, <= 0 or >= V: docs/spec.md)."""
    if k is None:
        return np.ones(batch, dtype=bool)
    k_rows = np.broadcast_to(np.asarray(k).reshape(-1), (batch,))
    return (k_rows <= 0) | (k_rows >= vocab)


def sample(
    logits,
    k=None,
    p=None,
    *,
    min_p=None,
    temperature=None,
    seed=0,
    offset=0,
    return_logprob=False,
):
    """Reference of :func:`qrita.sample` with explicit seed / offset (scalars or (B,) arrays).

    docs/sampling.md, "Which draw": rows whose top-k is off (k None, <= 0 or >= V) of float16 /
    bfloat16 / float32 logits take the rejection draw (:func:`sample_topp_rejection`); the others
    (top-k on, or float64 logits) the rank-order draw with the round-0 uniform
    (:func:`sample_with_uniforms`). The log-probability is the token's under the sampled
    distribution either way.
    """
    batch = 1 if logits.ndim == 1 else logits.shape[0]
    vocab = logits.shape[-1]
    x2 = logits.reshape(batch, vocab)
    s = np.broadcast_to(_as_u64(seed).reshape(-1), (batch,))
    o = np.broadcast_to(_as_u64(offset).reshape(-1), (batch,))
    tokens = np.zeros(batch, dtype=np.int64)
    logp = np.zeros(batch, dtype=np.float64)
    reject = top_k_off(k, batch, vocab) & (logits.dtype != np.float64)
    for sel, by_rejection in ((np.flatnonzero(~reject), False), (np.flatnonzero(reject), True)):
        if sel.size == 0:
            continue

        def pick(v, sel=sel):  # a parameter's values on the selected rows
            if v is None or np.ndim(v) == 0 or np.size(v) == 1:
                return v
            return np.broadcast_to(np.asarray(v).reshape(-1), (batch,))[sel]

        if not by_rejection:
            tokens[sel], logp[sel] = sample_with_uniforms(
                x2[sel], uniforms(s[sel], o[sel]), pick(k), pick(p), min_p=pick(min_p),
                temperature=pick(temperature), return_logprob=True)
            continue
        tokens[sel] = sample_topp_rejection(x2[sel], pick(p), temperature=pick(temperature),
                                            min_p=pick(min_p), seed=s[sel], offset=o[sel])
        _, dists = _distributions(x2[sel], None, pick(p), pick(min_p), pick(temperature))
        for row, (idx, pr) in zip(sel, dists, strict=True):
            hit = np.flatnonzero(idx == tokens[row])
            logp[row] = np.log(pr[hit[0]]) if hit.size else -np.inf
    logp = logp.astype(_float_out(logits))
    if logits.ndim == 1:
        tokens, logp = tokens.reshape(()), logp.reshape(())
    return (tokens, logp) if return_logprob else tokens


# ---------------------------------------------------------------------------------------------
# the rejection draw of top-p (docs/sampling.md, "The rejection draw": qrita.sample for top-k-off rows)


def round_uniform(seed, offset, r: int) -> np.ndarray:
    """The uniform of round ``r`` (0, 1, ...) of the rejection draw, per (seed, offset).

    ``u_r = (w_{r mod 4} >> 8) * 2^-24`` where ``w`` are the four Philox words for key = seed and
    counter = (offset lo, offset hi, 0, r // 4): round 0 is :func:`uniforms`.
    """
    words = random_words(seed, offset, r // 4)
    return (words[r % 4] >> np.uint32(8)).astype(np.float64) * _TWO_POW_M24


class RejectionTrace(NamedTuple):
    """Per row of :func:`sample_topp_rejection`: ``rounds`` (B,) int64, the draws made (0 for
    greedy and undefined-mass rows); ``near`` (B,) bool, whether a draw's target or an acceptance
    test came within the margin of its boundary (an implementation summing in float32 may then
    take another path)."""

    rounds: np.ndarray
    near: np.ndarray


def _reject_row(scaled: np.ndarray, p: float, min_p: float, u_of, margin: float
                ) -> tuple[int, int, bool]:
    """(token, rounds, near) of one non-greedy row (scaled float64 values, p as in rule 3,
    min_p as :func:`row_sampling_params` gives it)."""
    ordr = oracle.order(scaled)
    w = _weights(scaled)
    if w is None:  # undefined mass: the first entry of the order
        return int(ordr[0]), 0, False
    keep = oracle.keep_mask(scaled[None, :], None, p)[0]
    if not np.isnan(min_p):
        keep &= w >= min_p
    pos = np.empty(scaled.shape[0], dtype=np.int64)
    pos[ordr] = np.arange(scaled.shape[0])
    before = np.empty(scaled.shape[0])
    before[ordr] = oracle.mass_before(scaled[ordr])  # defined: w is
    live = np.ones(scaled.shape[0], dtype=bool)  # S_r: every entry, then those before t_r
    near = False
    r = 0
    while True:
        ws = np.where(live, w, 0.0)
        cs = np.cumsum(ws)  # index order
        mass = cs[-1]
        target = u_of(r) * mass
        t = int(np.searchsorted(cs, target, side="right"))
        t = min(t, int(np.flatnonzero(ws > 0)[-1]))
        lo_edge = cs[t] - ws[t]
        near |= bool(min(abs(target - lo_edge), abs(cs[t] - target)) <= margin * mass)
        r += 1
        if not np.isnan(p) and 0 < p < 1:
            near |= bool(abs(before[t] - p) <= margin)
        if not np.isnan(min_p):
            near |= bool(abs(w[t] - min_p) <= margin)
        if keep[t]:
            return t, r, near
        live = pos < pos[t]


def sample_topp_rejection(logits, p=None, *, temperature=None, min_p=None, seed=0, offset=0,
                          margin: float = 1e-6, return_trace: bool = False):
    """Reference of the rejection draw of top-p and min-p (top-k off), docs/sampling.md.

    Per row: S_0 is every entry; round r draws t_r from S_r by inverse CDF in *index* order with
    ``round_uniform(seed, offset, r)`` (the first entry whose cumulative weight over S_r exceeds
    u_r times S_r's weight); t_r is the token if top-p keeps it, else S_{r+1} is the set of entries
    before t_r in the rank order (min-p too keeps a prefix of the order, so "kept" may be top-p then
    min-p). S_r always holds the first entry of the order (always kept), and
    each round removes t_r, so the draw ends; with min-p off each round keeps with probability
    >= p, and the token's distribution is the top-p distribution exactly (the kept set is a prefix of the order
    inside every S_r). Greedy rows (temperature not > 0) and undefined-mass rows give the first
    entry of the order.

    Parameters
    ----------
    logits : ndarray (V,) or (B, V), floating
    p : None, float or ndarray (B,) (rule 3: >= 1 or NaN off, <= 0 the first entry alone)
    temperature : None, float or ndarray (B,)
    min_p : None, float or ndarray (B,) (None, NaN or <= 0: off; above 1 acts as 1)
    seed, offset : ints in [0, 2^64) or integer arrays (B,) (uint64 bit patterns)
    margin : the tolerance of :class:`RejectionTrace`'s ``near``
    return_trace : also return a :class:`RejectionTrace`

    Returns
    -------
    tokens : int64, shape (B,) or ()
    """
    x2 = logits.reshape(1, -1) if logits.ndim == 1 else logits
    batch = x2.shape[0]
    t_rows, m_rows = row_sampling_params(temperature, min_p, batch)
    if p is None:
        p_rows = np.full(batch, np.nan)
    else:
        p_rows = np.broadcast_to(np.asarray(p, dtype=np.float64).reshape(-1), (batch,))
    s = np.broadcast_to(_as_u64(seed).reshape(-1), (batch,))
    o = np.broadcast_to(_as_u64(offset).reshape(-1), (batch,))
    xf = oracle.as_float64(x2)
    tokens = np.zeros(batch, dtype=np.int64)
    rounds = np.zeros(batch, dtype=np.int64)
    near = np.zeros(batch, dtype=bool)
    first_four = np.stack([round_uniform(s, o, r) for r in range(4)], axis=1)  # (B, 4)
    for b in range(batch):
        if not t_rows[b] > 0:
            tokens[b] = oracle.order(xf[b])[0]
            continue
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            scaled = xf[b] / t_rows[b]

        def u_of(r: int, b: int = b) -> float:
            return float(first_four[b, r] if r < 4 else round_uniform(s[b], o[b], r))

        tokens[b], rounds[b], near[b] = _reject_row(scaled, float(p_rows[b]), float(m_rows[b]),
                                                    u_of, margin)
    if logits.ndim == 1:
        tokens = tokens.reshape(())
    trace = RejectionTrace(rounds, near)
    return (tokens, trace) if return_trace else tokens
