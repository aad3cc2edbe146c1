"""``python -m qrita``: a short demonstration; ``python -m qrita bench [args]``: the benchmarks.

The demonstration masks two sample batches of logits (Zipf-like and Gaussian, B=4, V=32000) on the
best available backend (torch CUDA with the Triton kernels, else the NumPy reference), prints what
each row kept and how long each call took, checks every result against the oracle and prints OK.
"""

from __future__ import annotations

import importlib.util
import runpy
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import qrita
from qrita.reference import oracle

B, V = 4, 32000
K_ROWS = [1, 20, 50, 1000]
P_ROWS = [0.5, 0.8, 0.9, 0.95]
SHOW = 5

USAGE = """usage: python -m qrita            run the demonstration
       python -m qrita bench ...  run benchmarks/bench.py (repository checkout) with the arguments
"""


def sample_batches(seed: int = 0) -> dict[str, np.ndarray]:
    """Two (B, V) float32 batches: Zipf-like (logit = -s log rank) and Gaussian."""
    rng = np.random.default_rng(seed)
    zipf = np.empty((B, V), dtype=np.float32)
    for b in range(B):
        s = 1.0 + 0.1 * b
        ranks = rng.permutation(V) + 1
        zipf[b] = -s * np.log(ranks) + 0.01 * rng.standard_normal(V)
    scale = np.arange(1, B + 1, dtype=np.float64)[:, None]  # row b: N(0, (b + 1)^2)
    gauss = (rng.standard_normal((B, V)) * scale).astype(np.float32)
    return {"zipf": zipf, "gaussian": gauss}


def pick_backend() -> tuple[str, Any]:
    """("torch-cuda", torch) when a CUDA device and the kernels are usable, else ("numpy", None)."""
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("triton") is None:
        return "numpy", None
    import torch

    if not torch.cuda.is_available():
        return "numpy", None
    try:
        from qrita.backends.triton import ops  # noqa: F401
    except ImportError:
        return "numpy", None
    return f"torch-cuda ({torch.cuda.get_device_name()})", torch


def _host(a: Any) -> np.ndarray:
    return a if isinstance(a, np.ndarray) else a.detach().cpu().numpy()


def _check_mask(out: np.ndarray, logits: np.ndarray, k: Any, p: Any, fill: float) -> None:
    try:
        from qrita.testing.compare import assert_mask_matches
    except ImportError:
        want = oracle.top_k_top_p_mask(logits, k, p, fill=fill)
        if not np.array_equal(out.view(np.uint32), want.view(np.uint32)):
            raise AssertionError("mask differs from the oracle") from None
        return
    assert_mask_matches(out, logits, k, p, fill)


def _timed(fn: Any, sync: Any) -> tuple[Any, float]:
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    return out, (time.perf_counter() - t0) * 1e3


def _kept_summary(out: np.ndarray) -> list[str]:
    lines = []
    kept = out != -np.inf
    ordr = oracle.order(out)
    for b in range(out.shape[0]):
        n = int(kept[b].sum())
        first = ", ".join(str(int(i)) for i in ordr[b, : min(SHOW, n)])
        more = ", ..." if n > SHOW else ""
        lines.append(f"      row {b}: kept {n:5d}  top indices [{first}{more}]")
    return lines


def demo() -> int:
    backend, torch = pick_backend()
    print(f"qrita {qrita.__version__} demonstration: backend {backend}, B={B}, V={V}")
    if torch is not None:

        def to_dev(a: np.ndarray) -> Any:
            return torch.from_numpy(a).to("cuda")

        sync = torch.cuda.synchronize
    else:

        def to_dev(a: np.ndarray) -> Any:
            return a

        def sync() -> None:
            return None

    k_np, p_np = np.array(K_ROWS, dtype=np.int64), np.array(P_ROWS, dtype=np.float32)
    failures = 0
    for name, logits in sample_batches().items():
        x = to_dev(logits)
        kd, pd = to_dev(k_np), to_dev(p_np)
        calls = [
            ("top_k(x, 8)", lambda x=x: qrita.top_k(x, 8), None, None),
            (f"top_k_mask(x, k={K_ROWS})", lambda x=x, kd=kd: qrita.top_k_mask(x, kd), k_np, None),
            ("top_p_mask(x, 0.9)", lambda x=x: qrita.top_p_mask(x, 0.9), None, 0.9),
            (
                f"top_k_top_p_mask(x, 50, p={P_ROWS})",
                lambda x=x, pd=pd: qrita.top_k_top_p_mask(x, 50, pd),
                50,
                p_np,
            ),
        ]
        print(f"\n  {name} logits")
        for label, fn, k, p in calls:
            if torch is not None:
                fn()  # warm-up: compiles the kernels
            out, ms = _timed(fn, sync)
            print(f"    {label}: {ms:.2f} ms")
            try:
                if label.startswith("top_k("):
                    vals, idx = _host(out.values), _host(out.indices)
                    want = oracle.top_k(logits, 8)
                    same = np.array_equal(idx, want.indices) and np.array_equal(vals, want.values)
                    if not same:
                        raise AssertionError("top_k differs from the oracle")
                    for b in range(B):
                        print(f"      row {b}: indices {idx[b].tolist()}")
                else:
                    host = _host(out)
                    _check_mask(host, logits, k, p, -np.inf)
                    print("\n".join(_kept_summary(host)))
            except AssertionError as exc:
                failures += 1
                print(f"    MISMATCH: {exc}")
    if failures:
        print(f"\nFAILED: {failures} result(s) differ from the oracle")
        return 1
    print("\nall results match the oracle: OK")
    return 0


def bench_script() -> Path:
    """``benchmarks/bench.py`` next to the package (it exists in a repository checkout)."""
    return Path(__file__).resolve().parent.parent / "benchmarks" / "bench.py"


def bench(args: list[str]) -> int:
    """Run ``benchmarks/bench.py`` as ``__main__`` with ``args``; its exit status is returned."""
    script = bench_script()
    if not script.is_file():
        print(
            "qrita: the benchmarks live in benchmarks/bench.py of a repository checkout; "
            f"{script} does not exist (run this from a git checkout of qrita)",
            file=sys.stderr,
        )
        return 2
    old_argv = sys.argv
    sys.argv = [str(script), *args]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        sys.argv = old_argv
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        return demo()
    if args[0] == "bench":
        return bench(args[1:])
    if args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0
    print(USAGE, end="", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
