#!/usr/bin/env python3
"""Stress the stop: the real daemon started N times, SIGTERM at varied moments, slow stops counted.

Each run starts `python -m edgetts.cli run --config X` (= `edgetts run`) with the real default
voice, against a private mosquitto (tools.daemon_rig), writing to the ALSA `file` plugin paced to
the wall clock (``audio.realtime_pacing``, as the tests' daemons do), with the HTTP console
(uvicorn) and the Wyoming server on, so every thread that could hold the exit back is there:
paho's network thread, uvicorn's, the Wyoming server's, the audio thread in PortAudio/ALSA,
onnxruntime's pool, the synthesis and reload threads, the logging handlers.  It waits for the
`online` status, then brings the daemon to one of these moments (in turn) and sends SIGTERM:

* ``idle``: 0-1 s after `online` (the keepalive's inference may be running);
* ``synthesis``: 0-0.4 s after publishing a long announcement (text never heard before);
* ``playback``: 0-1.5 s after its `started` (paced playback: the audio thread is writing);
* ``reload``: 0-1 s after a SIGHUP with a changed voice setting (the reload thread is loading
  a second voice in onnxruntime beside the running one);
* ``http``: while an `/api/tts` WAV is being streamed to a client that reads slowly.

The stop is timed from SIGTERM to the process's exit.  A stop is **over the limit** when it
took more than ``--limit`` seconds (default: the daemon's own bound, edgetts.daemon.stop's
STOP_LIMIT_S) or ended with a status other than 0 (the daemon's bound forces a hung stop out
with status 1 after printing every thread's stack: "Timeout (0:00:10)!").  A daemon still there
``--limit`` + 5 s after SIGTERM gets SIGABRT (PYTHONFAULTHANDLER is set: it prints every thread's
stack), then SIGKILL.  The log's end of every stop over the limit is printed (with those stacks).

    .venv-test/bin/python -m tools.stress_stop [--runs 100] [--budget 600] [--limit 10] [--json OUT]

Runs stop being started once ``--budget`` seconds have passed; prints a JSON summary (per moment:
runs, over the limit, the stop's median/max seconds); exit status 1 if any stop was over the limit.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from edgetts.daemon.stop import STOP_LIMIT_S

from tools.daemon_rig import EventClient, free_port, start_broker

ROOT = Path(__file__).resolve().parents[1]
MOMENTS = ("idle", "synthesis", "playback", "reload", "http")
PREFIX = "stress"
TOKEN = "stress-stop-token"
ASOUND = """\
pcm.!default {
    type file
    slave.pcm "null"
    file {
        @func getenv
        vars [ ALSA_CAPTURE_FILE ]
        default "/tmp/edgetts-stress-capture.raw"
    }
    format "raw"
    truncate true
    perm 0644
}
pcm.null {
    type null
}
"""
LONG = (
    "Run {n}: the next train to arrive at platform {p} is the 9:42 service to Edinburgh Waverley, "
    "calling at York, Darlington, Durham and Newcastle. Please mind the gap between the train and "
    "the platform, and keep your belongings with you at all times. Coach C is closed today."
)


@dataclass
class Stop:
    run: int
    moment: str
    delay_s: float
    """Seconds from the moment's event to SIGTERM."""
    stop_s: float
    """Seconds from SIGTERM to the process's exit (limit + 5 + the SIGABRT's wait when it did not end)."""
    status: int | None
    over: bool
    note: str = ""


def _config(tmp: Path, run: int, port: int, http_port: int, wyoming_port: int, noise: float) -> str:
    return (
        f"device:\n  id: stress-{run}\n"
        f"mqtt:\n  port: {port}\n  topic_prefix: {PREFIX}\n  reconnect_min_s: 0.2\n  reconnect_max_s: 1\n"
        f"  journal_dir: {tmp / 'journal'}\n"
        "audio:\n  close_idle_s: 600\n  realtime_pacing: true\n"
        f"voice:\n  threads: 1\n  noise_scale: {noise}\n  noise_w: 0\n"
        f"queue:\n  state_dir: {tmp / 'state'}\n"
        f"cache:\n  dir: {tmp / 'phrases'}\n"
        # The keepalive every second: an idle daemon is often mid-inference.
        "keepalive:\n  interval_s: 1\n"
        f"http:\n  enabled: true\n  listen: 127.0.0.1:{http_port}\n  tokens_file: {tmp / 'tokens'}\n"
        f"wyoming:\n  enabled: true\n  uri: tcp://127.0.0.1:{wyoming_port}\n"
        "logging:\n  level: debug\n"
    )


