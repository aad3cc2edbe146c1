"""How tests apply the contract (docs/spec.md, "How tests apply rule 5").

:func:`assert_mask_matches` compares a mask with the oracle's bit for bit; where they differ, each
difference must be a top-p decision that rule 5 allows (the exact mass before the entry within
``margin`` of p), the value must be the input's (bit-identical) or ``fill``, the kept set must stay a
prefix of the order, and the first entry of the order is always kept. :func:`assert_topk_matches`
is exact. :func:`assert_sampling_matches` applies docs/sampling.md "What an implementation must
match" to sampled tokens, log-probabilities, distributions and candidates.
"""

from __future__ import annotations

import numpy as np

from qrita.reference import oracle
from qrita.reference import sampling as _sampling

__all__ = ["bits_of", "assert_mask_matches", "assert_topk_matches", "assert_sampling_matches"]

_MAX_REPORTED = 12


def bits_of(a: np.ndarray) -> np.ndarray:
    """Integer view of a float array (NaN-safe bitwise comparison)."""
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _as_2d(a: np.ndarray) -> np.ndarray:
    return a.reshape(1, -1) if a.ndim == 1 else a


def assert_mask_matches(
    out, logits, k=None, p=None, fill: float = -np.inf, margin: float = 1e-6
) -> None:
    """Assert that ``out`` is a valid top-k-then-top-p mask of ``logits`` (docs/spec.md).

    Parameters
    ----------
    out : ndarray (V,) or (B, V), the implementation's result (same dtype as logits; bfloat16
        results converted exactly to float32 together with the logits)
    logits : ndarray, the input
    k, p : as given to the implementation (None, scalars, or (B,) arrays)
    fill : the fill value
    margin : allowed distance between p and the exact mass before an entry whose top-p decision
        differs from the oracle (1e-6 for float32 implementations, rule 5)

    Raises
    ------
    AssertionError naming row, index, oracle value, got value and why, for every disallowed entry
    (the first few).
    """
    out = np.asarray(out)
    logits = np.asarray(logits)
    if out.shape != logits.shape:
        raise AssertionError(f"shape {out.shape}, expected {logits.shape}")
    if out.dtype != logits.dtype:
        raise AssertionError(f"dtype {out.dtype}, expected {logits.dtype}")
    want = oracle.top_k_top_p_mask(logits, k, p, fill=fill)
    got_bits, want_bits = bits_of(out), bits_of(want)
    if np.array_equal(got_bits, want_bits):
        return
    x2, o2, w2 = _as_2d(logits), _as_2d(out), _as_2d(want)
    xb, ob, wb = _as_2d(bits_of(logits)), _as_2d(got_bits), _as_2d(want_bits)
    fill_bits = bits_of(np.array([fill], dtype=logits.dtype))[0]
    B, V = x2.shape
    k_rows, p_rows = oracle.row_params(k, p, B, V)
    errors: list[str] = []
    n_err = 0
    for b in range(B):
        diff = np.flatnonzero(ob[b] != wb[b])
        if diff.size == 0:
            continue
        ordr = oracle.order(x2[b : b + 1])[0]
        rank = np.empty(V, dtype=np.int64)
        rank[ordr] = np.arange(V)
        n_surv = int(k_rows[b]) if k_rows[b] > 0 else V
        pb = float(p_rows[b])
        before = None
        if not np.isnan(pb):
            before = oracle.mass_before(oracle.as_float64(x2[b, ordr[:n_surv]]))
        for i in diff:
            why = None
            if ob[b, i] != xb[b, i] and ob[b, i] != fill_bits:
                why = "value is neither the input's value (bit for bit) nor fill"
            elif np.isnan(pb):
                why = "top-p is off for this row: top-k decisions are exact"
            elif rank[i] >= n_surv:
                why = (
                    f"not a top-k survivor (rank {rank[i]} >= {n_surv}): top-k decisions are exact"
                )
            elif before is None:
                why = "the survivors' mass is undefined: top-p keeps every survivor"
            elif rank[i] == 0:
                why = "the first entry of the order is always kept"
            elif abs(before[rank[i]] - pb) > margin:
                why = (
                    f"top-p decision differs where the exact mass before the entry, "
                    f"{before[rank[i]]!r}, is not within {margin} of p={pb!r}"
                )
            if why is not None:
                n_err += 1
                if len(errors) < _MAX_REPORTED:
                    errors.append(
                        f"row {b}, index {i}: oracle {w2[b, i]!r}, got {o2[b, i]!r}: {why}"
                    )
        # the kept set must be a prefix of the order (entries equal to fill are ambiguous: skipped)
        surv = ordr[:n_surv]
        clear = xb[b, surv] != fill_bits
        kept = clear & (ob[b, surv] == xb[b, surv])
        dropped = clear & (ob[b, surv] == fill_bits)
        if kept.any() and dropped.any():
            first_drop = int(np.argmax(dropped))
            last_kept = int(np.flatnonzero(kept)[-1])
            if last_kept > first_drop:
                n_err += 1
                errors.append(
                    f"row {b}: kept set is not a prefix of the order: index {surv[last_kept]} (rank "
                    f"{last_kept}) kept after index {surv[first_drop]} (rank {first_drop}) dropped"
                )
    if n_err:
        more = f" (and {n_err - len(errors)} more)" if n_err > len(errors) else ""
        raise AssertionError(
            f"mask differs from the oracle (k={k!r}, p={p!r}):\n  " + "\n  ".join(errors) + more
        )


