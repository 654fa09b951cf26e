"""Home Assistant's discovery of the daemon's Wyoming listeners over real mDNS (issue 17).

The daemon and its broker run on a "board", the asking zeroconf instance on a "home server": two
network namespaces of the test's own joined by a veth pair (support.netns), so multicast crosses
a link as on a LAN and never reaches the machine's own network card.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("zeroconf")

from support.alsa import Capture
from support.daemon import DaemonProcess
from support.netns import BOARD_ADDRESS, mosquitto_in, two_hosts
from support.paths import ROOT

pytestmark = pytest.mark.mqtt

TTS_PORT, SATELLITE_PORT = 10200, 10700


@pytest.fixture()
def hosts() -> Iterator[tuple[list[str], list[str]]]:
    with two_hosts("mdns") as board_and_home:
        yield board_and_home


def _wait_for_line(daemon: DaemonProcess, needle: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while needle not in daemon.output():
        assert daemon.proc is not None and daemon.proc.poll() is None, f"daemon exited:\n{daemon.log_end()}"
        assert time.monotonic() < deadline, f"no {needle!r} within {timeout:g} s:\n{daemon.log_end()}"
        time.sleep(0.1)


def _next_line(proc: subprocess.Popen[str]) -> dict[str, Any] | None:
    """The query's next JSON line, None once it has ended (it bounds each of its waits itself)."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return dict(json.loads(line)) if line else None


def test_zeroconf_advertises_both_listeners_and_says_goodbye_on_stop(
    hosts: tuple[list[str], list[str]],
    alsa_capture: Capture,
    tmp_path: Path,
    daemon_processes: list[DaemonProcess],
) -> None:
    """Each listener is a `_wyoming._tcp.local.` service of its own, at the address a client on the
    LAN can reach (a wildcard listener advertises the board's routed address, never 0.0.0.0) and its
    own port; asked over multicast from the other host, both answer, each answers Wyoming's
    `describe` at what it advertised, and a clean stop withdraws both (Home Assistant sees them
    removed)."""
    board, home = hosts
    name = "edgetts-zc-test"
    with mosquitto_in(board, tmp_path / "broker") as port:
        config = tmp_path / "daemon.yaml"
        config.write_text(
            f"device: {{id: zc-test}}\nmqtt: {{host: 127.0.0.1, port: {port}}}\n"
            "audio: {close_idle_s: 600}\nkeepalive: {interval_s: 0}\nlogging: {level: info}\n"
            f"queue: {{state_dir: {tmp_path / 'state'}}}\n"
            f"wyoming: {{enabled: true, uri: 'tcp://0.0.0.0:{TTS_PORT}', zeroconf: true, zeroconf_name: {name},\n"
            f"          satellite_uri: 'tcp://0.0.0.0:{SATELLITE_PORT}'}}\n"
        )
        daemon = DaemonProcess(config, alsa_capture.env, tmp_path / "daemon.log", prefix=board).start()
        daemon_processes.append(daemon)
        _wait_for_line(daemon, f"advertised over zeroconf as {name}-satellite", 60)

        query = subprocess.Popen(
            [*home, sys.executable, str(ROOT / "tests/support/mdns_query.py"), name, f"{name}-satellite"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            answer = _next_line(query)
            assert answer == {
                "found": {
                    name: {
                        "port": TTS_PORT,
                        "addresses": [BOARD_ADDRESS],
                        "properties": {"edgetts": "1"},
                        "answer": "info",
                    },
                    f"{name}-satellite": {
                        "port": SATELLITE_PORT,
                        "addresses": [BOARD_ADDRESS],
                        "properties": {"edgetts": "1"},
                        "answer": "info",
                    },
                }
            }, daemon.log_end()

            daemon.signal(signal.SIGTERM)
            daemon.assert_clean_exit()
            removed: set[str] = set()
            while len(removed) < 2 and (said := _next_line(query)) is not None:
                removed.add(said["removed"])
            assert removed == {name, f"{name}-satellite"}, f"withdrawn: {removed}; its log:\n{daemon.log_end()}"
            assert query.wait(10) == 0
        finally:
            if query.poll() is None:
                query.kill()
                query.wait(10)
