"""Messages on the wire: announcements in, events and status out.

Each is a frozen dataclass with ``from_payload()`` / ``to_payload()``; a test
round-trips every one.  Field names are an interface (issue 3): keep them.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgetts.daemon.admission.intake import PayloadError, clean_text, decode_json, prescan
from edgetts.vocabulary import (
    CLIP_NAME_RE,
    EVENTS,
    MAX_DEADLINE_MS,
    NAME_RE,
    PRIORITIES,
    EventName,
    Priority,
    priority_rank,
)

_ANNOUNCEMENT_KEYS = frozenset(
    (
        "id",
        "text",
        "clip",
        "priority",
        "ttl",
        "expires_at",
        "voice",
        "volume",
        "chime",
        "repeat",
        "interrupt",
        "fallback",
        "deadline_ms",
        "play_at",
    )
)

MAX_PLAY_AT_OFFSET_S = 3600.0
"""`play_at` further than this from receipt, either way, is refused: most likely milliseconds
where seconds were meant, or a clock far off; a past one within it joins late in step (issue 19)."""


@dataclass(frozen=True)
class AnnounceLimits:
    """What the daemon's config allows in an announcement."""

    max_text_chars: int = 2000
    max_repeat: int = 5
    default_priority: Priority = "normal"

    @property
    def max_payload_bytes(self) -> int:
        # UTF-8 is at most 4 bytes a character; JSON escapes and the other keys fit in 4 KiB.
        return self.max_text_chars * 6 + 4096


def _new_id() -> str:
    return uuid.uuid4().hex[:16]


