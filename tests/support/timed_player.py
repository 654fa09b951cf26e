"""A player process for the paced-sink sync tests: the real Player and sound card, timed jobs.

``python -m support.timed_player CONFIG.json`` (cwd: tests/) plays the same audio (a .npy of mono
float32) once per target in ``targets`` (Unix times), each job submitted ``submit_ahead_s``
before its target; for a target whose index is in ``late_s`` the audio is fed that many seconds
after the target (a board whose synthesis was late).  One JSON line per report on stdout:
``{"i", "kind", "sync_error_ms", "late_ms", "underruns", "gap_ms"}``.  The process plays into
ALSA's default device, which its environment routes (PacedSink.zone_env).
"""

from __future__ import annotations

import json
import queue
import sys
import time
from pathlib import Path

import numpy as np

from edgetts.audio.convert import DeviceFormat
from edgetts.audio.job import PlaybackJob
from edgetts.audio.player import Player, PlayerReport, PlayerSettings
from edgetts.audio.timed_start import TimedStart
from edgetts.daemon.playout.sound_card import OutputStream


def _sleep_until(at_unix: float) -> None:
    while (left := at_unix - time.time()) > 0:
        time.sleep(min(left, 0.05))


def main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text())
    rate = int(config["rate"])
    audio = np.load(config["audio"]).astype(np.float32)
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
