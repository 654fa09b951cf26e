"""The announcer daemon: one loop owns the state.

Threads and what they may do:

* paho's network thread: enqueue raw messages and connection changes (never parse
  into state, never block);
* the synthesis thread: run the voice for the announcement being played and feed
  its sentences to the playback job, so the next sentence is synthesized while
  the current one plays; it stores what it synthesized in the phrase cache and,
  when synthesis raises, hands the job a fallback clip (issue 6);
* the audio thread (:class:`edgetts.audio.player.Player`): write to the device;
* signal handlers: enqueue the signal.

Everything else (queue, current announcement, events, acknowledgements,
status, reload, the watchdog) happens on the loop in :meth:`Daemon.run`, and
so does everything that is already audio: clips and phrase-cache hits are fed to
the player from the loop, without waiting for the synthesis thread, and the
loop plays the fallback clip when an announcement's first speech misses its
deadline (issue 6: never silent).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from edgetts import __version__
from edgetts.audio.convert import Converter, DeviceFormat
from edgetts.audio.job import PlaybackJob
from edgetts.audio.loudness import loudness_dbfs
from edgetts.audio.player import Player, PlayerReport, PlayerSettings
from edgetts.config import Config, ConfigError, VoiceModelSettings, load_config
from edgetts.daemon.clips import Clip, ClipLibrary
from edgetts.daemon.fallback import Choice, CompiledRule, choose, compile_rules
from edgetts.daemon.keepalive import KEEPALIVE_TEXT, Keepalive
from edgetts.daemon.messages import AnnounceLimits, Announcement, Degraded, Event, PayloadError, Status
from edgetts.daemon.mqtt import AckHandle, Inbound, MqttLink
from edgetts.daemon.phrase_cache import PhraseCache, phrase_key, voice_hash, voice_synthesis_config
from edgetts.daemon.scheduler import Entry, Scheduler
from edgetts.daemon.sdnotify import Notifier
from edgetts.daemon.sound_card import OutputStream
from edgetts.engine import AudioChunk, SynthesisConfig, Voice
from edgetts.errors import AudioDeviceError, EdgeTTSError, UnspeakableTextError
from edgetts.runtime.cpu_plan import plan_cpu
from edgetts.runtime.memlock import MIN_BYTES, find_initializers, read_vmlck, shortfall_reason
from edgetts.text.prepare import TextOptions
from edgetts.text.ssml import SSMLError, looks_like_ssml
from edgetts.text.ssml import parse as parse_ssml

_LOGGER = logging.getLogger(__name__)

VoiceLoader = Callable[[VoiceModelSettings, TextOptions, "VoiceRuntime"], Voice]


@dataclass(frozen=True)
class VoiceRuntime:
    """Where a voice's inference runs and whether its weights are locked."""

    cores: tuple[int, ...] | None = None
    lock: bool = False


def load_configured_voice(settings: VoiceModelSettings, text: TextOptions,
                          runtime: VoiceRuntime = VoiceRuntime()) -> Voice:
    """The real voice loader (edgetts.voice.catalog)."""
    from edgetts.voice.catalog import load_voice

    return load_voice(settings.model, threads=settings.threads, text=text, cores=runtime.cores,
                      lock=runtime.lock, streaming=settings.streaming,
                      fast_start_ids=settings.fast_start_ids)


def synthesis_config(settings: VoiceModelSettings) -> SynthesisConfig:
    # Volume is applied by the player (audio/volume x announcement volume), once.
    # One definition (edgetts.daemon.phrase_cache) so `edgetts render` computes the same cache keys.
    return voice_synthesis_config(settings)


#: Spoken once per voice at load: its loudness (edgetts.audio.loudness) is what clips are matched to
#: when loudness/target_dbfs is null, and the run warms the voice up for the first announcement.
CALIBRATION_TEXT = "Attention please: the next train to the city centre will depart from platform two."

#: Sample rate of the device when neither audio/sample_rate nor a default voice gives one.
FALLBACK_RATE = 22050

#: Loudness clips get when the target is the default voice's level but no voice loaded.
FALLBACK_DBFS = -20.0

#: Position (repeat, sentence) of a fallback clip in a job.
_FALLBACK_SENTENCE = 10**6


def player_settings(config: Config, default_rate: int) -> PlayerSettings:
    a = config.audio
    fmt = DeviceFormat(a.sample_rate or default_rate, a.channels, a.sample_format)
    return PlayerSettings(
        device=a.device, format=fmt, block_frames=a.block_frames, lead_in_ms=a.lead_in_ms,
        fade_ms=a.fade_ms, preempt_fade_ms=a.preempt_fade_ms, close_idle_s=a.close_idle_s,
        reopen_min_s=a.reopen_min_s, reopen_max_s=a.reopen_max_s, realtime_pacing=a.realtime_pacing,
        audio_core=config.cpu.audio_core, realtime=config.cpu.realtime_audio,
    )


# ----------------------------------------------------------- loop messages


@dataclass(frozen=True)
class _Signal:
    signum: int


@dataclass(frozen=True)
class _RuntimeProblem:
    """A thread could not be placed as configured (shown in `degraded`)."""

    what: str
    reason: str


@dataclass(frozen=True)
class _Connection:
    ok: bool
    reason: str


@dataclass(frozen=True)
class _VoicesLoaded:
    config: Config
    voices: dict[str, Voice]
    error: str | None
    extras: _VoiceExtras | None = None
    clips: ClipLibrary | None = None


@dataclass(frozen=True)
class _FallbackUsed:
    """From the synthesis thread: it handed ``job`` its fallback clip."""

    job: PlaybackJob
    reason: str
    detail: str


