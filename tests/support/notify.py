"""A unix datagram socket standing in for systemd's notify socket."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


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
