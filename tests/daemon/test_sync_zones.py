"""Many speakers, one voice (issue 19): three real daemons, one group announcement with --sync.

Each daemon (a subprocess with the real default voice) plays into its own zone of one paced
sink, so one recording holds every speaker on one clock.  Each announcement's first sample is
found on each speaker by cross-correlation with its own samples (synthesized here afterwards,
seeded from its id as every daemon seeds it), over 12 announcements back to back (each published
while the one before plays), with a CPU hog on the core of one daemon.  A fourth daemon that
receives one announcement after its `play_at` joins in step, and says how late.

A realtime test (issue 39): its verdicts compare what each member REPORTED with what the recording
shows.  A member that said it was on time (within the product's 5 ms) must be within 5 ms plus a
margin measured in the same recording by a reference player on a fifth zone (support.timed_player's
reference: the sound card's own delay readings, none of the timeline); one that said it was off
must be where its `started` said (``sync_error_ms``), to within that margin; what it said it
skipped (``late_ms``) must be missing from its zone; and every voiced 100 ms piece of what it
played must be the very samples, but for the pieces the dropouts its `finished` counted
(``underruns``, ``gap_ms``) can spoil.  What the members decide (play_at, the
lead, the late join, the silence before sample 0, what is skipped) is tested on simulated clocks:
tests/audio/test_timed.py, test_timed_reports.py, tests/daemon/test_sync_units.py.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgetts.audio.timeline import CONFIRM_S
from edgetts.client.announce import member_statuses
from edgetts.daemon.playout.sync import sync_lead
from edgetts.runtime.clock import clock_health

from support.broker import Broker
from support.timed_player import ReferencePlayer, reference_margin_ms
from tools.onsets import match
from tools.paced_sink import available
from tools.sync_rig import GROUP, PIECE_S, RATE, Announced, SyncRig, back_to_back, heard, reference_audio

pytestmark = [pytest.mark.mqtt, pytest.mark.realtime]

LINES = [
    "The train to the airport is arriving.",
    "Platform two, stand back please.",
    "The lift is out of service.",
    "Doors are closing.",
    "The next bus leaves at ten.",
    "Please keep your luggage with you.",
    "Mind the gap.",
    "Boarding now at gate four.",
    "Tickets are checked on this service.",
    "Change here for the harbour.",
    "The café is now open.",
    "Have a safe journey.",
]
"""12 back to back (20 before issue 39): a start late or a dropout the member did not report fails
on any one of them, and every one is checked; fewer give an intermittent fault fewer chances per
run, traded for the reference player's time (the run stays under its 1.5 min)."""
PROMISE_MS = 5.0
"""What the product promises of a start it reports as on time: within 5 ms of `play_at`."""
PIECE_OK = 0.9
"""A voiced 100 ms piece that is the very samples scores 0.99-1.00; another announcement's 0.05, the
same text with another seed 0.32 (sync_rig.piecewise_score)."""
SPACING_S = 3.0
"""One announcement every 3 s: the lead (3 s) after publishing, ~2 s of speech at most."""


def _pin_with_a_hog(pid: int) -> subprocess.Popen[bytes]:
    """A busy loop on the core that daemon ``pid`` (every thread of it) is pinned to."""
    core = max(os.sched_getaffinity(0))
    for tid in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(tid), {core})
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    os.sched_setaffinity(hog.pid, {core})
    return hog


