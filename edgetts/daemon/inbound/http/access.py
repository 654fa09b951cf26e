"""Who may use the console: the password, bearer tokens, sessions, CSRF, back-off and rate limits.

Plain Python, no HTTP framework: the gate (edgetts.daemon.inbound.http.gate) asks these
questions of every request.  Secrets are compared in constant time and never
logged or shown.  The state here is the HTTP thread's own (sessions, counters),
not the daemon's: the loop never sees it.
"""

from __future__ import annotations

import hmac
import os
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from edgetts.config import HttpSettings
from edgetts.daemon.inbound.credentials import CredentialError, secret_path
from edgetts.errors import EdgeTTSError

MAX_SESSIONS = 256
"""Sessions kept at once; the oldest goes first (a login flood cannot grow memory)."""

BACKOFF_MIN_S = 1.0
BACKOFF_MAX_S = 60.0
"""A failed login makes its address wait 1 s, doubled per further failure up to 60 s."""

MAX_TRACKED = 4096
"""Client addresses whose rate and back-off are remembered (oldest forgotten first)."""


class AccessSetupError(EdgeTTSError):
    """The configured credentials cannot be read: the console does not start (it never falls open)."""


@dataclass(frozen=True)
class Credentials:
    password: str | None
    tokens: frozenset[str]

    @property
    def open(self) -> bool:
        """No credentials: loopback only (the config refuses anything else), no login."""
        return self.password is None and not self.tokens


def _read_lines(path: Path, what: str) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AccessSetupError(f"cannot read the {what} from {path}: {exc}") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def load_credentials(settings: HttpSettings, environ: Mapping[str, str] | None = None) -> Credentials:
    """The password (file or systemd credential) and tokens; AccessSetupError when one is unreadable or empty."""
    env = os.environ if environ is None else environ
    try:
        path = secret_path(settings.password_file, settings.password_credential, "http", env)
    except CredentialError as exc:
        raise AccessSetupError(str(exc)) from None
    password = None
    if path is not None:
        lines = _read_lines(path, "console password")
        if not lines:
            raise AccessSetupError(f"the console password file {path} is empty")
        password = lines[0]
    tokens: frozenset[str] = frozenset()
    if settings.tokens_file is not None:
        tokens = frozenset(_read_lines(Path(settings.tokens_file), "bearer tokens"))
        if not tokens:
            raise AccessSetupError(f"the tokens file {settings.tokens_file} has no token")
    return Credentials(password, tokens)


@dataclass
class Session:
    csrf: str
    expires: float


@dataclass
class _Failures:
    count: int = 0
    until: float = 0.0


@dataclass
class Access:
    """Sessions and the failed-login back-off of one console."""

    credentials: Credentials
    ttl_s: float
    clock: Callable[[], float] = time.monotonic
    _sessions: OrderedDict[str, Session] = field(default_factory=OrderedDict)
    _failures: OrderedDict[str, _Failures] = field(default_factory=OrderedDict)

    def new_session(self) -> tuple[str, Session]:
        sid = secrets.token_urlsafe(32)
        session = Session(csrf=secrets.token_urlsafe(32), expires=self.clock() + self.ttl_s)
        self._sessions[sid] = session
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return sid, session

    def session(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        session = self._sessions.get(sid)
        if session is None:
            return None
        if session.expires <= self.clock():
            del self._sessions[sid]
            return None
        return session

    def end(self, sid: str | None) -> None:
        if sid:
            self._sessions.pop(sid, None)

    def wait_s(self, client: str) -> float:
        """Seconds ``client`` must still wait before it may try a password again (0 = may)."""
        failures = self._failures.get(client)
        return 0.0 if failures is None else max(0.0, failures.until - self.clock())

    def login(self, client: str, password: str) -> tuple[str, Session] | None:
        """A new session when ``password`` is right; None (and a longer back-off) when not.

        The caller checks :meth:`wait_s` first: a try during the back-off is refused unread."""
        expected = self.credentials.password
        if expected is not None and hmac.compare_digest(password.encode(), expected.encode()):
            self._failures.pop(client, None)
            return self.new_session()
        failures = self._failures.pop(client, None) or _Failures()
        failures.count += 1
        failures.until = self.clock() + min(BACKOFF_MAX_S, BACKOFF_MIN_S * 2 ** (failures.count - 1))
        self._failures[client] = failures
        while len(self._failures) > MAX_TRACKED:
            self._failures.popitem(last=False)
        return None

    def token_ok(self, token: str) -> bool:
        given = token.encode()
        # every token compared, so the time taken does not tell which one was close
        hits = [hmac.compare_digest(given, t.encode()) for t in self.credentials.tokens]
        return any(hits)


def csrf_ok(session: Session, header: str | None) -> bool:
    return header is not None and hmac.compare_digest(header.encode(), session.csrf.encode())


@dataclass
class RateLimit:
    """At most ``per_min`` requests per client address in any 60 s."""

    per_min: int
    clock: Callable[[], float] = time.monotonic
    _seen: OrderedDict[str, deque[float]] = field(default_factory=OrderedDict)

    def hit(self, client: str) -> float:
        """Count one request; 0 when it may go on, else the seconds until it could."""
        now = self.clock()
        times = self._seen.pop(client, None) or deque()
        self._seen[client] = times
        while len(self._seen) > MAX_TRACKED:
            self._seen.popitem(last=False)
        while times and times[0] <= now - 60.0:
            times.popleft()
        if len(times) >= self.per_min:
            return max(0.01, times[0] + 60.0 - now)
        times.append(now)
        return 0.0


__all__ = ["Access", "AccessSetupError", "Credentials", "RateLimit", "Session", "csrf_ok", "load_credentials"]