def _number(obj: dict[str, Any], key: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PayloadError(f"{key} must be a number")
    return float(value)


def _clip_name(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise PayloadError(f"{key} must be a string")
    if not CLIP_NAME_RE.match(value):
        raise PayloadError(f"{key} name {value[:80]!r} is not allowed (letters, digits, - and _ only)")
    return value


def _ident(obj: dict[str, Any], new_id: Callable[[], str]) -> str:
    ident = obj.get("id")
    if ident is None:
        return new_id()
    if not isinstance(ident, str) or not 1 <= len(ident) <= 128 or not ident.isprintable():
        raise PayloadError("id must be a printable string of 1-128 characters")
    return ident


def _expires_at(obj: dict[str, Any], now: float) -> float | None:
    """Unix seconds from `ttl` (relative) or `expires_at` (absolute); None when neither is given."""
    ttl = _number(obj, "ttl")
    expires_at = _number(obj, "expires_at")
    if ttl is not None and expires_at is not None:
        raise PayloadError("give ttl or expires_at, not both")
    if ttl is not None:
        if ttl <= 0:
            raise PayloadError("ttl must be > 0 seconds")
        return now + ttl
    return expires_at


@dataclass(frozen=True)
class Announcement:
    """One announcement as received on an announce topic."""

    id: str
    """Publisher's id (dedup key); generated for plain-text payloads."""

    text: str | None = None
    """What to say (exactly one of text and clip)."""

    clip: str | None = None
    """Name of a prerecorded clip to play instead of text."""

    priority: Priority = "normal"
    """emergency | high | normal | low."""

    expires_at: float | None = None
    """Unix seconds after which it must not start; None = the daemon's default TTL."""

    voice: str | None = None
    """Configured voice name; None = the default voice."""

    volume: float = 1.0
    """Linear gain 0-1, multiplied with audio/volume."""

    chime: str | None = None
    """Clip played before the announcement."""

    repeat: int = 1
    """Times the announcement is played."""

    interrupt: bool = False
    """Interrupt the current announcement when it is of the same or lower priority."""

    fallback: str | None = None
    """Clip played instead when speech cannot be produced in time; None = the configured rules."""

    deadline_ms: int | None = None
    """Milliseconds to the first speech audio before the fallback plays; None = fallback/deadline_ms."""

    play_at: float | None = None
    """Unix seconds at which its first sample leaves the speaker (synchronized zones, issue 19)."""

    @classmethod
    def from_payload(
        cls,
        payload: bytes,
        *,
        now: float,
        limits: AnnounceLimits = AnnounceLimits(),
        new_id: Callable[[], str] = _new_id,
    ) -> Announcement:
        """Parse an MQTT payload: plain UTF-8 text, or JSON when it starts with ``{`` (after a BOM).

        Raises :class:`PayloadError` only: the limits are checked on the raw
        bytes before anything is converted (edgetts.daemon.admission.intake, issue 13).
        """
        if len(payload) > limits.max_payload_bytes:
            raise PayloadError(f"payload too large ({len(payload)} bytes)")
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PayloadError(f"payload is not UTF-8 (byte {exc.start})") from None
        if "\x00" in text:
            raise PayloadError("payload contains NUL")
        text = text.removeprefix("\ufeff")  # a BOM some editors and Windows tools write first
        if text.lstrip().startswith("{"):
            prescan(payload)
            obj = decode_json(text)
            if not isinstance(obj, dict):
                raise PayloadError("JSON payload must be an object")
            return cls._from_json(obj, now=now, limits=limits, new_id=new_id)
        return cls(id=new_id(), text=_check_text(text, limits), priority=limits.default_priority)

    @classmethod
    def _from_json(
        cls, obj: dict[str, Any], *, now: float, limits: AnnounceLimits, new_id: Callable[[], str]
    ) -> Announcement:
        unknown = sorted(set(obj) - _ANNOUNCEMENT_KEYS)
        if unknown:
            raise PayloadError(f"unknown key {unknown[0][:40]!r}")
        ident = _ident(obj, new_id)
        text = obj.get("text")
        clip = _clip_name(obj, "clip")
        if text is not None:
            if not isinstance(text, str):
                raise PayloadError("text must be a string")
            text = _check_text(text, limits)
        if (text is None) == (clip is None):
            raise PayloadError("exactly one of text and clip is required")
        priority = obj.get("priority", limits.default_priority)
        if priority not in PRIORITIES:
            raise PayloadError(f"priority must be one of {', '.join(PRIORITIES)}")
        expires_at = _expires_at(obj, now)
        voice = obj.get("voice")
        if voice is not None and (not isinstance(voice, str) or not NAME_RE.match(voice)):
            raise PayloadError("voice must be a voice name")
        volume = _number(obj, "volume")
        if volume is None:
            volume = 1.0
        elif not 0.0 <= volume <= 1.0:
            raise PayloadError("volume must be 0-1")
        repeat = obj.get("repeat", 1)
        if isinstance(repeat, bool) or not isinstance(repeat, int):
            raise PayloadError("repeat must be an integer")
        if not 1 <= repeat <= limits.max_repeat:
            raise PayloadError(f"repeat must be 1-{limits.max_repeat}")
        interrupt = obj.get("interrupt", False)
        if not isinstance(interrupt, bool):
            raise PayloadError("interrupt must be true or false")
        deadline = obj.get("deadline_ms")
        if deadline is not None and (
            isinstance(deadline, bool) or not isinstance(deadline, int) or not 1 <= deadline <= MAX_DEADLINE_MS
        ):
            raise PayloadError(f"deadline_ms must be an integer 1-{MAX_DEADLINE_MS}")
        return cls(
            id=ident,
            text=text,
            clip=clip,
            priority=priority,
            expires_at=expires_at,
            voice=voice,
            volume=volume,
            chime=_clip_name(obj, "chime"),
            repeat=repeat,
            interrupt=interrupt,
            fallback=_clip_name(obj, "fallback"),
            deadline_ms=deadline,
            play_at=_play_at(obj, now),
        )

    def to_payload(self) -> bytes:
        """JSON, always (so the id survives), omitting fields at their defaults."""
        obj: dict[str, Any] = {"id": self.id}
        if self.text is not None:
            obj["text"] = self.text
        if self.clip is not None:
            obj["clip"] = self.clip
        obj["priority"] = self.priority
        for key in ("expires_at", "voice", "chime", "fallback", "deadline_ms", "play_at"):
            if getattr(self, key) is not None:
                obj[key] = getattr(self, key)
        if self.volume != 1.0:
            obj["volume"] = self.volume
        if self.repeat != 1:
            obj["repeat"] = self.repeat
        if self.interrupt:
            obj["interrupt"] = True
        return json.dumps(obj, ensure_ascii=False).encode("utf-8")

    @property
    def rank(self) -> int:
        return priority_rank(self.priority)


def _play_at(obj: dict[str, Any], now: float) -> float | None:
    play_at = _number(obj, "play_at")
    if play_at is not None and abs(play_at - now) > MAX_PLAY_AT_OFFSET_S:
        raise PayloadError(
            f"play_at {play_at:.3f} is {play_at - now:+.0f} s from now: Unix seconds within an hour are "
            "expected (not milliseconds)"
        )
    return play_at


def _check_text(text: str, limits: AnnounceLimits) -> str:
    raw = text
    text = clean_text(text).strip()
    if not text:
        raise PayloadError("text is empty" if not raw.strip() else "text is empty without its markup")
    if len(text) > limits.max_text_chars:
        raise PayloadError(f"text too long ({len(text)} > {limits.max_text_chars} characters)")
    return text


@dataclass(frozen=True)
class Event:
    """One announcement state change, published on `<prefix>/<device>/events`."""

    id: str
    event: EventName
    ts: float
    """Unix seconds."""

    reason: str | None = None
    latency_ms: float | None = None
    """On `started`: milliseconds from receipt to the first audio handed to the device."""

    clip: str | None = None
    """On `fallback`: the clip played instead of speech."""

    detail: str | None = None
    """On `fallback`: what went wrong (`reason`: vocabulary.FALLBACK_REASONS); on `queued`: spans not read as asked."""

    cached: bool | None = None
    """On `started`: true when the speech came from the phrase cache."""

    underruns: int | None = None
    gap_ms: float | None = None
    """On `finished`: times the sound card ran dry while it played, and milliseconds dry in all (issue 14)."""

    voice: str | None = None
    variant: str | None = None
    """On `started` of synthesized speech: the configured voice it was asked of, and the voice's
    `degrade_to` that spoke instead because the voice is too slow on this board (`reason` then says
    how slow, issue 14); no `variant` when the voice itself spoke."""

    timing_ms: dict[str, float] | None = None
    """On `started`: where ``latency_ms`` went, ms per hop in order (edgetts.daemon.playout.latency.HOPS)."""

    sync_error_ms: float | None = None
    """On `started` of an announcement with `play_at`: the estimated error of its first sample
    against `play_at` (this board's account: its clock, its device's delay), ms (issue 19)."""

    late_ms: float | None = None
    """On `started`: ms of its start skipped because its audio was not ready at `play_at` (it joined
    late, in step with the other speakers)."""

    schedule: str | None = None
    """On every event of an announcement from the timetable: its `schedule` entry's id (issue 44)."""

    def to_payload(self) -> bytes:
        obj: dict[str, Any] = {"id": self.id, "event": self.event, "ts": round(self.ts, 3)}
        if self.reason is not None:
            obj["reason"] = self.reason
        if self.latency_ms is not None:
            obj["latency_ms"] = round(self.latency_ms, 1)
        for key in (
            "clip",
            "detail",
            "cached",
            "timing_ms",
            "underruns",
            "gap_ms",
            "voice",
            "variant",
            "sync_error_ms",
            "late_ms",
            "schedule",
        ):
            if getattr(self, key) is not None:
                obj[key] = getattr(self, key)
        return json.dumps(obj, ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_payload(cls, payload: bytes) -> Event:
        obj = json.loads(payload)
        if obj.get("event") not in EVENTS:
            raise PayloadError(f"unknown event {obj.get('event')!r}")
        latency, underruns, gap = obj.get("latency_ms"), obj.get("underruns"), obj.get("gap_ms")
        return cls(
            id=obj["id"],
            event=obj["event"],
            ts=float(obj["ts"]),
            reason=obj.get("reason"),
            latency_ms=None if latency is None else float(latency),
            clip=obj.get("clip"),
            detail=obj.get("detail"),
            cached=obj.get("cached"),
            voice=obj.get("voice"),
            variant=obj.get("variant"),
            sync_error_ms=_opt_float(obj.get("sync_error_ms")),
            late_ms=_opt_float(obj.get("late_ms")),
            schedule=obj.get("schedule"),
            underruns=None if underruns is None else int(underruns),
            gap_ms=None if gap is None else float(gap),
            timing_ms=None if obj.get("timing_ms") is None else {k: float(v) for k, v in obj["timing_ms"].items()},
        )


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


__all__ = ["MAX_PLAY_AT_OFFSET_S", "AnnounceLimits", "Announcement", "Event", "PayloadError"]
