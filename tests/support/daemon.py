"""The daemon under test: config files for the test broker, in-process and subprocess runners."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support.broker import Broker
from support.paths import ROOT


def config_yaml(broker: Broker, device: str, *, extra: str = "", mqtt_extra: str = "",
                audio_extra: str = "", voice_extra: str = "", queue_extra: str = "",
                device_extra: str = "", port: int | None = None, keepalive_s: float = 0) -> str:
    """A daemon config for the test broker (deterministic voice, long idle close)."""
    ind = lambda s: "".join(f"  {line}\n" for line in s.splitlines() if line.strip())  # noqa: E731
    return (
        f"device:\n  id: {device}\n{ind(device_extra)}"
        f"mqtt:\n  host: 127.0.0.1\n  port: {port or broker.port}\n  topic_prefix: test\n"
        f"  reconnect_min_s: 0.2\n  reconnect_max_s: 1\n{ind(mqtt_extra)}"
        f"audio:\n  close_idle_s: 600\n{ind(audio_extra)}"
        f"voice:\n  noise_scale: 0\n  noise_w: 0\n  threads: 1\n{ind(voice_extra)}"
        f"queue:\n  dedup_window_s: 600\n{ind(queue_extra)}"
        # keepalive off unless a test sets it: its inference would show in FakeVoice.calls
        f"keepalive:\n  interval_s: {keepalive_s}\n"
        f"logging:\n  level: debug\n{extra}"
    )


class InProcessDaemon:
    """The daemon on a thread of the test process, with fakes injected."""

    def __init__(self, config_path: Path, voices: dict[str, Any] | None, notifier: Any = None,
                 stream_factory: Any = None) -> None:
        """``voices``: model name -> fake voice; None = the real loader (edgetts.voice.catalog)."""
        from edgetts.config import load_config
        from edgetts.daemon.loop import Daemon, DaemonOptions, load_configured_voice

        extra: dict[str, Any] = {} if stream_factory is None else {"stream_factory": stream_factory}
        self.loads: list[tuple[str, Any]] = []
        """(model, text options) of every voice load, in order."""
        if voices is None:
            extra["voice_loader"] = load_configured_voice
        else:
            extra["voice_loader"] = self._fake_loader(voices, self.loads)
        self.daemon = Daemon(load_config(config_path), config_path,
                             DaemonOptions(install_signals=False, notifier=notifier, **extra))
        self.rc: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @staticmethod
    def _fake_loader(voices: dict[str, Any], loads: list[tuple[str, Any]]) -> Callable[[Any, Any, Any], Any]:
        def loader(settings: Any, text: Any, runtime: Any) -> Any:
            key = settings.model
            loads.append((key, text))
            if key not in voices:
                from edgetts.errors import VoiceError

                raise VoiceError(f"no fake voice {key!r}")
            return voices[key]

        return loader

    def _run(self) -> None:
        self.rc = self.daemon.run()

    def stop(self) -> int | None:
        self.daemon.request_stop()
        self.thread.join(10)
        return self.rc


@dataclass
class DaemonProcess:
    """`python -m edgetts.cli.daemon run --config X` (= `edgetts run`) as a subprocess (the real voice)."""

    config: Path
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = field(default=None)

    def start(self) -> DaemonProcess:
        env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1", "PYTHONUNBUFFERED": "1", **self.env}
        env.pop("JOURNAL_STREAM", None)
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "edgetts.cli", "run", "--config", str(self.config)],
                cwd=ROOT, env=env, stdout=logf, stderr=subprocess.STDOUT,
            )
        return self

    def signal(self, signum: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture()
def daemon_processes() -> Iterator[list[DaemonProcess]]:
    """Register subprocesses here; each is SIGKILLed in teardown if still alive."""
    procs: list[DaemonProcess] = []
    yield procs
    for p in procs:
        p.kill()
