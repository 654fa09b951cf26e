"""Several daemons in one zone, each on its own speaker of one paced sink (issue 19).

What `tests/daemon/test_sync_zones.py` and `tools/bench_sync.py` share: N real
daemons (subprocesses, the real default voice) on one broker, each playing into
its own zone of one PulseAudio null sink (tools/paced_sink.py: one clock domain,
one recording of every zone), announcements published with `play_at`
(edgetts.client.announce.announce with ``sync``), and where each announcement's
first sample really was heard on each speaker: found by cross-correlating the
recording with the announcement's own samples, synthesized here afterwards with
the seed its id gives (edgetts.daemon.playout.sync), so the search is exact to a sample.

Stdlib + numpy at import; edgetts is imported where it is used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tools.onsets import match
from tools.paced_sink import PacedSink, Recording

ROOT = Path(__file__).resolve().parents[1]
RATE = 22050
GROUP = "zone-a"
PREFIX = "sync"


@dataclass
class Announced:
    """One synchronized announcement and what each device said of it."""

    id: str
    text: str
    play_at: float
    events: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """device -> event name -> the event."""
    sent_at: float = 0.0
    """Unix time it was published (play_at - sent_at: the lead)."""


@dataclass
class Heard:
    """Where one device's speaker played one announcement."""

    device: str
    onset_unix: float
    """When the announcement's first sample was (or, joined late, would have been) heard."""
    score: float
    """How well what it played matches the announcement's samples (1.0 = the very samples): the
    median over the reference's voiced 100 ms pieces of their normalized correlation, each sought
    within 2 ms of where the one before matched (:func:`piecewise_score`)."""
    pieces: tuple[float, ...] = ()
    """Each voiced 100 ms piece's score (:func:`piece_scores`): a dropout spoils the pieces it falls in."""


def config_text(device: str, port: int, groups: tuple[str, ...], extra: str = "") -> str:
    return (
        f"device:\n  id: {device}\n  groups: [{', '.join(groups)}]\n"
        f"mqtt:\n  host: 127.0.0.1\n  port: {port}\n  topic_prefix: {PREFIX}\n"
        "  reconnect_min_s: 0.2\n  reconnect_max_s: 1\n"
        "audio:\n  close_idle_s: 600\n"
        "voice:\n  threads: 1\n"  # the reference below is synthesized at 1 thread too
        "queue:\n  dedup_window_s: 600\n"
        "keepalive:\n  interval_s: 0\n"
        # A loaded board's audio thread must not wait for the CPU (SCHED_FIFO: root here; on a
        # board, LimitRTPRIO=10 or CAP_SYS_NICE): starved past the device's buffer, it loses time.
        "cpu:\n  realtime_audio: true\n"
        f"logging:\n  level: info\n{extra}"
    )


