"""Inverse of the standard normal CDF, computed (no table of cutoffs).

``ndtri(p) = x`` with ``Phi(x) = p``. The σ-truncation of docs/algorithm.md (section 2) uses it to
place the cutoff; its accuracy changes speed, never the answer. It is still accurate to full double
precision (about 1e-15 relative against ``scipy.special.ndtri``):

1. a starting point from the classical rational approximation of the normal tail quantile
   ``t - (c0 + c1 t + c2 t^2) / (1 + d1 t + d2 t^2 + d3 t^3)``, ``t = sqrt(-2 ln q)``, ``q <= 1/2``
   (Abramowitz & Stegun 26.2.23, |error| < 4.5e-4);
2. Halley steps on the residual ``r(x) = Phi(x) - p``, evaluated without cancellation:
   ``0.5 * erf(x / sqrt 2) - (p - 1/2)`` in the centre (``p - 1/2`` is exact there) and
   ``0.5 * erfc(-x / sqrt 2) - p`` in the lower tail; the upper tail uses the symmetry
   ``ndtri(p) = -ndtri(1 - p)`` (``1 - p`` is exact for ``p >= 1/2``).
   Halley's step for ``Phi`` is ``x -= u / (1 + x u / 2)`` with ``u = r(x) / phi(x)``; ``u`` is
   formed in log space so that it neither overflows nor underflows deep in the tail.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ndtri", "ndtri_array"]

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _start_lower(q: float) -> float:
    """Rough quantile for 0 < q <= 1/2 (negative or zero), |error| < 4.5e-4."""
    t = math.sqrt(-2.0 * math.log(q))
    num = 2.515517 + t * (0.802853 + t * 0.010328)
    den = 1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))
    return -(t - num / den)


def _u(resid: float, x: float) -> float:
    """resid / phi(x), computed in log space."""
    if resid == 0.0:
        return 0.0
    mag = math.exp(math.log(abs(resid)) + 0.5 * x * x + _LOG_SQRT_2PI)
    return math.copysign(mag, resid)


def _refine(x: float, resid_fn) -> float:
    for _ in range(12):
        u = _u(resid_fn(x), x)
        step = u / (1.0 + 0.5 * x * u)
        x_new = x - step
        if not math.isfinite(x_new):
            break
        if abs(step) <= 1e-17 * max(1.0, abs(x_new)) or x_new == x:
            x = x_new
            break
        x = x_new
    return x


def _lower(q: float) -> float:
    """ndtri(q) for 0 < q < 1/4 (lower tail)."""
    return _refine(_start_lower(q), lambda x: 0.5 * math.erfc(-x / _SQRT2) - q)


def _centre(p: float) -> float:
    """ndtri(p) for 1/4 <= p <= 3/4."""
    r = p - 0.5  # exact (Sterbenz)
    if r == 0.0:
        return 0.0
    x0 = _start_lower(p) if p <= 0.5 else -_start_lower(1.0 - p)
    return _refine(x0, lambda x: 0.5 * math.erf(x / _SQRT2) - r)


def ndtri(p: float) -> float:
    """Inverse standard normal CDF of a scalar.

    Parameters
    ----------
    p : float in [0, 1]

    Returns
    -------
    float: x with Phi(x) = p; -inf at 0, +inf at 1, NaN outside [0, 1] or for NaN.
    """
    p = float(p)
    if not (0.0 <= p <= 1.0):
        return math.nan
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    if p < 0.25:
        return _lower(p)
    if p <= 0.75:
        return _centre(p)
    return -_lower(1.0 - p)  # 1 - p is exact for p >= 1/2


def ndtri_array(p) -> np.ndarray:
    """Element-wise :func:`ndtri` of an array (float64 result, same shape)."""
    a = np.asarray(p, dtype=np.float64)
    out = np.empty(a.shape, dtype=np.float64)
    flat_in, flat_out = a.reshape(-1), out.reshape(-1)
    for i in range(flat_in.size):
        flat_out[i] = ndtri(flat_in[i])
    return out
