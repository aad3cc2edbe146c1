"""Plot a bench.py CSV: time vs batch size, log-log, one line per implementation.

    python benchmarks/plot.py results/bench_YYYYmmdd_HHMMSS.csv [--out DIR]

One PNG per (op, dtype); facets: one row per (workload, scenario), one column per V. The HBM floor
(bytes / measured copy bandwidth) is drawn dashed. Needs matplotlib; without it, prints why and exits 0.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys

__all__ = ["load_rows", "plot_csv", "main"]


def load_rows(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _f(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def plot_csv(path: str, out_dir: str | None = None) -> list[str]:
    """Write the PNGs for the CSV at ``path``; returns their paths ([] if nothing to plot).

    Raises ImportError if matplotlib is missing.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in load_rows(path) if not math.isnan(_f(r.get("us_median")))]
    out_dir = out_dir or os.path.dirname(os.path.abspath(path))
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(path))[0]
    written = []
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["op"], r["dtype"]), []).append(r)
    for (op, dtype), grp in sorted(groups.items()):
        facets_r = sorted({(r["workload"], r["scenario"]) for r in grp})
        facets_c = sorted({int(r["V"]) for r in grp})
        impls = []
        for r in grp:
            if r["impl"] not in impls:
                impls.append(r["impl"])
        nr, nc = len(facets_r), len(facets_c)
        fig, axes = plt.subplots(nr, nc, figsize=(4.2 * nc, 3.2 * nr), squeeze=False, sharex=True)
        for i, (w, sc) in enumerate(facets_r):
            for j, V in enumerate(facets_c):
                ax = axes[i][j]
                sub = [r for r in grp if (r["workload"], r["scenario"], int(r["V"])) == (w, sc, V)]
                for impl in impls:
                    pts = sorted((int(r["B"]), _f(r["us_median"])) for r in sub if r["impl"] == impl)
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=impl)
                    gpts = sorted((int(r["B"]), _f(r.get("us_graph"))) for r in sub
                                  if r["impl"] == impl and not math.isnan(_f(r.get("us_graph"))))
                    if gpts and impl == impls[0]:
                        ax.plot([p[0] for p in gpts], [p[1] for p in gpts], marker="x", ms=3,
                                ls=":", label=f"{impl} (graph)")
                floor = sorted({(int(r["B"]), _f(r["floor_us"])) for r in sub
                                if not math.isnan(_f(r["floor_us"]))})
                if floor:
                    ax.plot([p[0] for p in floor], [p[1] for p in floor], ls="--", color="gray",
                            lw=1, label="HBM floor")
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_title(f"{w} {sc}, V={V}", fontsize=9)
                ax.grid(True, which="both", alpha=0.3)
                if j == 0:
                    ax.set_ylabel("µs (median)")
                if i == nr - 1:
                    ax.set_xlabel("batch B")
                if i == 0 and j == nc - 1:
                    ax.legend(fontsize=7)
        dev = grp[0].get("device", "")
        fig.suptitle(f"qrita {op}, {dtype} — {dev}", fontsize=11)
        fig.tight_layout(rect=(0, 0, 1, 0.98))
        png = os.path.join(out_dir, f"{stem}_{op}_{dtype}.png")
        fig.savefig(png, dpi=110)
        plt.close(fig)
        written.append(png)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Plot a benchmarks/bench.py CSV (time vs batch).")
    ap.add_argument("csv", help="CSV written by bench.py")
    ap.add_argument("--out", default=None, help="output directory (default: the CSV's directory)")
    a = ap.parse_args(argv)
    try:
        paths = plot_csv(a.csv, a.out)
    except ImportError as e:
        print(f"plot: matplotlib is not available ({e}); nothing plotted", file=sys.stderr)
        return 0
    for p in paths:
        print(p)
    if not paths:
        print("plot: no timed rows in the CSV", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
