"""The console's JSON API on the daemon in-process (fake voice, real mosquitto, ALSA capture): every
endpoint and every error, zones through MQTT, stop and cancel, and the access rules (issue 18)."""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from edgetts.config import ConfigError, parse_config

from support.console import Client, free_port, http_extra
from support.pcm import assert_played, clip_pcm, tone

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytestmark = pytest.mark.mqtt

FADE = int(22050 * 5 / 1000)


def console_rig(daemon_rig, http_more: str = "", **kw):  # type: ignore[no-untyped-def]
    port = free_port()
    rig = daemon_rig(extra=kw.pop("extra", "") + http_extra(port, http_more), **kw)
    client = Client(port)
    client.wait_up()
    # The console serves the status the loop last handed it: online on MQTT may reach the probe
    # before the console has it (503 "no status published yet" meanwhile, on a busy machine).
    deadline = time.monotonic() + 30
    while client.get("/api/status").status == 503 and time.monotonic() < deadline:
        time.sleep(0.05)
    return rig, client


def test_announce_through_the_api_plays_with_the_same_events_and_reasons(daemon_rig) -> None:
    rig, c = console_rig(daemon_rig)
    assert c.start().json() == {"auth_required": False, "authenticated": True, "csrf": c.csrf, "how": "session"}
    text = "Platform two. The train is late."
    reply = c.post("/api/announce", {"id": "h1", "text": text})
    assert (reply.status, reply.json()) == (202, {"id": "h1", "zone": "device"})
    rig.probe.wait_event("h1", "finished")
    assert rig.probe.events_of("h1") == ["queued", "started", "finished"]
    assert_played(rig.capture.pcm(), rig.expected(text), FADE)
    # a plain-text body is an announcement too, as on MQTT, with an id of its own
    plain = c.post("/api/announce", b"Shift change in ten minutes.")
    assert plain.status == 202 and plain.json()["id"]
    rig.probe.wait_event(plain.json()["id"], "finished")
    # 400 with exactly the reason of the `rejected` event
    for bad, reason in (
        ({"id": "b1", "text": 5}, "text must be a string"),
        ({"id": "b2", "text": "x", "priority": "urgent"}, "priority must be one of"),
        ({"id": "b3", "clip": "nope"}, "unknown clip 'nope'"),
        (b'{"id": "b4", "text": ', None),
    ):
        reply = c.post("/api/announce", bad)
        assert reply.status == 400, reply.body
        ident = reply.json()["id"]
        event = rig.probe.wait_event(ident, "rejected")
        assert reply.error == event["reason"]
        if reason:
            assert reason in reply.error
    # without credentials only a loopback Host is served (a DNS-rebound page of another name is refused)
    for host in ("evil.example", f"evil.example:{c.port}", f"10.0.0.1:{c.port}"):
        assert c.get("/api/session", headers={"host": host}).status == 403
        assert (
            c.post("/api/announce", {"text": "rebound"}, headers={"host": host, "origin": f"http://{host}"}).status
            == 403
        )
    for host in (f"localhost:{c.port}", f"127.0.0.1:{c.port}", f"[::1]:{c.port}"):
        assert c.get("/api/queue", headers={"host": host}).status == 200
    # the same id again: accepted as the duplicate it is, nothing queued twice
    again = c.post("/api/announce", {"id": "h1", "text": text})
    assert again.status == 202 and again.json()["duplicate"] is True
    assert rig.probe.events_of("h1") == ["queued", "started", "finished"]


def test_zones_go_out_on_the_group_and_all_topics(daemon_rig) -> None:
    rig, c = console_rig(daemon_rig, device_extra="groups: [lobby]")
    c.start()
    for zone, ident in (("all", "z-all"), ("group:lobby", "z-lobby")):
        reply = c.post("/api/announce", {"id": ident, "text": f"Zone {zone}.", "zone": zone})
        assert reply.status == 202, reply.body
        topic = "test/all/announce" if zone == "all" else "test/group/lobby/announce"
        assert reply.json() == {"id": ident, "zone": zone, "topic": topic}
        # this device is in both zones: it heard it back from the broker and played it
        rig.probe.wait_event(ident, "finished")
    # an id is made here when the payload has none, so the answer can name it
    made = c.post("/api/announce", {"text": "No id given.", "zone": "all"}).json()["id"]
    rig.probe.wait_event(made, "finished")
    # checked before it is spread: a bad one is answered and never published
    bad = c.post("/api/announce", {"id": "z-bad", "text": "x", "volume": 7, "zone": "all"})
    assert (bad.status, bad.error) == (400, "volume must be 0-1")
    for zone in ("group:../x", "everywhere", 5, "group:"):
        assert c.post("/api/announce", {"text": "x", "zone": zone}).status == 400
    time.sleep(0.5)
    assert rig.probe.events_of("z-bad") == []


