"""The retained status of a device (`<prefix>/<device>/status`), and what it says is degraded.

Every daemon publishes one; `edgetts fleet` reads them all back from the broker
(issue 19), so :meth:`Status.from_payload` accepts what older versions wrote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from edgetts.daemon.admission.intake import PayloadError
from edgetts.vocabulary import DegradedWhat


@dataclass(frozen=True)
class Degraded:
    """Something not working as configured, and why."""

    what: DegradedWhat
    reason: str


@dataclass(frozen=True)
class Status:
    """This device's state, retained on `<prefix>/<device>/status` (the Last Will is `offline`)."""

    state: Literal["online", "offline"]
    version: str
    voice: str
    """Name of the default voice."""

    queue_depth: int = 0
    """Announcements waiting (not counting the one playing)."""

    locked_bytes: int = 0
    """Bytes locked in RAM (the process's VmLck: the voices' weights when memory.lock is on)."""

    degraded: tuple[Degraded, ...] = ()
    voices: tuple[str, ...] = ()
    """Every voice an announcement may name."""

    current: str | None = None
    """Id of the announcement playing."""

    ts: float = 0.0
    """Unix seconds when this status was made."""

    keepalive: dict[str, float] | None = None
    """Keepalive runs and CPU cost: runs, preempted, cpu_s_per_run, cpu_s_per_hour, interval_s."""

    underruns: int = 0
    """Times the sound card ran dry during announcements since the daemon started (issue 14)."""

    gap_ms: float = 0.0
    """Milliseconds it was dry in all since start."""

    rtf_1min: float | None = None
    """Real-time factor of all synthesis over the last minute (wall seconds per second of audio);
    None without runs in that minute (issue 14)."""

    speed: dict[str, Any] | None = None
    """The measured synthesis speed (edgetts.daemon.pacing.speed.Governor.status): rtf_1min, runs_1min,
    audio_s_1min, compute_s_1min, voices (each: rtf_1min, rtf_load), variants_in_use."""

    groups: tuple[str, ...] = ()
    """The device's groups (device.groups): what `<prefix>/group/<g>/announce` reaches it."""

    clock: dict[str, Any] | None = None
    """edgetts.runtime.clock.ClockHealth.to_dict: synchronized, error_ms, max_error_ms, reason (issue 19)."""

    last: dict[str, Any] | None = None
    """The last announcement's last event: id, event, ts."""

    schedule: dict[str, Any] | None = None
    """The timetable's next occurrence on this device (issue 44): id (the entry's), at (Unix
    seconds), local (its local time and zone), to, and text or clip; None = none to come."""

    STATES: ClassVar[tuple[str, ...]] = ("online", "offline")

    def to_payload(self) -> bytes:
        obj = {
            "state": self.state,
            "version": self.version,
            "voice": self.voice,
            "queue_depth": self.queue_depth,
            "locked_bytes": self.locked_bytes,
            "degraded": [{"what": d.what, "reason": d.reason} for d in self.degraded],
            "voices": list(self.voices),
            "current": self.current,
            "ts": round(self.ts, 3),
            "underruns": self.underruns,
            "gap_ms": round(self.gap_ms, 1),
        }
        if self.keepalive is not None:
            obj["keepalive"] = self.keepalive
        obj["rtf_1min"] = self.rtf_1min
        if self.speed is not None:
            obj["speed"] = self.speed
        obj["groups"] = list(self.groups)
        if self.clock is not None:
            obj["clock"] = self.clock
        if self.last is not None:
            obj["last"] = self.last
        if self.schedule is not None:
            obj["schedule"] = self.schedule
        return json.dumps(obj, ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_payload(cls, payload: bytes) -> Status:
        obj = json.loads(payload)
        if obj.get("state") not in cls.STATES:
            raise PayloadError(f"unknown state {obj.get('state')!r}")
        return cls(
            state=obj["state"],
            version=obj["version"],
            voice=obj["voice"],
            queue_depth=int(obj.get("queue_depth", 0)),
            locked_bytes=int(obj.get("locked_bytes", 0)),
            degraded=tuple(Degraded(d["what"], d["reason"]) for d in obj.get("degraded", [])),
            voices=tuple(obj.get("voices", ())),
            current=obj.get("current"),
            ts=float(obj.get("ts", 0.0)),
            keepalive=obj.get("keepalive"),
            underruns=int(obj.get("underruns", 0)),
            gap_ms=float(obj.get("gap_ms", 0.0)),
            rtf_1min=obj.get("rtf_1min"),
            speed=obj.get("speed"),
            groups=tuple(obj.get("groups", ())),
            clock=obj.get("clock"),
            last=obj.get("last"),
            schedule=obj.get("schedule"),
        )


__all__ = ["Degraded", "Status"]
