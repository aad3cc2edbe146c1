"""Shared pytest set-up: the ``gpu`` marker's skip, a Hypothesis profile, common fixtures."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

# Without a GPU device node, Triton kernels run under the interpreter. The choice is read when
# triton is first imported, so it is made here, before any test module imports it.
if not (os.path.exists("/dev/nvidia0") or os.path.exists("/dev/kfd")):
    os.environ.setdefault("TRITON_INTERPRET", "1")

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # hypothesis is a test extra; the suite's own tests do not all need it
    pass
else:
    settings.register_profile(
        "qrita",
        deadline=None,  # first calls pay for imports / JIT; timing is not what we test
        suppress_health_check=[HealthCheck.too_slow],
        print_blob=True,
    )
    settings.register_profile(
        "ci", parent=settings.get_profile("qrita"), derandomize=True, print_blob=True
    )
    settings.load_profile(os.environ.get("QRITA_HYPOTHESIS_PROFILE", "qrita"))


def cuda_available() -> bool:
    """True when torch is installed and sees a CUDA (or ROCm) device. Imports torch lazily."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items or cuda_available():
        return
    reason = "needs a CUDA GPU: torch is missing or torch.cuda.is_available() is False"
    for item in gpu_items:
        item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh, seeded NumPy generator per test."""
    return np.random.default_rng(20240601)


@pytest.fixture
def count_calls(monkeypatch: pytest.MonkeyPatch):
    """``count_calls(owner, name)`` replaces ``owner.name`` (for the test) by a wrapper that calls
    the original and appends 1 to the returned list per call: its length says how often a path
    was taken."""

    def install(owner: object, name: str) -> list[int]:
        calls: list[int] = []
        real = getattr(owner, name)

        def wrapper(*args, **kwargs):
            calls.append(1)
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)
        return calls

    return install
