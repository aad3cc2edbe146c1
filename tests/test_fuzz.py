"""qrita.testing.fuzz: the random differential fuzzer runs, and it reports a wrong answer."""

from __future__ import annotations

import numpy as np
import pytest
from _triton_env import torch  # noqa: F401  (first: sets up triton)

from qrita.testing import fuzz  # noqa: E402


def test_fuzz_cases_pass(tmp_path, capsys):
    """30 random cases (every kind, dtypes, one-launch settings) against the oracle."""
    assert fuzz.main(["--cases", "30", "--seed", "11", "--max-vocab", "1025",
                      "--out", str(tmp_path)]) == 0
    assert "30 cases, 0 failures" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())


def test_fuzz_draws_every_kind():
    rng = np.random.default_rng(3)
    cases = [fuzz.draw_case(rng) for _ in range(200)]
    assert {c["kind"] for c in cases} == {"mask", "top_k"}
    assert {c["dtype"] for c in cases} == set(fuzz.DTYPES)
    assert any(c["env"] for c in cases) and any(not c["env"] for c in cases)
    assert any(isinstance(c["k"], np.ndarray) for c in cases)
    assert any(isinstance(c["p"], np.ndarray) for c in cases)
    for c in cases:  # values exactly representable in the case's dtype (NaN payloads aside)
        x = c["x"]
        as_dtype = torch.from_numpy(x).to(getattr(torch, c["dtype"])).float().numpy()
        np.testing.assert_array_equal(as_dtype, x)


def test_fuzz_reports_a_wrong_mask(tmp_path, monkeypatch, capsys):
    """A mask that keeps everything fails its check: the case is printed and saved."""
    from qrita.backends.triton import ops

    monkeypatch.setattr(ops, "top_k_top_p_mask", lambda x, k, p: x.clone())
    monkeypatch.setattr(ops, "top_k", lambda x, k: (x[:, :k], torch.zeros(  # wrong indices
        (x.shape[0], k), dtype=torch.int64) - 1))
    rng = np.random.default_rng(5)
    case = fuzz.Case(x=np.asarray(rng.normal(size=(2, 97)), dtype=np.float32), dtype="float32",
                     kind="mask", k=3, p=None, env={}, family="gaussian")
    with pytest.raises(AssertionError):
        fuzz.run_case(case, "cpu")
    failures = fuzz.main(["--cases", "12", "--seed", "2", "--max-vocab", "257",
                          "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert failures > 0 and "FAIL seed 2" in err
    assert len(list(tmp_path.glob("seed2_case*.npy"))) == failures


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fuzz_16bit_nan_rows(dtype):
    """All-NaN 16-bit rows (V = 2049: torch's CPU half-to-float conversion gives the last entry
    another NaN payload than the others): the kernel's values are compared bit for bit through
    their own bits, and they are the input's."""
    x = np.full((1, 2049), np.nan, dtype=np.float32)
    for kind, k, p in [("top_k", 1699, None), ("mask", 5, None), ("mask", None, 0.5)]:
        case = fuzz.Case(x=x, dtype=dtype, kind=kind, k=k, p=p, env={}, family="all_nan")
        fuzz.run_case(case, "cpu")
