"""The timetable's planner on a simulated clock (issue 44): weeks with a DST change either way and a
holiday, restarts and reloads between occurrences, catch_up, from/until, crashes mid-announcement.

The planner is pure logic on the time it is given; :class:`Run` drives it as the daemon's loop does
(a turn at each time the planner asks to be woken, and at least every 10 minutes as other messages
wake the loop), restarts it from the same state file, and records what it admitted, when, and what
it said missed.  Expected times are written out by hand in local time, never computed by the code
under test.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from edgetts.config.schedule import ScheduleEntry, ScheduleSettings
from edgetts.daemon.schedule.planner import Here, Occurrence, Planner
from edgetts.daemon.schedule.state import FILE_NAME, ScheduleState
from edgetts.daemon.schedule.timetable import ADMIT_LEAD_S, DEFAULT_RTF, auto_prepare_s, slowest_rtf

BERLIN = ZoneInfo("Europe/Berlin")
LEAD_S, PREPARE_S = 1.5, 30.0


def t(text: str, fold: int = 0) -> float:
    """Unix time of a Berlin wall-clock time 'YYYY-MM-DD HH:MM[:SS]'."""
    return datetime.fromisoformat(text).replace(tzinfo=BERLIN, fold=fold).timestamp()


def local(at: float) -> str:
    return datetime.fromtimestamp(at, BERLIN).strftime("%Y-%m-%d %H:%M:%S%z")


class Run:
    """The loop's side of a planner: turns, restarts, downtime; what was admitted, prepared, missed."""

    def __init__(self, tmp: Path, settings: ScheduleSettings, here: Here | None = None) -> None:
        self.path = tmp / FILE_NAME
        self.settings, self.here = settings, here or Here("dev")
        self.admitted: list[tuple[str, float, bool, float]] = []
        """(entry id, occurrence time, late, when it was admitted)."""
        self.prepared: list[tuple[str, float, float]] = []
        self.missed: list[tuple[str, float]] = []
        self.ended: set[str] = set()
        """Announcement ids that ended (what the dedup memory knows after a restart)."""
        self.crash_next = False
        """The next admitted announcement never ends (the daemon dies with it)."""
        self.planner: Planner | None = None

    def start(self, now: float) -> None:
        self.planner = Planner(self.settings, self.here, ScheduleState(self.path), now, self.ended.__contains__, BERLIN)

    def until(self, now: float, end: float) -> float:
        """Turns from ``now`` to ``end``; the time of the last one."""
        assert self.planner is not None
        while now < end:
            turn = self.planner.step(now, lambda o: LEAD_S, lambda o: PREPARE_S)
            for occ in turn.admit:
                self.admitted.append((occ.entry.id, occ.at, occ.late, now))
                if self.crash_next:
                    self.crash_next = False
                else:
                    self.ended.add(occ.ident)
            self.prepared += [(o.entry.id, o.at, now) for o in turn.prepare]
            self.missed += [(o.entry.id, o.at) for o in turn.missed]
            wake = self.planner.wake(now, lambda o: LEAD_S, lambda o: PREPARE_S)
            nxt = min(end, now + 600.0, wake if wake is not None else end)
            now = max(now + 0.25, nxt)  # (the loop's inbox wait: at least its next turn)
        return now

    def times(self, ident: str) -> list[str]:
        return [local(at) for i, at, _late, _when in self.admitted if i == ident]


def bell(**more: object) -> ScheduleEntry:
    return ScheduleEntry(
        id="bell",
        at="08:55",
        days=("mon", "tue", "wed", "thu", "fri"),
        timezone="Europe/Berlin",
        text="School starts in five minutes.",
        **more,  # type: ignore[arg-type]
    )


NIGHT = ScheduleEntry(id="night", at="02:30", timezone="Europe/Berlin", text="Night check.")
"""A time inside the hour that DST skips (spring) or repeats (autumn)."""
QUARTER = ScheduleEntry(id="quarter", cron="*/15 2 * * *", timezone="Europe/Berlin", clip="chime")
"""Every 15 minutes of the 02:00 hour: real minutes, so the repeated hour has 8 of them."""


