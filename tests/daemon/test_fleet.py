"""A site of 20 daemons on one loopback broker (issue 19): `all` and group announcements reach each
member once, `edgetts fleet` lists all 20 from their retained statuses, and a killed one turns
offline through its Last Will.

Nineteen daemons run in this process (fake voices, output kept in memory: the test is about
messages, not sound); the twentieth is a real `edgetts run` subprocess with no voice (it serves
clips only), so it can be SIGKILLed.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from edgetts.runtime.clock import clock_health

from support.broker import Broker
from support.daemon import DaemonProcess, DaemonRig, config_yaml
from support.fleet import EventsTap, NullStream
from support.paths import ROOT

pytestmark = pytest.mark.mqtt

IN_PROCESS = 19
GROUP = "platform-2"


def _cli(config: Path, verb: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgetts.cli", verb, "--config", str(config), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )


def _fleet(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _cli(config, "fleet", *args)


def test_twenty_daemons_one_broker(
    mosquitto: Broker, alsa_capture: Any, tmp_path: Path, daemon_processes: list[DaemonProcess]
) -> None:
    prefix = f"fleet{uuid.uuid4().hex[:6]}"  # its own prefix: other tests' retained statuses stay out

    def config(device: str, group: bool, extra: str = "") -> Path:
        path = tmp_path / f"{device}.yaml"
        text = config_yaml(mosquitto, device, device_extra=f"groups: [{GROUP}]" if group else "", extra=extra)
        path.write_text(text.replace("topic_prefix: test", f"topic_prefix: {prefix}"))
        return path

    members = {f"site-{i:02d}": i % 2 == 0 for i in range(IN_PROCESS + 1)}  # device -> in the group
    tap = EventsTap(mosquitto, prefix)
    rigs: list[DaemonRig] = []
    try:
        from support.fakes import FakeVoice

        for device, grouped in list(members.items())[:IN_PROCESS]:
            rigs.append(
                DaemonRig(
                    config(device, grouped),
                    mosquitto,
                    alsa_capture,
                    {"default": FakeVoice()},
                    stream_factory=NullStream,
                )
            )
        # the twentieth: a real process whose voice is missing (clips only), to be killed
        last = list(members)[-1]
        broken = (
            config(last, members[last])
            .read_text()
            .replace("voice:\n", f"voice:\n  model: {tmp_path / 'no-such-voice.onnx'}\n")
        )
        (tmp_path / f"{last}.yaml").write_text(broken)
        proc = DaemonProcess(tmp_path / f"{last}.yaml", alsa_capture.env, tmp_path / "last.log").start()
        daemon_processes.append(proc)
        for rig in rigs:
            rig.wait_online(30)
        _wait_fleet(config("site-00", True), len(members))

        # one `all` and one group announcement: each member has it queued exactly once
        pub = rigs[0].probe
        pub.publish({"id": "all-1", "text": "Attention, all stations."}, topic=f"{prefix}/all/announce")
        pub.publish({"id": "grp-1", "text": "Platform two only."}, topic=f"{prefix}/group/{GROUP}/announce")
        tap.wait("all-1", "queued", set(members))
        grouped = {d for d, g in members.items() if g}
        tap.wait("grp-1", "queued", grouped)
        tap.wait("all-1", "finished", set(list(members)[:IN_PROCESS]))
        time.sleep(0.5)  # (a second delivery would have come by now)
        assert tap.count("all-1", "queued") == Counter({d: 1 for d in members})
        assert tap.count("grp-1", "queued") == Counter({d: 1 for d in grouped})
        # the one without a voice could not speak it, and said so
        assert tap.count("all-1", "failed")[last] == 1

        # the fleet view: all 20, online, with groups, clock, degraded and the last announcement
        out = _fleet(config("site-00", True), "--json")
        assert out.returncode == 0, out.stderr
        fleet = json.loads(out.stdout)
        assert set(fleet) == set(members)
        assert all(st["state"] == "online" for st in fleet.values())
        assert all((GROUP in st["groups"]) == members[d] for d, st in fleet.items())
        assert [d["what"] for d in fleet[last]["degraded"]] == ["voice"]
        assert fleet["site-01"]["clock"]["synchronized"] == clock_health().synchronized
        table = _fleet(config("site-00", True)).stdout.splitlines()
        assert table[0].split()[:3] == ["DEVICE", "STATE", "VERSION"] and len(table) == 21
        assert all(" online " in line for line in table[1:])

        # `edgetts announce` to the group: each member's events, exit 0 when all finished
        out = _cli(
            config("site-00", True), "announce", "Platform two, all members.", "--to", f"group/{GROUP}", "--json"
        )
        assert out.returncode == 0, out.stderr
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        ended = {ev["device"]: ev["event"] for ev in lines if ev["event"] in ("finished", "failed")}
        assert ended == {d: "finished" for d in grouped}
        assert len({ev["id"] for ev in lines}) == 1
        # to all: the one without a voice fails it, so the command says so (exit 3)
        out = _cli(config("site-00", True), "announce", "Everybody.", "--to", "all")
        assert out.returncode == 3, out.stdout + out.stderr
        assert f"{last}  failed: voice unavailable" in out.stdout
        assert sum(line.endswith("  finished") for line in out.stdout.splitlines()) == IN_PROCESS
        assert _cli(config("site-00", True), "announce", "x", "--to", "platoon").returncode == 1

        # killed: the broker publishes its Last Will, and the fleet says offline
        proc.signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 20
        while True:
            out = _fleet(config("site-00", True), "--json")
            if json.loads(out.stdout)[last]["state"] == "offline":
                break
            assert time.monotonic() < deadline, "no Last Will"
            time.sleep(0.5)
        assert out.returncode == 3  # not every device is online
        assert sum(st["state"] == "online" for st in json.loads(out.stdout).values()) == IN_PROCESS
    finally:
        for rig in rigs:
            rig.close()
        tap.close()


def _wait_fleet(config: Path, n: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        out = _fleet(config, "--json")
        online = [d for d, st in json.loads(out.stdout or "{}").items() if st.get("state") == "online"]
        if len(online) == n:
            return
        assert time.monotonic() < deadline, f"{len(online)} of {n} online: {out.stdout[-400:]} {out.stderr}"
        time.sleep(0.5)
