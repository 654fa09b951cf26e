"""The sound server's other playback streams: PulseAudio, or PipeWire through its PulseAudio interface.

Through pulsectl (ctypes over libpulse, which every PulseAudio and PipeWire system has): one
connection kept open, so a fade step is a round trip of some hundred microseconds, where
spawning `pactl` per stream and step would cost a small board tens of milliseconds of CPU each,
beside the voice.  It is imported only when `duck.pulse` is on.

Which streams: every sink input (playback stream) of a client, except the clients of this
process (edgetts's own stream, through PortAudio and ALSA's pulse plugin or directly).  Sink
inputs a module owns (a remap, combine or loopback sink feeding its master) are left alone: they
carry whatever plays into their sink, edgetts included, and the streams feeding them are lowered
themselves.  The server is the one libpulse finds (`PULSE_SERVER`, else the user's session).

A stream's volume is one value per channel where 1.0 is 100 %; the server's curve is cubic
(amplitude = value^3), so ``db`` quieter is each value times 10^(db/60).
"""

from __future__ import annotations

import os
from typing import Any

from edgetts.daemon.ducking.mixer import Level, MixerError

TIMEOUT_S = 2.0
"""Seconds to connect."""

_NO_CLIENT = 0xFFFFFFFF  # PA_INVALID_INDEX: a sink input a module owns


class PulseMixer:
    """One libpulse connection, used from the ducking worker's thread only."""

    kind = "pulse"
    address = ""
    tolerance = 1.5 / 65536  # (the server keeps 1/65536 steps)

    def __init__(self, own_pid: int | None = None, timeout_s: float = TIMEOUT_S) -> None:
        try:
            import pulsectl
        except ImportError:
            raise MixerError("pulse: duck.pulse needs the Python package pulsectl (edgetts[daemon])") from None
        self._lib: Any = pulsectl
        self._pid = str(os.getpid() if own_pid is None else own_pid)
        self._errors = (pulsectl.PulseError, pulsectl.PulseDisconnected)
        try:
            self._pulse = pulsectl.Pulse("edgetts-duck", connect=False)
            self._pulse.connect(timeout=timeout_s)
        except self._errors as exc:
            raise MixerError(f"pulse: cannot connect to the sound server: {exc}") from None

    def levels(self) -> dict[str, Level]:
        try:
            ours = {c.index for c in self._pulse.client_list() if c.proplist.get("application.process.id") == self._pid}
            streams = self._pulse.sink_input_list()
        except self._errors as exc:
            raise MixerError(f"pulse: {exc or type(exc).__name__}") from None
        self._check()
        out: dict[str, Level] = {}
        for si in streams:
            props = si.proplist
            if si.client == _NO_CLIENT or si.client in ours or props.get("application.process.id") == self._pid:
                continue
            # The index alone may be another stream's after a server restart: the key names its owner too.
            key = f"{si.index}/{props.get('application.process.id', '')}/{props.get('application.name', '')}"
            out[key] = [round(float(v), 6) for v in si.volume.values]
        return out

    def set_levels(self, levels: dict[str, Level]) -> None:
        for key, level in levels.items():
            index = int(key.split("/", 1)[0])
            try:
                self._pulse.sink_input_volume_set(index, self._lib.PulseVolumeInfo([float(v) for v in level]))
            except self._lib.PulseOperationFailed:
                self._check()
                continue  # gone meanwhile, or a stream whose volume cannot be set (passthrough)
            except self._errors as exc:
                raise MixerError(f"pulse: {exc or type(exc).__name__}") from None

    def _check(self) -> None:
        # pulsectl answers a lost connection with an empty list or a failed operation: ask it.
        if not self._pulse.connected:
            raise MixerError("pulse: the connection to the sound server was lost")

    def lowered(self, level: Level, db: float) -> Level:
        factor = 10.0 ** (db / 60.0)
        return [round(float(v) * factor, 6) for v in level]

    def close(self) -> None:
        self._pulse.close()


__all__ = ["PulseMixer"]
