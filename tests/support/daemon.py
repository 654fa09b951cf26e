"""The daemon under test: config files for the test broker, the in-process rig, the subprocess runner."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from support.alsa import Capture
from support.broker import Broker
from support.fakes import FakeVoice
from support.paths import ROOT
from support.pcm import clip_pcm, write_clip
from support.probe import Probe


def config_yaml(
    broker: Broker,
    device: str,
    *,
    extra: str = "",
    mqtt_extra: str = "",
    audio_extra: str = "",
    voice_extra: str = "",
    queue_extra: str = "",
    device_extra: str = "",
    port: int | None = None,
    keepalive_s: float = 0,
    streaming: bool = False,
) -> str:
    """A daemon config for the test broker (deterministic voice, long idle close).

    Whole sentences unless ``streaming``: their samples are what a reference voice in the test
    gives bit for bit, where a streamed voice's windows follow the machine's measured speed
    (issue 14), so their seams move with a busy CI machine."""
    ind = lambda s: "".join(f"  {line}\n" for line in s.splitlines() if line.strip())  # noqa: E731
    return (
        f"device:\n  id: {device}\n{ind(device_extra)}"
        f"mqtt:\n  host: 127.0.0.1\n  port: {port or broker.port}\n  topic_prefix: test\n"
        f"  reconnect_min_s: 0.2\n  reconnect_max_s: 1\n{ind(mqtt_extra)}"
        f"audio:\n  close_idle_s: 600\n{ind(audio_extra)}"
        f"voice:\n  noise_scale: 0\n  noise_w: 0\n  threads: 1\n  streaming: {str(streaming).lower()}\n"
        f"{ind(voice_extra)}"
        f"queue:\n  dedup_window_s: 600\n{ind(queue_extra)}"
        # keepalive off unless a test sets it: its inference would show in FakeVoice.calls
        f"keepalive:\n  interval_s: {keepalive_s}\n"
        f"logging:\n  level: debug\n{extra}"
    )


class DaemonRig:
    """The daemon on a thread of the test process, its config file, and a probe on its topics.

    ``voices``: model name -> fake voice (edgetts.daemon.loop.DaemonOptions'
    loader seam), or None for the real loader (edgetts.voice.catalog), whose
    voices record what they are asked to say in :attr:`said`; ``loader``: a loader of the
    test's own instead; ``int8_command``: DaemonOptions.int8_command.
    """

    def __init__(
        self,
        config: Path,
        broker: Broker,
        capture: Capture,
        voices: dict[str, Any] | None,
        *,
        notifier: Any = None,
        stream_factory: Any = None,
        services: Any = None,
        loader: Any = None,
        int8_command: Any = None,
    ) -> None:
        from edgetts.config import load_config
        from edgetts.daemon.loop import Daemon, DaemonOptions

        self.config, self.capture = config, capture
        self.voice: Any = (voices or {}).get("default")
        """The fake default voice (None with the real loader)."""
        self.loads: list[tuple[str, Any]] = []
        """(model, text options) of every voice load, in order."""
        self.said: list[str] = []
        """Every text a real voice was asked to speak (calibration included), in order."""
        if loader is None:
            loader = _real_loader(self.loads, self.said) if voices is None else _fake_loader(voices, self.loads)
        options = DaemonOptions(
            voice_loader=loader, install_signals=False, notifier=notifier, int8_command=int8_command
        )
        if stream_factory is not None:
            options.stream_factory = stream_factory
        if services is not None:  # (config -> list of edgetts.daemon.inbound.services.Service)
            options.services = services
        settings = load_config(config)
        self.probe = Probe(broker, settings.mqtt.topic_prefix, settings.device.id)
        self.daemon = Daemon(settings, config, options)
        self.rc: int | None = None
        self._closed = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.status: dict[str, Any] | None = None
        """The first `online` status (None until :meth:`wait_online`)."""

    def wait_online(self, timeout: float) -> dict[str, Any]:
        self.status = self.probe.wait_status(lambda s: s["state"] == "online", timeout)
        return self.status

    def _run(self) -> None:
        self.rc = self.daemon.run()

    def expected(self, text: str) -> np.ndarray:
        """The int16 the device gets for ``text`` in the fake default voice (gain 1)."""
        parts = [self.voice.sentence_audio(i, s) for i, s in enumerate(self.voice.sentences(text))]
        return np.clip(np.concatenate(parts) * 32767.0, -32767, 32767).astype(np.int16)

    def clip(self, name: str) -> np.ndarray:
        """The int16 the device gets for the library clip ``name``."""
        clip = self.daemon.clips.get(name)
        assert clip is not None
        return clip_pcm(clip)

    def say(self, ident: str, text: str, timeout: float = 20.0) -> dict[str, Any]:
        """Announce ``text`` and wait until it finished; its `started` event."""
        self.probe.publish({"id": ident, "text": text})
        self.probe.wait_event(ident, "finished", timeout)
        return self.probe.wait_event(ident, "started")

    def stop(self) -> int | None:
        """Stop the daemon (as SIGTERM does); its exit status."""
        self.daemon.on_signal(signal.SIGTERM)
        self.thread.join(10)
        return self.rc

    def close(self) -> None:
        """Stop the daemon if it runs, and the probe (once: a test may close a rig early)."""
        if self.thread.is_alive():
            self.stop()
        if not self._closed:
            self._closed = True
            self.probe.close()


def _fake_loader(voices: dict[str, Any], loads: list[tuple[str, Any]]) -> Callable[[Any, Any, Any], Any]:
    def loader(settings: Any, text: Any, runtime: Any) -> Any:
        key = settings.model
        loads.append((key, text))
        if key not in voices:
            from edgetts.errors import VoiceError

            raise VoiceError(f"no fake voice {key!r}")
        return voices[key]

    return loader


def _real_loader(loads: list[tuple[str, Any]], said: list[str]) -> Callable[[Any, Any, Any], Any]:
    from edgetts.daemon.assets import load_configured_voice

    def loader(settings: Any, text: Any, runtime: Any) -> Any:
        loads.append((settings.model, text))
        voice = load_configured_voice(settings, text, runtime)
        speak = voice.synthesize

        def synthesize(text: Any, config: Any = None) -> Any:
            said.append(getattr(text, "source", text))  # a Prepared text (the daemon's) by its source
            return speak(text, config)

        # On the instance: the voice's type, and so its phrase-cache hash, stay as they are.
        voice.synthesize = synthesize
        return voice

    return loader


def _device(request: pytest.FixtureRequest, n: int) -> str:
    """A device id of its own for each rig of each test (retained status topics do not mix)."""
    digest = hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:6]
    name = "".join(c if c.isalnum() or c in "-_" else "-" for c in request.node.name.removeprefix("test_"))
    return f"{name[:40]}-{digest}-{n}"


@pytest.fixture()
def daemon_rig(
    mosquitto: Broker, alsa_capture: Capture, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., DaemonRig]]:
    """Makes :class:`DaemonRig`s against the test broker and the ALSA capture; all closed in teardown.

    ``make(voice=None, *, real_voices=False, config=None, device=None, clips=None,
    notifier=None, stream_factory=None, services=None, loader=None, int8_command=None, online_timeout=15.0,
    **config_yaml_args)``: the fake
    default voice (model `default`) is ``voice`` (a new FakeVoice when None), beside a 16 kHz
    fake for model `alt`; ``real_voices`` uses the real loader instead.
    ``config``: a config file to run as it is; else one is written from ``config_yaml`` with
    ``device`` (default: one of its own) and ``clips`` (name -> audio) written into a clip
    folder named by `clips.dir`.
    """
    rigs: list[DaemonRig] = []

    def make(
        voice: Any = None,
        *,
        real_voices: bool = False,
        config: Path | None = None,
        device: str | None = None,
        clips: dict[str, np.ndarray] | None = None,
        notifier: Any = None,
        stream_factory: Any = None,
        services: Any = None,
        loader: Any = None,
        int8_command: Any = None,
        online_timeout: float | None = 15.0,
        **cfg: Any,
    ) -> DaemonRig:
        if config is None:
            device = device or _device(request, len(rigs))
            if clips is not None:
                folder = tmp_path / f"clips-{device}"
                folder.mkdir()
                for name, audio in clips.items():
                    write_clip(folder / f"{name}.wav", audio)
                cfg["extra"] = f"clips:\n  dir: {folder}\n{cfg.get('extra', '')}"
            config = tmp_path / f"{device}.yaml"
            config.write_text(config_yaml(mosquitto, device, **cfg))
        fakes = (
            None
            if real_voices
            else {"default": FakeVoice() if voice is None else voice, "alt": FakeVoice("alt", 16000)}
        )
        rig = DaemonRig(
            config,
            mosquitto,
            alsa_capture,
            fakes,
            notifier=notifier,
            stream_factory=stream_factory,
            services=services,
            loader=loader,
            int8_command=int8_command,
        )
        rigs.append(rig)
        if online_timeout is not None:
            rig.wait_online(online_timeout)
        return rig

    yield make
    for rig in rigs:
        rig.close()


@dataclass
class DaemonProcess:
    """`python -m edgetts.cli.daemon run --config X` (= `edgetts run`) as a subprocess (the real voice)."""

    config: Path
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = field(default=None)
    prefix: list[str] = field(default_factory=list)
    """Runs the daemon through this command (e.g. ``ip netns exec NAME``, support.netns)."""

    def start(self) -> DaemonProcess:
        # PYTHONFAULTHANDLER: a daemon that does not end in time is sent SIGABRT by wait(),
        # and its log then shows where every thread stood.
        env = {
            **os.environ,
            "ORT_DISABLE_TELEMETRY": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONFAULTHANDLER": "1",
            **self.env,
        }
        env.pop("JOURNAL_STREAM", None)
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen(
                [*self.prefix, sys.executable, "-m", "edgetts.cli", "run", "--config", str(self.config)],
                cwd=ROOT,
                env=env,
                stdout=logf,
                stderr=subprocess.STDOUT,
            )
        return self

    def signal(self, signum: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)

    def wait(self, timeout: float) -> int:
        """The exit status; a process still running after ``timeout`` fails with its threads' stacks."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)  # faulthandler dumps every thread's traceback
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            raise AssertionError(f"daemon still running {timeout:g} s later; its log ends:\n{self.log_end()}") from None

    def assert_clean_exit(self, timeout: float = 15.0) -> None:
        """The daemon ends with status 0 within ``timeout``; otherwise fail with its log's end."""
        code = self.wait(timeout)
        assert code == 0, f"exit status {code}; its log ends:\n{self.log_end()}"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def log_end(self, lines: int = 120) -> str:
        """The last ``lines`` lines of the log (for a failure's message)."""
        return "\n".join(self.output().splitlines()[-lines:])


@pytest.fixture()
def daemon_processes() -> Iterator[list[DaemonProcess]]:
    """Register subprocesses here; each is SIGKILLed in teardown if still alive."""
    procs: list[DaemonProcess] = []
    yield procs
    for p in procs:
        p.kill()
