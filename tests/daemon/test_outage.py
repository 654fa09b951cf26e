"""Exactly once across broker outages and restarts, and two daemons with one device id (issue 13).

The outage cases run their own mosquitto (persistence on, a free port) that the
test stops and starts again on the same port: the session `mosquitto` fixture
is shared and must never go away.  In-process daemon, fake voice: each text
the voice is asked for is one play (the rig has no phrase cache).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.alsa import Capture
from support.broker import Broker
from support.daemon import DaemonRig, config_yaml
from support.fakes import FakeVoice
from support.probe import Probe

pytestmark = pytest.mark.mqtt

TEXTS = ("Platform two. The train is late.", "Gate nine. Boarding now.", "Lost child. Desk three.")


class OwnBroker:
    """mosquitto on one anonymous 127.0.0.1 port with persistence, stopped and started at will."""

    def __init__(self, d: Path) -> None:
        self.dir = d
        (d / "data").mkdir(parents=True)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        # `user root`: started as root, mosquitto would drop to `mosquitto` and then could not
        # write its persistence here (the session fixture's gotcha too)
        (d / "mosquitto.conf").write_text(
            f"user root\npersistence true\npersistence_location {d}/data/\nautosave_interval 1\n"
            f"log_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\n"
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def broker(self) -> Broker:
        """As the rig and the probe take a broker (only host and port are used)."""
        return Broker("127.0.0.1", self.port, 0, 0, 0, "", "", Path(), Path(), Path(), self.dir)

    def start(self) -> None:
        with open(self.dir / "mosquitto.log", "ab") as log:
            self.proc = subprocess.Popen(
                ["mosquitto", "-c", str(self.dir / "mosquitto.conf")], stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2):
                return
            time.sleep(0.05)
        raise RuntimeError((self.dir / "mosquitto.log").read_text()[-2000:])

    def stop(self) -> None:
        """An outage: SIGTERM (mosquitto saves its sessions, with the unacknowledged messages)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)


@pytest.fixture()
def own_broker(tmp_path: Path) -> Iterator[OwnBroker]:
    b = OwnBroker(tmp_path / "own-broker")
    b.start()
    yield b
    b.stop()


