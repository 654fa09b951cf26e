"""Announce from a shell or a program (`edgetts announce`, issue 19): publish, then follow the events.

The announcement goes to one device (`device/<id>`), a group (`group/<g>`) or
`all`, with an id of its own, so each member's events can be told apart from
any other announcement's.  Which devices should answer is read from the
retained statuses (their `groups`), so the client waits for each of them to
end it (`finished`, `failed`, `rejected`, `expired` or `cancelled`), or gives
up at ``timeout``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from edgetts.client.fleet import read_fleet
from edgetts.config import Config
from edgetts.daemon.admission.intake import PayloadError
from edgetts.daemon.inbound.mqtt import reader
from edgetts.daemon.playout.sync import sync_lead
from edgetts.vocabulary import NAME_RE

ENDS = frozenset({"finished", "failed", "rejected", "expired", "cancelled"})
"""Events after which a device has nothing more to say of an announcement."""


@dataclass
class Outcome:
    """What the devices said of one announcement."""

    id: str
    topic: str
    expected: list[str]
    """The devices that should play it (online, in the target), from their retained statuses."""
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(device, event) in arrival order."""
    play_at: float | None = None
    """The `play_at` it was sent with (Unix seconds), if any."""

    def ended(self) -> dict[str, dict[str, Any]]:
        """Each device's last event, where it was an end."""
        last: dict[str, dict[str, Any]] = {}
        for device, ev in self.events:
            if ev["event"] in ENDS:
                last[device] = ev
        return last

    @property
    def complete(self) -> bool:
        return set(self.expected) <= set(self.ended())

    @property
    def ok(self) -> bool:
        ended = self.ended()
        return self.complete and all(ended[d]["event"] == "finished" for d in self.expected)


def target_topic(config: Config, to: str) -> tuple[str, str | None, str | None]:
    """(announce topic, device, group) of ``to``: `device/<id>`, `group/<g>` or `all`."""
    prefix = config.mqtt.topic_prefix
    kind, _, name = to.partition("/")
    if to == "all":
        return f"{prefix}/all/announce", None, None
    if kind in ("device", "group") and NAME_RE.match(name):
        if kind == "device":
            return f"{prefix}/{name}/announce", name, None
        return f"{prefix}/group/{name}/announce", None, name
    raise PayloadError(f"--to must be device/<id>, group/<name> or all (got {to!r})")


def member_statuses(config: Config, device: str | None, group: str | None, timeout: float) -> dict[str, dict[str, Any]]:
    """The retained statuses of the online devices the target reaches."""
    fleet = read_fleet(config, timeout=timeout)
    online = [m for m in fleet if m.status.get("state") == "online"]
    if device is not None:
        return {m.device: m.status for m in online if m.device == device}
    return {m.device: m.status for m in online if group is None or group in m.status.get("groups", [])}


def members(config: Config, device: str | None, group: str | None, timeout: float) -> list[str]:
    """The online devices the target reaches, by their retained statuses."""
    return list(member_statuses(config, device, group, timeout))


def announce(
    config: Config,
    payload: dict[str, Any],
    to: str = "",
    *,
    wait: bool = True,
    timeout: float = 60.0,
    sync: bool = False,
    lead: float | None = None,
) -> Outcome:
    """Publish ``payload`` (an id is added when it has none) to ``to`` (default: this config's device)
    and, with ``wait``, follow the events until every expected device ended it or ``timeout``.

    ``sync``: every device plays it at one `play_at` = now + ``lead`` (seconds; default: what
    the slowest member needs, edgetts.daemon.playout.sync.sync_lead, from the speeds in their statuses).
    This machine's clock sets `play_at`: it must be synchronized like the devices' own.
    """
    topic, device, group = target_topic(config, to or f"device/{config.device.id}")
    payload = {"id": payload.get("id") or f"cli-{uuid.uuid4().hex[:12]}", **payload}
    statuses = member_statuses(config, device, group, min(timeout, 5.0)) if wait or (sync and lead is None) else {}
    expected = list(statuses) if wait else []
    if sync:
        if lead is None:
            lead = sync_lead(payload, list(statuses.values()))
        payload["play_at"] = round(time.time() + lead, 4)
    outcome = Outcome(payload["id"], topic, expected, play_at=payload.get("play_at"))
    done = threading.Event()
    lock = threading.Lock()

    def on_message(_c: Any, _u: Any, msg: Any) -> None:
        try:
            ev = json.loads(msg.payload)
        except ValueError:
            return
        if not isinstance(ev, dict) or ev.get("id") != outcome.id:
            return
        with lock:
            outcome.events.append((msg.topic.split("/")[-2], ev))
            if outcome.complete:
                done.set()

    subscribed = threading.Event()
    client = reader(
        config, "announce", f"{config.mqtt.topic_prefix}/+/events", on_message, lambda *_a: subscribed.set()
    )
    try:
        subscribed.wait(5.0)  # subscribed before publishing: no event can slip past
        client.publish(topic, json.dumps(payload), qos=1).wait_for_publish(5.0)
        if wait and expected:
            done.wait(timeout)
        elif wait:
            time.sleep(min(timeout, 2.0))  # nobody known to be online: show what (if anything) answers
    finally:
        client.disconnect()
        client.loop_stop()
    return outcome


__all__ = ["ENDS", "Outcome", "announce", "members", "target_topic"]
