"""NumPy model of a histogram-first top-p search (not a test): how many entries are left to
gather after one or two levels of mass histograms, per workload, dtype and p.

    python benchmarks/topp_levels_sim.py [--rows 32] [--vocab 131072] [--p 0.9,0.99,0.5]
                                         [--bins 16,32,64] [--dtypes float32,bfloat16]

The design it sizes (a candidate for top-p masks at small batches, BENCHMARKS.md twenty-fifth
session): a first read gives the row's max M and mass Z exactly; level 1 sums the exact mass
of each of ``NB1`` equal value bins over [M - L, M] (L = ln(V / (1 - p)): below it lies less
than (1 - p) Z, so the boundary cannot; one more bin holds the rest); the bin where the
cumulative mass from the top reaches p Z holds the boundary entry T. Level 2 splits that bin
into ``NB2`` equal sub-bins the same way. The entries of the crossing (sub-)bin are what a
gather must hold, with the mass above it carried in, for an in-register search to finish.
Weights are float64 here (the kernels' float32 rounding is not modelled); the crossing is the
oracle's ("mass before < p Z" keeps an entry). Prints, per (workload, dtype, p, NB1, NB2), the
median / 99th percentile / max over rows of the entries left after level 1 and after level 2,
the largest count of copies of one value among them (ties: a gather only needs their count),
and in how many rows the crossing sub-bin holds the oracle's boundary value (it must be all).
"""

from __future__ import annotations

import argparse

import numpy as np

from qrita.reference import oracle
from qrita.testing import generators


def crossing_bin(values: np.ndarray, weights: np.ndarray, top: float, width: float, bins: int,
                 target_above: float) -> tuple[int, float]:
    """Equal bins of ``width`` downward from ``top`` (the last bin takes everything below):
    the bin whose cumulative mass (from the top, ``target_above`` already above) first reaches
    the target, as (bin, mass above it); target_above is the mass still to reach."""
    index = np.clip(np.floor((top - values) / width), 0, bins - 1).astype(np.int64)
    mass = np.bincount(index, weights=weights, minlength=bins)
    cum = np.cumsum(mass)
    b = int(np.searchsorted(cum, target_above, side="left"))
    b = min(b, bins - 1)
    return b, float(cum[b] - mass[b])


def row_levels(x: np.ndarray, p: float, nb1: int, nb2: int) -> tuple[int, int, int, bool]:
    """(entries in the level-1 crossing bin, in the level-2 crossing sub-bin, most copies of
    one value in that sub-bin, whether the sub-bin holds the oracle's boundary value: the
    smallest value its mask keeps) for one finite row."""
    m = float(x.max())
    w = np.exp(x.astype(np.float64) - m)
    z = float(w.sum())
    target = p * z
    span = np.log(x.size / max(1.0 - p, 1e-12))
    width1 = span / (nb1 - 1)  # nb1 - 1 bins over [M - L, M], the last bin the rest
    b1, above1 = crossing_bin(x, w, m, width1, nb1, target)
    top1 = m - b1 * width1
    in1 = (x <= top1) & ((x > top1 - width1) if b1 < nb1 - 1 else True)
    n1 = int(in1.sum())
    sub_x, sub_w = x[in1], w[in1]
    if b1 == nb1 - 1:  # the tail bin: split down to its smallest entry
        width2 = max((top1 - float(sub_x.min())) / nb2, 1e-30)
    else:
        width2 = width1 / nb2
    b2, _ = crossing_bin(sub_x, sub_w, top1, width2, nb2, target - above1)
    top2 = top1 - b2 * width2
    in2 = (sub_x <= top2) & ((sub_x > top2 - width2) if b2 < nb2 - 1 else True)
    left = sub_x[in2]
    copies = int(np.unique(left, return_counts=True)[1].max()) if left.size else 0
    kept = oracle.top_p_mask(x[None, :], p)[0] > -np.inf
    boundary = float(x[kept].min())
    return n1, int(in2.sum()), copies, bool(np.isin(boundary, left))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=131072)
    ap.add_argument("--p", default="0.9,0.99,0.5")
    ap.add_argument("--bins", default="16,32,64")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    bins = [int(b) for b in args.bins.split(",")]
    print("workload dtype    p      NB1 NB2  level1 med/p99/max      level2 med/p99/max   "
          "copies max  rows holding T")
    for workload in ("zipf", "gaussian"):
        make = generators.zipf_logits if workload == "zipf" else generators.gaussian_logits
        x32 = make(args.rows, args.vocab, 1.1 if workload == "zipf" else 2.0, rng)
        for dtype in args.dtypes.split(","):
            x = generators.to_dtype(x32, dtype).astype(np.float32)
            for p in map(float, args.p.split(",")):
                for nb1 in bins:
                    for nb2 in bins:
                        res = np.array([row_levels(row, p, nb1, nb2) for row in x])
                        q1 = np.percentile(res[:, 0], [50, 99]).astype(int)
                        q2 = np.percentile(res[:, 1], [50, 99]).astype(int)
                        print(f"{workload:8s} {dtype:8s} {p:<6} {nb1:3d} {nb2:3d}  "
                              f"{q1[0]:7d}/{q1[1]:7d}/{res[:, 0].max():7d}  "
                              f"{q2[0]:6d}/{q2[1]:6d}/{res[:, 1].max():6d}  "
                              f"{res[:, 2].max():6d}  {res[:, 3].sum()}/{len(res)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
