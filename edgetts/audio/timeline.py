"""How the audio thread plays a timed job (:mod:`edgetts.audio.timed` says why): the device's clock
from its measured delay, and the job kept on its timeline."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Protocol

import numpy as np

from edgetts.audio.device import OutputStreamLike, delay_s
from edgetts.audio.job import JobEnd, Piece, PlaybackJob, Position
from edgetts.audio.timed import Clocks
from edgetts.audio.writer import DeviceWriter


class Stage(Protocol):
    """What the timeline needs of the player's stage (edgetts.audio.player._Stage)."""

    avail: int
    fade_n: int
    barrier: int | None
    timed: bool
    sync_error_ms: float | None
    late_ms: float

    def add(self, piece: Piece) -> None: ...
    def take(self, n: int) -> tuple[np.ndarray, Position, float | np.ndarray]: ...
    def emit(self, samples: np.ndarray, pos: Position, gain: float | np.ndarray) -> None: ...
    def drop(self, void: Callable[[Piece], bool]) -> None: ...
    def fade_out_preempted(self) -> None: ...
    def play_tail(self, end: JobEnd) -> None: ...


#: Measurements of the stream's epoch kept: the earliest of this last span is the estimate.
WINDOW_S = 1.0
#: A write that took this long blocked: the device consumes, so its queue says when it plays.
BLOCKED_S = 0.001
#: The epoch jumped later by more than this (in three measurements running): the device ran dry
#: and lost that much of the timeline.  (Pulse's 10 ms ticks make single measurements vary by ~6 ms.)
JUMP_S = 0.015
#: Measurements in a row that must show the jump (see DeviceClock._add).
JUMP_WRITES = 3
#: A write ended this much later than the audio queued before it, by the estimate: the device may
#: have run dry meanwhile (the process stalled: a busy VM, the GIL, a page fault), so a smaller
#: jump is believed, DRY_JUMP_S, once every measurement over DRY_CONFIRM_S after it shows it.
DRY_S = 0.003
DRY_JUMP_S = 0.003
#: Why a span and not three measurements: a loaded process's readings come late for tens of ms
#: after such a write, and the sound server may still hold what the ring no longer does.  Measured
#: in the zone test (PulseAudio, a CPU hog): readings 8.3, 8.5, 5.6, 4.5, 2.9 ms late over 35 ms,
#: then back on the old floor (no time lost), where three readings had skipped 5.6 ms of the job
#: mid-word; a real dry spell's loss is for good, so the floor stays moved.
DRY_CONFIRM_S = 0.1
#: How far ahead of real time a stream that never blocks may be written.
RUN_AHEAD_S = 0.2


