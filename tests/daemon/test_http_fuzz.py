"""5,000+ malformed requests at the console (bad JSON, wrong types, huge bodies, path-like names, header
abuse, missing or forged credentials): no answer is a 500, the server and the daemon live on, and
nothing is played (issue 18)."""

from __future__ import annotations

import json
import random
import socket
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pytest

from support.console import Client, free_port, http_extra
from support.pcm import tone

pytest.importorskip("starlette")
pytestmark = [pytest.mark.mqtt, pytest.mark.slow]

SEED = 18
ROUNDS = 5200

VALID = {"id": "v", "text": "Mind the gap.", "priority": "normal", "volume": 0.5, "repeat": 1}
PATHS = [
    "../x",
    "..",
    "/etc/passwd",
    "..\\x",
    "a/b",
    "C:\\x",
    "x\x00y",
    "x.wav",
    "%2e%2e",
    "~root",
    "x" * 65,
    "\u202e",
    "ding/../ding",
    "ding\n",
    " ding",
    "",
]


def _bad_value(rng: random.Random) -> object:
    return rng.choice([1, -1, 1.5, True, None, [], [1], {}, {"a": 1}, "", "x" * 3000, "\ud800"])


def _mutated_announcement(rng: random.Random) -> bytes:
    """A payload the daemon must reject, each way a publisher gets it wrong."""
    obj: dict[str, object] = dict(VALID, id=f"fz-{rng.randrange(10**9)}")
    kind = rng.randrange(14)
    if kind == 0:
        obj["text"] = rng.choice([1, 2.5, True, [], ["a"], {"t": 1}])
    elif kind == 1:
        obj["priority"] = rng.choice(["urgent", "", "NORMAL", 1, None, "emergency "])
    elif kind == 2:
        obj["volume"] = rng.choice([-0.1, 1.01, 7, "loud", [], True])
    elif kind == 3:
        obj["repeat"] = rng.choice([0, -1, 999, "2", 1.5, True, None])
    elif kind == 4:
        obj[rng.choice(["txt", "Text", "zone2", "", "x" * 100, "prio"])] = _bad_value(rng)
    elif kind == 5:
        obj.pop("text")
        obj["clip"] = rng.choice(PATHS + ["absent"])
    elif kind == 6:
        obj["clip"] = "ding"  # both text and clip
    elif kind == 7:
        obj.pop("text")  # neither
    elif kind == 8:
        obj["deadline_ms"] = rng.choice([0, -5, 600001, "soon", 1.5, True])
    elif kind == 9:
        obj["interrupt"] = rng.choice(["yes", 1, None, []])
    elif kind == 10:
        obj["zone"] = rng.choice(["group:../x", "everywhere", "group:", 5, None, "all "])
    elif kind == 11:
        obj["chime"] = rng.choice(PATHS + ["absent"])
    elif kind == 12:
        obj["voice"] = rng.choice(["nobody", "../v", 3, "", "a b"])
    else:
        obj["ttl"] = rng.choice([0, -1, "long", True])
    return json.dumps(obj).encode()


def _broken_json(rng: random.Random) -> bytes:
    good = json.dumps(dict(VALID, id=f"fj-{rng.randrange(10**9)}")).encode()
    kind = rng.randrange(6)
    if kind == 0:
        return good[: rng.randrange(1, len(good) - 1)]  # cut short (still starts with "{")
    if kind == 1:
        return b'{"x":' * rng.randrange(17, 400) + b"1"  # nested too deep
    if kind == 2:
        return good[:-1] + b', "n": 1' + b"9" * rng.randrange(40, 5000) + b"}"  # a number too long
    if kind == 3:
        at = rng.randrange(1, len(good))
        return good[:at] + rng.choice([b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80"]) + good[at:]
    if kind == 4:
        return b'{"id": "d", "text": "a", "text": "b"}'  # duplicate key
    return b"{" + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))


