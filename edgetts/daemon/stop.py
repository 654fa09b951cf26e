"""A stop that cannot hang: the daemon process ends within STOP_LIMIT_S of a SIGTERM.

systemd kills a stop that outlasts the unit's ``TimeoutStopSec`` (15 s) without a word, and
a daemon that hangs on its way out also holds the next start back. Each step of the
orderly stop has its own timeout, but the interpreter's exit comes after them, and native
threads (onnxruntime's pool, PortAudio's) can hang that too. So the process arms
faulthandler's timer when it starts to stop and never disarms it: if the process is still
there STOP_LIMIT_S later, every thread's stack goes to stderr (the journal) and it exits
with status 1.

faulthandler's timer ends with the interpreter, though: Py_Finalize cancels it, and what
runs after (native libraries' exit handlers and static destructors, e.g. onnxruntime's) is
not bounded by it. A real-time timer (SIGALRM, whose default action ends the process) is
armed as well, NATIVE_EXIT_S later: it outlives the interpreter, so a hang there ends with
"killed by SIGALRM" (systemd: status=14/ALRM) and no stacks, since no Python is left to print them.
"""

from __future__ import annotations

import faulthandler
import signal

STOP_LIMIT_S = 10.0
NATIVE_EXIT_S = 2.0
"""After STOP_LIMIT_S, the backstop for an exit that hangs after the interpreter has ended."""


def bound_the_stop(limit_s: float = STOP_LIMIT_S, native_s: float = NATIVE_EXIT_S) -> None:
    """From now on the process ends within ``limit_s`` (+ ``native_s`` when it hangs after the
    interpreter ended), printing its threads' stacks if it must force it while Python runs."""
    faulthandler.dump_traceback_later(limit_s, exit=True)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, limit_s + native_s)


__all__ = ["NATIVE_EXIT_S", "STOP_LIMIT_S", "bound_the_stop"]
