"""The Debian package's measured figures as a result file (benchmarks/results/deb_package.json).

scripts/test-deb.sh records what it measures while it builds, installs and boots the packages, one
``KEY<TAB>VALUE`` line each (``amd64.deb_bytes``, ``boot.ready_s``, ...); this turns them into the
JSON every benchmark writes (tools/results.py), which tools/report.py renders into docs/benchmarks.md:

    python -m tools.deb_figures FIGURES.tsv [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tools.results import default_path, with_provenance

COMMAND = "sudo bash scripts/test-deb.sh"


def parse(text: str) -> dict[str, Any]:
    """``a.b<TAB>v`` lines into {"a": {"b": v}}; numbers as numbers; a repeated key keeps the last."""
    result: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("\t")
        if not sep or not key:
            raise ValueError(f"line {number}: not KEY<TAB>VALUE: {line!r}")
        *path, leaf = key.split(".")
        node = result
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = _number(value.strip())
    return result


def _number(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("figures", type=Path, help="the KEY<TAB>VALUE file scripts/test-deb.sh wrote")
    parser.add_argument("--json", type=Path, default=default_path("deb_package"))
    args = parser.parse_args(argv)
    try:
        result = parse(args.figures.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"deb_figures: {args.figures}: {exc}", file=sys.stderr)
        return 2
    data = with_provenance("deb_package", result)
    data["command"] = COMMAND  # what measured them, not this converter
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