def test_a_spring_week_with_a_holiday_and_restarts_plays_each_once_at_its_second(tmp_path: Path) -> None:
    # 2026-03-29: clocks go from 02:00 to 03:00 in Berlin; Friday 2026-03-27 is a holiday.
    settings = ScheduleSettings(entries=(bell(skip=(date(2026, 3, 27),)), NIGHT))
    run = Run(tmp_path, settings)
    # Restarts between occurrences; the last one within the bell's prepare time (15 s before it).
    restarts = ["2026-03-25 12:00", "2026-03-27 03:00", "2026-03-28 09:00", "2026-03-29 01:20", "2026-03-30 08:54:45"]
    for begin, end in zip(restarts, [*restarts[1:], "2026-04-01 00:00"]):
        run.start(t(begin))
        run.until(t(begin), t(end))
    assert run.times("bell") == [  # (not Friday the 27th, its holiday; Monday the 30th is CEST)
        "2026-03-26 08:55:00+0100",
        "2026-03-30 08:55:00+0200",
        "2026-03-31 08:55:00+0200",
    ]
    # 02:30 does not exist on the 29th: it plays at the first minute that does, 03:00 (CEST).
    assert run.times("night") == [
        "2026-03-26 02:30:00+0100",
        "2026-03-27 02:30:00+0100",
        "2026-03-28 02:30:00+0100",
        "2026-03-29 03:00:00+0200",
        "2026-03-30 02:30:00+0200",
        "2026-03-31 02:30:00+0200",
    ]
    # Each on time: admitted LEAD_S before its second (never late), and rendered PREPARE_S before.
    assert all(not late and at - when == pytest.approx(LEAD_S, abs=0.3) for _, at, late, when in run.admitted)
    # (a restart within its prepare time asks again: the render finds it in the cache or on its way)
    assert {(i, at) for i, at, _ in run.prepared} == {(i, at) for i, at, _, _ in run.admitted}
    assert all(at - when == pytest.approx(PREPARE_S, abs=0.3) for i, at, when in run.prepared if i == "night")
    assert run.missed == []


def test_an_autumn_week_plays_a_repeated_time_once_and_a_quarter_hourly_rule_by_real_minutes(
    tmp_path: Path,
) -> None:
    # 2026-10-25: clocks go back from 03:00 to 02:00 in Berlin; the 02:00 hour happens twice.
    run = Run(tmp_path, ScheduleSettings(entries=(NIGHT, QUARTER)))
    run.start(t("2026-10-23 12:00"))
    now = run.until(t("2026-10-23 12:00"), t("2026-10-25 02:40", fold=1))  # (in the hour's second pass)
    run.start(now)  # a restart there must not play the first pass's 02:30 again
    run.until(now, t("2026-10-27 00:00"))
    assert run.times("night") == [
        "2026-10-24 02:30:00+0200",
        "2026-10-25 02:30:00+0200",
        "2026-10-26 02:30:00+0100",
    ]
    quarters = [x for x in run.times("quarter") if x.startswith("2026-10-25")]
    assert quarters == [
        "2026-10-25 02:00:00+0200",
        "2026-10-25 02:15:00+0200",
        "2026-10-25 02:30:00+0200",
        "2026-10-25 02:45:00+0200",
        "2026-10-25 02:00:00+0100",
        "2026-10-25 02:15:00+0100",
        "2026-10-25 02:30:00+0100",
        "2026-10-25 02:45:00+0100",
    ]
    assert len(run.admitted) == len(set(run.admitted)) and run.missed == []
    # An entry that appears in the second pass: the first pass's 02:30 (an earlier instant, the same
    # wall-clock time) is not its to play, nor to catch up.
    second_pass = t("2026-10-25 02:10", fold=1)
    fresh = Planner(ScheduleSettings(entries=(NIGHT,), catch_up="1h"), Here("dev"), ScheduleState(None), second_pass)
    turn = fresh.step(second_pass, lambda o: LEAD_S, lambda o: PREPARE_S)
    assert turn.admit == turn.missed == [] and [local(o.at) for o in fresh.upcoming(second_pass, 1)] == [
        "2026-10-26 02:30:00+0100"
    ]


def test_missed_while_down_plays_late_only_within_catch_up(tmp_path: Path) -> None:
    entries = (bell(),)
    run = Run(tmp_path, ScheduleSettings(entries=entries, catch_up="15m"))
    run.start(t("2026-12-07 08:00"))  # a Monday
    run.until(t("2026-12-07 08:00"), t("2026-12-07 08:50"))
    run.start(t("2026-12-07 09:05"))  # down from 08:50 to 09:05: 10 minutes late is within 15
    run.until(t("2026-12-07 09:05"), t("2026-12-08 08:50"))
    run.start(t("2026-12-08 09:20"))  # down over Tuesday's: 25 minutes is not
    run.until(t("2026-12-08 09:20"), t("2026-12-09 12:00"))
    assert run.admitted[0] == ("bell", t("2026-12-07 08:55"), True, t("2026-12-07 09:05"))
    assert run.times("bell") == ["2026-12-07 08:55:00+0100", "2026-12-09 08:55:00+0100"]
    assert run.missed == [("bell", t("2026-12-08 08:55"))]

    # catch_up off (the default): the same downtime is a miss, said once.
    off = Run(tmp_path / "off", ScheduleSettings(entries=entries))
    (tmp_path / "off").mkdir()
    off.start(t("2026-12-07 08:00"))
    off.until(t("2026-12-07 08:00"), t("2026-12-07 08:50"))
    off.start(t("2026-12-07 09:05"))
    off.until(t("2026-12-07 09:05"), t("2026-12-07 12:00"))
    assert off.admitted == [] and off.missed == [("bell", t("2026-12-07 08:55"))]


