"""Timed starts on a sound card with a real clock (issue 19): three player processes, one clock domain.

Three processes (tests/support/timed_player.py) each run the real Player on the real PyAudio sound
card (edgetts.daemon.playout.sound_card), each into its own zone of one paced sink (tools/paced_sink.py:
a private PulseAudio null sink with a mono remap sink per channel), and play the same audio timed
at the same ``at_unix``, over several targets.  One recording holds all three channels, sample-
aligned; the onsets found there by cross-correlation are compared with what each player REPORTED
(issue 39): a player that reported itself on time (within the 5 ms the product promises) must be
within 5 ms plus a margin measured in the same recording by a reference player on a fourth zone
(timed_player's reference: the sound card's own delay readings, none of the timeline), and one that
reported itself off must be where its `started` ``sync_error_ms`` said, to within that margin.  One player is
handed its audio 300 ms after one target: it joins in step (its samples after the skip align with
the others') and says how much it skipped (``late_ms``), and the recording shows that much
missing.  Some players are stopped (SIGSTOP) for 36-44 ms 0.45 s before a target, as a busy VM
stops a process: their device runs dry for a few ms, and what they then report must be what the
recording shows (CI once found members 5-11 ms late, silently).  (0.45 s: a dry spell is believed
once the readings have shown it for edgetts.audio.timeline.CONFIRM_S; what the player decides there
is tests/audio/test_timed.py's and test_timed_reports.py's, on a simulated clock.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from support.paths import ROOT
from support.timed_player import ReferencePlayer, reference_margin_ms
from tools.onsets import find_onset
from tools.paced_sink import PacedSink, Recording, available

pytestmark = pytest.mark.realtime

RATE = 22050
TARGETS = 6
SPACING_S = 1.5
LATE_PLAYER, LATE_TARGET, LATE_S = 2, 3, 0.3
PROMISE_MS = 5.0
"""What the product promises of a start it reports as on time: within 5 ms of `play_at`."""
STALLS = ((1, 1, 0.038), (0, 2, 0.040), (2, 4, 0.036), (1, 5, 0.044))
"""(player, target, seconds): that player is stopped that long, STALL_BEFORE_S before that target
(its device holds ~35 ms: it runs dry 1-9 ms)."""
STALL_BEFORE_S = 0.45


def _stall(pid: int, at_unix: float, seconds: float, done: list[tuple[float, float]]) -> None:
    while (left := at_unix - time.time()) > 0:
        time.sleep(min(left, 0.01))
    os.kill(pid, signal.SIGSTOP)
    stopped = time.time()
    try:
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)
        done.append((stopped, time.time()))


def _run_players(
    sink: PacedSink, tmp: Path, audio_path: Path, targets: list[float], stalled: dict[int, list[tuple[float, float]]]
) -> list[list[dict[str, object]]]:
    procs, logs = [], []
    env_base = {k: v for k, v in os.environ.items() if k != "ALSA_CAPTURE_FILE"}
    env_base["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    for k in range(3):
        config = {
            "rate": RATE,
            "audio": str(audio_path),
            "targets": targets,
            "late_s": {str(LATE_TARGET): LATE_S} if k == LATE_PLAYER else {},
        }
        path = tmp / f"player{k}.json"
        path.write_text(json.dumps(config))
        logs.append((tmp / f"player{k}.log").open("wb"))
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "support.timed_player", str(path)],
                cwd=ROOT / "tests",
                env={**env_base, **sink.zone_env(k)},
                stdout=subprocess.PIPE,
                stderr=logs[-1],
            )
        )
    stalls = [
        threading.Thread(
            target=_stall,
            args=(procs[k].pid, targets[i] - STALL_BEFORE_S, seconds, stalled.setdefault(n, [])),
            daemon=True,
        )
        for n, (k, i, seconds) in enumerate(STALLS)
    ]
    for thread in stalls:
        thread.start()
    out = []
    try:
        for thread in stalls:
            thread.join(targets[-1] - time.time() + 5)
        for p in procs:
            stdout, _ = p.communicate(timeout=targets[-1] - time.time() + 20)
            assert p.returncode == 0
            out.append([json.loads(line) for line in stdout.decode().splitlines() if line.startswith("{")])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(5)
        for log in logs:
            log.close()
    return out


def test_three_players_start_together_at_play_at_and_a_late_one_joins_in_step(tmp_path: Path) -> None:
    missing = available()
    if missing:
        pytest.skip(f"paced sink unavailable: {missing} not installed (scripts/system-deps.sh --test)")
    audio = np.random.default_rng(19).uniform(-0.3, 0.3, int(0.5 * RATE)).astype(np.float32)
    audio_path = tmp_path / "audio.npy"
    np.save(audio_path, audio)
    ref = np.clip(audio * 32767.0, -32767, 32767)
    stalled: dict[int, list[tuple[float, float]]] = {}
    with PacedSink(tmp_path / "sink", RATE, zones=4) as sink:
        rec: Recording = sink.record()
        first = time.time() + 4.0  # (three Python processes start meanwhile)
        targets = [first + SPACING_S * i for i in range(TARGETS)]
        # the reference: a burst every 0.25 s from 3 s on (its stream's estimate settled: 2 s of
        # readings) to the last target
        reference = ReferencePlayer(
            sink,
            3,
            tmp_path / "reference",
            [first - 1.0 + 0.25 * i for i in range(int((targets[-1] - first + 1.5) * 4))],
        )
        reports = _run_players(sink, tmp_path, audio_path, targets, stalled)
        reference.finish()
        time.sleep(0.3)
        pcm = rec.stop()
    assert pcm.ndim == 2 and pcm.shape[1] == 4
    residuals = reference.residuals_ms(rec, pcm)
    margin = reference_margin_ms(residuals)
    errors = np.zeros((TARGETS, 3))
    for i, target in enumerate(targets):
        around = rec.index_at_unix(target)
        for k in range(3):
            onset = find_onset(pcm[:, k], ref, around, RATE)
            errors[i, k] = (rec.unix_at(onset) - target) * 1000.0
    said = np.zeros((TARGETS, 3))
    late = np.zeros((TARGETS, 3))
    for k, player in enumerate(reports):
        started = {r["i"]: r for r in player if r["kind"] == "started"}
        finished = {r["i"]: r for r in player if r["kind"] == "finished"}
        assert sorted(started) == sorted(finished) == list(range(TARGETS)), player
        for i in range(TARGETS):
            said[i, k] = float(started[i]["sync_error_ms"])  # type: ignore[arg-type]
            late[i, k] = float(started[i]["late_ms"])  # type: ignore[arg-type]
    stall_times = {
        n: [(round(a - targets[STALLS[n][1]], 3), round(b - targets[STALLS[n][1]], 3)) for a, b in v]
        for n, v in stalled.items()
    }
    context = (
        f"onset vs at_unix (ms), target x player:\n{np.round(errors, 2)}\nsync_error_ms said:\n{np.round(said, 2)}\n"
        f"late_ms said:\n{np.round(late, 1)}\nreference residuals (ms): {np.round(residuals, 2)} -> margin "
        f"{margin:.2f} ms\nstalls (stopped, resumed) - target: "
        f"{stall_times}"
    )
    print(context)
    # A start reported on time is on time: the product's 5 ms, and what the recording can tell.
    on_time = (np.abs(said) <= PROMISE_MS) & (late == 0.0)
    assert np.all(np.abs(errors[on_time]) <= PROMISE_MS + margin), context
    # A start reported off time is where it said, to the measured margin (a late joiner's onset is
    # where its sample 0 would have been: its timeline, not its first sound). Within the promise the
    # figure itself is not exact: after a dry spell it can be a few ms off (a stalled player heard
    # 2.4-3.5 ms late said ~0 here; tests/audio/test_timed_reports.py's xfails pin that gap down).
    assert np.all(np.abs(errors - said)[~on_time] <= margin), context
    # Late only where it was made late, and by at least that (it was fed LATE_S after the target):
    # the rest of what it reports is checked against the recording above and below.
    expected_late = np.zeros_like(late, dtype=bool)
    expected_late[LATE_TARGET, LATE_PLAYER] = True
    assert late[LATE_TARGET, LATE_PLAYER] >= LATE_S * 1000.0, context
    for i, k in zip(*np.nonzero((late > 0) & ~expected_late)):  # skipped, unasked: it must be missing
        _assert_skipped(rec, pcm, k, targets[i], errors[i, k], late[i, k], context)
    _assert_skipped(
        rec,
        pcm,
        LATE_PLAYER,
        targets[LATE_TARGET],
        errors[LATE_TARGET, LATE_PLAYER],
        late[LATE_TARGET, LATE_PLAYER],
        context,
    )


def _assert_skipped(
    rec: Recording, pcm: np.ndarray, k: int, target: float, error_ms: float, late_ms: float, context: str
) -> None:
    """Player ``k``'s audio is there only from its join, ``late_ms`` after where its sample 0 is
    (``error_ms`` from ``target``), in step: nothing before, sound right after its fade-in."""
    join = int(round(rec.index_at_unix(target) + error_ms * RATE / 1000.0))
    skipped = int(late_ms * RATE / 1000.0)
    quiet = pcm[join + 50 : join + skipped - 200, k].astype(np.int32)
    assert not np.any(np.abs(quiet) > 1), (k, late_ms, context)
    assert np.any(np.abs(pcm[join + skipped + 200 : join + skipped + 400, k].astype(np.int32)) > 1), (
        k,
        late_ms,
        context,
    )
