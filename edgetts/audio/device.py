"""What the player writes to: a blocking output stream in one :class:`DeviceFormat`.

The sound card itself (PortAudio) lives at the edge, in
:mod:`edgetts.daemon.playout.sound_card`; the player and ``play_chunks`` are handed a
factory, so audio/ never imports PyAudio and tests inject a recording stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from edgetts.audio.convert import DeviceFormat


class OutputStreamLike(Protocol):
    """A blocking output stream; every method raises AudioDeviceError (one line) on failure."""

    format: DeviceFormat
    """What the stream was opened with."""

    def write(self, data: bytes) -> None:
        """Interleaved frames in :attr:`format`; returns once the device has room for them."""
        ...

    def drain(self) -> None:
        """Return once everything written has been played; the stream stays usable."""
        ...

    def close(self) -> None:
        """Play what was written, then release the device."""
        ...

    # Optional (see :class:`ReportsDelay`): ``delay_s() -> float | None``.


@runtime_checkable
class ReportsDelay(Protocol):
    """A stream that can tell its delay: the optional part of :class:`OutputStreamLike`."""

    def delay_s(self) -> float | None:
        """Seconds from now until the next frame written would be heard (what the device has queued);
        None when it cannot tell right now."""
        ...


def delay_s(stream: OutputStreamLike) -> float | None:
    """The stream's own delay where it reports one (:class:`ReportsDelay`), else None."""
    if isinstance(stream, ReportsDelay):
        return stream.delay_s()
    return None


StreamFactory = Callable[[str | int | None, DeviceFormat, int], OutputStreamLike]
"""Opens ``device`` (a name, an index, or None/"default") in a format with a block size in frames."""
