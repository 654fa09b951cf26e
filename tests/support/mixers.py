"""Real mixers on loopback for the ducking tests: MPD, a Snapcast server with a client, a tone stream.

Each runs from a folder of its own with a config written here, on free 127.0.0.1 ports, and is
killed when its ``with`` ends; each check asks the server itself (its own protocol, a client
written here, not edgetts's).  Debian packages: `mpd`, `snapserver`, `snapclient` (installed by
scripts/system-deps.sh --test); without one the test that needs it skips, naming the package.

* :class:`MpdServer`: `mpd --no-daemon`, a null output with MPD's software mixer, a playlist of
  one generated WAV file on repeat, playing.
* :class:`SnapServer`: `snapserver` (a pipe source it creates, no HTTP) and one `snapclient`
  playing into its `file` player (`filename=null`), so the server has a connected client.
* :class:`ToneStream`: `pacat` playing a sine into a sink of the paced sink (tools/paced_sink.py).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import wave
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from support.console import free_port

START_S = 20.0
"""How long a server may take to answer once started."""


def missing(*programs: str) -> str | None:
    """None when every program is installed; else which are not."""
    absent = [p for p in programs if shutil.which(p) is None and not Path("/usr/bin", p).exists()]
    return ", ".join(absent) or None


def write_tone(path: Path, seconds: float, freq: float = 440.0, rate: int = 44100, amp: float = 0.3) -> Path:
    """A 16-bit mono sine WAV file."""
    t = np.arange(int(seconds * rate)) / rate
    pcm = (amp * 32767 * np.sin(2 * np.pi * freq * t)).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())
    return path


class _Process:
    """A server process with its log; stopped (TERM, then KILL) on exit."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self._procs: list[subprocess.Popen[bytes]] = []

    def _spawn(self, argv: list[str], log: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        with (self.dir / log).open("ab") as out:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, start_new_session=True
            )
        self._procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        try:
            return (self.dir / name).read_text(errors="replace")[-3000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
        self._procs.clear()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class MpdServer(_Process):
    """A real MPD on 127.0.0.1:``port``, playing a generated tone on repeat."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        super().__init__(directory)
        self.port = port or free_port()
        self.address = f"127.0.0.1:{self.port}"

    def __enter__(self) -> MpdServer:
        return self.start()

    def start(self) -> MpdServer:
        d = self.dir
        for sub in ("music", "playlists"):
            (d / sub).mkdir(exist_ok=True)
        write_tone(d / "music" / "tone.wav", 30.0)
        (d / "mpd.conf").write_text(
            f'music_directory "{d / "music"}"\nplaylist_directory "{d / "playlists"}"\n'
            f'db_file "{d / "database"}"\nlog_file "{d / "mpd.log"}"\n'
            f'bind_to_address "127.0.0.1"\nport "{self.port}"\nzeroconf_enabled "no"\n'
            'audio_output {\n  type "null"\n  name "null"\n  mixer_type "software"\n}\n'
        )
        self._spawn(["mpd", "--no-daemon", str(d / "mpd.conf")], "mpd.out")
        deadline = time.monotonic() + START_S
        while True:
            try:
                self.command("ping")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"mpd did not answer: {self.log('mpd.out')} {self.log('mpd.log')}") from None
                time.sleep(0.05)
        self.command("update")
        while "updating_db" in self.command("status"):
            time.sleep(0.05)
        for line in ("clear", "add tone.wav", "repeat 1", "play", "setvol 80"):
            self.command(line)
        return self

    def command(self, line: str) -> dict[str, str]:
        """One command on a connection of its own; its `key: value` lines (RuntimeError on ACK)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            f = s.makefile("rwb")
            f.readline()  # OK MPD x.y.z
            f.write(line.encode() + b"\n")
            f.flush()
            out: dict[str, str] = {}
            for raw in f:
                text = raw.decode().rstrip("\n")
                if text == "OK":
                    return out
                if text.startswith("ACK"):
                    raise RuntimeError(f"mpd: {line}: {text}")
                key, _, value = text.partition(": ")
                out[key] = value
        raise OSError("mpd closed the connection")

    def volume(self) -> int:
        return int(self.command("status")["volume"])


class SnapServer(_Process):
    """A real snapserver on loopback with one connected snapclient (id ``client_id``)."""

    client_id = "edgetts-test-client"

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.control_port, self.stream_port = free_port(), free_port()
        self.address = f"127.0.0.1:{self.control_port}"
        self._next = 0

    def __enter__(self) -> SnapServer:
        return self.start()

    def start(self) -> SnapServer:
        d = self.dir
        (d / "snapserver.conf").write_text(
            f"[server]\ndatadir = {d}\n"
            "[http]\nenabled = false\n"
            f"[tcp]\nenabled = true\nbind_to_address = 127.0.0.1\nport = {self.control_port}\n"
            f"[stream]\nbind_to_address = 127.0.0.1\nport = {self.stream_port}\n"
            f"source = pipe://{d / 'fifo'}?name=default&mode=create\n"
            "[logging]\nsink = stdout\n"
        )
        self._spawn(["snapserver", "-c", str(d / "snapserver.conf")], "snapserver.out", {"HOME": str(d)})
        self._wait(lambda: self.call("Server.GetRPCVersion") is not None, "snapserver answers")
        client = [
            "snapclient",
            "-h",
            "127.0.0.1",
            "-p",
            str(self.stream_port),
            "--hostID",
            self.client_id,
            "--player",
            "file:filename=null",
            "--logsink",
            "null",
        ]
        self._spawn(client, "snapclient.out", {"HOME": str(d)})
        self._wait(lambda: self.client_volume() is not None, "its client connected")
        self.call("Client.SetVolume", {"id": self.client_id, "volume": {"muted": False, "percent": 80}})
        return self

    def _wait(self, ok: Any, what: str) -> None:
        deadline = time.monotonic() + START_S
        while True:
            try:
                if ok():
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"not so in {START_S} s: {what}: {self.log('snapserver.out')}")
            time.sleep(0.1)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """One JSON-RPC request on a connection of its own; its result."""
        self._next += 1
        request = {"id": self._next, "jsonrpc": "2.0", "method": method, "params": params or {}}
        with socket.create_connection(("127.0.0.1", self.control_port), timeout=5) as s:
            f = s.makefile("rwb")
            f.write(json.dumps(request).encode() + b"\r\n")
            f.flush()
            for raw in f:
                answer = json.loads(raw)
                if isinstance(answer, dict) and answer.get("id") == self._next:
                    if "error" in answer:
                        raise RuntimeError(f"snapserver: {method}: {answer['error']}")
                    return answer["result"]
        raise OSError("snapserver closed the connection")

    def client_volume(self) -> int | None:
        """The test client's volume percent, or None while it is not connected."""
        for group in self.call("Server.GetStatus")["server"]["groups"]:
            for client in group["clients"]:
                if client["id"] == self.client_id and client["connected"]:
                    return int(client["config"]["volume"]["percent"])
        return None


