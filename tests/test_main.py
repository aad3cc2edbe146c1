"""``python -m qrita``: the demonstration runs and verifies; ``bench`` dispatches."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qrita import __main__ as cli

REPO = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-m", "qrita", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )


def test_demo_runs_and_verifies():
    r = _run()
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "OK" in out.splitlines()[-1]
    for name in ("top_k(", "top_k_mask(", "top_p_mask(", "top_k_top_p_mask("):
        assert name in out
    assert "zipf" in out and "gaussian" in out
    assert "MISMATCH" not in out


def test_help():
    r = _run("--help")
    assert r.returncode == 0 and "bench" in r.stdout


def test_unknown_command():
    r = _run("frobnicate")
    assert r.returncode == 2 and "usage" in r.stderr


def test_bench_missing_script(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli, "bench_script", lambda: tmp_path / "benchmarks" / "bench.py")
    assert cli.main(["bench", "--quick"]) == 2
    assert "benchmarks/bench.py" in capsys.readouterr().err


@pytest.mark.parametrize("exit_code", [None, 0, 3])
def test_bench_runs_script_with_args(monkeypatch, tmp_path, exit_code):
    script = tmp_path / "bench.py"
    record = tmp_path / "argv.txt"
    tail = "" if exit_code is None else f"raise SystemExit({exit_code})\n"
    script.write_text(
        "import sys, pathlib\n"
        f"pathlib.Path({str(record)!r}).write_text(' '.join(sys.argv[1:]))\n"
        "assert __name__ == '__main__'\n" + tail
    )
    monkeypatch.setattr(cli, "bench_script", lambda: script)
    argv_before = list(sys.argv)
    assert cli.main(["bench", "--quick", "--ops", "masks"]) == (exit_code or 0)
    assert record.read_text() == "--quick --ops masks"
    assert sys.argv == argv_before
