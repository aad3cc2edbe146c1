"""``import qrita`` is cheap: NumPy only, no torch / JAX / CuPy / Triton."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import qrita

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "jax", "jaxlib", "cupy", "triton")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )


def test_import_loads_no_array_library():
    code = (
        "import sys, qrita\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    r = _run(code)
    assert r.returncode == 0, r.stderr


def test_numpy_calls_load_no_array_library():
    code = (
        "import sys, numpy as np, qrita\n"
        "x = np.arange(12, dtype=np.float32).reshape(3, 4)\n"
        "qrita.top_k(x, 2); qrita.top_k_top_p_mask(x, 2, 0.9); qrita.top_p_mask(x[0], 0.5)\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    r = _run(code)
    assert r.returncode == 0, r.stderr


def test_public_surface():
    assert qrita.__version__ == "0.1.0"
    assert sorted(qrita.__all__) == sorted(
        ["TopK", "top_k", "top_k_mask", "top_p_mask", "top_k_top_p_mask", "Candidates",
         "candidates", "sample", "top_k_top_p_probs", "__version__"]
    )
    for name in qrita.__all__:
        assert hasattr(qrita, name)
    for fn in (qrita.top_k, qrita.top_k_mask, qrita.top_p_mask, qrita.top_k_top_p_mask):
        doc = fn.__doc__ or ""
        assert "Parameters" in doc and "Returns" in doc, fn.__name__


def test_py_typed_marker():
    assert (Path(qrita.__file__).parent / "py.typed").is_file()