@dataclass
class _VoiceExtras:
    """What the daemon keeps per loaded voice beside the voice object."""

    level_dbfs: dict[str, float | None] = field(default_factory=dict)
    """Loudness of each voice on CALIBRATION_TEXT."""

    digest: dict[str, str] = field(default_factory=dict)
    """edgetts.daemon.phrase_cache.voice_hash of each voice (only with a phrase cache)."""


# ------------------------------------------------------------- synthesis


@dataclass(frozen=True)
class SynthRequest:
    """Everything the synthesis thread needs for one announcement."""

    job: PlaybackJob
    voice: Voice
    text: str
    config: SynthesisConfig
    chime: Clip | None
    repeat: int
    start: tuple[int, int]
    """(repeat, sentence) to start from (after a preemption)."""
    fallback: Clip | None = None
    """Played when synthesis raises (reason synthesis_error or unspeakable)."""
    gain: float = 1.0
    """Loudness gain of this voice (1.0 = its own level)."""
    cache: PhraseCache | None = None
    cache_key: str | None = None


@dataclass(frozen=True)
class Prefetch:
    """Synthesize the first sentence of what is likely to play next."""

    key: tuple[str, int, str]
    """(announcement id, id(voice), text): a later request must match all three."""
    voice: Voice
    text: str
    config: SynthesisConfig


class Synthesizer:
    """The thread that runs inference, one announcement at a time.

    After the announcement in hand is synthesized (it is then still playing),
    the thread synthesizes the first sentence of the next queued one
    (:class:`Prefetch`), so back-to-back announcements follow without a gap
    for inference.  A prefetch nobody asks for is dropped at the next one.
    """

    def __init__(
        self,
        notify: Callable[[Any], None] | None = None,
        *,
        setup: Callable[[], None] | None = None,
        keepalive: Keepalive | None = None,
    ) -> None:
        self._notify = notify or (lambda _msg: None)
        self._requests: queue.SimpleQueue[SynthRequest | Prefetch | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="edgetts-synth", daemon=True)
        self._prefetched: tuple[tuple[str, int, str], Iterator[AudioChunk]] | None = None
        self._setup = setup
        self.keepalive = keepalive

    def start(self) -> None:
        self._thread.start()

    def submit(self, request: SynthRequest | Prefetch) -> None:
        self._requests.put(request)

    def close(self, timeout: float = 2.0) -> None:
        self._requests.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _next(self) -> SynthRequest | Prefetch | None:
        """The next request; while none comes, the keepalive inference when it is due."""
        ka = self.keepalive
        while True:
            timeout = ka.seconds_until_due() if ka is not None else None
            try:
                return self._requests.get(timeout=timeout)
            except queue.Empty:
                assert ka is not None
                # A request arriving meanwhile stops it between sentences (issue 5).
                ka.run(preempted=lambda: not self._requests.empty())

    def _run(self) -> None:
        if self._setup is not None:
            self._setup()  # NUMA node and core of this thread, before any inference on it
        while (request := self._next()) is not None:
            if self.keepalive is not None:
                self.keepalive.note_activity()
            if isinstance(request, Prefetch):
                self._prefetch(request)
                continue
            job = request.job
            if job.stop_requested or job.closed:
                continue
            try:
                self._synthesize(request)
            except UnspeakableTextError as exc:
                self._failed(request, "unspeakable", str(exc))
            except EdgeTTSError as exc:
                self._failed(request, "synthesis_error", str(exc))
            except Exception as exc:  # a bug or a broken model must not kill the daemon
                _LOGGER.exception("synthesis failed")
                self._failed(request, "synthesis_error", f"synthesis failed: {type(exc).__name__}: {exc}")

    def _failed(self, req: SynthRequest, reason: str, detail: str) -> None:
        job = req.job
        if job.closed:  # the deadline's fallback got there first
            return
        clip = req.fallback
        if clip is None or job.stop_requested:  # (an interrupted one is not replaced)
            job.fail(detail)
            return
        # Told before the clip is handed over, so `fallback` precedes its `started`.
        self._notify(_FallbackUsed(job, reason, detail))
        if not job.take_over(clip.audio, clip.rate, (job.position[0], _FALLBACK_SENTENCE),
                             before_speech=False, times=req.repeat - job.position[0]):
            _LOGGER.debug("fallback for %s came too late", job.token.id)

    def _prefetch(self, req: Prefetch) -> None:
        self._prefetched = None
        chunks = iter(req.voice.synthesize(req.text, req.config))
        try:
            first = next(chunks)
        except StopIteration:
            return
        except Exception:  # the real request will run it again and report why
            _LOGGER.debug("prefetch failed", exc_info=True)
            return
        self._prefetched = (req.key, itertools.chain([first], chunks))

    def _chunks(self, req: SynthRequest) -> Iterator[AudioChunk]:
        assert req.voice is not None and req.text is not None
        held, self._prefetched = self._prefetched, None
        key = (req.job.token.id, id(req.voice), req.text)
        if held is not None and held[0] == key and req.start == (0, 0):
            return held[1]
        return iter(req.voice.synthesize(req.text, req.config))

    def _synthesize(self, req: SynthRequest) -> None:
        job = req.job
        cached: list[tuple[Any, int, int]] | None = None  # (audio, rate, sentence) of one full play
        first_repeat, first_sentence = req.start
        for rep in range(first_repeat, req.repeat):
            skip = first_sentence if rep == first_repeat else 0
            if req.chime is not None and skip == 0:
                job.feed(req.chime.audio, req.chime.rate, (rep, -1))
            if cached is not None and skip == 0:
                for audio, rate, sentence in cached:
                    if not job.feed(_gained(audio, req.gain), rate, (rep, sentence), speech=True):
                        return
                continue
            pieces = []
            for chunk in self._chunks(req):
                if job.stop_requested:
                    return
                pieces.append((chunk.audio, chunk.sample_rate, chunk.sentence_index))
                if chunk.sentence_index >= skip and not job.feed(
                    _gained(chunk.audio, req.gain), chunk.sample_rate, (rep, chunk.sentence_index),
                    speech=True,
                ):
                    return  # a fallback clip took the job over (deadline): this work is not wanted
            if skip == 0:
                cached = pieces
                self._store(req, pieces)
        job.end()

    @staticmethod
    def _store(req: SynthRequest, pieces: list[tuple[Any, int, int]]) -> None:
        """Cache one full play: a streaming voice's windows are joined into their sentences."""
        if req.cache is None or req.cache_key is None or not pieces:
            return
        rates = {rate for _a, rate, _s in pieces}
        if len(rates) != 1:
            return
        sentences: list[list[np.ndarray]] = []
        for audio, _rate, index in pieces:
            if index == len(sentences):
                sentences.append([audio])
            elif index == len(sentences) - 1:
                sentences[-1].append(audio)
            else:  # sentences out of order: not one play of the text
                return
        joined = [parts[0] if len(parts) == 1 else np.concatenate(parts) for parts in sentences]
        req.cache.put(req.cache_key, rates.pop(), joined, req.text)


