"""A Snapcast server's clients, through its JSON-RPC control API on TCP (port 1705 by default).

Newline-delimited JSON-RPC 2.0: `Server.GetStatus` lists the groups and their clients with
each client's volume; `Client.SetVolume` sets one, and a batch sets several in one round trip.
The server also sends notifications on the same connection (another controller changed a
volume, a client connected): they are skipped while waiting for the answer to our id.

Every connected client is lowered (a muted one is left alone).  A client's volume is a
percentage; snapclient's default mixer (`software`, no options) turns percent p into the gain
(10^(p/100) - 1) / 9, so ``db`` quieter is the inverse of that curve at the gain times
10^(db/20), exact for that mixer and close for the others.
"""

from __future__ import annotations

import json
import math
import socket
from typing import Any

from edgetts.config.duck import mixer_address
from edgetts.daemon.ducking.mixer import Level, MixerError, read_line, why

TIMEOUT_S = 2.0
"""Seconds to connect, and for each answer."""

_MAX_LINE = 8 << 20  # a Server.GetStatus of a large installation is some hundred kilobytes


def percent_gain(percent: float) -> float:
    """snapclient's software mixer: percent -> linear gain."""
    return (10.0 ** (percent / 100.0) - 1.0) / 9.0


def gain_percent(gain: float) -> float:
    """The inverse of :func:`percent_gain`."""
    return 100.0 * math.log10(1.0 + 9.0 * max(0.0, gain))


class SnapcastMixer:
    """A control connection to one Snapcast server (made when first needed, again once if it dropped)."""

    kind = "snapcast"
    tolerance = 0.5  # (whole percent)

    def __init__(self, address: str, timeout_s: float = TIMEOUT_S) -> None:
        self.address = address
        self._host, self._port = mixer_address(address)
        self._timeout = timeout_s
        self._sock: socket.socket | None = None
        self._buf = b""
        self._next_id = 0

    # -------------------------------------------------------------- Mixer
    def levels(self) -> dict[str, Level]:
        result = self.call([("Server.GetStatus", {})])[0]
        out: dict[str, Level] = {}
        try:
            for group in result["server"]["groups"]:
                for client in group["clients"]:
                    volume = client["config"]["volume"]
                    if client.get("connected") and not volume.get("muted"):
                        out[str(client["id"])] = int(volume["percent"])
        except (KeyError, TypeError, ValueError) as exc:
            raise MixerError(f"snapcast {self.address}: unexpected Server.GetStatus answer ({exc!r})") from None
        return out

    def set_levels(self, levels: dict[str, Level]) -> None:
        if levels:
            self.call(
                [
                    ("Client.SetVolume", {"id": key, "volume": {"muted": False, "percent": level}})
                    for key, level in levels.items()
                ],
                skip_errors=True,  # (a client that left meanwhile; only unmuted ones are listed)
            )

    def lowered(self, level: Level, db: float) -> Level:
        gain = percent_gain(int(level)) * 10.0 ** (db / 20.0)
        return max(0, min(100, round(gain_percent(gain))))

    def close(self) -> None:
        sock, self._sock = self._sock, None
        self._buf = b""
        if sock is not None:
            sock.close()

    # ----------------------------------------------------------- protocol
    def call(self, requests: list[tuple[str, dict[str, Any]]], skip_errors: bool = False) -> list[Any]:
        """Send the requests (a batch when more than one); their results in order."""
        for attempt in (0, 1):
            try:
                return self._call(requests, skip_errors)
            except (OSError, EOFError, ValueError) as exc:
                self.close()
                if attempt:
                    raise MixerError(f"snapcast {self.address}: {_why(exc)}") from None
        raise AssertionError("unreachable")

    def _call(self, requests: list[tuple[str, dict[str, Any]]], skip_errors: bool) -> list[Any]:
        if self._sock is None:
            self._sock = socket.create_connection((self._host, self._port), timeout=self._timeout)
        ids = []
        batch = []
        for method, params in requests:
            self._next_id += 1
            ids.append(self._next_id)
            batch.append({"id": self._next_id, "jsonrpc": "2.0", "method": method, "params": params})
        body = batch[0] if len(batch) == 1 else batch
        self._sock.sendall(json.dumps(body).encode("utf-8") + b"\r\n")
        answers: dict[int, Any] = {}
        while len(answers) < len(ids):
            message = json.loads(self._line())
            for item in message if isinstance(message, list) else [message]:
                if isinstance(item, dict) and item.get("id") in ids:
                    answers[item["id"]] = item
                # (anything else is a notification, or an answer to a call abandoned earlier)
        results = []
        for ident, (method, _params) in zip(ids, requests):
            answer = answers[ident]
            if "error" in answer and not skip_errors:
                raise MixerError(f"snapcast {self.address}: {method} refused: {str(answer['error'])[:200]}")
            results.append(answer.get("result"))
        return results

    def _line(self) -> str:
        assert self._sock is not None
        line, self._buf = read_line(self._sock, self._buf, 65536, _MAX_LINE, "an answer longer than 8 MiB")
        return line


def _why(exc: BaseException) -> str:
    return f"not JSON-RPC ({exc})" if isinstance(exc, ValueError) else why(exc)


__all__ = ["SnapcastMixer", "gain_percent", "percent_gain"]
