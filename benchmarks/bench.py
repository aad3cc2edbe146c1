"""GPU benchmark of qrita's masks and selection against its peers.

Run ``python benchmarks/bench.py --help``; as a library: ``benchmarks.bench.main(argv)``.
See benchmarks/README.md for what each column means.

Per cell (op, workload, scenario, B, V, dtype) and implementation it
1. calls the op once and checks a few rows against the NumPy oracle (a failure goes into the table,
   it does not stop the run),
2. measures the peak extra memory of one call,
3. times it with ``triton.testing.do_bench`` (median, L2 flushed before each call), and with
   ``--graphs`` also as a CUDA-graph replay.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import gc
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

from benchmarks import baselines

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ------------------------------------------------------------------------------------------ grid
DEFAULT_OPS = ["masks", "top_k", "sample"]
DEFAULT_BATCH = [1, 8, 64, 256, 1024]
DEFAULT_VOCAB = [32768, 131072, 262144]
DEFAULT_DTYPES = ["float32", "bfloat16"]
DEFAULT_WORKLOADS = ["zipf", "gaussian"]
DEFAULT_PEERS = ["torch_sort", "flashinfer"]

QUICK = dict(batch=[1, 64], vocab=[32768], dtypes=["float32"], workloads=["zipf", "gaussian"])

ZIPF_S = 1.1
GAUSS_SIGMA = 2.0

#: mask scenarios per workload: (name, k, p)
MASK_SCENARIOS = {
    "zipf": [
        ("topk50", 50, None),
        ("topp0.9", None, 0.9),
        ("topk100_topp0.9", 100, 0.9),
        ("topk1000", 1000, None),
        ("topp0.99", None, 0.99),
    ],
    "gaussian": [
        ("topk50", 50, None),
        ("topp0.9", None, 0.9),
        ("topp0.99", None, 0.99),
    ],
}
#: selection scenarios: (name, k)
SELECT_SCENARIOS = [("k50", 50), ("k1000", 1000)]
#: the sampler's seed (qrita.sample's tokens are then reproducible: checked against the reference)
SAMPLE_SEED = 20261130

CSV_COLUMNS = [
    "device",
    "torch",
    "triton",
    "qrita_commit",
    "command",
    "op",
    "workload",
    "scenario",
    "B",
    "V",
    "dtype",
    "impl",
    "us_median",
    "us_graph",
    "bytes",
    "gbps",
    "floor_us",
    "floor_ratio",
    "peak_extra_mib",
    "persistent_mib",
    "speedup_vs_torch_sort",
    "correct",
    "note",
]


def _csv_list(cast):
    def parse(s: str):
        items = [t.strip() for t in s.split(",") if t.strip()]
        return [cast(t) for t in items]

    return parse


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="bench.py",
        description="Benchmark qrita top-k / top-p masks and top-k selection against peers (CUDA).",
    )
    ap.add_argument("--ops", type=_csv_list(str), default=None,
                    help="comma list of: masks, top_k, sample (default: all three)")
    ap.add_argument("--batch", type=_csv_list(int), default=None,
                    help="comma list of batch sizes (default 1,8,64,256,1024)")
    ap.add_argument("--vocab", type=_csv_list(int), default=None,
                    help="comma list of vocabulary sizes (default 32768,131072,262144)")
    ap.add_argument("--dtypes", type=_csv_list(str), default=None,
                    help="comma list of: float32, bfloat16, float16 (default float32,bfloat16)")
    ap.add_argument("--workloads", type=_csv_list(str), default=None,
                    help="comma list of: zipf, gaussian (default both)")
    ap.add_argument("--scenarios", type=_csv_list(str), default=None,
                    help="only these scenario names (e.g. topk50,topp0.9,k50); default all")
    ap.add_argument("--peers", type=_csv_list(str), default=None,
                    help="comma list of: torch_sort, flashinfer (default both; '' for none)")
    ap.add_argument("--no-qrita", action="store_true", help="time the peers only")
    ap.add_argument("--quick", action="store_true",
                    help="tiny grid for a smoke test (B=1,64; V=32768; float32)")
    ap.add_argument("--graphs", action="store_true",
                    help="also time a CUDA-graph replay of each call")
    ap.add_argument("--per-row", action="store_true",
                    help="pass k and p to the masks as per-row (B,) tensors instead of scalars")
    ap.add_argument("--warmup", type=float, default=None, help="do_bench warmup, ms (default 10)")
    ap.add_argument("--rep", type=float, default=None, help="do_bench repetition time, ms (default 50)")
    ap.add_argument("--max-call-ms", type=float, default=1000.0,
                    help="an implementation whose single call takes longer is timed once, not with "
                         "do_bench (keeps a pathological path from eating the budget; default 1000)")
    ap.add_argument("--check-rows", type=int, default=3,
                    help="rows per cell checked against the oracle (0: no check)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="results", help="directory for the CSV (default results/)")
    ap.add_argument("--plot", action="store_true", help="write PNG plots of the CSV at the end")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--cpu-debug", action="store_true",
                    help="run on CPU tensors with wall-clock timing, to develop the harness (no GPU "
                         "numbers, no memory figures)")
    return ap


def parse_args(argv=None) -> argparse.Namespace:
    """Parse and fill defaults (``--quick`` only changes what was not given explicitly)."""
    a = build_parser().parse_args(argv)
    q = a.quick
    a.ops = a.ops if a.ops is not None else list(DEFAULT_OPS)
    a.batch = a.batch if a.batch is not None else list(QUICK["batch"] if q else DEFAULT_BATCH)
    a.vocab = a.vocab if a.vocab is not None else list(QUICK["vocab"] if q else DEFAULT_VOCAB)
    a.dtypes = a.dtypes if a.dtypes is not None else list(QUICK["dtypes"] if q else DEFAULT_DTYPES)
    a.workloads = (a.workloads if a.workloads is not None
                   else list(QUICK["workloads"] if q else DEFAULT_WORKLOADS))
    a.peers = a.peers if a.peers is not None else list(DEFAULT_PEERS)
    a.warmup = a.warmup if a.warmup is not None else (5.0 if q else 10.0)
    a.rep = a.rep if a.rep is not None else (20.0 if q else 50.0)
    errors = []
    for op in a.ops:
        if op not in ("masks", "top_k", "sample"):
            errors.append(f"unknown op {op!r} (masks, top_k, sample)")
    for w in a.workloads:
        if w not in MASK_SCENARIOS:
            errors.append(f"unknown workload {w!r} (zipf, gaussian)")
    for d in a.dtypes:
        if d not in ("float32", "bfloat16", "float16"):
            errors.append(f"unknown dtype {d!r} (float32, bfloat16, float16)")
    for p in a.peers:
        if p not in baselines.MASK_IMPLS:
            errors.append(f"unknown peer {p!r} ({', '.join(baselines.MASK_IMPLS)})")
    if any(b <= 0 for b in a.batch) or any(v <= 0 for v in a.vocab):
        errors.append("batch and vocab sizes must be positive")
    if errors:
        build_parser().error("; ".join(errors))
    a.impls = ([] if a.no_qrita else ["qrita"]) + [p for p in a.peers if p != "qrita"]
    return a


@dataclass(frozen=True)
class Cell:
    op: str  # "masks" | "top_k" | "sample"
    workload: str
    scenario: str
    B: int
    V: int
    dtype: str
    k: int | None = None
    p: float | None = None


def _select_scenarios(want: set[str] | None) -> list[tuple[str, int]]:
    """:data:`SELECT_SCENARIOS`, and any other ``k<N>`` named in ``--scenarios`` (e.g. k4096:
    the k the fast path does not take)."""
    extra = sorted((name, int(name[1:])) for name in (want or ())
                   if name[:1] == "k" and name[1:].isdigit()
                   and name not in dict(SELECT_SCENARIOS))
    return SELECT_SCENARIOS + extra


def grid_cells(args) -> list[Cell]:
    """Every cell of the grid, in run order (inputs are shared by consecutive cells)."""
    out = []
    want = set(args.scenarios) if args.scenarios else None
    for w in args.workloads:
        for V in args.vocab:
            for B in args.batch:
                for dt in args.dtypes:
                    if "masks" in args.ops:
                        for name, k, p in MASK_SCENARIOS[w]:
                            if want is None or name in want:
                                out.append(Cell("masks", w, name, B, V, dt, k, p))
                    if "top_k" in args.ops:
                        for name, k in _select_scenarios(want):
                            if (want is None or name in want) and k <= V:
                                out.append(Cell("top_k", w, name, B, V, dt, k, None))
                    if "sample" in args.ops:
                        for name, k, p in MASK_SCENARIOS[w]:
                            if want is None or name in want:
                                out.append(Cell("sample", w, name, B, V, dt, k, p))
    return out


# ------------------------------------------------------------------------------------ workloads
def _local_zipf_logits(B, V, s, rng):
    ranks = np.arange(1, V + 1, dtype=np.float64)
    logw = -s * np.log(ranks)
    logp = logw - np.log(np.exp(logw - logw.max()).sum()) - logw.max()
    return rng.permuted(np.broadcast_to(logp, (B, V)), axis=1).astype(np.float32)


def _local_gaussian_logits(B, V, sigma, rng):
    return (rng.standard_normal((B, V), dtype=np.float32) * np.float32(sigma)).astype(np.float32)


def _generators():
    """(zipf_logits, gaussian_logits, source) from qrita.testing.generators, else local ones."""
    try:
        from qrita.testing import generators as g

        return g.zipf_logits, g.gaussian_logits, "qrita.testing.generators"
    except Exception:
        return _local_zipf_logits, _local_gaussian_logits, "local"


def make_logits(workload: str, B: int, V: int, rng) -> np.ndarray:
    """(B, V) float32 logits of a workload, as a NumPy array."""
    zipf, gauss, _ = _generators()
    if workload == "zipf":
        x = zipf(B, V, ZIPF_S, rng)
    elif workload == "gaussian":
        x = gauss(B, V, GAUSS_SIGMA, rng)
    else:
        raise ValueError(f"unknown workload {workload!r}")
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().float().cpu().numpy()
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32))


def make_device_logits(workload, B, V, seed, device, chunk=128):
    """(B, V) float32 logits on ``device``, generated on the host ``chunk`` rows at a time."""
    import torch

    rng = np.random.default_rng([seed, V, 0 if workload == "zipf" else 1])
    out = torch.empty((B, V), dtype=torch.float32, device=device)
    for r0 in range(0, B, chunk):
        n = min(chunk, B - r0)
        out[r0:r0 + n].copy_(torch.from_numpy(make_logits(workload, n, V, rng)))
    return out


# ----------------------------------------------------------------------------------- correctness
def check_rows_idx(B: int, n: int) -> list[int]:
    if n <= 0:
        return []
    return sorted({int(round(i)) for i in np.linspace(0, B - 1, num=min(n, B))})


def _oracle():
    from qrita.reference import oracle

    return oracle


def _shared_compare():
    """qrita.testing.compare, or None where it is not importable."""
    try:
        from qrita.testing import compare

        return compare
    except Exception:
        return None


class OracleCache:
    """The oracle's answer for one cell's checked rows, computed once and shared by every impl."""

    def __init__(self):
        self._key = None
        self._val = None

    def get(self, key, make):
        if key != self._key:
            self._key, self._val = key, make()
        return self._val


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def check_mask(x: np.ndarray, out: np.ndarray, k, p, kind: str = "logits",
               shared: bool = True, want: np.ndarray | None = None) -> tuple[bool, str]:
    """Compare a mask's output rows with the oracle (docs/spec.md, rule 5 margin for top-p).

    x, out : (n, V) float32 rows (input and implementation output; bfloat16 converted exactly).
    kind : "logits" (kept = unchanged, rest -inf) or "probs" (kept = probability > 0).
    shared : use ``qrita.testing.compare.assert_mask_matches`` for logits when importable; the
        local check below implements the same rule (kept values unchanged, top-k exact, top-p may
        differ only where the exact mass before the entry is within 1e-6 of p, kept set a prefix).
    want : the oracle's masked rows (``oracle.top_k_top_p_mask(x, k, p)``), if already computed: an
        output bit-identical to it is accepted without further work.
    Returns (ok, note).
    """
    if want is not None and kind == "logits" and out.shape == want.shape \
            and np.array_equal(_bits(out), _bits(want)):
        return True, ""
    cmp = _shared_compare() if shared else None
    if cmp is not None and kind == "logits":
        try:
            cmp.assert_mask_matches(out, x, k, p)
            return True, ""
        except AssertionError as e:
            return False, _short(e)
    o = _oracle()
    truth = (_bits(want) == _bits(x)) if want is not None else o.keep_mask(x, k, p)
    if kind == "logits":
        kept = out != -np.inf
        if not np.array_equal(out[kept], x[kept], equal_nan=True):
            return False, "kept values changed"
    else:
        kept = out > 0
    if np.array_equal(kept, truth):
        return True, ""
    notes = []
    k_rows, p_rows = o.row_params(k, p, x.shape[0], x.shape[1])
    for r in range(x.shape[0]):
        if np.array_equal(kept[r], truth[r]):
            continue
        n_imp, n_true = int(kept[r].sum()), int(truth[r].sum())
        if np.isnan(p_rows[r]):
            return False, f"row {r}: top-k set differs (kept {n_imp}, oracle {n_true})"
        ordr = o.order(x[r:r + 1])[0]
        kept_in_order = kept[r][ordr]
        if not np.all(kept_in_order[:n_imp]):
            return False, f"row {r}: kept set is not a prefix of the order (kept {n_imp}, oracle {n_true})"
        n_surv = int(k_rows[r]) if k_rows[r] > 0 else x.shape[1]
        before = o.mass_before(o.as_float64(x[r][ordr[:n_surv]]))
        lo, hi = min(n_imp, n_true), max(n_imp, n_true)
        if before is None or hi > n_surv or np.any(np.abs(before[lo:hi] - p_rows[r]) > 1e-6):
            return False, f"row {r}: top-p kept {n_imp}, oracle {n_true}"
        notes.append(f"row {r}: top-p boundary within 1e-6 ({n_imp} vs {n_true})")
    return True, "; ".join(notes)


def check_topk(x: np.ndarray, values: np.ndarray, indices: np.ndarray, k: int,
               exact_order: bool, shared: bool = True, ref=None) -> tuple[bool, str]:
    """Compare top-k rows with the oracle: exact order (qrita) or same set (peers, whose tie and
    output order are unspecified). Uses ``qrita.testing.compare.assert_topk_matches`` for the exact
    comparison when importable; ``ref`` is the oracle's ``top_k(x, k)`` if already computed."""
    if (ref is not None and exact_order and indices.shape == ref.indices.shape
            and values.shape == ref.values.shape and values.dtype == ref.values.dtype
            and np.array_equal(indices.astype(np.int64), ref.indices)
            and np.array_equal(_bits(values), _bits(ref.values))):
        return True, ""
    cmp = _shared_compare() if shared else None
    if cmp is not None and exact_order:
        try:
            cmp.assert_topk_matches(values, indices, x, k)
            return True, ""
        except AssertionError as e:
            return False, _short(e)
    ref = ref if ref is not None else _oracle().top_k(x, k)
    if values.shape != ref.values.shape or indices.shape != ref.indices.shape:
        return False, f"shape {indices.shape}, expected {ref.indices.shape}"
    if exact_order:
        if not np.array_equal(indices, ref.indices):
            return False, "indices differ from the oracle"
        if not np.array_equal(values, ref.values):
            return False, "values differ from the oracle"
        return True, ""
    if not np.array_equal(np.sort(indices, axis=-1), np.sort(ref.indices, axis=-1)):
        return False, "index set differs from the oracle"
    if not np.array_equal(np.take_along_axis(x, indices, axis=-1), values):
        return False, "values do not match their indices"
    return True, "set only (order not checked)"


