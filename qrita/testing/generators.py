"""Adversarial logits for tests, kernel tests and benchmarks (one shared module).

Every generator is deterministic given a ``numpy.random.Generator`` (or a seed). Unless stated
otherwise a generator returns a C-contiguous ``(B, V)`` float32 array; :func:`cases` converts to the
requested dtype (float32, float16, or "bfloat16": values rounded to the bfloat16 grid and stored as
float32, see :func:`bf16_round`).

:func:`cases` combines the generators with the k / p values of interest and yields
:class:`Case` tuples ``(name, logits, k, p)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "Case",
    "as_rng",
    "zipf_logits",
    "gaussian_logits",
    "quantised",
    "bf16_round",
    "to_dtype",
    "all_equal_rows",
    "grammar_rows",
    "inject_nan",
    "inject_posinf",
    "tied_boundary_rows",
    "five_zeros_rows",
    "sorted_rows",
    "peaked_rows",
    "extreme_rows",
    "two_level_rows",
    "FAMILIES",
    "K_VALUES",
    "P_VALUES",
    "DEFAULT_V",
    "DEFAULT_DTYPES",
    "cases",
]

DEFAULT_V: tuple[int, ...] = (1, 2, 3, 1023, 32001)
DEFAULT_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
#: p values of :func:`cases` (0 and 1e-9: first entry only / almost; 1 and NaN: top-p off).
P_VALUES: tuple[float, ...] = (0.0, 1e-9, 0.5, 1.0 - 1e-7, 1.0, math.nan)


def K_VALUES(V: int) -> tuple[int, ...]:
    """k values of :func:`cases` for a vocabulary of V: 0 (off), 1, V-1, V (off), V+5 (off), 50."""
    return (0, 1, V - 1, V, V + 5, 50)


class Case(NamedTuple):
    """One test case: ``logits`` (B, V) float32 or float16; ``k`` / ``p`` scalars, None or (B,)
    arrays (k int64, p float64). bfloat16 cases are float32 arrays on the bfloat16 grid and say
    ``bfloat16`` in their name."""

    name: str
    logits: np.ndarray
    k: Any
    p: Any


def as_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A Generator from a Generator, a seed, or None (seed 0)."""
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(0 if rng is None else rng)


