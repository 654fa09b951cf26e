"""One job's writes to the device, and the player's own count of when the device ran dry (issue 14).

PortAudio's blocking write (through PyAudio) swallows the output-underflow flag when told not to
raise, and a flag would say neither how long nor where; so the player keeps its own account:
the audio written since the clock was based ends at ``t0 + frames / rate``.  A write that comes
later than that, by more than the device's buffer latency (how late the device may have started),
found the device dry: an underrun whose gap is the difference.  The clock is re-based at it.
A new writer per job: the silence between two jobs, and a job held before its first write, are
no underruns.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from edgetts.audio.device import OutputStreamLike

#: Tolerance where the stream does not tell its latency (PortAudio's default output latency on
#: ALSA is of this order; the paced sink's PyAudio stream reported 0.093 s here).
DEFAULT_LATENCY_S = 0.1


class DeviceWriter:
    """Writes to the stream; paces to real time when the sink does not (ALSA null); counts underruns."""

    def __init__(
        self,
        stream: OutputStreamLike,
        bytes_per_frame: int,
        rate: int,
        pace: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._clock = clock
        self._pace = pace
        self._bpf = bytes_per_frame
        self._rate = float(rate)
        latency = getattr(stream, "latency_s", None)
        self._tolerance = float(latency) if isinstance(latency, (int, float)) and latency > 0 else DEFAULT_LATENCY_S
        self._t0: float | None = None
        self._frames = 0
        self.underruns = 0
        """Times the device ran dry within this job."""
        self.gap_s = 0.0
        """Seconds it was dry in all (by this account)."""
        self._gap_ok = False

    def queued_s(self) -> float:
        """Seconds of audio written and not yet played, by this account."""
        if self._t0 is None:
            return 0.0
        return max(0.0, self._t0 + self._frames / self._rate - self._clock())

    def allow_gap(self) -> None:
        """The next write may come late on purpose (speech held for its lead): no underrun."""
        self._gap_ok = True

    def write(self, data: bytes) -> None:
        now = self._clock()
        if self._t0 is None:
            self._t0, self._frames = now, 0
        else:
            late = now - (self._t0 + self._frames / self._rate)
            if late > self._tolerance:
                if not self._gap_ok:
                    self.underruns += 1
                    self.gap_s += late
                self._t0, self._frames = now, 0
            self._gap_ok = False
        self._stream.write(data)
        self._frames += len(data) // self._bpf
        if not self._pace:
            return
        # Stay at most ~50 ms ahead of the wall clock, like a real device's buffer.
        ahead = self._frames / self._rate - (self._clock() - self._t0) - 0.05
        if ahead > 0:
            time.sleep(ahead)


__all__ = ["DEFAULT_LATENCY_S", "DeviceWriter"]
