"""Admission: an inbound payload becomes a queued entry, or is said to be refused.

On the loop: parse, prepare its text (SSML parsed and text normalised here,
once: the entry keeps the result for the phrase cache and the voice), check
the names it uses against the assets in force, drop a redelivery or a duplicate id, apply the time to live, offer
it to the scheduler (which may displace a less urgent one).  Every outcome is
an event, and a message refused here is acknowledged at once (so the broker
does not deliver it again); one queued is acknowledged when it ends.
Whether a new entry interrupts the one playing is decided here too
(:func:`preempts`); play-out carries it out.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from edgetts.config import Config
from edgetts.daemon.admission.intake import decode_json, escape, prescan
from edgetts.daemon.admission.journal import IntakeJournal
from edgetts.daemon.admission.messages import AnnounceLimits, Announcement, PayloadError
from edgetts.daemon.admission.scheduler import Entry, Scheduler
from edgetts.daemon.assets import Assets
from edgetts.daemon.events import Events
from edgetts.daemon.inbound.control import Verdict
from edgetts.daemon.inbound.message import Inbound
from edgetts.daemon.languages import LanguageChoice, mixed
from edgetts.daemon.playout import sync
from edgetts.daemon.playout.latency import HopStamps
from edgetts.errors import UnspeakableTextError
from edgetts.text.prepare import Prepared
from edgetts.text.ssml import SSMLError

_LOGGER = logging.getLogger(__name__)

#: Larger payloads were refused for their size; their id is not worth decoding.
_MAX_GUESS_BYTES = 1 << 20
_PLAIN_ID = re.compile(rb'"id"\s*:\s*"([^"\\\x00-\x1f]{1,128})"')


def admit(
    msg: Inbound,
    assets: Assets,
    scheduler: Scheduler,
    in_hand: Sequence[Entry],
    events: Events,
    journal: IntakeJournal | None = None,
) -> Entry | None:
    """The entry ``msg`` became, now queued; None when it was refused, expired or already in hand.

    ``in_hand``: the entries playing (or stopping), which a redelivery or a
    duplicate id may belong to as much as the queued ones.  Nothing in a
    message makes this raise (issue 13): a payload that cannot be read is
    rejected with the reason and acknowledged.  ``journal``: the second line of
    defence (edgetts.daemon.admission.journal); its entry is removed only when the intake
    returns, so an exception that still escapes, or a death, is counted.
    """
    hops = HopStamps(msg.received_mono, inbox=time.monotonic())
    intake = journal.begin(msg.topic, msg.payload) if journal is not None else None
    entry = None
    if intake is not None and intake.poison:
        _LOGGER.error("message on %s rejected as poison (%d deaths while reading it)", escape(msg.topic), intake.deaths)
        _refuse(msg, events, f"poison: the daemon died {intake.deaths} times while reading this message")
    else:
        read = _read(msg, assets, scheduler, events, hops)
        if read is not None:
            try:
                entry = _place(msg, read, assets, scheduler, in_hand, events, hops)
            except Exception as exc:  # a bug in dedup or the queue: rejected now, not at the second death
                _LOGGER.error("placing a message on %s failed", escape(msg.topic), exc_info=True)
                _refuse(msg, events, f"cannot be queued: {type(exc).__name__}: {exc}")
    if journal is not None and intake is not None:
        journal.finish(intake)
    return entry


def _read(
    msg: Inbound, assets: Assets, scheduler: Scheduler, events: Events, hops: HopStamps | None = None
) -> tuple[Announcement, Prepared | None] | None:
    """The announcement of ``msg`` and its text prepared; None when it was refused (said and acknowledged)."""
    if msg.retain and not assets.config.mqtt.accept_retained:
        # It would play again on every restart and reconnect (issue 13).
        _refuse(msg, events, "retained message on an announce topic (mqtt/accept_retained is off)")
        return None
    try:
        now = time.time()
        return parse(msg.payload, msg.received_at, assets, new_id=lambda: message_id(msg, scheduler, now), hops=hops)
    except PayloadError as exc:
        reason = str(exc)
    except Exception as exc:  # a bug, not the publisher's: still rejected, never a crash loop
        _LOGGER.error("reading a message on %s failed", escape(msg.topic), exc_info=True)
        reason = f"cannot be read: {type(exc).__name__}: {exc}"
    _refuse(msg, events, reason)
    return None


def _refuse(msg: Inbound, events: Events, reason: str) -> None:
    """Say `rejected` (id and reason escaped by Events) and acknowledge, whatever publishing does."""
    ident = guess_id(msg.payload)
    try:
        events.publish(ident, "rejected", reason)
    except Exception:  # the event is lost; the message must still be acknowledged
        _LOGGER.error("rejected event not published", exc_info=True)
    events.ack(msg.acks())
    tell(msg, Verdict(ident, False, reason))


def tell(msg: Inbound, verdict: Verdict) -> None:
    """Give a service's message (HTTP, Wyoming) admission's verdict; a broken reply never stops the loop."""
    if msg.reply is None:
        return
    try:
        msg.reply(verdict)
    except Exception:
        _LOGGER.error("a service's reply failed", exc_info=True)


def _place(
    msg: Inbound,
    read: tuple[Announcement, Prepared | None],
    assets: Assets,
    scheduler: Scheduler,
    in_hand: Sequence[Entry],
    events: Events,
    hops: HopStamps | None = None,
) -> Entry | None:
    """Drop a redelivery or a duplicate id, else offer the new entry to the scheduler."""
    ann, text = read
    now = time.time()
    held = [*in_hand, *scheduler]
    # A redelivery of a message still in hand (after a reconnect) is the same message.
    if msg.dup:
        for entry in held:
            if msg.ack in entry.acks:
                _LOGGER.info("redelivery of %s ignored", entry.id)
                return None
    if scheduler.is_duplicate(ann.id, now):
        tell(msg, Verdict(ann.id, True, "duplicate id: already queued, playing or played", duplicate=True))
        holder = next((entry for entry in held if entry.id == ann.id), None)
        if holder is not None:  # still queued or playing: ack with it when it ends
            holder.acks.extend(msg.acks())
        else:
            events.ack(msg.acks())
        _LOGGER.info("duplicate id %s ignored", ann.id)
        return None
    entry = Entry(
        ann,
        msg.received_at,
        _expires_at(ann, msg, assets.config),
        msg.acks(),
        received_mono=msg.received_mono,
        prepared=text,
        hops=hops,
        audio=msg.audio,
        play_at=sync.play_at(ann, msg.topic, msg.received_at, assets.config),
    )
    return _offer(entry, now, scheduler, events, lambda reason: tell(msg, Verdict(ann.id, reason is None, reason)))


def _expires_at(ann: Announcement, msg: Inbound, config: Config) -> float | None:
    if ann.expires_at is None and config.queue.default_ttl_s is not None:
        return msg.received_at + config.queue.default_ttl_s
    return ann.expires_at


def _offer(
    entry: Entry, now: float, scheduler: Scheduler, events: Events, told: Callable[[str | None], None]
) -> Entry | None:
    """Queue ``entry``; ``told`` hears None when it was queued, else the reason of its event."""
    if entry.expired(now):
        scheduler.ended(entry.id, now)
        events.publish(entry.id, "expired", "expired before it was queued")
        events.ack(entry.acks)
        told("expired before it was queued")
        return None
    admission = scheduler.offer(entry, now)
    if not admission.accepted:
        events.publish(entry.id, "rejected", admission.reason)
        events.ack(entry.acks)
        told(admission.reason or "rejected")
        return None
    warnings = entry.prepared.warnings if entry.prepared is not None else ()
    events.publish(entry.id, "queued", detail="; ".join(warnings) if warnings else None)
    told(None)
    if admission.displaced is not None:
        gone = admission.displaced  # never played: a later retry with its id is welcome
        events.publish(gone.id, "rejected", "queue full: displaced by a more urgent announcement")
        events.ack(gone.acks)
    return entry


def parse(
    payload: bytes,
    received_at: float,
    assets: Assets,
    new_id: Callable[[], str] | None = None,
    hops: HopStamps | None = None,
) -> tuple[Announcement, Prepared | None]:
    """The announcement of ``payload`` if this daemon can play it, and its text prepared (None
    without text); raises PayloadError saying why not.

    ``new_id``: the id of an announcement that names none (default: a random one); ``hops``:
    stamped when the payload is read and when its text is prepared.
    """
    q = assets.config.queue
    limits = AnnounceLimits(q.max_text_chars, q.max_repeat, q.default_priority)
    ann = (
        Announcement.from_payload(payload, now=received_at, limits=limits)
        if new_id is None
        else Announcement.from_payload(payload, now=received_at, limits=limits, new_id=new_id)
    )
    if hops is not None:
        hops.parse = time.monotonic()
    named = None if ann.voice is None else assets.voice_named(ann.voice)
    if named is not None and named != ann.voice:  # an installed voice's name: the configured voice speaking with it
        ann = replace(ann, voice=named)
    text: Prepared | None
    if ann.voice is None and ann.text is not None and assets.languages is not None:
        ann, text = by_language(ann, ann.text, assets, assets.languages)
    else:
        text = None if ann.text is None else prepared(ann.text, assets, ann.voice or assets.config.voice.name)
    if hops is not None:
        hops.prepare = time.monotonic()
    configured = assets.config.all_voices()
    if ann.voice is not None and ann.voice not in configured:
        raise PayloadError(f"unknown voice {ann.voice!r} (known: {', '.join(configured)})")
    for kind in ("clip", "chime", "fallback"):
        name = getattr(ann, kind)
        if name is not None and name not in assets.clips:
            raise PayloadError(f"unknown {kind} {name!r}")
    return ann, text


def by_language(ann: Announcement, text: str, assets: Assets, choice: LanguageChoice) -> tuple[Announcement, Prepared]:
    """`voice.model: auto` (issue 43): ``ann`` given the voice of its text's language (of its first
    run, per sentence) and its text prepared by it, or run by run by each run's voice."""
    runs = choice.runs(text)
    ann = replace(ann, voice=runs[0][0])
    if len(runs) == 1:
        return ann, prepared(text, assets, ann.voice)
    _LOGGER.debug("%s: spoken by %s", ann.id, ", ".join(name for name, _ in runs))
    return ann, mixed(text, [(name, prepared(part, assets, name)) for name, part in runs])