class DeviceClock:
    """When the frames written to one stream are heard: ``epoch + frame / rate`` (monotonic)."""

    def __init__(self, stream: OutputStreamLike, rate: int, clocks: Clocks) -> None:
        self._stream = stream
        self._rate = float(rate)
        self._clocks = clocks
        self.frames = 0
        """Frames written through this clock."""
        self._account: float | None = None
        """Epoch by the writer's own account: what was written is heard back to back."""
        self._epochs: collections.deque[tuple[float, float]] = collections.deque()
        self.warm = False
        """A write blocked: the device consumes, so its queue says when the next frame plays."""
        self.reports_delay = False
        self.last_delay: float | None = None
        self.warm_since: float | None = None
        self._dry_at: float | None = None
        """When a write found the device dry by the estimate's own account (see DRY_S)."""

    @property
    def epoch(self) -> float | None:
        """The estimate: when frame 0 is (was) heard; None before the first write."""
        if not self._epochs:
            return None
        if not self.warm:
            return self._epochs[-1][1]  # a stream still filling: only the latest says anything
        return min(e for _, e in self._epochs)

    @property
    def settled(self) -> bool:
        """The estimate is the earliest of a whole WINDOW_S of measurements of a running stream."""
        return self.warm_since is not None and self._clocks.mono() - self.warm_since >= WINDOW_S

    def heard_at(self, frame: float) -> float:
        epoch = self.epoch
        return (self._clocks.mono() if epoch is None else epoch) + frame / self._rate

    def queued_s(self) -> float:
        """Seconds until the next frame written would be heard, by the estimate."""
        return max(0.0, self.heard_at(self.frames) - self._clocks.mono())

    def runs_ahead(self, slack_s: float) -> bool:
        """A stream that has never blocked is further ahead of real time (by the writer's own account)
        than it says it has queued, plus ``slack_s``: the ALSA file plugin takes all at once, and
        must not be handed the whole wait's silence in a moment."""
        if self.warm or self._account is None:
            return False
        ahead = self._account + self.frames / self._rate - self._clocks.mono()
        return ahead > max(RUN_AHEAD_S, (self.last_delay or 0.0) + slack_s)

    def wrote(self, before: float, frames: int) -> float:
        """``frames`` were written by a call that began at ``before`` (monotonic): measure; the
        seconds of timeline the device lost (it ran dry) since the last measurement."""
        # The delay first, then the time: a stall between the two (the GIL taken by another thread)
        # then makes this estimate late, which the earliest-of-the-last-second drops.  The other
        # way round it came out early by the stall, stood as the estimate for a second, and when it
        # aged out the estimate jumped later: a dry spell that never was, its samples skipped.
        delay = self.last_delay = delay_s(self._stream)
        now = self._clocks.mono()
        earlier = self.frames / self._rate
        epoch = self.epoch
        if self.warm and epoch is not None and now - (epoch + earlier) > DRY_S:
            # What was queued ran out before this write was in: the device ran dry (measured
            # here: a 38 ms stall left it ~9 ms dry, which the 15 ms rule never saw).
            self._dry_at = now
        self.frames += frames
        old = self._account
        start = before if old is None else max(old + earlier, before)
        self._account = start - earlier
        if delay is None:  # the account alone: a write after what was written ended found it dry
            self._add(now, self._account)
            return 0.0 if old is None else self._account - old
        self.reports_delay = True
        if not self.warm and now - before >= BLOCKED_S:
            self.warm = True  # what came before (the device filling) is no measure
            self.warm_since = now
            self._epochs.clear()
        return self._add(now, now + delay - self.frames / self._rate)

    def _add(self, now: float, epoch: float) -> float:
        old = self.epoch
        self._epochs.append((now, epoch))
        while len(self._epochs) > JUMP_WRITES and self._epochs[0][0] < now - WINDOW_S:
            self._epochs.popleft()
        if old is None or not self.warm:
            return 0.0
        shown, kept, jump = self._jump_evidence(now)
        if len(shown) < JUMP_WRITES - 1 or min(shown) - old <= jump:
            return 0.0
        self._dry_at = None
        # Re-based on the measurements after the jump, but for the first: taken while the device
        # was dry (its queue empty, not yet restarted), it says the restart is earlier than it was.
        while len(self._epochs) > kept:
            self._epochs.popleft()
        return min(e for _, e in self._epochs) - old

    def _jump_evidence(self, now: float) -> tuple[list[float], int, float]:
        """The measurements that must all be later than the estimate, how many of the latest to
        re-base on if they are, and by more than what."""
        recent = [e for _, e in list(self._epochs)[-JUMP_WRITES:]]
        if self._dry_at is not None and now - self._dry_at > WINDOW_S:
            self._dry_at = None
        if self._dry_at is not None:
            after = [(t, e) for t, e in self._epochs if t >= self._dry_at][1:]
            if len(after) >= JUMP_WRITES - 1 and now - after[0][0] >= DRY_CONFIRM_S:
                return [e for _, e in after], len(after), DRY_JUMP_S
        return (recent if len(recent) == JUMP_WRITES else []), JUMP_WRITES - 1, JUMP_S