def sample_reference(x: np.ndarray, k, p) -> tuple[np.ndarray, np.ndarray]:
    """(kept, tokens) of rows ``x`` (n, V): the oracle's keep-mask (the sampler's support) and
    the NumPy reference sampler's tokens for ``SAMPLE_SEED`` (offset 0), which qrita's GPU sampler
    must reproduce."""
    from qrita.reference import sampling as ref_sampling

    kept = _oracle().keep_mask(x, k, p)
    tokens = ref_sampling.sample(x, k, p, seed=SAMPLE_SEED, offset=0)
    return kept, np.asarray(tokens).reshape(-1).astype(np.int64)


def _rejection_draw(x: np.ndarray, k) -> bool:
    """Whether qrita.sample draws these rows by rejection (top-k off, not float64:
    docs/sampling.md, "Which draw"): its tokens then follow ``sample_topp_rejection``."""
    from qrita.reference import sampling as ref_sampling

    return bool(ref_sampling.top_k_off(k, x.shape[0], x.shape[1]).all()) and x.dtype != np.float64


def check_tokens(tokens: np.ndarray, ref: tuple[np.ndarray, np.ndarray],
                 exact: bool, x: np.ndarray | None = None, k=None, p=None) -> tuple[bool, str]:
    """Sampled token ids (n,) against :func:`sample_reference`: every token inside its row's kept
    set (all implementations), and, when ``exact`` (qrita, seeded), equal to the reference's,
    except where docs/sampling.md's 1e-6 margins allow another token (checked with
    :func:`qrita.testing.compare.assert_sampling_matches` when the rows ``x`` are given)."""
    kept, want = ref
    if tokens.shape != want.shape:
        return False, f"shape {tokens.shape}, expected {want.shape}"
    rows = np.arange(tokens.shape[0])
    inside = (tokens >= 0) & (tokens < kept.shape[1])
    inside[inside] = kept[rows[inside], tokens[inside]]
    if not inside.all():
        return False, f"rows {rows[~inside].tolist()}: token outside the kept set"
    if exact and not np.array_equal(tokens, want):
        differ = rows[tokens != want].tolist()
        if x is None:
            return False, f"rows {differ}: token differs from the reference's"
        from qrita.reference import sampling as ref_sampling
        from qrita.testing import compare

        if _rejection_draw(x, k):  # another token only where a draw came within the margins
            _, trace = ref_sampling.sample_topp_rejection(x, p, seed=SAMPLE_SEED, offset=0,
                                                          return_trace=True)
            far = [b for b in differ if not trace.near[b]]
            return (not far), (f"rows {far}: token differs from the reference's" if far
                               else f"rows {differ} within the margins")
        u = np.full(x.shape[0], float(ref_sampling.uniforms(SAMPLE_SEED, 0)))
        try:
            compare.assert_sampling_matches(x, u, k, p, tokens=tokens)
        except AssertionError as err:
            return False, f"rows {differ}: token differs from the reference's ({_short(err)})"
        return True, f"rows {differ}: another token within the 1e-6 margins"
    return True, "" if exact else "support only (random draw)"


