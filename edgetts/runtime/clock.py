"""Is this board's clock right? The kernel's answer, as NTP left it (issue 19).

Speakers on several boards play a synchronized announcement at the same Unix
time, so each board's clock is part of the result.  chrony, ntpd and
systemd-timesyncd all discipline the kernel clock and leave its state there:
``adjtimex(2)`` with no mode set only reads it (no privilege needed).  The
clock is synchronized when the kernel's state is not TIME_ERROR and STA_UNSYNC
is clear; ``esterror`` and ``maxerror`` are the daemon's own estimate and
upper bound of the error (microseconds).  On a system without the call (not
Linux) the answer is "unknown", never a guess.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
from dataclasses import dataclass
from typing import Any

_LOGGER = logging.getLogger(__name__)

TIME_ERROR = 5
"""adjtimex's return value when the clock is not synchronized."""
STA_UNSYNC = 0x0040
"""`status` bit: the clock is not synchronized (set by the kernel until NTP says otherwise)."""


class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class Timex(ctypes.Structure):
    """struct timex of <sys/timex.h> (glibc, Linux: the same layout on x86_64 and aarch64)."""

    _fields_ = [
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("esterror", ctypes.c_long),
        ("status", ctypes.c_int),
        ("constant", ctypes.c_long),
        ("precision", ctypes.c_long),
        ("tolerance", ctypes.c_long),
        ("time", _Timeval),
        ("tick", ctypes.c_long),
        ("ppsfreq", ctypes.c_long),
        ("jitter", ctypes.c_long),
        ("shift", ctypes.c_int),
        ("stabil", ctypes.c_long),
        ("jitcnt", ctypes.c_long),
        ("calcnt", ctypes.c_long),
        ("errcnt", ctypes.c_long),
        ("stbcnt", ctypes.c_long),
        ("tai", ctypes.c_int),
        ("_reserved", ctypes.c_int * 11),
    ]


@dataclass(frozen=True)
class ClockHealth:
    synchronized: bool | None
    """None: unknown (no adjtimex here)."""
    error_ms: float | None = None
    """The kernel's estimated error (esterror)."""
    max_error_ms: float | None = None
    """Its upper bound (maxerror): grows by 0.5 ms a second while nothing disciplines the clock."""
    reason: str | None = None
    """Why it is not synchronized or unknown, in words for `degraded` and events."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "synchronized": self.synchronized,
            "error_ms": self.error_ms,
            "max_error_ms": self.max_error_ms,
            "reason": self.reason,
        }


@functools.cache
def _adjtimex() -> Any:
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name, use_errno=True) if name else None
    func = getattr(libc, "adjtimex", None)
    if func is not None:
        func.argtypes = [ctypes.POINTER(Timex)]
        func.restype = ctypes.c_int
    return func


def read_timex() -> tuple[int, Timex] | None:
    """(adjtimex's return value, the kernel's struct timex) read without changing anything; None if unavailable."""
    func = _adjtimex()
    if func is None:
        return None
    tx = Timex()  # modes = 0: read only
    state = func(ctypes.byref(tx))
    if state < 0:
        _LOGGER.debug("adjtimex failed: errno %d", ctypes.get_errno())
        return None
    return state, tx


def health_of(state: int, tx: Timex) -> ClockHealth:
    """What ``adjtimex``'s answer says of the clock."""
    error, bound = tx.esterror / 1000.0, tx.maxerror / 1000.0
    if state == TIME_ERROR or tx.status & STA_UNSYNC:
        return ClockHealth(False, error, bound, "clock not synchronized (no NTP: chrony, systemd-timesyncd)")
    return ClockHealth(True, error, bound)


def clock_health() -> ClockHealth:
    """This machine's clock as the kernel sees it now."""
    read = read_timex()
    if read is None:
        return ClockHealth(None, reason="clock state unknown (no adjtimex on this system)")
    return health_of(*read)


__all__ = ["STA_UNSYNC", "TIME_ERROR", "ClockHealth", "Timex", "clock_health", "health_of", "read_timex"]
