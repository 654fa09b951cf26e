"""Network namespaces of a test's own, for traffic that must not leave the test: mDNS multicast.

Zeroconf answers and asks on every multicast interface it finds; in the machine's own namespace
that is the real network card, and a test's packets have no business there.  Two namespaces made
here, joined by a veth pair and nothing else, are a board and a home server on a LAN of their own.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.broker import running

BOARD_ADDRESS, HOME_ADDRESS = "10.213.0.1", "10.213.0.2"
"""The two ends of the test's own link (a private range inside namespaces this test made)."""


def _inside(prefix: list[str], *command: str) -> None:
    subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=10)


@contextlib.contextmanager
def _namespace(name: str) -> Iterator[list[str]]:
    subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)  # a killed run's leftover
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True, timeout=10)
    try:
        prefix = ["ip", "netns", "exec", name]
        _inside(prefix, "ip", "link", "set", "lo", "up")
        yield prefix
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)


@contextlib.contextmanager
def two_hosts(tag: str) -> Iterator[tuple[list[str], list[str]]]:
    """A board and a home server on a link of their own; yields the prefixes that run a command on each.

    Each is a new network namespace whose only interfaces are its loopback and one end of a veth
    pair (``BOARD_ADDRESS`` / ``HOME_ADDRESS``, multicast on, a default route over the link), so
    mDNS goes from one to the other as on a LAN, and nowhere else.  Skips where namespaces cannot
    be made (not root, no ``ip``): CI runs as root and has both."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2's ip")
    board_ns, home_ns = f"edgetts-{tag}-b{os.getpid()}", f"edgetts-{tag}-h{os.getpid()}"
    with _namespace(board_ns) as board, _namespace(home_ns) as home:
        _inside(board, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth1", "netns", home_ns)
        for prefix, dev, address in ((board, "eth0", BOARD_ADDRESS), (home, "eth1", HOME_ADDRESS)):
            _inside(prefix, "ip", "addr", "add", f"{address}/24", "dev", dev)
            _inside(prefix, "ip", "link", "set", dev, "multicast", "on", "up")
            _inside(prefix, "ip", "route", "add", "default", "dev", dev)
        yield board, home


@contextlib.contextmanager
def mosquitto_in(prefix: list[str], folder: Path, port: int = 1883) -> Iterator[int]:
    """An anonymous mosquitto on 127.0.0.1:``port`` inside the namespace; yields the port."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mosquitto.conf").write_text(
        f"user root\nlog_dest stderr\nlistener {port} 127.0.0.1\nallow_anonymous true\n"
    )
    with running(folder, [port], prefix=prefix, listening=functools.partial(_listening_in, prefix)):
        yield port


def _listening_in(prefix: list[str], port: int) -> bool:
    """A TCP port listens inside the namespace (this process, outside it, cannot connect there)."""
    listening = subprocess.run(
        [*prefix, "ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, timeout=10
    ).stdout
    return bool(listening.strip())
