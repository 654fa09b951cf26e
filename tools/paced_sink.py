"""A sound card with a real clock, for tests and benchmarks: a private PulseAudio null sink.

The ALSA ``file`` plugin consumes PCM as fast as it is written, so nothing played through it
can underrun and no start time measured through it means anything (issue 14).  Here a private
``pulseaudio`` (no system mode, no autospawn, its own runtime directory) runs one null sink
``cap`` at ``rate`` Hz mono; ALSA clients are routed to it by an ``asound.conf`` with
``pcm.!default { type pulse }``, so PyAudio/PortAudio in a daemon or a test plays at the sink's
pace.  ``record()`` runs ``parec`` on ``cap.monitor`` to capture what reached the sink.
With ``zones`` (issue 19) several players share the sink's one clock, each on a channel, and a
recording maps its samples to Unix time (``Recording.unix_at``): when they reached the monitor,
which is when the server rendered them.  (PulseAudio's own latency, pa_simple_get_latency on a
playback stream, counts them played 2.5-5 ms later: the null sink renders that far ahead.)

Stdlib only at import (numpy is imported where samples are returned), so tools and tests
alike can use it.  How the tests use it: docs/testing.md.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from tools.pcm_gaps import find_gaps, onset_s  # (re-exported: tests and tools import them from here)

if TYPE_CHECKING:
    import numpy as np

ASOUND_CONF = """\
# Every ALSA client of this environment plays into the private PulseAudio's null sink.
pcm.!default { type pulse }
ctl.!default { type pulse }
"""

# parec's buffer: a small one so a recording's samples sit close to when they were played.
_PAREC_LATENCY_MS = 10
# The recording's time line: the earliest arrival of each window; what the start is left out.
_FIT_WINDOW_S = 0.25
_SKIP_START_S = 1.0


# The sink stands for a sound card, the recording for a microphone: no CPU load stops their
# clocks.  PulseAudio takes clients' audio in its main thread, and a recording's time line is when
# parec hands us each block; a test's own load (four daemons and a hog on two cores) could starve
# either, a fault of the rig, not of the player.  So they run SCHED_RR, as the sink's thread.
def _realtime_main_thread(pid: int) -> bool:
    """SCHED_RR 5 for ``pid``'s main thread (0: this thread) where allowed (root)."""
    try:
        os.sched_setscheduler(pid, os.SCHED_RR, os.sched_param(5))
    except OSError:
        return False
    return True


class PacedSinkError(RuntimeError):
    """pulseaudio or parec is missing or did not come up."""


def available() -> str | None:
    """None when pulseaudio, parec and the ALSA pulse plugin are installed; else what is missing."""
    missing = [tool for tool in ("pulseaudio", "parec", "pacat", "pactl") if shutil.which(tool) is None]
    plugin_dirs = [
        Path(p)
        for p in (
            "/usr/lib/x86_64-linux-gnu/alsa-lib",
            "/usr/lib/aarch64-linux-gnu/alsa-lib",
            "/usr/lib/arm-linux-gnueabihf/alsa-lib",
            "/usr/lib/alsa-lib",
        )
    ]
    if not any((d / "libasound_module_pcm_pulse.so").exists() for d in plugin_dirs):
        missing.append("libasound2-plugins (ALSA pulse plugin)")
    return ", ".join(missing) or None


