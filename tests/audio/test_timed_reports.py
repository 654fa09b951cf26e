"""What a timed start REPORTS agrees with where its first sample was heard (issue 19, issue 39),
on the simulated sound card of test_timed.py.

The paced-sink tests (test_timed_paced.py, tests/daemon/test_sync_zones.py) compare each player's
`started` (``sync_error_ms``, ``late_ms``) and `finished` (``underruns``, ``gap_ms``) with the
recording, within a margin measured there.  Here the same comparison is exact: the simulated
device knows when each frame was heard, so for every scenario of test_timed.py the report must
say where the first sample really was, to a sample (and the clock's 0.2 ms ticks), and a start
the player did not report as off must be on time.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_timed import RATE, SimDevice, _ints, _LateReadingsBeforeTheTarget, _noise, _play_timed

from edgetts.audio.convert import DeviceFormat
from edgetts.audio.timeline import WINDOW_S

TICK_S = 0.0002
"""The simulated clock moves on by this at every reading (test_timed.SimDevice.mono)."""
SAMPLE_S = 1.0 / RATE


def _heard_error_s(device: SimDevice, audio: np.ndarray, target_mono: float, late_ms: float) -> float:
    """When the job's sample 0 was (joined late: would have been) heard, against the target: from
    where the device really put its samples (sought sample for sample after the fade-in)."""
    pcm, want = device.pcm(), _ints(audio)
    skip = int(round(late_ms * RATE / 1000.0))
    fade = int(RATE * 0.005)
    lo, hi = skip + fade + 1, min(want.size, skip + int(0.1 * RATE))
    for j in range(device.written - (hi - lo)):  # (j: the frame want[lo] is on)
        if np.array_equal(pcm[j : j + hi - lo], want[lo:hi]):
            return device.heard_at(j) - lo / RATE - target_mono
    raise AssertionError("the job's samples are not in the recording")


# (name, seconds to the target, stall at (from the target), stall seconds)
SCENARIOS = [
    ("on time", 0.8, None, 0.0),
    ("stall mid-job", 0.3, 0.3, 0.1),
    ("short stall mid-job", 0.3, 0.3, 0.06),
    ("stall 0.45 s before", 0.8, -0.45, 0.045),
    ("stall 0.45 s before, longer", 0.8, -0.45, 0.05),
    ("handed over after its target", -0.2, None, 0.0),
]


@pytest.mark.parametrize(("in_s", "stall_at_s", "stall_s"), [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_sync_error_ms_says_where_the_first_sample_was_heard(
    in_s: float, stall_at_s: float | None, stall_s: float
) -> None:
    device = SimDevice(DeviceFormat(RATE))
    audio = _noise(1.0, seed=21)
    started, finished, target_mono = _play_timed(device, audio, in_s, stall_at_s, stall_s)
    error_s = _heard_error_s(device, audio, target_mono, started.late_ms)
    assert started.sync_error_ms is not None
    assert abs(started.sync_error_ms / 1000.0 - error_s) <= SAMPLE_S + 2 * TICK_S, (started, error_s)


def test_sync_error_ms_is_not_moved_by_the_readings_jitter_after_the_start_was_fixed() -> None:
    """Readings 6 ms late from just before the target on (a sound server's ticks): the start stands
    (test_timed), and so must what `started` says of it."""
    in_s = 1.6
    device = _LateReadingsBeforeTheTarget(DeviceFormat(RATE), late_from=1000.0 + in_s - WINDOW_S - 0.039)
    audio = _noise(0.5, seed=22)
    started, _finished, target_mono = _play_timed(device, audio, in_s)
    error_s = _heard_error_s(device, audio, target_mono, started.late_ms)
    assert started.sync_error_ms is not None
    assert abs(started.sync_error_ms / 1000.0 - error_s) <= SAMPLE_S + 2 * TICK_S, (started, error_s)


def test_a_start_made_late_by_a_dry_spell_just_before_it_is_reported() -> None:
    """A start heard late must be said: by `sync_error_ms`, or (the spell confirmed only after the
    first sample) by `finished` counting the dropout its catch-up made, with its gap."""
    device = SimDevice(DeviceFormat(RATE))
    audio = _noise(1.5, seed=11)
    started, finished, target_mono = _play_timed(device, audio, 0.8, stall_at_s=-0.1, stall_s=0.05)
    error_s = _heard_error_s(device, audio, target_mono, started.late_ms)
    assert error_s > 0.01  # (the scenario: ~16 ms late, test_timed)
    assert started.sync_error_ms is not None
    said_at_start = abs(started.sync_error_ms / 1000.0 - error_s) <= SAMPLE_S + 2 * TICK_S
    counted = finished.underruns >= 1 and abs(finished.gap_ms / 1000.0 - error_s) <= 0.001
    assert said_at_start or counted, (started, finished, error_s)