def _short(e, n=160) -> str:
    s = " ".join(str(e).split())
    return s if len(s) <= n else s[: n - 3] + "..."


# ------------------------------------------------------------------------------------ formatting
def _fmt(v, nd=1):
    if v is None or v == "" or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:.0f}"
        return f"{v:.{nd}f}"
    return str(v)


def _num(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return float("nan")
    return f


def format_table(rows: list[dict]) -> str:
    """Plain-text table: one line per cell, one time column per implementation.

    Extra columns for the first implementation (normally qrita): ratio to the HBM floor, speedup vs
    torch_sort, peak extra MiB (and graph-replay µs when timed). ``ok`` lists the correctness of every
    implementation (y = matches the oracle, n = does not, E = raised, - = not checked).
    """
    if not rows:
        return "(no results)"
    impls = []
    for r in rows:
        if r["impl"] not in impls:
            impls.append(r["impl"])
    main = impls[0]
    graphs = any(not math.isnan(_num(r.get("us_graph"))) for r in rows)
    cells: dict[tuple, dict] = {}
    for r in rows:
        key = (r["op"], r["workload"], r["scenario"], r["dtype"], int(r["V"]), int(r["B"]))
        cells.setdefault(key, {})[r["impl"]] = r
    head = ["op", "workload", "scenario", "dtype", "V", "B", "floor_us"]
    head += [f"{i}_us" for i in impls]
    if graphs:
        head += [f"{main}_graph_us"]
    head += [f"{main}_xfloor", f"{main}_speedup", f"{main}_MiB", "ok"]
    lines = [head]
    mark = {"yes": "y", "no": "n", "error": "E", "skip": "-", "": "-"}
    for key, by in cells.items():
        any_r = next(iter(by.values()))
        line = list(map(str, key)) + [_fmt(_num(any_r.get("floor_us")))]
        for i in impls:
            r = by.get(i)
            line.append(_fmt(_num(r["us_median"])) if r else "")
        m = by.get(main, {})
        if graphs:
            line.append(_fmt(_num(m.get("us_graph"))))
        line += [
            _fmt(_num(m.get("floor_ratio")), 2),
            _fmt(_num(m.get("speedup_vs_torch_sort")), 2),
            _fmt(_num(m.get("peak_extra_mib")), 1),
            "".join(mark.get(str(by[i].get("correct", "")), "?") if i in by else " " for i in impls),
        ]
        lines.append(line)
    widths = [max(len(ln[c]) for ln in lines) for c in range(len(head))]
    out = []
    for n, ln in enumerate(lines):
        out.append("  ".join(s.rjust(w) if c >= 4 else s.ljust(w) for c, (s, w) in enumerate(zip(ln, widths))))
        if n == 0:
            out.append("-" * len(out[0]))
    out.append(f"(ok column, one letter per impl: {' '.join(impls)}; y = matches the oracle, "
               "n = differs, E = raised, - = not checked)")
    fails = [r for r in rows if r.get("correct") in ("no", "error")]
    for r in fails[:40]:
        out.append(f"  {r['correct'].upper()}: {r['impl']} {r['op']} {r['workload']} {r['scenario']} "
                   f"B={r['B']} V={r['V']} {r['dtype']}: {r.get('note', '')}")
    if len(fails) > 40:
        out.append(f"  ... and {len(fails) - 40} more failures (see the CSV)")
    return "\n".join(out)


class CsvWriter:
    """Appends rows to a CSV (header first), flushing each row so a killed run keeps its results."""

    def __init__(self, path: str):
        self.path = path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._f = open(path, "w", newline="")
        self._w = csv.DictWriter(self._f, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        self._w.writeheader()
        self._f.flush()

    def write(self, row: dict):
        self._w.writerow({c: _csv_val(row.get(c, "")) for c in CSV_COLUMNS})
        self._f.flush()

    def close(self):
        self._f.close()


def _csv_val(v):
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return f"{v:.6g}"
    return v


def write_csv(rows: list[dict], path: str) -> str:
    w = CsvWriter(path)
    for r in rows:
        w.write(r)
    w.close()
    return path


# -------------------------------------------------------------------------------------- metadata
def git_commit(path: str = REPO) -> str:
    """$QRITA_COMMIT when set (the device tool's copy of the repository may carry a stale
    ``.git``: pass the local ``git rev-parse --short HEAD`` in the command); else
    ``git rev-parse --short HEAD`` (+dirty); else "unknown"."""
    env = os.environ.get("QRITA_COMMIT", "").strip()
    if env:
        return env
    try:
        h = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=path, capture_output=True,
                           text=True, timeout=10)
        if h.returncode != 0:
            return env or "unknown"
        d = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=path,
                           capture_output=True, text=True, timeout=10)
        return h.stdout.strip() + ("+dirty" if d.stdout.strip() else "")
    except Exception:
        return env or "unknown"