class ToneStream(_Process):
    """`pacat` playing a sine (``amp`` of full scale) into ``sink`` of a running PulseAudio."""

    def __init__(self, directory: Path, env: dict[str, str], sink: str, rate: int, amp: float = 0.25) -> None:
        super().__init__(directory)
        self._env, self._sink, self._rate, self._amp = env, sink, rate, amp

    def __enter__(self) -> ToneStream:
        t = np.arange(int(120 * self._rate)) / self._rate
        raw = self.dir / "tone.raw"
        raw.write_bytes((self._amp * 32767 * np.sin(2 * np.pi * 1000.0 * t)).astype("<i2").tobytes())
        argv = ["pacat", "--playback", "-d", self._sink, f"--rate={self._rate}", "--channels=1"]
        argv += ["--format=s16le", "--raw", "--latency-msec=40", "--client-name=music", str(raw)]
        self._spawn(argv, "pacat.out", self._env)
        deadline = time.monotonic() + START_S
        while self.volume() is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the tone stream did not start: {self.log('pacat.out')}")
            time.sleep(0.05)
        return self

    def volume(self) -> float | None:
        """The stream's volume as the server has it (1.0 = 100 %), from `pactl`; None before it plays."""
        done = subprocess.run(
            ["pactl", "-f", "json", "list", "sink-inputs"],
            env={**os.environ, **self._env},
            capture_output=True,
            text=True,
            timeout=10,
        )
        for stream in json.loads(done.stdout or "[]"):
            if stream.get("properties", {}).get("application.name") == "music":
                values = [int(ch["value"]) for ch in stream["volume"].values()]
                return sum(values) / len(values) / 65536.0
        return None


__all__ = ["MpdServer", "SnapServer", "ToneStream", "missing", "write_tone"]
