"""The code's own checks as part of the suite: ruff (lint and format) over the repository, mypy over the package.

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


def test_the_tree_is_formatted() -> None:
    """One formatter for the whole tree: what `ruff format` would change is a failure."""
    result = _run("ruff", "format", "--check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing_in_the_package() -> None:
    # The cache lives in the test venv (rebuilt with it): a cold mypy run costs ~30 s each suite.
    result = _run("mypy", "--cache-dir", str(Path(sys.prefix) / "mypy-cache"), "edgetts")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues found" in result.stdout
