"""`voice.degrade_to: int8`, the default: a voice found too slow has its own int8 variant made at
idle priority, and speaks with it once it is there; the variant is loaded only when it speaks.

The real default voice speaks; it is made slow here (a second of waiting before each text: the
speed the daemon measures is wall time), so the verdict does not depend on this machine's
speed.  What makes the variant is a stand-in command (DaemonOptions.int8_command): it records
its own scheduling, and writes a copy of the voice with the report `edgetts quantize --static`
writes beside a variant (tests/voice/test_quantize_static.py makes a real one, and
test_quantize_static.py checks where `--cache` puts it).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from edgetts.daemon.assets import load_configured_voice

from support.daemon import DaemonRig

pytestmark = pytest.mark.mqtt

IDLE_PRIORITY = pytest.mark.realtime
"""The realtime tier's, for the tests that wait for the variant's maker: it runs at idle priority
(SCHED_IDLE), so it gets a core only when nothing else wants one, which the default tier, on one
worker more than the cores, never leaves (beside a CPU hog it once did not start in 30 s)."""

MAKE = """
import json, os, shutil, sys, time
model, output, record, mode = sys.argv[1:5]
with open(record, "a") as f:
    f.write(json.dumps({"policy": os.sched_getscheduler(0), "nice": os.nice(0), "pid": os.getpid()}) + "\\n")
if mode == "fail":
    sys.exit("edgetts: error: cannot quantize: out of memory")
if mode == "hang":
    time.sleep(120)
os.makedirs(os.path.dirname(output), exist_ok=True)
config = json.load(open(model + ".json"))
config["edgetts_variant"] = {"mode": "static", "speed_ratio": 1.0 if mode == "no faster" else 0.25}
json.dump(config, open(output + ".json", "w"))
shutil.copyfile(model, output + ".part")
os.replace(output + ".part", output)
"""


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model cache of each test's own: a variant one test made is not there for the next."""
    monkeypatch.setenv("EDGETTS_CACHE_DIR", str(tmp_path / "cache"))


def _command(record: Path, mode: str = "ok") -> Any:
    return lambda model, output: [sys.executable, "-c", MAKE, str(model), str(output), str(record), mode]


