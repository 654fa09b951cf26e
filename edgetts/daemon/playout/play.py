"""Play-out: the announcement whose turn it is, from its source to the player's last report.

:func:`edgetts.daemon.playout.source_choice.choose_source` decides where an announcement's
audio comes from; play-out hands it to the player or the synthesis thread,
and plays the fallback clip when the first speech misses its deadline
(issue 6: never silent).  The player's
reports end each announcement: its event, its acknowledgement, and after a
preemption its return to the queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgetts.audio.job import PlaybackJob
from edgetts.audio.player import Player, PlayerReport
from edgetts.audio.timed_start import TimedStart
from edgetts.daemon.admission.admit import preempts
from edgetts.daemon.admission.intake import PayloadError
from edgetts.daemon.admission.scheduler import Entry, Scheduler
from edgetts.daemon.assets import Assets
from edgetts.daemon.events import Events
from edgetts.daemon.health import Health
from edgetts.daemon.inbound.control import Control, parse_control
from edgetts.daemon.inbound.message import Inbound
from edgetts.daemon.languages import MixedPrepared
from edgetts.daemon.pacing.degrade import Degrade
from edgetts.daemon.playout import sync
from edgetts.daemon.playout.clips import Clip
from edgetts.daemon.playout.source_choice import (
    Recorded,
    Synthesis,
    Unplayable,
    choose_source,
    feed_audio,
    prepared_text,
    speech_config,
)
from edgetts.daemon.playout.synthesis import FALLBACK_SENTENCE, FallbackUsed, Prefetch, Synthesizer, SynthRequest
from edgetts.runtime.clock import clock_health

_LOGGER = logging.getLogger(__name__)

SYNC_CLIP_MARGIN_S = 0.1
"""sync.late `fallback`: the clip takes over this long before `play_at` (the loop's checks come
this often at least), so it is in hand when the first sample is due."""


# ----------------------------------------------------------------- play-out


@dataclass(eq=False)
class Running:
    """An announcement handed to the player, until its job's last report."""

    entry: Entry
    job: PlaybackJob
    preempted: bool = False
    deadline_mono: float | None = None
    """When the first speech must be there, else the fallback clip plays (None: no deadline)."""
    fallback: Clip | None = None
    fallback_done: bool = False
    cached: bool = False
    spoken: dict[str, str] | None = None
    """`voice`, and `variant` with its `reason`, of the `started` event of synthesized speech."""
    cancelled: str | None = None
    """Stopped or cancelled by a control message (edgetts.daemon.inbound.control): its `cancelled` reason."""
    clock: str | None = None
    """A synchronized one on a board whose clock is not synchronized: why (its `started` detail)."""
    started: bool = False
    """The player said `started` (a synchronized one whose every sample was past never does)."""


