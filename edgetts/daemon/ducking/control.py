"""The loop's side of ducking: a worker per configured mixer, told whether edgetts plays.

:meth:`Ducking.update` is called at the end of every loop turn with whether the player has a
job in hand (an announcement, a clip, a chime, or one fading out after a preemption); only a
change is posted to the workers.  The player's last report and the next announcement's start
fall in the same turn, so back-to-back announcements never look idle; the workers' hold
(`duck.hold_ms`) covers the short gaps between announcements that arrive one after the other.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from edgetts.config.duck import DuckSettings
from edgetts.daemon.ducking import journal
from edgetts.daemon.ducking.mixer import Mixer, MixerError
from edgetts.daemon.ducking.worker import DuckReport, DuckWorker, Shape
from edgetts.daemon.health import Health

_LOGGER = logging.getLogger(__name__)

KINDS = ("pulse", "mpd", "snapcast")

CLOSE_WAIT_S = 3.0
"""How long a stop waits for the workers to bring the others back (a fade of at most 0.5 s;
a mixer that does not answer in time is put back at the next start, from its record)."""


def connect_mixer(kind: str, address: str) -> Mixer:
    """A mixer client of ``kind``; MixerError when it cannot be made."""
    if kind == "pulse":
        from edgetts.daemon.ducking.pulse import PulseMixer

        return PulseMixer()
    if kind == "mpd":
        from edgetts.daemon.ducking.mpd import MpdMixer

        return MpdMixer(address)
    if kind == "snapcast":
        from edgetts.daemon.ducking.snapcast import SnapcastMixer

        return SnapcastMixer(address)
    raise MixerError(f"{kind}: not a mixer edgetts knows")


def configured(settings: DuckSettings) -> list[tuple[str, str]]:
    """(kind, address) of every mixer ``settings`` names."""
    mixers = [("pulse", "")] if settings.pulse else []
    mixers += [(kind, getattr(settings, kind)) for kind in ("mpd", "snapcast") if getattr(settings, kind) is not None]
    return mixers


def shape(settings: DuckSettings) -> Shape:
    return Shape(settings.level_db, settings.fade_ms / 1000.0, settings.hold_ms / 1000.0)


class Ducking:
    """Owned by the loop; its workers report back through ``post`` (the loop's inbox)."""

    def __init__(
        self,
        settings: DuckSettings,
        folder: Path | None,
        post: Callable[[DuckReport], None],
        health: Health,
        connect: Callable[[str, str], Mixer] = connect_mixer,
    ) -> None:
        self._settings, self._folder, self._post, self._health = settings, folder, post, health
        self._connect = connect
        self._workers: dict[tuple[str, str], DuckWorker] = {}
        self._playing = False
        self._problems: dict[str, str] = {}

    def start(self) -> None:
        """A worker per configured mixer, and one per record a previous run left of any other mixer."""
        if self._settings.enabled and self._folder is None:
            _LOGGER.warning(
                "duck: no state folder (queue/state_dir): levels lowered when the daemon is killed stay lowered"
            )
        for kind, address in configured(self._settings):
            self._start(kind, address, shape(self._settings))
        for path in journal.found(self._folder) if self._folder is not None else []:
            record = journal.read(path)
            if record is None or (record.kind, record.address) in self._workers or record.kind not in KINDS:
                continue
            if path.name != journal.file_name(record.kind, record.address):
                continue  # (not a file this code wrote)
            self._start(record.kind, record.address, Shape(record.level_db, 0.0, 0.0), recover_only=True)

    def _start(self, kind: str, address: str, how: Shape, recover_only: bool = False) -> None:
        worker = DuckWorker(kind, address, self._connect, how, self._folder, self._post, recover_only=recover_only)
        self._workers[(kind, address)] = worker
        worker.start()
        if self._playing and not recover_only:
            worker.post(True)

    def update(self, playing: bool) -> None:
        """Whether the player has a job in hand now (each loop turn; only a change is posted)."""
        if playing != self._playing:
            self._playing = playing
            for worker in self._workers.values():
                worker.post(playing)

    def on_report(self, report: DuckReport) -> None:
        """A worker's problem, or that it answers again: `degraded: duck` lists every mixer's."""
        if report.problem is None:
            self._problems.pop(report.mixer, None)
        else:
            self._problems[report.mixer] = report.problem
        self._show()

    def _show(self) -> None:
        if self._problems:
            self._health.set("duck", "; ".join(self._problems[k] for k in sorted(self._problems)))
        elif "duck" in self._health:
            self._health.clear("duck")

    def reconfigure(self, settings: DuckSettings) -> None:
        """A reload's `duck`: mixers no longer named are put back and let go, new ones start."""
        if settings == self._settings:
            return
        self._settings = settings
        wanted = configured(settings)
        for key, worker in list(self._workers.items()):
            if key not in wanted:
                worker.close()
                del self._workers[key]
                self._problems.pop(worker.label, None)
            else:
                worker.post(shape(settings))
        for kind, address in wanted:
            if (kind, address) not in self._workers:
                self._start(kind, address, shape(settings))
        self._show()

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Put back what is lowered (each worker's short fade) and end the workers, within ``wait_s``."""
        for worker in self._workers.values():
            worker.close()
        deadline = time.monotonic() + wait_s
        for worker in self._workers.values():
            if worker.thread.is_alive():
                worker.thread.join(max(0.0, deadline - time.monotonic()))
            if worker.thread.is_alive():
                _LOGGER.warning("duck: %s did not answer in time: put back at the next start", worker.label)


__all__ = ["CLOSE_WAIT_S", "KINDS", "Ducking", "configured", "connect_mixer"]
