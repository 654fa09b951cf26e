"""Where the tests' data lives, and the project's announcement corpus."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
TOOLS = ROOT / "tools"


def corpus_lines() -> list[str]:
    """The project's announcement corpus (seeded from shared/corpus/announcements.txt)."""
    lines = (DATA / "announcements.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip()]
