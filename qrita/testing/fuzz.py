"""Random differential fuzzing of the Triton masks and ``top_k`` against the oracle.

    python -m qrita.testing.fuzz [--seconds 600] [--seed 1] [--max-vocab 3001]

Each case draws a generator family (``generators._family_batches``: ties at the boundary,
all-equal, grammar (-inf), NaN, +inf, zipf, gaussian, ...), a vocabulary size (odd ones
included), 1-4 rows, a dtype (float32 / bfloat16 / float16), and top-k, top-p, both, or a
``top_k`` selection with edge and random k / p, scalar or per row (k in {0, 1, V - 1, V, > V},
p in {0, tiny, 1, NaN}). A third of the cases force the one-launch kernels, with their scratch
kept or zeroed. Every answer is checked with :mod:`qrita.testing.compare` (full masks, rule 5's
margin for top-p). Without a GPU the kernels run under ``TRITON_INTERPRET=1`` (set here when
no GPU device node exists); on a GPU the same cases run the compiled kernels.

A failing case is printed with everything needed to replay it (seed, case number and
parameters) and its logits are saved as ``.npy`` under ``--out``. Exit status: the number of
failures (0: none), capped at 100.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from typing import Any

import numpy as np

__all__ = ["Case", "draw_case", "run_case", "main"]

VOCABS = (1, 2, 3, 7, 97, 255, 256, 257, 1000, 1023, 1025, 2049, 3001)
DTYPES = ("float32", "bfloat16", "float16")
ONE_LAUNCH_ENV = ("QRITA_ONE_LAUNCH", "QRITA_ONE_LAUNCH_SCRATCH")


class Case(dict):
    """One drawn case: ``x`` (B, V) float32 values exactly representable in ``dtype``, ``kind``
    ("mask" or "top_k"), ``k`` / ``p`` (None, a scalar or a (B,) array), ``env`` (environment
    settings for the call) and ``family``."""


def _k(rng: np.random.Generator, V: int, B: int) -> Any:
    choice = int(rng.integers(3))
    if choice == 0:
        return int(rng.choice([0, 1, V - 1, V, V + 3, max(1, V // 2)]))
    if choice == 1:
        return rng.integers(-1, V + 2, size=B).astype(np.int64)
    return int(rng.integers(1, max(2, V)))


def _p(rng: np.random.Generator, B: int) -> Any:
    choice = int(rng.integers(3))
    if choice == 0:
        return float(rng.choice([0.0, 1e-9, 0.5, 0.9, 0.99, 1.0, 1 - 1e-7]))
    if choice == 1:
        return rng.choice([0.0, 0.3, 0.9, 1.0, np.nan, 1e-6], size=B).astype(np.float32)
    return float(rng.uniform(0.0, 1.0))


def draw_case(rng: np.random.Generator, max_vocab: int = 3001) -> Case:
    """Draw one case (see the module docstring)."""
    from qrita.testing import generators

    V = int(rng.choice([v for v in VOCABS if v <= max_vocab]))
    families = generators._family_batches(V, rng)
    family, batch = families[int(rng.integers(len(families)))]
    B = min(len(batch), int(rng.integers(1, 5)))
    dtype = str(rng.choice(DTYPES))
    x = np.asarray(generators.to_dtype(batch[:B].astype(np.float32), dtype), dtype=np.float32)
    kind = int(rng.integers(4))
    k = _k(rng, V, B) if kind in (0, 2) else None
    p = _p(rng, B) if kind in (1, 2) else None
    if kind == 3:
        k = int(rng.integers(0, V + 1))
    env = {}
    if rng.integers(3) == 0:
        env = {"QRITA_ONE_LAUNCH": "1",
               "QRITA_ONE_LAUNCH_SCRATCH": str(rng.choice(["keep", "zero"]))}
    return Case(x=x, dtype=dtype, kind="top_k" if kind == 3 else "mask", k=k, p=p, env=env,
                family=family)


def _float32_bits(t) -> np.ndarray:
    """A float32 / bfloat16 / float16 torch tensor as float32 NumPy values, converted element by
    element through its bits (torch's CPU half-to-float conversion gives a NaN one payload in
    its vectorised body and another in the scalar tail)."""
    import torch

    t = t.detach().cpu()
    if t.dtype == torch.float16:
        return t.view(torch.int16).numpy().view(np.float16).astype(np.float32)
    if t.dtype == torch.bfloat16:
        bits = t.view(torch.int16).numpy().astype(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32)
    return t.numpy()


def run_case(case: Case, device: str) -> None:
    """Run one case through the Triton ops and check it against the oracle (raises
    AssertionError on a wrong answer)."""
    import torch

    from qrita.backends.triton import ops
    from qrita.testing import compare

    torch_dtype = getattr(torch, case["dtype"])
    xt = torch.from_numpy(case["x"]).to(device=device, dtype=torch_dtype)
    # the kernel's input exactly, as float32 (a 16-bit NaN keeps no float32 payload)
    x_ref = _float32_bits(xt)
    saved = {name: os.environ.get(name) for name in ONE_LAUNCH_ENV}
    os.environ.update(case["env"])
    try:
        k, p = case["k"], case["p"]
        if case["kind"] == "top_k":
            if k == 0:
                return
            values, indices = ops.top_k(xt, k)
            compare.assert_topk_matches(_float32_bits(values), indices.cpu().numpy(), x_ref, k)
            return
        kt = torch.from_numpy(k).to(device) if isinstance(k, np.ndarray) else k
        pt = torch.from_numpy(p).to(device) if isinstance(p, np.ndarray) else p
        out = ops.top_k_top_p_mask(xt, kt, pt)
        compare.assert_mask_matches(_float32_bits(out), x_ref, k, p)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--cases", type=int, default=0, help="stop after this many (0: by time)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-vocab", type=int, default=3001)
    ap.add_argument("--out", default="fuzz_failures")
    args = ap.parse_args(argv)
    if not (os.path.exists("/dev/nvidia0") or os.path.exists("/dev/kfd")):
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    rng = np.random.default_rng(args.seed)
    t_end = time.perf_counter() + args.seconds
    done = failures = 0
    while time.perf_counter() < t_end and (args.cases <= 0 or done < args.cases):
        case = draw_case(rng, args.max_vocab)
        try:
            run_case(case, device)
        except Exception:
            failures += 1
            os.makedirs(args.out, exist_ok=True)
            path = os.path.join(args.out, f"seed{args.seed}_case{done}.npy")
            np.save(path, case["x"])
            shown = {key: value for key, value in case.items() if key != "x"}
            print(f"FAIL seed {args.seed} case {done} ({path}): {shown}", file=sys.stderr)
            traceback.print_exc()
        done += 1
    print(f"fuzz seed {args.seed}: {done} cases, {failures} failures ({device})")
    return min(failures, 100)


if __name__ == "__main__":
    raise SystemExit(main())