class Recording:
    """``parec`` capturing the sink's monitor into a raw file until ``stop()``.

    A reader thread takes parec's output as it comes and notes when each piece arrived: a sample
    reaches the monitor when the server renders it, and reaches us some milliseconds later, never
    earlier.  So the earliest arrivals (for their index) lie on the line of when each sample was
    rendered (the moment a player's measured delay points at: see edgetts.audio.timeline), and
    :meth:`mono_at` / :meth:`unix_at` map a sample index to time on it.  A line, not just an
    offset: the null sink's clock runs ~230 ppm fast here (it advances by whole microseconds per
    ~4 ms chunk, rounded down), 0.23 ms a second.  The first second is left out of the fit: parec
    is handed ~20 ms of audio at once when it connects.
    """

    def __init__(self, sink: PacedSink, path: Path, wait: bool = True, latency_ms: int | None = None) -> None:
        self._path = path
        self._rate = sink.rate
        self.channels = max(1, sink.zones)
        self._frame_bytes = 2 * self.channels
        self._out = path.open("wb")
        layout = [f"--channels={self.channels}"]
        if sink.zones:
            layout.append("--channel-map=" + ",".join(f"aux{k}" for k in range(sink.zones)))
        self._proc = subprocess.Popen(
            [
                "parec",
                "-d",
                "cap.monitor",
                f"--rate={sink.rate}",
                *layout,
                "--format=s16le",
                "--raw",
                f"--latency-msec={latency_ms or _PAREC_LATENCY_MS}",
                "--volume=65536",
            ],  # (unity gain)
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **sink.env},
        )
        _realtime_main_thread(self._proc.pid)
        self._unix_minus_mono = time.time() - time.monotonic()  # (to some microseconds)
        self._received = 0
        self._epoch: float | None = None
        self._lows: list[tuple[float, int]] = []
        """The earliest (arrival - index / rate) of each _FIT_WINDOW_S: (arrival, index)."""
        self._fit: tuple[float, float] | None = None
        self._first = threading.Event()
        self._reader = threading.Thread(target=self._read, name="paced-sink-recording", daemon=True)
        self._reader.start()
        self._started_mono = time.monotonic()
        self._samples: np.ndarray | None = None
        if wait:
            self._first.wait(5.0)
            if self._epoch is not None:
                self._started_mono = self._epoch

    def _read(self) -> None:
        assert self._proc.stdout is not None
        _realtime_main_thread(0)  # (the arrival times are this thread's)
        fd = self._proc.stdout.fileno()
        while True:
            data = os.read(fd, 1 << 16)
            now = time.monotonic()
            if not data:
                return
            self._out.write(data)
            self._received += len(data)
            index = self._received // self._frame_bytes
            epoch = now - index / self._rate
            if self._epoch is None or epoch < self._epoch:
                self._epoch = epoch
            if not self._lows or now - self._lows[0][0] >= _FIT_WINDOW_S * len(self._lows):
                self._lows.append((now, index))
            elif epoch < self._lows[-1][0] - self._lows[-1][1] / self._rate:
                self._lows[-1] = (now, index)
            self._first.set()

    @property
    def started_mono(self) -> float:
        """time.monotonic() of the recording's first sample: once stopped, from the fitted line;
        before, from the earliest arrival so far (or when parec started, before any came)."""
        return self._fit[0] if self._fit is not None else self._started_mono

    @property
    def bytes_received(self) -> int:
        return self._received

    def mono_at(self, index: float) -> float:
        """time.monotonic() when sample ``index`` of the recording reached the sink's monitor
        (the fit is made once the recording has stopped; before, the earliest arrival so far)."""
        if self._fit is not None:
            return self._fit[0] + index * self._fit[1]
        if self._epoch is None:
            raise PacedSinkError("the recording has no samples yet")
        return self._epoch + index / self._rate

    def _fit_line(self) -> tuple[float, float] | None:
        """(time of sample 0, seconds per sample) through the windows' earliest arrivals."""
        import numpy as np

        lows = self._lows
        if lows and lows[-1][0] - lows[0][0] > 2 * _SKIP_START_S:
            lows = [p for p in lows if p[0] - lows[0][0] >= _SKIP_START_S]
        if len(lows) < 3:
            return None
        t = np.array([p[0] for p in lows])
        i = np.array([p[1] for p in lows], dtype=np.float64)
        slope, start = np.polyfit(i, t, 1)
        # (a window whose every read came late lies above the line: drop those, fit again)
        keep = t - (start + slope * i) <= 0.001
        if keep.sum() >= 3:
            slope, start = np.polyfit(i[keep], t[keep], 1)
        return float(start), float(slope)

    def unix_at(self, index: float) -> float:
        """Unix time when sample ``index`` of the recording reached the sink's monitor."""
        return self.mono_at(index) + self._unix_minus_mono

    def index_at_unix(self, at_unix: float) -> float:
        """The (fractional) sample index that reached the monitor at Unix time ``at_unix``."""
        return (at_unix - self.unix_at(0)) * self._rate

    def stop(self) -> np.ndarray:
        """End parec; the int16 samples recorded (the same array on a second call): 1-D for a
        single sink, (samples, zones) for a sink with zones."""
        import numpy as np

        if self._samples is None:
            if self._proc.poll() is None:
                self._proc.send_signal(signal.SIGINT)  # parec flushes what it holds on SIGINT
                try:
                    self._proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait(timeout=5)
            self._reader.join(5)
            self._fit = self._fit_line()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._out.close()
            data = self._path.read_bytes()
            pcm = np.frombuffer(data[: len(data) // self._frame_bytes * self._frame_bytes], dtype="<i2").copy()
            self._samples = pcm.reshape(-1, self.channels) if self.channels > 1 else pcm
        return self._samples

    def __enter__(self) -> Recording:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class PacedSink:
    """A private pulseaudio with one null sink ``cap``; ``env`` routes ALSA clients to it.

    ``zones`` = N > 0: ``cap`` has N channels (aux0...) and each zone is a mono
    ``module-remap-sink`` ``zoneK`` on channel K, so N players (:meth:`zone_env`) play in one clock
    domain and one recording (``record()``, shape (samples, N)) holds them all, sample-aligned.
    """

    def __init__(self, directory: Path, rate: int = 22050, zones: int = 0) -> None:
        self.directory = Path(directory)
        self.rate = rate
        self.zones = zones
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

    def zone_env(self, k: int) -> dict[str, str]:
        """The environment of a player process that plays into zone ``k`` (ALSA's default device)."""
        if not 0 <= k < self.zones:
            raise ValueError(f"zone {k} of {self.zones}")
        return {**self.env, "PULSE_SINK": f"zone{k}"}

    def _default_pa(self) -> str:
        d = self.directory
        lines = []
        if self.zones:
            aux = ",".join(f"aux{k}" for k in range(self.zones))
            lines.append(
                f"load-module module-null-sink sink_name=cap rate={self.rate} channels={self.zones} channel_map={aux}"
            )
            lines += [
                f"load-module module-remap-sink sink_name=zone{k} master=cap channels=1 "
                f"master_channel_map=aux{k} channel_map=mono remix=no"
                for k in range(self.zones)
            ]
        else:
            lines.append(f"load-module module-null-sink sink_name=cap rate={self.rate} channels=1")
        lines += [
            "set-default-sink cap",
            f"load-module module-native-protocol-unix auth-anonymous=1 socket={d / 'native'}",
        ]
        return "\n".join(lines) + "\n"

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
        (d / "default.pa").write_text(self._default_pa())
        log = (d / "pulseaudio.log").open("wb")
        env = {**os.environ, **self.env, "HOME": str(d), "XDG_CONFIG_HOME": str(d / "state")}
        self._proc = subprocess.Popen(
            [
                "pulseaudio",
                "-n",
                "-F",
                str(d / "default.pa"),
                "--exit-idle-time=-1",
                "--daemonize=no",
                "--use-pid-file=no",
                "--disallow-exit",
                "--log-target=stderr",
            ],
            stdout=log,
            stderr=log,
            env=env,
            start_new_session=True,
        )
        log.close()
        try:
            self._wait_ready(timeout=15.0)
            _realtime_main_thread(self._proc.pid)
            # An idle null sink renders nothing, so its monitor would record nothing between two
            # streams and a recording would not keep the sink's clock: a stream of zeros keeps
            # it running (mixed in, it changes no sample).
            self._keeper = subprocess.Popen(
                [
                    "pacat",
                    "--playback",
                    "-d",
                    "cap",
                    f"--rate={self.rate}",
                    "--channels=1",
                    "--format=s16le",
                    "--raw",
                    "--latency-msec=20",
                    "/dev/zero",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**os.environ, **self.env},
            )
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
                done = subprocess.run(
                    ["pactl", "list", "short", "sinks"], env=env, capture_output=True, text=True, timeout=5
                )
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
                if rec.bytes_received > 0:
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

    def record(self, latency_ms: int | None = None) -> Recording:
        """Start capturing what reaches the sink (s16le at ``rate``, one channel a zone); parec's
        buffer ``latency_ms`` (10 ms by default)."""
        if self._proc is None or self._proc.poll() is not None:
            raise PacedSinkError("the paced sink is not running")
        self._recordings += 1
        return Recording(self, self.directory / f"recording-{self._recordings:03d}.raw", latency_ms=latency_ms)

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

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


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
        print(
            f"aplay of 1.00 s took {wall:.2f} s; recorded {len(pcm) / sink.rate:.2f} s, "
            f"onset {onset_s(pcm, sink.rate)}, gaps {find_gaps(pcm, sink.rate)}"
        )


if __name__ == "__main__":
    main()
