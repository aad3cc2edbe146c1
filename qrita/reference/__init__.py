"""NumPy references: the sort-based oracle (the truth), the algorithm mirror, order keys, ndtri,
and the mirror of a candidate top-p path (histogram levels)."""

from qrita.reference import keys, levels, mirror, ndtri, oracle, sampling

__all__ = ["keys", "levels", "mirror", "ndtri", "oracle", "sampling"]
