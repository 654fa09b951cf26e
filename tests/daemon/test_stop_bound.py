"""A stop that hangs ends the process within the bound, and says where it hung; a stop waits for a reload."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgetts.config import load_config
from edgetts.daemon.loop import Daemon, DaemonOptions
from edgetts.daemon.stop import NATIVE_EXIT_S, STOP_LIMIT_S

from support.alsa import Capture
from support.broker import Broker
from support.daemon import config_yaml
from support.fakes import FakeVoice
from support.paths import ROOT
from support.probe import Probe

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
    assert STOP_LIMIT_S + NATIVE_EXIT_S < float(line.split("=", 1)[1])


# A hang after the interpreter has ended, as a native library's exit handler or static destructor
# would hang (Py_Finalize cancels faulthandler's timer before those run): libc's pause() as an exit
# handler, which never returns.
_NATIVE_HANG = """
import ctypes
from edgetts.daemon.stop import bound_the_stop
libc = ctypes.CDLL(None)
libc.__cxa_atexit(ctypes.cast(libc.pause, ctypes.c_void_p), None, None)
bound_the_stop(0.5, native_s=0.3)
print("main returns", flush=True)
"""


def test_a_stop_that_hangs_after_the_interpreter_ended_is_killed_by_the_backstop() -> None:
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-c", _NATIVE_HANG], capture_output=True, text=True, timeout=15)
    took = time.monotonic() - start
    assert run.returncode == -signal.SIGALRM, (run.returncode, run.stderr)
    assert run.stdout == "main returns\n" and "Timeout" not in run.stderr  # faulthandler was gone by then
    assert took < 10, f"took {took:.1f} s"


@pytest.fixture()
def reload_rig(mosquitto: Broker, alsa_capture: Capture, tmp_path: Path) -> Iterator[_ReloadRig]:
    # alsa_capture: the daemon's sound device, the ALSA file plugin (set in this process's environment)
    rig = _ReloadRig(mosquitto, tmp_path)
    yield rig
    rig.close()


class _ReloadRig:
    """A daemon (in a thread) whose reload's voice load blocks until :attr:`release` is set."""

    def __init__(self, broker: Broker, tmp_path: Path) -> None:
        self.broker, self.config = broker, tmp_path / "stop-reload.yaml"
        self.config.write_text(config_yaml(broker, "stop-reload"))
        self.loading, self.release = threading.Event(), threading.Event()
        self.loaded_at: float | None = None
        self.returned_at: float | None = None
        self.probe = Probe(broker, "test", "stop-reload")
        self.daemon: Daemon | None = None
        self.thread: threading.Thread | None = None

    def _loader(self, settings: Any, text: Any, runtime: Any) -> FakeVoice:
        if settings.length_scale == 1.5:  # the reload's voice
            self.loading.set()
            self.release.wait(30)
            self.loaded_at = time.monotonic()
        return FakeVoice()

    def start(self, reload_wait_s: float) -> None:
        options = DaemonOptions(voice_loader=self._loader, install_signals=False, reload_wait_s=reload_wait_s)
        self.daemon = Daemon(load_config(self.config), self.config, options)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.probe.wait_status(lambda s: s["state"] == "online", 15)

    def _run(self) -> None:
        assert self.daemon is not None
        self.daemon.run()
        self.returned_at = time.monotonic()

    def reload_then_stop(self) -> None:
        """SIGHUP with a changed voice, and SIGTERM once the reload is loading it."""
        assert self.daemon is not None
        self.config.write_text(config_yaml(self.broker, "stop-reload", voice_extra="length_scale: 1.5"))
        self.daemon.on_signal(signal.SIGHUP)
        assert self.loading.wait(10), "the reload never loaded the changed voice"
        self.daemon.on_signal(signal.SIGTERM)

    def close(self) -> None:
        self.release.set()
        if self.thread is not None:
            self.thread.join(10)
        self.probe.close()


def _first_logged(caplog: pytest.LogCaptureFixture, messages: tuple[str, ...], timeout: float) -> str:
    """The first of ``messages`` (a record's message starts with it) that the daemon logs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for record in list(caplog.records):
            for message in messages:
                if record.getMessage().startswith(message):
                    return message
        time.sleep(0.01)
    raise AssertionError(f"none of {messages} logged within {timeout} s")


def test_a_stop_waits_for_the_reload_in_progress(reload_rig: _ReloadRig, caplog: pytest.LogCaptureFixture) -> None:
    # A process that exits while the reload thread is inside onnxruntime aborts (SIGABRT); so the stop
    # waits for the reload to end. The load is released once the stop says it waits for it (or, were
    # it not to wait, once it has logged `stopped`: the positive event that it went on without it).
    reload_rig.start(reload_wait_s=30.0)
    with caplog.at_level(logging.INFO, logger="edgetts.daemon"):
        reload_rig.reload_then_stop()
        first = _first_logged(caplog, ("stopping: waiting for the reload in progress", "stopped"), 20)
        reload_rig.release.set()
        assert reload_rig.thread is not None
        reload_rig.thread.join(10)
    assert first == "stopping: waiting for the reload in progress"
    assert reload_rig.returned_at is not None, "the daemon did not stop once the reload ended"
    assert reload_rig.loaded_at is not None and reload_rig.loaded_at <= reload_rig.returned_at
    assert "reload still loading" not in caplog.text  # ended by the reload's end, not by the bound


def test_a_reload_that_does_not_end_holds_the_stop_only_so_long(
    reload_rig: _ReloadRig, caplog: pytest.LogCaptureFixture
) -> None:
    # The wait is bounded (reload_wait_s; RELOAD_WAIT_S in the daemon), and says why it gave up.
    reload_rig.start(reload_wait_s=0.5)
    with caplog.at_level(logging.WARNING, logger="edgetts.daemon"):
        reload_rig.reload_then_stop()
        assert reload_rig.thread is not None
        reload_rig.thread.join(10)
    assert reload_rig.returned_at is not None and reload_rig.loaded_at is None  # the load still hangs
    assert "stopping with a reload still loading after 0.5 s" in caplog.text
