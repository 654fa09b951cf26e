"""How the audio thread plays a timed job (:mod:`edgetts.audio.timed_start` says why): the device's clock
from its measured delay, and the job kept on its timeline."""

from __future__ import annotations

import collections

from edgetts.audio.device import OutputStreamLike, delay_s
from edgetts.audio.job import JobRun, PlaybackJob, Stage
from edgetts.audio.timed_start import Clocks
from edgetts.audio.writer import DeviceWriter

#: Measurements of the stream's epoch kept: the earliest of this last span is the estimate.
WINDOW_S = 1.0
#: A write that took this long blocked: the device consumes, so its queue says when it plays.
BLOCKED_S = 0.001
#: A jump is suspected when this many measurements in a row are later than the estimate by more
#: than JUMP_S (PulseAudio's 10 ms ticks make single measurements vary by ~6 ms, and a reading
#: that moved later with no stall behind it is no loss)...
JUMP_S = 0.015
JUMP_WRITES = 3
#: ...or after a write that ended within this of the end of the audio queued before it, by the
#: estimate (itself a few ms off): the device may have run dry meanwhile (the process stalled: a
#: busy VM, the GIL).  Measured: a 4.3 ms loss after a write 3.2 ms short of the end.
DRY_MARGIN_S = 0.005
#: A suspected jump is believed, and measured, on every measurement over CONFIRM_S after it (but
#: the first, taken while the device was dry): all later than the estimate by more than
#: CONFIRMED_JUMP_S, the earliest of them the new estimate.  A span, not the three measurements
#: that raised it, because a loaded process's readings come late for a while after a stall.
#: Measured in the zone test (PulseAudio, a CPU hog; its readings replayed offline): after a
#: write that outran the queue, readings 8.3, 8.5, 5.6 ms late, then back on the old floor (three
#: readings had skipped 5.6 ms of the job mid-word, with no time lost); after a 54 ms stall, three
#: readings 22.5-23.7 ms late where the floor moved 18.4 ms; 4-6 ms losses that a 15 ms
#: threshold never saw (a member 4.9 ms late).  Over 0.1 s of readings the jumps came out up to
#: 3 ms larger than the loss the floor showed later, over 0.3 s within ~1 ms of it, and no jump
#: without a loss.  A real dry spell's loss is for good; the price is that it is caught up 0.3 s
#: after it (and one within 0.3 s before the first sample moves the start no longer).
CONFIRM_S = 0.3
CONFIRMED_JUMP_S = 0.003
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
        self._suspect_at: float | None = None
        """When the measurements began to show a jump, or a write found the device dry by the
        estimate's own account (see DRY_MARGIN_S): a loss of timeline to confirm."""
        self.lost_from: float | None = None
        """When the latest loss of timeline :meth:`wrote` reported began to show (monotonic)."""

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
        if self._suspect_at is None and self.warm and epoch is not None and now - (epoch + earlier) > -DRY_MARGIN_S:
            # What was queued (nearly) ran out before this write was in: the device may have run
            # dry (a 38 ms stall left it ~9 ms dry, which the 15 ms rule never saw).  (Until the
            # estimate is re-based every write after a dry spell looks like this: one suspicion.)
            self._suspect_at = now
        self.frames += frames
        old = self._account
        start = before if old is None else max(old + earlier, before)
        self._account = start - earlier
        if delay is None:  # the account alone: a write after what was written ended found it dry
            self._add(now, self._account, epoch)
            return 0.0 if old is None else self._account - old
        self.reports_delay = True
        if not self.warm and now - before >= BLOCKED_S:
            self.warm = True  # what came before (the device filling) is no measure
            self.warm_since = now
            self._epochs.clear()
            epoch = None
        return self._add(now, now + delay - self.frames / self._rate, epoch)

    def _add(self, now: float, epoch: float, old: float | None) -> float:
        """Keep the measurement ``epoch`` taken at ``now`` against the estimate before it, ``old``;
        the timeline lost, once a jump is confirmed."""
        self._epochs.append((now, epoch))
        while len(self._epochs) > JUMP_WRITES and self._epochs[0][0] < now - WINDOW_S:
            self._epochs.popleft()
        if old is None or not self.warm:
            return 0.0
        after = self._confirming(now, old)
        if after is None:
            return 0.0
        since, self._suspect_at = self._suspect_at, None
        if min(after) - old <= CONFIRMED_JUMP_S:
            return 0.0
        self.lost_from = since
        # Re-based on the measurements after the jump (its first, taken while the device was dry,
        # its queue empty and not yet restarted, says the restart is earlier than it was).
        while len(self._epochs) > len(after):
            self._epochs.popleft()
        return min(after) - old

    def _confirming(self, now: float, old: float) -> list[float] | None:
        """The measurements after a suspected jump (but its first) once they span CONFIRM_S."""
        recent = list(self._epochs)[-JUMP_WRITES:]
        if self._suspect_at is None and len(recent) == JUMP_WRITES and min(e for _, e in recent) - old > JUMP_S:
            self._suspect_at = recent[0][0]
        if self._suspect_at is None:
            return None
        after = [(t, e) for t, e in self._epochs if t >= self._suspect_at][1:]
        if len(after) < JUMP_WRITES - 1 or now - after[0][0] < CONFIRM_S:
            return None
        return [e for _, e in after]


