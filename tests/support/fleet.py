"""Many daemons at once (issue 19): an output stream that keeps nothing, and a tap on every
device's events."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from support.broker import Broker


class NullStream:
    """An output stream that keeps nothing (stands in for the sound card of 19 daemons)."""

    def __init__(self, device: Any, fmt: Any, block: int) -> None:
        self.format, self.latency_s = fmt, 0.0

    def write(self, data: bytes) -> None:
        pass

    def drain(self) -> None:
        pass

    def close(self) -> None:
        pass


class EventsTap:
    """Every event on `<prefix>/+/events`, with the device it came from."""

    def __init__(self, broker: Broker, prefix: str) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._cond = threading.Condition()
        self._client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"tap-{uuid.uuid4().hex[:8]}")
        ready = threading.Event()
        self._client.on_connect = lambda c, u, f, rc, p: c.subscribe(f"{prefix}/+/events", qos=1)
        self._client.on_subscribe = lambda c, u, mid, rc, p: ready.set()
        self._client.on_message = self._on_message
        self._client.connect(broker.host, broker.port)
        self._client.loop_start()
        assert ready.wait(10)

    def _on_message(self, _c: Any, _u: Any, msg: Any) -> None:
        with self._cond:
            self.events.append((msg.topic.split("/")[1], json.loads(msg.payload)))
            self._cond.notify_all()

    def count(self, ident: str, event: str) -> Counter[str]:
        with self._cond:
            return Counter(dev for dev, ev in self.events if ev["id"] == ident and ev["event"] == event)

    def wait(self, ident: str, event: str, devices: set[str], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not devices <= set(self.count(ident, event)):
                left = deadline - time.monotonic()
                assert left > 0, f"{event} of {ident} missing on {sorted(devices - set(self.count(ident, event)))}"
                self._cond.wait(left)

    def close(self) -> None:
        self._client.loop_stop()
        self._client.disconnect()
