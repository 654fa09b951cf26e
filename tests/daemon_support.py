"""Real pieces for the daemon tests: mosquitto on 127.0.0.1, the ALSA capture
plugin, an sd_notify socket, an MQTT probe client, a fake voice, and helpers to
run the daemon in-process (fakes injected) or as a subprocess (the real voice).

Test modules import what they use explicitly:
``from daemon_support import mosquitto, alsa_capture, ...`` (tests/ is on sys.path).
Everything started here is killed in teardown; nothing talks beyond 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgetts.engine import AudioChunk, SynthesisConfig
from edgetts.errors import UnspeakableTextError

ROOT = Path(__file__).resolve().parents[1]

ASOUND_CONF = """\
# Captures every frame PyAudio writes (raw, the stream's format) into
# $ALSA_CAPTURE_FILE, then drops it ('null' is not paced).  truncate false: each
# open of the device writes the next file (capture.raw, capture.raw.0001, ...).
pcm.!default {
    type file
    slave.pcm "null"
    file {
        @func getenv
        vars [ ALSA_CAPTURE_FILE ]
        default "/tmp/edgetts-capture.raw"
    }
    format "raw"
    truncate false
    perm 0644
}
pcm.null {
    type null
}
"""


# ------------------------------------------------------------------ broker


@dataclass(frozen=True)
class Broker:
    host: str
    port: int
    port_auth: int
    port_tls: int
    port_mtls: int
    user: str
    password: str
    ca: Path
    client_cert: Path
    client_key: Path
    dir: Path


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _openssl(cwd: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def _make_certs(d: Path) -> None:
    _openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-keyout", "ca.key",
             "-out", "ca.crt", "-subj", "/CN=edgetts-test-ca")
    (d / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for who in ("server", "client"):
        cn = "localhost" if who == "server" else "edge-client"
        _openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{who}.key", "-out",
                 f"{who}.csr", "-subj", f"/CN={cn}")
        _openssl(d, "x509", "-req", "-in", f"{who}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "30", "-out", f"{who}.crt", "-extfile", f"{who}.ext")


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mosquitto exited: {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"mosquitto did not listen on {port}: {log.read_text()[-2000:]}")


@pytest.fixture(scope="session")
def mosquitto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """mosquitto on free 127.0.0.1 ports: anonymous, password, TLS+password, mutual TLS."""
    d = tmp_path_factory.mktemp("mosquitto")
    (d / "data").mkdir()
    _make_certs(d)
    user, password = "edge", "edge-test-pw"
    subprocess.run(["mosquitto_passwd", "-c", "-b", str(d / "passwd"), user, password], check=True,
                   capture_output=True, timeout=10)
    p_anon, p_auth, p_tls, p_mtls = _free_ports(4)
    (d / "mosquitto.conf").write_text(f"""\
per_listener_settings true
# started as root, mosquitto would drop to user 'mosquitto' and then could not
# read the 0600 keys or write persistence here (system recipe, gotcha 1)
user root
persistence true
persistence_location {d}/data/
autosave_interval 1
log_dest stderr
log_type error
log_type warning
log_type notice
max_inflight_messages 100
# no Nagle delay (~40 ms with the client's delayed ACK) on what the broker sends: the
# deadline and cache-hit tests time publish -> audio (docs/daemon.md, Latency)
set_tcp_nodelay true

listener {p_anon} 127.0.0.1
allow_anonymous true

listener {p_auth} 127.0.0.1
allow_anonymous false
password_file {d}/passwd

listener {p_tls} 127.0.0.1
allow_anonymous false
password_file {d}/passwd
cafile {d}/ca.crt
certfile {d}/server.crt
keyfile {d}/server.key

