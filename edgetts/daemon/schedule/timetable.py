"""The loop's hook into the timetable: at each turn, what is due becomes an announcement.

On the loop only (edgetts.daemon.loop), like everything that owns state.  At each turn
:meth:`Timetable.turn` asks the planner what is due and:

* renders an occurrence's speech into the phrase cache ``prepare_s`` before its time
  (edgetts.daemon.schedule.render);
* hands the loop an occurrence ``ADMIT_LEAD_S`` before its time as an :class:`Inbound` on the
  topic its target would have used, admitted like any other announcement, with `play_at` = its
  second and the id ``<entry>@<UTC time>`` (so dedup makes it once, and every member of a group
  seeds the same noise: the same samples in step);
* says a missed one `expired`.

Every event of an occurrence carries ``schedule``: its entry's id.  A group or `all` entry is
played by every member that has it in its own schedule, each its own copy with the same id and
`play_at`: nothing goes through the broker, so a timetable plays with the broker down, and there
is no member whose absence silences the others (docs/schedule.md).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from edgetts.config import Config
from edgetts.daemon.admission.intake import PayloadError, clean_text
from edgetts.daemon.admission.scheduler import Entry
from edgetts.daemon.assets import Assets
from edgetts.daemon.events import Events
from edgetts.daemon.health import Health
from edgetts.daemon.inbound.message import Inbound
from edgetts.daemon.playout import sync
from edgetts.daemon.playout.client_synthesis import ClientSynthesis
from edgetts.daemon.playout.phrase_cache import voice_synthesis_config
from edgetts.daemon.schedule.planner import Here, Occurrence, Planner
from edgetts.daemon.schedule.render import Renders
from edgetts.daemon.schedule.state import FILE_NAME, ScheduleState
from edgetts.engine import SynthesisConfig
from edgetts.errors import UnspeakableTextError
from edgetts.text.prepare import Prepared
from edgetts.text.ssml import SSMLError

_LOGGER = logging.getLogger(__name__)

ADMIT_LEAD_S = sync.DEFAULT_LEAD_S
"""An occurrence is admitted this long before its second: its speech is in the cache, and the
audio thread runs the device on silence meanwhile to measure its delay (edgetts.audio.timed_start)."""
PREPARE_FLOOR_S = 10.0
"""The shortest automatic ``prepare_s``."""
PREPARE_FACTOR = 3.0
"""Automatic ``prepare_s``: this many times the rendering's measured cost, plus PREPARE_MARGIN_S:
it runs only while no announcement is synthesized, and a minute's speed varies."""
PREPARE_MARGIN_S = 5.0
DEFAULT_RTF = 1.0
"""A voice's real-time factor before it was measured: slower than the default voice at one thread
on a Raspberry Pi 4 (about 0.8, /work/shared/notes/board-speed.md)."""
SPEED_EVERY_S = 5.0
"""How often the measured speed is read again (it is the last minute's)."""


def state_path(config: Config) -> Path | None:
    folder = config.queue.resolved_state_dir()
    return None if folder is None else folder / FILE_NAME


def slowest_rtf(speed: dict[str, Any] | None) -> float:
    """The slowest real-time factor measured of any configured voice (its last minute's, or at load)."""
    voices = (speed or {}).get("voices") or {}
    found = [
        float(rtf)
        for name, measured in voices.items()
        if "/" not in name and isinstance(measured, dict)  # ("a/b.onnx": a degrade_to variant)
        for rtf in (measured.get("rtf_1min"), measured.get("rtf_load"))
        if isinstance(rtf, (int, float))
    ]
    return max(found, default=DEFAULT_RTF)


def auto_prepare_s(text: str | None, rtf: float) -> float:
    """``prepare_s`` when it is not configured: enough to render ``text`` at ``rtf`` (None: a clip)."""
    if text is None:
        return ADMIT_LEAD_S
    speech_s = len(text) / sync.SPOKEN_CHARS_PER_S
    return max(PREPARE_FLOOR_S, PREPARE_FACTOR * rtf * speech_s + PREPARE_MARGIN_S)


