"""The device clock of a timed job (edgetts.audio.timeline.DeviceClock) replayed on readings recorded
through PulseAudio under load: a write that looked as if the device had run dry, and was not; a
small loss that was.

The trace (tests/data/pulse_stall_trace.txt) is the zone test's hogged daemon at the moment a CI run
(and 2 of 12 runs here) skipped 5.6 ms and 9.8 ms of a job mid-word: the readings after that write
came 8.3, 8.5, 5.6 ms late, which three readings took for a dry spell, then went back to the floor
they had before.  Replayed as recorded, no time is lost; replayed as a device that did lose 6 ms
(every reading from that write on 6 ms later), the loss is found, once, and by its size.  The
second (tests/data/pulse_small_loss_trace.txt), another run's member heard 4.9 ms late: a real
loss of 4-5 ms that neither a 15 ms jump nor a write past the queued audio's end showed.
"""

from __future__ import annotations

from pathlib import Path

from edgetts.audio.device import DeviceFormat
from edgetts.audio.timed_start import Clocks
from edgetts.audio.timeline import DeviceClock

RATE = 22050
DATA = Path(__file__).resolve().parent.parent / "data"
TRACE = DATA / "pulse_stall_trace.txt"
SMALL_LOSS = DATA / "pulse_small_loss_trace.txt"
"""Another member: a 4-5 ms loss that no reading showed as 15 ms and no write as past the queue's end."""
EVENT_ROW = 54
"""(0-based) the write that ended 3.4 ms after the queued audio, by the estimate."""


class _Replayed:
    """A stream whose delay readings, and a clock whose readings, are the trace's."""

    format = DeviceFormat(RATE)

    def __init__(self) -> None:
        self.now = 0.0
        self.delay = 0.0

    def delay_s(self) -> float | None:
        return self.delay

    def write(self, data: bytes) -> None: ...
    def drain(self) -> None: ...
    def close(self) -> None: ...


def _rows(trace: Path = TRACE) -> list[tuple[float, float, float, int]]:
    rows = []
    for line in trace.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            before, after, delay, frames = line.split()
            rows.append((float(before) / 1000.0, float(after) / 1000.0, float(delay) / 1000.0, int(frames)))
    return rows


def _replay(lost_s: float = 0.0, trace: Path = TRACE) -> tuple[list[float], DeviceClock]:
    """Each write's lost timeline, the readings from EVENT_ROW on ``lost_s`` later."""
    stream = _Replayed()
    clock = DeviceClock(stream, RATE, Clocks(mono=lambda: stream.now, unix=lambda: stream.now))
    out = []
    for k, (before, after, delay, frames) in enumerate(_rows(trace)):
        stream.now, stream.delay = after, delay + (lost_s if k >= EVENT_ROW else 0.0)
        out.append(clock.wrote(before, frames))
    return out, clock


def test_the_replayed_trace_is_the_case_described() -> None:
    """The event row is what the module says: the write ended after the queued audio by the
    estimate, and the next readings were later than the estimate by more than 3 ms."""
    rows = _rows()
    stream = _Replayed()
    clock = DeviceClock(stream, RATE, Clocks(mono=lambda: stream.now, unix=lambda: stream.now))
    late = []
    for k, (before, after, delay, frames) in enumerate(rows[: EVENT_ROW + 3]):
        if k == EVENT_ROW:
            assert clock.epoch is not None and after - (clock.epoch + clock.frames / RATE) > 0.003
        epoch = clock.epoch
        stream.now, stream.delay = after, delay
        clock.wrote(before, frames)
        if k >= EVENT_ROW:
            assert epoch is not None
            late.append(after + delay - clock.frames / RATE - epoch)
    assert min(late) > 0.005, late


def test_readings_late_for_a_while_after_a_stall_lose_no_time() -> None:
    lost, clock = _replay()
    assert lost == [0.0] * len(lost), [(k, round(x * 1000, 2)) for k, x in enumerate(lost) if x]


def test_a_device_that_did_lose_time_there_is_caught_up_once_by_its_size() -> None:
    before, _ = _replay()
    lost, _ = _replay(lost_s=0.006)
    assert not any(before)
    jumps = [x for x in lost if x]
    assert len(jumps) == 1, jumps
    # (the floor after it is the old floor plus 6 ms, give or take the readings' own spread)
    assert 0.0055 <= jumps[0] <= 0.0065, jumps


def test_a_small_loss_after_a_write_that_nearly_ran_dry_is_caught_up_once() -> None:
    """The zone test's member heard 4.9 ms late: the floor of its readings moved 4-5 ms for good
    after a write that came 31 ms late, yet short of the queued audio's end by the estimate."""
    lost, _ = _replay(trace=SMALL_LOSS)
    jumps = [(k, x) for k, x in enumerate(lost) if x]
    assert len(jumps) == 1, jumps
    k, jump = jumps[0]
    assert k > 112 and 0.0035 <= jump <= 0.006, jumps
