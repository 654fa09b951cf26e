"""``edgetts schedule``: the next occurrences of the config's timetable (docs/schedule.md).

It reads only the config file: every entry is listed, whoever it is for (the `to` column says),
with its local time and zone, as the daemon computes them (edgetts.daemon.schedule).
"""

from __future__ import annotations

import argparse
import sys
import time

from edgetts.config import DEFAULT_CONFIG_PATH, ConfigError, load_config
from edgetts.errors import EdgeTTSError

TEXT_WIDTH = 60
"""Characters of an entry's text shown (the rest elided)."""


def _count(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 10000:
        raise argparse.ArgumentTypeError(f"must be 1-10000, not {value}")
    return number


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``schedule`` verb."""
    parser = subparsers.add_parser(
        "schedule",
        help="list the next occurrences of the config's timetable (schedule.entries)",
        description="List the next occurrences of schedule.entries in time order: entry id, local time "
        "with its zone, target, and what it says or plays.",
    )
    parser.add_argument("--next", type=_count, default=10, metavar="N", help="how many (default 10)")
    parser.add_argument(
        "--config", default=str(DEFAULT_CONFIG_PATH), help=f"config file (default {DEFAULT_CONFIG_PATH})"
    )
    parser.set_defaults(func=cmd_schedule)


def cmd_schedule(args: argparse.Namespace) -> int:
    from edgetts.daemon.schedule.planner import Here, Planner
    from edgetts.daemon.schedule.state import ScheduleState

    try:
        config = load_config(args.config)
    except ConfigError as exc:
        for line in exc.problems:
            print(f"edgetts: error: {line}" if " (file): " in line else line, file=sys.stderr)
        return 1
    if not config.schedule.entries:
        raise EdgeTTSError(f"{args.config} has no schedule entries")
    now = time.time()
    planner = Planner(config.schedule, Here.of(config), ScheduleState(None), now)
    rows = []
    for occ in planner.upcoming(now, args.next, everywhere=True):
        entry = occ.entry
        what = f"clip {entry.clip}" if entry.clip is not None else _elide(entry.text or "")
        rows.append((entry.id, occ.label, entry.to or f"device/{config.device.id}", what))
    if not rows:
        raise EdgeTTSError("no occurrence to come (every entry's `until` has passed)")
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3])
    return 0


def _elide(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= TEXT_WIDTH else flat[: TEXT_WIDTH - 1] + "…")


__all__ = ["register"]
