#!/usr/bin/env python3
"""The process tools/bench_board.py slows down: piper-tts and edgetts, one after the other per line.

Started by bench_board with the paced sink's environment; it loads both engines
at full speed, prints ``{"ready": pid}``, and when told ``go`` (by then it is in
the CPU-quota group) warms both up and speaks every line with each engine,
printing one JSON object with what it measured.

edgetts runs as the daemon's default configuration runs it: the voice from
edgetts.daemon.assets.load_configured_voice with ``VoiceModelSettings()`` (only
``threads`` set), text prepared by ``prepare_text`` with the config's text
options (normaliser on), a producer thread feeding a PlaybackJob, and a real
Player on the PortAudio sound card with the daemon's audio settings.  piper-tts
only synthesizes: its underruns are what its sentence-at-a-time output would give
a player that starts at its first chunk (:func:`simulate`), on the same clock.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tools.bench_engine import _load_piper  # (piper-tts at N threads on its own session)

REPORT_TIMEOUT_S = 600.0
"""A line's `finished` report must come within this (a wedged player ends the run, not the machine)."""


def earliest_start(arrivals: list[tuple[float, float]]) -> float:
    """The earliest time a player could have started and never waited for a chunk: what a lead
    with perfect foresight of these arrivals would give (``arrivals`` as :func:`simulate`'s)."""
    start, heard = 0.0, 0.0
    for n, (at, seconds) in enumerate(arrivals):
        start = at if n == 0 else max(start, at - heard)
        heard += seconds
    return start


def simulate(arrivals: list[tuple[float, float]], start: float) -> tuple[int, float]:
    """(underruns, gap seconds) of a player that starts at ``start`` and plays chunks as they arrive.

    ``arrivals``: (monotonic time the chunk was ready, its seconds of audio), in
    play order.  A chunk ready after the audio before it has played is an
    underrun; the silence until it came is its gap, and playback goes on from there.
    """
    underruns, gap = 0, 0.0
    end = start
    for n, (at, seconds) in enumerate(arrivals):
        if n and at > end:
            underruns += 1
            gap += at - end
        end = max(end, at) + seconds
    return underruns, gap


@dataclass
class _Device:
    """The daemon's sound card, with the time spent opening it counted (it closes when idle)."""

    opens: int = 0
    open_s: float = 0.0

    def __call__(self, device: Any, fmt: Any, block_frames: int) -> Any:
        from edgetts.daemon.playout.sound_card import OutputStream

        t0 = time.monotonic()
        stream = OutputStream(device, fmt, block_frames)
        self.open_s += time.monotonic() - t0
        self.opens += 1
        return stream


