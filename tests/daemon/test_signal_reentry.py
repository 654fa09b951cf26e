"""A signal arriving while the loop waits on its inbox must not deadlock the daemon.

Python runs a signal handler in the main thread between any two bytecodes, including those
of the loop's own ``get``. CI caught a daemon that never ended after SIGTERM: the handler's
``queue.Queue.put`` waited on the mutex that the interrupted ``get`` held. The test runs the
real handler at every traced line of the inbox's ``get`` (where a Python-level queue holds
its lock), in a thread it can abandon if that deadlocks.
"""

from __future__ import annotations

import contextlib
import queue
import signal
import sys
import threading
import types
from pathlib import Path
from typing import Any

from edgetts.config import parse_config
from edgetts.daemon.loop import Daemon, DaemonOptions, _Signal

_LIBRARY = ("queue.py", "threading.py")


def test_the_signal_handler_run_inside_the_inbox_get_does_not_deadlock(tmp_path: Path) -> None:
    config = parse_config(f"mqtt: {{journal_dir: {tmp_path}}}\n")
    daemon = Daemon(config, options=DaemonOptions(install_signals=False))
    inbox = daemon._inbox
    fired = 0
    inside = False

    def tracer(frame: types.FrameType, event: str, _arg: Any) -> Any:
        nonlocal fired, inside
        if event == "line" and not inside and frame.f_code.co_filename.endswith(_LIBRARY):
            inside = True  # the handler's own put is not interrupted again
            try:
                daemon.on_signal(signal.SIGHUP)
                fired += 1
            finally:
                inside = False
        return tracer

    got: list[Any] = []

    def consume() -> None:
        sys.settrace(tracer)
        try:
            got.append(inbox.get(timeout=1.0))
            with contextlib.suppress(queue.Empty):
                got.append(inbox.get(timeout=0.05))
        finally:
            sys.settrace(None)

    inbox.put("message")
    worker = threading.Thread(target=consume, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), f"the inbox's get deadlocked after {fired} handler runs inside it"
    assert got[0] == "message"
    # Whatever the handler enqueued is delivered, as the loop's next messages.
    assert all(isinstance(m, _Signal) and m.signum == signal.SIGHUP for m in got[1:]), got
