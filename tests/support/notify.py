"""A unix datagram socket standing in for systemd's notify socket."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


class NotifySocket:
    """A unix datagram socket standing in for systemd's notify socket.

    Read all the time, as systemd reads its own: a socket's queue holds only
    net.unix.max_dgram_qlen datagrams (10 here), and the daemon sends without blocking, so a
    stand-in read only when a test looks dropped what came after the tenth: a STOPPING=1 after
    half a minute of unread WATCHDOG=1 pings, in a clean-clone run beside a CPU hog.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.1)
        self.messages: list[str] = []
        self._closed = threading.Event()
        self._reader = threading.Thread(target=self._read, name="notify-socket", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while not self._closed.is_set():
            try:
                self.messages.append(self.sock.recv(4096).decode())  # (list.append is atomic)
            except TimeoutError:
                pass
            except OSError:  # closed
                return

    def collect(self, until: Callable[[list[str]], bool], timeout: float) -> list[str]:
        """The messages so far, once ``until`` holds of them or ``timeout`` seconds have passed."""
        deadline = time.monotonic() + timeout
        while not until(list(self.messages)) and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.messages

    def close(self) -> None:
        self._closed.set()
        self._reader.join(2)
        self.sock.close()


@pytest.fixture()
def notify_socket(tmp_path: Path) -> Iterator[NotifySocket]:
    ns = NotifySocket(tmp_path / "notify.sock")
    yield ns
    ns.close()