def _raw(port: int, data: bytes) -> bytes:
    """Send raw bytes; the first line of the answer (b"" when the server just closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            return b""
        out = b""
        while b"\r\n" not in out:
            try:
                piece = s.recv(4096)
            except OSError:
                break
            if not piece:
                break
            out += piece
        return out.split(b"\r\n", 1)[0]


def _header_abuse(rng: random.Random, cookie: str, csrf: str) -> bytes:
    body = json.dumps(VALID).encode()
    auth = f"Cookie: {cookie}\r\nX-CSRF-Token: {csrf}\r\n"
    kind = rng.randrange(9)
    if kind == 0:
        return b"GET /api/status HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * rng.randrange(17000, 60000) + b"\r\n\r\n"
    if kind == 1:
        many = b"".join(b"X-H%d: v\r\n" % i for i in range(rng.randrange(200, 2000)))
        return b"GET /api/status HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n"
    if kind == 2:  # a body longer than said: the rest is a bad next request, never an announcement
        return (f"POST /api/announce HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 3\r\n\r\n").encode() + body
    if kind == 3:
        return (f"POST /api/announce HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: -{len(body)}\r\n\r\n").encode()
    if kind == 4:
        return (
            f"POST /api/announce HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {len(body)}\r\n"
            f"Transfer-Encoding: chunked\r\n\r\n"
        ).encode() + body
    if kind == 5:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    if kind == 6:
        return rng.choice(
            [
                b"BREW /api/announce HTTP/1.1\r\n\r\n",
                b"GET /api/status HTTP/9.9\r\n\r\n",
                b"GET\r\n\r\n",
                b"GET /api/status\x00 HTTP/1.1\r\n\r\n",
                b"\r\n\r\n",
            ]
        )
    if kind == 7:  # header injection through a value
        return (
            b"POST /api/announce HTTP/1.1\r\nHost: x\r\nX-CSRF-Token: a\rb\r\n"
            + auth.encode()
            + b"Content-Length: %d\r\n\r\n" % len(body)
            + body
        )
    return (
        b"POST /api/announce HTTP/1.1\r\nHost: x\r\n"
        + b"Cookie: "
        + cookie.encode()
        + b"\r\n"
        + b"Content-Type: application/json\r\nContent-Length: 9999999999999999999\r\n\r\n"
    )


def test_fuzz_of_malformed_requests_crashes_nothing_and_plays_nothing(
    daemon_rig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "pw").write_text("right\n")
    (tmp_path / "tokens").write_text("tok-fuzz-0123456789\n")
    port = free_port()
    rig = daemon_rig(
        clips={"ding": tone(880, 0.2)},
        extra=http_extra(
            port,
            f"password_file: {tmp_path / 'pw'}\ntokens_file: {tmp_path / 'tokens'}\nrate_per_min: 100000\n"
            "max_body_bytes: 16384",
        ),
    )
    user = Client(port)
    user.wait_up()
    assert user.login("right").status == 200
    script = Client(port, token="tok-fuzz-0123456789")
    strangers = [
        Client(port),
        Client(port, token="tok-guess"),
        Client(port, cookie=user.cookie),
        Client(port, cookie="edgetts_session=forged", csrf="forged"),
    ]
    rng = random.Random(SEED)
    codes: Counter[int] = Counter()
    raw_answers: Counter[bytes] = Counter()
    for i in range(ROUNDS):
        kind = i % 10
        if kind in (0, 1):
            reply = rng.choice([user, script]).post("/api/announce", _mutated_announcement(rng))
        elif kind == 2:
            reply = rng.choice([user, script]).post(
                rng.choice(["/api/announce", "/api/tts", "/api/tts/batch", "/api/login"]), _broken_json(rng)
            )
        elif kind == 3:  # a valid announcement without the right credentials or CSRF token
            stranger = rng.choice(strangers)
            reply = stranger.post(
                "/api/announce",
                dict(VALID, id=f"fs-{i}"),
                headers=rng.choice(
                    [
                        {},
                        {"origin": "http://evil.example"},
                        {"x-csrf-token": ""},
                        {"authorization": "Bearer "},
                        {"authorization": "Basic cmlnaHQ="},
                        {"sec-fetch-site": "cross-site"},
                    ]
                ),
            )
            assert reply.status in (401, 403), reply.body
        elif kind == 4:
            name = rng.choice(PATHS + ["".join(chr(rng.randrange(32, 0x2FF)) for _ in range(rng.randrange(1, 80)))])
            reply = user.get("/api/clips/" + quote(name, safe=rng.choice(["", "/", "/.%"])))
        elif kind == 5:
            reply = rng.choice([user, script]).post(
                "/api/tts",
                rng.choice(
                    [
                        {"text": _bad_value(rng)},
                        {"text": "x", "voice": _bad_value(rng)},
                        {"text": "x", "length_scale": rng.choice([0, 11, "fast", True])},
                        {"text": "x", "nope": 1},
                        {"texts": "x"},
                    ]
                ),
            )
        elif kind == 6:
            reply = user.delete("/api/announcements/" + quote(rng.choice(PATHS + ["nope", "x" * 300]), safe=""))
        elif kind == 7:
            reply = user.post("/api/announce", b"{" + b" " * rng.randrange(16385, 40000) + b"}")
            assert reply.status == 413
        elif kind == 8:
            reply = user.post(
                "/api/login",
                rng.choice([{"password": 1}, {"pw": "right"}, [], {"password": "wrong"}]),
                headers={"origin": "http://evil.example"} if rng.random() < 0.5 else {},
            )
        else:
            raw_answers[_raw(port, _header_abuse(rng, user.cookie or "", user.csrf or ""))[:12]] += 1
            continue
        codes[reply.status] += 1
    assert sum(codes.values()) + sum(raw_answers.values()) >= 5000
    assert 500 not in codes, codes
    assert not any(b" 500" in a for a in raw_answers), raw_answers
    assert set(codes) <= {400, 401, 403, 404, 413, 429, 503}, codes
    # still serving, still announcing nothing it was not asked to
    assert user.get("/api/status").status == 200
    events = Counter(e["event"] for e in rig.probe.events)
    assert events["queued"] == events["started"] == 0, events
    assert rig.capture.pcm().size == 0
    assert rig.thread.is_alive()
    # no handler raised (uvicorn logs each exception of the app with its traceback)
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
