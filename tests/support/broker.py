"""mosquitto on free 127.0.0.1 ports (anonymous, password, TLS, mutual TLS), killed in teardown."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest


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
    _openssl(
        d,
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "30",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-subj",
        "/CN=edgetts-test-ca",
    )
    (d / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for who in ("server", "client"):
        cn = "localhost" if who == "server" else "edge-client"
        _openssl(
            d,
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{who}.key",
            "-out",
            f"{who}.csr",
            "-subj",
            f"/CN={cn}",
        )
        _openssl(
            d,
            "x509",
            "-req",
            "-in",
            f"{who}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "30",
            "-out",
            f"{who}.crt",
            "-extfile",
            f"{who}.ext",
        )


def tcp_listening(port: int) -> bool:
    """Something accepts connections on 127.0.0.1:``port`` (of this process's network namespace)."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
        return True
    return False


def _wait_port(
    port: int, proc: subprocess.Popen[bytes], log: Path, listening: Callable[[int], bool], timeout: float = 10.0
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mosquitto exited: {log.read_text()[-2000:]}")
        if listening(port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"mosquitto did not listen on {port}: {log.read_text()[-2000:]}")


def _config(d: Path, p_anon: int, p_auth: int, p_tls: int, p_mtls: int) -> str:
    """mosquitto.conf for the four listeners, persistence and password file in ``d``."""
    return f"""\
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
"""


@contextlib.contextmanager
def running(
    d: Path, ports: list[int], *, prefix: Sequence[str] = (), listening: Callable[[int], bool] = tcp_listening
) -> Iterator[None]:
    """mosquitto on ``d / "mosquitto.conf"`` until the block ends; entered once every port listens.

    ``prefix``: the command it runs through (``ip netns exec NAME``, support.netns), and
    ``listening``: how a port is seen listening from here (the default connects from this process)."""
    log = d / "mosquitto.log"
    with open(log, "wb") as logf:
        proc = subprocess.Popen(
            [*prefix, "mosquitto", "-c", str(d / "mosquitto.conf")], stdout=logf, stderr=subprocess.STDOUT
        )
    try:
        for port in ports:
            _wait_port(port, proc, log, listening)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture(scope="session")
def mosquitto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """mosquitto on free 127.0.0.1 ports: anonymous, password, TLS+password, mutual TLS."""
    d = tmp_path_factory.mktemp("mosquitto")
    (d / "data").mkdir()
    _make_certs(d)
    user, password = "edge", "edge-test-pw"
    subprocess.run(
        ["mosquitto_passwd", "-c", "-b", str(d / "passwd"), user, password], check=True, capture_output=True, timeout=10
    )
    ports = _free_ports(4)
    (d / "mosquitto.conf").write_text(_config(d, *ports))
    with running(d, ports):
        yield Broker("127.0.0.1", *ports, user, password, d / "ca.crt", d / "client.crt", d / "client.key", d)


@contextlib.contextmanager
def plain_broker(d: Path, extra: str = "") -> Iterator[Broker]:
    """A second (third...) mosquitto: one anonymous listener, persistence in ``d``, ``extra`` config
    lines (a bridge); for tests of several sites (issue 19). Only ``host``, ``port`` and ``dir`` mean
    anything in the Broker it yields."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "data").mkdir(exist_ok=True)
    port = _free_ports(1)[0]
    (d / "mosquitto.conf").write_text(
        f"user root\npersistence true\npersistence_location {d}/data/\nautosave_interval 1\nlog_dest stderr\n"
        f"log_type error\nlog_type warning\nlog_type notice\nset_tcp_nodelay true\n"
        f"listener {port} 127.0.0.1\nallow_anonymous true\n{extra}"
    )
    with running(d, [port]):
        yield Broker("127.0.0.1", port, port, port, port, "", "", d / "none", d / "none", d / "none", d)
