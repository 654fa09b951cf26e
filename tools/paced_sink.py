"""A sound card with a real clock, for tests and benchmarks: a private PulseAudio null sink.

The ALSA ``file`` plugin consumes PCM as fast as it is written, so nothing played through it
can underrun and no start time measured through it means anything (issue 14).  Here a private
``pulseaudio`` (no system mode, no autospawn, its own runtime directory) runs one null sink
``cap`` at ``rate`` Hz mono; ALSA clients are routed to it by an ``asound.conf`` with
``pcm.!default { type pulse }``, so PyAudio/PortAudio in a daemon or a test plays at the sink's
pace.  ``record()`` runs ``parec`` on ``cap.monitor`` to capture what reached the sink.

Stdlib only at import (numpy is imported where samples are returned), so tools and tests
alike can use it.  Recipe: shared notes, system-recipe section 8.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

ASOUND_CONF = """\
# Every ALSA client of this environment plays into the private PulseAudio's null sink.
pcm.!default { type pulse }
ctl.!default { type pulse }
"""

# parec's buffer: a small one so a recording's samples sit close to when they were played.
_PAREC_LATENCY_MS = 10


class PacedSinkError(RuntimeError):
    """pulseaudio or parec is missing or did not come up."""


def available() -> str | None:
    """None when pulseaudio, parec and the ALSA pulse plugin are installed; else what is missing."""
    missing = [tool for tool in ("pulseaudio", "parec", "pacat", "pactl") if shutil.which(tool) is None]
    plugin_dirs = [Path(p) for p in ("/usr/lib/x86_64-linux-gnu/alsa-lib", "/usr/lib/aarch64-linux-gnu/alsa-lib",
                                     "/usr/lib/arm-linux-gnueabihf/alsa-lib", "/usr/lib/alsa-lib")]
    if not any((d / "libasound_module_pcm_pulse.so").exists() for d in plugin_dirs):
        missing.append("libasound2-plugins (ALSA pulse plugin)")
    return ", ".join(missing) or None


class Recording:
    """``parec`` capturing ``cap.monitor`` into a raw file until ``stop()``."""

    def __init__(self, sink: PacedSink, path: Path, wait: bool = True) -> None:
        self._path = path
        self._out = path.open("wb")
        self._proc = subprocess.Popen(
            ["parec", "-d", "cap.monitor", f"--rate={sink.rate}", "--channels=1", "--format=s16le",
             "--raw", f"--latency-msec={_PAREC_LATENCY_MS}", "--volume=65536"],  # (unity gain)
            stdout=self._out, stderr=subprocess.DEVNULL, env={**os.environ, **sink.env})
        self.started_mono: float = time.monotonic()
        """time.monotonic() when parec started; once its first samples are in (``wait``), refined
        to the time of the recording's first sample (parec connects some ms after it starts)."""
        self._samples: np.ndarray | None = None
        if wait:
            self._wait_first_samples(sink.rate)

    def _wait_first_samples(self, rate: int, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._proc.poll() is None:
            size = self._path.stat().st_size
            if size > 0:
                self.started_mono = time.monotonic() - size / 2 / rate
                return
            time.sleep(0.002)

    def stop(self) -> np.ndarray:
        """End parec; the int16 samples recorded (the same array on a second call)."""
        import numpy as np

        if self._samples is None:
            if self._proc.poll() is None:
                self._proc.send_signal(signal.SIGINT)  # parec flushes what it holds on SIGINT
                try:
                    self._proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait(timeout=5)
            self._out.close()
            data = self._path.read_bytes()
            self._samples = np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2").copy()
        return self._samples

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class PacedSink:
    """A private pulseaudio with one null sink ``cap``; ``env`` routes ALSA clients to it."""

    def __init__(self, directory: Path, rate: int = 22050) -> None:
        self.directory = Path(directory)
        self.rate = rate
        self._proc: subprocess.Popen[bytes] | None = None
        self._keeper: subprocess.Popen[bytes] | None = None
        self._recordings = 0
        socket = self.directory / "native"
        self.env: dict[str, str] = {
            "ALSA_CONFIG_PATH": str(self.directory / "asound.conf"),
            "PULSE_SERVER": f"unix:{socket}",
            "PULSE_RUNTIME_PATH": str(self.directory / "run"),
            "PULSE_STATE_PATH": str(self.directory / "state"),
            # A client that cannot reach this server must fail, not spawn a server of its own.
            "PULSE_CLIENTCONFIG": str(self.directory / "client.conf"),
        }

    def start(self) -> None:
        missing = available()
        if missing:
            raise PacedSinkError(f"paced sink needs: {missing}")
        d = self.directory
        for sub in ("run", "state"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        (d / "native").unlink(missing_ok=True)
        (d / "asound.conf").write_text(ASOUND_CONF)
        (d / "client.conf").write_text("autospawn = no\n")
        (d / "default.pa").write_text(
            f"load-module module-null-sink sink_name=cap rate={self.rate} channels=1\n"
            "set-default-sink cap\n"
            f"load-module module-native-protocol-unix auth-anonymous=1 socket={d / 'native'}\n")
        log = (d / "pulseaudio.log").open("wb")
        env = {**os.environ, **self.env, "HOME": str(d), "XDG_CONFIG_HOME": str(d / "state")}
        self._proc = subprocess.Popen(
            ["pulseaudio", "-n", "-F", str(d / "default.pa"), "--exit-idle-time=-1", "--daemonize=no",
             "--use-pid-file=no", "--disallow-exit", "--log-target=stderr"],
            stdout=log, stderr=log, env=env, start_new_session=True)
        log.close()
        try:
            self._wait_ready(timeout=15.0)
            # An idle null sink renders nothing, so its monitor would record nothing between two
            # streams and a recording would not keep the sink's clock: a stream of zeros keeps
            # it running (mixed in, it changes no sample).
            self._keeper = subprocess.Popen(
                ["pacat", "--playback", "-d", "cap", f"--rate={self.rate}", "--channels=1", "--format=s16le",
                 "--raw", "--latency-msec=20", "/dev/zero"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **self.env})
            self._wait_running(timeout=10.0)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        env = {**os.environ, **self.env}
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise PacedSinkError(f"pulseaudio exited: {self._log_tail()}")
            if (self.directory / "native").exists():
                done = subprocess.run(["pactl", "list", "short", "sinks"], env=env, capture_output=True,
                                      text=True, timeout=5)
                if done.returncode == 0 and "cap" in done.stdout:
                    return
            time.sleep(0.05)
        raise PacedSinkError(f"pulseaudio did not come up in {timeout:.0f} s: {self._log_tail()}")

    def _wait_running(self, timeout: float) -> None:
        """Until the monitor delivers samples: for its first ~1.5 s here it gave a recorder none."""
        deadline = time.monotonic() + timeout
        probe = self.directory / "probe.raw"
        rec = Recording(self, probe, wait=False)
        try:
            while time.monotonic() < deadline:
                if probe.stat().st_size > 0:
                    return
                time.sleep(0.02)
        finally:
            rec.stop()
            probe.unlink(missing_ok=True)
        raise PacedSinkError(f"the null sink's monitor delivered nothing in {timeout:.0f} s")

    def _log_tail(self) -> str:
        try:
            return (self.directory / "pulseaudio.log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def record(self) -> Recording:
        """Start capturing what reaches the sink (s16le mono at ``rate``)."""
        if self._proc is None or self._proc.poll() is not None:
            raise PacedSinkError("the paced sink is not running")
        self._recordings += 1
        return Recording(self, self.directory / f"recording-{self._recordings:03d}.raw")

    def stop(self) -> None:
        """End the keeper stream and pulseaudio (parec recordings end when their server does)."""
        keeper, self._keeper = self._keeper, None
        proc, self._proc = self._proc, None
        for p in (keeper, proc):
            if p is None or p.poll() is not None:
                continue
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)

    def __enter__(self) -> PacedSink:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def find_gaps(pcm: np.ndarray, rate: int, min_gap_ms: float = 20.0, threshold: int = 1) -> list[tuple[float, float]]:
    """(start_s, length_s) of runs of ``|x| <= threshold`` lasting ``min_gap_ms`` or more.

    Only inside the non-silent span (first to last sample above ``threshold``): the silence a
    recording has before the first sound and after the last is no gap.
    """
    import numpy as np

    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > threshold)
    if loud.size < 2:
        return []
    # Gaps are the jumps between consecutive loud samples.
    steps = np.diff(loud)
    min_len = min_gap_ms / 1000.0 * rate
    gaps: list[tuple[float, float]] = []
    for i in np.flatnonzero(steps - 1 >= min_len):
        start = int(loud[i]) + 1
        gaps.append((start / rate, (int(steps[i]) - 1) / rate))
    return gaps


def onset_s(pcm: np.ndarray, rate: int, threshold: int = 1) -> float | None:
    """Seconds into ``pcm`` of its first sample above ``threshold``; None when all is silent."""
    import numpy as np

    loud = np.flatnonzero(np.abs(pcm.astype(np.int32)) > threshold)
    return float(loud[0]) / rate if loud.size else None


def main() -> None:
    """Self-check: play 1 s of tone with aplay through the sink, report wall time and gaps."""
    import tempfile
    import wave

    import numpy as np

    with tempfile.TemporaryDirectory(prefix="paced-sink-") as tmp, PacedSink(Path(tmp)) as sink:
        t = np.arange(sink.rate) / sink.rate
        tone = (0.3 * 32767 * np.sin(2 * np.pi * 440 * t)).astype("<i2")
        wav = Path(tmp) / "tone.wav"
        with wave.open(str(wav), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(sink.rate)
            w.writeframes(tone.tobytes())
        with sink.record() as rec:
            t0 = time.monotonic()
            subprocess.run(["aplay", "-q", str(wav)], env={**os.environ, **sink.env}, check=True, timeout=30)
            wall = time.monotonic() - t0
            time.sleep(0.3)
            pcm = rec.stop()
        print(f"aplay of 1.00 s took {wall:.2f} s; recorded {len(pcm) / sink.rate:.2f} s, "
              f"onset {onset_s(pcm, sink.rate)}, gaps {find_gaps(pcm, sink.rate)}")


if __name__ == "__main__":
    main()