class EdgeSide:
    """edgetts as the daemon runs it by default: voice, text preparation, player on the sound card."""

    def __init__(self, threads: int, streaming: bool | None, parallel: str = "threads") -> None:
        from edgetts.audio.job import PlaybackJob
        from edgetts.audio.player import Player
        from edgetts.config import Config, VoiceModelSettings
        from edgetts.daemon.assets import load_configured_voice
        from edgetts.daemon.playout.phrase_cache import voice_synthesis_config
        from edgetts.daemon.playout.sound_card import player_settings

        self.config = Config()
        settings = replace(VoiceModelSettings(), threads=threads, parallel=parallel)
        if streaming is not None:  # edgetts_whole: the one key an operator would change
            settings = replace(settings, streaming=streaming)
        self.settings = settings
        self.text = self.config.text_options()
        self.voice = load_configured_voice(settings, self.text)
        self.synthesis = voice_synthesis_config(settings)
        self._job_class = PlaybackJob
        self._lead_fed = "lead_s" in inspect.signature(PlaybackJob.feed).parameters
        self.reports: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.device = _Device()
        self.player = Player(
            player_settings(self.config, self.voice.sample_rate), self.reports.put, stream_factory=self.device
        )
        self.player.probe()  # as the daemon does before READY=1
        self.player.start()

    def warm_up(self) -> None:
        """The daemon's load-time run (loudness on CALIBRATION_TEXT), here under the quota."""
        from edgetts.daemon.assets import measure_voice

        measure_voice(self.voice, self.synthesis)

    def speak(self, index: int, line: str) -> dict[str, Any]:
        """One announcement: synthesis fed to a job on the player; timings, CPU, underruns."""
        from edgetts.text.prepare import prepare_text

        opens_before, open_s_before = self.device.opens, self.device.open_s
        cpu0 = time.process_time()
        t0 = time.monotonic()
        prepared = prepare_text(line, self.text)
        job = self._job_class(_Token(f"line-{index}"), self.player.converter, 1.0)
        produced: dict[str, Any] = {}
        producer = threading.Thread(target=self._produce, args=(job, prepared, produced), name="bench-synth")
        producer.start()
        self.player.submit(job)
        started, finished, finished_mono = self._wait(job)
        producer.join(REPORT_TIMEOUT_S)
        if "error" in produced:
            raise RuntimeError(f"line {index}: synthesis failed: {produced['error']}")
        cpu = time.process_time() - cpu0
        arrivals = produced["arrivals"]
        sim = simulate(arrivals, started.at_mono)
        audio_s = sum(seconds for _, seconds in arrivals)
        return {
            "t0_mono": t0,
            "started_mono": started.at_mono,
            "finished_mono": finished_mono,
            "outcome": finished.kind,
            "first_audio_s": started.at_mono - t0,
            "first_chunk_s": arrivals[0][0] - t0,
            "earliest_start_s": earliest_start(arrivals) - t0,
            "synth_s": produced["done"] - t0,
            "audio_s": audio_s,
            "rtf": (produced["done"] - t0) / audio_s,
            "chunks": len(arrivals),
            "lead_s": produced["lead_s"],
            "underruns": getattr(finished, "underruns", None),
            "gap_ms": getattr(finished, "gap_ms", None),
            "sim_underruns": sim[0],
            "sim_gap_ms": sim[1] * 1000.0,
            "cpu_s": cpu,
            "synth_cpu_s": produced["cpu_s"],
            "device_opens": self.device.opens - opens_before,
            "device_open_s": self.device.open_s - open_s_before,
            "source_gap_ms": produced["gap_ms"],
            "source_gaps": produced["gaps"],
        }

    def _produce(self, job: Any, prepared: Any, out: dict[str, Any]) -> None:
        """The synthesis thread's part: every chunk fed as it comes (edgetts.daemon.playout.synthesis._synthesize)."""
        import numpy as np

        from tools.paced_sink import find_gaps

        cpu0 = time.thread_time()
        arrivals: list[tuple[float, float]] = []
        pieces = []
        lead = 0.0
        try:
            for chunk in self.voice.synthesize(prepared, self.synthesis):
                arrivals.append((time.monotonic(), chunk.duration_s))
                if not arrivals[1:]:
                    lead = chunk.lead_s
                extra = {"lead_s": chunk.lead_s} if self._lead_fed else {}
                job.feed(chunk.audio, chunk.sample_rate, (0, chunk.sentence_index), speech=True, **extra)
                pieces.append(chunk.to_int16())
        except Exception as exc:  # the job must end, or the player waits for it until the timeout
            out["error"] = f"{type(exc).__name__}: {exc}"
            job.fail(out["error"])
            return
        out["done"] = time.monotonic()
        job.end()
        out.update(arrivals=arrivals, lead_s=lead, cpu_s=time.thread_time() - cpu0)
        # Silences the voice itself made (pauses between sentences): not underruns in the recording.
        pcm = np.concatenate(pieces)
        gaps = find_gaps(pcm, self.voice.sample_rate)
        out.update(gap_ms=1000.0 * sum(length for _, length in gaps), gaps=len(gaps))

    def _wait(self, job: Any) -> tuple[Any, Any, float]:
        """The job's `started`, its end report (finished, stopped or failed) and when that came."""
        started = None
        deadline = time.monotonic() + REPORT_TIMEOUT_S
        while True:
            report = self.reports.get(timeout=max(0.1, deadline - time.monotonic()))
            if report.job is not job:
                continue
            if report.kind == "started":
                started = report
            elif report.kind in ("finished", "stopped", "failed"):
                if started is None:
                    raise RuntimeError(f"job ended {report.kind} ({report.reason}) without starting")
                return started, report, time.monotonic()

    def close(self) -> None:
        self.player.close()


