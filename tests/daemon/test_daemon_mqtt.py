"""The daemon reaches the broker over every supported kind of connection, and
its sd_notify messages follow the protocol (in-process daemon, fake voice)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from edgetts.config import parse_config
from edgetts.daemon.inbound.mqtt import MqttSetupError, resolve_password
from edgetts.daemon.sdnotify import Notifier

from support.broker import Broker
from support.notify import NotifySocket

pytestmark = pytest.mark.mqtt


def _mqtt(kind: str, b: Broker, tmp: Path) -> tuple[int, str, dict[str, str]]:
    pw_file = tmp / "pw"
    pw_file.write_text(b.password + "\n")
    creds = tmp / "creds"
    creds.mkdir()
    (creds / "mqtt-password").write_text(b.password)
    tls = f"tls:\n  enabled: true\n  ca_file: {b.ca}\n"
    return {
        "password": (b.port_auth, f"username: {b.user}\npassword: {b.password}\n", {}),
        "password_file": (b.port_auth, f"username: {b.user}\npassword_file: {pw_file}\n", {}),
        "credential": (
            b.port_auth,
            f"username: {b.user}\npassword_credential: mqtt-password\n",
            {"CREDENTIALS_DIRECTORY": str(creds)},
        ),
        "tls": (b.port_tls, f"username: {b.user}\npassword_file: {pw_file}\n{tls}", {}),
        "mtls": (b.port_mtls, tls + f"  cert_file: {b.client_cert}\n  key_file: {b.client_key}\n", {}),
        "v311": (b.port, "protocol: '3.1.1'\n", {}),
    }[kind]


@pytest.mark.parametrize("kind", ["password", "password_file", "credential", "tls", "mtls", "v311"])
def test_connects_and_announces(
    kind: str, daemon_rig, mosquitto: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port, mqtt_extra, env = _mqtt(kind, mosquitto, tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # the probe uses the anonymous listener
    rig = daemon_rig(
        device=f"conn-{kind.replace('_', '-')}", port=port, mqtt_extra=mqtt_extra, device_extra="groups: [platform-2]"
    )
    probe = rig.probe
    try:
        sock = rig.daemon.link.socket()
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        probe.publish({"id": f"{kind}-1", "text": "Hello."})
        probe.wait_event(f"{kind}-1", "finished")
        # group and all topics too
        probe.publish({"id": f"{kind}-all", "text": "Everyone."}, topic="test/all/announce")
        probe.wait_event(f"{kind}-all", "finished")
        probe.publish({"id": f"{kind}-grp", "text": "Platform two."}, topic="test/group/platform-2/announce")
        probe.wait_event(f"{kind}-grp", "finished")
    finally:
        assert rig.stop() == 0


def test_wrong_password_is_reported_not_fatal(daemon_rig, mosquitto: Broker) -> None:
    rig = daemon_rig(
        device="conn-bad",
        port=mosquitto.port_auth,
        online_timeout=None,
        mqtt_extra=f"username: {mosquitto.user}\npassword: wrong\n",
    )
    try:
        import time

        deadline = time.monotonic() + 10
        while "mqtt" not in rig.daemon.degraded and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "refused" in rig.daemon.degraded.get("mqtt", ""), rig.daemon.degraded
        assert rig.thread.is_alive()
    finally:
        assert rig.stop() == 0


def test_missing_credential_is_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    cfg = parse_config("mqtt:\n  username: u\n  password_credential: mqtt-password\n")
    with pytest.raises(MqttSetupError, match=r"CREDENTIALS_DIRECTORY"):
        resolve_password(cfg.mqtt)


def test_sd_notify_ready_watchdog_stopping(daemon_rig, notify_socket: NotifySocket) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": str(notify_socket.path), "WATCHDOG_USEC": "400000"})
    assert notifier.watchdog_s == 0.4
    rig = daemon_rig(device="notify", notifier=notifier, online_timeout=None)
    notify_socket.collect(lambda m: sum(x == "WATCHDOG=1" for x in m) >= 3, 10)
    assert rig.stop() == 0
    notify_socket.collect(lambda m: any(x.startswith("STOPPING=1") for x in m), 3)
    msgs = notify_socket.messages
    ready = next(i for i, m in enumerate(msgs) if m.startswith("READY=1\nSTATUS="))
    first_wd = msgs.index("WATCHDOG=1")
    stopping = next(i for i, m in enumerate(msgs) if m.startswith("STOPPING=1"))
    assert ready < stopping and first_wd < stopping
    assert Notifier({}).notify("READY=1") is False  # not under systemd: a no-op
    assert Notifier({"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "5", "WATCHDOG_PID": "1"}).watchdog_s is None


def test_the_notify_stand_in_keeps_every_datagram_unread_for_long(notify_socket: NotifySocket) -> None:
    """Like systemd, it reads all the time: 30 pings then STOPPING=1 with no test reading between
    (a socket queues 10; the daemon's sends do not block, so an unread stand-in lost STOPPING=1).
    The batches fit the queue: a verdict on the stand-in, not on how soon a busy machine runs it."""
    notifier = Notifier({"NOTIFY_SOCKET": str(notify_socket.path)})
    sent = []
    for _ in range(3):  # three queues' worth, a second apart: the stand-in's own reads must empty them
        sent += [notifier.watchdog() for _ in range(10)]
        time.sleep(1.0)
    sent.append(notifier.stopping("bye"))
    assert all(sent)
    msgs = notify_socket.collect(lambda m: any(x.startswith("STOPPING=1") for x in m), 5)
    assert msgs.count("WATCHDOG=1") == 30 and msgs[-1] == "STOPPING=1\nSTATUS=bye"


class V311OnlyBroker:
    """A 127.0.0.1 front for mosquitto that refuses MQTT 5 (CONNACK 0x84, as a
    3.1.1-only broker would) and relays MQTT 3.1.1 connections to mosquitto."""

    def __init__(self, upstream: int) -> None:
        import socket
        import threading

        self.upstream = upstream
        self.refused = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self._threads: list[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            head = conn.recv(4096)
            # CONNECT: 0x10, remaining length (1 byte here), 0x00 0x04 "MQTT", protocol level
            level = head[2 + head[1:].index(b"MQTT") - 1 + 4] if b"MQTT" in head else 0
            if level == 5:
                self.refused += 1
                conn.sendall(bytes([0x20, 0x03, 0x00, 0x84, 0x00]))
                conn.close()
                continue
            up = socket.create_connection(("127.0.0.1", self.upstream))
            up.sendall(head)
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b) -> None:  # type: ignore[no-untyped-def]
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


def test_mqtt5_refused_falls_back_to_311(daemon_rig, mosquitto: Broker) -> None:
    front = V311OnlyBroker(mosquitto.port)
    try:
        rig = daemon_rig(device="fallback311", port=front.port)
        assert front.refused >= 1
        rig.probe.publish({"id": "fb-1", "text": "Hello."})
        rig.probe.wait_event("fb-1", "finished")
        rig.close()
    finally:
        front.close()
