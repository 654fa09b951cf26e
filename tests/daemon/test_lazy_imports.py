"""A daemon loads the libraries of the services it runs, and no others (issue 40: memory on a board).

`edgetts run` (a subprocess, the real voice, the test broker) with ``PYTHONPROFILEIMPORTTIME``:
Python then logs every module it imports, at start and later, so the log is the list of what the
process loaded.  With the default config none of the console (starlette, uvicorn), Wyoming (wyoming,
zeroconf) or Home Assistant discovery code may be in it; with those turned on, each is.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from support.alsa import Capture
from support.broker import Broker
from support.console import free_port
from support.daemon import DaemonProcess, config_yaml

pytestmark = pytest.mark.mqtt

OPTIONAL = {
    "starlette": "starlette",
    "uvicorn": "uvicorn",
    "anyio": "anyio",
    "asyncio (the servers' event loops)": "asyncio",
    "wyoming": "wyoming",
    "zeroconf": "zeroconf",
    "ifaddr": "ifaddr",
    "http console": "edgetts.daemon.inbound.http",
    "wyoming service": "edgetts.daemon.inbound.wyoming",
    "home assistant discovery": "edgetts.daemon.inbound.homeassistant",
}
"""What a daemon must not import unless configured: label -> module (a package covers its modules)."""


def imported(log: str) -> set[str]:
    """Every module ``-X importtime`` logged (its lines: ``import time: self | cumulative | name``)."""
    names = set()
    for line in log.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":  # the header line
                names.add(name)
    return names


def loaded(names: set[str], module: str) -> bool:
    return any(name == module or name.startswith(module + ".") for name in names)


def run_until_ready(config: Path, env: dict[str, str], log: Path, wait_for: tuple[str, ...] = ()) -> str:
    """Start `edgetts run`, wait for its ready line (services are started before it) and for each of
    ``wait_for`` (one of its alternatives, separated by `|`), stop it cleanly; its log."""
    needles = [needle.split("|") for needle in (" ready: ", *wait_for)]
    daemon = DaemonProcess(config, {**env, "PYTHONPROFILEIMPORTTIME": "1"}, log).start()
    try:
        deadline = time.monotonic() + 120
        while not all(any(alt in daemon.output() for alt in needle) for needle in needles):
            assert daemon.proc is not None and daemon.proc.poll() is None, f"daemon ended:\n{daemon.log_end()}"
            assert time.monotonic() < deadline, f"not ready in time:\n{daemon.log_end()}"
            time.sleep(0.1)
        daemon.signal(signal.SIGTERM)
        daemon.assert_clean_exit(20)
    finally:
        daemon.kill()
    return daemon.output()


def test_the_default_config_imports_no_optional_service(
    mosquitto: Broker, alsa_capture: Capture, tmp_path: Path
) -> None:
    config = tmp_path / "edgetts.yaml"
    config.write_text(config_yaml(mosquitto, "lazy-off", streaming=True))
    names = imported(run_until_ready(config, alsa_capture.env, tmp_path / "daemon.log"))
    # The log really lists what the daemon imported: its loop, MQTT client and inference runtime.
    assert {"edgetts.daemon.loop", "paho.mqtt.client", "onnxruntime"} <= names
    found = {label: module for label, module in OPTIONAL.items() if loaded(names, module)}
    assert not found, f"imported with the service off: {found}"


def test_each_service_turned_on_imports_its_libraries(mosquitto: Broker, alsa_capture: Capture, tmp_path: Path) -> None:
    for library in ("starlette", "uvicorn", "wyoming", "zeroconf"):
        pytest.importorskip(library)
    config = tmp_path / "edgetts.yaml"
    extra = (
        f"http:\n  enabled: true\n  listen: 127.0.0.1:{free_port()}\n"
        f"wyoming:\n  enabled: true\n  uri: tcp://127.0.0.1:{free_port()}\n  zeroconf: true\n"
        "homeassistant:\n  discovery: true\n"
    )
    config.write_text(
        config_yaml(mosquitto, "lazy-on", streaming=True, extra=extra, queue_extra=f"state_dir: {tmp_path / 'state'}")
    )
    # zeroconf is imported when the listener is advertised, on the Wyoming server's own loop.
    advertised = "advertised over zeroconf|not advertised over zeroconf"
    names = imported(run_until_ready(config, alsa_capture.env, tmp_path / "daemon.log", (advertised,)))
    missing = {label: module for label, module in OPTIONAL.items() if not loaded(names, module)}
    assert not missing, f"not imported with every service on: {missing}"