listener {p_mtls} 127.0.0.1
allow_anonymous false
require_certificate true
use_identity_as_username true
cafile {d}/ca.crt
certfile {d}/server.crt
keyfile {d}/server.key
""")
    log = d / "mosquitto.log"
    with open(log, "wb") as logf:
        proc = subprocess.Popen(["mosquitto", "-c", str(d / "mosquitto.conf")], stdout=logf,
                                stderr=subprocess.STDOUT)
    try:
        for port in (p_anon, p_auth, p_tls, p_mtls):
            _wait_port(port, proc, log)
        yield Broker("127.0.0.1", p_anon, p_auth, p_tls, p_mtls, user, password, d / "ca.crt",
                     d / "client.crt", d / "client.key", d)
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# ------------------------------------------------------------------- audio


@dataclass(frozen=True)
class Capture:
    """Where ALSA writes what the daemon played."""

    conf: Path
    file: Path

    @property
    def env(self) -> dict[str, str]:
        return {"ALSA_CONFIG_PATH": str(self.conf), "ALSA_CAPTURE_FILE": str(self.file)}

    def files(self) -> list[Path]:
        def order(p: Path) -> int:
            m = re.search(r"\.(\d{4})$", p.name)
            return int(m.group(1)) if m else 0

        return sorted(self.file.parent.glob(self.file.name + "*"), key=order)

    def pcm(self) -> np.ndarray:
        """Every int16 sample played so far, in order (one file per device open)."""
        parts = [np.fromfile(p, dtype="<i2") for p in self.files()]
        return np.concatenate(parts) if parts else np.zeros(0, np.int16)

    def wait_for(self, needle: np.ndarray, timeout: float, start: int = 0) -> float:
        """Poll the capture until ``needle`` (int16) is in it; the time.monotonic() it was seen."""
        deadline = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            if find(self.pcm(), needle, start) >= 0:
                return now
            if now > deadline:
                raise AssertionError(f"not played within {timeout} s")
            time.sleep(0.005)


@pytest.fixture()
def alsa_capture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Capture:
    """The ALSA file plugin config, also set in this process's environment."""
    d = tmp_path / "alsa"
    d.mkdir()
    conf = d / "asound.conf"
    conf.write_text(ASOUND_CONF)
    cap = Capture(conf, d / "capture.raw")
    for key, value in cap.env.items():
        monkeypatch.setenv(key, value)
    return cap


# ------------------------------------------------------------------ notify