def _slow_loader(loads: list[str], spoken: list[tuple[str, str]]) -> Any:
    """The real loader; the voice (not its int8 variant) waits a second before each text."""

    def loader(settings: Any, text: Any, runtime: Any) -> Any:
        loads.append(settings.model)
        voice = load_configured_voice(settings, text, runtime)
        speak, variant = voice.synthesize, "-int8-" in str(settings.model)

        def synthesize(text: Any, config: Any = None) -> Any:
            spoken.append((str(settings.model), getattr(text, "source", text)))
            if not variant:
                time.sleep(1.0)  # (in the first chunk: what the daemon times is the making of chunks)
            yield from speak(text, config)

        voice.synthesize = synthesize
        return voice

    return loader


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _wait(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@IDLE_PRIORITY
def test_a_slow_voice_gets_its_int8_variant_made_at_idle_priority_and_speaks_with_it(
    daemon_rig: Any, tmp_path: Path
) -> None:
    loads: list[str] = []
    spoken: list[tuple[str, str]] = []
    record = tmp_path / "made.jsonl"
    rig: DaemonRig = daemon_rig(real_voices=True, loader=_slow_loader(loads, spoken), int8_command=_command(record))
    assert not any("-int8-" in m for m in loads)  # nothing made yet, nothing loaded
    first = rig.say("s1", "Hello there.")
    assert first["voice"] == "default" and "variant" not in first
    # Found too slow: the variant is made once, at the lowest CPU priority there is.
    _wait(lambda: _records(record), 30, "the int8 variant was never asked for")
    made = _records(record)
    assert len(made) == 1 and made[0]["policy"] == os.SCHED_IDLE and made[0]["nice"] == 19, made
    # Once made, the assets are built again with it: its cost is the voice's x the measured ratio.
    status = rig.probe.wait_status(lambda s: "default/degrade_to" in s["speed"]["voices"], 30)
    costs = status["speed"]["voices"]
    assert costs["default/degrade_to"]["rtf_load"] == pytest.approx(costs["default"]["rtf_load"] * 0.25, abs=2e-3)
    assert not any("-int8-" in m for m in loads)  # ... and it is not loaded before it speaks
    second = rig.say("s2", "Second one.")
    assert second["variant"] == "int8" and second["voice"] == "default", second
    assert second["reason"].startswith("voice default: RTF "), second
    int8 = [m for m in loads if "-int8-" in m]
    assert len(int8) == 1 and Path(int8[0]).parent.parent.name == "models", loads  # in the model cache
    assert (int8[0], "Second one.") in spoken and not any(t == "Second one." and m != int8[0] for m, t in spoken)
    # Made once per run: the next slow run does not make it again.
    rig.say("s3", "Third one.")
    assert len(_records(record)) == 1


@IDLE_PRIORITY
def test_a_variant_that_cannot_be_made_is_said_once_and_the_voice_goes_on(daemon_rig: Any, tmp_path: Path) -> None:
    loads: list[str] = []
    spoken: list[tuple[str, str]] = []
    record = tmp_path / "made.jsonl"
    rig: DaemonRig = daemon_rig(
        real_voices=True, loader=_slow_loader(loads, spoken), int8_command=_command(record, "fail")
    )
    rig.say("f1", "Hello there.")
    _wait(lambda: _records(record), 30, "the int8 variant was never asked for")
    for n in range(2, 4):
        started = rig.say(f"f{n}", "Hello again.")
        assert started["voice"] == "default" and "variant" not in started
    assert len(_records(record)) == 1  # not tried again in this run
    reason = rig.probe.wait_status(lambda s: any(d["what"] == "speed" for d in s["degraded"]), 10)["degraded"]
    assert any(d["what"] == "speed" and d["reason"].endswith("no degrade_to variant to speak instead") for d in reason)
    assert not any("-int8-" in m for m in loads)


@IDLE_PRIORITY
def test_a_variant_no_faster_than_its_voice_is_not_spoken_with(
    daemon_rig: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its maker measured it at the voice's own speed (x86 here, at 2 threads: 1.00): the voice's
    exact samples are kept, and the status says there is no variant to speak instead."""
    caplog.set_level(logging.INFO, logger="edgetts.daemon.pacing.int8")
    loads: list[str] = []
    record = tmp_path / "made.jsonl"
    rig: DaemonRig = daemon_rig(
        real_voices=True, loader=_slow_loader(loads, []), int8_command=_command(record, "no faster")
    )
    rig.say("n1", "Hello there.")
    _wait(lambda: _records(record), 30, "the int8 variant was never asked for")
    _wait(lambda: "its int8 variant is not faster here" in caplog.text, 30, "the assets were not built again")
    for n in range(2, 4):
        started = rig.say(f"n{n}", "Hello again.")
        assert started["voice"] == "default" and "variant" not in started, started
    status = rig.probe.wait_status(lambda s: any(d["what"] == "speed" for d in s["degraded"]), 10)
    assert "default/degrade_to" not in status["speed"]["voices"]
    assert any(d["reason"].endswith("no degrade_to variant to speak instead") for d in status["degraded"])
    assert len(_records(record)) == 1 and not any("-int8-" in m for m in loads)


@IDLE_PRIORITY
def test_a_variant_being_made_is_ended_with_the_daemon(daemon_rig: Any, tmp_path: Path) -> None:
    record = tmp_path / "made.jsonl"
    rig: DaemonRig = daemon_rig(real_voices=True, loader=_slow_loader([], []), int8_command=_command(record, "hang"))
    rig.say("h1", "Hello there.")
    _wait(lambda: _records(record), 30, "the int8 variant was never asked for")
    pid = _records(record)[0]["pid"]
    assert rig.stop() == 0
    _wait(
        lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2],
        10,
        "the command making the variant outlived the daemon",
    )


def test_degrade_to_null_makes_nothing(daemon_rig: Any, tmp_path: Path) -> None:
    record = tmp_path / "made.jsonl"
    rig: DaemonRig = daemon_rig(
        real_voices=True, loader=_slow_loader([], []), int8_command=_command(record), voice_extra="degrade_to: null"
    )
    rig.say("z1", "Hello there.")
    rig.probe.wait_status(lambda s: any(d["what"] == "speed" for d in s["degraded"]), 10)
    rig.say("z2", "Hello again.")
    assert not record.exists()
