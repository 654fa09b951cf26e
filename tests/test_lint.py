"""The code's own checks as part of the suite: ruff over the repository, mypy over the package.

Both run with the versions requirements-test.txt pins (a newer linter finds new things; that is a
change of its own, not a red CI on an unrelated commit).  mypy checks ``edgetts/`` only: the package
is typed code; tests and tools use fakes and duck-typed rigs it would flag by design.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import ROOT


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip(module)
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )


def test_ruff_finds_nothing() -> None:
    result = _run("ruff", "check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing_in_the_package(tmp_path: Path) -> None:
    result = _run("mypy", "--cache-dir", str(tmp_path / "mypy"), "edgetts")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues found" in result.stdout
