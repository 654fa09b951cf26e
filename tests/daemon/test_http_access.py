"""The console's access rules on their own (edgetts.daemon.inbound.http.access): credentials from a file or a
systemd credential, the failed-login back-off, sessions, CSRF and the rate limit, on a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgetts.config import HttpSettings

pytest.importorskip("starlette")

from edgetts.daemon.inbound.http.access import (  # noqa: E402
    BACKOFF_MAX_S,
    MAX_SESSIONS,
    Access,
    AccessSetupError,
    Credentials,
    RateLimit,
    csrf_ok,
    load_credentials,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_credentials_from_a_file_a_systemd_credential_and_tokens(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("s3cret\nignored\n")
    (tmp_path / "tokens").write_text("# comment\n\n tok-a \ntok-b\n")
    got = load_credentials(HttpSettings(password_file=str(tmp_path / "pw"), tokens_file=str(tmp_path / "tokens")))
    assert got == Credentials("s3cret", frozenset({"tok-a", "tok-b"})) and not got.open
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "console").write_text("from-systemd\n")
    settings = HttpSettings(password_credential="console")
    assert load_credentials(settings, {"CREDENTIALS_DIRECTORY": str(creds)}).password == "from-systemd"
    with pytest.raises(AccessSetupError, match="CREDENTIALS_DIRECTORY"):
        load_credentials(settings, {})
    (tmp_path / "empty").write_text("# nothing\n")
    for bad in (
        HttpSettings(password_file=str(tmp_path / "empty")),
        HttpSettings(tokens_file=str(tmp_path / "empty")),
        HttpSettings(password_file=str(tmp_path / "absent")),
    ):
        with pytest.raises(AccessSetupError):
            load_credentials(bad)
    assert load_credentials(HttpSettings()).open


def test_failed_logins_back_off_doubling_and_a_success_resets() -> None:
    clock = Clock()
    access = Access(Credentials("right", frozenset()), ttl_s=60, clock=clock)
    waits = []
    for _ in range(8):
        assert access.wait_s("1.2.3.4") == 0
        assert access.login("1.2.3.4", "wrong") is None
        waits.append(access.wait_s("1.2.3.4"))
        clock.now += waits[-1]
    assert waits == [1, 2, 4, 8, 16, 32, BACKOFF_MAX_S, BACKOFF_MAX_S]
    assert access.wait_s("5.6.7.8") == 0  # per address
    sid, session = access.login("1.2.3.4", "right") or (None, None)
    assert sid and access.session(sid) is session and access.wait_s("1.2.3.4") == 0
    assert access.login("1.2.3.4", "wrong") is None and access.wait_s("1.2.3.4") == 1  # counting from 1 again
    # sessions expire, end, and are bounded
    clock.now += 61
    assert access.session(sid) is None
    first, _ = access.new_session()
    access.end(first)
    assert access.session(first) is None
    sids = [access.new_session()[0] for _ in range(MAX_SESSIONS + 5)]
    assert access.session(sids[0]) is None and access.session(sids[-1]) is not None
    assert csrf_ok(access.session(sids[-1]), access.session(sids[-1]).csrf)
    assert not csrf_ok(access.session(sids[-1]), None) and not csrf_ok(access.session(sids[-1]), "x")
    assert access.token_ok("t") is False


def test_rate_limit_is_a_sliding_minute_per_address() -> None:
    clock = Clock()
    rate = RateLimit(3, clock=clock)
    assert [rate.hit("a") for _ in range(3)] == [0, 0, 0]
    assert rate.hit("a") == pytest.approx(60) and rate.hit("b") == 0
    clock.now += 30
    assert rate.hit("a") == pytest.approx(30)
    clock.now += 30.01
    assert rate.hit("a") == 0
