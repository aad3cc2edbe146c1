"""Ahead-of-time builds of every kernel for NVIDIA and AMD targets, without a GPU
(:mod:`qrita.backends.triton.aot`).

This file's name sorts first, so pytest-xdist hands this test out at the start of the run: it
is the longest test (about half an hour on CI's two cores) and runs beside the others.
"""

from __future__ import annotations

import os
import subprocess
import sys

from qrita.backends.triton import aot


def test_aot_compiles_for_nvidia_and_amd():
    """Every kernel builds for sm90, sm100, gfx942 and gfx950 and each input dtype, in every
    launch variant (fp32; the 16-bit dtypes as the module docstring says), in one subprocess
    (no TRITON_INTERPRET there): 4 targets x 3 dtypes x 4 API variants."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-m", "qrita.backends.triton.aot"], env=env,
                          capture_output=True, text=True, timeout=3000)
    assert proc.returncode == 0, proc.stderr[-4000:]
    built = [ln for ln in proc.stdout.splitlines() if ln.startswith("built ")]
    n_variants = len(list(aot.variants()))
    assert len(built) == len(aot.TARGETS) * len(aot.DTYPES) * n_variants, proc.stdout[-2000:]
    for target in aot.TARGETS:
        for dtype in aot.DTYPES:
            select = [ln for ln in built
                      if ln.split()[1:4] == [target, dtype, "select_smallest"]]
            assert len(select) == 1, (target, dtype)
            assert " one_launch_select_True=" in select[0]
            assert " threshold_select_True=" in select[0]
            if dtype == aot.ALL_VARIANTS_DTYPE:
                variants = [(s, lp) for lp in (False, True) for s in ("band", "rounds")]
            else:
                variants = aot.SAMPLER_VARIANTS_16[dtype]
            for stage, logprob in variants:
                assert f" fused_topp_{stage}_{logprob}=" in select[0], (target, dtype, stage)
