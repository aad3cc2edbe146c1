"""The Triton test modules' shared set-up: torch and triton (or a module-level skip), whether a
GPU is there, and the device the kernels run on.

On a machine without a GPU device node the kernels run under the Triton interpreter; the choice
is read when triton is first imported, so it is made here (and in tests/conftest.py for the whole
session) before anything imports triton.
"""

from __future__ import annotations

import os

import pytest

if not (os.path.exists("/dev/nvidia0") or os.path.exists("/dev/kfd")):
    os.environ.setdefault("TRITON_INTERPRET", "1")

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

ON_GPU = torch.cuda.is_available()
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
if not ON_GPU and not INTERPRET:
    raise RuntimeError("no GPU and TRITON_INTERPRET is not 1: set it before triton is imported")

DEVICE = "cuda" if ON_GPU else "cpu"
