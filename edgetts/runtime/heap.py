"""The Python heap of a long-running announcer: start-up objects kept out of the collector's way.

The audio thread runs SCHED_FIFO (``cpu.realtime_audio``) but is Python: between two device writes
it needs the GIL.  A full (generation 2) collection walks every tracked object while holding the
GIL, in whichever thread triggered it, at normal priority.  After loading a voice the daemon holds
~40k such objects (onnxruntime, numpy, paho, the config, the voice's tables): measured here, a
full collection took 9.3 ms, on a Pi 4 core several times that, and on a core shared with other
work (the zone test's CPU hog) the thread holding the GIL is preempted in the middle of it.  The
device's queue (768 frames, ~35 ms through PulseAudio) is what such a pause eats into.

Nearly all of those objects live as long as the process, so after start-up they are collected
once and frozen (:func:`gc.freeze`, Python 3.7+): later collections only walk what was allocated
since, ~0 ms measured.  Objects a reload drops are freed by their reference counts as before; only
reference cycles among frozen objects would stay, and start-up leaves none worth a pause.
"""

from __future__ import annotations

import gc
import logging
import time

_LOGGER = logging.getLogger(__name__)


def freeze_startup_heap() -> int:
    """Collect once, then move every object alive into the permanent generation; how many."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    _LOGGER.info("froze %d start-up objects in %.1f ms", frozen, (time.perf_counter() - started) * 1000.0)
    return frozen


__all__ = ["freeze_startup_heap"]