# --------------------------------------------------------------------------------- base workloads
def zipf_logits(
    B: int, V: int, s: float = 1.1, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """Log-probabilities of a Zipf(s) distribution over V tokens, permuted independently per row.

    The typical LLM workload: ``logits[b, perm_b[r]] = log(r**-s / H)`` for ranks r = 1..V, with H
    the normaliser. Values are distinct apart from float32 rounding.

    Returns
    -------
    ndarray (B, V) float32
    """
    rng = as_rng(rng)
    ranks = np.arange(1, V + 1, dtype=np.float64)
    logw = -s * np.log(ranks)
    logp = logw - (np.log(np.exp(logw - logw[0]).sum()) + logw[0])
    base = np.broadcast_to(logp.astype(np.float32), (B, V))
    return np.ascontiguousarray(rng.permuted(base, axis=1))


def gaussian_logits(
    B: int, V: int, sigma: float = 2.0, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """I.i.d. N(0, sigma^2) logits (the case the σ-truncation is designed for).

    Returns
    -------
    ndarray (B, V) float32
    """
    rng = as_rng(rng)
    return (rng.standard_normal((B, V)) * sigma).astype(np.float32)


# ------------------------------------------------------------------------------------ transforms
def quantised(x: np.ndarray, levels: int) -> np.ndarray:
    """Snap the finite values of each row to ``levels`` evenly spaced values (heavy ties).

    Parameters
    ----------
    x : ndarray (..., V) float
    levels : int >= 1; 1 makes every finite entry of a row equal to the row's min.

    Returns
    -------
    ndarray, same shape and dtype as x; non-finite entries unchanged.
    """
    x = np.asarray(x)
    xf = x.astype(np.float64)
    fin = np.isfinite(xf)
    lo = np.min(np.where(fin, xf, np.inf), axis=-1, keepdims=True)
    hi = np.max(np.where(fin, xf, -np.inf), axis=-1, keepdims=True)
    lo = np.where(np.isfinite(lo), lo, 0.0)
    hi = np.where(np.isfinite(hi), hi, 0.0)
    span = np.where(hi > lo, hi - lo, 1.0)
    n = max(int(levels) - 1, 1)
    q = (
        np.round((xf - lo) / span * n) / n * span + lo
        if levels > 1
        else np.broadcast_to(lo, xf.shape)
    )
    out = np.where(fin, q, xf)
    return out.astype(x.dtype)


def bf16_round(x: np.ndarray) -> np.ndarray:
    """Round to the nearest bfloat16 value (ties to even), returned as float32.

    NaN stays NaN (quiet), ±inf stays ±inf; values past the bfloat16 range become ±inf, as a
    float32 -> bfloat16 conversion does.

    Parameters
    ----------
    x : ndarray, any shape, float (converted to float32 first)

    Returns
    -------
    ndarray, same shape, float32, every value exactly representable in bfloat16
    """
    xf = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    bits = xf.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32).copy()
    nan = np.isnan(xf)
    out[nan] = np.float32(np.nan)
    return out


def to_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    """Convert float32 logits to "float32", "float16", "float64" or "bfloat16" (bf16 grid, float32)."""
    if dtype == "bfloat16":
        return bf16_round(x)
    if dtype in ("float32", "float16", "float64"):
        with np.errstate(over="ignore"):  # huge values become ±inf in float16, as a cast does
            return np.ascontiguousarray(np.asarray(x).astype(dtype))
    raise ValueError(f"to_dtype: unknown dtype {dtype!r}")


# --------------------------------------------------------------------------- adversarial rows
def all_equal_rows(B: int, V: int, value: float = 0.0) -> np.ndarray:
    """Every entry equal to ``value``: every decision is a tie, broken by index.

    Returns
    -------
    ndarray (B, V) float32
    """
    return np.full((B, V), value, dtype=np.float32)


def grammar_rows(
    B: int, V: int, frac: float, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """Gaussian rows with ``round(frac * V)`` entries per row set to -inf (a grammar / logit-bias mask).

    ``frac = 1`` gives all -inf rows (the mass is undefined: top-p keeps everything).

    Returns
    -------
    ndarray (B, V) float32
    """
    rng = as_rng(rng)
    x = gaussian_logits(B, V, 2.0, rng)
    n = int(round(frac * V))
    for b in range(B):
        x[b, rng.permutation(V)[:n]] = -np.inf
    return x


def inject_nan(
    x: np.ndarray, frac: float, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """A copy of ``x`` (..., V) with ``max(1, round(frac * V))`` NaNs per row at random places."""
    rng = as_rng(rng)
    out = np.array(x, copy=True)
    V = out.shape[-1]
    n = min(V, max(1, int(round(frac * V))))
    flat = out.reshape(-1, V)
    for b in range(flat.shape[0]):
        flat[b, rng.permutation(V)[:n]] = np.nan
    return out


def inject_posinf(
    x: np.ndarray, count: int, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """A copy of ``x`` (..., V) with ``count`` +inf entries per row (they share all the mass)."""
    rng = as_rng(rng)
    out = np.array(x, copy=True)
    V = out.shape[-1]
    n = min(V, max(0, int(count)))
    flat = out.reshape(-1, V)
    for b in range(flat.shape[0]):
        flat[b, rng.permutation(V)[:n]] = np.inf
    return out


def tied_boundary_rows(
    B: int, V: int, k: int = 50, copies: int = 7, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """Rows whose k-th largest value is repeated across the top-k boundary.

    ``k - copies // 2 - 1`` distinct values above, ``copies`` equal values in ranks around k, the
    rest below; placed at random indices, so the tie is broken by index.

    Returns
    -------
    ndarray (B, V) float32
    """
    rng = as_rng(rng)
    x = np.empty((B, V), dtype=np.float32)
    n_above = max(0, min(V, k - copies // 2 - 1))
    n_tie = min(copies, V - n_above)
    n_below = V - n_above - n_tie
    for b in range(B):
        above = 10.0 + rng.permutation(n_above).astype(np.float64) * 0.25
        below = -10.0 - rng.random(n_below) * 5.0
        vals = np.concatenate([above, np.full(n_tie, 1.5), below]).astype(np.float32)
        x[b] = vals[rng.permutation(V)]
    return x


def five_zeros_rows(B: int, V: int) -> np.ndarray:
    """``[5, 0, 0, ...]``: with k = 3 the boundary is a tie of V - 1 zeros (keep indices 1 and 2).

    Returns
    -------
    ndarray (B, V) float32
    """
    x = np.zeros((B, V), dtype=np.float32)
    x[:, 0] = 5.0
    return x


def sorted_rows(
    B: int, V: int, ascending: bool = True, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """Gaussian rows sorted along the row. Ascending rows put the row's smallest values in the first
    tile, so the σ-cutoff estimated from it is far too low (the fallback must catch it).

    Returns
    -------
    ndarray (B, V) float32
    """
    x = np.sort(gaussian_logits(B, V, 2.0, rng), axis=1)
    return np.ascontiguousarray(x if ascending else x[:, ::-1])


def peaked_rows(
    B: int, V: int, gap: float = 100.0, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """Gaussian rows with one entry ``gap`` above the row max (exp(x) of the rest underflows
    float32 without the max subtraction; the peak holds all the mass).

    Returns
    -------
    ndarray (B, V) float32
    """
    rng = as_rng(rng)
    x = gaussian_logits(B, V, 2.0, rng)
    for b in range(B):
        x[b, rng.integers(V)] = np.float32(x[b].max() + gap)
    return x


def extreme_rows(B: int, V: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Rows mixing huge, tiny, subnormal and signed-zero values (keys near every edge).

    Includes ±float32 max, ±smallest subnormal, -0.0 and +0.0 (equal: tie by index), ±1.
    Converting to float16 / bfloat16 turns some into ±inf or ±0, which is fine.

    Returns
    -------
    ndarray (B, V) float32
    """
    rng = as_rng(rng)
    f32 = np.finfo(np.float32)
    specials = np.array(
        [
            f32.max,
            -f32.max,
            f32.smallest_subnormal,
            -f32.smallest_subnormal,
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32.tiny,
            -f32.tiny,
            1e30,
            -1e30,
        ],
        dtype=np.float32,
    )
    x = gaussian_logits(B, V, 2.0, rng)
    for b in range(B):
        n = min(V, 3 * specials.size)
        x[b, rng.permutation(V)[:n]] = rng.choice(specials, size=n)
    return x


def two_level_rows(B: int, V: int, n_high: int = 3, gap: float = 2.0) -> np.ndarray:
    """``n_high`` entries at ``gap``, the rest at 0: top-p boundaries fall inside a tie of equal
    probabilities (the tie budget of top-p).

    Returns
    -------
    ndarray (B, V) float32
    """
    x = np.zeros((B, V), dtype=np.float32)
    x[:, : min(n_high, V)] = gap
    return x


# ---------------------------------------------------------------------------------------- cases
def _family_batches(V: int, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """Named (B, V) float32 batches, 2-4 rows each."""
    g = gaussian_logits(3, V, 2.0, rng)
    out = [
        ("zipf", zipf_logits(3, V, 1.1, rng)),
        ("gaussian", g),
        ("quantised8", quantised(gaussian_logits(3, V, 2.0, rng), 8)),
        ("quantised2", quantised(gaussian_logits(2, V, 2.0, rng), 2)),
        ("all_equal", np.concatenate([all_equal_rows(1, V, 0.0), all_equal_rows(1, V, -3.5)])),
        ("grammar", np.concatenate([grammar_rows(1, V, f, rng) for f in (0.5, 0.999, 1.0)])),
        ("nan", inject_nan(gaussian_logits(2, V, 2.0, rng), 0.1, rng)),
        ("all_nan", np.full((1, V), np.nan, dtype=np.float32)),
        ("posinf", np.concatenate([inject_posinf(g[:1], 1, rng), inject_posinf(g[1:2], 3, rng)])),
        ("inf_nan_mix", inject_nan(inject_posinf(grammar_rows(2, V, 0.5, rng), 2, rng), 0.05, rng)),
        ("tied_boundary", tied_boundary_rows(3, V, 50, 7, rng)),
        ("five_zeros", five_zeros_rows(2, V)),
        ("sorted_asc", sorted_rows(2, V, True, rng)),
        ("sorted_desc", sorted_rows(2, V, False, rng)),
        ("peaked", peaked_rows(2, V, 100.0, rng)),
        ("extremes", extreme_rows(2, V, rng)),
        ("two_level", two_level_rows(2, V, 3, 2.0)),
    ]
    return out


FAMILIES: tuple[str, ...] = (
    "zipf",
    "gaussian",
    "quantised8",
    "quantised2",
    "all_equal",
    "grammar",
    "nan",
    "all_nan",
    "posinf",
    "inf_nan_mix",
    "tied_boundary",
    "five_zeros",
    "sorted_asc",
    "sorted_desc",
    "peaked",
    "extremes",
    "two_level",
)


def _cycle(values: Sequence, B: int, dtype) -> np.ndarray:
    return np.array([values[i % len(values)] for i in range(B)], dtype=dtype)


def _kp_list(V: int, B: int, family: str) -> list[tuple[Any, Any]]:
    ks = list(dict.fromkeys(K_VALUES(V)))
    if family == "five_zeros":
        ks.append(3)
    kp: list[tuple[Any, Any]] = [(k, None) for k in ks]
    kp += [(None, p) for p in P_VALUES]
    kp.append((_cycle([0, 1, max(V // 2, 1), 50, V + 5, 3, -1], B, np.int64), None))
    kp.append((None, _cycle([0.0, 0.3, 0.9, math.nan, 1.0, 0.99, 1e-9], B, np.float64)))
    kp += [(50, 0.5), (1, 0.9), (max(V - 1, 0), 1.0 - 1e-7), (3, 1e-9), (50, 0.0)]
    kp.append(
        (_cycle([50, 0, 2, V - 1], B, np.int64), _cycle([0.9, 0.5, math.nan, 0.999], B, np.float64))
    )
    return kp


def _fmt(v: Any) -> str:
    if v is None:
        return "None"
    if isinstance(v, np.ndarray):
        return "[" + ",".join(str(e) for e in v.tolist()) + "]"
    return repr(v)


def cases(
    V_list: Sequence[int] = DEFAULT_V,
    dtypes: Sequence[str] = DEFAULT_DTYPES,
    seed: int = 0,
    families: Sequence[str] | None = None,
) -> Iterator[Case]:
    """All combinations of the adversarial families with the k / p values of interest.

    For each V in ``V_list``, dtype in ``dtypes`` ("float32", "float16", "bfloat16"; bfloat16
    cases are float32 arrays on the bfloat16 grid) and family (see :data:`FAMILIES`; ``families``
    restricts them), a batch of 1-3 rows is generated (deterministically from ``seed``, V, the
    family and the dtype) and combined with: each k in :func:`K_VALUES` (and k = 3 for
    ``five_zeros``) alone, each p in :data:`P_VALUES` alone, a per-row k array, a per-row p array,
    and k + p combinations (scalars and per-row arrays).

    Yields
    ------
    Case(name, logits (B, V) float32/float16, k, p)
    """
    fam_filter = None if families is None else set(families)
    for V in V_list:
        for di, dtype in enumerate(dtypes):
            rng = np.random.default_rng([int(seed), int(V), di])
            for family, batch in _family_batches(int(V), rng):
                if fam_filter is not None and family not in fam_filter:
                    continue
                x = to_dtype(batch, dtype)
                B = x.shape[0]
                seen: set[str] = set()
                for k, p in _kp_list(int(V), B, family):
                    name = f"{family}/V={V}/{dtype}/k={_fmt(k)}/p={_fmt(p)}"
                    if name not in seen:  # small V repeats some k values
                        seen.add(name)
                        yield Case(name, x, k, p)