def _gained(audio: np.ndarray, gain: float) -> np.ndarray:
    return audio if gain == 1.0 else (audio * np.float32(gain)).astype(np.float32)


def _feed_audio(job: PlaybackJob, chime: Clip | None, sentences: list[np.ndarray], rate: int,
                repeat: int, start: tuple[int, int], gain: float) -> None:
    """Feed audio that exists already (a clip, a phrase-cache hit) and end the job."""
    first_repeat, first_sentence = start
    for rep in range(first_repeat, repeat):
        skip = first_sentence if rep == first_repeat else 0
        if chime is not None and skip == 0:
            job.feed(chime.audio, chime.rate, (rep, -1))
        for i, audio in enumerate(sentences):
            if i >= skip:
                job.feed(_gained(audio, gain), rate, (rep, i), speech=True)
    job.end()


def measure_voice(voice: Voice, config: SynthesisConfig) -> float | None:
    """The voice's loudness on CALIBRATION_TEXT (dBFS, edgetts.audio.loudness); None if it cannot speak it."""
    try:
        chunks = list(voice.synthesize(CALIBRATION_TEXT, config))
    except Exception as exc:  # a voice that cannot speak shows at the first announcement (fallback)
        _LOGGER.warning("voice %s: loudness not measured: %s", voice.name, exc)
        return None
    if not chunks:
        return None
    return loudness_dbfs(np.concatenate([c.audio for c in chunks]), chunks[0].sample_rate)


# ------------------------------------------------------------------ daemon


@dataclass(eq=False)
class _Running:
    entry: Entry
    job: PlaybackJob
    preempted: bool = False
    deadline_mono: float | None = None
    """When the first speech must be there, else the fallback clip plays (None: no deadline)."""
    fallback: Clip | None = None
    fallback_done: bool = False
    cached: bool = False


@dataclass
class DaemonOptions:
    """Seams for tests: fakes injected through the constructor."""

    voice_loader: VoiceLoader = load_configured_voice
    stream_factory: Callable[..., OutputStream] = OutputStream
    link_factory: Callable[..., Any] = MqttLink
    notifier: Notifier | None = None
    install_signals: bool = True


