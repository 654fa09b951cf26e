#!/usr/bin/env python3
"""Hostile payloads against a running daemon (issue 13): crashes, outcomes, spoken payloads, RSS.

In one run it:
  * starts a private mosquitto on a free 127.0.0.1 port,
  * runs `python -m edgetts.cli run` (= `edgetts run`) as a subprocess with the real default
    voice (or --voice), writing to the ALSA file plugin (null sink, not paced), its phrase
    cache and intake journal in the run's temp dir,
  * publishes --count payloads from tools/fuzz_payloads.py (seeded: --seed), one at a time,
    QoS 1, and waits for that payload's outcome: its one `rejected` or `queued` event (a
    queued one also to its end, so the queue is empty for the next);
  * counts crashes (the daemon exited; it is restarted), payloads without exactly one
    outcome, `reject` cases that were queued, `speak` cases that were not, and every
    phrase the voice spoke (read back from the phrase cache) that is not clean text;
  * samples the daemon's RSS (VmRSS) every --rss-every payloads.
It stops by itself after --count payloads or --max-seconds.  Exit status 0 only when there
was no crash and no violation.

    .venv-test/bin/python -m tools.fuzz_mqtt --count 10000 [--seed 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.bench_daemon import ASOUND
from tools.daemon_rig import EventClient, rss_kb, start_broker
from tools.fuzz_payloads import Case, cases, clean_spoken

ROOT = Path(__file__).resolve().parents[1]
PREFIX, DEVICE = "fuzz", "fuzz"
OUTCOMES = ("rejected", "queued")
ENDS = ("finished", "failed", "expired", "rejected")


@dataclass
class Tally:
    """What the run found."""

    sent: int = 0
    crashes: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    by_category: dict[str, Counter[str]] = field(default_factory=dict)
    reasons: Counter[str] = field(default_factory=Counter)
    violations: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    rss_kb: list[int] = field(default_factory=list)

    def violation(self, kind: str, case: Case, detail: str = "") -> None:
        self.violations[kind] += 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < 5:
            shown.append(f"{case.category}: {case.payload[:120]!r} {detail}".strip())


class Daemon:
    """The daemon subprocess: started, watched, restarted after a crash."""

    def __init__(self, tmp: Path, port: int, voice: str) -> None:
        (tmp / "asound.conf").write_text(ASOUND % (tmp / "capture.raw"))
        self.config = tmp / "edgetts.yaml"
        self.config.write_text(
            f"device:\n  id: {DEVICE}\nmqtt:\n  port: {port}\n  topic_prefix: {PREFIX}\n"
            f"  reconnect_min_s: 0.2\n  reconnect_max_s: 1\n  journal_dir: {tmp / 'journal'}\n"
            f"voice:\n  model: {voice}\n  threads: 1\n  noise_scale: 0\n  noise_w: 0\n"
            "queue:\n  dedup_window_s: 600\nkeepalive:\n  interval_s: 0\nlogging:\n  level: warning\n"
            f"cache:\n  dir: {tmp / 'phrases'}\n  max_mb: 100\n"
        )
        self.env = {
            **os.environ,
            "ALSA_CONFIG_PATH": str(tmp / "asound.conf"),
            "ORT_DISABLE_TELEMETRY": "1",
            "PYTHONPATH": str(ROOT),
        }
        self.log = tmp / "daemon.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "edgetts.cli", "run", "--config", str(self.config)],
                cwd=ROOT,
                env=self.env,
                stdout=logf,
                stderr=subprocess.STDOUT,
            )
        self.starts += 1

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def rss_kb(self) -> int | None:
        if not self.alive():
            return None
        assert self.proc is not None
        return rss_kb(self.proc.pid)

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


def _wait_online(client: EventClient, daemon: Daemon, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.online.get(timeout=0.5)
            return
        except queue.Empty:
            if not daemon.alive():
                raise SystemExit(f"fuzz: the daemon exited at start: {daemon.log.read_text()[-2000:]}") from None
    raise SystemExit("fuzz: the daemon did not come online")


def _next_event(client: EventClient, daemon: Daemon, timeout: float) -> dict[str, Any] | None:
    """The next event; None when none came within ``timeout`` or the daemon died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return client.events.get(timeout=0.2)
        except queue.Empty:
            if not daemon.alive():
                return None
    return None


def run_case(case: Case, client: EventClient, daemon: Daemon, tally: Tally) -> None:
    """Publish one case and account for its outcome (and, when queued, wait for its end)."""
    client.publish(case.payload)
    first = _next_event(client, daemon, 15.0)
    if first is None or first["event"] not in OUTCOMES:
        outcome = "none" if first is None else f"unexpected:{first['event']}"
        if not daemon.alive():
            outcome = "crash"
        _count(tally, case, outcome)
        if first is not None:
            tally.violation("not_one_outcome", case, json.dumps(first))
        return
    _count(tally, case, first["event"])
    if first["event"] == "rejected":
        tally.reasons[_reason_class(first.get("reason", ""))] += 1
        if case.expect == "speak":
            tally.violation("speak_case_rejected", case, first.get("reason", ""))
        return
    if case.expect == "reject":
        tally.violation("reject_case_queued", case)
    _wait_end(first["id"], client, daemon, tally, case)


