"""An MPD server's volume, through MPD's own protocol (`status`, `setvol`).

A small client of our own rather than python-mpd2: ducking needs two commands of a line
protocol (a command line out; `key: value` lines back, ended by `OK` or `ACK ...`), with a
timeout on every read and write so a server that stops answering only stalls the ducking
worker, never the daemon; one more dependency on the board would buy nothing here.

MPD's volume is a percentage whose curve is the output's mixer's: its ALSA hardware mixer (with
alsamixer's volume mapping), PulseAudio and PipeWire mixers all map it cubically, so ``db``
quieter is the percentage times 10^(db/60).  (Its `software` mixer is steeper: there -15 dB
lowers by about 13.)
"""

from __future__ import annotations

import socket

from edgetts.config.duck import mixer_address
from edgetts.daemon.ducking.mixer import Level, MixerError, read_line, why

TIMEOUT_S = 2.0
"""Seconds to connect, and for each reply."""

KEY = "volume"
"""MPD has one volume: its only key."""


class MpdMixer:
    """A connection to one MPD server (made when first needed, made again once if it dropped)."""

    kind = "mpd"
    tolerance = 0.5  # (whole percent)

    def __init__(self, address: str, timeout_s: float = TIMEOUT_S) -> None:
        self.address = address
        self._host, self._port = mixer_address(address)
        self._timeout = timeout_s
        self._sock: socket.socket | None = None
        self._buf = b""

    # -------------------------------------------------------------- Mixer
    def levels(self) -> dict[str, Level]:
        status = self.command("status")
        volume = int(status.get("volume", "-1"))
        # -1: no mixer right now (MPD says so while its output is closed): nothing to lower.
        return {KEY: volume} if volume >= 0 else {}

    def set_levels(self, levels: dict[str, Level]) -> None:
        if KEY in levels:
            self.command(f"setvol {int(levels[KEY])}")

    def lowered(self, level: Level, db: float) -> Level:
        return max(0, min(100, round(int(level) * 10.0 ** (db / 60.0))))

    def close(self) -> None:
        sock, self._sock = self._sock, None
        self._buf = b""
        if sock is not None:
            try:
                sock.sendall(b"close\n")
            except OSError:
                pass
            sock.close()

    # ----------------------------------------------------------- protocol
    def command(self, line: str) -> dict[str, str]:
        """Send one command; its `key: value` lines.  MixerError when refused or unreachable."""
        for attempt in (0, 1):
            try:
                if self._sock is None:
                    self._connect()
                assert self._sock is not None
                self._sock.sendall(line.encode("utf-8") + b"\n")
                return self._reply(line)
            except (OSError, EOFError) as exc:
                self.close()
                if attempt:  # (once more: MPD closes a connection idle for connection_timeout)
                    raise MixerError(f"mpd {self.address}: {why(exc)}") from None
        raise AssertionError("unreachable")

    def _connect(self) -> None:
        self._sock = socket.create_connection((self._host, self._port), timeout=self._timeout)
        greeting = self._line()
        if not greeting.startswith("OK MPD "):
            self.close()
            raise MixerError(f"mpd {self.address}: not an MPD server (it said {greeting[:60]!r})")

    def _reply(self, line: str) -> dict[str, str]:
        out: dict[str, str] = {}
        while True:
            text = self._line()
            if text == "OK":
                return out
            if text.startswith("ACK"):
                raise MixerError(f"mpd {self.address}: {line.split()[0]} refused: {text[:200]}")
            key, sep, value = text.partition(": ")
            if sep:
                out[key] = value

    def _line(self) -> str:
        assert self._sock is not None
        line, self._buf = read_line(self._sock, self._buf, 4096, 1 << 20, "a reply line longer than 1 MiB")
        return line


__all__ = ["MpdMixer"]