def test_after_a_long_downtime_only_the_latest_missed_occurrence_plays(tmp_path: Path) -> None:
    every = ScheduleEntry(id="every", cron="*/10 * * * *", timezone="Europe/Berlin", text="Ten minutes.")
    run = Run(tmp_path, ScheduleSettings(entries=(every,), catch_up=1800))
    run.start(t("2026-12-07 08:00"))
    run.until(t("2026-12-07 08:00"), t("2026-12-07 08:05"))
    run.start(t("2026-12-07 11:07"))  # three hours down: 18 missed, one is played, late
    run.until(t("2026-12-07 11:07"), t("2026-12-07 11:25"))
    assert [(local(at), late) for _, at, late, _ in run.admitted] == [
        ("2026-12-07 11:00:00+0100", True),
        ("2026-12-07 11:10:00+0100", False),
        ("2026-12-07 11:20:00+0100", False),
    ]


def test_a_daemon_that_died_mid_announcement_plays_it_again_within_catch_up(tmp_path: Path) -> None:
    run = Run(tmp_path, ScheduleSettings(entries=(bell(),), catch_up="5m"))
    run.start(t("2026-12-07 08:00"))
    run.crash_next = True  # its announcement never ends: the dedup memory does not know it
    run.until(t("2026-12-07 08:00"), t("2026-12-07 08:55:10"))
    run.start(t("2026-12-07 08:56"))
    run.until(t("2026-12-07 08:56"), t("2026-12-07 09:30"))
    assert run.admitted == [
        ("bell", t("2026-12-07 08:55"), False, t("2026-12-07 08:55") - LEAD_S),
        ("bell", t("2026-12-07 08:55"), True, t("2026-12-07 08:56")),
    ]
    # One that ended is not played again by a restart, however soon.
    run.start(t("2026-12-07 09:31"))
    run.until(t("2026-12-07 09:31"), t("2026-12-07 09:40"))
    assert len(run.admitted) == 2 and run.missed == []


def test_reloads_keep_an_unchanged_rule_going_and_start_a_changed_or_new_one_now(tmp_path: Path) -> None:
    run = Run(tmp_path, ScheduleSettings(entries=(bell(),)))
    run.start(t("2026-12-07 08:00"))
    now = run.until(t("2026-12-07 08:00"), t("2026-12-07 08:55"))  # (admitted at 08:54:58.5)
    assert run.planner is not None
    # A new text, same rule, reloaded just after its admission: not admitted again.
    reworded = replace(bell(), text="School starts soon.")
    run.planner.reconfigure(ScheduleSettings(entries=(reworded,)), Here("dev"), now + 1)
    now = run.until(now + 1, t("2026-12-07 10:00"))
    # Moved to 09:30, a time already past today: it does not catch up, its next is tomorrow's; and a
    # new entry due today plays from now on.
    moved = replace(reworded, at="09:30")
    new = ScheduleEntry(id="lunch", at="12:00", timezone="Europe/Berlin", text="Lunch.")
    run.planner.reconfigure(ScheduleSettings(entries=(moved, new), catch_up="1h"), Here("dev"), now)
    run.until(now, t("2026-12-08 12:30"))
    assert run.times("bell") == ["2026-12-07 08:55:00+0100", "2026-12-08 09:30:00+0100"]
    assert run.times("lunch") == ["2026-12-07 12:00:00+0100", "2026-12-08 12:00:00+0100"]
    assert run.missed == []
    # The state file says where each entry stands, and only the entries configured.
    kept = json.loads(run.path.read_text())["entries"]
    assert set(kept) == {"bell", "lunch"} and kept["lunch"]["admitted"] == t("2026-12-08 12:00")
    assert [p.name for p in tmp_path.iterdir()] == [FILE_NAME]  # (no temporary file left)