def _wait_end(ident: str, client: EventClient, daemon: Daemon, tally: Tally, case: Case) -> None:
    while True:
        ev = _next_event(client, daemon, 60.0)
        if ev is None:
            tally.violation("queued_without_end", case)
            return
        if ev["id"] != ident or ev["event"] in ("queued",):
            tally.violation("not_one_outcome", case, json.dumps(ev))
            continue
        if ev["event"] in ENDS:
            if ev["event"] != "finished" and case.expect == "speak":
                tally.violation("speak_case_not_finished", case, json.dumps(ev))
            return


def _count(tally: Tally, case: Case, outcome: str) -> None:
    tally.sent += 1
    tally.outcomes[outcome] += 1
    tally.by_category.setdefault(case.category, Counter())[outcome] += 1


def _reason_class(reason: str) -> str:
    """A rejected reason without its particulars (ids, numbers, names), for the summary."""
    head = reason.split(":")[0].split("(")[0]
    return " ".join(w for w in head.split() if not any(c.isdigit() for c in w) and "'" not in w)[:60]


def spoken_texts(phrases: Path) -> list[str]:
    """Every text the daemon synthesized in full, from the phrase cache entries' headers."""
    out = []
    for entry in sorted(phrases.glob("*.etpc")):
        blob = entry.read_bytes()  # b"ETPC1\n" | u32 header length | JSON header | samples
        n = int.from_bytes(blob[6:10], "little")
        out.append(str(json.loads(blob[10 : 10 + n]).get("text", "")))
    return out


def check_spoken(case_list: list[Case], phrases: Path, tally: Tally) -> list[str]:
    texts = spoken_texts(phrases)
    expected = {" ".join(c.text.split()) for c in case_list if c.expect == "speak" and c.text}
    said = {" ".join(t.split()) for t in texts}
    for text in texts:
        if not clean_spoken(text):
            tally.violation("unclean_spoken", Case("spoken", text.encode("utf-8", "backslashreplace"), "any"))
    for text in sorted(expected - said):
        tally.violation("speak_text_never_spoken", Case("expected", text.encode(), "speak"))
    return texts


def fuzz(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    broker, port = start_broker(tmp)
    daemon = Daemon(tmp, port, args.voice)
    tally = Tally()
    client = EventClient(port, PREFIX, DEVICE, "fuzz")
    case_list = cases(args.count, args.seed)
    started = time.monotonic()
    try:
        daemon.start()
        _wait_online(client, daemon, 180)
        for i, case in enumerate(case_list):
            if time.monotonic() - started > args.max_seconds:
                break
            run_case(case, client, daemon, tally)
            if not daemon.alive():
                tally.crashes += 1
                tally.violation("crash", case, daemon.log.read_text(errors="replace")[-300:])
                daemon.start()
                _wait_online(client, daemon, 180)
            if i % args.rss_every == 0 and (rss := daemon.rss_kb()) is not None:
                tally.rss_kb.append(rss)
        if (rss := daemon.rss_kb()) is not None:
            tally.rss_kb.append(rss)
        rc = daemon.stop()
    finally:
        client.close()
        daemon.stop()
        broker.terminate()
        broker.wait(10)
    spoken = check_spoken(case_list[: tally.sent], tmp / "phrases", tally)
    log = daemon.log.read_text(errors="replace")
    return _report(args, tally, time.monotonic() - started, rc, daemon.starts, spoken, log)


def _report(
    args: argparse.Namespace, tally: Tally, elapsed: float, rc: int | None, starts: int, spoken: list[str], log: str
) -> dict[str, Any]:
    rss = tally.rss_kb
    return {
        "count": args.count,
        "sent": tally.sent,
        "seed": args.seed,
        "voice": args.voice,
        "elapsed_s": round(elapsed, 1),
        "crashes": tally.crashes,
        "daemon_starts": starts,
        "exit_status": rc,
        "tracebacks_in_log": log.count("Traceback"),
        "outcomes": dict(tally.outcomes),
        "by_category": {k: dict(v) for k, v in sorted(tally.by_category.items())},
        "violations": dict(tally.violations),
        "examples": tally.examples,
        "rejected_reasons": dict(tally.reasons.most_common(40)),
        "spoken_phrases": len(spoken),
        "rss_mb": {
            "first": round(rss[0] / 1024, 1),
            "max": round(max(rss) / 1024, 1),
            "last": round(rss[-1] / 1024, 1),
            "samples": len(rss),
        }
        if rss
        else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10000, help="payloads to send (default 10000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--voice", default="default", help="voice.model of the daemon (default: the real voice)")
    parser.add_argument("--max-seconds", type=float, default=3600.0, help="stop after this long (default 3600)")
    parser.add_argument("--rss-every", type=int, default=250, help="payloads between RSS samples")
    parser.add_argument("--json", help="write the report here too")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (daemon log, capture)")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="edgetts-fuzz-"))
    report = fuzz(args, tmp)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    if args.keep:
        print(f"kept {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    ok = report["crashes"] == 0 and not report["violations"] and report["sent"] == args.count
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