def versions() -> dict:
    info = {"torch": "", "triton": ""}
    try:
        import torch

        info["torch"] = torch.__version__
    except Exception:
        pass
    try:
        import triton

        info["triton"] = triton.__version__
    except Exception:
        pass
    return info


class Progress:
    """tqdm if importable, else a one-line stderr counter."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.n, self.enabled = total, 0, enabled
        self.t0 = time.perf_counter()
        self._bar = None
        self._last = 0.0
        if enabled:
            try:
                from tqdm import tqdm

                tty = sys.stderr.isatty()
                self._bar = tqdm(total=total, file=sys.stderr, dynamic_ncols=True,
                                 mininterval=0.2 if tty else 15.0)
            except Exception:
                self._bar = None

    def update(self, desc: str):
        self.n += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_description_str(desc[:60], refresh=False)
            self._bar.update(1)
        else:
            el = time.perf_counter() - self.t0
            if sys.stderr.isatty():
                sys.stderr.write(f"\r[{self.n}/{self.total}] {el:6.0f}s {desc[:70]:<70}")
            elif el - self._last >= 15.0 or self.n == self.total:  # a log: a line every 15 s
                self._last = el
                sys.stderr.write(f"[{self.n}/{self.total}] {el:6.0f}s {desc[:70]}\n")
            sys.stderr.flush()

    def close(self):
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            sys.stderr.write("\n")


# ------------------------------------------------------------------------------------ GPU pieces
def _qrita_op(op: str):
    """qrita's function for an op, or raise with why it is unavailable."""
    import qrita

    return {"masks": qrita.top_k_top_p_mask, "top_k": qrita.top_k, "sample": qrita.sample}[op]


