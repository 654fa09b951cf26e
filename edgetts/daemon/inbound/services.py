"""Services inside the daemon: servers for clients other than MQTT (Wyoming, HTTP: issues 17, 18).

A service runs on its own threads (or event loop) and, like the MQTT callback,
only parses and enqueues: the loop alone owns the state.  What a service may
do is all in its :class:`ServiceContext`: read the assets in use, announce and
stop through the loop, synthesize on the side lane (never delaying an
announcement), follow the events and status as published, and publish on MQTT.

:func:`build_services` makes the configured ones; a service's module is
imported only when it is configured, so a daemon without them never loads
their libraries.  :class:`Services` starts them after the daemon's own threads
and puts a start that fails into `degraded` under the service's name.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from edgetts.daemon.health import Health
from edgetts.daemon.inbound.control import Control, Verdict
from edgetts.daemon.inbound.message import Inbound
from edgetts.daemon.inbound.ready_audio import ReadyAudio
from edgetts.daemon.playout.client_synthesis import ClientSynthesis
from edgetts.errors import EdgeTTSError

if TYPE_CHECKING:
    from edgetts.config import Config
    from edgetts.daemon.assets import Assets

_LOGGER = logging.getLogger(__name__)

Reply = Callable[[Verdict], None]


@dataclass(frozen=True)
class FeedItem:
    kind: Literal["event", "status"]
    payload: dict[str, Any]
    """Exactly the JSON published on the events or status topic, decoded."""


class Subscription:
    """One reader of the feed; a slow reader loses the oldest items (counted in ``dropped``)."""

    def __init__(self, feed: EventFeed, maxlen: int) -> None:
        self._feed = feed
        self._items: collections.deque[FeedItem] = collections.deque()
        self._maxlen = maxlen
        self._ready = threading.Condition()
        self.dropped = 0
        self.closed = False

    def put(self, item: FeedItem) -> None:
        with self._ready:
            if len(self._items) >= self._maxlen:
                self._items.popleft()
                self.dropped += 1
            self._items.append(item)
            self._ready.notify_all()

    def get(self, timeout: float | None = None) -> FeedItem | None:
        """The next item, or None after ``timeout`` seconds (or once closed)."""
        with self._ready:
            if not self._items and not self.closed:
                self._ready.wait(timeout)
            return self._items.popleft() if self._items else None

    def close(self) -> None:
        self._feed.unsubscribe(self)
        with self._ready:
            self.closed = True
            self._ready.notify_all()


class EventFeed:
    """Every event and status the daemon publishes, for the services that show them (SSE, HA sensors)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: list[Subscription] = []
        self._status: dict[str, Any] | None = None

    def subscribe(self, maxlen: int = 256) -> Subscription:
        sub = Subscription(self, maxlen)
        with self._lock:
            self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    @property
    def status(self) -> dict[str, Any] | None:
        """The last status published (as on the retained status topic), None before the first."""
        return self._status

    def publish(self, kind: Literal["event", "status"], payload: bytes) -> None:
        """From the loop: one message as it went to the broker."""
        try:
            item = FeedItem(kind, json.loads(payload))
        except ValueError:  # never: the daemon's own JSON
            _LOGGER.error("unreadable %s payload not fed to services", kind)
            return
        with self._lock:
            if kind == "status":
                self._status = item.payload
            subs = list(self._subs)
        for sub in subs:
            sub.put(item)


class TapLink:
    """The broker link, with every event and status also fed to the services."""

    def __init__(self, link: Any, feed: EventFeed) -> None:
        self._link, self._feed = link, feed

    def publish_event(self, event: Any) -> None:
        self._link.publish_event(event)
        self._feed.publish("event", event.to_payload())

    def publish_status(self, status: Any) -> None:
        self._link.publish_status(status)
        self._feed.publish("status", status.to_payload())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._link, name)


