"""The timetable in the daemon (issue 44): an occurrence rendered ahead into the phrase cache plays at
its second from there, every event says `schedule`, the status shows the next one; a refused reload
keeps the schedule and a good one adds to it; a restart replays the one it died in the middle of
(catch_up) and not the one that ended (the daemon on a thread, the real mosquitto, the ALSA capture).

Whether the first sample leaves at the second on a real clock is test_schedule_realtime.py's.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from edgetts.voice.piper.seeded_noise import seed_for

from support.daemon import DaemonRig

pytestmark = pytest.mark.mqtt

TEXT = "The shop closes in fifteen minutes."
LONG = " ".join(f"Sentence {n} of the closing notice is read out now." for n in range(14))
"""~14 sentences of the fake voice, about 3.6 s: long enough to stop the daemon in its middle."""


def soon(seconds: float) -> float:
    """A whole Unix second at least ``seconds`` from now."""
    return float(int(time.time() + seconds) + 1)


def ident(entry: str, at: float) -> str:
    return f"{entry}@{datetime.fromtimestamp(at, timezone.utc):%Y-%m-%dT%H:%M:%SZ}"


def entry_yaml(entry: str, at: float, text: str, more: str = "") -> str:
    hms = datetime.fromtimestamp(at, timezone.utc).strftime("%H:%M:%S")
    return f'    - id: {entry}\n      at: "{hms}"\n      timezone: UTC\n      text: "{text}"\n{more}'


def schedule_yaml(tmp: Path, entries: str, settings: str = "") -> str:
    return f"cache:\n  dir: {tmp / 'cache'}\nschedule:\n{settings}  entries:\n{entries}"


def events_of(rig: DaemonRig, name: str) -> list[dict[str, Any]]:
    return [e for e in rig.probe.events if e["id"] == name]


def test_an_occurrence_rendered_ahead_plays_at_its_second_and_says_schedule(
    daemon_rig: Callable[..., DaemonRig], tmp_path: Path
) -> None:
    at = soon(8.0)
    name = ident("closing", at)
    # Beside it, an entry whose clip is not in the library at its time: refused as any announcement
    # naming an unknown clip is, with its schedule id, and nothing else is disturbed.
    hms = datetime.fromtimestamp(at, timezone.utc).strftime("%H:%M:%S")
    missing = f'    - id: gong\n      at: "{hms}"\n      timezone: UTC\n      clip: no_such_clip\n'
    rig = daemon_rig(
        queue_extra=f"state_dir: {tmp_path / 'state'}",
        extra=schedule_yaml(tmp_path, entry_yaml("closing", at, TEXT) + missing),
    )
    status = rig.probe.wait_status(lambda s: s["state"] == "online" and s.get("schedule") is not None, 10)
    assert status["schedule"]["id"] == "closing" and status["schedule"]["at"] == at
    started = rig.probe.wait_event(name, "started", 30)
    rig.probe.wait_event(name, "finished", 30)
    # Every event of it says which entry it is; it came from the phrase cache, rendered ahead once
    # with the noise of its id (what every member of a zone would play), never synthesized again.
    assert [(e["event"], e.get("schedule")) for e in events_of(rig, name)] == [
        ("queued", "closing"),
        ("started", "closing"),
        ("finished", "closing"),
    ]
    assert started["cached"] is True and isinstance(started["sync_error_ms"], float), started
    refused = events_of(rig, ident("gong", at))
    assert [(e["event"], e.get("schedule")) for e in refused] == [("rejected", "gong")], refused
    assert "unknown clip 'no_such_clip'" in refused[0]["reason"]
    assert rig.voice.calls.count(TEXT) == 1
    config = rig.voice.configs[rig.voice.calls.index(TEXT)]
    assert config is not None and config.seed == seed_for(name)
    assert len(list((tmp_path / "cache").glob("*.etpc"))) == 1
    rig.capture.wait_for(rig.expected(TEXT)[200:-200], 5)  # (but its fades: audio.fade_ms)
    # The status now shows tomorrow's; the state directory says today's was handed over.
    nxt = rig.probe.wait_status(lambda s: (s.get("schedule") or {}).get("at") == at + 86400, 10)["schedule"]
    hms = datetime.fromtimestamp(at, timezone.utc).strftime("%H:%M:%S")
    assert nxt["id"] == "closing" and nxt["text"] == TEXT and nxt["to"].startswith("device/")
    assert nxt["local"].endswith(f"{hms} UTC (UTC)")
    kept = json.loads((tmp_path / "state" / "schedule.json").read_text())["entries"]["closing"]
    assert kept["admitted"] == at


def test_a_refused_reload_keeps_the_schedule_and_a_good_one_adds_to_it(
    daemon_rig: Callable[..., DaemonRig], tmp_path: Path
) -> None:
    at = soon(8.0)
    first = entry_yaml("first", at, TEXT)
    rig = daemon_rig(extra=schedule_yaml(tmp_path, first))
    text = rig.config.read_text()
    rig.config.write_text(
        text.replace(f'at: "{datetime.fromtimestamp(at, timezone.utc):%H:%M:%S}"', 'cron: "0 25 * * *"')
    )
    rig.daemon.on_signal(signal.SIGHUP)
    status = rig.probe.wait_status(lambda s: any(d["what"] == "config" for d in s["degraded"]), 10)
    reason = next(d["reason"] for d in status["degraded"] if d["what"] == "config")
    assert "schedule/entries/0/cron" in reason and "Bad hour" in reason, reason
    rig.probe.wait_event(ident("first", at), "finished", 30)  # the old schedule still in force
    later = soon(4.0)
    rig.config.write_text(text + entry_yaml("added", later, "A new entry."))
    rig.daemon.on_signal(signal.SIGHUP)
    done = rig.probe.wait_event(ident("added", later), "finished", 30)
    assert done["schedule"] == "added"
    assert rig.probe.events_of(ident("first", at)) == ["queued", "started", "finished"]  # once


def test_a_restart_replays_what_it_died_in_within_catch_up_and_not_what_ended(
    daemon_rig: Callable[..., DaemonRig], tmp_path: Path
) -> None:
    first_at = soon(8.0)
    long_at = first_at + 3.0
    entries = entry_yaml("first", first_at, TEXT) + entry_yaml("long", long_at, LONG)
    rig = daemon_rig(
        queue_extra=f"state_dir: {tmp_path / 'state'}",
        audio_extra="realtime_pacing: true",  # (the capture plays in real time: the daemon stops mid-way)
        extra=schedule_yaml(tmp_path, entries, "  catch_up: 1m\n"),
    )
    first, long = ident("first", first_at), ident("long", long_at)
    rig.probe.wait_event(first, "finished", 30)
    rig.probe.wait_event(long, "started", 30)
    time.sleep(0.5)
    rig.stop()  # in its middle: not acknowledged, not ended (as a killed daemon's)
    assert "finished" not in rig.probe.events_of(long)
    again = daemon_rig(config=rig.config)
    done = again.probe.wait_event(long, "finished", 40)
    late = again.probe.wait_event(long, "started")
    assert done["schedule"] == late["schedule"] == "long"
    assert "sync_error_ms" not in late, late  # late (catch_up): as soon as it could, not at its second
    assert again.probe.events_of(first) == []  # it had ended: never twice
