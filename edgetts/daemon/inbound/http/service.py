"""The console as a daemon service: uvicorn on its own thread and event loop.

Starlette + uvicorn (its pure-Python h11 protocol, no uvloop/httptools) was
chosen over aiohttp on this machine's measurement (docs/http-console.md, "Server"): half
the memory and start-up.  The socket is bound in :meth:`HttpService.start`, on
the loop's thread, so a port in use or a bad certificate is the start's error
(`degraded: http`) and not a log line on another thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import socket
import ssl
import threading
from typing import Any

from edgetts.config import HttpSettings
from edgetts.config.http import split_listen
from edgetts.daemon.inbound.http.access import Access, load_credentials
from edgetts.daemon.inbound.http.app import build_app
from edgetts.daemon.inbound.http.common import Console
from edgetts.daemon.inbound.http.feed import FeedPump
from edgetts.errors import EdgeTTSError

_LOGGER = logging.getLogger(__name__)

MAX_CONNECTIONS = 64
"""Connections served at once; uvicorn answers 503 beyond."""

MAX_HEADER_BYTES = 16384
"""Largest request head (line and headers); a larger one is refused by the HTTP parser."""


def bind(listen: str) -> socket.socket:
    """A listening socket on ``listen``; EdgeTTSError when it cannot be had (in use, no such address)."""
    host, port = split_listen(listen)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _name, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise EdgeTTSError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise EdgeTTSError(f"cannot listen on {listen}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def _check_tls(settings: HttpSettings) -> None:
    if settings.certfile is None or settings.keyfile is None:
        return
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(settings.certfile, settings.keyfile)
    except (OSError, ssl.SSLError) as exc:
        raise EdgeTTSError(f"cannot use http/certfile and keyfile: {exc}") from None


class HttpService:
    """The console and API (issue 18)."""

    name = "http"

    def __init__(self, settings: HttpSettings) -> None:
        self.settings = settings
        self._server: object | None = None
        self._thread: threading.Thread | None = None
        self._pump: FeedPump | None = None
        self.address: tuple[str, int] | None = None
        """Where it listens (host, port): the port the kernel chose for `:0`."""

    def start(self, ctx: Any) -> None:
        """``ctx``: the daemon's edgetts.daemon.inbound.services.ServiceContext (services imports this package)."""
        import uvicorn  # here, not at import: a daemon without the console never loads it

        s = self.settings
        credentials = load_credentials(s)  # unreadable credentials: no console at all, never an open one
        _check_tls(s)
        sock = bind(s.listen)
        self.address = sock.getsockname()[:2]
        self._pump = FeedPump(ctx.feed)
        c = Console(ctx, s, Access(credentials, s.session_ttl_s), self._pump, tls=s.certfile is not None)
        config = uvicorn.Config(
            build_app(c),
            log_config=None,
            access_log=False,
            lifespan="off",
            server_header=False,
            ssl_certfile=s.certfile,
            ssl_keyfile=s.keyfile,
            limit_concurrency=MAX_CONNECTIONS,
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
            timeout_keep_alive=5,
            timeout_graceful_shutdown=2,
            http="h11",
            loop="asyncio",
            ws="none",
        )
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(target=self._run, args=(server, sock, c), name="edgetts-http", daemon=True)
        self._thread.start()
        scheme = "https" if c.tls else "http"
        _LOGGER.info(
            "console on %s://%s (%s)",
            scheme,
            s.listen if s.listen[-2:] != ":0" else self.address,
            "open on loopback" if credentials.open else "login required",
        )

    def _run(self, server: object, sock: socket.socket, c: Console) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        # its own workers for the waits on side streams, so the console never starves another's pool
        loop.set_default_executor(
            concurrent.futures.ThreadPoolExecutor(
                max_workers=self.settings.max_tts_jobs + 4, thread_name_prefix="edgetts-http-wait"
            )
        )
        c.loop = loop
        assert self._pump is not None
        self._pump.start(loop)
        try:
            loop.run_until_complete(server.serve(sockets=[sock]))  # type: ignore[attr-defined]
        except Exception:
            _LOGGER.exception("the console's server stopped")
        finally:
            sock.close()
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.should_exit = True  # type: ignore[attr-defined]
        if self._pump is not None:
            self._pump.close()
        if self._thread is not None:
            self._thread.join(5.0)
            if self._thread.is_alive():
                _LOGGER.warning("the console did not stop within 5 s")


__all__ = ["HttpService", "bind"]
