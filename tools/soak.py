#!/usr/bin/env python3
"""Soak: N announcements against a running daemon; lost and duplicated counted, RSS sampled.

In one run it:
  * starts a private mosquitto on a free 127.0.0.1 port,
  * runs `python -m edgetts.cli run` (= `edgetts run`) with the real default voice and a
    phrase cache in the run's temp dir, its dedup memory there too (queue.state_dir), writing
    to the ALSA `null` plugin (not paced: playback never holds the next announcement),
  * publishes a warm-up of 200 (synthesis, phrase cache, onnxruntime's arena and the
    allocator reach their working size), then ``--count`` announcements (QoS 1), at most
    ``--window`` waiting at a time, cycling over the 20 lines of tests/data/announcements.txt
    (each line is synthesized once, then it comes from the phrase cache: the soak runs through
    the daemon's intake, queue, dedup, cache and playback paths thousands of times in
    minutes); every fourth one is plain text (its id is the daemon's digest), the others
    JSON with an id of their own,
  * samples the daemon's RSS (/proc/PID/status VmRSS) after each finished announcement,
  * stops by itself: after the last one ended, or at ``--timeout`` seconds (then the
    announcements still open count as lost).

RSS growth: the mean of the last hundred samples minus that of the first hundred after the
warm-up.  Lost: published but no `finished` (or it was rejected/failed); duplicated: an id
started more than once, or more plain-text ids than plain-text payloads.  Prints JSON (``--json OUT`` too).

    .venv-test/bin/python -m tools.soak --count 2000 [--window 8] [--timeout 1800] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.daemon_rig import EventClient, rss_kb, start_broker

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "announcements.txt"
PREFIX, DEVICE = "soak", "soak"
ASOUND = "pcm.!default { type null }\n"
WARMUP = 200
"""Announcements before the soak proper (the corpus ten times, as the soak publishes them)."""


def start_daemon(tmp: Path, port: int, threads: int | None) -> subprocess.Popen[bytes]:
    (tmp / "asound.conf").write_text(ASOUND)
    config = tmp / "edgetts.yaml"
    config.write_text(
        f"device:\n  id: {DEVICE}\nmqtt:\n  port: {port}\n  topic_prefix: {PREFIX}\n"
        f"voice:\n  threads: {'null' if threads is None else threads}\n"
        f"queue:\n  max_length: 64\n  state_dir: {tmp / 'state'}\n"
        f"cache:\n  dir: {tmp / 'phrases'}\n  max_mb: 100\nkeepalive:\n  interval_s: 0\n"
        "logging:\n  level: warning\n"
    )
    env = {**os.environ, "ALSA_CONFIG_PATH": str(tmp / "asound.conf"), "ORT_DISABLE_TELEMETRY": "1"}
    with open(tmp / "daemon.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "edgetts.cli", "run", "--config", str(config)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )


@dataclass
class Tally:
    """What the events said, per id."""

    started: Counter[str] = field(default_factory=Counter)
    ended: dict[str, str] = field(default_factory=dict)
    """id -> its last final event (finished, failed, rejected, expired)."""


def payload(i: int, lines: list[str], prefix: str) -> tuple[str, str | None]:
    """(payload, its id or None for plain text) of announcement ``i``."""
    text = lines[i % len(lines)]
    if i % 4 == 3:
        return text, None
    return json.dumps({"id": f"{prefix}-{i:06d}", "text": text}), f"{prefix}-{i:06d}"


def run(
    client: EventClient, pid: int, count: int, window: int, deadline: float, prefix: str = "soak"
) -> dict[str, Any]:
    lines = [ln.strip() for ln in CORPUS.read_text().splitlines() if ln.strip()]
    tally, rss, sent, plain = Tally(), [], 0, 0
    open_n = 0  # published, not ended yet
    while time.monotonic() < deadline and (sent < count or open_n > 0):
        while sent < count and open_n < window:
            body, ident = payload(sent, lines, prefix)
            client.publish(body)
            plain += ident is None
            sent += 1
            open_n += 1
        try:
            ev = client.events.get(timeout=max(0.01, min(5.0, deadline - time.monotonic())))
        except queue.Empty:
            continue
        if ev["event"] == "started":
            tally.started[ev["id"]] += 1
        elif ev["event"] in ("finished", "failed", "rejected", "expired"):
            if ev["id"] not in tally.ended:
                open_n -= 1
            tally.ended[ev["id"]] = ev["event"]
            if ev["event"] == "finished":
                rss.append(rss_kb(pid) or 0)
    return report(tally, rss, count, sent, plain, prefix)


def report(tally: Tally, rss: list[int], count: int, sent: int, plain: int, prefix: str) -> dict[str, Any]:
    finished = [i for i, e in tally.ended.items() if e == "finished"]
    json_ids = {f"{prefix}-{i:06d}" for i in range(sent) if i % 4 != 3}
    plain_ids = [i for i in finished if i not in json_ids]
    lost = len(json_ids - set(finished)) + max(0, plain - len(plain_ids))
    duplicated = sum(n - 1 for n in tally.started.values() if n > 1) + max(0, len(plain_ids) - plain)
    head, tail = rss[:100], rss[-100:]
    return {
        "count": count,
        "published": sent,
        "plain_text": plain,
        "finished": len(finished),
        "lost": lost,
        "duplicated": duplicated,
        "not_finished": Counter(e for e in tally.ended.values() if e != "finished"),
        "rss_kb": {
            "first_100_mean": round(statistics.mean(head)) if head else None,
            "last_100_mean": round(statistics.mean(tail)) if tail else None,
            "growth_kb": round(statistics.mean(tail) - statistics.mean(head)) if head else None,
            "max": max(rss) if rss else None,
            "samples": len(rss),
            "by_hundred": [round(statistics.mean(rss[i : i + 100])) for i in range(0, len(rss), 100)],
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=2000, help="announcements to publish")
    ap.add_argument("--window", type=int, default=8, help="announcements waiting at most")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds the soak may take at most")
    ap.add_argument("--threads", type=int, default=None, help="inference threads (default: the daemon's)")
    ap.add_argument("--json", type=Path, default=None, help="write the result here too")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="edgetts-soak-") as d:
        tmp = Path(d)
        broker, port = start_broker(tmp, "max_inflight_messages 100\n")
        daemon = start_daemon(tmp, port, args.threads)
        client = None
        try:
            client = EventClient(port, PREFIX, DEVICE, "soak")
            client.online.get(timeout=180)
            t0 = time.monotonic()
            # A warm-up first: every line synthesized and in the phrase cache, onnxruntime's arena
            # and the allocator at their working size (the first hundreds of announcements add
            # ~8 MB in steps, then RSS stays flat); the soak looks for leaks after that.
            warm = run(client, daemon.pid, WARMUP, args.window, t0 + args.timeout, prefix="warm")
            result = run(client, daemon.pid, args.count, args.window, t0 + args.timeout)
            result["warmup"] = {k: warm[k] for k in ("published", "finished", "lost", "duplicated")}
            result["warmup"]["rss_kb_first_100_mean"] = warm["rss_kb"]["first_100_mean"]
            result["warmup"]["rss_kb_last_100_mean"] = warm["rss_kb"]["last_100_mean"]
            result["duration_s"] = round(time.monotonic() - t0, 1)
            result["daemon_alive"] = daemon.poll() is None
        finally:
            if client is not None:
                client.close()
            daemon.terminate()
            try:
                daemon.wait(20)
            except subprocess.TimeoutExpired:
                daemon.kill()
            broker.terminate()
            broker.wait(10)
        result["daemon_exit"] = daemon.returncode
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n")
    return 0 if result["lost"] == 0 and result["duplicated"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
