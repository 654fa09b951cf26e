"""Pinning inference and audio threads to cores.

CPU affinity on Linux is per thread: ``os.sched_setaffinity(0, ...)`` changes
only the calling thread, and new threads inherit it from their creator.
onnxruntime pins its own intra-op workers from
``session.intra_op_thread_affinities``: 1-based CPU ids, exactly
``intra_op_num_threads - 1`` entries separated by ``;`` (the calling thread,
the one that calls ``session.run``, is the remaining one and is never pinned
by onnxruntime: :func:`pin_current_thread` does it).  Verified on
onnxruntime 1.32 by reading the workers' ``Cpus_allowed_list``
(``tests/test_affinity.py``).
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from edgetts.runtime.topology import format_cpulist

_LOGGER = logging.getLogger(__name__)

AFFINITIES_KEY = "session.intra_op_thread_affinities"


@dataclass(frozen=True)
class PinPlan:
    """How one session's threads are placed."""

    cores: tuple[int, ...]
    """CPUs (0-based) inference may use."""
    threads: int
    """``intra_op_num_threads``."""
    caller_cores: tuple[int, ...]
    """Where the thread calling ``session.run`` must be pinned (:func:`pin_current_thread`)."""
    affinities: str | None
    """The ``session.intra_op_thread_affinities`` value, None for one thread."""


def plan_pinning(cores: Sequence[int], threads: int | None = None) -> PinPlan:
    """One core per thread, the caller on the first; threads wrap when more than cores.

    ``threads`` None = one per core.
    """
    ordered = tuple(sorted(set(cores)))
    if not ordered:
        raise ValueError("no cores to pin to")
    if any(c < 0 for c in ordered):
        raise ValueError(f"negative CPU id in {ordered}")
    count = len(ordered) if threads is None else threads
    if count < 1:
        raise ValueError(f"threads must be at least 1, not {count}")
    return PinPlan(
        cores=ordered,
        threads=count,
        caller_cores=(ordered[0],) if count > 1 else ordered,
        affinities=intra_op_affinities(ordered, count),
    )


def intra_op_affinities(cores: Sequence[int], threads: int) -> str | None:
    """The ``session.intra_op_thread_affinities`` value for ``threads`` on ``cores``.

    Worker ``i`` (1..threads-1) gets ``cores[i % len(cores)]``, as a 1-based id;
    the caller takes ``cores[0]``.  ``(4, 5, 6, 7), 4`` -> ``"6;7;8"``.
    None when ``threads`` is 1 (no workers: the entry must then be absent).
    """
    ordered = tuple(sorted(set(cores)))
    if not ordered:
        raise ValueError("no cores to pin to")
    if threads < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    if threads == 1:
        return None
    return ";".join(str(ordered[i % len(ordered)] + 1) for i in range(1, threads))


def apply_to_session_options(so: Any, cores: Sequence[int], threads: int | None = None) -> PinPlan:
    """Set ``intra_op_num_threads`` and the affinities entry on ``so`` (a ``SessionOptions``).

    Call :func:`pin_current_thread` with ``plan.caller_cores`` on the thread that
    will call ``session.run`` (the synthesis thread) before it runs the model.
    """
    plan = plan_pinning(cores, threads)
    so.intra_op_num_threads = plan.threads
    if plan.affinities is not None:
        so.add_session_config_entry(AFFINITIES_KEY, plan.affinities)
    return plan


def pin_current_thread(cores: Sequence[int]) -> bool:
    """Pin the calling thread (only it) to ``cores``; False (logged) when refused."""
    try:
        os.sched_setaffinity(0, set(cores))
    except OSError as err:
        _LOGGER.warning("cannot pin thread to CPU %s: %s", format_cpulist(cores), err.strerror)
        return False
    return True


def thread_cores() -> tuple[int, ...]:
    """CPUs the calling thread may run on."""
    return tuple(sorted(os.sched_getaffinity(0)))


@dataclass(frozen=True)
class AudioPinResult:
    pinned: bool
    realtime: bool
    problem: str | None = None
    """What could not be done and the fix; None when everything asked for was done."""


#: SCHED_FIFO priority of the audio thread: above normal tasks, below the
#: kernel's threaded IRQs (50) so the sound card's interrupt still wins.
AUDIO_RT_PRIORITY = 10


def pin_audio_thread(core: int | None, *, realtime: bool = False, priority: int = AUDIO_RT_PRIORITY) -> AudioPinResult:
    """Call on the audio thread: pin it to ``core`` and optionally make it SCHED_FIFO.

    Never raises: EPERM (no CAP_SYS_NICE, RLIMIT_RTPRIO 0) is reported in
    ``problem`` and the thread keeps normal scheduling.
    """
    problems: list[str] = []
    pinned = False
    if core is not None:
        pinned = pin_current_thread((core,))
        if not pinned:
            problems.append(f"cannot pin the audio thread to CPU {core}")
    is_rt = False
    if realtime:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
            is_rt = True
        except OSError as err:
            name = errno.errorcode.get(err.errno or 0, str(err.errno))
            problems.append(
                f"real-time audio not permitted (SCHED_FIFO: {name}); "
                "fix: AmbientCapabilities=CAP_SYS_NICE or LimitRTPRIO=" + str(priority)
            )
    problem = "; ".join(problems) or None
    if problem:
        _LOGGER.warning("%s", problem)
    return AudioPinResult(pinned=pinned, realtime=is_rt, problem=problem)