def assert_topk_matches(
    values, indices, x, k: int, axis: int = -1, mode: str = "largest", sorted: bool = True
) -> None:
    """Assert that (values, indices) is exactly the oracle's ``top_k(x, k, axis, mode, sorted)``.

    Indices must be equal (any integer dtype), values bit-identical with x's dtype.
    """
    values, indices, x = np.asarray(values), np.asarray(indices), np.asarray(x)
    ref = oracle.top_k(x, k, axis=axis, mode=mode, sorted=sorted)
    if indices.shape != ref.indices.shape or values.shape != ref.values.shape:
        raise AssertionError(
            f"shapes values {values.shape}, indices {indices.shape}; expected {ref.indices.shape}"
        )
    if indices.dtype.kind not in "iu":
        raise AssertionError(f"indices dtype {indices.dtype} is not an integer dtype")
    if not np.array_equal(indices.astype(np.int64), ref.indices):
        pos = np.argwhere(indices.astype(np.int64) != ref.indices)
        first = tuple(int(v) for v in pos[0])
        raise AssertionError(
            f"top_k indices differ at {len(pos)} positions; first {first}: got "
            f"{indices[first]}, expected {ref.indices[first]} (k={k}, axis={axis}, mode={mode}, "
            f"sorted={sorted})"
        )
    if values.dtype != x.dtype:
        raise AssertionError(f"values dtype {values.dtype}, expected {x.dtype}")
    if x.dtype.kind == "f":
        same = np.array_equal(bits_of(values), bits_of(ref.values))
    else:
        same = np.array_equal(values, ref.values)
    if not same:
        raise AssertionError(
            f"top_k values differ from x at the indices (k={k}, axis={axis}, mode={mode})"
        )


# ---------------------------------------------------------------------------------------------
# sampling (docs/sampling.md, "What an implementation must match")


def _got_kept_count(b: int, ordr: np.ndarray, candidates, kept) -> tuple[int | None, str | None]:
    """The implementation's kept count for row b (None if not given) and an error, if its kept set
    is not a prefix of the reference order."""
    if candidates is not None:
        idx = np.asarray(candidates[0]).reshape(-1, np.asarray(candidates[0]).shape[-1])[b]
        count = int(np.asarray(candidates[2]).reshape(-1)[b])
        shown = min(count, idx.shape[0])
        if not np.array_equal(idx[:shown], ordr[:shown]):
            return None, (
                f"candidates {idx[:shown][:12].tolist()} are not the first {shown} entries of the "
                f"order {ordr[:shown][:12].tolist()}"
            )
        if np.any(idx[shown:] != -1):
            return None, "candidate indices after the kept entries are not -1"
        if count <= idx.shape[0] or kept is None:
            return count, None
    if kept is not None:
        row = np.asarray(kept).reshape(-1, np.asarray(kept).shape[-1])[b].astype(bool)
        n = int(row.sum())
        if not row[ordr[:n]].all():
            return None, f"kept set is not a prefix of the order (first {n} entries)"
        return n, None
    return None, None


