"""The `schedule` section (issue 44): what loads, and every bad rule, zone or date named by file,
line and key, by the loader, `check-config`, and a reload (which keeps the old schedule)."""

from __future__ import annotations

import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from edgetts.config import ConfigError, dump_config, load_config, parse_config
from edgetts.config.schedule import ScheduleEntry
from edgetts.daemon.reload import read_config

GOOD = """\
device:
  id: shop-1
  groups: [shop]
schedule:
  catch_up: 15m
  prepare_s: 40
  entries:
    - id: closing
      at: "21:45"
      days: [mon, tue, wed, thu, fri]
      timezone: Europe/Berlin
      skip: [2026-12-24, "2026-12-31"]
      from: 2026-12-01
      until: 2027-06-30
      text: The shop closes in fifteen minutes.
      priority: high
      chime: ding
      repeat: 2
      to: group/shop
    - id: platform
      cron: "*/15 6-22 * * *"
      clip: reminder
      to: all
"""


def problems(text: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return [p.replace(str(path), "F") for p in info.value.problems]


def entry_with(line: str) -> str:
    """A config whose one entry has ``line`` (at line 6) after its id and text (lines 4 and 5)."""
    return f"schedule:\n  entries:\n    - id: x\n      text: Hello.\n      clip: null\n      {line}\n"


def test_a_full_schedule_loads_with_its_types_and_prints_back_as_it_loaded() -> None:
    config = parse_config(GOOD, "c.yaml")
    closing, platform = config.schedule.entries
    assert closing == ScheduleEntry(
        id="closing",
        at="21:45",
        days=("mon", "tue", "wed", "thu", "fri"),
        timezone="Europe/Berlin",
        skip=(date(2026, 12, 24), date(2026, 12, 31)),
        starts=date(2026, 12, 1),
        until=date(2027, 6, 30),
        text="The shop closes in fifteen minutes.",
        priority="high",
        chime="ding",
        repeat=2,
        to="group/shop",
    )
    assert closing.expression() == ("45 21 * * mon,tue,wed,thu,fri", 0)
    assert platform.expression() == ("*/15 6-22 * * *", 0) and platform.target() == ("all", None)
    assert ScheduleEntry(id="s", at="08:05:30", clip="c").expression() == ("5 8 * * *", 30)
    assert config.schedule.catch_up_s == 900.0 and config.schedule.prepare_s == 40.0
    printed = dump_config(config)
    assert "    from: '2026-12-01'\n" in printed and "starts" not in printed
    assert parse_config(printed) == config  # print-config's output loads back to the same config
    assert config.to_dict()["schedule"]["entries"][0]["skip"] == ["2026-12-24", "2026-12-31"]  # plain JSON


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('cron: "61 * * * *"', "F:6 schedule/entries/0/cron: '61 * * * *': Bad minute"),
        ('cron: "0 8 * *"', "F:6 schedule/entries/0/cron: '0 8 * *' has 4 fields, not five"),
        ('cron: "0 0 0 8 * *"', "F:6 schedule/entries/0/cron: '0 0 0 8 * *' has 6 fields, not five"),
        ('cron: "0 8 31 2 *"', "F:6 schedule/entries/0/cron: '0 8 31 2 *': Bad day-of-month"),
        (
            "at: 21:45",
            'F:6 schedule/entries/0/at: YAML read an unquoted time as the number 1305 (base 60): quote it, at: "HH:MM"',
        ),
        ('at: "24:00"', 'F:6 schedule/entries/0/at: \'24:00\' is not a time of day "HH:MM" or "HH:MM:SS"'),
        ('at: "8:5"', 'F:6 schedule/entries/0/at: \'8:5\' is not a time of day "HH:MM" or "HH:MM:SS"'),
        ("skip: [2026-13-01]", "F:6 schedule/entries/0/skip/0: expected a date (YYYY-MM-DD), got '2026-13-01'"),
        ("from: 2026-02-30", "F:6 schedule/entries/0/from: expected a date (YYYY-MM-DD), got '2026-02-30'"),
        ("until: tomorrow", "F:6 schedule/entries/0/until: expected a date (YYYY-MM-DD), got 'tomorrow'"),
        (
            "days: [monday]",
            "F:6 schedule/entries/0/days/0: expected one of 'mon', 'tue', 'wed', 'thu', 'fri', "
            "'sat', 'sun', got 'monday'",
        ),
        ('to: zone/hall\n      at: "08:00"', "F:6 schedule/entries/0/to: 'zone/hall' is not device/ID, group/G or all"),
        (
            "starts: 2026-01-01",
            "F:6 schedule/entries/0/starts: unknown key (known: at, chime, clip, cron, days, "
            "from, id, priority, repeat, skip, text, timezone, to, until, voice)",
        ),
    ],
)
def test_a_bad_entry_names_file_line_and_key(tmp_path: Path, line: str, problem: str) -> None:
    assert problems(entry_with(line), tmp_path) == [problem]


