"""NumPy references: the sort-based oracle (the truth), the algorithm mirror, order keys, ndtri."""

from qrita.reference import keys, ndtri, oracle

__all__ = ["keys", "ndtri", "oracle"]
