"""The daemon's events and status, brought onto the console's event loop: SSE clients and the recent log.

One thread reads one subscription of the daemon's feed and hands each item to
the event loop, which fans it out to every `/api/events` client (a slow one
loses its oldest items, never the daemon's time).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

# edgetts.daemon.inbound.services' EventFeed and FeedItem, by what they do: services imports this package
# (only when http is configured), so this package never imports services.
FeedItem = Any

_LOGGER = logging.getLogger(__name__)

MAX_CLIENTS = 16
"""`/api/events` streams at once; another gets 503 (each holds a socket and a queue)."""

CLIENT_BACKLOG = 256
"""Items a slow client may be behind; older ones are dropped for it."""

RECENT = 100
"""Events kept for a page that opens the log (GET /api/events/recent)."""

KEEPALIVE_S = 15.0
"""Seconds between SSE comments on a quiet stream, so proxies and browsers keep it open."""


class FeedPump:
    """Reads the daemon's feed on a thread of its own; the clients and the recent log live on the loop."""

    def __init__(self, feed: Any) -> None:
        self._feed = feed
        self._sub = feed.subscribe(maxlen=1024)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clients: set[asyncio.Queue[FeedItem | None]] = set()
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="edgetts-http-feed", daemon=True)

    @property
    def status(self) -> dict[str, Any] | None:
        return self._feed.status

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._sub.close()
        if self._thread.is_alive():
            self._thread.join(2.0)
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._dispatch, None)

    def _run(self) -> None:
        while not self._stop.is_set():
            item = self._sub.get(timeout=0.5)
            if item is None or self._loop is None:
                continue
            try:
                self._loop.call_soon_threadsafe(self._dispatch, item)
            except RuntimeError:  # the loop closed under us: shutting down
                return

    def _dispatch(self, item: FeedItem | None) -> None:
        if item is not None and item.kind == "event":
            self.recent.append(item.payload)
        for client in list(self._clients):
            if client.full():
                client.get_nowait()
            client.put_nowait(item)

    @property
    def full(self) -> bool:
        return len(self._clients) >= MAX_CLIENTS

    async def stream(self) -> AsyncIterator[FeedItem | None]:
        """Items as they come; None now and then on a quiet stream (time for a keep-alive)."""
        client: asyncio.Queue[FeedItem | None] = asyncio.Queue(CLIENT_BACKLOG)
        self._clients.add(client)
        try:
            while True:
                try:
                    item = await asyncio.wait_for(client.get(), KEEPALIVE_S)
                except asyncio.TimeoutError:
                    yield None
                    continue
                if item is None:  # the console is closing
                    return
                yield item
        finally:
            self._clients.discard(client)


__all__ = ["FeedPump"]
