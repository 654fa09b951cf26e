"""The HTTP console under test: its config, a free port, and a small client that keeps a session."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any


def free_port() -> int:
    """A TCP port free on loopback now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_extra(port: int, more: str = "", host: str = "127.0.0.1") -> str:
    """The `http:` section (for config_yaml's ``extra``) on ``port``."""
    lines = "".join(f"  {line}\n" for line in more.splitlines() if line.strip())
    return f"http:\n  enabled: true\n  listen: {host}:{port}\n{lines}"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def error(self) -> str:
        return str(self.json().get("error"))


@dataclass
class Client:
    """One browser-like client: cookies kept, the CSRF token sent once it has one."""

    port: int
    host: str = "127.0.0.1"
    tls: bool = False
    cookie: str | None = None
    csrf: str | None = None
    token: str | None = None
    timeout: float = 30.0
    extra_headers: dict[str, str] = field(default_factory=dict)

    def _connection(self) -> http.client.HTTPConnection:
        if self.tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=ctx)
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None, csrf: bool = True
    ) -> Reply:
        data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
        sent = dict(self.extra_headers)
        if data is not None:
            sent["content-type"] = "application/json"
        if self.cookie:
            sent["cookie"] = self.cookie
        if self.csrf and csrf and method not in ("GET", "HEAD"):
            sent["x-csrf-token"] = self.csrf
        if self.token:
            sent["authorization"] = f"Bearer {self.token}"
        sent.update(headers or {})
        conn = self._connection()
        try:
            conn.request(method, path, body=data, headers=sent)
            res = conn.getresponse()
            reply = Reply(res.status, {k.lower(): v for k, v in res.getheaders()}, res.read())
        finally:
            conn.close()
        cookie = reply.headers.get("set-cookie")
        if cookie:
            value = cookie.split(";", 1)[0]
            self.cookie = None if value.endswith("=") or value.endswith('=""') else value
        return reply

    def get(self, path: str, **kw: Any) -> Reply:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Reply:
        return self.request("POST", path, {} if body is None else body, **kw)

    def delete(self, path: str, **kw: Any) -> Reply:
        return self.request("DELETE", path, **kw)

    def start(self) -> Reply:
        """GET /api/session: the cookie (open mode, or a login kept) and the CSRF token."""
        reply = self.get("/api/session")
        self.csrf = reply.json().get("csrf")
        return reply

    def login(self, password: str) -> Reply:
        reply = self.post("/api/login", {"password": password})
        if reply.status == 200:
            self.csrf = reply.json()["csrf"]
        return reply

    def wait_up(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.get("/api/openapi.json")
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


__all__ = ["Client", "Reply", "free_port", "http_extra"]