def _check_reports(
    rig: SyncRig, rec: Any, pcm: np.ndarray, item: Announced, ref: np.ndarray, devices: list[str], margin: float
) -> list[str]:
    """What each of ``devices`` reported of ``item`` against what the recording shows: the faults."""
    by_device = {h.device: h for h in heard(rec, pcm, rig.devices, item, ref)}
    faults = [
        f"{item.id} {d}: no started and finished events: {item.events.get(d)}" for d in devices if not _played(item, d)
    ]
    devices = [d for d in devices if _played(item, d)]
    common = _common_pieces([by_device[d].pieces for d in devices if "late_ms" not in item.events[d]["started"]])
    for device in devices:
        h = by_device[device]
        started, finished = item.events[device]["started"], item.events[device]["finished"]
        said, late = float(started["sync_error_ms"]), float(started.get("late_ms", 0.0))
        underruns, gap_ms = int(finished.get("underruns") or 0), float(finished.get("gap_ms") or 0.0)
        onset_ms = (h.onset_unix - item.play_at) * 1000.0
        what = (
            f"{item.id} {device}: heard {onset_ms:+.2f} ms, said sync_error_ms {said:+.2f} late_ms {late:.1f}, "
            f"underruns {underruns} gap_ms {gap_ms:.1f}; margin {margin:.2f} ms; pieces {np.round(h.pieces, 2)}"
        )
        if late * RATE / 1000.0 >= ref.size:  # it said it skipped all of it: then nothing is heard
            start = int(round(rec.index_at_unix(item.play_at)))
            if np.any(np.abs(pcm[start : start + ref.size, rig.devices.index(device)].astype(np.int32)) > 1):
                faults.append(f"it said it skipped all of it, and something was played: {what}")
            continue
        # (a late joiner's onset is where its sample 0 would have been: its timeline)
        on_time = abs(said) <= PROMISE_MS and not late
        if on_time and abs(onset_ms) > PROMISE_MS + margin:
            faults.append(f"said on time, was not: {what}")
        # (within the promise the figure is not exact after a dry spell: tests/audio/test_timed_paced.py)
        if not on_time and abs(onset_ms - said) > margin:
            faults.append(f"its first sample is not where it said: {what}")
        # A counted dropout spoils the pieces its gap falls in and those played out of step until
        # the timeline is caught up, CONFIRM_S after it (edgetts.audio.timeline; seen: a 55 ms gap,
        # 4 pieces at 0.05-0.16), and one either side; the rest must be the very samples.
        allowed = underruns * (2 + math.ceil(CONFIRM_S / PIECE_S)) + math.ceil(gap_ms / (PIECE_S * 1000.0))
        pieces = [p for n, p in enumerate(h.pieces) if not (late == 0.0 and n in common)]
        if not h.pieces or sum(p < PIECE_OK for p in pieces) > allowed:
            faults.append(
                f"samples missing or wrong that it did not count: {what}{_where_bad(rec, pcm, rig, device, h, ref)}"
            )
        if late:
            join = int(round(rec.index_at_unix(h.onset_unix)))
            quiet = pcm[join + 50 : join + int(late * RATE / 1000.0) - 200, rig.devices.index(device)]
            if np.any(np.abs(quiet.astype(np.int32)) > 1):
                faults.append(f"what it said it skipped was played: {what}")
    return faults


def _keep(tmp_path: Path, rec: Any, pcm: np.ndarray, items: list[Announced], logs: dict[str, str]) -> str:
    """A failed run's recording, events and daemon logs, for a look afterwards: in
    $EDGETTS_TEST_ARTIFACTS (scripts/flake-check.sh sets it) or else this test's tmp_path."""
    where = Path(os.environ.get("EDGETTS_TEST_ARTIFACTS") or tmp_path) / "test_sync_zones"
    where.mkdir(parents=True, exist_ok=True)
    np.save(where / "recording.npy", pcm)
    events = [{"id": i.id, "text": i.text, "play_at": i.play_at, "events": i.events} for i in items]
    (where / "events.json").write_text(json.dumps(events, indent=1))
    # (the recording's sample-to-Unix mapping, each second)
    np.save(where / "unix_at.npy", np.array([rec.unix_at(i) for i in range(0, len(pcm), RATE)]))
    for device, log in logs.items():
        (where / f"{device}.log").write_text(log)
    return f"(the recording, events and logs are kept in {where})"


def _played(item: Announced, device: str) -> bool:
    return {"started", "finished"} <= set(item.events.get(device, {}))


def _where_bad(rec: Any, pcm: np.ndarray, rig: SyncRig, device: str, h: Any, ref: np.ndarray) -> str:
    """What a fault's pieces were instead: each voiced piece that scored under PIECE_OK, where its
    best match within 50 ms lies (a slip of the sink moves it, wrong samples do not match anywhere)
    and the longest run of exact zeros in its place (silence put in)."""
    channel = pcm[:, rig.devices.index(device)]
    onset = int(round(rec.index_at_unix(h.onset_unix)))
    piece, loud = int(PIECE_S * RATE), 0.03 * float(np.sqrt(np.mean(ref.astype(np.float64) ** 2)) or 1.0)
    said, n = [], 0
    for start in range(0, min(ref.size, 3 * RATE) - piece + 1, piece):
        r = ref[start : start + piece].astype(np.float64)
        if float(np.sqrt(np.mean(r**2))) < loud:
            continue
        if n < len(h.pieces) and h.pieces[n] < PIECE_OK:
            at, score = match(channel, r, onset + start, RATE, 0.05)
            got = channel[onset + start : onset + start + piece]
            edges = np.diff(np.concatenate(([0], (got == 0).astype(np.int8), [0])))
            zeros = int(np.max(np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1), initial=0))
            moved = (at - onset - start) / RATE * 1000.0
            said.append(f"piece {n} at {start * 1000 // RATE} ms: best {score:.2f} at {moved:+.2f} ms, zeros {zeros}")
        n += 1
    return "; " + "; ".join(said) if said else ""


