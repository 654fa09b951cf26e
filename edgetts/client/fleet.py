"""Every device on the broker, from their retained status topics (`edgetts fleet`, issue 19).

Each daemon keeps its status retained on `<prefix>/<device>/status`, with an
`offline` Last Will, so one subscription to `<prefix>/+/status` gets the whole
site at once: the broker sends every retained status right after the
subscription is granted.  The read ends when no status has come for
``settle_s`` after that (or at ``timeout``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt

from edgetts.config import Config
from edgetts.daemon.inbound.mqtt import MqttSetupError, reader

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class Member:
    device: str
    status: dict[str, Any]
    """The retained status as published; ``{}`` with ``problem`` set when it was not JSON."""
    problem: str | None = None


class _Collector:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.members: dict[str, Member] = {}
        self.subscribed = threading.Event()
        self.last = time.monotonic()
        self.lock = threading.Lock()

    def on_message(self, _client: Any, _userdata: Any, msg: mqtt.MQTTMessage) -> None:
        device = msg.topic[len(self.prefix) + 1 : -len("/status")]
        try:
            member = Member(device, dict(json.loads(msg.payload)))
        except (ValueError, TypeError) as exc:
            member = Member(device, {}, f"status is not a JSON object: {exc}")
        with self.lock:
            if msg.payload:  # an empty retained message clears a device that is gone
                self.members[device] = member
            else:
                self.members.pop(device, None)
            self.last = time.monotonic()


def read_fleet(config: Config, *, settle_s: float = 0.5, timeout: float = 5.0) -> list[Member]:
    """The devices under ``config``'s topic prefix, by id; MqttSetupError if the broker is unreachable."""
    m = config.mqtt
    collect = _Collector(m.topic_prefix)
    client = reader(
        config,
        "fleet",
        f"{m.topic_prefix}/+/status",
        collect.on_message,
        lambda c, u, mid, rc, props: collect.subscribed.set(),
    )
    try:
        end = time.monotonic() + timeout
        if not collect.subscribed.wait(timeout):
            raise MqttSetupError(f"the broker at {m.host}:{m.port} did not grant the subscription in {timeout:g} s")
        collect.last = time.monotonic()
        while (now := time.monotonic()) < end and now - collect.last < settle_s:
            time.sleep(0.02)
    finally:
        client.disconnect()
        client.loop_stop()
    with collect.lock:
        return [collect.members[d] for d in sorted(collect.members)]


def _clock(status: dict[str, Any]) -> str:
    clock = status.get("clock")
    if not isinstance(clock, dict) or clock.get("synchronized") is None:
        return "?"
    if not clock["synchronized"]:
        return "UNSYNCED"
    return f"ok ±{clock.get('error_ms', 0):g} ms"


def table(members: list[Member]) -> list[str]:
    """One line per device: what an operator scans a site for."""
    rows = [("DEVICE", "STATE", "VERSION", "VOICE", "GROUPS", "CLOCK", "DEGRADED", "LAST")]
    for member in members:
        st = member.status
        degraded = ", ".join(str(d.get("what")) for d in st.get("degraded", []) if isinstance(d, dict))
        last = st.get("last") if isinstance(st.get("last"), dict) else None
        rows.append(
            (
                member.device,
                str(st.get("state", "?")) if member.problem is None else "unreadable",
                str(st.get("version", "")),
                str(st.get("voice", "")),
                ",".join(map(str, st.get("groups", []))) or "-",
                _clock(st),
                degraded or "-",
                f"{last['id']} {last['event']}" if last else "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


__all__ = ["Member", "read_fleet", "table"]