def test_from_and_until_bound_the_dates_inclusively(tmp_path: Path) -> None:
    entry = ScheduleEntry(
        id="sale",
        at="10:00",
        timezone="Europe/Berlin",
        text="The sale is on.",
        starts=date(2026, 12, 9),
        until=date(2026, 12, 11),
    )
    run = Run(tmp_path, ScheduleSettings(entries=(entry,)))
    run.start(t("2026-12-07 00:00"))
    run.until(t("2026-12-07 00:00"), t("2026-12-14 00:00"))
    assert run.times("sale") == ["2026-12-09 10:00:00+0100", "2026-12-10 10:00:00+0100", "2026-12-11 10:00:00+0100"]
    assert run.planner is not None and run.planner.next() is None


def test_each_device_plays_what_is_for_it(tmp_path: Path) -> None:
    def entry(ident: str, to: str | None) -> ScheduleEntry:
        return ScheduleEntry(id=ident, at="10:00", timezone="Europe/Berlin", clip="bell", to=to)

    entries = tuple(
        entry(i, to)
        for i, to in (
            ("mine", None),
            ("named", "device/dev"),
            ("other", "device/dev2"),
            ("zone", "group/hall"),
            ("elsewhere", "group/yard"),
            ("everyone", "all"),
        )
    )
    run = Run(tmp_path, ScheduleSettings(entries=entries), Here("dev", ("hall",)))
    run.start(t("2026-12-07 09:00"))
    run.until(t("2026-12-07 09:00"), t("2026-12-07 11:00"))
    assert sorted(i for i, *_ in run.admitted) == ["everyone", "mine", "named", "zone"]


def test_upcoming_lists_every_entry_in_time_order() -> None:
    entries = (bell(), NIGHT, ScheduleEntry(id="other", at="09:00", timezone="Europe/Berlin", clip="x", to="device/b"))
    planner = Planner(ScheduleSettings(entries=entries), Here("a"), ScheduleState(None), t("2026-12-07 00:00"))
    got = [(o.entry.id, local(o.at)) for o in planner.upcoming(t("2026-12-07 00:00"), 5, everywhere=True)]
    assert got == [
        ("night", "2026-12-07 02:30:00+0100"),
        ("bell", "2026-12-07 08:55:00+0100"),
        ("other", "2026-12-07 09:00:00+0100"),
        ("night", "2026-12-08 02:30:00+0100"),
        ("bell", "2026-12-08 08:55:00+0100"),
    ]
    mine = planner.upcoming(t("2026-12-07 00:00"), 3)
    assert [o.entry.id for o in mine] == ["night", "bell", "night"]
    assert mine[1].ident == "bell@2026-12-07T07:55:00Z"
    assert mine[1].label == "2026-12-07 08:55:00 CET (Europe/Berlin)"


def test_a_corrupt_or_unwritable_state_file_is_said_and_nothing_plays_twice(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text("{not json")
    run = Run(tmp_path, ScheduleSettings(entries=(bell(),)))
    run.start(t("2026-12-07 08:00"))
    run.until(t("2026-12-07 08:00"), t("2026-12-07 09:00"))
    assert run.times("bell") == ["2026-12-07 08:55:00+0100"]
    assert json.loads((tmp_path / FILE_NAME).read_text())["entries"]["bell"]["admitted"] == t("2026-12-07 08:55")
    blocked = ScheduleState(tmp_path / "file" / FILE_NAME)
    (tmp_path / "file").write_text("a file where the folder should be")
    Planner(ScheduleSettings(entries=(bell(),)), Here("dev"), blocked, t("2026-12-07 08:00"))
    assert blocked.problem is not None and "schedule state not kept" in blocked.problem


def test_an_occurrence_is_named_the_same_on_every_member() -> None:
    occ = Occurrence(bell(), t("2026-12-07 08:55"), BERLIN)
    assert occ.ident == "bell@2026-12-07T07:55:00Z"


def test_the_automatic_prepare_time_follows_the_slowest_voice_measured() -> None:
    speed = {
        "voices": {
            "default": {"rtf_1min": 0.3, "rtf_load": 0.5},
            "de": {"rtf_1min": None, "rtf_load": 0.9},
            "default/joe-int8.onnx": {"rtf_1min": 4.0, "rtf_load": None},  # (a degrade_to variant: not a voice)
        }
    }
    assert slowest_rtf(speed) == 0.9
    assert slowest_rtf(None) == slowest_rtf({"voices": {}}) == DEFAULT_RTF
    text = "x" * 140  # ten seconds of speech at an announcer's pace
    assert auto_prepare_s(text, 0.9) == pytest.approx(3 * 0.9 * 10 + 5)
    assert auto_prepare_s("Doors closing.", 0.9) == 10.0  # (at least)
    assert auto_prepare_s(None, 0.9) == ADMIT_LEAD_S  # a clip: nothing to render
