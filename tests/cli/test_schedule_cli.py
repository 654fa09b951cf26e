"""`edgetts schedule [--next N] [--config FILE]` (issue 44): the next occurrences, in time order, each
with its entry id, local time and zone, target, and text or clip; one-line errors."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from test_cli import assert_one_line_error, edgetts

CONFIG = """\
device:
  id: hall-3
schedule:
  entries:
    - id: bell
      at: "08:55:30"
      timezone: UTC
      text: "School   starts in five minutes, please go to your classrooms now and take your seats quietly."
    - id: tide
      cron: "0 */6 * * *"
      timezone: Asia/Tokyo
      clip: horn
      to: all
    - id: over
      at: "12:00"
      until: 2001-01-01
      clip: horn
"""
LINE = re.compile(r"^(\S+)\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (\S+) \((\S+)\)\s+(\S+)\s+(.+)$")


def test_schedule_lists_the_next_occurrences_in_time_order(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG)
    result = edgetts("schedule", "--next", "9", "--config", str(config))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    rows = [LINE.match(line) for line in result.stdout.splitlines()]
    assert len(rows) == 9 and all(rows), result.stdout
    times = []
    for row in rows:
        assert row is not None
        ident, when, abbrev, zone, target, what = row.groups()
        at = datetime.fromisoformat(when).replace(tzinfo=ZoneInfo(zone))
        times.append(at.timestamp())
        assert abbrev == at.tzname()
        if ident == "bell":  # in its zone, with its seconds; this device's; the text elided
            assert (when[11:], zone, target) == ("08:55:30", "UTC", "device/hall-3")
            assert what == "'School starts in five minutes, please go to your classrooms…'"  # (60 characters)
        else:
            assert ident == "tide" and zone == "Asia/Tokyo" and abbrev == "JST", row.groups()
            assert when[11:] in ("00:00:00", "06:00:00", "12:00:00", "18:00:00") and target == "all"
            assert what == "clip horn"
    assert times == sorted(times) and len(set(times)) == 9
    assert [row.group(1) for row in rows if row is not None].count("bell") in (2, 3)  # 9 in ~2 days


def test_schedule_errors_are_one_line(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("device:\n  id: x\n")
    assert_one_line_error(edgetts("schedule", "--config", str(config)), f"{config} has no schedule entries")
    config.write_text('schedule:\n  entries:\n    - {id: a, at: "25:00", clip: b}\n')
    bad = edgetts("schedule", "--config", str(config))
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.splitlines() == [
        f'{config}:3 schedule/entries/0/at: \'25:00\' is not a time of day "HH:MM" or "HH:MM:SS"'
    ]
    assert_one_line_error(edgetts("schedule", "--config", str(tmp_path / "none.yaml")), "(file): cannot read")
    usage = edgetts("schedule", "--next", "0", "--config", str(config))
    assert usage.returncode == 2 and "must be 1-10000" in usage.stderr
