"""What the daemon tells about each announcement: its events and the acknowledgement of its message.

Used from the loop only (admission and play-out); an event also changes the
status (queue depth, current announcement), so it marks :class:`Health`.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from edgetts.daemon.admission.intake import escape
from edgetts.daemon.admission.messages import Event
from edgetts.daemon.health import Health
from edgetts.daemon.inbound.message import AckHandle

_LOGGER = logging.getLogger(__name__)

#: Events logged as warnings: the announcement did not play as asked.
_WARNINGS = ("rejected", "failed", "expired", "fallback")
_MAX_TAGGED = 256
"""Ids whose events carry fields of their own (:meth:`Events.tag`), the oldest forgotten first."""


class Events:
    """Publishes events and acknowledges messages on the broker link."""

    def __init__(self, health: Health) -> None:
        self._health = health
        self._link: Any = None
        self._tags: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def tag(self, ident: str, **fields: Any) -> None:
        """Fields every later event of ``ident`` carries (a timetable's occurrence: its `schedule`)."""
        self._tags[ident] = fields
        self._tags.move_to_end(ident)
        while len(self._tags) > _MAX_TAGGED:
            self._tags.popitem(last=False)

    def attach(self, link: Any) -> None:
        """The broker link (made at start-up, after the assets: its Last Will names the voice)."""
        self._link = link

    def publish(
        self,
        ident: str,
        event: str,
        reason: str | None = None,
        latency_ms: float | None = None,
        ts: float | None = None,
        **more: Any,
    ) -> None:
        # An id or a reason may quote the payload: escaped, so it can split no log line and
        # always encodes as UTF-8 (a lone surrogate once crashed the daemon here, issue 13).
        more = {**self._tags.get(ident, {}), **more}
        ident = escape(ident, 160)
        reason = None if reason is None else escape(reason, 1000)
        if isinstance(more.get("detail"), str):
            more["detail"] = escape(more["detail"], 1000)
        ev = Event(
            id=ident,
            event=event,  # type: ignore[arg-type]
            ts=time.time() if ts is None else ts,
            reason=reason,
            latency_ms=latency_ms,
            **more,
        )
        log = _LOGGER.warning if event in _WARNINGS else _LOGGER.info
        log(
            "%s %s%s%s",
            event,
            ident,
            f": {reason}" if reason else "",
            f" ({more['detail']})" if more.get("detail") else "",
        )
        self._link.publish_event(ev)
        self._health.note_event(ev.id, event, ev.ts)
        self._health.changed()

    def fallback(self, ident: str, reason: str, clip: str, detail: str) -> None:
        self.publish(ident, "fallback", reason, clip=clip, detail=detail)

    def ack(self, acks: Iterable[AckHandle]) -> None:
        for handle in acks:
            self._link.ack(handle)


__all__ = ["Events"]
