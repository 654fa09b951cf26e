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

from support.broker import Broker
from support.daemon import config_yaml
from support.fakes import FakeVoice

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


def test_keepalive_runs_when_idle_and_yields_to_announcements(daemon_rig) -> None:
    voice = FakeVoice()
    rig = daemon_rig(voice, device="keepalive-1", keepalive_s=1)
    probe = rig.probe
    try:
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
        assert rig.stop() == 0


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_synthesis_and_audio_threads_run_where_configured(daemon_rig) -> None:
    rig = daemon_rig(device="pinned-1", extra="cpu:\n  inference_cores: [1]\n  audio_core: 0\n")
    probe = rig.probe
    try:
        probe.publish({"id": "p1", "text": "Pinned."})
        probe.wait_event("p1", "finished")
        assert _thread_cpus(rig.daemon.synthesis_thread) == {1}
        assert rig.daemon.audio_thread is not None and _thread_cpus(rig.daemon.audio_thread) == {0}
        assert not [d for st in probe.statuses for d in st["degraded"] if d["what"] in ("cpu", "audio_thread")]
    finally:
        assert rig.stop() == 0


def test_a_core_the_machine_lacks_is_reported_not_fatal(daemon_rig) -> None:
    rig = daemon_rig(device="pinned-2", extra="cpu:\n  inference_cores: [999]\n", online_timeout=None)
    probe = rig.probe
    try:
        status = probe.wait_status(lambda s: any(d["what"] == "cpu" for d in s["degraded"]), 15)
        reason = next(d["reason"] for d in status["degraded"] if d["what"] == "cpu")
        assert "cpu.inference_cores" in reason and "unpinned" in reason
        probe.publish({"id": "p2", "text": "Still speaking."})
        probe.wait_event("p2", "finished")
    finally:
        assert rig.stop() == 0


def test_edgetts_status_reads_the_retained_status(daemon_rig, mosquitto: Broker, tmp_path: Path) -> None:
    import subprocess
    import sys

    rig = daemon_rig(device="status-1")
    config = rig.config
    try:
        out = subprocess.run(
            [sys.executable, "-m", "edgetts.cli", "status", "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert out.returncode == 0, out.stderr
        shown = json.loads(out.stdout)
        assert shown["state"] == "online" and shown["voice"] == "fake"
        assert isinstance(shown["locked_bytes"], int)
    finally:
        assert rig.stop() == 0
    gone = subprocess.run(
        [sys.executable, "-m", "edgetts.cli", "status", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert gone.returncode == 3 and json.loads(gone.stdout)["state"] == "offline"
    nobody = tmp_path / "n.yaml"
    nobody.write_text(config_yaml(mosquitto, "nobody-here"))
    missing = subprocess.run(
        [sys.executable, "-m", "edgetts.cli", "status", "--config", str(nobody), "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert missing.returncode == 1
    expected = "edgetts: error: no status on test/nobody-here/status within 1 s (is edgetts running?)"
    assert missing.stderr.strip() == expected
