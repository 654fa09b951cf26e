"""A stop that cannot hang: the daemon process ends within STOP_LIMIT_S of a SIGTERM.

systemd kills a stop that outlasts the unit's ``TimeoutStopSec`` (15 s) without a word, and
a daemon that hangs on its way out also holds the next start back. Each step of the
orderly stop has its own timeout, but the interpreter's exit comes after them, and native
threads (onnxruntime's pool, PortAudio's) can hang that too. So the process arms
faulthandler's timer when it starts to stop and never disarms it: if the process is still
there STOP_LIMIT_S later, every thread's stack goes to stderr (the journal) and it exits
with status 1.
"""

from __future__ import annotations

import faulthandler

STOP_LIMIT_S = 10.0


def bound_the_stop(limit_s: float = STOP_LIMIT_S) -> None:
    """From now on the process ends within ``limit_s``, printing its threads' stacks if it must force it."""
    faulthandler.dump_traceback_later(limit_s, exit=True)


__all__ = ["STOP_LIMIT_S", "bound_the_stop"]