class Daemon:
    """Owns the queue, the current announcement, the voices and the config."""

    def __init__(self, config: Config, config_path: str | os.PathLike[str] | None = None,
                 options: DaemonOptions | None = None) -> None:
        self.config = config
        self.config_path = None if config_path is None else Path(config_path)
        self._opts = options or DaemonOptions()
        self._notifier = self._opts.notifier or Notifier()
        self._inbox: queue.Queue[Any] = queue.Queue()
        self.scheduler = Scheduler(config.queue.max_length, config.queue.dedup_window_s)
        self.voices: dict[str, Voice] = {}
        self._running: dict[PlaybackJob, _Running] = {}
        self._current: _Running | None = None
        self._degraded: dict[str, str] = {}
        self._reloading = False
        self._reload_again = False
        self._stop = False
        self._link: Any = None
        self._player: Player | None = None
        # Placement is decided once, from the start-up config (a change needs a restart).
        self._cpu = plan_cpu(config.cpu)
        if self._cpu.problem is not None:
            self._degraded["cpu"] = self._cpu.problem
        keepalive = Keepalive(config.keepalive.interval_s, self._keepalive_inference)
        self._synth = Synthesizer(self._inbox.put, setup=self._setup_synthesis_thread, keepalive=keepalive)
        self._next_watchdog = 0.0
        self._status_dirty = True
        self._voice_errors: dict[str, str] = {}
        self._extras = _VoiceExtras()
        self.clips = ClipLibrary(None, FALLBACK_RATE, None)
        self.cache: PhraseCache | None = None
        self._rules: tuple[CompiledRule, ...] = ()

    # ------------------------------------------------------------ entry
    def run(self) -> int:
        """Start everything, loop until SIGTERM/SIGINT, stop cleanly; the exit status."""
        if self._opts.install_signals:
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, lambda s, _f: self._inbox.put(_Signal(s)))
        self._notifier.status("loading voices")
        # A voice that does not load must not keep the announcer from starting (issue 6):
        # it runs on clips, says why in `degraded`, and a reload may bring the voice back.
        self.voices, self._voice_errors = self._load_voices_tolerant(self.config)
        self._set_voice_degraded()
        self._check_memory_lock()
        self._extras = self._voice_extras(self.config, self.voices, _VoiceExtras())
        default = self.voices.get(self.config.voice.name)
        self._rules = compile_rules((r.match, r.clip) for r in self.config.fallback.rules)
        settings = player_settings(self.config, default.sample_rate if default else FALLBACK_RATE)
        self.clips = self._clip_library(self.config, settings.format.rate, self._extras)
        self._check_clips()
        self.cache = self._open_cache(self.config)
        # Built (password resolved) before any thread starts: a bad credential ends here.
        self._link = self._opts.link_factory(
            self.config, on_message=self._inbox.put,
            on_connection=lambda ok, why: self._inbox.put(_Connection(ok, why)),
            offline_status=self._status("offline"),
        )
        self._player = Player(settings, self._inbox.put, stream_factory=self._opts.stream_factory)
        try:
            self._player.probe()
        except AudioDeviceError as exc:
            # Keep running: the player reopens with back-off and the status says why.
            _LOGGER.error("%s", exc)
            self._degraded["audio"] = str(exc)
        self._player.start()
        self._synth.start()
        self._link.start()
        if default is not None:
            self._notifier.ready(f"ready: voice {default.name}, waiting for announcements")
        else:
            self._notifier.ready("ready on clips only: the default voice did not load")
        _LOGGER.info("edgetts %s ready: voices %s; %d clips", __version__,
                     ", ".join(self.voices) or "none", len(self.clips))
        try:
            self._loop()
        finally:
            self._shutdown()
        return 0

    def request_stop(self) -> None:
        """Ask the loop to end (as SIGTERM does), from any thread."""
        self._inbox.put(_Signal(signal.SIGTERM))

    def request_reload(self) -> None:
        self._inbox.put(_Signal(signal.SIGHUP))

    # ------------------------------------------------------------- loop
    def _loop(self) -> None:
        wd = self._notifier.watchdog_s
        while not self._stop:
            now_mono = time.monotonic()
            timeout = 0.25
            if wd is not None:
                timeout = max(0.0, min(timeout, self._next_watchdog - now_mono))
            cur = self._current
            if cur is not None and cur.deadline_mono is not None and not cur.fallback_done:
                timeout = max(0.0, min(timeout, cur.deadline_mono - now_mono))
            try:
                msg = self._inbox.get(timeout=timeout)
            except queue.Empty:
                msg = None
            if msg is not None:
                self._dispatch(msg)
            self._check_deadline()
            self._expire()
            self._start_next()
            if self._status_dirty and self._link is not None:
                self._status_dirty = False
                self._link.publish_status(self._status("online"))
            if wd is not None and time.monotonic() >= self._next_watchdog:
                # From the loop that does the work: a hung loop stops the pings (issue 3).
                self._notifier.watchdog()
                self._next_watchdog = time.monotonic() + wd / 2

    def _dispatch(self, msg: Any) -> None:
        if isinstance(msg, Inbound):
            self._on_inbound(msg)
        elif isinstance(msg, PlayerReport):
            self._on_player(msg)
        elif isinstance(msg, _Signal):
            self._on_signal(msg.signum)
        elif isinstance(msg, _RuntimeProblem):
            self._degraded[msg.what] = msg.reason
            self._status_dirty = True
        elif isinstance(msg, _Connection):
            if msg.ok:
                self._degraded.pop("mqtt", None)
            else:
                self._degraded["mqtt"] = msg.reason
            self._status_dirty = True
        elif isinstance(msg, _VoicesLoaded):
            self._on_voices_loaded(msg)
        elif isinstance(msg, _FallbackUsed):
            running = self._running.get(msg.job)
            if running is not None and not running.fallback_done:
                running.fallback_done = True
                assert running.fallback is not None
                self._fallback_event(running.entry.id, msg.reason, running.fallback.name, msg.detail)
        else:
            _LOGGER.error("unknown loop message %r", msg)

    # ----------------------------------------------------- announcements
    def _limits(self) -> AnnounceLimits:
        q = self.config.queue
        return AnnounceLimits(q.max_text_chars, q.max_repeat, q.default_priority)

    def _event(self, ident: str, event: str, reason: str | None = None,
               latency_ms: float | None = None, ts: float | None = None, **more: Any) -> None:
        ev = Event(id=ident, event=event, ts=time.time() if ts is None else ts,  # type: ignore[arg-type]
                   reason=reason, latency_ms=latency_ms, **more)
        log = _LOGGER.warning if event in ("rejected", "failed", "expired", "fallback") else _LOGGER.info
        log("%s %s%s%s", event, ident, f": {reason}" if reason else "",
            f" ({more['detail']})" if more.get("detail") else "")
        self._link.publish_event(ev)
        self._status_dirty = True

    def _fallback_event(self, ident: str, reason: str, clip: str, detail: str) -> None:
        self._event(ident, "fallback", reason, clip=clip, detail=detail)

    def _ack(self, acks: list[AckHandle]) -> None:
        for handle in acks:
            self._link.ack(handle)

    def _on_inbound(self, msg: Inbound) -> None:
        now = time.time()
        try:
            ann = Announcement.from_payload(msg.payload, now=msg.received_at, limits=self._limits())
            self._check_references(ann)
        except PayloadError as exc:
            self._event(_guess_id(msg.payload), "rejected", str(exc))
            self._ack([msg.ack])
            return
        # A redelivery of a message still in hand (after a reconnect) is the same message.
        if msg.dup:
            for held in [*(r.entry for r in self._running.values()), *self.scheduler]:
                if msg.ack in held.acks:
                    _LOGGER.info("redelivery of %s ignored", held.id)
                    return
        if self.scheduler.is_duplicate(ann.id, now):
            holder = self._holder(ann.id)
            if holder is not None:  # still queued or playing: ack with it when it ends
                holder.acks.append(msg.ack)
            else:
                self._ack([msg.ack])
            _LOGGER.info("duplicate id %s ignored", ann.id)
            return
        expires_at = ann.expires_at
        if expires_at is None and self.config.queue.default_ttl_s is not None:
            expires_at = msg.received_at + self.config.queue.default_ttl_s
        entry = Entry(ann, msg.received_at, expires_at, [msg.ack], received_mono=msg.received_mono)
        if entry.expired(now):
            self.scheduler.ended(ann.id, now)
            self._event(ann.id, "expired", "expired before it was queued")
            self._ack(entry.acks)
            return
        admission = self.scheduler.offer(entry, now)
        if not admission.accepted:
            self._event(ann.id, "rejected", admission.reason)
            self._ack([msg.ack])
            return
        self._event(ann.id, "queued")
        if admission.displaced is not None:
            gone = admission.displaced  # never played: a later retry with its id is welcome
            self._event(gone.id, "rejected", "queue full: displaced by a more urgent announcement")
            self._ack(gone.acks)
        self._maybe_preempt(entry)
        if self._current is not None and self.scheduler.peek() is entry:
            self._prefetch_next()  # it plays next: get its first sentence ready meanwhile

    def _check_references(self, ann: Announcement) -> None:
        """Names in the payload must exist here, SSML must parse (raises PayloadError)."""
        if ann.text is not None and looks_like_ssml(ann.text):
            try:
                parse_ssml(ann.text, self.config.normalize)
            except SSMLError as exc:  # rejected now, never read aloud as tags later
                raise PayloadError(f"bad SSML: {exc}") from None
        configured = self.config.all_voices()
        if ann.voice is not None and ann.voice not in configured:
            raise PayloadError(f"unknown voice {ann.voice!r} (known: {', '.join(configured)})")
        for kind in ("clip", "chime", "fallback"):
            name = getattr(ann, kind)
            if name is not None and name not in self.clips:
                raise PayloadError(f"unknown {kind} {name!r}")

    def _holder(self, ident: str) -> Entry | None:
        for running in self._running.values():
            if running.entry.id == ident:
                return running.entry
        for entry in self.scheduler:
            if entry.id == ident:
                return entry
        return None

    def _maybe_preempt(self, entry: Entry) -> None:
        cur = self._current
        if cur is None or cur.preempted:
            return
        new, old = entry.announcement, cur.entry.announcement
        if (new.priority == "emergency" and old.rank > new.rank) or (
            new.interrupt and new.rank <= old.rank
        ):
            _LOGGER.info("%s interrupts %s", new.id, old.id)
            cur.preempted = True
            cur.job.stop()
            self._current = None  # the next one starts now; the player fades the old one first

    def _expire(self) -> None:
        now = time.time()
        for entry in self.scheduler.expire(now):
            self._event(entry.id, "expired", "its time to live ran out while queued")
            self._ack(entry.acks)

    def _start_next(self) -> None:
        if self._current is not None or self._stop or self._player is None:
            return
        entry = self.scheduler.pop()
        if entry is None:
            return
        ann = entry.announcement
        chime = self.clips.get(ann.chime) if ann.chime else None
        start = (entry.repeats_done, entry.resume_sentence)
        job = PlaybackJob(entry, self._player.converter, self.config.audio.volume * ann.volume)
        running = _Running(entry, job)

        def begin() -> None:
            self._running[job] = running
            self._current = running
            self._player.submit(job)  # type: ignore[union-attr]
            self._status_dirty = True

        if ann.clip is not None:
            clip = self.clips.get(ann.clip)
            if clip is None:  # gone with a reload while it was queued
                self._finish(entry, "failed", f"clip {ann.clip!r} is no longer available")
                return
            begin()
            _feed_audio(job, chime, [clip.audio], clip.rate, ann.repeat, start, 1.0)
            self._prefetch_next()
            return
        assert ann.text is not None
        voice_name = ann.voice or self.config.voice.name
        settings = self.config.all_voices().get(voice_name)
        if settings is None:  # removed by a reload while it was queued
            self._finish(entry, "failed", f"voice {voice_name!r} is no longer configured")
            return
        running.fallback = self._fallback_clip(ann)
        voice = self.voices.get(voice_name)
        if voice is None:
            why = self._voice_errors.get(voice_name, f"voice {voice_name!r} is not loaded")
            if running.fallback is None:
                self._finish(entry, "failed", f"voice unavailable: {why}")
                return
            begin()
            running.fallback_done = True
            self._fallback_event(entry.id, "voice_unavailable", running.fallback.name, why)
            fb = running.fallback
            _feed_audio(job, chime, [fb.audio], fb.rate, ann.repeat, (start[0], 0), 1.0)
            self._prefetch_next()
            return
        config = synthesis_config(settings)
        gain = self._speech_gain(voice_name)
        key = self._cache_key(voice_name, ann.text, config)
        hit = self.cache.get(key) if self.cache is not None and key is not None else None
        begin()
        if hit is not None:
            running.cached = True
            _feed_audio(job, chime, list(hit.sentences), hit.sample_rate, ann.repeat, start, gain)
        else:
            deadline_ms = ann.deadline_ms or self.config.fallback.deadline_ms
            if running.fallback is not None:
                running.deadline_mono = time.monotonic() + deadline_ms / 1000.0
            self._synth.submit(SynthRequest(
                job=job, voice=voice, text=ann.text, config=config, chime=chime,
                repeat=ann.repeat, start=start, fallback=running.fallback, gain=gain,
                cache=self.cache, cache_key=key,
            ))
        self._prefetch_next()

    def _fallback_clip(self, ann: Announcement) -> Clip | None:
        fb = self.config.fallback
        choice: Choice | None = choose(ann.fallback, ann.text, self._rules, fb.default_clip)
        if choice is None:
            return None
        clip = self.clips.get(choice.clip)
        if clip is None:
            _LOGGER.warning("fallback clip %r (%s) is not in the clip library", choice.clip, choice.source)
            if choice.source != "default" and fb.default_clip is not None:
                clip = self.clips.get(fb.default_clip)
        return clip

    def _check_deadline(self) -> None:
        """The first speech of the announcement playing is late: its fallback clip plays instead."""
        cur = self._current
        if cur is None or cur.deadline_mono is None or cur.fallback_done or cur.fallback is None:
            return
        if time.monotonic() < cur.deadline_mono:
            return
        cur.deadline_mono = None
        if cur.job.speech_fed or cur.job.closed:
            return
        clip = cur.fallback
        repeat = cur.entry.announcement.repeat
        if cur.job.take_over(clip.audio, clip.rate, (cur.job.position[0], _FALLBACK_SENTENCE),
                             before_speech=True, times=repeat - cur.job.position[0]):
            cur.fallback_done = True
            ann = cur.entry.announcement
            ms = ann.deadline_ms or self.config.fallback.deadline_ms
            self._fallback_event(cur.entry.id, "deadline", clip.name,
                                 f"no speech within {ms} ms (deadline_ms)")

    def _speech_gain(self, voice_name: str) -> float:
        target = self.config.loudness.target_dbfs
        level = self._extras.level_dbfs.get(voice_name)
        if target is None or level is None:
            return 1.0
        return float(10 ** ((target - level) / 20))

    def _cache_key(self, voice_name: str, text: str, config: SynthesisConfig) -> str | None:
        digest = self._extras.digest.get(voice_name)
        if self.cache is None or digest is None:
            return None
        return phrase_key(self.config, voice_name, digest, text, config)

    def _prefetch_next(self) -> None:
        nxt = self.scheduler.peek()
        if nxt is None or nxt.announcement.text is None or nxt.resume_sentence or nxt.repeats_done:
            return
        name = nxt.announcement.voice or self.config.voice.name
        voice = self.voices.get(name)
        settings = self.config.all_voices().get(name)
        if voice is None or settings is None:
            return
        config = synthesis_config(settings)
        key = self._cache_key(name, nxt.announcement.text, config)
        if key is not None and self.cache is not None and key in self.cache:
            return  # it plays from the cache: nothing to synthesize
        self._synth.submit(Prefetch((nxt.id, id(voice), nxt.announcement.text), voice,
                                    nxt.announcement.text, config))

    def _finish(self, entry: Entry, event: str, reason: str | None = None) -> None:
        # A failed one is forgotten at once, so the publisher may retry it with the same id.
        self.scheduler.ended(entry.id, time.time(), remember=event != "failed")
        self._event(entry.id, event, reason)
        self._ack(entry.acks)

    def _on_player(self, report: PlayerReport) -> None:
        if report.job is None:
            if report.kind == "device_failed":
                self._degraded["audio"] = report.reason or "audio device failed"
            elif report.kind == "device_ok":
                self._degraded.pop("audio", None)
            elif report.kind == "thread_setup":
                if report.reason:
                    self._degraded["audio_thread"] = report.reason
                else:
                    self._degraded.pop("audio_thread", None)
            self._status_dirty = True
            return
        running = self._running.get(report.job)
        if running is None:
            return
        entry = running.entry
        if report.kind == "started":
            latency = (report.at_mono - entry.received_mono) * 1000.0
            # ts = when the first audio was handed to the device, not when we got round to saying so
            ts = time.time() - (time.monotonic() - report.at_mono)
            self._event(entry.id, "started", latency_ms=latency, ts=ts,
                        cached=True if running.cached else None)
            return
        del self._running[report.job]
        if self._current is running:
            self._current = None
        if report.kind == "finished":
            self._finish(entry, "finished")
        elif report.kind == "failed":
            self._finish(entry, "failed", report.reason)
        elif report.kind == "stopped":
            if self._stop:
                return  # shutting down: not acked, so the broker delivers it again
            rep, sentence = report.position
            if self.config.queue.on_preempt == "resume":
                entry.repeats_done, entry.resume_sentence = rep, max(0, sentence)
                self._event(entry.id, "preempted", f"resumes from sentence {max(0, sentence) + 1}")
                self.scheduler.requeue(entry)
            else:
                self.scheduler.ended(entry.id, time.time())
                self._event(entry.id, "preempted", "dropped (queue/on_preempt: drop)")
                self._ack(entry.acks)

    # ----------------------------------------------------------- signals
    def _on_signal(self, signum: int) -> None:
        if signum == signal.SIGHUP:
            self._reload()
        else:
            _LOGGER.info("%s: stopping", signal.Signals(signum).name)
            self._stop = True

    def _reload(self) -> None:
        if self.config_path is None:
            _LOGGER.warning("reload requested but the daemon has no config file")
            return
        if self._reloading:
            self._reload_again = True
            return
        self._notifier.status("reloading configuration")
        try:
            new = load_config(self.config_path)
        except ConfigError as exc:
            for line in exc.problems:
                _LOGGER.error("reload refused: %s", line)
            more = f" (+{len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
            self._degraded["config"] = f"reload refused, old config in force: {exc.problems[0]}{more}"
            self._status_dirty = True
            self._notifier.status("reload refused: old config in force")
            return
        note = None
        old = self.config
        if new.mqtt != old.mqtt or new.device != old.device:
            # The broker session (and the unacked messages in hand) belong to this
            # connection; moving them live would replay or lose announcements.
            note = "mqtt/device changes take effect after a restart"
            new = replace(new, mqtt=old.mqtt, device=old.device)
        self._reloading = True
        old_voices = old.all_voices()
        # Text settings live in each voice's front end: a change reloads them all.
        same_text = (old.normalize, old.lexicon) == (new.normalize, new.lexicon)
        keep = {n: v for n, v in self.voices.items()
                if same_text and old_voices.get(n) == new.all_voices().get(n)}
        todo = {n: s for n, s in new.all_voices().items() if n not in keep}

        extras = self._extras
        same_cache = new.cache == old.cache

        def load() -> None:
            try:
                loaded = self._load_voices_only(todo, new.text_options())
            except EdgeTTSError as exc:
                self._inbox.put(_VoicesLoaded(new, {}, str(exc)))
                return
            voices = {**keep, **loaded}
            kept = _VoiceExtras(
                {n: v for n, v in extras.level_dbfs.items() if n in keep},
                {n: v for n, v in extras.digest.items() if n in keep and same_cache},
            )
            new_extras = self._voice_extras(new, voices, kept)
            default = voices.get(new.voice.name)
            rate = player_settings(new, default.sample_rate if default else FALLBACK_RATE).format.rate
            clips = self._clip_library(new, rate, new_extras)  # clips added to the folder come in too
            self._inbox.put(_VoicesLoaded(new, voices, note, new_extras, clips))

        # Beside the running voices, off the loop: the loop keeps playing and pinging.
        threading.Thread(target=load, name="edgetts-reload", daemon=True).start()

    def _on_voices_loaded(self, msg: _VoicesLoaded) -> None:
        self._reloading = False
        if not msg.voices:
            _LOGGER.error("reload refused: %s", msg.error)
            self._degraded["config"] = f"reload refused, old config in force: {msg.error}"
        else:
            new = msg.config
            old = self.config
            self.config = new
            # Swapped for the next announcement; the one playing keeps its voice object.
            self.voices = {n: msg.voices[n] for n in new.all_voices()}
            self._voice_errors = {}
            self._set_voice_degraded()
            self._check_memory_lock()
            if msg.extras is not None:
                self._extras = msg.extras
            if msg.clips is not None:
                self.clips = msg.clips
            self._rules = compile_rules((r.match, r.clip) for r in new.fallback.rules)
            self._check_clips()
            if new.cache != old.cache:
                self.cache = self._open_cache(new)
            self.scheduler.reconfigure(new.queue.max_length, new.queue.dedup_window_s)
            default = self.voices[new.voice.name]
            if self._player is not None:
                self._player.reconfigure(player_settings(new, default.sample_rate))
            if msg.error:
                self._degraded["config"] = msg.error
            else:
                self._degraded.pop("config", None)
            _LOGGER.info("configuration reloaded from %s", self.config_path)
        self._status_dirty = True
        self._notifier.status("ready" if "config" not in self._degraded else self._degraded["config"])
        if self._reload_again:
            self._reload_again = False
            self._reload()

    # ------------------------------------------------------------ voices
    def _setup_synthesis_thread(self) -> None:
        """Runs first on the synthesis thread: its NUMA node and core."""
        problem = self._cpu.apply_to_this_thread()
        if problem is not None:
            _LOGGER.warning("synthesis thread: %s", problem)
            self._inbox.put(_RuntimeProblem("cpu", problem))

    def _keepalive_inference(self) -> Iterator[AudioChunk]:
        """What the synthesis thread runs when idle: the default voice reads a word.

        Called on that thread; the voices mapping is swapped whole on reload, so
        reading it here sees the old or the new one, never half of either.
        """
        voice = self.voices.get(self.config.voice.name)
        if voice is None:
            return iter(())
        return iter(voice.synthesize(KEEPALIVE_TEXT, SynthesisConfig(noise_scale=0.0, noise_w=0.0)))

    def _load_voices_tolerant(self, config: Config) -> tuple[dict[str, Voice], dict[str, str]]:
        """Every voice that loads, and why each other one did not."""
        voices: dict[str, Voice] = {}
        errors: dict[str, str] = {}
        for name, settings in config.all_voices().items():
            try:
                voices.update(self._load_voices_only({name: settings}, config.text_options()))
            except EdgeTTSError as exc:
                _LOGGER.error("%s", exc)
                errors[name] = str(exc)
        return voices, errors

    def _check_memory_lock(self) -> None:
        """With memory.lock, the voices' weights must be in VmLck; say so once when not."""
        if not self.config.memory.lock:
            self._degraded.pop("memory", None)
            return
        needed = sum(
            span.nbytes
            for voice in self.voices.values()
            if isinstance(path := getattr(voice, "model_path", None), Path) and path.is_file()
            for span in find_initializers(path)
            if span.nbytes >= MIN_BYTES  # what lock_weights maps and locks
        )
        locked = read_vmlck()
        # 90 %: the optimised graph's weights differ a little from the source file's.
        if needed and locked < 0.9 * needed:
            reason = shortfall_reason(locked, needed)
            if self._degraded.get("memory") != reason:
                _LOGGER.warning("%s", reason)
            self._degraded["memory"] = reason
        else:
            self._degraded.pop("memory", None)
        self._status_dirty = True

    def _set_voice_degraded(self) -> None:
        if self._voice_errors:
            self._degraded["voice"] = "; ".join(self._voice_errors.values())
        else:
            self._degraded.pop("voice", None)
        self._status_dirty = True

    def _voice_extras(self, config: Config, voices: dict[str, Voice], have: _VoiceExtras) -> _VoiceExtras:
        """Loudness (CALIBRATION_TEXT, also a warm-up run) and, with a cache, the hash of each voice."""
        out = _VoiceExtras(dict(have.level_dbfs), dict(have.digest))
        cache_on = config.cache.resolved_dir() is not None
        for name, voice in voices.items():
            if name not in out.level_dbfs:
                out.level_dbfs[name] = measure_voice(voice, synthesis_config(config.all_voices()[name]))
            if cache_on and name not in out.digest:
                try:
                    out.digest[name] = voice_hash(voice)
                except OSError as exc:
                    _LOGGER.warning("voice %s: no phrase cache (cannot hash its files: %s)", name, exc)
        return out

    def _clip_library(self, config: Config, rate: int, extras: _VoiceExtras) -> ClipLibrary:
        target = config.loudness.target_dbfs
        if target is None:
            target = extras.level_dbfs.get(config.voice.name) or FALLBACK_DBFS
        return ClipLibrary(config.clips.dir, rate, target).load()

    def _check_clips(self) -> None:
        """`degraded: clips` names configured fallback clips that are missing and unreadable files."""
        fb = self.config.fallback
        wanted = [fb.default_clip, *(r.clip for r in fb.rules)]
        missing = sorted({n for n in wanted if n is not None and n not in self.clips})
        parts = []
        if missing:
            parts.append(f"fallback clips not in clips/dir: {', '.join(missing)}")
        if self.clips.problems:
            parts.append("; ".join(f"{name}: {why}" for name, why in sorted(self.clips.problems.items())))
        if parts:
            self._degraded["clips"] = "; ".join(parts)
            _LOGGER.warning("clips: %s", self._degraded["clips"])
        else:
            self._degraded.pop("clips", None)
        self._status_dirty = True

    def _open_cache(self, config: Config) -> PhraseCache | None:
        directory = config.cache.resolved_dir()
        if directory is None:
            self._degraded.pop("cache", None)
            return None
        try:
            cache = PhraseCache(directory, int(config.cache.max_mb * 1_000_000), config.cache.min_uses)
        except OSError as exc:
            _LOGGER.error("phrase cache %s: %s", directory, exc)
            self._degraded["cache"] = f"phrase cache off: {directory}: {exc.strerror or exc}"
            return None
        self._degraded.pop("cache", None)
        _LOGGER.info("phrase cache %s: %d phrases, %.1f MB", directory, len(cache), cache.total_bytes / 1e6)
        return cache

    def _load_voices_only(self, todo: dict[str, VoiceModelSettings], text: TextOptions) -> dict[str, Voice]:
        out = {}
        for name, settings in todo.items():
            t0 = time.monotonic()
            if settings.threads is None:  # the topology's choice, not one per core of the box
                settings = replace(settings, threads=self._cpu.threads)
            runtime = VoiceRuntime(self._cpu.cores, self.config.memory.lock)
            try:
                out[name] = self._opts.voice_loader(settings, text, runtime)
            except EdgeTTSError as exc:
                raise type(exc)(f"voice {name!r} ({settings.model}): {exc}") from None
            _LOGGER.info("voice %s loaded from %s in %.2f s", name, settings.model,
                         time.monotonic() - t0)
        return out

    # ------------------------------------------------------------ status
    def _status(self, state: str) -> Status:
        default = self.voices.get(self.config.voice.name)
        return Status(
            state=state,  # type: ignore[arg-type]
            version=__version__,
            voice=default.name if default is not None else self.config.voice.model,
            queue_depth=len(self.scheduler),
            locked_bytes=read_vmlck(),
            degraded=tuple(Degraded(w, r) for w, r in sorted(self._degraded.items())),
            voices=tuple(self.voices),
            current=self._current.entry.id if self._current is not None else None,
            ts=time.time(),
            keepalive=self._synth.keepalive.stats().to_dict() if self._synth.keepalive else None,
        )

    # ---------------------------------------------------------- shutdown
    def _shutdown(self) -> None:
        self._notifier.stopping("stopping")
        self._stop = True
        for running in list(self._running.values()):
            running.job.stop()
        if self._link is not None:
            self._link.stop()  # publishes `offline` first (issue 3)
        if self._player is not None:
            self._player.close()
        self._synth.close()
        _LOGGER.info("stopped")


def _guess_id(payload: bytes) -> str:
    """The id of a rejected JSON payload, when one can be read; else ""."""
    try:
        obj = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return ""
    ident = obj.get("id") if isinstance(obj, dict) else None
    return ident[:128] if isinstance(ident, str) else ""


def converter_for(config: Config, default_rate: int) -> Converter:
    """The converter the daemon would use with ``config`` (tools and tests)."""
    return Converter(player_settings(config, default_rate).format)


__all__ = ["Daemon", "DaemonOptions", "SynthRequest", "Synthesizer", "phrase_key", "measure_voice"]
