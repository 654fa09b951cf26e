"""Wire messages: every class round-trips; announcement payloads are validated."""

from __future__ import annotations

import dataclasses
import inspect
import json

import pytest

from edgetts.daemon import status
from edgetts.daemon.admission import messages
from edgetts.daemon.admission.messages import (
    AnnounceLimits,
    Announcement,
    Event,
    PayloadError,
)
from edgetts.daemon.status import Degraded, Status

SAMPLES = {
    Announcement: [
        Announcement(id="a", text="Hello."),
        Announcement(
            id="b",
            clip="door-bell_2",
            priority="emergency",
            expires_at=1.7e9 + 0.5,
            voice="fr",
            volume=0.25,
            chime="ding",
            repeat=3,
            interrupt=True,
        ),
        Announcement(id="c", text="Fire in hall B.", fallback="fire_alarm", deadline_ms=1500),
        Announcement(id="s", text="The train is arriving.", play_at=1200.25),  # issue 19 (now=0 below)
    ],
    Event: [
        Event(id="a", event="queued", ts=1700000000.125),
        Event(id="a", event="started", ts=1700000001.0, latency_ms=123.4),
        Event(id="", event="rejected", ts=1.0, reason="bad JSON: x"),
        Event(
            id="f",
            event="fallback",
            ts=2.0,
            reason="deadline",
            clip="fire_alarm",
            detail="no speech within 300 ms (deadline_ms)",
        ),
        Event(id="c", event="started", ts=3.0, latency_ms=4.5, cached=True),
        Event(id="u", event="finished", ts=4.0, underruns=2, gap_ms=312.5),
        Event(id="z", event="finished", ts=5.0, underruns=0, gap_ms=0.0),
        Event(
            id="d",
            event="started",
            ts=4.0,
            latency_ms=80.0,
            voice="default",
            variant="fast",
            reason="voice default: RTF 1.20 over the last minute, above degrade_rtf 0.80: ...",
        ),
        Event(
            id="s",
            event="started",
            ts=6.0,
            latency_ms=1500.0,
            sync_error_ms=-0.42,
            late_ms=310.5,
            detail="clock not synchronized: ...",
        ),
    ],
    Status: [
        Status(
            state="online",
            version="0.1.0",
            voice="en_US-joe-medium",
            queue_depth=3,
            locked_bytes=1024,
            degraded=(Degraded("audio", "device gone"),),
            voices=("default", "fr"),
            current="a",
            ts=1700000000.5,
            underruns=4,
            gap_ms=901.5,
        ),
        Status(state="offline", version="0.1.0", voice="x"),
        Status(
            state="online",
            version="0.1.0",
            voice="x",
            degraded=(Degraded("speed", "voice x: RTF 1.2"),),
            rtf_1min=1.2,
            speed={"rtf_1min": 1.2, "runs_1min": 1, "variants_in_use": {"x": "fast"}},
        ),
        Status(
            state="online",
            version="0.2.0",
            voice="x",
            groups=("platform-2", "north"),
            clock={"synchronized": True, "error_ms": 0.25, "max_error_ms": 3.5, "reason": None},
            last={"id": "a", "event": "finished", "ts": 12.5},
        ),
    ],
}


def test_every_message_class_round_trips() -> None:
    classes = {
        obj
        for module in (messages, status)
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if dataclasses.is_dataclass(obj) and hasattr(obj, "to_payload")
    }
    assert classes == set(SAMPLES)
    for cls, samples in SAMPLES.items():
        for sample in samples:
            if cls is Announcement:
                again = cls.from_payload(sample.to_payload(), now=0.0)
            else:
                again = cls.from_payload(sample.to_payload())
            assert again == sample


