"""Ducking without servers: the worker's fades, hold, record and manners on a mixer in memory.

The real mixers (PulseAudio, MPD, Snapcast) are in test_duck_servers.py; here a fake one shows
what the worker does with any mixer: lower while playing, hold, restore exactly; no raise
between two announcements in a row; a level a user changed is left alone; a stream that appears
is lowered too; the record on disk comes first and goes last, and a record found at start is put
back; an unreachable mixer is reported and cleared; the curves of the three mixers.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from edgetts.config import ConfigError, parse_config
from edgetts.daemon.ducking import journal
from edgetts.daemon.ducking.control import Ducking
from edgetts.daemon.ducking.mixer import Level, MixerError
from edgetts.daemon.ducking.mpd import MpdMixer
from edgetts.daemon.ducking.snapcast import SnapcastMixer, gain_percent, percent_gain
from edgetts.daemon.ducking.worker import DuckReport, DuckWorker, Shape
from edgetts.daemon.health import Health


class FakeMixer:
    """Levels in memory (linear: ``db`` quieter is the level times 10^(db/20)); every write kept."""

    kind = "mpd"
    address = "fake:1"
    tolerance = 1e-9

    def __init__(self, levels: dict[str, float]) -> None:
        self.lock = threading.Lock()
        self.now = dict(levels)
        self.writes: list[tuple[float, str, float]] = []
        """(time.monotonic(), key, level) of every level the worker set."""
        self.down = False
        self.journal_at_first_write: Any = None
        self.journal: Path | None = None

    def levels(self) -> dict[str, Level]:
        if self.down:
            raise MixerError("mpd fake:1: connection refused")
        with self.lock:
            return dict(self.now)

    def set_levels(self, levels: dict[str, Level]) -> None:
        if self.down:
            raise MixerError("mpd fake:1: connection refused")
        with self.lock:
            if not self.writes and self.journal is not None and self.journal.exists():
                self.journal_at_first_write = json.loads(self.journal.read_text())
            for key, level in levels.items():
                self.now[key] = level
                self.writes.append((time.monotonic(), key, level))

    def lowered(self, level: Level, db: float) -> Level:
        return float(level) * 10.0 ** (db / 20.0)

    def close(self) -> None:
        pass

    def level(self, key: str) -> float:
        with self.lock:
            return self.now[key]

    def user_sets(self, key: str, level: float) -> None:
        with self.lock:
            self.now[key] = level


def wait_for(pred: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.005)


DB = -20.0  # a factor of 0.1 on the fake's linear curve
SHAPE = Shape(DB, 0.1, 0.3)


@pytest.fixture()
def reports() -> list[DuckReport]:
    return []


_STARTED: list[DuckWorker] = []


@pytest.fixture(autouse=True)
def _close_workers() -> Iterator[None]:
    yield
    while _STARTED:
        w = _STARTED.pop()
        w.close()
        w.thread.join(5)


def worker(
    mixer: FakeMixer, reports: list[DuckReport], folder: Path | None = None, how: Shape = SHAPE, **kw: Any
) -> DuckWorker:
    w = DuckWorker("mpd", "fake:1", lambda kind, address: mixer, how, folder, reports.append, **kw)
    if folder is not None:
        mixer.journal = folder / journal.file_name("mpd", "fake:1")
    w.start()
    _STARTED.append(w)
    return w


def test_lowered_while_playing_held_then_restored_exactly(tmp_path: Path, reports: list[DuckReport]) -> None:
    mixer = FakeMixer({"a": 0.8, "b": 0.5})
    w = worker(mixer, reports, tmp_path, how=Shape(DB, 0.1, 1.0))
    w.post(True)
    wait_for(lambda: mixer.level("a") == pytest.approx(0.08) and mixer.level("b") == pytest.approx(0.05), what="down")
    # the fade went down in steps, never up
    a_levels = [level for _t, key, level in mixer.writes if key == "a"]
    assert len(a_levels) >= 3 and a_levels == sorted(a_levels, reverse=True), a_levels
    # the record was on disk before the first level was set, with the levels before
    assert mixer.journal_at_first_write["targets"]["a"] == {"before": 0.8, "lowered": pytest.approx(0.08)}
    assert mixer.journal_at_first_write["level_db"] == DB
    idle_at = time.monotonic()
    w.post(False)
    wait_for(lambda: mixer.level("a") == 0.8 and mixer.level("b") == 0.5, what="back up")
    first_up = min(t for t, key, _level in mixer.writes if key == "a" and t >= idle_at)
    assert first_up - idle_at >= 1.0  # (held for hold_s before the fade back up)
    wait_for(lambda: mixer.journal is not None and not mixer.journal.exists(), what="record removed")
    w.close()
    w.thread.join(5)
    assert not w.thread.is_alive() and reports == []


def test_no_raise_between_announcements_in_a_row(reports: list[DuckReport]) -> None:
    mixer = FakeMixer({"a": 1.0})
    w = worker(mixer, reports, how=Shape(DB, 0.05, 0.5))
    w.post(True)
    wait_for(lambda: mixer.level("a") == pytest.approx(0.1))
    for _ in range(3):  # idle, and the next one within the hold
        w.post(False)
        time.sleep(0.1)
        w.post(True)
        time.sleep(0.1)
    w.post(False)
    wait_for(lambda: mixer.level("a") == 1.0)
    levels = [level for _t, _key, level in mixer.writes]
    bottom = levels.index(min(levels))
    # down once, up once: the levels fall, then only rise
    assert levels[: bottom + 1] == sorted(levels[: bottom + 1], reverse=True)
    assert levels[bottom:] == sorted(levels[bottom:]), levels
    w.close()


def test_a_level_the_user_changed_is_left_as_they_set_it(reports: list[DuckReport]) -> None:
    mixer = FakeMixer({"a": 0.8, "b": 0.8})
    w = worker(mixer, reports, how=Shape(DB, 0.05, 0.1))
    w.post(True)
    wait_for(lambda: mixer.level("a") == pytest.approx(0.08))
    time.sleep(0.1)
    mixer.user_sets("b", 0.3)  # someone turns it up during the announcement
    time.sleep(1.5)  # (a refresh reads it)
    assert mixer.level("b") == 0.3  # not lowered again
    w.post(False)
    wait_for(lambda: mixer.level("a") == 0.8)
    time.sleep(0.2)
    assert mixer.level("b") == 0.3
    w.close()


def test_a_stream_that_appears_while_playing_is_lowered_and_restored(reports: list[DuckReport]) -> None:
    mixer = FakeMixer({"a": 1.0})
    w = worker(mixer, reports, how=Shape(DB, 0.05, 0.1))
    w.post(True)
    wait_for(lambda: mixer.level("a") == pytest.approx(0.1))
    mixer.user_sets("new", 0.6)  # a player starts during the announcement
    wait_for(lambda: mixer.level("new") == pytest.approx(0.06), what="the new stream lowered")
    w.post(False)
    wait_for(lambda: mixer.level("a") == 1.0 and mixer.level("new") == 0.6)
    w.close()


def test_a_record_left_by_a_killed_daemon_is_put_back(tmp_path: Path, reports: list[DuckReport]) -> None:
    path = tmp_path / journal.file_name("mpd", "fake:1")
    targets = {"a": (0.8, 0.08), "b": (0.5, 0.05), "c": (0.5, 0.05), "gone": (0.5, 0.05)}
    journal.write(path, journal.Record("mpd", "fake:1", DB, targets))
    # a: still lowered; b: mid-fade when killed; c: set by a user since (above what it was); gone: gone
    mixer = FakeMixer({"a": 0.08, "b": 0.2, "c": 0.9})
    w = worker(mixer, reports, tmp_path)
    wait_for(lambda: mixer.level("a") == 0.8 and mixer.level("b") == 0.5, what="put back")
    wait_for(lambda: not path.exists(), what="record removed")
    assert mixer.level("c") == 0.9
    w.close()


def test_a_record_of_a_mixer_no_longer_configured_is_put_back_and_its_worker_ends(tmp_path: Path) -> None:
    path = tmp_path / journal.file_name("mpd", "fake:1")
    journal.write(path, journal.Record("mpd", "fake:1", DB, {"volume": (80, 8)}))
    mixer = FakeMixer({"volume": 8})
    settings = parse_config("").duck  # (nothing configured)
    ducking = Ducking(settings, tmp_path, lambda _r: None, Health(), connect=lambda kind, address: mixer)
    ducking.start()
    wait_for(lambda: mixer.level("volume") == 80 and not path.exists())
    wait_for(lambda: not any(w.thread.is_alive() for w in ducking._workers.values()), what="its worker ends")


def test_unreachable_is_reported_and_cleared_and_never_blocks(reports: list[DuckReport], monkeypatch: Any) -> None:
    monkeypatch.setattr("edgetts.daemon.ducking.worker.RETRY_S", 0.2)
    mixer = FakeMixer({"a": 1.0})
    mixer.down = True
    w = worker(mixer, reports)
    w.post(True)  # (returns at once: the loop never waits on a mixer)
    wait_for(lambda: bool(reports), what="a report")
    assert reports[0] == DuckReport("mpd fake:1", "mpd fake:1: connection refused")
    cpu = time.process_time()
    time.sleep(1.0)
    assert time.process_time() - cpu < 0.3  # waiting for the next try, not spinning
    health = Health()
    ducking = Ducking(parse_config("").duck, None, lambda _r: None, health)
    ducking.on_report(reports[0])
    assert health.get("duck") == "mpd fake:1: connection refused"
    mixer.down = False
    wait_for(lambda: len(reports) == 2, what="cleared")
    assert reports[1] == DuckReport("mpd fake:1", None)
    ducking.on_report(reports[1])
    assert "duck" not in health
    wait_for(lambda: mixer.level("a") == pytest.approx(0.1), what="lowered once it answers, still playing")
    w.post(False)
    wait_for(lambda: mixer.level("a") == 1.0)
    w.close()


def test_close_puts_back_at_once_and_ends(reports: list[DuckReport]) -> None:
    mixer = FakeMixer({"a": 1.0})
    w = worker(mixer, reports, how=Shape(DB, 0.05, 30.0))
    w.post(True)
    wait_for(lambda: mixer.level("a") == pytest.approx(0.1))
    w.close()  # (without the 30 s hold)
    w.thread.join(5)
    assert not w.thread.is_alive() and mixer.level("a") == 1.0


def test_curves() -> None:
    # MPD: cubic percentage (its ALSA hardware, PulseAudio, PipeWire mixers): 80 % at -15 dB -> 45 %
    mpd = MpdMixer("127.0.0.1:6600")
    assert mpd.lowered(80, -15.0) == 45 and mpd.lowered(100, -60.0) == 10 and mpd.lowered(0, -15.0) == 0
    # Snapcast: snapclient's software mixer, gain (10^(p/100) - 1) / 9: 80 % at -15 dB -> 29 %
    snap = SnapcastMixer("127.0.0.1:1705")
    assert snap.lowered(80, -15.0) == 29
    assert percent_gain(29) / percent_gain(80) == pytest.approx(10 ** (-15 / 20), rel=0.03)
    assert gain_percent(percent_gain(57.0)) == pytest.approx(57.0)


def test_config_keys_and_errors(tmp_path: Path) -> None:
    config = parse_config("duck:\n  level_db: -12\n  fade_ms: 250\n  pulse: true\n  mpd: 127.0.0.1:6600\n")
    assert (config.duck.level_db, config.duck.fade_ms, config.duck.pulse) == (-12.0, 250, True)
    assert config.duck.mpd == "127.0.0.1:6600" and config.duck.snapcast is None and config.duck.enabled
    assert not parse_config("").duck.enabled
    for text, expected in (
        ("duck:\n  level_db: 3\n", "F:2 duck/level_db: must be -60 to -1 dB"),
        ("duck:\n  fade_ms: 9000\n", "F:2 duck/fade_ms: must be 0-5000"),
        ("duck:\n  pulse: true\n  mpd: localhost\n", "F:3 duck/mpd: 'localhost' is not HOST:PORT"),
        ("duck:\n  snapcast: 'h:0'\n", "F:2 duck/snapcast: 0 is not a TCP port (1-65535)"),
        ("duck:\n  pulse: yes please\n", "F:2 duck/pulse: expected true or false"),
        ("duck:\n  levels_db: -10\n", "F:2 duck/levels_db: unknown key"),
    ):
        path = tmp_path / "c.yaml"
        path.write_text(text)
        with pytest.raises(ConfigError) as info:
            from edgetts.config import load_config

            load_config(path)
        assert info.value.problems[0].replace(str(path), "F").startswith(expected), (text, info.value.problems)


def test_a_reload_lets_a_mixer_go_and_starts_the_new_one(tmp_path: Path) -> None:
    mixers = {"a:1": FakeMixer({"volume": 80}), "b:2": FakeMixer({"volume": 60})}
    duck = lambda address: parse_config(f"duck:\n  mpd: {address}\n  fade_ms: 50\n  hold_ms: 100\n").duck  # noqa: E731
    ducking = Ducking(duck("a:1"), tmp_path, lambda _r: None, Health(), connect=lambda _kind, address: mixers[address])
    ducking.start()
    ducking.update(True)
    wait_for(lambda: mixers["a:1"].level("volume") == pytest.approx(80 * 10 ** (-15 / 20)), what="a lowered")
    ducking.reconfigure(duck("b:2"))  # (while it plays)
    wait_for(lambda: mixers["a:1"].level("volume") == 80, what="a put back")
    wait_for(lambda: mixers["b:2"].level("volume") == pytest.approx(60 * 10 ** (-15 / 20)), what="b lowered")
    ducking.update(False)
    wait_for(lambda: mixers["b:2"].level("volume") == 60, what="b put back")
    ducking.close()
    assert list(tmp_path.glob("duck-*.json")) == []