class Timetable:
    """The schedule of a running daemon (see the module's doc)."""

    def __init__(
        self,
        config: Config,
        events: Events,
        side: ClientSynthesis,
        health: Health,
        ended: Callable[[str], bool],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._clock, self._events, self._config = clock, events, config
        self._state = ScheduleState(state_path(config))
        self._planner = Planner(config.schedule, Here.of(config), self._state, clock(), ended)
        if self._state.problem is not None and "state" not in health:
            health.set("state", self._state.problem)
        self._renders = Renders(side)
        self._retry: dict[str, Occurrence] = {}
        """Renders the side lane had no room for yet: tried again at each turn."""
        self._admitted: dict[str, Occurrence] = {}
        self._speed: tuple[float, dict[str, Any], float] | None = None
        """(when, the measured speed, its slowest real-time factor): read again every SPEED_EVERY_S."""
        self._wake: float | None = 0.0
        """When the next turn has something to do (Unix seconds); None: nothing is to come."""

    @property
    def planner(self) -> Planner:
        return self._planner

    @property
    def renders(self) -> Renders:
        return self._renders

    def reconfigure(self, config: Config) -> None:
        """A reload's config (the old one stays when the reload was refused: never called then)."""
        self._config = config
        self._planner.reconfigure(config.schedule, Here.of(config), self._clock())
        self._retry.clear()
        self._wake = 0.0

    def wait_s(self) -> float:
        """Seconds until the next turn has something to do (the loop's inbox wait is no longer)."""
        return math.inf if self._wake is None else max(0.0, self._wake - self._clock())

    def turn(self, assets: Assets, queued: Iterable[Entry], speed: Callable[[Assets], dict[str, Any]]) -> list[Inbound]:
        """What is due now: renders started, misses said; the occurrences to admit, as messages."""
        now = self._clock()
        measured, rtf = self._measured(now, assets, speed)

        def lead(occ: Occurrence) -> float:
            return self._lead(occ, assets, measured)

        def prepare(occ: Occurrence) -> float:
            return self._prepare_s(occ, rtf)

        due = self._planner.step(now, lead, prepare)
        for occ in [*due.prepare, *self._retry.values()]:
            self._retry.pop(occ.ident, None)
            if occ.at - ADMIT_LEAD_S > now and not self._render(occ, assets):
                self._retry[occ.ident] = occ
        for occ in due.missed:
            catch_up = self._config.schedule.catch_up if self._config.schedule.catch_up_s else "off"
            self._events.tag(occ.ident, schedule=occ.entry.id)
            self._events.publish(
                occ.ident,
                "expired",
                f"missed at {occ.label}: the daemon was not running (schedule/catch_up: {catch_up})",
            )
        out = []
        for occ in due.admit:
            speech = self._speech(occ, assets)
            if speech is not None and self._renders.running(speech[0]):
                self._renders.drop(speech[0])  # not done in time: it is synthesized now instead
            out.append(self._inbound(occ, now))
        self._unpin(queued, now)
        self._wake = self._planner.wake(now, lead, prepare)
        return out

    def status(self) -> dict[str, Any] | None:
        """The retained status's `schedule`: this device's next occurrence, or None."""
        occ = self._planner.next()
        if occ is None:
            return None
        entry = occ.entry
        kind, name = entry.target()
        out: dict[str, Any] = {
            "id": entry.id,
            "at": occ.at,
            "local": occ.label,
            "to": "all" if kind == "all" else f"{kind}/{name or self._config.device.id}",
        }
        out["text" if entry.text is not None else "clip"] = entry.text if entry.text is not None else entry.clip
        return out

    def close(self) -> None:
        self._renders.close()

    # ------------------------------------------------------------ horizons
    def _measured(
        self, now: float, assets: Assets, speed: Callable[[Assets], dict[str, Any]]
    ) -> tuple[dict[str, Any], float]:
        """The measured speed (the status's `speed`) and its slowest real-time factor, as of now."""
        if self._speed is None or not 0.0 <= now - self._speed[0] < SPEED_EVERY_S:
            measured = speed(assets)
            self._speed = (now, measured, slowest_rtf(measured))
        return self._speed[1], self._speed[2]

    def _prepare_s(self, occ: Occurrence, rtf: float) -> float:
        configured = self._config.schedule.prepare_s
        return configured if configured is not None else auto_prepare_s(occ.entry.text, rtf)

    def _lead(self, occ: Occurrence, assets: Assets, measured: dict[str, Any]) -> float:
        """When it is admitted: ADMIT_LEAD_S with its speech in the cache (or a clip); without a cache,
        the lead a synchronized announcement would take (its first sentence synthesized by then)."""
        entry = occ.entry
        if entry.text is None or assets.cache is not None:
            return ADMIT_LEAD_S
        own = {"speed": measured, "voices": list(assets.voices)}
        return max(ADMIT_LEAD_S, sync.sync_lead({"text": entry.text, "voice": entry.voice}, [own]))

    # ---------------------------------------------------------------- work
    def _render(self, occ: Occurrence, assets: Assets) -> bool:
        """Start rendering ``occ``'s speech into the cache; False when the side lane has no room yet."""
        speech = self._speech(occ, assets)
        if speech is None or assets.cache is None:
            return True
        key, text, config = speech
        name = occ.entry.voice or assets.config.voice.name
        return self._renders.start(key, assets.voices[name], text, config, assets.cache)

    def _speech(self, occ: Occurrence, assets: Assets) -> tuple[str, Prepared, SynthesisConfig] | None:
        """(phrase-cache key, prepared text, synthesis settings) exactly as the play-out will look its
        announcement up (edgetts.daemon.playout.source_choice: a `play_at` one is seeded from its id);
        None when it is not cached: a clip, no cache, its voice not loaded (at its time it falls back
        as any announcement does), or text admission will refuse (and say why, at its time)."""
        entry = occ.entry
        name = entry.voice or assets.config.voice.name
        settings = assets.config.all_voices().get(name)
        if entry.text is None or assets.cache is None or name not in assets.voices or settings is None:
            return None
        try:
            text = assets.prepare(name, clean_text(entry.text).strip())
        except (PayloadError, SSMLError, UnspeakableTextError) as exc:
            _LOGGER.warning("schedule %s: its text cannot be rendered ahead: %s", entry.id, exc)
            return None
        config = sync.seeded(voice_synthesis_config(settings), occ.ident)
        key = assets.cache_key(name, text, config)
        return None if key is None else (key, text, config)

    def _inbound(self, occ: Occurrence, now: float) -> Inbound:
        """The occurrence as a message on the topic its target would have used."""
        entry, config = occ.entry, self._config
        payload: dict[str, Any] = {"id": occ.ident}
        for key in ("text", "clip", "priority", "voice", "chime"):
            if getattr(entry, key) is not None:
                payload[key] = getattr(entry, key)
        if entry.repeat != 1:
            payload["repeat"] = entry.repeat
        if not occ.late:
            payload["play_at"] = occ.at
        kind, name = entry.target()
        prefix = config.mqtt.topic_prefix
        topic = {"all": f"{prefix}/all/announce", "group": f"{prefix}/group/{name}/announce"}.get(
            kind, f"{config.base_topic}/announce"
        )
        self._events.tag(occ.ident, schedule=entry.id)
        self._admitted[occ.ident] = occ
        _LOGGER.info("schedule %s: %s%s", entry.id, occ.label, " (late, catch_up)" if occ.late else "")
        return Inbound(topic, json.dumps(payload).encode(), None, False, now, time.monotonic())

    def _unpin(self, queued: Iterable[Entry], now: float) -> None:
        """A device's own occurrence still queued at its second (a more urgent one plays): it plays
        whole when its turn comes, rather than join itself late; a group's stays in step."""
        for entry in queued:
            occ = self._admitted.get(entry.id)
            if occ is not None and entry.play_at is not None and entry.play_at < now:
                if occ.entry.target()[0] == "device":
                    entry.play_at = None
        for ident in [i for i, occ in self._admitted.items() if occ.at < now - 3600.0]:
            del self._admitted[ident]


__all__ = ["ADMIT_LEAD_S", "Timetable", "auto_prepare_s", "slowest_rtf"]