def _common_pieces(scores: list[tuple[float, ...]]) -> set[int]:
    """The pieces that scored alike (within 0.02) on every one of three or more members that played
    from sample 0: there the reference synthesized here is not what every daemon played (seen: 0.84
    and 0.85 on all three, to two decimals, with no dropout), which says nothing of one member.  A
    dropout that struck every member's independent process in the same 100 ms would be hidden."""
    if len(scores) < 3 or len({len(s) for s in scores}) != 1:
        return set()
    return {n for n, piece in enumerate(zip(*scores)) if min(piece) < PIECE_OK and max(piece) - min(piece) <= 0.02}


def test_a_group_announcement_plays_together_on_three_speakers(mosquitto: Broker, tmp_path: Path) -> None:
    missing = available()
    if missing:
        pytest.skip(f"paced sink unavailable: {missing}")
    members = ["dev0", "dev1", "dev2"]
    with SyncRig(tmp_path, mosquitto.port, 4, in_group=3, spare_zones=1) as rig:
        statuses = rig.wait_online()
        hog = _pin_with_a_hog(rig.procs[0].pid)
        try:
            with rig.sink.record() as rec:
                # the reference: a burst every 0.5 s on zone 4, over the whole run (ended with it)
                first = time.time() + 3.0  # (its stream's estimate settled: 2 s of readings)
                reference = ReferencePlayer(
                    rig.sink, 4, tmp_path / "reference", [first + 0.5 * i for i in range(2 * (3 * len(LINES) + 30))]
                )
                # back to back, as a station speaks: each is published while the one before plays
                # (--lead 3s: this tests how closely the members play together, not whether a lead
                # is long enough; the default lead is tools/bench_sync.py's and
                # tests/daemon/test_sync_units.py's. Four daemons on two cores with a hog: the
                # default 1.2 s was once short for the hogged member in a loaded CI run, and 2 s
                # once for another member, which then joined in step, 0.02 ms off, but late)
                items = back_to_back(rig, LINES, SPACING_S, lead=3.0)
                late = _late_joiner(rig)
                reference.finish(stop=True)
                time.sleep(0.3)
                pcm = rec.stop()
        finally:
            hog.kill()
            hog.wait(5)
        last = rig.wait_online(30)
        logs = {d: rig.log(d) for d in rig.devices}
    assert all("Traceback" not in log for log in logs.values()), logs
    residuals = reference.residuals_ms(rec, pcm)
    margin = reference_margin_ms(residuals, RATE)
    print(
        f"reference residuals (ms): {np.round(residuals, 2)} ({reference.disturbed} bursts left out) "
        f"-> margin {margin:.2f} ms"
    )
    clock = clock_health()
    for item in items:
        for device in members:
            assert {"started", "finished"} <= set(item.events[device]), (item.id, device, item.events[device])
            started = item.events[device]["started"]
            assert isinstance(started["sync_error_ms"], float), started
            if not clock.synchronized:  # this machine has no NTP: each event says so
                assert started["detail"].startswith("clock not synchronized"), started
    if not clock.synchronized:
        assert all(any(d["what"] == "clock" for d in s["degraded"]) for s in last.values() if s["groups"]), last
    assert statuses["dev3"]["groups"] == []
    refs = reference_audio([*items, late])
    faults = [f for item in items for f in _check_reports(rig, rec, pcm, item, refs[item.id], members, margin)]
    # The late one joined in step: what it played lines up with the others' (where its sample 0 would
    # have been is play_at, as it says), and it said it skipped what was past (it got the
    # announcement 0.4 s after play_at: at least 300 ms of it).
    faults += _check_reports(rig, rec, pcm, late, refs[late.id], [*members, "dev3"], margin)
    if faults:
        faults.append(_keep(tmp_path, rec, pcm, [*items, late], logs))
    assert not faults, "\n".join(faults)
    started = late.events["dev3"]["started"]
    assert started["late_ms"] >= 300, started


def _late_joiner(rig: SyncRig) -> Announced:
    """One group announcement; the same (same id, same play_at) reaches dev3 0.4 s after play_at."""
    text = "Passengers for the coast, please change at the next station."
    # The lead `--sync` would take (the hogged member's speed counts), and at least the 3 s of the
    # others, for the reason given there: here dev3's catching up shares a core with dev1 and dev2
    # as they play, and with --sync's own lead dev1 once ran dry in CI (score 0.45, 1 underrun).
    statuses = member_statuses(rig.config(), None, GROUP, 2.0)
    play_at = time.time() + max(3.0, sync_lead({"text": text}, list(statuses.values())))
    group: list[Announced] = []
    worker = threading.Thread(target=lambda: group.append(rig.announce("late-0", text, play_at=play_at)))
    worker.start()
    time.sleep(max(0.0, play_at + 0.4 - time.time()))
    alone = rig.announce("late-0", text, to="device/dev3", play_at=play_at)
    worker.join(60)
    assert group, "the group announcement did not end"
    # (each client saw the other's devices' first events too: the group's for dev0-2, its own for dev3)
    return Announced("late-0", text, play_at, {**group[0].events, "dev3": alone.events["dev3"]})