def prepared(text: str, assets: Assets, voice: str | None = None) -> Prepared:
    """``text`` prepared as ``voice`` (default: the default voice) reads it, with the assets' text
    options in its language (the SSML and script checks); PayloadError for bad SSML and for text in
    a script the voice cannot speak (issue 16)."""
    try:
        return assets.prepare(voice or assets.config.voice.name, text)
    except SSMLError as exc:  # rejected now, never read aloud as tags later
        raise PayloadError(f"bad SSML: {exc}") from None
    except UnspeakableTextError as exc:  # read out, it would be letter names ("Chinese letter ...")
        raise PayloadError(f"unspeakable text: {exc}") from None


def message_id(msg: Inbound, scheduler: Scheduler, now: float) -> str:
    """The id of an announcement that names none (plain text, JSON without `id`): 16 hex digits.

    The same for every delivery of one MQTT message, so a redelivery after an
    acknowledgement was lost (broker outage, restart: issue 13) is recognised as
    a duplicate: a digest of topic, packet id (a service's message: its serial) and payload.  The broker reuses
    packet ids (after 65535 messages, or from 1 when it lost the session), so a
    first delivery (DUP flag clear) whose digest is already known is a new
    message that happens to look like an old one: it gets an id of its own.
    """
    digest = hashlib.blake2b(digest_size=8)
    for part in (msg.topic.encode("utf-8", "surrogatepass"), msg.delivery.encode(), msg.payload):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    if not msg.dup and scheduler.is_duplicate(digest.hexdigest(), now):
        digest.update(repr(msg.received_at).encode())
    return digest.hexdigest()


