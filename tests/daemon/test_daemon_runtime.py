"""The edge runtime inside the daemon: keepalive when idle, threads where configured,
locked bytes in the status (in-process daemon, fake voice, real broker and ALSA capture)."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

from edgetts.runtime.memlock import read_vmlck

from support.alsa import Capture
from support.broker import Broker
from support.daemon import InProcessDaemon, config_yaml
from support.fakes import FakeVoice
from support.probe import Probe

pytestmark = pytest.mark.mqtt


def _thread_cpus(thread: threading.Thread) -> set[int]:
    """Cpus_allowed_list of a thread of this process, as the kernel has it."""
    text = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    allowed = re.search(r"^Cpus_allowed_list:\s*(\S+)", text, re.M)
    assert allowed is not None
    cpus: set[int] = set()
    for part in allowed.group(1).split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def test_keepalive_runs_when_idle_and_yields_to_announcements(
    mosquitto: Broker, alsa_capture: Capture, tmp_path: Path
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(config_yaml(mosquitto, "keepalive-1", keepalive_s=1))
    voice = FakeVoice()
    probe = Probe(mosquitto, "test", "keepalive-1")
    daemon = InProcessDaemon(config, {"default": voice})
    try:
        probe.wait_status(lambda s: s["state"] == "online", 15)
        # idle: the synthesis thread reads a word through the default voice
        deadline = time.monotonic() + 10
        while "Ready." not in voice.calls and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "Ready." in voice.calls
        assert probe.events == []  # a keepalive is no announcement: no event, nothing queued
        probe.publish({"id": "k1", "text": "After the keepalive."})
        probe.wait_event("k1", "finished")
        assert "After the keepalive." in voice.calls
        # and it says what it cost
        status = probe.wait_status(lambda s: (s.get("keepalive") or {}).get("runs", 0) >= 1, 10)
        assert status["keepalive"]["interval_s"] == 1.0
        assert status["keepalive"]["cpu_s_per_run"] >= 0.0
        assert status["locked_bytes"] == read_vmlck()
    finally:
        assert daemon.stop() == 0
        probe.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_synthesis_and_audio_threads_run_where_configured(
    mosquitto: Broker, alsa_capture: Capture, tmp_path: Path
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(config_yaml(mosquitto, "pinned-1", extra="cpu:\n  inference_cores: [1]\n  audio_core: 0\n"))
    probe = Probe(mosquitto, "test", "pinned-1")
    daemon = InProcessDaemon(config, {"default": FakeVoice()})
    try:
        probe.wait_status(lambda s: s["state"] == "online", 15)
        probe.publish({"id": "p1", "text": "Pinned."})
        probe.wait_event("p1", "finished")
        assert _thread_cpus(daemon.daemon._synth._thread) == {1}
        assert _thread_cpus(daemon.daemon._player._thread) == {0}
        assert not [d for st in probe.statuses for d in st["degraded"] if d["what"] in ("cpu", "audio_thread")]
    finally:
        assert daemon.stop() == 0
        probe.close()


def test_a_core_the_machine_lacks_is_reported_not_fatal(
    mosquitto: Broker, alsa_capture: Capture, tmp_path: Path
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(config_yaml(mosquitto, "pinned-2", extra="cpu:\n  inference_cores: [999]\n"))
    probe = Probe(mosquitto, "test", "pinned-2")
    daemon = InProcessDaemon(config, {"default": FakeVoice()})
    try:
        status = probe.wait_status(lambda s: any(d["what"] == "cpu" for d in s["degraded"]), 15)
        reason = next(d["reason"] for d in status["degraded"] if d["what"] == "cpu")
        assert "cpu.inference_cores" in reason and "unpinned" in reason
        probe.publish({"id": "p2", "text": "Still speaking."})
        probe.wait_event("p2", "finished")
    finally:
        assert daemon.stop() == 0
        probe.close()


def test_edgetts_status_reads_the_retained_status(
    mosquitto: Broker, alsa_capture: Capture, tmp_path: Path
) -> None:
    import subprocess
    import sys

    config = tmp_path / "c.yaml"
    config.write_text(config_yaml(mosquitto, "status-1"))
    probe = Probe(mosquitto, "test", "status-1")
    daemon = InProcessDaemon(config, {"default": FakeVoice()})
    try:
        probe.wait_status(lambda s: s["state"] == "online", 15)
        out = subprocess.run([sys.executable, "-m", "edgetts.cli", "status", "--config", str(config)],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        shown = json.loads(out.stdout)
        assert shown["state"] == "online" and shown["voice"] == "fake"
        assert isinstance(shown["locked_bytes"], int)
    finally:
        assert daemon.stop() == 0
        probe.close()
    gone = subprocess.run([sys.executable, "-m", "edgetts.cli", "status", "--config", str(config)],
                          capture_output=True, text=True, timeout=30)
    assert gone.returncode == 3 and json.loads(gone.stdout)["state"] == "offline"
    nobody = tmp_path / "n.yaml"
    nobody.write_text(config_yaml(mosquitto, "nobody-here"))
    missing = subprocess.run([sys.executable, "-m", "edgetts.cli", "status", "--config", str(nobody),
                              "--timeout", "1"], capture_output=True, text=True, timeout=30)
    assert missing.returncode == 1
    expected = "edgetts: error: no status on test/nobody-here/status within 1 s (is edgetts running?)"
    assert missing.stderr.strip() == expected
