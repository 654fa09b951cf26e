"""A test MQTT client: publishes announcements, records events and status."""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from support.broker import Broker


class Probe:
    """A test MQTT client: publishes announcements, records events and status."""

    def __init__(self, broker: Broker, prefix: str, device: str, *, session: str | None = None) -> None:
        """``session``: a client id with a persistent session, so events published while the
        broker was down (restarted with persistence) still arrive after it is back."""
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        self.prefix, self.device = prefix, device
        self.events: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        if session is None:
            self._client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"probe-{os.getpid()}-{id(self)}")
        else:
            self._client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=session, clean_session=False)
            self._client.reconnect_delay_set(1, 1)
        self._client.on_message = self._on_message
        connected = queue.Queue[bool]()
        self._client.on_connect = lambda c, u, f, rc, p: connected.put(not rc.is_failure)
        self._client.connect(broker.host, broker.port)
        self._client.loop_start()
        assert connected.get(timeout=5)
        base = f"{prefix}/{device}"
        self._client.subscribe([(f"{base}/events", 1), (f"{base}/status", 1)])
        time.sleep(0.2)

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        data = json.loads(msg.payload)
        with self._cond:
            (self.events if msg.topic.endswith("/events") else self.statuses).append(data)
            self._cond.notify_all()

    def publish(self, payload: bytes | str | dict[str, Any], topic: str | None = None) -> None:
        if isinstance(payload, dict):
            payload = json.dumps(payload)
        topic = topic or f"{self.prefix}/{self.device}/announce"
        self._client.publish(topic, payload, qos=1).wait_for_publish(5)

    def wait(self, pred: Callable[[Probe], bool], timeout: float = 20.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not pred(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what or pred}: events={self.events}")
                self._cond.wait(left)

    def events_of(self, ident: str) -> list[str]:
        with self._cond:
            return [e["event"] for e in self.events if e["id"] == ident]

    def wait_event(self, ident: str, event: str, timeout: float = 20.0) -> dict[str, Any]:
        self.wait(lambda p: event in p.events_of(ident), timeout, f"{event} of {ident!r}")
        with self._cond:
            return next(e for e in self.events if e["id"] == ident and e["event"] == event)

    def wait_status(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 20.0) -> dict[str, Any]:
        self.wait(lambda p: any(pred(s) for s in p.statuses), timeout, "status")
        with self._cond:
            return next(s for s in reversed(self.statuses) if pred(s))

    def is_connected(self) -> bool:
        return bool(self._client.is_connected())

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()
