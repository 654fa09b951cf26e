"""sd_notify(3) without libsystemd: READY=1, WATCHDOG=1, STOPPING=1, STATUS=.

A no-op when ``NOTIFY_SOCKET`` is unset (not started by systemd).  The
watchdog interval is read from ``WATCHDOG_USEC`` (and ``WATCHDOG_PID``, which
must be ours); the daemon pings from the loop that does the work, never from a
timer thread, so a hung loop really gets restarted.
"""

from __future__ import annotations

import logging
import os
import socket

_LOGGER = logging.getLogger(__name__)


class Notifier:
    """Sends sd_notify datagrams to ``$NOTIFY_SOCKET``."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        path = env.get("NOTIFY_SOCKET", "")
        self._address: str | bytes | None = None
        if path.startswith("@"):
            self._address = b"\0" + path[1:].encode()
        elif path.startswith("/"):
            self._address = path
        self._sock: socket.socket | None = None
        if self._address is not None:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._sock.setblocking(False)
        self.watchdog_s = _watchdog_seconds(env)

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def notify(self, *lines: str) -> bool:
        """Send ``lines`` as one datagram; False when not under systemd or it failed."""
        if self._sock is None or self._address is None:
            return False
        try:
            self._sock.sendto("\n".join(lines).encode("utf-8"), self._address)
        except OSError as exc:
            _LOGGER.debug("sd_notify failed: %s", exc)
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.notify("READY=1", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.notify(f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self, status: str = "stopping") -> bool:
        return self.notify("STOPPING=1", f"STATUS={status}")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _watchdog_seconds(env: dict[str, str] | os._Environ[str]) -> float | None:
    """The watchdog timeout in seconds, or None when there is none for this process."""
    usec = env.get("WATCHDOG_USEC")
    if not usec:
        return None
    pid = env.get("WATCHDOG_PID")
    if pid and pid.isdigit() and int(pid) != os.getpid():
        return None
    try:
        value = int(usec)
    except ValueError:
        return None
    return value / 1e6 if value > 0 else None
