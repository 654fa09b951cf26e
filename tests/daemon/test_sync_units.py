"""Synchronized announcements (issue 19), the parts without a sound card: `play_at` on the wire,
the `sync` section, which announcements are synchronized, their seed, the lead a publisher picks."""

from __future__ import annotations

import argparse
import hashlib
import json

import pytest

from edgetts.cli.announce import _seconds
from edgetts.config import ConfigError, parse_config
from edgetts.daemon.admission.messages import Announcement, Event, PayloadError
from edgetts.daemon.playout import sync
from edgetts.engine import SynthesisConfig
from edgetts.runtime.clock import ClockHealth
from edgetts.voice.piper.seeded_noise import seed_for

NOW = 1_800_000_000.0


def _ann(**fields: object) -> Announcement:
    return Announcement.from_payload(json.dumps({"id": "a1", "text": "Hello.", **fields}).encode(), now=NOW)


def test_play_at_on_the_wire() -> None:
    ann = _ann(play_at=NOW + 1.5)
    assert ann.play_at == NOW + 1.5
    assert json.loads(ann.to_payload())["play_at"] == NOW + 1.5
    assert _ann(play_at=NOW - 20).play_at == NOW - 20  # late: it joins in step (not refused)
    assert "play_at" not in json.loads(_ann().to_payload())
    started = json.loads(Event(id="a1", event="started", ts=NOW, sync_error_ms=0.5, late_ms=120.0).to_payload())
    assert (started["sync_error_ms"], started["late_ms"]) == (0.5, 120.0)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("soon", "play_at must be a number"),
        (True, "play_at must be a number"),
        (NOW * 1000, "not milliseconds"),  # milliseconds where seconds were meant
        (NOW + 7200, r"\+7200 s from now"),
        (NOW - 7200, "-7200 s from now"),
    ],
)
def test_bad_play_at_is_refused_with_the_reason(value: object, reason: str) -> None:
    with pytest.raises(PayloadError, match=reason):
        _ann(play_at=value)


def _config(extra: str = "") -> object:
    return parse_config(
        "device:\n  id: p2-north\n  groups: [platform-2, station]\n"
        "sync:\n  groups: [platform-2]\n  lead_s: 2.5\n" + extra,
        "edgetts.yaml",
    )


def test_which_announcements_are_synchronized() -> None:
    config = _config()
    plain = _ann()
    assert sync.play_at(plain, "edgetts/group/platform-2/announce", NOW, config) == NOW + 2.5  # type: ignore[arg-type]
    assert sync.play_at(plain, "edgetts/group/station/announce", NOW, config) is None  # type: ignore[arg-type]
    assert sync.play_at(plain, "edgetts/p2-north/announce", NOW, config) is None  # type: ignore[arg-type]
    own = _ann(play_at=NOW + 0.75)  # the publisher's play_at wins, on any topic
    assert sync.play_at(own, "edgetts/group/platform-2/announce", NOW, config) == NOW + 0.75  # type: ignore[arg-type]
    assert sync.play_at(own, "edgetts/all/announce", NOW, config) == NOW + 0.75  # type: ignore[arg-type]


def test_the_sync_section_names_file_line_and_key() -> None:
    with pytest.raises(ConfigError, match=r"edgetts.yaml:5 sync/groups/0: 'north' is not one of device.groups"):
        parse_config("device:\n  id: x\n  groups: [south]\nsync:\n  groups: [north]\n", "edgetts.yaml")
    with pytest.raises(ConfigError, match=r"edgetts.yaml:2 sync/late: expected one of 'join', 'fallback'"):
        parse_config("sync:\n  late: later\n", "edgetts.yaml")
    with pytest.raises(ConfigError, match=r"sync/lead_s: must be > 0"):
        parse_config("sync:\n  lead_s: 0\n", "edgetts.yaml")
    with pytest.raises(ConfigError, match=r"audio/output_delay_ms: must be 0-2000"):
        parse_config("audio:\n  output_delay_ms: 5000\n", "edgetts.yaml")
    assert parse_config("audio:\n  output_delay_ms: 12.5\n", "e.yaml").audio.output_delay_ms == 12.5


def test_the_seed_is_the_ids_everywhere() -> None:
    seed = seed_for("platform-2-0815")
    assert seed == seed_for("platform-2-0815") and 0 <= seed < 2**63
    # sha256's first 8 bytes, shifted: no Python hash() (salted per process), so every board agrees
    assert seed == int.from_bytes(hashlib.sha256(b"platform-2-0815").digest()[:8], "big") >> 1
    assert seed_for("platform-2-0816") != seed
    assert sync.seeded(SynthesisConfig(length_scale=1.1), "x").seed == seed_for("x")


def _status(rtf_1min: float | None, rtf_load: float | None, voice: str = "default") -> dict[str, object]:
    """As a daemon publishes it: `voice` is the default voice's model, `voices` the configured
    names (the default first), `speed.voices` per configured name and its degrade_to."""
    return {
        "voice": "en_US-joe-medium",
        "voices": [voice],
        "speed": {
            "voices": {
                voice: {"rtf_1min": rtf_1min, "rtf_load": rtf_load},
                f"{voice}/degrade_to": {"rtf_1min": None, "rtf_load": 9.0},
            }
        },
    }


def test_the_lead_is_what_the_slowest_member_needs() -> None:
    text = "The train to the airport is arriving at platform two. Please stand back from the edge."
    assert sync.sync_lead({"clip": "chime"}, []) == sync.MIN_LEAD_S
    assert sync.sync_lead({"text": text}, [{"voice": "x", "voices": ["default"]}]) == sync.DEFAULT_LEAD_S
    fast = sync.sync_lead({"text": text}, [_status(0.05, 0.06)])
    board = sync.sync_lead({"text": text}, [_status(0.05, 0.06), _status(None, 0.8)])
    assert fast == sync.MIN_LEAD_S < board
    # a member at RTF 0.8 must have the first sentence (~52 characters, ~3.7 s) in hand: ~3 s
    assert 3.0 < board < 5.0
    # slower than real time: the rest must not run dry either, so the lead grows with the text
    slow_short = sync.sync_lead({"text": "Mind the gap."}, [_status(1.5, 1.2)])
    slow_long = sync.sync_lead({"text": text * 3}, [_status(1.5, 1.2)])
    assert slow_long > 3 * slow_short
    # the voice asked for, not the default's; one it has not measured: the slowest it has
    two = _status(0.3, 0.2)
    two["speed"]["voices"]["fr"] = {"rtf_1min": None, "rtf_load": 0.5}  # type: ignore[index]
    assert sync.member_rtf(two) == 0.3 and sync.member_rtf(two, "fr") == 0.5
    assert sync.member_rtf(two, "it") == 0.5  # (never a degrade_to variant: sync does not use it)


def test_an_unsynchronized_clock_is_said() -> None:
    assert sync.clock_problem(ClockHealth(True, 0.1, 2.0)) is None
    problem = sync.clock_problem(ClockHealth(False, 16000.0, 16000.0, "clock not synchronized (no NTP)"))
    assert problem is not None and problem.startswith(sync.CLOCK_UNSYNCED) and "no NTP" in problem
    assert sync.clock_problem(ClockHealth(None, reason="clock state unknown")) is not None


def test_lead_on_the_command_line() -> None:
    assert _seconds("1.5s") == 1.5 and _seconds("800ms") == pytest.approx(0.8) and _seconds("2") == 2.0
    for bad in ("soon", "0", "-1s", "2h"):
        with pytest.raises(argparse.ArgumentTypeError):
            _seconds(bad)
