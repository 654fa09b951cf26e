"""What the daemon tools share: a private mosquitto, RSS of a process, an MQTT client of events.

Used by bench_daemon.py, soak.py and fuzz_mqtt.py (standalone scripts in tools/), so each
starts its broker and reads the daemon's events the same way.  Everything is on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{Path(sys.argv[0]).stem}: nothing listens on 127.0.0.1:{port}")


def start_broker(tmp: Path, extra: str = "") -> tuple[subprocess.Popen[bytes], int]:
    """A private mosquitto on a free port; (process, port) once it listens.  ``extra``: more config lines."""
    port = free_port()
    (tmp / "mosquitto.conf").write_text(
        f"listener {port} 127.0.0.1\nallow_anonymous true\nuser root\nlog_dest stderr\n"
        # Without it mosquitto's writes wait for Nagle + the daemon's delayed ACK: ~40 ms
        # between publish and receipt (measured here), more than the 30 ms cache-hit target.
        "set_tcp_nodelay true\n" + extra
    )
    proc = subprocess.Popen(
        ["mosquitto", "-c", str(tmp / "mosquitto.conf")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_port(port)
    return proc, port


def rss_kb(pid: int) -> int | None:
    """VmRSS of process ``pid`` in kB; None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class EventClient:
    """Publishes to ``<prefix>/<device>/announce``; the daemon's events and `online` statuses in queues."""

    def __init__(self, port: int, prefix: str, device: str, name: str, *, nodelay: bool = False) -> None:
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        self.topic = f"{prefix}/{device}/announce"
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.online: queue.Queue[bool] = queue.Queue()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"{name}-{os.getpid()}")
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port)
        if nodelay:
            # paho leaves Nagle on: a publish right after the PUBACK of an event would wait ~40 ms
            # for the broker's delayed ACK, and a bench would time its own socket.
            self.client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client.loop_start()
        self.client.subscribe([(f"{prefix}/{device}/events", 1), (f"{prefix}/{device}/status", 1)])

    def _on_message(self, c: Any, u: Any, msg: Any) -> None:
        data = json.loads(msg.payload)
        if msg.topic.endswith("/status"):
            if data.get("state") == "online":
                self.online.put(True)
        else:
            self.events.put(data)

    def publish(self, payload: str | bytes, wait_s: float | None = 10.0) -> None:
        """QoS 1; waits for the broker's PUBACK unless ``wait_s`` is None."""
        info = self.client.publish(self.topic, payload, qos=1)
        if wait_s is not None:
            info.wait_for_publish(wait_s)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