def _widen(n: int, amb: np.ndarray, top: int) -> tuple[int, int]:
    """Counts a prefix decision may reach from ``n`` over ambiguous entries (``amb[j]``: entry j's
    decision is within the margin), between 1 and ``top``."""
    lo = hi = n
    while lo > 1 and amb[lo - 1]:
        lo -= 1
    while hi < top and amb[hi]:
        hi += 1
    return lo, hi


def assert_sampling_matches(
    logits,
    uniforms,
    k=None,
    p=None,
    *,
    min_p=None,
    temperature=None,
    tokens,
    logprobs=None,
    probs=None,
    candidates=None,
    kept=None,
    margin: float = 1e-6,
    rtol: float = 1e-6,
) -> None:
    """Assert that sampled tokens (and optionally log-probabilities, the distribution and the
    candidates) agree with :mod:`qrita.reference.sampling` as docs/sampling.md allows.

    Per row the implementation's kept set (from ``candidates`` or ``kept``) must be a prefix of
    the reference order; its size may differ from the reference's only over entries whose top-p
    decision lies within ``margin`` (the exact mass before the entry vs p) or whose min-p ratio
    lies within ``margin`` of min_p. The token must be the inverse-CDF draw over that kept set
    exactly, unless ``u * c_last`` lies within ``margin`` of a cumulative boundary (then either
    neighbour). Greedy rows, undefined-mass rows, ties, NaN and ±inf are exact. ``probs``,
    ``logprobs`` and candidate probabilities agree to ``rtol``; zero probabilities are exact.

    Parameters
    ----------
    logits : ndarray (B, V) or (V,), float16 / float32 / float64 (bfloat16 as float32 on its grid)
    uniforms : float or ndarray (B,), the uniforms the implementation drew with
    k, p, min_p, temperature : as given to the implementation (None, scalars or (B,) arrays)
    tokens : ndarray (B,) or (), the implementation's tokens
    logprobs, probs, candidates, kept : optional results to check ((B,), (B, V), a Candidates
        triple of arrays, a boolean (B, V) keep mask). Without ``candidates`` / ``kept`` a row
        whose kept count is ambiguous accepts the draw over any allowed count.

    Raises
    ------
    AssertionError listing the first rows that differ and why.
    """
    x = np.asarray(logits)
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    batch, vocab = x2.shape
    xf = oracle.as_float64(x2)
    u_rows = np.broadcast_to(np.asarray(uniforms, dtype=np.float64).reshape(-1), (batch,))
    tok = np.asarray(tokens).reshape(-1).astype(np.int64)
    lp = None if logprobs is None else np.asarray(logprobs, dtype=np.float64).reshape(-1)
    pr = None if probs is None else np.asarray(probs, dtype=np.float64).reshape(batch, vocab)
    t_rows, m_rows = _sampling.row_sampling_params(temperature, min_p, batch)
    k_rows, p_rows = oracle.row_params(k, p, batch, vocab)
    errors: list[str] = []

    def fail(b: int, msg: str) -> None:
        errors.append(f"row {b}: {msg}")

    for b in range(batch):
        greedy = not t_rows[b] > 0
        if greedy:
            ordr = oracle.order(xf[b])
            w, defined, n_ref, lo, hi = None, False, 1, 1, 1
        else:
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                scaled = xf[b] / t_rows[b]
            ordr = oracle.order(scaled)
            n_surv = int(k_rows[b]) if k_rows[b] > 0 else vocab
            w = _sampling._weights(scaled[ordr])
            defined = w is not None
            a_lo = a = a_hi = n_surv
            if defined and not np.isnan(p_rows[b]):
                before = oracle.mass_before(scaled[ordr[:n_surv]])
                a = int(np.count_nonzero(before < p_rows[b]))
                a_lo, a_hi = _widen(a, np.abs(before - p_rows[b]) <= margin, n_surv)
            b_lo = m = b_hi = vocab
            if defined and not np.isnan(m_rows[b]):
                m = int(np.count_nonzero(w >= m_rows[b]))
                b_lo, b_hi = _widen(m, np.abs(w - m_rows[b]) <= margin, vocab)
            n_ref, lo, hi = min(a, m), min(a_lo, b_lo), min(a_hi, b_hi)
        n_got, err = _got_kept_count(b, ordr, candidates, kept)
        if err is not None:
            fail(b, err)
            continue
        if n_got is not None and not lo <= n_got <= hi:
            fail(b, f"kept {n_got} entries, the reference keeps {n_ref} (allowed {lo}..{hi})")
            continue
        counts = [n_got] if n_got is not None else list(range(lo, hi + 1))
        allowed: set[int] = set()
        dists = {}
        for n in counts:
            if w is None:  # greedy or undefined mass: all of it on the first entry
                q = np.zeros(n)
                q[0] = 1.0
            else:
                q = w[:n] / w[:n].sum()
            dists[n] = q
            csum = np.cumsum(q)
            target = u_rows[b] * csum[-1]
            j = min(int(np.searchsorted(csum, target, side="right")), n - 1)
            allowed.add(int(ordr[j]))
            positive = np.flatnonzero(q > 0)
            for jb in np.flatnonzero(np.abs(csum - target) <= margin):
                allowed.add(int(ordr[jb]) if q[jb] > 0 else int(ordr[j]))
                after = positive[positive > jb]
                if after.size:
                    allowed.add(int(ordr[after[0]]))
        if int(tok[b]) not in allowed:
            fail(b, f"token {int(tok[b])}, expected one of {sorted(allowed)} (u={u_rows[b]!r})")
            continue
        if len(counts) != 1:
            continue  # the distribution is not determined without the kept set
        dist = dists[counts[0]]
        n_use = dist.shape[0]
        pos = int(np.flatnonzero(ordr[:n_use] == tok[b])[0])
        if lp is not None:
            if w is None:
                if lp[b] != 0.0:
                    fail(b, f"logprob {lp[b]!r}, expected exactly 0 (one-hot distribution)")
            elif not np.isclose(lp[b], np.log(dist[pos]), rtol=rtol, atol=1e-9):
                fail(b, f"logprob {lp[b]!r}, expected {float(np.log(dist[pos]))!r}")
        full = np.zeros(vocab)
        full[ordr[:n_use]] = dist
        if pr is not None:
            bad = np.flatnonzero(
                ~np.isclose(pr[b], full, rtol=rtol, atol=1e-37) | ((full == 0) & (pr[b] != 0))
            )
            if bad.size:
                fail(b, f"probs differ at {bad[:8].tolist()}: got {pr[b, bad[:4]].tolist()}, "
                        f"expected {full[bad[:4]].tolist()}")
        if candidates is not None:
            cp = np.asarray(candidates[1], dtype=np.float64)
            cp = cp.reshape(-1, cp.shape[-1])[b]
            want = np.zeros(cp.shape[0])
            shown = min(n_use, cp.shape[0])
            want[:shown] = dist[:shown]
            if not np.allclose(cp, want, rtol=rtol, atol=1e-37) or np.any(cp[shown:] != 0):
                fail(b, f"candidate probs {cp[:6].tolist()}, expected {want[:6].tolist()}")
    if errors:
        more = f" (and {len(errors) - _MAX_REPORTED} more)" if len(errors) > _MAX_REPORTED else ""
        raise AssertionError(
            f"sampling differs from the reference (k={k!r}, p={p!r}, min_p={min_p!r}, "
            f"temperature={temperature!r}):\n  " + "\n  ".join(errors[:_MAX_REPORTED]) + more
        )