def preempts(new: Announcement, playing: Announcement) -> bool:
    """Whether ``new`` interrupts ``playing``: an emergency anything less urgent, `interrupt` its equals too."""
    return (new.priority == "emergency" and playing.rank > new.rank) or (new.interrupt and new.rank <= playing.rank)


def expire(scheduler: Scheduler, events: Events) -> None:
    """Queued entries whose time to live ran out: said, acknowledged, dropped."""
    for entry in scheduler.expire(time.time()):
        events.publish(entry.id, "expired", "its time to live ran out while queued")
        events.ack(entry.acks)


def guess_id(payload: bytes) -> str:
    """The id of a rejected JSON payload, when one can be read (escaped); else "". Never raises."""
    if len(payload) > _MAX_GUESS_BYTES:
        return ""
    try:
        text = payload.decode("utf-8").removeprefix("\ufeff")
        prescan(payload)
        obj = decode_json(text)
    except (PayloadError, UnicodeDecodeError):
        # Not decodable as a whole: an id that is a plain string still tells the publisher which one.
        found = _PLAIN_ID.search(payload[:_MAX_GUESS_BYTES])
        return escape(found.group(1).decode("utf-8", "replace"), 160) if found else ""
    ident = obj.get("id") if isinstance(obj, dict) else None
    return escape(ident[:128], 160) if isinstance(ident, str) else ""


__all__ = ["admit", "expire", "guess_id", "message_id", "parse", "preempts", "prepared"]