def test_rule_zone_dates_and_payload_checks_name_their_key(tmp_path: Path) -> None:
    rule = '      at: "08:00"\n'
    cases = {
        f"{rule}      timezone: Europe/Berln\n": "F:6 schedule/entries/0/timezone: unknown timezone 'Europe/Berln' "
        "(an IANA name, e.g. Europe/Berlin)",
        f'{rule}      cron: "0 8 * * *"\n': "F:6 schedule/entries/0/cron: give exactly one of cron and at",
        "      days: [mon]\n": "F:3 schedule/entries/0/cron: give exactly one of cron and at",
        '      cron: "0 8 * * *"\n      days: [mon]\n': "F:6 schedule/entries/0/days: goes with at; in a cron rule "
        "the weekdays are its fifth field",
        f"{rule}      days: [mon, mon]\n": "F:6 schedule/entries/0/days: names a day twice",
        f"{rule}      from: 2027-01-02\n      until: 2027-01-01\n": "F:7 schedule/entries/0/until: 2027-01-01 is "
        "before from (2027-01-02)",
        f"{rule}      clip: bell\n": "F:4 schedule/entries/0/text: give exactly one of text and clip",
        f"{rule}      voice: nobody\n": "F:6 schedule/entries/0/voice: 'nobody' is not a configured voice",
        f"{rule}      repeat: 0\n": "F:6 schedule/entries/0/repeat: must be 1-100",
        f"{rule}      repeat: 6\n": "F:6 schedule/entries/0/repeat: more than queue/max_repeat (5)",
    }
    for body, problem in cases.items():
        text = f"schedule:\n  entries:\n    - id: x\n      text: Hello.\n{body}"
        assert problems(text, tmp_path) == [problem], body
    long = 'queue:\n  max_text_chars: 5\nschedule:\n  entries:\n    - {id: a, at: "08:00", text: Hello there.}\n'
    assert problems(long, tmp_path) == ["F:5 schedule/entries/0/text: longer than queue/max_text_chars (5)"]
    dup = 'schedule:\n  entries:\n    - {id: a, at: "08:00", clip: b}\n    - {id: a, at: "09:00", clip: b}\n'
    assert problems(dup, tmp_path) == ["F:4 schedule/entries/1/id: duplicate id 'a' (also entry 0)"]
    for value, problem in (("forever", "'forever' is not a duration"), ("true", "give a duration"), ("-5", "must be")):
        got = problems(f"schedule:\n  catch_up: {value}\n", tmp_path)
        assert len(got) == 1 and got[0].startswith("F:2 schedule/catch_up: ") and problem in got[0], got
    assert parse_config("schedule:\n  catch_up: off\n").schedule.catch_up_s == 0.0
    assert parse_config("schedule:\n  catch_up: 1h30m\n").schedule.catch_up_s == 5400.0
    assert problems("schedule:\n  prepare_s: 0\n", tmp_path) == [
        "F:2 schedule/prepare_s: must be 1-3600 seconds (null: from the voices' speed)"
    ]


def test_check_config_reports_the_line_and_a_reload_keeps_the_old_schedule(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(GOOD)
    old = load_config(path)
    path.write_text(GOOD.replace('"*/15 6-22 * * *"', '"*/15 6-25 * * *"'))
    result = subprocess.run(
        [sys.executable, "-m", "edgetts.cli", "check-config", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [f"{path}:21 schedule/entries/1/cron: '*/15 6-25 * * *': Bad hour"]
    # What the daemon's reload reads: refused whole, so the schedule in force stays (edgetts.daemon.loop)
    with pytest.raises(ConfigError) as info:
        read_config(path, old)
    assert info.value.problems == [f"{path}:21 schedule/entries/1/cron: '*/15 6-25 * * *': Bad hour"]
