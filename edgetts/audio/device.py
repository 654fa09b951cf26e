"""What the player writes to: a blocking output stream in one :class:`DeviceFormat`.

The sound card itself (PortAudio) lives at the edge, in
:mod:`edgetts.daemon.sound_card`; the player and ``play_chunks`` are handed a
factory, so audio/ never imports PyAudio and tests inject a recording stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

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


StreamFactory = Callable[[str | int | None, DeviceFormat, int], OutputStreamLike]
"""Opens ``device`` (a name, an index, or None/"default") in a format with a block size in frames."""