@dataclass(frozen=True)
class _Token:
    id: str


class PiperSide:
    """piper-tts 1.8.0 on the same voice at the same threads (its own onnxruntime session)."""

    def __init__(self, threads: int) -> None:
        self._speak = _load_piper(threads, zero_noise=False)  # the voice's noise, as edgetts's default

    def warm_up(self) -> None:
        for _ in self._speak("Attention please: the next train will depart from platform two."):
            pass

    def speak(self, line: str) -> dict[str, Any]:
        cpu0 = time.process_time()
        t0 = time.monotonic()
        arrivals: list[tuple[float, float]] = []
        for n, rate, *_ in self._speak(line):  # (samples, rate[, when]): bench_engine's chunk figures
            arrivals.append((time.monotonic(), n / rate))
        done = time.monotonic()
        cpu = time.process_time() - cpu0
        underruns, gap = simulate(arrivals, arrivals[0][0])
        audio_s = sum(seconds for _, seconds in arrivals)
        return {
            "t0_mono": t0,
            "first_audio_s": arrivals[0][0] - t0,
            "synth_s": done - t0,
            "audio_s": audio_s,
            "rtf": (done - t0) / audio_s,
            "chunks": len(arrivals),
            "underruns": underruns,
            "gap_ms": gap * 1000.0,
            "cpu_s": cpu,
        }


def run(args: argparse.Namespace, say: Any) -> int:
    lines = json.loads(Path(args.lines_file).read_text())
    if args.seed is not None:
        import onnxruntime

        onnxruntime.set_seed(args.seed)
    piper = PiperSide(args.threads)
    edge = EdgeSide(args.threads, None, args.parallel)
    whole = EdgeSide(args.threads, False) if args.whole else None
    sides: list[tuple[str, Any]] = [("piper", piper), ("edgetts", edge)]
    if whole is not None:
        sides.append(("edgetts_whole", whole))
    if args.edgetts_first:
        sides.reverse()
    audio_tids = [side.player.thread.native_id for _, side in sides if isinstance(side, EdgeSide)]
    say(
        {
            "ready": os.getpid(),
            "audio_tids": audio_tids,
            "streaming": edge.settings.streaming,
            "fast_start_ids": edge.settings.fast_start_ids,
            "lead_s_fed": edge._lead_fed,
        }
    )
    if sys.stdin.readline().strip() != "go":
        return 1
    for _, side in sides:
        side.warm_up()
    out: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in sides}
    for index, line in enumerate(lines):
        for name, side in sides:
            out[name].append(side.speak(line) if name == "piper" else side.speak(index, line))
    for _, side in sides:
        if isinstance(side, EdgeSide):
            side.close()
    say(out)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines-file", required=True, help="JSON list of the lines to speak")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--parallel", choices=["threads", "windows"], default="threads", help="voice.parallel")
    parser.add_argument("--whole", action="store_true", help="also edgetts with voice.streaming false")
    parser.add_argument("--edgetts-first", action="store_true", help="edgetts before piper on each line")
    parser.add_argument("--seed", type=int)
    args = parser.parse_args()
    # Our JSON goes to the real stdout; anything a library prints goes to stderr, not into it.
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    def say(obj: Any) -> None:
        channel.write(json.dumps(obj) + "\n")
        channel.flush()

    return run(args, say)


if __name__ == "__main__":
    sys.exit(main())
