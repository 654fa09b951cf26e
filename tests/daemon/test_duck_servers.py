"""Ducking with real mixers on loopback: MPD and Snapcast lowered during an announcement and brought
back after it, no raise between two in a row, an unreachable MPD (`degraded: duck`, and the
announcement plays all the same) and the report clearing once it answers.

The daemon runs in this process (fake voice, ALSA capture paced to the wall clock so an
announcement lasts as long as its audio); each level is read from the server itself.  The
PulseAudio tone stream and the daemon killed mid-announcement are in test_duck_pulse.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.console import free_port
from support.daemon import DaemonRig
from support.mixers import MpdServer, SnapServer, missing
from support.pcm import assert_played

pytestmark = pytest.mark.mqtt

TEXT = " ".join(f"Sentence number {i} is spoken here." for i in range(16))  # ~3 s of the fake voice
LEVEL_DB, FADE_MS, HOLD_MS = -15, 100, 1500
MPD_LOW = 45  # 80 % at -15 dB on MPD's cubic curve: 80 * 10^(-15/60) = 44.99
SNAP_LOW = 29  # 80 % at -15 dB on snapclient's curve (edgetts.daemon.ducking.snapcast)
FADE = int(22050 * 5 / 1000)  # (audio.fade_ms at each end of the announcement)


def duck_yaml(**keys: Any) -> str:
    keys = {"level_db": LEVEL_DB, "fade_ms": FADE_MS, "hold_ms": HOLD_MS, **keys}
    return "duck:\n" + "".join(f"  {k}: {v}\n" for k, v in keys.items())


def wait_for(pred: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll until ``pred``; the time.monotonic() it held."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.01)
    return time.monotonic()


@pytest.fixture(scope="module")
def mpd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MpdServer]:
    if why := missing("mpd"):
        pytest.skip(f"{why} not installed (Debian package mpd: scripts/system-deps.sh --test)")
    with MpdServer(tmp_path_factory.mktemp("mpd")) as server:
        yield server


@pytest.fixture(scope="module")
def snapserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SnapServer]:
    if why := missing("snapserver", "snapclient"):
        pytest.skip(f"{why} not installed (Debian packages snapserver, snapclient: scripts/system-deps.sh --test)")
    with SnapServer(tmp_path_factory.mktemp("snapcast")) as server:
        yield server


def rig(daemon_rig: Callable[..., DaemonRig], state: Path, duck: str) -> DaemonRig:
    state.mkdir(exist_ok=True)
    return daemon_rig(extra=duck, audio_extra="realtime_pacing: true", queue_extra=f"state_dir: {state}")


def test_mpd_and_snapcast_lowered_while_it_plays_and_restored_after_the_hold(
    daemon_rig: Callable[..., DaemonRig], mpd: MpdServer, snapserver: SnapServer, tmp_path: Path
) -> None:
    mpd.command("setvol 80")
    snapserver.call("Client.SetVolume", {"id": snapserver.client_id, "volume": {"muted": False, "percent": 80}})
    state = tmp_path / "state"
    r = rig(daemon_rig, state, duck_yaml(mpd=mpd.address, snapcast=snapserver.address))
    assert "duck" not in {d["what"] for d in (r.status or {}).get("degraded", [])}
    r.probe.publish({"id": "long", "text": TEXT})
    r.probe.wait_event("long", "started", 20)
    wait_for(lambda: mpd.volume() == MPD_LOW and snapserver.client_volume() == SNAP_LOW, 10, "both lowered")
    assert "finished" not in r.probe.events_of("long")  # (lowered during the announcement)
    assert sorted(p.name for p in state.glob("duck-*.json")) == [
        f"duck-mpd-127.0.0.1-{mpd.port}.json",
        f"duck-snapcast-127.0.0.1-{snapserver.control_port}.json",
    ]
    r.probe.wait_event("long", "finished", 30)
    finished = time.monotonic()
    assert (mpd.volume(), snapserver.client_volume()) == (MPD_LOW, SNAP_LOW)  # held after it ended
    back = wait_for(lambda: mpd.volume() == 80 and snapserver.client_volume() == 80, 10, "both restored")
    assert back - finished >= HOLD_MS / 1000.0 - 0.1
    assert list(state.glob("duck-*.json")) == []  # (nothing left to put back after a kill)


def test_two_announcements_in_a_row_do_not_bring_the_music_up_between(
    daemon_rig: Callable[..., DaemonRig], mpd: MpdServer, tmp_path: Path
) -> None:
    mpd.command("setvol 80")
    r = rig(daemon_rig, tmp_path / "state", duck_yaml(mpd=mpd.address))
    seen: list[tuple[float, int]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.append((time.monotonic(), mpd.volume()))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        r.probe.publish({"id": "first", "text": TEXT[:200]})
        r.probe.publish({"id": "second", "text": TEXT[:200]})
        r.probe.wait_event("second", "finished", 30)
        second_done = time.monotonic()
        assert "finished" in r.probe.events_of("first")
        wait_for(lambda: bool(seen) and seen[-1][1] == 80 and seen[-1][0] > second_done, 10, "restored")
    finally:
        stop.set()
        watcher.join(5)
    lowest = next(i for i, (_t, v) in enumerate(seen) if v == MPD_LOW)
    between = [v for t, v in seen[lowest:] if t <= second_done]
    assert between and set(between) == {MPD_LOW}, seen  # down once, up once: no pumping


def test_an_unreachable_mpd_is_degraded_and_the_announcement_plays(
    daemon_rig: Callable[..., DaemonRig], tmp_path: Path
) -> None:
    port = free_port()  # (nothing listens there)
    r = rig(daemon_rig, tmp_path / "state", duck_yaml(mpd=f"127.0.0.1:{port}"))
    status = r.probe.wait_status(lambda s: any(d["what"] == "duck" for d in s["degraded"]), 15)
    reason = next(d["reason"] for d in status["degraded"] if d["what"] == "duck")
    assert reason.startswith(f"mpd 127.0.0.1:{port}: ") and "refused" in reason, reason
    r.probe.publish({"id": "spoken", "text": "The shop closes in ten minutes."})
    done = r.probe.wait_event("spoken", "finished", 20)
    assert done["underruns"] == 0
    assert_played(r.capture.pcm(), r.expected("The shop closes in ten minutes."), FADE)  # (all of it)


def test_degraded_duck_clears_once_mpd_answers(daemon_rig: Callable[..., DaemonRig], tmp_path: Path) -> None:
    if why := missing("mpd"):
        pytest.skip(f"{why} not installed (Debian package mpd: scripts/system-deps.sh --test)")
    port = free_port()
    r = rig(daemon_rig, tmp_path / "state", duck_yaml(mpd=f"127.0.0.1:{port}"))
    r.probe.wait_status(lambda s: any(d["what"] == "duck" for d in s["degraded"]), 15)
    with MpdServer(tmp_path / "mpd", port):
        # (tried again every RETRY_S = 5 s)
        r.probe.wait_status(
            lambda s: s["state"] == "online" and not any(d["what"] == "duck" for d in s["degraded"]), 20
        )