def test_stop_cancel_and_the_queue(daemon_rig) -> None:
    rig, c = console_rig(daemon_rig, audio_extra="realtime_pacing: true")
    c.start()
    long_text = " ".join(f"Sentence number {i} of the long one." for i in range(8))
    assert c.post("/api/announce", {"id": "long", "text": long_text}).status == 202
    rig.probe.wait_event("long", "started")
    for ident in ("q1", "q2"):
        assert c.post("/api/announce", {"id": ident, "text": f"Queued {ident}.", "priority": "low"}).status == 202
    view = c.get("/api/queue").json()
    assert view["current"] == "long"
    assert [(e["id"], e["priority"], e["text"]) for e in view["queue"]] == [
        ("q1", "low", "Queued q1."),
        ("q2", "low", "Queued q2."),
    ]
    # cancel one queued: gone with a `cancelled` event; an id neither queued nor playing is 404
    assert c.delete("/api/announcements/q1").status == 202
    assert "cancelled from http" in rig.probe.wait_event("q1", "cancelled")["reason"]
    missing = c.delete("/api/announcements/nope")
    assert (missing.status, missing.error) == (404, "no such announcement queued or playing")
    assert c.delete("/api/announcements/" + "x" * 200).status == 400
    # stop what plays: the queue plays on
    assert c.post("/api/stop").status == 202
    assert rig.probe.wait_event("long", "cancelled")["reason"] == "stopped from http"
    rig.probe.wait_event("q2", "finished", timeout=30)
    assert "started" not in rig.probe.events_of("q1")
    # The view's `current` is the status the loop publishes at the end of the turn that published
    # `finished`: the event may reach the probe first, so the view is waited for, a little.
    deadline = time.monotonic() + 5
    while (view := c.get("/api/queue").json())["current"] is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert view == {"current": None, "queue_depth": 0, "queue": []}


def test_read_only_views(daemon_rig, tmp_path: Path) -> None:
    chime = tone(880, 0.3)
    secret = "pa55-not-shown"
    (tmp_path / "broker.pw").write_text(secret + "\n")
    rig, c = console_rig(
        daemon_rig,
        clips={"ding": chime, "bell_2": tone(440, 0.2)},
        mqtt_extra=f"username: u\npassword: {secret}",
        extra=f"cache:\n  dir: {tmp_path / 'cache'}\n",
    )
    status = c.get("/api/status").json()
    assert status["state"] == "online" and isinstance(status["degraded"], list)
    assert status["voices"] == ["default"]
    voices = c.get("/api/voices").json()
    assert voices["default"] == "default"
    assert voices["voices"][0] | {"streaming": None} == {
        "name": "default",
        "default": True,
        "loaded": True,
        "sample_rate": 22050,
        "streaming": None,
        "error": None,
    }
    clips = c.get("/api/clips").json()["clips"]
    assert [x["name"] for x in clips] == ["bell_2", "ding"]
    assert clips[1]["duration_s"] == pytest.approx(0.3, abs=0.001)
    wav = c.get("/api/clips/ding")
    assert wav.status == 200 and wav.headers["content-type"] == "audio/wav"
    assert np.array_equal(np.frombuffer(wav.body[44:], "<i2"), clip_pcm(rig.daemon.clips.get("ding")))
    # a clip is named, never a path: nothing is ever opened from what the request says
    for bad in (
        "..%2F..%2Fetc%2Fpasswd",
        "../x",
        "a%00b",
        "%2Fetc%2Fpasswd",
        "C:x",
        "a.wav",
        "x" * 65,
        "ding%0A",
        "ding/../ding",
        "%20ding",
    ):
        reply = c.get(f"/api/clips/{bad}")
        assert reply.status == 400, (bad, reply.body)
    assert c.get("/api/clips/absent").status == 404
    cache = c.get("/api/cache").json()
    assert cache["enabled"] is True and cache["entries"] == 0 and cache["max_bytes"] == 200_000_000
    config = c.get("/api/config")
    assert secret not in config.body.decode()
    assert config.json()["mqtt"]["password"] == "<redacted>" and config.json()["mqtt"]["username"] == "u"
    doc = c.get("/api/openapi.json").json()
    from edgetts.daemon.inbound.http.app import ROUTES

    documented = {p for p in doc["paths"]}
    served = {re.sub(r":path}", "}", r.path) for r in ROUTES if r.path.startswith("/api/")}
    assert served == documented
    assert c.get("/api/nothing-here").status == 404
    assert c.request("PUT", "/api/status").status in (403, 405)
    page = c.get("/")
    assert page.status == 200 and b"<title>edgetts console</title>" in page.body
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for name in ("console.js", "console.css", "favicon.svg"):
        assert c.get(f"/static/{name}").status == 200
    assert c.get("/static/index.html").status == 404  # only the listed assets


