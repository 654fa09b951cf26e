"""The simple blocking path `edgetts say` uses: synthesized chunks straight to a device."""

from __future__ import annotations

import time
from collections.abc import Iterable

from edgetts.audio.convert import Converter, DeviceFormat
from edgetts.audio.device import OutputStreamLike, StreamFactory
from edgetts.engine import AudioChunk


def play_chunks(
    chunks: Iterable[AudioChunk],
    stream_factory: StreamFactory,
    *,
    device: str | int | None = None,
    lead_in_s: float = 0.0,
) -> None:
    """Play synthesized chunks on ``device`` and return when they have been played.

    The device is opened (through ``stream_factory``) at the first chunk's
    rate, 16-bit mono; ``lead_in_s`` seconds of silence go first.  A first chunk's
    ``lead_s`` is honoured: nothing is written until that long after it came (a later chunk's
    lead, until then, extends the wait), unless the text ends first; meanwhile the (lazy)
    synthesis goes on.  Raises
    :class:`AudioDeviceError` (one line) when there is no usable output device.
    """
    stream: OutputStreamLike | None = None
    converter: Converter | None = None
    held: list[AudioChunk] = []
    hold_until: float | None = None
    try:
        for chunk in chunks:
            if stream is None:
                if hold_until is None or chunk.lead_s > 0:  # a later chunk's lead extends the hold
                    hold_until = max(hold_until or 0.0, time.monotonic() + chunk.lead_s)
                if time.monotonic() < hold_until:
                    held.append(chunk)  # the next chunk is synthesized during the hold
                    continue
                fmt = DeviceFormat(rate=(held[0] if held else chunk).sample_rate)
                stream, converter = _open_for_chunks(stream_factory, device, fmt, lead_in_s)
            assert converter is not None
            for c in [*held, chunk]:
                stream.write(converter.to_bytes(converter.resample(c.audio, c.sample_rate)))
            held.clear()
        if held:  # the text ended during the hold: play what it has
            stream, converter = _open_for_chunks(
                stream_factory, device, DeviceFormat(rate=held[0].sample_rate), lead_in_s
            )
            for c in held:
                stream.write(converter.to_bytes(converter.resample(c.audio, c.sample_rate)))
    finally:
        if stream is not None:
            stream.close()


def _open_for_chunks(
    stream_factory: StreamFactory, device: str | int | None, fmt: DeviceFormat, lead_in_s: float
) -> tuple[OutputStreamLike, Converter]:
    stream = stream_factory(device, fmt, 1024)
    converter = Converter(fmt)
    if lead_in_s > 0:
        stream.write(converter.silence(int(round(lead_in_s * fmt.rate))))
    return stream, converter


__all__ = ["play_chunks"]