def _wait_event(client: EventClient, ident: str, event: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ev = client.events.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            return False
        if ev.get("id") == ident and ev.get("event") == event:
            return True
    return False


def _slow_tts_reader(http_port: int, text: str, got_bytes: threading.Event) -> None:
    """POST /api/tts and read its WAV a little at a time (a slow client), until the daemon goes."""
    body = json.dumps({"text": text}).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{http_port}/api/tts",
        body,
        {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            while resp.read(4096):
                got_bytes.set()
                time.sleep(0.05)
    except OSError:
        pass


def _bring_to(
    moment: str,
    run: int,
    client: EventClient,
    proc: subprocess.Popen[bytes],
    rewrite: Any,
    http_port: int,
    rng: random.Random,
) -> tuple[float, str]:
    """Bring the daemon to ``moment`` and wait the random delay; (that delay, a note if it went wrong)."""
    ident, text = f"r{run}", LONG.format(n=run, p=run % 9 + 1)
    note = ""
    if moment == "idle":
        delay = rng.uniform(0, 1.0)
    elif moment == "synthesis":
        client.publish(json.dumps({"id": ident, "text": text}))
        delay = rng.uniform(0, 0.4)
    elif moment == "playback":
        client.publish(json.dumps({"id": ident, "text": text}))
        if not _wait_event(client, ident, "started", 60):
            note = "never started"
        delay = rng.uniform(0, 1.5)
    elif moment == "reload":
        rewrite(0.001)  # another noise_scale: the reload loads a second voice
        proc.send_signal(signal.SIGHUP)
        delay = rng.uniform(0, 1.0)
    else:  # http
        got = threading.Event()
        threading.Thread(target=_slow_tts_reader, args=(http_port, text, got), daemon=True).start()
        if not got.wait(30):
            note = "no /api/tts bytes"
        delay = rng.uniform(0, 0.5)
    time.sleep(delay)
    return delay, note


def _terminate(proc: subprocess.Popen[bytes], limit: float) -> tuple[float, int | None, str]:
    """SIGTERM; (seconds to the exit, its status or None, a note): SIGABRT, then SIGKILL, if it hangs."""
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        status = proc.wait(limit + 5)
        return time.monotonic() - start, status, ""
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER: every thread's stack into the log
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        return time.monotonic() - start, None, "still running: SIGABRT"


def one_run(tmp: Path, run: int, moment: str, port: int, limit: float, rng: random.Random) -> Stop:
    http_port, wyoming_port = free_port(), free_port()
    config = tmp / f"run-{run}.yaml"

    def rewrite(noise: float) -> None:
        config.write_text(_config(tmp, run, port, http_port, wyoming_port, noise))

    rewrite(0)
    env = {
        **os.environ,
        "ALSA_CONFIG_PATH": str(tmp / "asound.conf"),
        "ALSA_CAPTURE_FILE": str(tmp / "capture.raw"),
        "ORT_DISABLE_TELEMETRY": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONFAULTHANDLER": "1",
    }
    env.pop("NOTIFY_SOCKET", None)
    env.pop("JOURNAL_STREAM", None)
    client = EventClient(port, PREFIX, f"stress-{run}", f"stress-{run}")
    with open(tmp / f"run-{run}.log", "wb") as logf:
        proc = subprocess.Popen(
            [sys.executable, "-m", "edgetts.cli", "run", "--config", str(config)],
            cwd=ROOT,
            env=env,
            stdout=logf,
            stderr=subprocess.STDOUT,
        )
    delay, notes = 0.0, []
    try:
        try:
            client.online.get(timeout=120)
            delay, note = _bring_to(moment, run, client, proc, rewrite, http_port, rng)
        except queue.Empty:
            note = "never online"
        notes.append(note)
        took, status, note = _terminate(proc, limit)
        notes.append(note)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        client.close()
    over = took > limit or status != 0
    return Stop(run, moment, round(delay, 3), round(took, 3), status, over, "; ".join(n for n in notes if n))


def _log_end(path: Path, lines: int = 150) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _summary(stops: list[Stop], moments: list[str], limit: float, wall_s: float) -> dict[str, Any]:
    """Runs and stops over the limit, in all and per moment (the stop's median and max seconds)."""
    summary: dict[str, Any] = {
        "runs": len(stops),
        "over_limit": sum(s.over for s in stops),
        "limit_s": limit,
        "wall_s": round(wall_s, 1),
        "moments": {},
    }
    for moment in moments:
        times = [s.stop_s for s in stops if s.moment == moment]
        if times:
            summary["moments"][moment] = {
                "runs": len(times),
                "over_limit": sum(s.over for s in stops if s.moment == moment),
                "stop_median_s": round(statistics.median(times), 3),
                "stop_max_s": round(max(times), 3),
            }
    notes = [asdict(s) for s in stops if s.note]
    if notes:
        summary["notes"] = notes
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--budget", type=float, default=600.0, help="seconds; no run starts after (default 600)")
    parser.add_argument(
        "--limit", type=float, default=STOP_LIMIT_S, help="seconds a stop may take (default %(default)s)"
    )
    parser.add_argument("--moments", nargs="+", choices=MOMENTS, default=list(MOMENTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the summary and every stop here")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    stops: list[Stop] = []
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="edgetts-stress-stop-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "asound.conf").write_text(ASOUND)
        (tmp / "tokens").write_text(TOKEN + "\n")
        (tmp / "tokens").chmod(0o600)
        broker, port = start_broker(tmp)
        try:
            for run in range(args.runs):
                if time.monotonic() - began > args.budget:
                    break
                moment = args.moments[run % len(args.moments)]
                stop = one_run(tmp, run, moment, port, args.limit, rng)
                stops.append(stop)
                mark = "OVER" if stop.over else "ok"
                print(
                    f"{run:4d} {moment:9s} +{stop.delay_s:5.2f} s -> stop {stop.stop_s:6.2f} s, "
                    f"status {stop.status} {mark} {stop.note}",
                    flush=True,
                )
                log = tmp / f"run-{run}.log"
                if stop.over:
                    print(f"---- run {run}'s log ends:\n{_log_end(log)}\n----", flush=True)
                if stop.over or stop.note:
                    keep = Path(tempfile.gettempdir()) / f"edgetts-stress-stop-run-{run}.log"
                    keep.write_bytes(log.read_bytes())
                    print(f"(kept as {keep})", flush=True)
                log.unlink(missing_ok=True)
                for capture in tmp.glob("capture.raw*"):
                    capture.unlink()
        finally:
            broker.terminate()
            broker.wait(10)
    summary = _summary(stops, args.moments, args.limit, time.monotonic() - began)
    print(json.dumps(summary, indent=1))
    if args.json is not None:
        args.json.write_text(json.dumps({**summary, "stops": [asdict(s) for s in stops]}, indent=1) + "\n")
    return 1 if summary["over_limit"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