def _outward_address() -> str | None:
    """This machine's address toward other machines (no packet is sent), or None without one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
        except OSError:
            return None
        address = str(s.getsockname()[0])
    return None if address.startswith("127.") else address


def test_events_stream_and_recent_log(daemon_rig) -> None:
    rig, c = console_rig(daemon_rig)
    c.start()
    # no credentials: bound to loopback, so nothing answers on the machine's other address
    outward = _outward_address()
    if outward is not None:
        with pytest.raises(OSError):
            socket.create_connection((outward, c.port), timeout=2).close()
    conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=20)
    conn.request("GET", "/api/events", headers={"cookie": c.cookie or ""})
    res = conn.getresponse()
    assert res.status == 200 and res.getheader("content-type").startswith("text/event-stream")
    first = res.readline() + res.readline()
    assert first.startswith(b"event: status\ndata: {")
    assert c.post("/api/announce", {"id": "sse1", "text": "Hello."}).status == 202
    seen = []
    kind = b""
    while "finished" not in seen:
        line = res.readline()
        if line.startswith(b"event: "):
            kind = line[7:].strip()
        elif line.startswith(b"data: ") and kind == b"event" and json.loads(line[6:])["id"] == "sse1":
            seen.append(json.loads(line[6:])["event"])
    assert seen == ["queued", "started", "finished"]
    conn.close()
    recent = [e["event"] for e in c.get("/api/events/recent").json()["events"] if e["id"] == "sse1"]
    assert recent == ["queued", "started", "finished"]


def test_password_tokens_sessions_csrf_and_back_off(daemon_rig, tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("correct horse\n")
    (tmp_path / "tokens").write_text("# scripts\ntok-1234567890\n")
    rig, c = console_rig(daemon_rig, f"password_file: {tmp_path / 'pw'}\ntokens_file: {tmp_path / 'tokens'}")
    assert c.start().json() == {"auth_required": True, "authenticated": False, "csrf": None, "how": None}
    for path in ("/api/status", "/api/queue", "/api/clips", "/api/voices", "/api/config", "/api/events"):
        assert c.get(path).status == 401, path
    assert c.post("/api/announce", {"text": "sneaky"}).status == 401
    assert c.get("/api/openapi.json").status == 200 and c.get("/").status == 200  # public, no secrets
    # bearer tokens: no CSRF token needed (a browser never sends one by itself)
    bad = Client(c.port, token="tok-wrong")
    assert bad.get("/api/status").status == 401
    script = Client(c.port, token="tok-1234567890")
    assert script.get("/api/status").status == 200
    assert script.post("/api/announce", {"id": "t1", "text": "By token."}).status == 202
    rig.probe.wait_event("t1", "finished")
    # a wrong password, then a wait: even the right one is refused until it has passed
    wrong = c.login("battery staple")
    assert (wrong.status, wrong.error) == (401, "wrong password")
    early = c.login("correct horse")
    assert early.status == 429 and int(early.headers["retry-after"]) >= 1
    time.sleep(int(early.headers["retry-after"]))
    ok = c.login("correct horse")
    assert ok.status == 200, ok.body
    cookie = ok.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert c.get("/api/status").status == 200
    # every change needs the session's CSRF token, from this origin
    assert c.post("/api/announce", {"text": "no token"}, csrf=False).status == 403
    assert c.post("/api/announce", {"text": "x"}, headers={"x-csrf-token": "forged"}).status == 403
    assert c.post("/api/announce", {"text": "x"}, headers={"origin": "http://evil.example"}).status == 403
    assert c.post("/api/announce", {"text": "x"}, headers={"sec-fetch-site": "cross-site"}).status == 403
    assert c.delete("/api/announcements/x", csrf=False).status == 403
    assert c.post("/api/stop", csrf=False).status == 403
    assert c.post("/api/tts", {"text": "x"}, csrf=False).status == 403
    other = Client(c.port)
    other.login("correct horse")
    assert c.post("/api/announce", {"text": "x"}, headers={"x-csrf-token": other.csrf or ""}).status == 403
    assert c.post("/api/announce", {"id": "s1", "text": "By session."}).status == 202
    rig.probe.wait_event("s1", "finished")
    assert c.post("/api/logout").status == 200
    assert c.get("/api/status").status == 401
    # nothing that was refused played
    assert {e["id"] for e in rig.probe.events if e["event"] == "started"} == {"t1", "s1"}


def test_body_size_and_rate_limits(daemon_rig) -> None:
    rig, c = console_rig(daemon_rig, "max_body_bytes: 2048\nrate_per_min: 40")
    c.start()
    big = {"text": "a" * 4000}
    assert c.post("/api/announce", big).status == 413
    # a chunked body gives no size first: it is cut off as it is read
    conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=20)
    conn.putrequest("POST", "/api/announce")
    for k, v in (
        ("cookie", c.cookie),
        ("x-csrf-token", c.csrf),
        ("transfer-encoding", "chunked"),
        ("content-type", "application/json"),
    ):
        conn.putheader(k, v or "")
    conn.endheaders()
    for _ in range(4):
        conn.send(b"400\r\n" + b"a" * 1024 + b"\r\n")
    conn.send(b"0\r\n\r\n")
    assert conn.getresponse().status == 413
    conn.close()
    assert c.post("/api/announce", b"x", headers={"content-length": "abc"}).status == 400
    statuses = [c.get("/api/status").status for _ in range(45)]
    assert 429 in statuses and statuses[0] == 200
    limited = c.get("/api/status")
    assert limited.status == 429 and int(limited.headers["retry-after"]) >= 1
    assert [e for e in rig.probe.events if e["event"] in ("queued", "started")] == []


def test_without_credentials_only_loopback(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "192.168.1.10", "[::]", "example.org"):
        with pytest.raises(ConfigError) as info:
            parse_config(f"http:\n  listen: '{host}:8480'\n")
        assert "binds to loopback only" in str(info.value)
    for host in ("127.0.0.1", "127.0.0.2", "[::1]", "localhost"):
        assert parse_config(f"http:\n  listen: '{host}:8480'\n").http.listen == f"{host}:8480"
    (tmp_path / "pw").write_text("x\n")
    open_to_all = parse_config(f"http:\n  listen: 0.0.0.0:8480\n  password_file: {tmp_path / 'pw'}\n")
    assert open_to_all.http.has_credentials
    assert parse_config("").http.enabled is False and parse_config("").http.listen == "127.0.0.1:8480"


def test_a_bad_credential_or_port_degrades_http_and_serves_nothing(daemon_rig, tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("\n")
    port = free_port()
    rig = daemon_rig(extra=http_extra(port, f"password_file: {tmp_path / 'empty'}"))
    status = rig.probe.wait_status(lambda s: any(d["what"] == "http" for d in s["degraded"]))
    assert "is empty" in next(d["reason"] for d in status["degraded"] if d["what"] == "http")
    with pytest.raises(OSError):
        Client(port, timeout=2).get("/api/status")
    # the announcer itself runs on
    rig.say("after", "Still speaking.")
    # a port in use: the reason says so
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = daemon_rig(extra=http_extra(taken.getsockname()[1]))
        status = busy.probe.wait_status(lambda s: any(d["what"] == "http" for d in s["degraded"]))
        assert "cannot listen on" in next(d["reason"] for d in status["degraded"] if d["what"] == "http")


def test_tls_serves_https_with_secure_cookies(daemon_rig, tmp_path: Path) -> None:
    cert, key = tmp_path / "console.crt", tmp_path / "console.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    port = free_port()
    rig = daemon_rig(extra=http_extra(port, f"certfile: {cert}\nkeyfile: {key}"))
    c = Client(port, tls=True)
    c.wait_up()
    started = c.start()
    assert started.status == 200 and "Secure" in started.headers["set-cookie"]
    assert c.post("/api/announce", {"id": "tls1", "text": "Over TLS."}).status == 202
    rig.probe.wait_event("tls1", "finished")
    with pytest.raises((OSError, http.client.HTTPException)):  # plain HTTP to the TLS port: no answer
        Client(port, timeout=5).get("/api/status")
    # a key that does not match its certificate: the console does not start, and says why
    subprocess.run(["openssl", "genrsa", "-out", str(tmp_path / "other.key"), "2048"], check=True, capture_output=True)
    bad = daemon_rig(extra=http_extra(free_port(), f"certfile: {cert}\nkeyfile: {tmp_path / 'other.key'}"))
    status = bad.probe.wait_status(lambda s: any(d["what"] == "http" for d in s["degraded"]))
    assert "certfile and keyfile" in next(d["reason"] for d in status["degraded"] if d["what"] == "http")