@dataclass(frozen=True)
class ServiceContext:
    """What a service may use; every callable is safe from any thread."""

    assets: Callable[[], Assets]
    """The assets in use now (config, voices, clips, cache, text options): swapped whole on reload, so
    call it each time and never change what it returns."""
    announce: Callable[[bytes, Reply | None], None]
    """A payload exactly as on the announce topic, admitted by the loop like an MQTT message; the reply
    is called once, from the loop's thread (it must not block)."""
    control: Callable[[Control], None]
    side: ClientSynthesis
    feed: EventFeed
    publish: Callable[[str, bytes, bool], None]
    """MQTT publish (topic, payload, retain), QoS 1: paho queues it while the broker is away."""
    announce_audio: Callable[[bytes, ReadyAudio, Reply | None], None] | None = None
    """As ``announce``, with the audio given (edgetts.daemon.inbound.ready_audio: Wyoming announce, issue 17); the
    payload's text is then only the announcement's label.  None where no loop plays it."""
    queue: Callable[[], tuple[dict[str, Any], ...]] = tuple
    """What is queued, in play order (edgetts.daemon.admission.scheduler.Scheduler.snapshot): read-only, any thread."""

    @classmethod
    def of_daemon(
        cls,
        topic: str,
        assets: Callable[[], Assets],
        inbox: Callable[[Any], None],
        side: ClientSynthesis,
        feed: EventFeed,
        link: Any,
        queue: Callable[[], tuple[dict[str, Any], ...]] = tuple,
    ) -> ServiceContext:
        """The daemon's context: announcements go into its inbox as if received on ``topic``."""
        return cls(
            assets=assets,
            announce=lambda payload, reply: inbox(service_inbound(topic, payload, reply)),
            control=inbox,
            side=side,
            feed=feed,
            publish=lambda where, payload, retain: link.publish(where, payload, retain=retain),
            queue=queue,
            announce_audio=lambda payload, audio, reply: inbox(
                dataclasses.replace(service_inbound(topic, payload, reply), audio=audio)
            ),
        )


class Service(Protocol):
    name: str
    """Its `degraded` key when it cannot start."""

    def start(self, ctx: ServiceContext) -> None:
        """Start its threads and return; raise EdgeTTSError with the reason if it cannot run."""

    def close(self) -> None:
        """Stop, in bounded time (at shutdown, from the loop's thread)."""


def service_inbound(topic: str, payload: bytes, reply: Reply | None) -> Inbound:
    """A service's announcement as the loop admits it: nothing to acknowledge, never a redelivery
    (so a payload without an id gets one of its own, from the message's serial), and the reply."""
    return Inbound(
        topic=topic,
        payload=payload,
        ack=None,
        dup=False,
        received_at=time.time(),
        received_mono=time.monotonic(),
        reply=reply,
    )


def build_services(config: Config) -> list[Service]:
    """The services ``config`` turns on (each module imported only when configured)."""
    services: list[Service] = []
    if config.wyoming.enabled:
        from edgetts.daemon.inbound.wyoming.service import WyomingService

        services.append(WyomingService(config))
    if config.homeassistant.discovery:
        from edgetts.daemon.inbound.homeassistant.service import HomeAssistantService

        services.append(HomeAssistantService(config))
    if config.http.enabled:
        from edgetts.daemon.inbound.http import HttpService

        services.append(HttpService(config.http))
    return services


class Services:
    """The daemon's running services: started once, closed at shutdown (a reload does not restart them)."""

    def __init__(self, services: list[Service], health: Health) -> None:
        self._services = services
        self._health = health
        self._started: list[Service] = []

    def start(self, ctx: ServiceContext) -> None:
        for service in self._services:
            try:
                service.start(ctx)
            except EdgeTTSError as exc:
                _LOGGER.error("%s: %s", service.name, exc)
                self._health.set(service.name, str(exc))  # type: ignore[arg-type]
                continue
            except Exception as exc:  # a bug in one service must not keep the announcer from running
                _LOGGER.exception("%s did not start", service.name)
                self._health.set(service.name, f"did not start: {type(exc).__name__}: {exc}")  # type: ignore[arg-type]
                continue
            self._started.append(service)
            _LOGGER.info("%s started", service.name)

    def close(self) -> None:
        for service in reversed(self._started):
            began = time.monotonic()
            try:
                service.close()
            except Exception:
                _LOGGER.exception("%s did not close cleanly", service.name)
            _LOGGER.debug("%s closed in %.2f s", service.name, time.monotonic() - began)
        self._started.clear()


__all__ = [
    "EventFeed",
    "FeedItem",
    "Reply",
    "Service",
    "ServiceContext",
    "Services",
    "Subscription",
    "TapLink",
    "build_services",
    "service_inbound",
]
