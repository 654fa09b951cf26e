#!/usr/bin/env python3
"""How much public signage the English normaliser reads right: exact matches on a held-out table.

    python -m tools.bench_signage [--table F] [--json [OUT]] [--show-misses]

The table (tests/data/signage_heldout.tsv, issue 43) is ``input<TAB>expected`` per line, in families
started by ``# family: NAME`` lines (Roman numerals, street types, titles, limits and quantities,
durations, ranges, time ranges, weekdays).  A line matches when ``normalize(input)`` says exactly the
expected words: both compared as spoken words (lower case, punctuation dropped, as
tests/data/spoken_corpus.tsv writes them), so a comma the normaliser keeps for a pause is no miss.

``exact_match_before`` is not measured here: it is the rate of the normaliser as it was before the
signage rules, recorded below with the commit it was measured on (``git archive`` of that commit's
edgetts/text/normalize put first on ``sys.path``, then :func:`measure` on this table).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgetts.text.normalize import normalize

from tools.results import default_path, write_result

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TABLE = ROOT / "tests" / "data" / "signage_heldout.tsv"
FAMILY_MARK = "# family:"

BEFORE_COMMIT = "b482fbb"
"""The commit whose normaliser gave :data:`BEFORE`, on this table, before the signage rules were added."""
BEFORE: dict[str, float] = {
    "all": 0.502,
    "roman": 0.189,
    "street": 0.697,
    "title": 0.346,
    "limits": 0.289,
    "duration": 0.84,
    "range": 0.8,
    "time_range": 0.8,
    "weekday": 0.258,
}
"""Exact-match rate per family ("all": over every line) of the normaliser at :data:`BEFORE_COMMIT`."""

_NOT_WORD = re.compile(r"[^\w']+")


@dataclass(frozen=True)
class Line:
    """One row of the table: its family, what is written and the words an announcer says."""

    family: str
    text: str
    expected: str


def spoken_words(text: str) -> str:
    """``text`` as words only: "Platform 3, please." and "platform 3 please" are the same."""
    return " ".join(_NOT_WORD.sub(" ", text.lower()).split())


def load_table(path: Path = DEFAULT_TABLE) -> list[Line]:
    """The table's rows; ValueError names a line that is not ``input<TAB>expected`` or has no family."""
    rows: list[Line] = []
    family = ""
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if raw.startswith(FAMILY_MARK):
            family = raw[len(FAMILY_MARK) :].strip()
            continue
        if not raw.strip() or raw.startswith("#"):
            continue
        parts = raw.split("\t")
        if len(parts) != 2 or not family:
            raise ValueError(f"{path.name}:{number}: expected input<TAB>expected under a '{FAMILY_MARK}' line")
        rows.append(Line(family, parts[0], parts[1]))
    return rows


def matches(line: Line) -> bool:
    return spoken_words(normalize(line.text)) == spoken_words(line.expected)


def measure(lines: list[Line]) -> dict[str, Any]:
    """Overall and per-family exact-match rates (0..1), the families in the table's order."""
    hits = [matches(line) for line in lines]
    by_family: dict[str, dict[str, Any]] = {}
    for family in dict.fromkeys(line.family for line in lines):
        mine = [hit for hit, line in zip(hits, lines, strict=True) if line.family == family]
        by_family[family] = {
            "lines": len(mine),
            "exact_match": round(sum(mine) / len(mine), 3),
            "exact_match_before": BEFORE.get(family),
        }
    return {
        "lines": len(lines),
        "exact_match": round(sum(hits) / len(hits), 3) if hits else 0.0,
        "exact_match_before": BEFORE["all"],
        "exact_match_before_commit": BEFORE_COMMIT,
        "by_family": by_family,
    }


def misses(lines: list[Line]) -> list[str]:
    """What the normaliser says for each line it gets wrong, beside what was expected."""
    return [
        f"[{line.family}] {line.text}\n  said:     {spoken_words(normalize(line.text))}\n  expected: {line.expected}"
        for line in lines
        if not matches(line)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=DEFAULT_TABLE)
    parser.add_argument("--show-misses", action="store_true", help="print every line read wrong")
    parser.add_argument("--json", type=Path, nargs="?", const=default_path("bench_signage"), default=None)
    args = parser.parse_args(argv)
    lines = load_table(args.table)
    result = measure(lines)
    if args.show_misses:
        print("\n".join(misses(lines)))
    print(json.dumps(result, indent=2))
    if args.json is not None:
        write_result("bench_signage", result, args.json, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