def _out_bytes(out) -> int:
    import torch

    if isinstance(out, torch.Tensor):
        return out.numel() * out.element_size()
    if isinstance(out, (tuple, list)):
        return sum(_out_bytes(o) for o in out)
    return 0


# --cpu-debug runs the whole harness on CPU tensors (wall-clock timing, no memory figures): for
# developing the harness on a machine without a GPU, never for numbers.
_CPU_DEBUG = False


def _device() -> str:
    return "cpu" if _CPU_DEBUG else "cuda"


def _sync():
    if not _CPU_DEBUG:
        _torch().cuda.synchronize()


def _mem_allocated() -> int:
    return 0 if _CPU_DEBUG else _torch().cuda.memory_allocated()


def measure_copy_bw(nbytes: int = 1 << 30, warmup=10, rep=100) -> float:
    """Device-to-device copy bandwidth in bytes/s (read + write counted), median of do_bench."""
    import torch

    if _CPU_DEBUG:
        nbytes = min(nbytes, 64 << 20)
    n = nbytes // 4
    src = torch.empty(n, dtype=torch.float32, device=_device()).normal_()
    dst = torch.empty_like(src)
    ms = time_us(lambda dst=dst, src=src: dst.copy_(src), warmup, rep) * 1e-3
    del src, dst
    if not _CPU_DEBUG:
        torch.cuda.empty_cache()
    return 2 * n * 4 / (ms * 1e-3)


