"""The announcer daemon: one loop owns the state.

Threads and what they may do:

* paho's network thread: enqueue raw messages and connection changes (never parse
  into state, never block);
* the synthesis thread (edgetts.daemon.playout.synthesis): run the voice for the announcement
  being played and feed its sentences to the playback job; it stores what it
  synthesized in the phrase cache and, when synthesis raises, hands the job a
  fallback clip (issue 6);
* the audio thread (:class:`edgetts.audio.player.Player`): write to the device;
* the reload thread (edgetts.daemon.reload): build the new config's assets beside
  the running ones;
* signal handlers: enqueue the signal;
* services (edgetts.daemon.inbound.services: Wyoming, HTTP) on their own threads: enqueue
  announcements and controls, read the assets, synthesize on the side lane
  (edgetts.daemon.playout.client_synthesis), which the synthesis thread runs when it has no announcement.

Everything else happens on the loop in :meth:`Daemon.run`, one message at a
time: admission (edgetts.daemon.admission.admit), play-out and the player's reports
(edgetts.daemon.playout.play), events and acknowledgements, status
(edgetts.daemon.health), reload and the watchdog.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edgetts import __version__
from edgetts.audio.player import Player, PlayerReport, PlayerSettings
from edgetts.config import Config, ConfigError
from edgetts.daemon.admission.admit import admit, expire
from edgetts.daemon.admission.dedup import open_dedup_memory
from edgetts.daemon.admission.journal import IntakeJournal, journal_folder
from edgetts.daemon.admission.scheduler import Scheduler
from edgetts.daemon.assets import (
    Assets,
    Loading,
    VoiceLoader,
    VoiceRuntime,
    build_assets,
    load_configured_voice,
    memory_problem,
)
from edgetts.daemon.ducking import Ducking, DuckReport
from edgetts.daemon.events import Events
from edgetts.daemon.health import Health
from edgetts.daemon.inbound.control import Control
from edgetts.daemon.inbound.message import Inbound
from edgetts.daemon.inbound.mqtt import MqttLink
from edgetts.daemon.inbound.services import EventFeed, Service, ServiceContext, Services, TapLink, build_services
from edgetts.daemon.pacing.int8 import Int8Builder, Int8Built
from edgetts.daemon.pacing.keepalive import Keepalive, keepalive_run
from edgetts.daemon.pacing.speed import SpeedSample
from edgetts.daemon.playout.client_synthesis import ClientSynthesis
from edgetts.daemon.playout.clips import ClipLibrary
from edgetts.daemon.playout.phrase_cache import PhraseCache
from edgetts.daemon.playout.play import Playout
from edgetts.daemon.playout.sound_card import OutputStream, player_settings
from edgetts.daemon.playout.synthesis import FallbackUsed, Synthesizer
from edgetts.daemon.reload import AssetsLoaded, await_loaded, load_beside, read_config, refused
from edgetts.daemon.schedule.timetable import Timetable
from edgetts.daemon.sdnotify import Notifier
from edgetts.daemon.status import Status
from edgetts.daemon.stop import bound_the_stop
from edgetts.engine import Voice
from edgetts.errors import AudioDeviceError
from edgetts.runtime.cpu_plan import plan_cpu
from edgetts.runtime.heap import freeze_startup_heap

_LOGGER = logging.getLogger(__name__)

SIDE_LIMIT, SIDE_BACKLOG = 4, 32
"""Side syntheses (Wyoming, HTTP) made in turn, and waiting: each service caps its own too."""

RELOAD_WAIT_S = 4.0
"""How long a stop waits for a reload in progress to end.  Its thread may be inside onnxruntime
(loading a voice, measuring its level and speed), and a process that exits under it aborts in the
library's exit code ("terminate called without an active exception", SIGABRT): 8 of 12 stops sent
0.3-0.9 s after a SIGHUP did (python -m tools.stress_stop --moments reload)."""


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


# ------------------------------------------------------------------ daemon


@dataclass
class DaemonOptions:
    """Seams for tests: fakes injected through the constructor."""

    voice_loader: VoiceLoader = load_configured_voice
    stream_factory: Callable[..., OutputStream] = OutputStream
    link_factory: Callable[..., Any] = MqttLink
    notifier: Notifier | None = None
    install_signals: bool = True
    services: Callable[[Config], list[Service]] = build_services
    reload_wait_s: float = RELOAD_WAIT_S
    int8_command: Callable[[Path, Path], list[str]] | None = None
    """What makes a `degrade_to: int8` variant (model, output); None: `edgetts quantize --static`."""


class Daemon:
    """Owns the queue, the announcement playing, the assets (voices, clips, cache) and the config."""

    def __init__(
        self, config: Config, config_path: str | os.PathLike[str] | None = None, options: DaemonOptions | None = None
    ) -> None:
        self.config_path = None if config_path is None else Path(config_path)
        self._opts = options or DaemonOptions()
        self._notifier = self._opts.notifier or Notifier()
        # SimpleQueue: its put is reentrant, and the signal handlers put from inside the loop's
        # own get. A queue.Queue deadlocked there on its mutex (a SIGTERM that never ended).
        self._inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._assets = Assets(config)
        self._health = Health(config.device.groups)
        self.scheduler = Scheduler(
            config.queue.max_length, config.queue.dedup_window_s, open_dedup_memory(config.queue, self._health)
        )
        self._events = Events(self._health)
        self._journal = IntakeJournal(journal_folder(config.mqtt.journal_dir))  # start-up config, as mqtt/*
        # Placement is decided once, from the start-up config (a change needs a restart).
        self._cpu = plan_cpu(config.cpu)
        if self._cpu.problem is not None:
            self._health.set("cpu", self._cpu.problem)
        # On the synthesis thread when idle; the assets are swapped whole on reload, so it
        # sees the old or the new ones, never half of either.
        keepalive = Keepalive(
            config.keepalive.interval_s,
            lambda: keepalive_run(self._assets.default_voice, self._assets.config.voice.name, self._inbox.put),
        )
        self._side = ClientSynthesis(SIDE_LIMIT, SIDE_BACKLOG)
        self._synth = Synthesizer(
            self._inbox.put, setup=self._setup_synthesis_thread, keepalive=keepalive, side=self._side
        )
        self._feed = EventFeed()
        self._services = Services(self._opts.services(config), self._health)
        self._playout = Playout(self.scheduler, self._synth, self._events, self._health, lambda: self._assets)
        # `degrade_to: int8`: a voice found too slow has its variant made in the background.
        self._int8 = Int8Builder(self._inbox.put, self._opts.int8_command)
        self._playout.degrade.make_int8 = self._int8.request
        ended = lambda ident: self.scheduler.is_duplicate(ident, time.time())  # noqa: E731
        self._timetable = Timetable(config, self._events, self._side, self._health, ended)
        # Other audio lowered while anything plays: its workers do the mixers' I/O, the loop only posts.
        self._duck = Ducking(config.duck, config.queue.resolved_state_dir(), self._inbox.put, self._health)
        self._reloading = False
        self._reload_again = False
        self._rebuild_again = False
        self._stop = False
        self._link: Any = None
        self._next_watchdog = 0.0

    # -------------------------------------------------- read-only seams
    @property
    def config(self) -> Config:
        return self._assets.config

    @property
    def voices(self) -> dict[str, Voice]:
        return self._assets.voices

    @property
    def clips(self) -> ClipLibrary:
        return self._assets.clips

    @property
    def cache(self) -> PhraseCache | None:
        return self._assets.cache

    @property
    def degraded(self) -> dict[str, str]:
        """What does not work as configured (a copy: what -> reason)."""
        return self._health.snapshot()

    @property
    def link(self) -> Any:
        """The broker link (None before :meth:`run`)."""
        return self._link

    @property
    def synthesis_thread(self) -> threading.Thread:
        return self._synth.thread

    @property
    def audio_thread(self) -> threading.Thread | None:
        player = self._playout.player
        return player.thread if player is not None else None

    # ------------------------------------------------------------ entry
    def run(self) -> int:
        """Start everything, loop until SIGTERM/SIGINT, stop cleanly; the exit status."""
        if self._opts.install_signals:
            for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, self.on_signal)
        self._duck.start()  # first: what a killed daemon left lowered comes back while the voices load
        self._notifier.status("loading voices")
        # A voice that does not load must not keep the announcer from starting (issue 6):
        # it runs on clips, says why in `degraded`, and a reload may bring the voice back.
        self._use(build_assets(self.config, self._loading()))
        # Built (password resolved) before any thread starts: a bad credential ends here.
        self._link = TapLink(
            self._opts.link_factory(
                self.config,
                on_message=self._inbox.put,
                on_connection=lambda ok, why: self._inbox.put(_Connection(ok, why)),
                offline_status=self._status("offline"),
            ),
            self._feed,
        )
        self._events.attach(self._link)
        self._start_threads(player_settings(self.config, self._assets.default_rate))
        self._services.start(
            ServiceContext.of_daemon(
                f"{self.config.base_topic}/announce",
                lambda: self._assets,
                self._inbox.put,
                self._side,
                self._feed,
                self._link,
                self.scheduler.snapshot,
            )
        )
        default = self._assets.default_voice
        freeze_startup_heap()  # a full collection must not hold the GIL from the audio thread
        self._notifier.ready(
            f"ready: voice {default.name}, waiting for announcements"
            if default is not None
            else "ready on clips only: the default voice did not load"
        )
        _LOGGER.info(
            "edgetts %s ready: voices %s; %d clips", __version__, ", ".join(self.voices) or "none", len(self.clips)
        )
        try:
            self._loop()
        finally:
            self._shutdown()
        return 0

    def _start_threads(self, settings: PlayerSettings) -> None:
        player = Player(settings, self._inbox.put, stream_factory=self._opts.stream_factory)
        self._playout.player = player
        try:
            player.probe()
        except AudioDeviceError as exc:
            # Keep running: the player reopens with back-off and the status says why.
            _LOGGER.error("%s", exc)
            self._health.set("audio", str(exc))
        player.start()
        self._synth.start()
        self._link.start()

    def on_signal(self, signum: int, _frame: Any = None) -> None:
        """Act on ``signum`` (SIGTERM, SIGINT: stop; SIGHUP: reload), from any thread or as the signal
        handler, which runs between any two bytecodes of the loop itself: so it only enqueues."""
        self._inbox.put(_Signal(signum))

    # ------------------------------------------------------------- loop
    def _loop(self) -> None:
        wd = self._notifier.watchdog_s
        while not self._stop:
            now_mono = time.monotonic()
            timeout = 0.25
            if wd is not None:
                timeout = max(0.0, min(timeout, self._next_watchdog - now_mono))
            deadline = self._playout.pending_deadline()
            if deadline is not None:
                timeout = max(0.0, min(timeout, deadline - now_mono))
            timeout = min(timeout, self._timetable.wait_s())  # an occurrence to render or admit
            try:
                msg = self._inbox.get(timeout=timeout)
            except queue.Empty:
                msg = None
            if msg is not None:
                self._dispatch(msg)
            self._playout.check_deadline()
            for scheduled in self._timetable.turn(self._assets, self.scheduler, self._playout.degrade.status):
                self._dispatch(scheduled)  # admitted like any announcement
            expire(self.scheduler, self._events)
            self._playout.start_next()
            self._duck.update(bool(self._playout.in_hand()))
            if self._link is not None and self._health.take_changed():
                self._link.publish_status(self._status("online"))
            if wd is not None and time.monotonic() >= self._next_watchdog:
                # From the loop that does the work: a hung loop stops the pings (issue 3).
                self._notifier.watchdog()
                self._next_watchdog = time.monotonic() + wd / 2

    def _dispatch(self, msg: Any) -> None:
        if isinstance(msg, Inbound) and msg.topic == self.config.control_topic:
            self._playout.control_message(msg)
        elif isinstance(msg, Control):
            self._playout.control(msg)
        elif isinstance(msg, Inbound):
            entry = admit(msg, self._assets, self.scheduler, self._playout.in_hand(), self._events, self._journal)
            if entry is not None:
                self._playout.admitted(entry)
        elif isinstance(msg, PlayerReport):
            self._playout.on_report(msg)
        elif isinstance(msg, _Signal):
            self._on_signal(msg.signum)
        elif isinstance(msg, _RuntimeProblem):
            self._health.set(msg.what, msg.reason)
        elif isinstance(msg, _Connection):
            if msg.ok:
                self._health.clear("mqtt")
            else:
                self._health.set("mqtt", msg.reason)
        elif isinstance(msg, SpeedSample):
            self._playout.degrade.on_sample(msg, self._assets)
        elif isinstance(msg, AssetsLoaded):
            self._on_assets_loaded(msg)
        elif isinstance(msg, Int8Built):
            self._on_int8_built(msg)
        elif isinstance(msg, FallbackUsed):
            self._playout.on_fallback_used(msg)
        elif isinstance(msg, DuckReport):
            self._duck.on_report(msg)
        else:
            _LOGGER.error("unknown loop message %r", msg)

    # ----------------------------------------------------------- signals
    def _on_signal(self, signum: int) -> None:
        if signum == signal.SIGHUP:
            self._reload()
        else:
            _LOGGER.info("%s: stopping", signal.Signals(signum).name)
            self._halt()

    def _halt(self) -> None:
        self._stop = True
        self._playout.stopping = True

    # ------------------------------------------------------------ assets
    def _loading(self) -> Loading:
        return Loading(
            self._opts.voice_loader, VoiceRuntime(self._cpu.cores, self.config.memory.lock), self._cpu.threads
        )

    def _use(self, assets: Assets) -> None:
        """Swap in ``assets`` (for the next announcement; the one playing keeps its voice object)."""
        self._assets = assets
        self._health.apply_problems(assets.problems)
        # With memory.lock, the voices' weights must be in VmLck; say so once when not.
        reason = memory_problem(assets.config, assets.voices)
        if reason is None:
            self._health.clear("memory")
        else:
            if self._health.get("memory") != reason:
                _LOGGER.warning("%s", reason)
            self._health.set("memory", reason)

    def _reload(self) -> None:
        if self.config_path is None:
            _LOGGER.warning("reload requested but the daemon has no config file")
            return
        if self._reloading:
            self._reload_again = True
            return
        self._notifier.status("reloading configuration")
        try:
            new, note = read_config(self.config_path, self.config)
        except ConfigError as exc:
            self._health.set("config", refused(exc))
            self._notifier.status("reload refused: old config in force")
            return
        self._reloading = True
        load_beside(new, note, self._loading(), self._assets, self._inbox.put)

    def _on_int8_built(self, msg: Int8Built) -> None:
        """A `degrade_to: int8` variant was made (or not): with it, the assets again, config unchanged."""
        if msg.reason is not None:
            _LOGGER.error("the int8 variant %s was not made: %s", msg.output.name, msg.reason)
            return
        _LOGGER.info("int8 variant %s made: the voices' assets are built again with it", msg.output.name)
        self._rebuild()

    def _rebuild(self) -> None:
        """The assets again, from the config in force (the files it names changed, not it)."""
        if self._reloading:  # (that one may have looked before the file was there: again after it)
            self._rebuild_again = True
            return
        self._reloading = True
        load_beside(self.config, self._health.get("config"), self._loading(), self._assets, self._inbox.put)

    def _on_assets_loaded(self, msg: AssetsLoaded) -> None:
        self._reloading = False
        if msg.assets is None:
            _LOGGER.error("reload refused: %s", msg.note)
            self._health.set("config", f"reload refused, old config in force: {msg.note}")
        else:
            new = msg.assets.config
            self._use(msg.assets)
            self.scheduler.reconfigure(new.queue.max_length, new.queue.dedup_window_s)
            self._timetable.reconfigure(new)
            if self._playout.player is not None:
                self._playout.player.reconfigure(player_settings(new, msg.assets.default_rate))
            self._duck.reconfigure(new.duck)
            if msg.note:
                self._health.set("config", msg.note)
            else:
                self._health.clear("config")
            _LOGGER.info("configuration reloaded from %s", self.config_path)
        self._health.changed()
        self._notifier.status(self._health.get("config") or "ready")
        if self._reload_again:
            self._reload_again = False
            self._reload()
        elif self._rebuild_again:
            self._rebuild_again = False
            self._rebuild()

    # ------------------------------------------------- synthesis thread
    def _setup_synthesis_thread(self) -> None:
        """Runs first on the synthesis thread: its NUMA node and core."""
        problem = self._cpu.apply_to_this_thread()
        if problem is not None:
            _LOGGER.warning("synthesis thread: %s", problem)
            self._inbox.put(_RuntimeProblem("cpu", problem))

    # ------------------------------------------------------------ status
    def _status(self, state: str) -> Status:
        assets = self._assets
        default = assets.default_voice
        current = self._playout.current
        status = self._health.status(
            state,
            voice=default.name if default is not None else assets.config.voice.model,
            queue_depth=len(self.scheduler),
            voices=tuple(assets.voices),
            current=current.entry.id if current is not None else None,
            keepalive=self._synth.keepalive.stats().to_dict() if self._synth.keepalive else None,
            speed=self._playout.degrade.status(assets),
        )
        return replace(status, schedule=self._timetable.status())

    # ---------------------------------------------------------- shutdown
    def _shutdown(self) -> None:
        if self._opts.install_signals:  # the process's own daemon, not one a test runs in a thread
            bound_the_stop()
        self._notifier.stopping("stopping")
        self._halt()
        self._services.close()
        self._side.close()
        self._timetable.close()
        self._playout.stop_all()
        if self._link is not None:
            self._link.stop()  # publishes `offline` first (issue 3)
        if self._playout.player is not None:
            self._playout.player.close()
        self._duck.close()  # (after the player: the others come back once edgetts is silent)
        self._synth.close()
        self._int8.stop()
        if self._reloading:  # (nothing else reads the inbox now)
            self._reloading = not await_loaded(self._inbox, self._opts.reload_wait_s)
        self.scheduler.memory.close()
        _LOGGER.info("stopped")


__all__ = ["Daemon", "DaemonOptions"]
