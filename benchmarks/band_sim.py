"""NumPy simulation of the wide top-p band (not a test): how often the band finishes a row.

    python benchmarks/band_sim.py [--rows 64] [--p 0.9] [--max-band 3072] [--cap-seg 256]
                                  [--no-widen] [--dtypes float32,bfloat16,float16] [--bins NB]

Mirrors the band kernel on the H200 launch table at V = 131072 (a 4096-entry sample in 16
chunks, 16 segments of 8192 entries, 256 slots each): ``primitives.band_interval``, T̂ from the
sample's mass, the band m sample ranks either side, widened to the sample's neighbouring keys of
T̂ (unless ``--no-widen``). ``--bins NB`` models another placement instead: the sample counted
in NB bins of ``M - x``, the crossing bin from the estimated mass below each bin (as the hist
band's merge), widened evenly while it holds at most max_band entries. At NB = 4096 it holds T
as often as the order statistics, but its kernel (one ``tl.histogram`` of 4096 bins per row)
took 63 vs 41 µs at B = 1 and 122 vs 48 at B = 64 on the H200: not kept (BENCHMARKS.md,
twenty-ninth session). Then it checks each row against the oracle. Does the band hold the
boundary key T? Does it fit the slots (or is it one key)? Those are the two conditions under which
``wide_search_kernel`` finishes a row on the band; the other rows take the 16-way rounds. The
simulation sorts the sample instead of running pivot rounds, and sums in float64. Only the
hit rate is modelled, not the GPU's rounding.
"""

from __future__ import annotations

import argparse

import numpy as np

from qrita.reference import oracle
from qrita.testing import generators

V, SAMPLE, CHUNKS, NSEG, SEG = 131072, 4096, 16, 16, 8192


def order_key(x: np.ndarray) -> np.ndarray:
    bits = x.astype(np.float32).view(np.int32).astype(np.int64)
    return np.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)