class TimedPlay:
    """One timed job's run on the audio thread: silence to the target, then the job on its timeline."""

    def __init__(self, job: PlaybackJob, stage: Stage, writer: DeviceWriter, stream: OutputStreamLike,
                 block_frames: int, clocks: Clocks) -> None:
        assert job.timed is not None
        self._job, self._stage, self._writer = job, stage, writer
        self._timed = job.timed
        self._clocks = clocks
        fmt = job.converter.format
        self._rate = fmt.rate
        self._block = block_frames
        self._clock = DeviceClock(stream, fmt.rate, clocks)
        self._first: int | None = None
        """Device frame (as if it never ran dry) of the job's first sample, once fixed."""
        self._lost = 0
        """Frames of timeline the device lost running dry."""
        self._consumed = 0
        """Job samples written or skipped."""
        self._in_gap = False
        self._fixed_settled = False
        """The first frame was fixed from a settled estimate (see _refix)."""
        self._counts: collections.deque[int] = collections.deque(maxlen=JUMP_WRITES + 1)
        """The writer's underrun count before each of the latest writes."""
        stage.barrier = None
        stage.timed = True

    def run(self) -> tuple[str, str | None]:
        job, stage = self._job, self._stage
        end: JobEnd | None = None
        generation = job.generation
        while True:
            if job.stop_requested:
                stage.fade_out_preempted()
                return "stopped", None
            if job.generation != generation:  # a fallback voided speech fed so far
                stage.drop(job.is_void)
                generation = job.generation
            end = self._pull() or end
            if self._first is None or self._position() < 0:
                end = self._to_target() or end
                continue
            if not self._started:
                self._refix()
            self._skip_past()
            if end is not None and stage.avail <= self._block + stage.fade_n:
                # (blocks before the tail go through _emit: each write is measured, so a device that
                # ran dry is caught up on the timeline)
                if stage.avail:
                    self._start_fields()
                    stage.play_tail(end)
                return ("failed", end.reason) if end.reason is not None else ("finished", None)
            if stage.avail >= self._block + stage.fade_n or (end is not None and stage.avail):
                self._emit(self._block)
            else:
                end = self._starving() or end

    @property
    def _started(self) -> bool:
        return self._job.first_audio_mono is not None

    def _position(self) -> int:
        """Where the timeline is: the job sample due at the next frame written (< 0 before the target)."""
        assert self._first is not None
        return self._clock.frames + self._lost - self._first

    def _pull(self) -> JobEnd | None:
        """Every piece that came, without waiting; the end marker if that came."""
        while True:
            item = self._job.next_piece(0.0)
            if item is None:
                return None
            if isinstance(item, JobEnd):
                return item
            self._stage.add(item)

    def _wait(self, timeout: float) -> JobEnd | None:
        """Wait up to ``timeout`` for a piece (instead of writing); the end marker if that came."""
        item = self._job.next_piece(timeout)
        if isinstance(item, JobEnd):
            return item
        if item is not None:
            self._stage.add(item)
        return None

    def _silence(self, frames: int) -> JobEnd | None:
        """Write ``frames`` of silence, unless a stream that never blocks is ahead of real time."""
        if self._clock.runs_ahead(2 * self._block / self._rate):
            return self._wait(0.002)
        before, counted = self._clocks.mono(), self._writer.underruns
        self._writer.write(self._job.converter.silence(frames))
        self._note_lost(self._clock.wrote(before, frames), counted)
        return None

    def _note_lost(self, lost_s: float, counted: int) -> None:
        """The device lost ``lost_s`` of the timeline (ran dry) at the write just made, before which
        the writer had counted ``counted`` underruns.  Once the job has begun that is a dropout the
        listener heard, what it stood for being skipped: counted here unless the writer's own
        account (a write later than the device's whole buffer) or a gap in hand already did.  A
        stall longer than JUMP_S but shorter than the buffer's latency (~0.09 s through PulseAudio)
        used to be skipped without a word: `finished` said 0 underruns for a dropout."""
        self._counts.append(counted)
        if lost_s <= 0:
            return
        self._lost += round(lost_s * self._rate)
        # (the clock sees a jump a few writes after it: the writer may have counted it meanwhile)
        if self._started and not self._in_gap and self._writer.underruns == self._counts[0]:
            self._writer.underruns += 1
            self._writer.gap_s += lost_s

    def _to_target(self) -> JobEnd | None:
        """Keep the stream running on silence; fix the first sample's frame at the last moment."""
        block = self._block
        if self._first is None:
            if self._clock.epoch is None:
                return self._silence(block)
            target = self._clocks.mono_of(self._timed.at_unix) - self._timed.output_delay_s
            due = round(self._clock.frames + (target - self._clock.heard_at(self._clock.frames)) * self._rate)
            if due - self._clock.frames > 2 * block:
                return self._silence(block)
            self._first = due + self._lost
            self._fixed_settled = self._clock.settled
            if self._position() >= 0:
                return None
        return self._silence(min(block, -self._position()))

    def _refix(self) -> None:
        """Late, nothing of the job written yet: the first sample's frame again from the latest
        estimate (fixed when the target passed, it came from a stream only just opened, whose first
        readings are off by up to a PulseAudio tick; its audio came a synthesis later)."""
        epoch = self._clock.epoch
        # Fixed from a settled estimate, it stands: the earliest reading can only age out of the
        # window meanwhile, which moves the estimate later by the readings' jitter (PulseAudio's
        # ticks: up to ~6-10 ms), and re-fixing on that skipped the job's first ms (`late_ms` on a
        # member that was on time, in two CI runs of the zone test).
        if epoch is None or not self._clock.warm or self._fixed_settled:
            return
        target = self._clocks.mono_of(self._timed.at_unix) - self._timed.output_delay_s
        self._first = round((target - epoch) * self._rate) + self._lost

    def _skip_past(self) -> None:
        """Drop the samples in hand whose time has passed (a late join, or after a gap)."""
        behind = self._position() - self._consumed
        if behind > 0 and self._stage.avail:
            got, _, _ = self._stage.take(min(behind, self._stage.avail))
            self._consumed += got.size

    def _start_fields(self) -> None:
        """Before the first write of the job's audio: what the `started` report says."""
        if self._started:
            return
        heard = self._clock.heard_at(self._clock.frames) + self._timed.output_delay_s
        due = self._clocks.mono_of(self._timed.at_unix) + self._consumed / self._rate
        self._stage.sync_error_ms = (heard - due) * 1000.0
        self._stage.late_ms = self._consumed / self._rate * 1000.0
        if not self._job.begin(self._job.generation):  # (held speech counts as begun from here)
            self._stage.drop(self._job.is_void)

    def _emit(self, n: int) -> None:
        self._start_fields()
        samples, pos, gain = self._stage.take(n)
        before, counted = self._clocks.mono(), self._writer.underruns
        self._stage.emit(samples, pos, gain)
        self._consumed += samples.size
        self._note_lost(self._clock.wrote(before, samples.size), counted)
        self._in_gap = False

    def _starving(self) -> JobEnd | None:
        """Not enough audio in hand: wait while the device has enough queued, then keep the timeline
        with silence (an underrun and a gap once the job has begun: what it stands for is skipped)."""
        wait = self._clock.queued_s() - (2 * self._block / self._rate + 0.005)
        if wait > 0:
            return self._wait(min(0.005, wait))
        if self._stage.avail:
            self._emit(min(self._stage.avail, self._block))
            return None
        if self._started and not self._clock.runs_ahead(2 * self._block / self._rate):
            if not self._in_gap:
                self._writer.underruns += 1
                self._in_gap = True
            self._writer.gap_s += self._block / self._rate
        return self._silence(self._block)


__all__ = ["DeviceClock", "Stage", "TimedPlay"]