class Playout:
    """The loop's side of playing: which announcement plays, and what the player says of it."""

    def __init__(
        self, scheduler: Scheduler, synth: Synthesizer, events: Events, health: Health, assets: Callable[[], Assets]
    ) -> None:
        self._scheduler, self._synth, self._events, self._health = scheduler, synth, events, health
        self._assets = assets
        self.player: Player | None = None
        """Set at start-up, once the device was probed."""
        self.stopping = False
        """The daemon is stopping: nothing new starts, and what it interrupts is not acknowledged."""
        self.current: Running | None = None
        self._running: dict[PlaybackJob, Running] = {}
        self.degrade = Degrade(health)

    def in_hand(self) -> list[Entry]:
        """The entries with a job on the player (playing, or fading out after a preemption)."""
        return [running.entry for running in self._running.values()]

    def stop_all(self) -> None:
        for running in list(self._running.values()):
            running.job.stop()
            # Its model run ends now: a run still going when the interpreter exits aborts it
            # (onnxruntime: "terminate called", exit -6 after SIGTERM mid-piece).
            self._synth.abandon(running.job)

    def pending_deadline(self) -> float | None:
        """Monotonic time the current announcement's first speech is due by, while it is awaited."""
        cur = self.current
        if cur is None or cur.fallback_done:
            return None
        return cur.deadline_mono

    # ----------------------------------------------------------- start
    def admitted(self, entry: Entry) -> None:
        """``entry`` was queued: interrupt the one playing if it must, get it ready if it is next."""
        cur = self.current
        if cur is not None and not cur.preempted and preempts(entry.announcement, cur.entry.announcement):
            _LOGGER.info("%s interrupts %s", entry.id, cur.entry.id)
            cur.preempted = True
            cur.job.stop()
            self._synth.abandon(cur.job)  # its model run ends now, not at the end of its piece
            self.current = None  # the next one starts now; the player fades the old one first
        if self.current is not None and self._scheduler.peek() is entry:
            self.prefetch_next()  # it plays next: get its first sentence ready meanwhile

    def start_next(self) -> None:
        """Hand the most urgent queued announcement to the player, when none is playing."""
        if self.current is not None or self.stopping or self.player is None:
            return
        entry = self._scheduler.pop()
        if entry is None:
            return
        if entry.hops is not None:
            entry.hops.queue = time.monotonic()
        assets = self._assets()
        self.degrade.refresh(assets)
        source = choose_source(entry, assets, self.degrade)
        if isinstance(source, Unplayable):
            self._finish(entry, "failed", source.reason)
            return
        ann = entry.announcement
        chime = assets.clips.get(ann.chime) if ann.chime else None
        job = PlaybackJob(entry, self.player.converter, assets.config.audio.volume * ann.volume)
        running = Running(entry, job)
        if entry.play_at is not None:
            job.timed = TimedStart(entry.play_at, assets.config.audio.output_delay_ms / 1000.0)
            running.clock = self._clock_checked()
        self._running[job] = running
        self.current = running
        self.player.submit(job)
        self._health.changed()
        if isinstance(source, Synthesis):
            self._synthesize(running, source, chime, assets)
        else:
            self._play_recorded(running, source, chime)
        self.prefetch_next()

    def _play_recorded(self, running: Running, source: Recorded, chime: Clip | None) -> None:
        running.cached = source.cached
        if source.unavailable is not None:
            assert source.fallback is not None
            running.fallback, running.fallback_done = source.fallback, True
            self._events.fallback(running.entry.id, "voice_unavailable", source.fallback.name, source.unavailable)
        feed_audio(
            running.job,
            chime,
            source.sentences,
            source.rate,
            running.entry.announcement.repeat,
            source.start,
            source.gain,
        )

    def _synthesize(self, running: Running, source: Synthesis, chime: Clip | None, assets: Assets) -> None:
        entry, ann = running.entry, running.entry.announcement
        running.fallback = source.fallback
        running.spoken = {"voice": source.name}
        if source.variant is not None:
            running.spoken.update(variant=source.variant[0], reason=source.variant[1])
        if source.fallback is not None:
            running.deadline_mono = self._deadline(entry, assets)
        self._synth.submit(
            SynthRequest(
                job=running.job,
                voice=source.voice,
                text=source.text,
                config=source.config,
                chime=chime,
                repeat=ann.repeat,
                start=(entry.repeats_done, entry.resume_sentence),
                fallback=source.fallback,
                gain=source.gain,
                cache=assets.cache,
                cache_key=source.cache_key,
                speed_key=source.speed_key,
                hops=entry.hops,
                whole=source.whole,
            )
        )

    @staticmethod
    def _deadline(entry: Entry, assets: Assets) -> float | None:
        """Monotonic time the first speech must be there by, else the fallback clip plays.

        A synchronized announcement (sync.late `join`) has none: late, it joins the other speakers
        in step; with `fallback`, its clip stands in when the speech is not there shortly before
        `play_at` (the clip then starts at `play_at` itself)."""
        now = time.monotonic()
        if entry.play_at is None:
            deadline_ms = entry.announcement.deadline_ms or assets.config.fallback.deadline_ms
            return now + deadline_ms / 1000.0
        if assets.config.sync.late != "fallback":
            return None
        return now + max(0.0, entry.play_at - time.time() - SYNC_CLIP_MARGIN_S)

    def _clock_checked(self) -> str | None:
        """The clock's problem for a synchronized announcement (also in `degraded`), or None."""
        problem = sync.clock_problem(clock_health())
        if problem is None:
            self._health.clear("clock")
        else:
            self._health.set("clock", problem)
        return problem

    def prefetch_next(self) -> None:
        """Have the synthesis thread start on the first sentence of the next queued announcement."""
        nxt = self._scheduler.peek()
        if nxt is None or nxt.announcement.text is None or nxt.resume_sentence or nxt.repeats_done:
            return
        assets = self._assets()
        name = nxt.announcement.voice or assets.config.voice.name
        voice = assets.voices.get(name)
        settings = assets.config.all_voices().get(name)
        if voice is None or settings is None:
            return
        text = prepared_text(nxt, assets)
        if text is None or isinstance(text, MixedPrepared):
            return  # (a text of several voices starts with its first run's: no one voice's prefetch)
        config = speech_config(nxt, settings)  # (a synchronized one's too: ready well before play_at)
        key = assets.cache_key(name, text, config)
        if key is not None and assets.cache is not None and key in assets.cache:
            return  # it plays from the cache: nothing to synthesize
        if nxt.play_at is None and (faster := self.degrade.variant_for(name, assets)) is not None:
            voice, config = faster[0].voice, faster[0].config
        self._synth.submit(Prefetch((nxt.id, id(voice), text), voice, text, config, whole=nxt.play_at is not None))

    def control_message(self, msg: Inbound) -> None:
        """A message on the control topic: carried out, or rejected with the reason; acknowledged."""
        try:
            ctl = parse_control(msg.payload, "mqtt")
        except PayloadError as exc:
            self._events.publish("control", "rejected", f"control: {exc}")
        else:
            ended = self.control(ctl)
            _LOGGER.info("control %s%s from mqtt: %d ended", ctl.cmd, f" {ctl.id}" if ctl.id else "", ended)
        self._events.ack(msg.acks())

    def control(self, ctl: Control) -> int:
        """Stop what plays, or cancel one announcement or all (edgetts.daemon.inbound.control); how many it ended.

        A playing one ends with the player's fade and gets its `cancelled` event from the
        player's last report; a queued one at once.
        """
        ended = 0
        if ctl.cmd == "cancel":
            for entry in self._scheduler.remove(ctl.id):
                self._finish(entry, "cancelled", ctl.reason)
                ended += 1
        for running in list(self._running.values()):
            if ctl.cmd == "stop":
                wanted = running is self.current
            else:  # (also one fading out after a preemption: else it would go back into the queue)
                wanted = ctl.id is None or ctl.id == running.entry.id
            if not wanted or running.cancelled is not None:
                continue
            running.cancelled = ctl.reason
            running.job.stop()
            self._synth.abandon(running.job)
            if self.current is running:
                self.current = None  # the next one starts once this one has faded
            ended += 1
        if ended:
            self._health.changed()
        return ended

    # ----------------------------------------------------- while it plays
    def check_deadline(self) -> None:
        """The first speech of the announcement playing is late: its fallback clip plays instead."""
        cur = self.current
        if cur is None or cur.deadline_mono is None or cur.fallback_done or cur.fallback is None:
            return
        if time.monotonic() < cur.deadline_mono:
            return
        cur.deadline_mono = None
        if cur.job.speech_committed or cur.job.closed:  # (speech held for its lead is not heard yet)
            return
        clip = cur.fallback
        ann = cur.entry.announcement
        if cur.job.take_over(
            clip.audio,
            clip.rate,
            (cur.job.position[0], FALLBACK_SENTENCE),
            before_speech=True,
            times=ann.repeat - cur.job.position[0],
            gain=clip.gain,
        ):
            cur.fallback_done = True
            ms = ann.deadline_ms or self._assets().config.fallback.deadline_ms
            detail = (
                f"no speech within {ms} ms (deadline_ms)"
                if cur.entry.play_at is None
                else "no speech ready at play_at (sync/late: fallback)"
            )
            self._events.fallback(cur.entry.id, "deadline", clip.name, detail)

    def on_fallback_used(self, msg: FallbackUsed) -> None:
        running = self._running.get(msg.job)
        if running is not None and not running.fallback_done:
            running.fallback_done = True
            assert running.fallback is not None
            self._events.fallback(running.entry.id, msg.reason, running.fallback.name, msg.detail)

    # ----------------------------------------------------- player reports
    def on_report(self, report: PlayerReport) -> None:
        if report.job is None:
            self._device_report(report)
            return
        running = self._running.get(report.job)
        if running is None:
            return
        entry = running.entry
        if report.kind == "started":
            running.started = True
            latency = (report.at_mono - entry.received_mono) * 1000.0
            # ts = when the first audio was handed to the device, not when we got round to saying so
            ts = time.time() - (time.monotonic() - report.at_mono)
            timing = entry.hops.timing_ms(report.at_mono) if entry.hops is not None else None
            self._events.publish(
                entry.id,
                "started",
                latency_ms=latency,
                ts=ts,
                cached=True if running.cached else None,
                timing_ms=timing,
                **(running.spoken or {}),
                **_sync_fields(running, report),
            )
            return
        del self._running[report.job]
        if self.current is running:
            self.current = None
        self._health.count_underruns(report.underruns, report.gap_ms)
        if report.kind == "finished" and entry.play_at is not None and not running.started:
            # Joined so late that all of it was past: nothing was heard, in step or otherwise.
            self._finish(entry, "expired", "its audio was ready only after the whole of it was due (play_at)")
        elif report.kind == "finished":
            self._finish(entry, "finished", underruns=report.underruns, gap_ms=round(report.gap_ms, 1))
        elif report.kind == "failed":
            self._finish(entry, "failed", report.reason)
        elif report.kind == "stopped" and running.cancelled is not None:
            self._finish(entry, "cancelled", running.cancelled)
        elif report.kind == "stopped" and not self.stopping:  # stopping: not acked, the broker delivers it again
            self._stopped(entry, report.position)

    def _device_report(self, report: PlayerReport) -> None:
        if report.kind == "device_failed":
            self._health.set("audio", report.reason or "audio device failed")
        elif report.kind == "device_ok":
            self._health.clear("audio")
        elif report.kind == "thread_setup":
            if report.reason:
                self._health.set("audio_thread", report.reason)
            else:
                self._health.clear("audio_thread")
        self._health.changed()

    def _stopped(self, entry: Entry, position: tuple[int, int]) -> None:
        """A preempted announcement: back into the queue (from its sentence) or dropped."""
        rep, sentence = position
        if self._assets().config.queue.on_preempt == "resume":
            entry.repeats_done, entry.resume_sentence = rep, max(0, sentence)
            # Resumed later it cannot be in step with the zone any more: it plays when its turn comes
            # (its play_at, long past by then, would skip all of it).
            entry.play_at = None
            self._events.publish(entry.id, "preempted", f"resumes from sentence {max(0, sentence) + 1}")
            self._scheduler.requeue(entry)
        else:
            self._scheduler.ended(entry.id, time.time())
            self._events.publish(entry.id, "preempted", "dropped (queue/on_preempt: drop)")
            self._events.ack(entry.acks)

    def _finish(self, entry: Entry, event: str, reason: str | None = None, **more: Any) -> None:
        # A failed one is forgotten at once, so the publisher may retry it with the same id.
        self._scheduler.ended(entry.id, time.time(), remember=event != "failed")
        self._events.publish(entry.id, event, reason, **more)
        self._events.ack(entry.acks)


def _sync_fields(running: Running, report: PlayerReport) -> dict[str, Any]:
    """What `started` says of a synchronized announcement: how far off, how late, the clock."""
    if running.entry.play_at is None:
        return {}
    fields: dict[str, Any] = {}
    if report.sync_error_ms is not None:
        fields["sync_error_ms"] = round(report.sync_error_ms, 2)
    if report.late_ms > 0:
        fields["late_ms"] = round(report.late_ms, 1)
    if running.clock is not None:
        fields["detail"] = running.clock
    return fields


__all__ = ["Playout", "Running"]