class NotifySocket:
    """A unix datagram socket standing in for systemd's notify socket."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.1)
        self.messages: list[str] = []

    def collect(self, until: Callable[[list[str]], bool], timeout: float) -> list[str]:
        deadline = time.monotonic() + timeout
        while not until(self.messages) and time.monotonic() < deadline:
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except TimeoutError:
                pass
        return self.messages

    def close(self) -> None:
        self.sock.close()


@pytest.fixture()
def notify_socket(tmp_path: Path) -> Iterator[NotifySocket]:
    ns = NotifySocket(tmp_path / "notify.sock")
    yield ns
    ns.close()


# --------------------------------------------------------------- MQTT probe


class Probe:
    """A test MQTT client: publishes announcements, records events and status."""

    def __init__(self, broker: Broker, prefix: str, device: str) -> None:
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        self.prefix, self.device = prefix, device
        self.events: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"probe-{os.getpid()}-{id(self)}")
        self._client.on_message = self._on_message
        connected = queue.Queue[bool]()
        self._client.on_connect = lambda c, u, f, rc, p: connected.put(not rc.is_failure)
        self._client.connect(broker.host, broker.port)
        self._client.loop_start()
        assert connected.get(timeout=5)
        base = f"{prefix}/{device}"
        self._client.subscribe([(f"{base}/events", 1), (f"{base}/status", 1)])
        time.sleep(0.2)

    def _on_message(self, client: Any, userdata: Any, msg: Any) -> None:
        data = json.loads(msg.payload)
        with self._cond:
            (self.events if msg.topic.endswith("/events") else self.statuses).append(data)
            self._cond.notify_all()

    def publish(self, payload: bytes | str | dict[str, Any], topic: str | None = None) -> None:
        if isinstance(payload, dict):
            payload = json.dumps(payload)
        topic = topic or f"{self.prefix}/{self.device}/announce"
        self._client.publish(topic, payload, qos=1).wait_for_publish(5)

    def wait(self, pred: Callable[[Probe], bool], timeout: float = 20.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not pred(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out waiting for {what or pred}: events={self.events}")
                self._cond.wait(left)

    def events_of(self, ident: str) -> list[str]:
        with self._cond:
            return [e["event"] for e in self.events if e["id"] == ident]

    def wait_event(self, ident: str, event: str, timeout: float = 20.0) -> dict[str, Any]:
        self.wait(lambda p: event in p.events_of(ident), timeout, f"{event} of {ident!r}")
        with self._cond:
            return next(e for e in self.events if e["id"] == ident and e["event"] == event)

    def wait_status(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 20.0) -> dict[str, Any]:
        self.wait(lambda p: any(pred(s) for s in p.statuses), timeout, "status")
        with self._cond:
            return next(s for s in reversed(self.statuses) if pred(s))

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()


# -------------------------------------------------------------- fake voice


class FakeVoice:
    """A deterministic stand-in voice: one tone burst per sentence.

    Sentence i of a text is 2400 + 40 * len(sentence) samples of a sine at
    200 + 50 * i Hz, so tests can tell sentences apart; ``delay_s`` per
    sentence stands for inference time.
    """

    def __init__(self, name: str = "fake", sample_rate: int = 22050, delay_s: float = 0.0) -> None:
        self._name, self._rate, self.delay_s = name, sample_rate, delay_s
        self.calls: list[str] = []
        self.call_times: list[tuple[str, float]] = []
        """(text, Unix seconds) when the synthesis of each text began."""

    @property
    def name(self) -> str:
        return self._name

    @property
    def sample_rate(self) -> int:
        return self._rate

    @staticmethod
    def sentences(text: str) -> list[str]:
        return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if re.search(r"\w", s)]

    def sentence_audio(self, i: int, sentence: str) -> np.ndarray:
        n = 2400 + 40 * len(sentence)
        t = np.arange(n, dtype=np.float32) / self._rate
        env = np.minimum(1.0, np.minimum(np.arange(n), n - 1 - np.arange(n)) / 200.0)
        return (0.5 * np.sin(2 * np.pi * (200 + 50 * i) * t) * env).astype(np.float32)

    def synthesize(self, text: str, config: SynthesisConfig | None = None) -> Iterator[AudioChunk]:
        parts = self.sentences(text)
        if not parts:
            raise UnspeakableTextError(f"nothing to speak in {text[:40]!r}")
        self.calls.append(text)
        self.call_times.append((text, time.time()))
        for i, sentence in enumerate(parts):
            if self.delay_s:
                time.sleep(self.delay_s)
            yield AudioChunk(self.sentence_audio(i, sentence), self._rate, i)


# ------------------------------------------------------------ config files


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


# --------------------------------------------------------- daemon runners


class InProcessDaemon:
    """The daemon on a thread of the test process, with fakes injected."""

    def __init__(self, config_path: Path, voices: dict[str, Any] | None, notifier: Any = None,
                 stream_factory: Any = None) -> None:
        """``voices``: model name -> fake voice; None = the real loader (edgetts.voices)."""
        from edgetts.config import load_config
        from edgetts.daemon import Daemon, DaemonOptions, load_configured_voice

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
    """`python -m edgetts.cli_daemon run --config X` (= `edgetts run`) as a subprocess (the real voice)."""

    config: Path
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = field(default=None)

    def start(self) -> DaemonProcess:
        env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1", "PYTHONUNBUFFERED": "1", **self.env}
        env.pop("JOURNAL_STREAM", None)
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "edgetts.cli_daemon", "run", "--config", str(self.config)],
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


# ------------------------------------------------------------------ clips


def write_clip(path: Path, audio: np.ndarray, rate: int = 22050) -> Path:
    """A 16-bit mono WAV clip (what most sites have)."""
    from edgetts.clips import write_wav

    write_wav(path, audio, rate)
    return path


def tone(freq: float, seconds: float, amp: float = 0.3, rate: int = 22050) -> np.ndarray:
    """A sine with 10 ms ramps: a clip that is easy to find in a capture."""
    t = np.arange(int(seconds * rate), dtype=np.float32)
    env = np.minimum(1.0, np.minimum(t, t[::-1]) / (0.01 * rate))
    return (amp * np.sin(2 * np.pi * freq * t / rate) * env).astype(np.float32)


def clip_pcm(clip: Any, gain: float = 1.0) -> np.ndarray:
    """The int16 the device gets for a library clip (what the one converter does)."""
    x = clip.audio if gain == 1.0 else clip.audio * np.float32(gain)
    return np.clip(x * 32767.0, -32767.0, 32767.0).astype(np.int16)


# -------------------------------------------------------- PCM comparison


def find(haystack: np.ndarray, needle: np.ndarray, start: int = 0) -> int:
    """Index of the first exact occurrence of ``needle`` in ``haystack`` at or after start; -1."""
    n = needle.size
    if n == 0 or haystack.size - start < n:
        return -1
    first = np.flatnonzero(haystack[start : haystack.size - n + 1] == needle[0]) + start
    for i in first:
        if np.array_equal(haystack[i : i + n], needle):
            return int(i)
    return -1


def assert_played(captured: np.ndarray, expected: np.ndarray, fade: int, start: int = 0) -> int:
    """``expected`` (int16) was played, bit-exact except the ``fade`` samples at each end,
    where each captured sample may only be quieter than the reference; returns its index."""
    assert expected.size > 2 * fade + 64, "reference too short to compare"
    core = expected[fade:-fade] if fade else expected
    at = find(captured, core, start)
    assert at >= 0, "the announcement's samples are not in the capture"
    at -= fade
    got = captured[at : at + expected.size].astype(np.int32)
    ref = expected.astype(np.int32)
    assert got.size == ref.size, "capture ends inside the announcement"
    assert np.all(np.abs(got[:fade]) <= np.abs(ref[:fade])), "fade-in louder than the reference"
    assert np.all(np.abs(got[-fade:]) <= np.abs(ref[-fade:]) + 1), "fade-out louder than the reference"
    return at
