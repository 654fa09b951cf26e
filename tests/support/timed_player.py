"""A player process for the paced-sink sync tests: the real Player and sound card, timed jobs.

``python -m support.timed_player CONFIG.json`` (cwd: tests/) plays the same audio (a .npy of mono
float32) once per target in ``targets`` (Unix times), each job submitted ``submit_ahead_s``
before its target; for a target whose index is in ``late_s`` the audio is fed that many seconds
after the target (a board whose synthesis was late).  One JSON line per report on stdout:
``{"i", "kind", "sync_error_ms", "late_ms", "underruns", "gap_ms"}``.  The process plays into
ALSA's default device, which its environment routes (PacedSink.zone_env).

With ``"reference": true`` it is the tests' measure of the sink and the recorder instead: no Player,
no timeline (nothing of edgetts.audio.timed_start or edgetts.audio.timeline, so a fault planted there
does not move it), just the sound card's stream (edgetts.daemon.playout.sound_card) kept running on
silence, its delay read after each blocking write, and at each target a burst of the audio written
where the earliest reading of the last second says the target is.  It prints
``{"i", "kind": "reference", "heard_unix"}``: when its own reading says the burst's first sample is
heard.  How far the recording's onset lies from that, burst by burst, is how far this machine's
sink, recorder and delay readings let any player's account be checked (see :func:`reference_margin_ms`).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from edgetts.audio.convert import DeviceFormat
from edgetts.audio.job import PlaybackJob
from edgetts.audio.player import Player, PlayerReport, PlayerSettings
from edgetts.audio.timed_start import TimedStart
from edgetts.daemon.playout.sound_card import OutputStream


def _sleep_until(at_unix: float) -> None:
    while (left := at_unix - time.time()) > 0:
        time.sleep(min(left, 0.05))


REFERENCE_BLOCK = 256
REFERENCE_WINDOW_S = 1.0
"""The earliest reading of this last span is the estimate (a late wake-up only makes one later)."""
REFERENCE_SETTLE_S = 0.5
"""Readings while the stream first fills say nothing: none are kept from this long after it opens."""
REFERENCE_STALL_S = 0.025
"""A write returning this much later than the block it wrote lasts: the stream (768 frames, 35 ms
queued through the paced sink) may have run dry meanwhile."""


def reference(config: dict[str, object], rate: int, audio: np.ndarray) -> int:
    """The reference player (see the module's doc)."""
    import collections

    try:  # as the daemons' and the players' audio threads run (cpu.realtime_audio)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (OSError, AttributeError):
        pass
    stream = OutputStream("default", DeviceFormat(rate), REFERENCE_BLOCK)
    burst = np.clip(audio * 32767.0, -32767, 32767).astype("<i2").tobytes()
    silence = bytes(2 * REFERENCE_BLOCK)
    frames, opened = 0, time.monotonic()
    readings: collections.deque[tuple[float, float]] = collections.deque()
    last, disturbed_until = opened, 0.0

    def write(data: bytes) -> None:
        nonlocal frames, last, disturbed_until
        stream.write(data)
        frames += len(data) // 2
        delay = stream.delay_s()  # (the delay first, then the time: a stall between makes it late)
        now = time.monotonic()
        if now - last > REFERENCE_STALL_S + len(data) // 2 / rate:
            # This process stalled long enough for its stream to run dry: the readings before are
            # no measure any more, and its next bursts measure its stall, not the sink.
            readings.clear()
            disturbed_until = now + REFERENCE_WINDOW_S
        last = now
        if delay is not None and now - opened >= REFERENCE_SETTLE_S:
            readings.append((now, now + delay - frames / rate))
        while readings and readings[0][0] < now - REFERENCE_WINDOW_S:
            readings.popleft()

    try:
        for i, target in enumerate(config["targets"]):  # type: ignore[attr-defined]
            while True:
                write(silence)
                if not readings:
                    continue
                epoch = min(e for _, e in readings)
                due = round((float(target) - time.time() + time.monotonic() - epoch) * rate)
                if due - frames <= REFERENCE_BLOCK:
                    break
            if due > frames:
                write(bytes(2 * (due - frames)))
            heard = epoch + frames / rate + time.time() - time.monotonic()
            # Block by block, as the silence: a stall within the burst splits it in the recording,
            # and one write of all of it would hide that stall (a clean-clone run once failed on
            # such a burst, matched at 0.78, that its reading had not called disturbed).
            for start in range(0, len(burst), 2 * REFERENCE_BLOCK):
                write(burst[start : start + 2 * REFERENCE_BLOCK])
            disturbed = time.monotonic() < disturbed_until
            print(json.dumps({"i": i, "kind": "reference", "heard_unix": heard, "disturbed": disturbed}), flush=True)
        write(bytes(2 * rate // 5))
    finally:
        stream.close()
    return 0


REFERENCE_SEED, REFERENCE_BURST_S = 39, 0.15


def reference_burst(rate: int) -> np.ndarray:
    """The reference player's burst (mono float32 noise)."""
    return np.random.default_rng(REFERENCE_SEED).uniform(-0.3, 0.3, int(REFERENCE_BURST_S * rate)).astype(np.float32)


class ReferencePlayer:
    """The reference player (``"reference": true``) as a subprocess on zone ``zone`` of ``sink``
    (a tools.paced_sink.PacedSink), a burst at each of ``targets`` (Unix times)."""

    def __init__(self, sink: Any, zone: int, workdir: Path, targets: list[float]) -> None:
        self.rate = int(sink.rate)
        self.zone = zone
        workdir.mkdir(parents=True, exist_ok=True)
        np.save(workdir / "reference.npy", reference_burst(self.rate))
        config = {"rate": self.rate, "audio": str(workdir / "reference.npy"), "targets": targets, "reference": True}
        (workdir / "reference.json").write_text(json.dumps(config))
        tests = Path(__file__).resolve().parents[1]
        env = {k: v for k, v in os.environ.items() if k != "ALSA_CAPTURE_FILE"}
        env["PYTHONPATH"] = os.pathsep.join([str(tests.parent), str(tests)])
        self._log = (workdir / "reference.log").open("wb")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "support.timed_player", str(workdir / "reference.json")],
            cwd=tests,
            env={**env, **sink.zone_env(zone)},
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        self._deadline = max(targets) + 30.0
        self.heard_unix: list[float] = []
        """When each burst was heard by the reference's reading, but those it played disturbed."""
        self.disturbed = 0
        """Bursts left out: played within a second of a stall of the reference's own process, or
        during one."""

    def finish(self, stop: bool = False) -> list[float]:
        """Wait for the last burst (``stop``: end it now); when each burst played was heard by the
        reference's own reading (Unix)."""
        try:
            if stop:
                self._proc.terminate()
            out, _ = self._proc.communicate(timeout=max(5.0, self._deadline - time.time()))
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait(5)
            self._log.close()
        assert self._proc.returncode == (-15 if stop else 0), f"the reference player exited {self._proc.returncode}"
        lines = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
        if stop:  # (the last burst may have been cut short: ended while its last blocks were queued)
            lines = lines[:-1]
        self.heard_unix = [float(r["heard_unix"]) for r in lines if not r["disturbed"]]
        self.disturbed = sum(bool(r["disturbed"]) for r in lines)
        return self.heard_unix

    def residuals_ms(self, recording: Any, pcm: np.ndarray) -> np.ndarray:
        """Burst by burst: the recording's onset (tools.onsets.match on its zone's channel, through
        the recording's sample-to-Unix mapping) minus when the reference's reading said it is heard."""
        from tools.onsets import match

        ref = np.clip(reference_burst(self.rate) * 32767.0, -32767, 32767)
        channel = pcm[:, self.zone]
        out = []
        for heard in self.heard_unix:
            if recording.index_at_unix(heard) + ref.size + 0.1 * self.rate > channel.size:
                continue  # (played after the recording ended)
            index, score = match(channel, ref, recording.index_at_unix(heard), self.rate, 0.05)
            assert score > 0.9, (heard, score)  # (the very burst: the recorder lost none of it)
            out.append((recording.unix_at(index) - heard) * 1000.0)
        return np.array(out)


def reference_margin_ms(residuals_ms: np.ndarray, rate: int = 22050) -> float:
    """How closely this run's recording can check a player's own account of when it was heard.

    A reference residual is the recorder's sample-to-Unix mapping error at that moment (its fit's
    scatter: a slow wander of +-0.7 ms here) plus the error of the reference's own estimate of its
    stream's clock (the sink's render ticks, the delay readings' jitter as the earliest of a second
    of them leaves it), under this run's own load.  A member's residual (its recorded onset minus
    `play_at`, minus the `sync_error_ms` it reported) is the same mapping error plus its own
    estimate's error from the same sources: each bounded by the largest reference residual over
    the run's tens of bursts, so their sum by twice that; and two samples for the two onsets, each
    found to a sample."""
    return 2.0 * float(np.max(np.abs(residuals_ms))) + 2000.0 / rate


def main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text())
    rate = int(config["rate"])
    audio = np.load(config["audio"]).astype(np.float32)
    if config.get("reference"):
        return reference(config, rate, audio)
    late = {int(i): float(s) for i, s in config.get("late_s", {}).items()}
    reports: queue.Queue[PlayerReport] = queue.Queue()
    # The audio thread SCHED_FIFO, as docs/zones.md ("Synchronized zones") asks of a loaded board
    # (cpu.realtime_audio; tools/sync_rig.py's daemons run so): three players, PulseAudio and parec
    # share two cores here. Locally it failed 2 runs of 3 without it, 0 of 4 with it; one CI run
    # with it still failed at the late joiner's target (issue 14's eighth note): not the whole cause.
    player = Player(
        PlayerSettings(device="default", format=DeviceFormat(rate), realtime=True),
        reports.put,
        stream_factory=OutputStream,
    )
    player.start()
    try:
        for i, target in enumerate(config["targets"]):
            _sleep_until(target - float(config.get("submit_ahead_s", 0.8)))
            job = PlaybackJob(i, player.converter, 1.0)
            job.timed = TimedStart(float(target), float(config.get("output_delay_s", 0.0)))
            player.submit(job)
            if i in late:
                _sleep_until(target + late[i])
            job.feed(audio, rate, (0, 0), speech=True)
            job.end()
            while True:
                r = reports.get(timeout=30)
                if r.job is not job:
                    continue
                print(
                    json.dumps(
                        {
                            "i": i,
                            "kind": r.kind,
                            "sync_error_ms": r.sync_error_ms,
                            "late_ms": r.late_ms,
                            "underruns": r.underruns,
                            "gap_ms": r.gap_ms,
                        }
                    ),
                    flush=True,
                )
                if r.kind in ("finished", "stopped", "failed"):
                    break
    finally:
        player.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