def sample_offsets() -> np.ndarray:
    chunk = SAMPLE // CHUNKS
    lane = np.arange(SAMPLE)
    stride = max((V // CHUNKS) // 16 * 16, chunk)
    return (lane // chunk) * stride + lane % chunk


def band(row: np.ndarray, p: float, max_band: float, widen: bool) -> tuple[int, int]:
    """(b_lo, b_hi] of one row, as order keys."""
    w_row = np.exp(row.astype(np.float64) - row.max())
    mass = w_row.sum()
    xs = row[sample_offsets()]
    keys, w = order_key(xs), np.exp(xs.astype(np.float64) - row.max())
    n = SAMPLE
    need = w.sum() - (mass - p * mass) / (V / n)  # the sample's mass above T̂
    order = np.argsort(-keys, kind="stable")
    sk, cum = keys[order], np.cumsum(w[order])
    t_hat = sk[min(int((cum < need).sum()), n - 1)]
    r_hat = int((sk >= t_hat).sum()) if need > 0 else n
    m = int(min(np.ceil(3 * np.sqrt(r_hat) + 3), max(max_band * n / (2 * V), 1)))
    b_hi = int(sk[r_hat - m - 1]) if r_hat - m >= 1 else 2**31
    b_lo = int(sk[r_hat + m - 1]) - 1 if r_hat + m <= n else -(2**31)
    if widen:
        above, below = sk[sk > t_hat], sk[sk < t_hat]
        if above.size:
            b_hi = max(b_hi, int(above.min()))
        if below.size:
            b_lo = min(b_lo, int(below.max()) - 1)
    return b_lo, b_hi


def binned_band(row: np.ndarray, p: float, max_band: float, bins: int) -> tuple[int, int]:
    """(b_lo, b_hi] of one row from its sample's counts in ``bins`` bins of ``M - x``."""
    top = row.max()
    mass = np.exp(row.astype(np.float64) - top).sum()
    xs = row[sample_offsets()]
    span = min(np.log(V / max(1 - p, 1e-30)), 104.0)
    width = span / (bins - 1)
    counts = np.bincount(np.minimum((top - xs) / width, bins - 1).astype(int), minlength=bins)
    index = np.arange(bins)
    mean_weight = np.exp(-index * width) * ((1 - np.exp(-width)) / width)
    mean_weight[-1] = np.exp(-(bins - 1) * width)
    estimate = counts * mean_weight * (V / SAMPLE)
    reached = mass - (estimate.sum() - np.cumsum(estimate))
    crossing = min(int((reached < p * mass).sum()), bins - 1)
    limit, half = max_band * SAMPLE / V, 0
    while half + 1 < bins and counts[max(crossing - half - 1, 0):crossing + half + 2].sum() <= limit:
        half += 1
    first, last = max(crossing - half, 0), min(crossing + half, bins - 1)
    slack = 4e-7 * (abs(top) + (last + 1) * width + 1)
    key_top = int(order_key(np.array([top - first * width + slack], np.float32))[0])
    key_bottom = int(order_key(np.array([top - (last + 1) * width - slack], np.float32))[0])
    return (-(2**31) if last == bins - 1 else key_bottom - 1,
            2**31 if first == 0 else key_top)


def widen_to_bins(b_lo: int, b_hi: int, shift: int, bins: int) -> tuple[int, int, bool]:
    """The keyed band of a 16-bit row (``wide.widen_to_bins``, without the proven interval's
    clip): a band spanning at most ``bins`` values, widened evenly to ``bins`` values."""
    b_lo, b_hi = max(b_lo, -(2**31) + 8388607), min(b_hi, 2**31 - 1)  # above NaN's key
    first, last = (b_lo + 1) >> shift, b_hi >> shift
    spare = bins - 1 - (last - first)
    if spare < 0:
        return b_lo, b_hi, False
    first -= spare // 2
    last = first + bins - 1
    return (first << shift) - 1, (last << shift) | ((1 << shift) - 1), True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--p", type=float, default=0.9)
    ap.add_argument("--max-band", type=float, default=0.75 * NSEG * 256)
    ap.add_argument("--cap-seg", type=int, default=256)
    ap.add_argument("--no-widen", action="store_true")
    ap.add_argument("--dtypes", default="float32,bfloat16", help="of float32, bfloat16, float16")
    ap.add_argument("--bins", type=int, default=0,
                    help="model the band from the sample's counts in this many bins instead "
                         "of its order statistics (0)")
    ap.add_argument("--key-bins", type=int, default=0,
                    help="16-bit rows: the keyed band (wide.widen_to_bins): a band spanning at "
                         "most this many values is widened to that many and counted per value "
                         "(it finishes whenever it holds T); 0: off")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    for name, x32 in [("zipf", generators.zipf_logits(args.rows, V, 1.1, rng)),
                      ("gaussian", generators.gaussian_logits(args.rows, V, 2.0, rng))]:
        rounded = {"float32": x32, "bfloat16": generators.bf16_round(x32),
                   "float16": x32.astype(np.float16).astype(np.float32)}
        for dtype in args.dtypes.split(","):
            x = rounded[dtype]
            held = finished = 0
            entries, per_seg, distinct, spans = [], [], [], []
            shift = {"bfloat16": 16, "float16": 13}.get(dtype, 0)
            keyed_rows = 0
            for row in x:
                if args.bins:
                    b_lo, b_hi = binned_band(row, args.p, args.max_band, args.bins)
                else:
                    b_lo, b_hi = band(row, args.p, args.max_band, not args.no_widen)
                keyed = False
                if args.key_bins and shift:
                    b_lo, b_hi, keyed = widen_to_bins(b_lo, b_hi, shift, args.key_bins)
                    keyed_rows += keyed
                spans.append((b_hi >> shift) - ((b_lo + 1) >> shift) + 1 if shift else 0)
                keep = oracle.keep_mask(row[None], None, args.p)[0]
                keys = order_key(row)
                T = int(keys[keep].min())
                inside = (keys > b_lo) & (keys <= b_hi)
                seg_max = int(inside.reshape(NSEG, SEG).sum(1).max())
                n_keys = len(np.unique(keys[inside]))
                entries.append(int(inside.sum()))
                per_seg.append(seg_max)
                distinct.append(n_keys)
                if b_lo < T <= b_hi:
                    held += 1
                    finished += seg_max <= args.cap_seg or n_keys == 1 or keyed
            print(f"{name:8s} {dtype:8s} p={args.p}: band holds T {held}/{len(x)}, finishes "
                  f"{finished}/{len(x)}; entries median {int(np.median(entries))} max "
                  f"{max(entries)}; fullest segment median {int(np.median(per_seg))} "
                  f"(slots {args.cap_seg}); distinct keys median {int(np.median(distinct))}"
                  + (f"; values spanned median {int(np.median(spans))} max {max(spans)}"
                     if shift else "")
                  + (f"; keyed rows {keyed_rows}" if args.key_bins and shift else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
