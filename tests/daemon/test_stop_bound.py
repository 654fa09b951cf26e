"""A stop that hangs ends the process within the bound, and says where it hung."""

from __future__ import annotations

import subprocess
import sys
import time

from edgetts.daemon.stop import STOP_LIMIT_S

from support.paths import ROOT

# A process stuck as a hung stop would be: its main thread waits for a thread that never ends.
_HUNG = """
import threading, time
from edgetts.daemon.stop import bound_the_stop
def stuck_in_device_close():
    while True:
        time.sleep(0.05)
worker = threading.Thread(target=stuck_in_device_close, name="edgetts-audio")
worker.start()
bound_the_stop(1.0)
worker.join()
"""

_CLEAN = """
from edgetts.daemon.stop import bound_the_stop
bound_the_stop(5.0)
print("done")
"""


def test_a_hung_stop_ends_with_status_1_and_every_threads_stack() -> None:
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-c", _HUNG], capture_output=True, text=True, timeout=30)
    took = time.monotonic() - start
    assert run.returncode == 1, run.stderr
    assert took < 10, f"took {took:.1f} s"
    assert run.stderr.startswith("Timeout (0:00:01)!"), run.stderr
    assert " in stuck_in_device_close\n" in run.stderr  # the hung thread, where it is
    assert " in join\n" in run.stderr  # and the main thread, waiting for it


def test_a_stop_that_ends_in_time_is_not_cut_short() -> None:
    run = subprocess.run([sys.executable, "-c", _CLEAN], capture_output=True, text=True, timeout=30)
    assert (run.returncode, run.stdout.strip(), run.stderr) == (0, "done", "")


def test_the_bound_is_inside_the_units_stop_timeout() -> None:
    unit = (ROOT / "systemd" / "edgetts.service").read_text()
    line = next(ln for ln in unit.splitlines() if ln.startswith("TimeoutStopSec="))
    assert STOP_LIMIT_S < float(line.split("=", 1)[1])