class TimedPlay(JobRun):
    """One timed job's run on the audio thread: silence to the target, then the job on its timeline."""

    def __init__(
        self,
        job: PlaybackJob,
        stage: Stage,
        writer: DeviceWriter,
        stream: OutputStreamLike,
        block_frames: int,
        clocks: Clocks,
    ) -> None:
        assert job.timed is not None
        super().__init__(job, stage)
        self._writer = writer
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
        self._began: float | None = None
        """When the job's first sample was written (on ``clocks``)."""
        self._fixed_settled = False
        """The first frame was fixed from a settled estimate (see _refix)."""
        self._fixed_epoch: float | None = None
        self._lost_at_fix = 0
        """The estimate the first frame was fixed from, and the timeline lost by then."""
        self._counts: collections.deque[tuple[float, int]] = collections.deque()
        """(when it began, the writer's underrun count before it) of each write in the last WINDOW_S."""
        stage.barrier = None
        stage.timed = True

    def turn(self) -> bool:
        stage = self.stage
        while self.pull(0.0):  # every piece that came, without waiting
            pass
        end = self.end
        if self._first is None or self._position() < 0:
            self._to_target()
            return False
        if not self._started:
            self._refix()
            if self._position() < 0:
                # Re-fixed later: wait for the new frame on silence; writing a block of the job now
                # would start it early and leave a gap, uncounted, where the silence then goes.
                self._to_target()
                return False
        self._skip_past()
        if end is not None and stage.avail <= self._block + stage.fade_n:
            # (blocks before the tail go through _emit: each write is measured, so a device that
            # ran dry is caught up on the timeline)
            if stage.avail:
                self._start_fields()
                stage.play_tail(end)
            return True
        if stage.avail >= self._block + stage.fade_n or (end is not None and stage.avail):
            self._emit(self._block)
        else:
            self._starving()
        return False

    @property
    def _started(self) -> bool:
        return self.job.first_audio_mono is not None

    def _position(self) -> int:
        """Where the timeline is: the job sample due at the next frame written (< 0 before the target)."""
        assert self._first is not None
        return self._clock.frames + self._lost - self._first

    def _silence(self, frames: int) -> None:
        """Write ``frames`` of silence, unless a stream that never blocks is ahead of real time (then
        wait a moment for a piece instead)."""
        if self._clock.runs_ahead(2 * self._block / self._rate):
            self.pull(0.002)
            return
        before, counted = self._clocks.mono(), self._writer.underruns
        self._writer.write(self.job.converter.silence(frames))
        self._note_lost(before, self._clock.wrote(before, frames), counted)

    def _note_lost(self, before: float, lost_s: float, counted: int) -> None:
        """The device lost ``lost_s`` of the timeline (ran dry), as the write just made, begun at
        ``before`` with ``counted`` underruns on the writer, showed.  If it began to show once the
        job had begun, that is a dropout the listener heard, what it stood for being skipped:
        counted here unless the writer's own account (a write later than the device's whole
        buffer) or a gap in hand already did.  A stall longer than JUMP_S but shorter than the
        buffer's latency (~0.09 s through PulseAudio) used to be skipped without a word: `finished`
        said 0 underruns for a dropout.  A loss begun just before the job's first sample but
        confirmed after it (CONFIRM_S) started the job that much late, which `started` could not
        know; the catch-up then skips as much speech: a dropout too, counted the same way."""
        self._counts.append((before, counted))
        while self._counts[0][0] < before - WINDOW_S:
            self._counts.popleft()
        if lost_s <= 0:
            return
        self._lost += round(lost_s * self._rate)
        since = self._clock.lost_from
        if self._began is None or since is None or self._in_gap:
            return
        # (the clock confirms a jump CONFIRM_S after it: the writer may have counted it meanwhile)
        then = next((c for t, c in reversed(self._counts) if t < since), self._counts[0][1])
        if self._writer.underruns == then:
            self._writer.underruns += 1
            self._writer.gap_s += lost_s

    def _to_target(self) -> None:
        """Keep the stream running on silence; fix the first sample's frame at the last moment."""
        block = self._block
        if self._first is None:
            if self._clock.epoch is None:
                self._silence(block)
                return
            target = self._clocks.mono_of(self._timed.at_unix) - self._timed.output_delay_s
            due = round(self._clock.frames + (target - self._clock.heard_at(self._clock.frames)) * self._rate)
            if due - self._clock.frames > 2 * block:
                self._silence(block)
                return
            self._first = due + self._lost
            self._fixed_settled = self._clock.settled
            self._fixed_epoch, self._lost_at_fix = self._clock.epoch, self._lost
            if self._position() >= 0:
                return
        self._silence(min(block, -self._position()))

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
        self._fixed_epoch, self._lost_at_fix = epoch, self._lost

    def _skip_past(self) -> None:
        """Drop the samples in hand whose time has passed (a late join, or after a gap)."""
        behind = self._position() - self._consumed
        if behind > 0 and self.stage.avail:
            got, _, _ = self.stage.take(min(behind, self.stage.avail))
            self._consumed += got.size

    def _start_fields(self) -> None:
        """Before the first write of the job's audio: what the `started` report says."""
        if self._started:
            return
        heard = self._clock.heard_at(self._clock.frames) + self._timed.output_delay_s
        if self._fixed_settled and self._fixed_epoch is not None and self._lost == self._lost_at_fix:
            # The start stands on the settled estimate it was fixed from (see _refix), and so does
            # what is said of it: the readings' jitter since has moved the estimate, not the device.
            heard = self._fixed_epoch + self._clock.frames / self._rate + self._timed.output_delay_s
        due = self._clocks.mono_of(self._timed.at_unix) + self._consumed / self._rate
        self.stage.sync_error_ms = (heard - due) * 1000.0
        self.stage.late_ms = self._consumed / self._rate * 1000.0
        self._began = self._clocks.mono()
        if not self.job.begin(self.job.generation):  # (held speech counts as begun from here)
            self.stage.drop(self.job.is_void)

    def _emit(self, n: int) -> None:
        self._start_fields()
        samples, pos, gain = self.stage.take(n)
        before, counted = self._clocks.mono(), self._writer.underruns
        self.stage.emit(samples, pos, gain)
        self._consumed += samples.size
        self._note_lost(before, self._clock.wrote(before, samples.size), counted)
        self._in_gap = False

    def _starving(self) -> None:
        """Not enough audio in hand: wait while the device has enough queued, then keep the timeline
        with silence (an underrun and a gap once the job has begun: what it stands for is skipped)."""
        wait = self._clock.queued_s() - (2 * self._block / self._rate + 0.005)
        if wait > 0:
            self.pull(min(0.005, wait))
            return
        if self.stage.avail:
            self._emit(min(self.stage.avail, self._block))
            return
        if self._started and not self._clock.runs_ahead(2 * self._block / self._rate):
            if not self._in_gap:
                self._writer.underruns += 1
                self._in_gap = True
            self._writer.gap_s += self._block / self._rate
        self._silence(self._block)


__all__ = ["DeviceClock", "TimedPlay"]
