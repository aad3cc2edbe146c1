"""NumPy references: the sort-based oracle (the truth), the algorithm mirror, order keys, ndtri."""

from qrita.reference import keys, mirror, ndtri, oracle, sampling

__all__ = ["keys", "mirror", "ndtri", "oracle", "sampling"]