def peak_extra_bytes(fn) -> int:
    """Peak allocator growth during one call, minus the output it returns."""
    import torch

    if _CPU_DEBUG:
        return float("nan")
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    extra = peak - base - _out_bytes(out)
    del out
    return max(extra, 0)


def time_us(fn, warmup, rep) -> float:
    """Median time of ``fn`` in µs: triton.testing.do_bench (L2 flushed before each call)."""
    if _CPU_DEBUG:
        ts = []
        t_end = time.perf_counter() + rep * 1e-3
        fn()
        while len(ts) < 3 or (time.perf_counter() < t_end and len(ts) < 1000):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return float(np.median(ts)) * 1e6
    from triton.testing import do_bench

    return do_bench(fn, warmup=warmup, rep=rep, return_mode="median") * 1e3


def time_once_us(fn) -> float:
    """One call, timed with device events (wall clock on CPU)."""
    if _CPU_DEBUG:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e6
    torch = _torch()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    e0.record()
    fn()
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1) * 1e3


def _same_output(a, b) -> bool:
    torch = _torch()
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and bool(
            torch.equal(a.view(torch.uint8) if a.is_floating_point() else a,
                        b.view(torch.uint8) if b.is_floating_point() else b))
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(
            _same_output(u, v) for u, v in zip(a, b))
    return False


def time_graph_us(fn, warmup, rep, expect=None) -> tuple[float, str]:
    """Capture one call in a CUDA graph and time its replay: (µs, note).

    An empty capture (the op ran outside the capture stream, or synchronised with the host) or a
    replay whose output differs from ``expect`` (an eager call's output) gives NaN and says why.
    """
    import warnings

    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.cuda.graph(g):
            out = fn()
    try:
        if any("empty" in str(w.message).lower() for w in caught):
            return float("nan"), "graph: captured nothing (the op is not capturable as called)"
        g.replay()
        torch.cuda.synchronize()
        if expect is not None and not _same_output(out, expect):
            return float("nan"), "graph: replay output differs from an eager call"
        return time_us(g.replay, warmup, rep), ""
    finally:
        del g, out


@dataclass
class RunState:
    args: argparse.Namespace
    meta: dict
    bw: float
    rows: list = field(default_factory=list)
    t_check: float = 0.0
    t_time: float = 0.0
    t_gen: float = 0.0
    oracle: OracleCache = field(default_factory=OracleCache)


def _impl_fn(cell: Cell, impl: str, x, k_arg, p_arg):
    """(zero-arg callable, output kind) for one implementation of one cell."""
    if cell.op == "masks":
        if impl == "qrita":
            f = _qrita_op("masks")
            return (lambda: f(x, k_arg, p_arg)), "logits"
        fn, kind = baselines.MASK_IMPLS[impl]
        if impl == "flashinfer":
            ok, why = baselines.flashinfer_available()
            if not ok:
                raise _Skip(f"flashinfer unavailable ({why})")
            kind = "logits" if cell.p is None else "probs"  # softmax in float32 when p is given
        return (lambda: fn(x, k_arg, p_arg)), kind
    if cell.op == "sample":
        if impl == "qrita":
            f = _qrita_op("sample")
            return (lambda: f(x, k=k_arg, p=p_arg, seed=SAMPLE_SEED)), "tokens"
        if impl == "flashinfer":
            ok, why = baselines.flashinfer_available()
            if not ok:
                raise _Skip(f"flashinfer unavailable ({why})")
        fn = baselines.SAMPLE_IMPLS[impl]
        return (lambda: fn(x, k_arg, p_arg)), "tokens"
    if impl == "qrita":
        f = _qrita_op("top_k")
        return (lambda: f(x, cell.k)), "topk"
    if impl == "flashinfer":
        ok, why = baselines.flashinfer_available()
        if not ok:
            raise _Skip(f"flashinfer unavailable ({why})")
    sel = baselines.SELECT_IMPLS[impl]
    return (lambda: sel(x, cell.k)), "topk"


