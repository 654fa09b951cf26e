"""A real Home Assistant core (its python: scripts/ha-venv.sh or scripts/ha-chroot.sh) on 127.0.0.1.

Started with a config folder of its own (http on a free loopback port, the REST and config
APIs, onboarding), onboarded over its REST API to get a token, and stopped (SIGTERM, then
SIGKILL) by the caller's ``close``.  Integrations are set up through their config flows, as a
person does in the UI.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

CONFIGURATION = """\
homeassistant:
  name: edgetts test
  latitude: 51.5
  longitude: 0.0
  elevation: 0
  unit_system: metric
  time_zone: UTC
  country: GB
  # what HA gives its own media players and satellites as the base of relative media URLs
  internal_url: http://127.0.0.1:{port}
http:
  server_host: 127.0.0.1
  server_port: {port}
api:
config:
onboarding:
logger:
  default: warning
  logs:
    homeassistant.components.mqtt: info
    homeassistant.components.wyoming: debug
"""


#: Run with Home Assistant's own python (it has aiohttp): the websocket commands in argv[3] (JSON)
#: in turn, with the token argv[2], against argv[1]; prints each command's result as JSON lines.
_WS_CLIENT = """\
import asyncio, json, sys
import aiohttp

async def main(url, token, commands):
    async with aiohttp.ClientSession() as session, session.ws_connect(url + "/api/websocket") as ws:
        await ws.receive_json()
        await ws.send_json({"type": "auth", "access_token": token})
        assert (await ws.receive_json())["type"] == "auth_ok"
        for n, command in enumerate(commands, 1):
            await ws.send_json({"id": n, **command})
            while (answer := await ws.receive_json()).get("id") != n or answer["type"] != "result":
                pass
            print(json.dumps(answer))

asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HomeAssistant:
    """``python -m homeassistant -c DIR --skip-pip`` and a REST client with its token."""

    def __init__(self, python: str, folder: Path) -> None:
        self.python = python
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "configuration.yaml").write_text(CONFIGURATION.format(port=self.port), encoding="utf-8")
        self.log = folder / "hass.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ALSA_", "PYTHONPATH"))}
        with open(self.log, "wb") as logf:
            self.proc = subprocess.Popen(
                [python, "-m", "homeassistant", "-c", str(folder), "--skip-pip"],
                stdout=logf,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        self.token: str | None = None

    # ------------------------------------------------------------- http
    def request(
        self, method: str, path: str, body: Any = None, *, form: bool = False, auth: bool = True, timeout: float = 60
    ) -> Any:
        data = None
        headers = {}
        if body is not None:
            if form:
                data = urllib.parse.urlencode(body).encode()
                headers["Content-Type"] = "application/x-www-form-urlencoded"
            else:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
        if auth and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            kind = resp.headers.get("Content-Type", "")
        return json.loads(raw) if "json" in kind and raw else raw

    def wait_up(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"home assistant exited {self.proc.returncode}: {self.output()[-3000:]}")
            try:
                self.request("GET", "/api/onboarding", auth=False, timeout=5)
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                time.sleep(0.5)
        raise RuntimeError(f"home assistant did not answer in {timeout:.0f} s: {self.output()[-3000:]}")

    def onboard(self) -> None:
        """Create the owner as a person would in the first screen, and take its access token."""
        client_id = f"{self.url}/"
        user = self.request(
            "POST",
            "/api/onboarding/users",
            {
                "client_id": client_id,
                "name": "Test",
                "username": "test",
                "password": "test-password-1",
                "language": "en",
            },
            auth=False,
        )
        tokens = self.request(
            "POST",
            "/auth/token",
            {"grant_type": "authorization_code", "code": user["auth_code"], "client_id": client_id},
            form=True,
            auth=False,
        )
        self.token = tokens["access_token"]

    def flow(self, handler: str, *steps: dict[str, Any]) -> dict[str, Any]:
        """Run ``handler``'s config flow with the user's answers ``steps``; the final result."""
        result = self.request(
            "POST", "/api/config/config_entries/flow", {"handler": handler, "show_advanced_options": True}
        )
        for answer in steps:
            if result.get("type") != "form":
                break
            result = self.request("POST", f"/api/config/config_entries/flow/{result['flow_id']}", answer)
        return dict(result)

    def states(self) -> dict[str, dict[str, Any]]:
        return {s["entity_id"]: s for s in self.request("GET", "/api/states")}

    def wait_state(self, pred: Any, timeout: float = 60.0, what: str = "") -> dict[str, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            states = self.states()
            if pred(states):
                return states
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"home assistant: not {what} within {timeout:.0f} s; {sorted(states)}\n{self.output()[-3000:]}"
                )
            time.sleep(0.5)

    def websocket(self, *commands: dict[str, Any]) -> list[dict[str, Any]]:
        """Each command's result over HA's websocket API (for what REST lacks: voice pipelines)."""
        script = self.folder / "ws_client.py"
        script.write_text(_WS_CLIENT, encoding="utf-8")
        out = subprocess.run(
            [self.python, str(script), self.url, self.token or "", json.dumps(list(commands))],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def call(self, domain: str, service: str, data: dict[str, Any]) -> Any:
        return self.request("POST", f"/api/services/{domain}/{service}", data)

    def output(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