def test_wire_field_names() -> None:
    ev = json.loads(Event(id="x", event="started", ts=2.0, latency_ms=5.0).to_payload())
    assert ev == {"id": "x", "event": "started", "ts": 2.0, "latency_ms": 5.0}
    fb = json.loads(SAMPLES[Event][3].to_payload())  # issue 6
    assert fb == {
        "id": "f",
        "event": "fallback",
        "ts": 2.0,
        "reason": "deadline",
        "clip": "fire_alarm",
        "detail": "no speech within 300 ms (deadline_ms)",
    }
    assert json.loads(SAMPLES[Event][4].to_payload())["cached"] is True
    st = json.loads(SAMPLES[Status][0].to_payload())
    assert {"state", "version", "voice", "queue_depth", "locked_bytes", "degraded"} <= set(st)
    assert st["degraded"] == [{"what": "audio", "reason": "device gone"}]
    assert st["rtf_1min"] is None and "speed" not in st  # no runs measured
    degraded = json.loads(next(e for e in SAMPLES[Event] if e.id == "d").to_payload())  # issue 14: who spoke, why
    assert (degraded["voice"], degraded["variant"]) == ("default", "fast") and degraded["reason"].startswith("voice")
    slow = json.loads(SAMPLES[Status][2].to_payload())
    assert slow["rtf_1min"] == 1.2 and slow["speed"]["variants_in_use"] == {"x": "fast"}
    fleet = json.loads(SAMPLES[Status][3].to_payload())  # issue 19: what `edgetts fleet` shows
    assert fleet["groups"] == ["platform-2", "north"] and fleet["clock"]["synchronized"] is True
    assert fleet["last"] == {"id": "a", "event": "finished", "ts": 12.5}
    # a status as an older daemon wrote it still reads
    old = Status.from_payload(b'{"state": "online", "version": "0.1.0", "voice": "x"}')
    assert old.groups == () and old.clock is None and old.last is None


def test_plain_text_and_ttl() -> None:
    a = Announcement.from_payload("  Mind the gap.\n".encode(), now=100.0, new_id=lambda: "gen")
    assert a == Announcement(id="gen", text="Mind the gap.", priority="normal")
    b = Announcement.from_payload(b'{"text": "x", "ttl": 30}', now=100.0, new_id=lambda: "g2")
    assert b.expires_at == 130.0 and b.id == "g2"
    c = Announcement.from_payload(b"hi", now=0, limits=AnnounceLimits(default_priority="low"))
    assert c.priority == "low"


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\xc3\x28", "not UTF-8"),
        (b"{nope", "bad JSON"),
        (b'{"text": 1}', "text must be a string"),
        (b'{"text": "a", "clip": "b"}', "exactly one of text and clip"),
        (b'{"id": 5, "text": "a"}', "id must be"),
        (b'{"text": "a", "ttl": -1}', "ttl must be > 0"),
        (b'{"text": "a", "ttl": 1, "expires_at": 5}', "not both"),
        (b'{"text": "a", "ttl": true}', "ttl must be a number"),
        (b'{"text": "a", "volume": 2}', "volume must be 0-1"),
        (b'{"text": "a", "repeat": 0}', "repeat must be 1-5"),
        (b'{"text": "a", "interrupt": "yes"}', "interrupt must be"),
        (b'{"text": "a", "voice": "../x"}', "voice must be"),
        (b'{"clip": "a/b"}', "not allowed"),
        (b'{"clip": ".."}', "not allowed"),
        (b'{"clip": ""}', "not allowed"),
        (b'{"clip": "fire\\n"}', "not allowed"),  # `$` would have let a final newline through
        (b'{"text": "a", "fallback": "/etc/x"}', "fallback name"),
        (b'{"text": "a", "fallback": "a\\u0000"}', "fallback name"),
        (b'{"text": "a", "deadline_ms": 0}', "deadline_ms must be"),
        (b'{"text": "a", "deadline_ms": 1.5}', "deadline_ms must be"),
        (b'{"text": "a", "deadline_ms": true}', "deadline_ms must be"),
        (b'{"text": "a", "extra": 1}', "unknown key"),
        (b"x" * 20000, "payload too large"),
        (b"a\x00b", "NUL"),
        (b"", "text is empty"),
    ],
)
def test_bad_payloads(payload: bytes, reason: str) -> None:
    with pytest.raises(PayloadError, match=reason.replace("(", r"\(")):
        Announcement.from_payload(payload, now=0.0, limits=AnnounceLimits(max_text_chars=100))
