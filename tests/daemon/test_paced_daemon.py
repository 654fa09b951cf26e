"""The real daemon (subprocess, real default voice, real mosquitto) on the paced sink (issue 14).

A normal announcement: its `finished` event says underruns 0 / gap_ms 0 and its recording has no
hole.  Then the daemon is slowed on purpose (its pid moved into a cgroup CPU quota) while it
speaks: the `finished` event counts underruns, the recording has the holes where (and about as
long as) they were reported, and the retained status carries the totals since start.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from support.broker import Broker
from support.daemon import DaemonProcess, config_yaml
from support.probe import Probe
from support.quota import cpu_quota, unavailable
from tools.paced_sink import PacedSink, find_gaps

pytestmark = [pytest.mark.mqtt, pytest.mark.realtime]  # a paced sink and a CPU quota: only real time can tell

RATE = 22050
NORMAL = "The next train to the airport leaves from platform two."
LONG = (
    "Attention please. The evening service to the coast is delayed by about twenty minutes. "
    "Passengers for the harbour should change at the central station. We apologise for the delay. "
    "Refreshments are available in the waiting room on platform one. Thank you for your patience."
)


def test_underruns_in_finished_events_and_status_on_a_paced_sink(
    mosquitto: Broker,
    paced_sink: PacedSink,
    tmp_path: Path,
    daemon_processes: list[DaemonProcess],
) -> None:
    why = unavailable()
    if why:
        pytest.skip(f"cannot slow the daemon: {why}")
    config = tmp_path / "edgetts.yaml"
    config.write_text(config_yaml(mosquitto, "paced-daemon"))
    probe = Probe(mosquitto, "test", "paced-daemon")
    daemon = DaemonProcess(config, dict(paced_sink.env), tmp_path / "daemon.log").start()
    daemon_processes.append(daemon)
    try:
        probe.wait_status(lambda s: s["state"] == "online", 90)

        with paced_sink.record() as rec:
            probe.publish({"id": "normal", "text": NORMAL})
            done = probe.wait_event("normal", "finished", 60)
            time.sleep(0.3)
            pcm = rec.stop()
        assert done["underruns"] == 0 and done["gap_ms"] == 0, done
        # No hole the player should have counted: it counts lateness beyond the device's latency
        # (~90 ms here); a dropout of ~20 ms below that was seen once in a few runs, uncounted.
        assert find_gaps(pcm, RATE, min_gap_ms=50.0) == []
        status = probe.wait_status(lambda s: s["state"] == "online" and s.get("current") is None, 10)
        assert status["underruns"] == 0 and status["gap_ms"] == 0, status

        with paced_sink.record() as rec:
            probe.publish({"id": "slow", "text": LONG})
            probe.wait_event("slow", "started", 60)
            assert daemon.proc is not None
            # 10 % of a core (the smallest quota at a 10 ms period): well below what the voice
            # and the audio thread need together.
            slow_from = time.monotonic()
            with cpu_quota(daemon.proc.pid, 0.1):
                time.sleep(3.0)
            slow_to = time.monotonic()
            done = probe.wait_event("slow", "finished", 120)
            time.sleep(0.3)
            pcm = rec.stop()
        assert done["underruns"] >= 1 and done["gap_ms"] > 0, done
        gaps = find_gaps(pcm, RATE)
        assert gaps, "no hole in the recording"
        # Where: the holes fall while the daemon was slowed.  Starved together with the voice, the
        # audio thread may leave one long hole or several short ones (a shared machine, a CI run):
        # those inside the slowed span add up to at least 0.3 s, the longest is among them.
        inside = [(s0, n) for s0, n in gaps if slow_from - 0.2 <= rec.started_mono + s0 <= slow_to + 0.5]
        start, _length = max(gaps, key=lambda g: g[1])
        assert (start, _length) in inside and sum(n for _, n in inside) >= 0.3, (slow_from, slow_to, gaps)
        # How long: the holes heard add up to about what the player reported.
        heard_ms = 1000.0 * sum(length for _, length in gaps)
        assert abs(heard_ms - done["gap_ms"]) <= max(150.0, 0.25 * done["gap_ms"]), (heard_ms, done, gaps)

        status = probe.wait_status(lambda s: s.get("underruns") == done["underruns"], 10)
        assert abs(status["gap_ms"] - done["gap_ms"]) <= 0.2, (status, done)
    finally:
        probe.close()