def _wait(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _rig(b: OwnBroker, tmp: Path, capture: Capture, voice: FakeVoice, device: str) -> DaemonRig:
    config = tmp / f"{device}.yaml"
    config.write_text(
        config_yaml(b.broker, device, queue_extra=f"state_dir: {tmp / 'state'}", audio_extra="realtime_pacing: true")
    )
    rig = DaemonRig(config, b.broker, capture, {"default": voice, "alt": FakeVoice("alt", 16000)})
    rig.wait_online(15)
    return rig


def _said(voice: FakeVoice) -> list[str]:
    """The announcements' texts the voice was asked for (not the loudness calibration's)."""
    return [text for text in voice.calls if text in TEXTS]


def _publish_when_back(probe: Probe, payload: str | dict[str, str]) -> None:
    """Publish once the probe has reconnected to the restarted broker (paho would queue it
    before, and a publish that raised would still be sent: the daemon rightly plays both)."""
    _wait(probe.is_connected, 15, "the probe to reconnect")
    probe.publish(payload)


def _again(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The disconnects of a takeover episode after its first (the daemon's own debug record of each)."""
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("MQTT disconnected again")]


def _sentinel(probe: Probe, ident: str) -> None:
    """Publish an announcement of its own and wait until it finished: messages play in order, so
    whatever was going to play before it has played (instead of a sleep and "nothing came")."""
    _publish_when_back(probe, {"id": ident, "text": "Sentinel."})
    probe.wait_event(ident, "finished", 30)


def _duplicates(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("duplicate id")]


def test_outage_plays_each_plain_text_once(
    own_broker: OwnBroker, alsa_capture: Capture, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    voice = FakeVoice(delay_s=0.6)  # ~1.2 s an announcement: all three end during the outage
    rig = _rig(own_broker, tmp_path, alsa_capture, voice, "outage")
    probe = Probe(own_broker.broker, "test", "outage", session="outage-probe")
    try:
        for text in TEXTS:
            probe.publish(text)
        _wait(lambda: len(_said(voice)) >= 1, 10, "the first synthesis")
        own_broker.stop()  # every acknowledgement from now on is lost
        _wait(lambda: not rig.daemon.link.connected, 10, "the daemon to see the outage")
        outage = time.time()  # statuses made from now on are the outage's
        _wait(lambda: len(rig.daemon.scheduler.memory) == 3, 20, "the three announcements to end")
        own_broker.start()  # same port, same persisted session: the three come again (DUP set)
        _wait(lambda: len(_duplicates(caplog)) == 3, 20, "the three redeliveries")
        probe.wait(lambda p: sum(e["event"] == "finished" for e in p.events) >= 3, 20, "finished events")
        sent = time.time()  # statuses made from now on are the sentinel's
        _sentinel(probe, "after-outage")  # anything played again would have played before it
        assert sorted(_said(voice)) == sorted(TEXTS)  # each text synthesized (played) once
        ids = {e["id"] for e in probe.events if e["event"] == "started"} - {"after-outage"}
        assert len(ids) == 3 and all(len(i) == 16 and int(i, 16) >= 0 for i in ids)
        assert {m.split()[2] for m in _duplicates(caplog)} == ids  # the redeliveries were these
        assert rig.daemon.link.connected and "mqtt" not in rig.daemon.degraded
        # After the reconnect only the current status, not the stale ones made during the
        # outage (each announcement's queued/playing state) in a burst.  (Those made before it
        # may still reach the probe's session, and the Last Will says `offline`.)
        since = [s for s in probe.statuses if outage <= s["ts"] < sent and s["state"] == "online"]
        assert since and all(s["current"] is None and s["queue_depth"] == 0 for s in since), since
    finally:
        probe.close()
        rig.close()


def test_dedup_memory_survives_a_daemon_restart(
    own_broker: OwnBroker, alsa_capture: Capture, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    first_voice = FakeVoice(delay_s=0.6)
    rig = _rig(own_broker, tmp_path, alsa_capture, first_voice, "restart")
    probe = Probe(own_broker.broker, "test", "restart", session="restart-probe")
    try:
        probe.publish(TEXTS[0])
        _wait(lambda: len(_said(first_voice)) == 1, 10, "the synthesis")
        own_broker.stop()
        _wait(lambda: len(rig.daemon.scheduler.memory) == 1, 20, "the announcement to end")
        assert rig.stop() == 0  # the daemon goes too, its acknowledgement never sent
        played = rig.daemon.scheduler.memory.ids()
        assert (tmp_path / "state" / "dedup.jsonl").read_text().count(played[0]) == 1

        own_broker.start()
        second_voice = FakeVoice()
        again = _rig(own_broker, tmp_path, alsa_capture, second_voice, "restart")
        try:
            _wait(lambda: len(_duplicates(caplog)) == 1, 20, "the redelivery")
            assert _duplicates(caplog)[0].split()[2] == played[0]
            # The same words published anew are a new announcement: they play.
            _publish_when_back(probe, TEXTS[0])
            _wait(lambda: _said(second_voice) == [TEXTS[0]], 20, "the new announcement")
            _sentinel(probe, "after-restart")  # a second play would have come before it
            assert _said(second_voice) == [TEXTS[0]]
        finally:
            again.close()
    finally:
        probe.close()
        rig.close()


def test_twin_daemons_are_reported(
    daemon_rig: Callable[..., DaemonRig], mosquitto: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    # (the disconnects of an episode after its first are logged at debug level)
    caplog.set_level(logging.DEBUG, logger="edgetts.daemon.inbound.mqtt")
    twins = dict(device="twin-a1", mqtt_extra="takeover_backoff_s: 2")
    first = daemon_rig(**twins)
    second = daemon_rig(**twins, online_timeout=None)

    def twin_reason(rig: DaemonRig) -> str:
        return rig.daemon.degraded.get("mqtt", "")

    _wait(
        lambda: "in use twice" in twin_reason(first) and "in use twice" in twin_reason(second),
        40,
        "both twins to notice",
    )
    reason = twin_reason(first)
    assert "'edgetts-twin-a1'" in reason and "device.id 'twin-a1'" in reason
    # Each says so in the retained status once it is connected again ...
    first.probe.wait_status(
        lambda s: any(d["what"] == "mqtt" and "in use twice" in d["reason"] for d in s["degraded"]), 20
    )
    # ... and in its log once, not at every disconnect: two more disconnects of the episode
    # (each twin's session taken over again) come, and are not told again.
    _wait(lambda: len(_again(caplog)) >= 2, 30, "two more disconnects in the episode")
    told = [r for r in caplog.records if "in use twice" in r.getMessage() and r.levelno >= logging.INFO]
    assert len(told) == 2 and all(r.levelno == logging.ERROR for r in told)
    # With the twin gone, the connection holds and the report goes.
    second.close()
    _wait(lambda: "mqtt" not in first.daemon.degraded, 30, "the episode to end")
    assert any("stable again" in r.getMessage() for r in caplog.records)
    first.probe.wait_status(lambda s: s["state"] == "online" and not s["degraded"], 10)
