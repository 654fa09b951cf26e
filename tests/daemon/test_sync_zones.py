"""Many speakers, one voice (issue 19): three real daemons, one group announcement with --sync.

Each daemon (a subprocess with the real default voice) plays into its own zone of one paced
sink, so one recording holds every speaker on one clock.  Each announcement's first sample is
found on each speaker by cross-correlation with its own samples (synthesized here afterwards,
seeded from its id as every daemon seeds it): on every speaker within 5 ms of the others and of
`play_at`, over 20 announcements back to back (each published while the one before plays),
with a CPU hog on the core of one daemon.  A fourth daemon
that receives one announcement after its `play_at` joins in step, and says how late.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgetts.client.announce import member_statuses
from edgetts.daemon.playout.sync import sync_lead
from edgetts.runtime.clock import clock_health

from support.broker import Broker
from tools.paced_sink import available
from tools.sync_rig import GROUP, Announced, SyncRig, back_to_back, heard, reference_audio

pytestmark = pytest.mark.mqtt

LINES = [
    "The train to the airport is arriving.",
    "Platform two, stand back please.",
    "The lift is out of service.",
    "Doors are closing.",
    "The next bus leaves at ten.",
    "Please keep your luggage with you.",
    "The shop closes in ten minutes.",
    "Mind the gap.",
    "Boarding now at gate four.",
    "The car park is full.",
    "This train terminates here.",
    "Please use the ramp.",
    "Welcome aboard.",
    "Tickets are checked on this service.",
    "The toilets are at the far end.",
    "Change here for the harbour.",
    "The fire doors must stay shut.",
    "Thank you for waiting.",
    "The café is now open.",
    "Have a safe journey.",
]
TOLERANCE_S = 0.005
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


def _check_onsets(
    rig: SyncRig, rec: Any, pcm: np.ndarray, item: Announced, ref: np.ndarray, devices: list[str]
) -> list[float]:
    found = heard(rec, pcm, rig.devices, item, ref)
    by_device = {h.device: h for h in found}
    onsets = []
    for device in devices:
        h = by_device[device]
        # the very samples: the same noise everywhere (piece by piece: see sync_rig.piecewise_score)
        assert h.score > 0.9, (item.id, device, h, item.events.get(device, {}).get("finished"))
        onsets.append(h.onset_unix)
        assert abs(h.onset_unix - item.play_at) <= TOLERANCE_S, (item.id, device, h.onset_unix - item.play_at)
    assert max(onsets) - min(onsets) <= TOLERANCE_S, (item.id, [o - item.play_at for o in onsets])
    return onsets


def test_a_group_announcement_plays_together_on_three_speakers(mosquitto: Broker, tmp_path: Path) -> None:
    missing = available()
    if missing:
        pytest.skip(f"paced sink unavailable: {missing}")
    members = ["dev0", "dev1", "dev2"]
    with SyncRig(tmp_path, mosquitto.port, 4, in_group=3) as rig:
        statuses = rig.wait_online()
        hog = _pin_with_a_hog(rig.procs[0].pid)
        try:
            with rig.sink.record() as rec:
                # back to back, as a station speaks: each is published while the one before plays
                # (--lead 3s: this tests how closely the members play together, not whether a lead
                # is long enough; the default lead is tools/bench_sync.py's and
                # tests/daemon/test_sync_units.py's. Four daemons on two cores with a hog: the
                # default 1.2 s was once short for the hogged member in a loaded CI run, and 2 s
                # once for another member, which then joined in step, 0.02 ms off, but late)
                items = back_to_back(rig, LINES, SPACING_S, lead=3.0)
                late = _late_joiner(rig)
                time.sleep(0.3)
                pcm = rec.stop()
        finally:
            hog.kill()
            hog.wait(5)
        last = rig.wait_online(30)
        logs = {d: rig.log(d) for d in rig.devices}
    assert all("Traceback" not in log for log in logs.values()), logs
    clock = clock_health()
    for item in items:
        for device in members:
            assert {"started", "finished"} <= set(item.events[device]), (item.id, device, item.events[device])
            started = item.events[device]["started"]
            said = {k: started.get(k) for k in ("sync_error_ms", "late_ms", "latency_ms", "detail")}
            assert abs(started["sync_error_ms"]) < 5.0 and "late_ms" not in started, (
                item.id,
                device,
                said,
                item.events[device]["finished"],
                _onset_of(rig, rec, pcm, item, device),
            )
            if not clock.synchronized:  # this machine has no NTP: each event says so
                assert started["detail"].startswith("clock not synchronized"), started
    if not clock.synchronized:
        assert all(any(d["what"] == "clock" for d in s["degraded"]) for s in last.values() if s["groups"]), last
    assert statuses["dev3"]["groups"] == []
    refs = reference_audio([*items, late])
    for item in items:
        _check_onsets(rig, rec, pcm, item, refs[item.id], members)
    # The late one joined in step: its samples line up with the others' (where its sample 0 would
    # have been is play_at), and it said it skipped what was past.
    _check_onsets(rig, rec, pcm, late, refs[late.id], [*members, "dev3"])
    started = late.events["dev3"]["started"]
    assert started["late_ms"] >= 300, started
    assert all("late_ms" not in late.events[d]["started"] for d in members), late.events


def _onset_of(rig: SyncRig, rec: Any, pcm: np.ndarray, item: Announced, device: str) -> dict[str, float]:
    """Where the recording heard ``item`` on ``device``, against play_at (for a failure's message)."""
    ref = reference_audio([item])[item.id]
    h = next(h for h in heard(rec, pcm, rig.devices, item, ref) if h.device == device)
    return {"onset_ms": round((h.onset_unix - item.play_at) * 1000.0, 2), "score": round(h.score, 3)}


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