class _Skip(Exception):
    pass


def _torch():
    import torch

    return torch


def run_cell(st: RunState, cell: Cell, x, x_check: np.ndarray | None, rows_idx, prog: Progress):
    """Check, measure and time every implementation of one cell; returns its rows."""
    torch = _torch()
    a = st.args
    esize = x.element_size()
    nbytes = cell.B * cell.V * esize * (2 if cell.op == "masks" else 1)  # selection, sampling: 1 read
    floor_us = nbytes / st.bw * 1e6
    if a.per_row and cell.op in ("masks", "sample"):
        k_arg = None if cell.k is None else torch.full((cell.B,), cell.k, dtype=torch.int64, device=x.device)
        p_arg = None if cell.p is None else torch.full((cell.B,), cell.p, dtype=torch.float32, device=x.device)
    else:
        k_arg, p_arg = cell.k, cell.p
    out_rows = []
    if x_check is not None:
        key = (cell.op, cell.workload, cell.B, cell.V, cell.dtype, cell.k, cell.p)
        if cell.op == "top_k":
            ref = st.oracle.get(key, lambda: _oracle().top_k(x_check, cell.k))
        elif cell.op == "sample":
            ref = st.oracle.get(key, lambda: sample_reference(x_check, cell.k, cell.p))
        else:
            ref = st.oracle.get(key, lambda: _oracle().top_k_top_p_mask(x_check, cell.k, cell.p))
    for impl in a.impls:
        row = dict(st.meta, op=cell.op, workload=cell.workload, scenario=cell.scenario, B=cell.B,
                   V=cell.V, dtype=cell.dtype, impl=impl, bytes=nbytes, floor_us=floor_us,
                   us_median=float("nan"), us_graph=float("nan"), gbps=float("nan"),
                   floor_ratio=float("nan"), peak_extra_mib=float("nan"),
                   persistent_mib=float("nan"), speedup_vs_torch_sort=float("nan"),
                   correct="skip", note="")
        notes = []
        try:
            fn, kind = _impl_fn(cell, impl, x, k_arg, p_arg)
            if impl == "flashinfer" and cell.op == "masks" and cell.p is not None:
                notes.append("softmax + top_p_renorm_probs (probs out)")
            # first call: compiles / allocates caches; its memory growth is "persistent"
            _sync()
            m0 = _mem_allocated()
            out = fn()
            _sync()
            if not _CPU_DEBUG:
                row["persistent_mib"] = max(_mem_allocated() - m0 - _out_bytes(out), 0) / 2**20
            # correctness
            if x_check is not None:
                t0 = time.perf_counter()
                try:
                    if kind == "tokens":
                        ok, note = check_tokens(out[rows_idx].cpu().numpy().astype(np.int64),
                                                ref, exact=(impl == "qrita"), x=x_check,
                                                k=cell.k, p=cell.p)
                    elif kind == "topk":
                        vals, idx = out[0], out[1]
                        ok, note = check_topk(
                            x_check, vals[rows_idx].float().cpu().numpy(),
                            idx[rows_idx].cpu().numpy().astype(np.int64), cell.k,
                            exact_order=(impl == "qrita"), ref=ref)
                    else:
                        o = out[rows_idx].float().cpu().numpy()
                        ok, note = check_mask(x_check, o, cell.k, cell.p, kind, want=ref)
                    row["correct"] = "yes" if ok else "no"
                    if note:
                        notes.append(note)
                except Exception as e:  # the checker itself failed
                    row["correct"] = "error"
                    notes.append(f"check raised {type(e).__name__}: {_short(e)}")
                st.t_check += time.perf_counter() - t0
            t0 = time.perf_counter()
            if impl == "qrita":
                # a second untimed call: qrita's eager graphs capture a key at its second call,
                # whose warm-up may compile the capture's kernels (a cold compile timed as the
                # cell's one call read 2.4 s, thirty-ninth session)
                fn()
                _sync()
            one_us = time_once_us(fn)
            slow = one_us > a.max_call_ms * 1e3
            if slow:  # a pathological path: one timed call; no memory figure, do_bench or graph
                us = one_us
                notes.append(f"slow: one call timed (> --max-call-ms {a.max_call_ms:g})")
            else:
                row["peak_extra_mib"] = peak_extra_bytes(fn) / 2**20
                us = time_us(fn, a.warmup, a.rep)
            row["us_median"] = us
            row["gbps"] = nbytes / (us * 1e-6) / 1e9
            row["floor_ratio"] = us / floor_us
            if a.graphs and not _CPU_DEBUG and not slow:
                try:
                    # a peer's sampler draws fresh random numbers per call: no replay comparison
                    random_out = kind == "tokens" and impl != "qrita"
                    g_us, g_note = time_graph_us(fn, a.warmup, a.rep,
                                                 expect=None if random_out else out)
                    row["us_graph"] = g_us
                    if g_note:
                        notes.append(g_note)
                except Exception as e:
                    notes.append(f"graph capture failed: {type(e).__name__}: {_short(e, 80)}")
                    _sync()
            del out
            st.t_time += time.perf_counter() - t0
        except _Skip as e:
            notes.append(str(e))
        except torch.cuda.OutOfMemoryError as e:
            row["correct"] = "error" if row["correct"] == "skip" else row["correct"]
            notes.append(f"OOM: {_short(e, 80)}")
        except Exception as e:
            if row["correct"] == "skip":
                row["correct"] = "error"
            notes.append(f"{type(e).__name__}: {_short(e)}")
        row["note"] = "; ".join(notes)
        out_rows.append(row)
        prog.update(f"{cell.op} {cell.workload} {cell.scenario} B={cell.B} V={cell.V} {cell.dtype} {impl}")
    ref = next((r for r in out_rows if r["impl"] == "torch_sort"), None)
    if ref is not None and not math.isnan(ref["us_median"]):
        for r in out_rows:
            if not math.isnan(r["us_median"]):
                r["speedup_vs_torch_sort"] = ref["us_median"] / r["us_median"]
    return out_rows