class SyncRig:
    """``n`` daemons `dev0`...: the first ``in_group`` in group GROUP, each on zone k of one sink."""

    def __init__(self, workdir: Path, port: int, n: int, *, in_group: int | None = None, spare_zones: int = 0) -> None:
        """``spare_zones``: zones n, n+1... of the sink, no daemon's (a reference player's, say)."""
        self.workdir, self.port, self.n = workdir, port, n
        self.in_group = n if in_group is None else in_group
        self.devices = [f"dev{k}" for k in range(n)]
        self.sink = PacedSink(workdir / "pulse", RATE, zones=n + spare_zones)
        self.procs: list[subprocess.Popen[bytes]] = []
        self._stack = ExitStack()

    def __enter__(self) -> SyncRig:
        self._stack.enter_context(self.sink)
        self._stack.callback(self._stop_daemons)
        for k, device in enumerate(self.devices):
            groups = (GROUP,) if k < self.in_group else ()
            path = self.workdir / f"{device}.yaml"
            path.write_text(config_text(device, self.port, groups))
            env = {**os.environ, "ORT_DISABLE_TELEMETRY": "1", "PYTHONUNBUFFERED": "1", **self.sink.zone_env(k)}
            env.pop("JOURNAL_STREAM", None)
            with open(self.workdir / f"{device}.log", "ab") as log:
                self.procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "edgetts.cli", "run", "--config", str(path)],
                        cwd=ROOT,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _stop_daemons(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def config(self, device: str = "dev0") -> Any:
        from edgetts.config import load_config

        return load_config(self.workdir / f"{device}.yaml")

    def wait_online(self, timeout: float = 120.0) -> dict[str, dict[str, Any]]:
        """Every daemon's retained status once all are online with their voice's speed measured."""
        from edgetts.client.announce import member_statuses

        deadline = time.monotonic() + timeout
        statuses: dict[str, dict[str, Any]] = {}
        while time.monotonic() < deadline:
            statuses = member_statuses(self.config(), None, None, 2.0)
            if set(statuses) >= set(self.devices) and all(s.get("speed") for s in statuses.values()):
                return statuses
            for device, proc in zip(self.devices, self.procs):
                if proc.poll() is not None:
                    raise RuntimeError(f"{device} exited {proc.returncode}: {self.log(device)[-2000:]}")
            time.sleep(0.5)
        raise TimeoutError(f"not all online within {timeout} s: {sorted(statuses)}")

    def log(self, device: str) -> str:
        return (self.workdir / f"{device}.log").read_text(errors="replace")

    def announce(
        self,
        ident: str,
        text: str,
        *,
        to: str = f"group/{GROUP}",
        lead: float | None = None,
        play_at: float | None = None,
        timeout: float = 60.0,
    ) -> Announced:
        """Publish one synchronized announcement and wait for every member to end it."""
        from edgetts.client.announce import announce

        payload: dict[str, Any] = {"id": ident, "text": text}
        sent_at = time.time()
        if play_at is not None:
            payload["play_at"] = play_at
        outcome = announce(self.config(), payload, to, sync=play_at is None, lead=lead, timeout=timeout)
        events: dict[str, dict[str, dict[str, Any]]] = {}
        for device, ev in outcome.events:
            events.setdefault(device, {})[ev["event"]] = ev
        assert outcome.play_at is not None
        return Announced(ident, text, float(outcome.play_at), events, sent_at)


class EventLog:
    """Every event of the rig's devices by announcement id (one subscriber on `<prefix>/+/events`)."""

    def __init__(self, config: Any) -> None:
        from edgetts.daemon.inbound.mqtt import reader

        self.by_id: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self._cond = threading.Condition()
        subscribed = threading.Event()
        self._client = reader(
            config, "rig-events", f"{PREFIX}/+/events", self._on_message, lambda *_a: subscribed.set()
        )
        subscribed.wait(5.0)

    def _on_message(self, _c: Any, _u: Any, msg: Any) -> None:
        ev = json.loads(msg.payload)
        with self._cond:
            self.by_id.setdefault(ev["id"], {}).setdefault(msg.topic.split("/")[-2], {})[ev["event"]] = ev
            self._cond.notify_all()

    def wait_finished(self, ident: str, devices: list[str], timeout: float) -> dict[str, dict[str, dict[str, Any]]]:
        """Each device's events of ``ident`` once every one of ``devices`` has ended it."""
        ends = ("finished", "failed", "rejected", "expired", "cancelled")
        deadline = time.monotonic() + timeout
        with self._cond:
            while not all(any(e in self.by_id.get(ident, {}).get(d, {}) for e in ends) for d in devices):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{ident}: not ended by all of {devices}: {self.by_id.get(ident)}")
                self._cond.wait(left)
            return {d: dict(evs) for d, evs in self.by_id.get(ident, {}).items()}

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()


def back_to_back(
    rig: SyncRig, lines: list[str], spacing_s: float, prefix: str = "sync", lead: float | None = None
) -> list[Announced]:
    """One group announcement every ``spacing_s`` (each published with `--sync`, the lead from
    the members' speed, while the one before still plays: the daemons prepare it meanwhile),
    then every member's events of each once all have ended it."""
    from edgetts.client.announce import announce

    members = rig.devices[: rig.in_group]
    log = EventLog(rig.config())
    try:
        items, t0 = [], time.monotonic()
        for k, line in enumerate(lines):
            time.sleep(max(0.0, t0 + k * spacing_s - time.monotonic()))
            sent_at = time.time()
            outcome = announce(
                rig.config(), {"id": f"{prefix}-{k}", "text": line}, f"group/{GROUP}", wait=False, sync=True, lead=lead
            )
            assert outcome.play_at is not None
            items.append(Announced(outcome.id, line, float(outcome.play_at), {}, sent_at))
        for item in items:
            item.events = log.wait_finished(item.id, members, 60.0)
    finally:
        log.close()
    return items


def reference_audio(items: list[Announced]) -> dict[str, np.ndarray]:
    """Each announcement's samples as the daemons synthesize them: default voice at 1 thread, whole
    sentences, noise seeded from the id."""
    from edgetts.config import Config
    from edgetts.daemon.assets import load_configured_voice
    from edgetts.daemon.playout import sync
    from edgetts.daemon.playout.phrase_cache import voice_synthesis_config

    config = Config()
    settings = config.voice.__class__(threads=1)
    voice: Any = load_configured_voice(settings, config.text_options())
    out: dict[str, np.ndarray] = {}
    for item in items:
        seeded = sync.seeded(voice_synthesis_config(settings), item.id)
        chunks = list(voice.synthesize(item.text, seeded, stream=False))
        out[item.id] = np.concatenate([c.audio for c in chunks]).astype(np.float32)
    return out


def find_onset(
    channel: np.ndarray, reference: np.ndarray, around: int, search: int, skip: int = 0
) -> tuple[int, float]:
    """(index in ``channel`` where ``reference`` starts, normalized correlation there), searched
    within ``around`` +- ``search`` samples (onsets.match).  ``skip``: the reference's first samples
    were not played (a late joiner): its rest is matched, and the index is where sample 0 would
    have been."""
    ref = reference[skip : skip + 3 * RATE]  # 3 s is plenty to lock on
    try:
        index, score = match(channel, ref, around + skip, RATE, search / RATE)
    except ValueError:  # the recording ends first
        return around, 0.0
    return index - skip, score


PIECE_S, SLIP_S, ONSET_S = 0.1, 0.002, 0.4


def heard(
    recording: Recording,
    pcm: np.ndarray,
    devices: list[str],
    item: Announced,
    reference: np.ndarray,
    search_s: float = 0.5,
) -> list[Heard]:
    """Where each device's zone (channel k of ``pcm``) played ``item`` (a device that joined late,
    `late_ms` on its `started`, is matched on what it played)."""
    around = int(round(recording.index_at_unix(item.play_at)))
    out = []
    for k, device in enumerate(devices):
        late_ms = item.events.get(device, {}).get("started", {}).get("late_ms", 0.0)
        skip = int(late_ms / 1000.0 * RATE) + int(0.05 * RATE) if late_ms else 0  # (+ its fade-in)
        index, _whole = find_onset(pcm[:, k], reference, around, int(search_s * RATE), skip)
        # Sample 0 is placed by the clip's start: over the whole clip, a slip of the sink later on
        # (see piecewise_score) can win the correlation and move the onset by its size.
        head = reference[skip : skip + int(ONSET_S * RATE)]
        if head.size and np.any(head):
            index = match(pcm[:, k], head, index + skip, RATE, SLIP_S * 4)[0] - skip
        pieces = piece_scores(pcm[:, k], reference, index, skip)
        score = float(np.median(pieces)) if pieces else 0.0
        out.append(Heard(device, recording.unix_at(index), score, tuple(pieces)))
    return out


def piecewise_score(channel: np.ndarray, reference: np.ndarray, onset: int, skip: int = 0) -> float:
    """The median, over ``reference``'s voiced 100 ms pieces from ``skip`` on (at most 3 s), of each
    piece's best normalized correlation with ``channel`` within 2 ms of where the piece before
    matched (``onset``: where sample 0 is): :func:`piece_scores`'s median.

    Not one correlation over the whole clip: the paced sink's PulseAudio slips a zone's stream by a
    sample or twenty now and then, mid-clip, with no underrun on the player's side (seen in
    test_sync_zones: every piece matched at 0.99-1.00, 24 ms then 23 ms after the onset, and the
    clip as a whole scored 0.56).  Piece by piece, another announcement's samples match at about
    0.05, the same text with another noise seed at 0.32."""
    scores = piece_scores(channel, reference, onset, skip)
    return float(np.median(scores)) if scores else 0.0


def piece_scores(channel: np.ndarray, reference: np.ndarray, onset: int, skip: int = 0) -> list[float]:
    """Each of ``reference``'s voiced 100 ms pieces' score, in order (:func:`piecewise_score`)."""
    piece = int(PIECE_S * RATE)
    ref = reference.astype(np.float64)
    loud = 0.03 * float(np.sqrt(np.mean(ref[skip:] ** 2)) or 1.0)
    drift, scores = 0, []
    for start in range(skip, min(ref.size, skip + 3 * RATE) - piece + 1, piece):
        r = ref[start : start + piece]
        if float(np.sqrt(np.mean(r**2))) < loud:
            continue
        try:
            index, score = match(channel, r, onset + start + drift, RATE, SLIP_S)
        except ValueError:  # the recording ends before the piece
            scores.append(0.0)
            continue
        scores.append(max(0.0, score))
        drift = index - onset - start
    return scores


__all__ = [
    "GROUP",
    "PREFIX",
    "RATE",
    "Announced",
    "EventLog",
    "Heard",
    "SyncRig",
    "back_to_back",
    "config_text",
    "find_onset",
    "heard",
    "piece_scores",
    "piecewise_score",
    "reference_audio",
]
