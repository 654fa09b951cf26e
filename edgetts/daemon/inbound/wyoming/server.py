"""The Wyoming TTS server: an asyncio loop on its own thread, one Session per client (issue 17).

The daemon's loop never waits for it: clients are served on this thread, synthesis for
them runs as side streams (edgetts.daemon.playout.client_synthesis), and announcement audio enters the queue
through the service context like an MQTT message.  `edgetts wyoming` runs the same
server without a daemon.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from wyoming.info import Satellite

from edgetts.daemon.assets import Assets
from edgetts.daemon.inbound.wyoming.audio_announcer import AudioAnnouncer
from edgetts.daemon.inbound.wyoming.session import Jobs, Session
from edgetts.daemon.inbound.wyoming.wire import Limits
from edgetts.errors import EdgeTTSError

_LOGGER = logging.getLogger(__name__)

#: Seconds close() waits for the server's thread.
_CLOSE_S = 5.0


class _Backend:
    def __init__(self, assets: Callable[[], Assets], side: Any, announcer: AudioAnnouncer | None, jobs: Jobs) -> None:
        self._assets, self._side, self._announcer, self.jobs = assets, side, announcer, jobs

    def assets(self) -> Assets:
        return self._assets()

    @property
    def side(self) -> Any:
        return self._side

    @property
    def announcer(self) -> AudioAnnouncer | None:
        return self._announcer


class WyomingServer:
    """Listens on ``uri`` (tcp://HOST:PORT or unix:///path) until :meth:`close`; and, given
    ``satellite``, on ``satellite[0]`` too, where `info` names the satellite ``satellite[1]``.

    Two listeners because Home Assistant sets up a Wyoming entry that names a satellite as a
    satellite only (an assist_satellite entity, no TTS from it): TTS and announcements need an
    entry each.  Both are served by this one loop, so ``max_jobs`` holds for them together."""

    def __init__(
        self,
        uri: str,
        assets: Callable[[], Assets],
        side: Any,
        *,
        limits: Limits | None = None,
        announcer: AudioAnnouncer | None = None,
        zeroconf_name: str | None = None,
        max_jobs: int = 2,
        backlog: int = 16,
        satellite: tuple[str, Satellite] | None = None,
    ) -> None:
        self.uri = uri
        self._satellite = satellite
        self._satellite_server: asyncio.AbstractServer | None = None
        self.satellite_address: Any = None
        """Where the satellite listener listens once started (as :attr:`address`)."""
        self._backend = _Backend(assets, side, announcer, Jobs(max_jobs, backlog))
        self._limits = limits or Limits()
        self._zeroconf_name = zeroconf_name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._sessions: set[asyncio.Task[None]] = set()
        self._thread: threading.Thread | None = None
        self._zeroconf: Any = None
        self.address: Any = None
        """Where it listens once started: (host, port) for TCP, the path for a Unix socket."""

    @property
    def jobs(self) -> Jobs:
        """Its synthesis jobs (wyoming/max_jobs, backlog)."""
        return self._backend.jobs

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The server's event loop (for work that must run on it, e.g. announcement replies)."""
        return self._loop

    def start(self) -> None:
        """Listen, on a thread of its own; EdgeTTSError when it cannot (address in use, bad uri)."""
        ready: Future[None] = Future()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="wyoming", daemon=True)
        self._thread.start()
        ready.result()
        _LOGGER.info("wyoming server listening on %s", self.uri)

    def _run(self, ready: Future[None]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._listen())
        except BaseException as exc:  # noqa: B036 - handed to start(), which raises it
            ready.set_exception(exc if isinstance(exc, EdgeTTSError) else EdgeTTSError(f"wyoming: {exc}"))
            loop.close()
            return
        ready.set_result(None)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self._shutdown())
            loop.close()

    async def _listen(self) -> None:
        self._server, self.address = await self._bind(self.uri, self._client)
        services = [(self._zeroconf_name, self.uri, self.address)]
        if self._satellite is not None:
            uri, satellite = self._satellite
            try:
                self._satellite_server, self.satellite_address = await self._bind(
                    uri, functools.partial(self._client, satellite=satellite)
                )
            except EdgeTTSError:
                self._server.close()
                raise
            services.append((f"{self._zeroconf_name}-satellite", uri, self.satellite_address))
        if self._zeroconf_name is not None:
            await self._advertise(
                [
                    (n or "edgetts", urlparse(u).hostname or "", a[1])
                    for n, u, a in services
                    if urlparse(u).scheme == "tcp"
                ]
            )

    async def _bind(self, uri: str, handler: Any) -> tuple[asyncio.AbstractServer, Any]:
        parsed = urlparse(uri)
        # One header line must fit the reader's buffer; the wire module refuses longer ones.
        limit = self._limits.header_bytes + 2
        try:
            if parsed.scheme == "unix":
                Path(parsed.path).unlink(missing_ok=True)
                return await asyncio.start_unix_server(handler, path=parsed.path, limit=limit), parsed.path
            if parsed.scheme == "tcp" and parsed.hostname and parsed.port is not None:
                server = await asyncio.start_server(
                    handler, host=parsed.hostname, port=parsed.port, limit=limit, reuse_address=True
                )
                return server, server.sockets[0].getsockname()[:2]
        except OSError as exc:
            raise EdgeTTSError(f"wyoming: cannot listen on {uri}: {exc.strerror or exc}") from None
        raise EdgeTTSError(f"wyoming: {uri!r} is not tcp://HOST:PORT or unix:///path")

    async def _advertise(self, services: list[tuple[str, str, int]]) -> None:
        from edgetts.daemon.inbound.wyoming.mdns import advertise  # zeroconf: only when asked for

        try:
            self._zeroconf = await advertise(services)
        except (OSError, EdgeTTSError) as exc:
            _LOGGER.warning("wyoming: not advertised over zeroconf: %s", exc)

    async def _client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, satellite: Satellite | None = None
    ) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # the first chunk leaves at once
        task = asyncio.current_task()
        if task is not None:
            self._sessions.add(task)
        try:
            await Session(reader, writer, self._backend, self._limits, satellite=satellite).run()
        except asyncio.CancelledError:
            pass  # the server is closing: its sessions end with it, quietly
        except Exception:  # one client's bug must not end the server for the others
            _LOGGER.exception("wyoming session failed")
        finally:
            if task is not None:
                self._sessions.discard(task)

    async def _shutdown(self) -> None:
        for server in (self._server, self._satellite_server):
            if server is not None:
                server.close()
        # Sessions, and announcements still waiting to answer `played`: nobody will hear it.
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        if others:
            await asyncio.wait(others, timeout=2.0)
        if self._zeroconf is not None:
            try:
                await self._zeroconf.async_close()
            except Exception as exc:  # shutting down: log, never raise
                _LOGGER.warning("zeroconf close: %s", exc)
        for uri in (self.uri, *(self._satellite[:1] if self._satellite else ())):
            parsed = urlparse(uri)
            if parsed.scheme == "unix" and os.path.exists(parsed.path):
                os.unlink(parsed.path)

    def close(self) -> None:
        """Stop listening, end every session (their side streams close), in bounded time."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            thread.join(_CLOSE_S)
            if thread.is_alive():
                _LOGGER.warning("wyoming server thread did not stop in %.0f s", _CLOSE_S)


__all__ = ["WyomingServer"]