def run(args, command: str) -> list[dict]:
    """Run the whole grid on the current CUDA device; returns the rows (also written as CSV)."""
    torch = _torch()
    t_start = time.perf_counter()
    vers = versions()
    dev_name = ("cpu (--cpu-debug)" if _CPU_DEBUG
                else torch.cuda.get_device_name(torch.cuda.current_device()))
    meta = dict(device=dev_name, torch=vers["torch"], triton=vers["triton"],
                qrita_commit=git_commit(), command=command)
    print(f"device: {meta['device']}  torch {meta['torch']}  triton {meta['triton']}  "
          f"qrita {meta['qrita_commit']}", flush=True)
    print(f"workload generators: {_generators()[2]}", flush=True)
    for impl in args.impls:
        if impl == "flashinfer":
            ok, why = baselines.flashinfer_available()
            print(f"flashinfer: {'available' if ok else 'skipped (' + why + ')'}", flush=True)
    if "qrita" in args.impls:
        for op in args.ops:
            try:
                _qrita_op(op)
            except Exception as e:
                print(f"qrita {op}: unavailable ({type(e).__name__}: {_short(e)}); rows will say so",
                      flush=True)

    bw = measure_copy_bw()
    print(f"HBM copy bandwidth: {bw / 1e12:.2f} TB/s (floor_us = bytes / bandwidth)", flush=True)
    st = RunState(args=args, meta=meta, bw=bw)

    cells = grid_cells(args)
    stamp = _dt.datetime.now().strftime("%Y%m%d_%H%M%S")
    path = os.path.join(args.out, f"bench_{stamp}.csv")
    writer = CsvWriter(path)
    prog = Progress(len(cells) * len(args.impls), enabled=not args.no_progress)
    bmax = max(args.batch)
    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    try:
        i = 0
        while i < len(cells):
            w, V = cells[i].workload, cells[i].V
            t0 = time.perf_counter()
            base = make_device_logits(w, bmax, V, args.seed, _device())
            st.t_gen += time.perf_counter() - t0
            while i < len(cells) and (cells[i].workload, cells[i].V) == (w, V):
                B, dt = cells[i].B, cells[i].dtype
                x = base[:B] if dt == "float32" else base[:B].to(dtypes[dt])
                rows_idx = check_rows_idx(B, args.check_rows)
                x_check = x[rows_idx].float().cpu().numpy() if rows_idx else None
                while i < len(cells) and (cells[i].workload, cells[i].V, cells[i].B, cells[i].dtype) == (w, V, B, dt):
                    for r in run_cell(st, cells[i], x, x_check, rows_idx, prog):
                        writer.write(r)
                        st.rows.append(r)
                    i += 1
                del x
            del base
            gc.collect()
            if not _CPU_DEBUG:
                torch.cuda.empty_cache()
    finally:
        prog.close()
        writer.close()
    print(format_table(st.rows))
    total = time.perf_counter() - t_start
    print(f"\nCSV: {path}")
    print(f"run time {total:.1f} s (generating inputs {st.t_gen:.1f} s, oracle checks "
          f"{st.t_check:.1f} s, memory + timing {st.t_time:.1f} s); {len(cells)} cells x "
          f"{len(args.impls)} impls", flush=True)
    if args.plot:
        try:
            from benchmarks import plot

            for p in plot.plot_csv(path, args.out):
                print(f"plot: {p}")
        except Exception as e:
            print(f"plot skipped: {type(e).__name__}: {e}")
    return st.rows


def main(argv=None, prog: str | None = None) -> int:
    """Entry point; ``argv`` without the program name (``None``: sys.argv[1:])."""
    if argv is None:
        argv = sys.argv[1:]
    argv = list(argv)
    args = parse_args(argv)
    command = (prog or "python benchmarks/bench.py") + (" " + shlex.join(argv) if argv else "")
    try:
        import torch
    except Exception as e:
        print(f"bench: torch is required ({e})", file=sys.stderr)
        return 2
    global _CPU_DEBUG
    _CPU_DEBUG = bool(args.cpu_debug)
    if not _CPU_DEBUG and not torch.cuda.is_available():
        print("bench: no CUDA device is available; this benchmark needs a GPU "
              f"(torch {torch.__version__}, host {platform.node()}). Nothing was run.", file=sys.stderr)
        return 2
    run(args, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
