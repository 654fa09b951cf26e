"""What the timetable adds to the wire (issue 44): `schedule` on every event of an occurrence (tagged
once in :class:`Events`), and on the retained status; both read back by ``from_payload``."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from edgetts.daemon.admission.messages import Event
from edgetts.daemon.events import Events
from edgetts.daemon.health import Health
from edgetts.daemon.status import Status


class _Link:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def publish_event(self, event: Event) -> None:
        self.events.append(event)

    def ack(self, handle: Any) -> None:
        pass


def test_every_event_of_a_tagged_id_carries_its_schedule() -> None:
    events, link = Events(Health()), _Link()
    events.attach(link)
    events.tag("bell@2026-12-07T07:55:00Z", schedule="bell")
    events.publish("bell@2026-12-07T07:55:00Z", "queued")
    events.publish("other", "queued")
    events.publish("bell@2026-12-07T07:55:00Z", "started", latency_ms=1500.0, cached=True)
    assert [(e.id, e.event, e.schedule) for e in link.events] == [
        ("bell@2026-12-07T07:55:00Z", "queued", "bell"),
        ("other", "queued", None),
        ("bell@2026-12-07T07:55:00Z", "started", "bell"),
    ]
    wire = json.loads(link.events[2].to_payload())
    assert wire["schedule"] == "bell" and wire["cached"] is True
    assert "schedule" not in json.loads(link.events[1].to_payload())
    for ev in link.events:  # (ts goes out to the millisecond)
        assert Event.from_payload(ev.to_payload()) == replace(ev, ts=round(ev.ts, 3))
    for n in range(300):  # the tags are bounded: the oldest go first
        events.tag(f"x{n}", schedule="x")
    events.publish("bell@2026-12-07T07:55:00Z", "finished")
    events.publish("x299", "finished")
    assert link.events[-2].schedule is None and link.events[-1].schedule == "x"


def test_the_status_carries_the_next_occurrence() -> None:
    nxt = {"id": "bell", "at": 1796975700.0, "local": "2026-12-11 08:55:00 CET (Europe/Berlin)", "to": "all"}
    status = Status(state="online", version="1", voice="x", schedule={**nxt, "text": "School starts."})
    wire = json.loads(status.to_payload())
    assert wire["schedule"] == {**nxt, "text": "School starts."}
    assert Status.from_payload(status.to_payload()) == status
    assert "schedule" not in json.loads(Status(state="online", version="1", voice="x").to_payload())
