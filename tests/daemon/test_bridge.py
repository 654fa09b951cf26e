"""Past one broker (issue 19): two sites, each with its own mosquitto, joined by a mosquitto bridge
(the configuration docs/zones.md documents). An `all` and a group announcement published at one site
reach the daemons of both exactly once, each site sees the other's statuses, and while the bridge
is down nothing published with QoS 1 is lost: it arrives when the bridge is back.

The bridge runs through a small TCP relay the test can cut, so "losing the bridge" is the link
between the sites going away, with both brokers and their daemons still running.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.broker import Broker, _free_ports, plain_broker
from support.daemon import DaemonRig, config_yaml
from support.fakes import FakeVoice
from support.fleet import EventsTap, NullStream
from support.paths import ROOT

pytestmark = pytest.mark.mqtt

GROUP = "concourse"


def bridge_conf(name: str, port: int, prefix: str) -> str:
    """The site bridge of docs/zones.md ("Many sites"): everything under the prefix, both ways, QoS 1,
    a persistent session (cleansession false) so the far broker queues what it cannot deliver."""
    return (
        f"connection {name}\naddress 127.0.0.1:{port}\ntopic {prefix}/# both 1\n"
        "cleansession false\nbridge_protocol_version mqttv311\ntry_private true\n"
        "restart_timeout 1\nkeepalive_interval 5\nnotifications false\n"
    )


class Relay:
    """A TCP relay from a local port to ``target``; :meth:`cut` drops every connection and refuses new ones."""

    def __init__(self, target: int) -> None:
        self.target, self.port = target, _free_ports(1)[0]
        self._up = threading.Event()
        self._up.set()
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._srv = socket.create_server(("127.0.0.1", self.port))
        self._srv.settimeout(0.2)
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self._srv.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not self._up.is_set():
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self._up.clear()
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def restore(self) -> None:
        self._up.set()

    def close(self) -> None:
        self._stop = True
        self.cut()
        self._srv.close()


@contextlib.contextmanager
def two_sites(tmp_path: Path, prefix: str) -> Iterator[tuple[Broker, Broker, Relay]]:
    with plain_broker(tmp_path / "site-a") as a:
        relay = Relay(a.port)
        try:
            with plain_broker(tmp_path / "site-b", bridge_conf("to-site-a", relay.port, prefix)) as b:
                yield a, b, relay
        finally:
            relay.close()


def _fleet(config: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "edgetts.cli", "fleet", "--config", str(config), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return json.loads(out.stdout or "{}")


def _sentinels(rigs: list[DaemonRig], taps: dict[str, EventsTap], prefix: str, tag: str) -> None:
    """An `all` announcement from each site, waited for on every device: what the bridge carried
    before it (a duplicate, a loop, a late delivery) crossed the same connection first, and each
    daemon takes its messages in order, so it has been admitted or dropped by then."""
    for site, rig in (("a", rigs[0]), ("b", rigs[2])):
        rig.probe.publish({"id": f"{tag}-{site}", "text": "Sentinel."}, topic=f"{prefix}/all/announce")
    for site in ("a", "b"):
        taps["a"].wait(f"{tag}-{site}", "finished", {"a-1", "a-2", "b-1", "b-2"})


def test_two_sites_joined_by_a_bridge(tmp_path: Path, alsa_capture: Any) -> None:
    prefix = f"br{uuid.uuid4().hex[:6]}"
    with two_sites(tmp_path, prefix) as (site_a, site_b, relay):

        def config(broker: Broker, device: str) -> Path:
            path = tmp_path / f"{device}.yaml"
            text = config_yaml(broker, device, device_extra=f"groups: [{GROUP}]" if device.endswith("1") else "")
            path.write_text(text.replace("topic_prefix: test", f"topic_prefix: {prefix}"))
            return path

        homes = {"a-1": site_a, "a-2": site_a, "b-1": site_b, "b-2": site_b}
        rigs = [
            DaemonRig(config(broker, dev), broker, alsa_capture, {"default": FakeVoice()}, stream_factory=NullStream)
            for dev, broker in homes.items()
        ]
        taps = {"a": EventsTap(site_a, prefix), "b": EventsTap(site_b, prefix)}
        try:
            for rig in rigs:
                rig.wait_online(30)
            # each site sees every device (the statuses cross the bridge, retained)
            for device in ("a-1", "b-1"):
                deadline = time.monotonic() + 20
                while set(_fleet(config(homes[device], device))) != set(homes):
                    assert time.monotonic() < deadline, f"site of {device} does not see all four"
                    time.sleep(0.5)

            pub_a = rigs[0].probe  # a client of site A
            pub_a.publish({"id": "all-1", "text": "To both sites."}, topic=f"{prefix}/all/announce")
            pub_a.publish({"id": "grp-1", "text": "Concourse only."}, topic=f"{prefix}/group/{GROUP}/announce")
            taps["a"].wait("all-1", "finished", set(homes))
            taps["a"].wait("grp-1", "finished", {"a-1", "b-1"})
            _sentinels(rigs, taps, prefix, "s1")  # a duplicate (a bridge loop) would have come before
            assert taps["a"].count("all-1", "queued") == {d: 1 for d in homes}
            assert taps["b"].count("grp-1", "queued") == {"a-1": 1, "b-1": 1}

            # the link between the sites goes away; QoS 1 published meanwhile, on both sides
            relay.cut()  # (at once: every relayed connection is shut, new ones refused; no wait)
            pub_a.publish(
                {"id": "cut-a", "text": "Sent at A while the sites were apart."}, topic=f"{prefix}/all/announce"
            )
            rigs[2].probe.publish({"id": "cut-b", "text": "Sent at B meanwhile."}, topic=f"{prefix}/all/announce")
            taps["a"].wait("cut-a", "finished", {"a-1", "a-2"})
            taps["b"].wait("cut-b", "finished", {"b-1", "b-2"})
            assert not taps["b"].count("cut-a", "queued") and not taps["a"].count("cut-b", "queued")
            relay.restore()
            taps["b"].wait("cut-a", "finished", {"b-1", "b-2"}, timeout=60)
            taps["a"].wait("cut-b", "finished", {"a-1", "a-2"}, timeout=60)
            _sentinels(rigs, taps, prefix, "s2")  # a second delivery would have come before
            for ident in ("cut-a", "cut-b"):
                assert taps["a"].count(ident, "queued") == {d: 1 for d in homes}, ident
        finally:
            for rig in rigs:
                rig.close()
            for tap in taps.values():
                tap.close()
