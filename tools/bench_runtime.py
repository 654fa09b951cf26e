#!/usr/bin/env python3
"""Edge runtime benchmark (issue 5), one run, side by side.

    python -m tools.bench_runtime [--rounds N] [--idle-s S] [--interval-s S] [--quick] [--json OUT]

1. ``hog``: p50/p95 time to first audio over the announcement corpus while a
   CPU hog (a busy-looping child process) runs on the other core(s):
   * ``unpinned, threads=all`` - today's default: one intra-op thread per core,
     no pinning, so one thread shares a core with the hog;
   * ``unpinned, threads=N`` - the pinned thread count, not pinned (isolates
     what pinning adds beyond the thread count);
   * ``pinned`` - ``cpu.inference_cores: auto`` with ``cpu.audio_core`` = the hog's
     core: :func:`edgetts.runtime.topology.resolve_cores` gives the other cores,
     :func:`edgetts.runtime.topology.default_threads` the count, and the synthesis
     thread is pinned with :func:`edgetts.runtime.affinity.pin_current_thread`.
   On this 2-core VM: hog on CPU 0, inference on CPU 1, 1 thread.
   With one thread onnxruntime makes no workers, so pinning the calling thread
   is all there is (``load_voice`` builds the session; the workers' pinning for
   threads > 1 is verified in tests/runtime/test_affinity.py).
2. ``idle``: first-audio latency after idleness, keepalive off vs on: a
   real ``--idle-s`` idle period each way (one sample each), and, repeated,
   what other work does to an idle daemon's caches: another process streams
   256 MB for 2 s (CPU caches and TLB go cold), then the request comes, with
   or without a keepalive run in between.  Reclaim of our pages under memory
   pressure could not be simulated here: ``drop_caches`` leaves mapped pages
   alone and ``madvise(MADV_PAGEOUT)`` skips pages shared with another process
   (other users of the same venv), so it reclaims < 1 MB (reported).
3. ``keepalive``: CPU seconds per keepalive run (process CPU, and the calling
   thread's alone for comparison) and per idle hour at ``--interval-s``.
4. ``memory``: plain session vs our locked, zero-copy weights vs
   ``mlockall(MCL_CURRENT)``: load time, inference time, VmLck, RssAnon,
   RssFile (each in a fresh child process).

The voice is the real default voice through ``edgetts.voice.catalog.load_voice`` and
its ``synthesize()`` (noise 0, so every run does the same work).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from edgetts.daemon.pacing.keepalive import KEEPALIVE_TEXT, Keepalive  # noqa: E402
from edgetts.engine import SynthesisConfig  # noqa: E402
from edgetts.runtime.affinity import pin_current_thread  # noqa: E402
from edgetts.runtime.topology import default_threads, detect, resolve_cores  # noqa: E402

from tools.benchstats import percentile  # noqa: E402
from tools.results import default_path, write_result  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "announcements.txt"
NOISELESS = SynthesisConfig(noise_scale=0.0, noise_w=0.0)
MADV_PAGEOUT = 21


def first_audio(voice: Any, text: str) -> float:
    t0 = time.perf_counter()
    chunks = iter(voice.synthesize(text, NOISELESS))
    next(chunks)
    elapsed = time.perf_counter() - t0
    for _ in chunks:  # finish the announcement like the daemon would
        pass
    return elapsed


def on_thread(fn: Any, *args: Any) -> Any:
    """Run on a fresh thread (as the daemon's synthesis thread), so pinning stays there."""
    box: list[Any] = []
    t = threading.Thread(target=lambda: box.append(fn(*args)))
    t.start()
    t.join()
    return box[0]


# ---------------------------------------------------------------- 1. hog


def _hog(core: int) -> subprocess.Popen[bytes]:
    code = f"import os; os.sched_setaffinity(0, {{{core}}})\nwhile True: pass\n"
    return subprocess.Popen([sys.executable, "-c", code])


def bench_hog(lines: list[str], rounds: int) -> dict[str, Any]:
    from edgetts.voice.catalog import load_voice

    topo = detect()
    hog_core = topo.cpus[0]
    cores = resolve_cores("auto", topo, audio_core=hog_core)
    threads = default_threads(cores)
    configs = [
        ("unpinned, threads=all", len(topo.cpus), None),
        (f"unpinned, threads={threads}", threads, None),
        (f"pinned to CPU {','.join(map(str, cores))}, threads={threads}", threads, cores),
    ]
    voices = {name: load_voice("default", threads=t) for name, t, _ in configs}
    samples: dict[str, list[float]] = {name: [] for name, _, _ in configs}

    def run(name: str, pin: tuple[int, ...] | None) -> list[float]:
        if pin is not None:
            pin_current_thread(pin)
        voice = voices[name]
        first_audio(voice, lines[0])  # warm
        return [first_audio(voice, line) for line in lines]

    hog = _hog(hog_core)
    try:
        time.sleep(0.5)
        for _ in range(rounds):  # interleave configurations: noise hits all alike
            for name, _t, pin in configs:
                samples[name] += on_thread(run, name, pin)
    finally:
        hog.kill()
        hog.wait()
    return {
        "hog_core": hog_core,
        "inference_cores": list(cores),
        "rows": {
            name: {"n": len(v), "p50_s": statistics.median(v), "p95_s": percentile(v, 0.95), "max_s": max(v)}
            for name, v in samples.items()
        },
    }


# ---------------------------------------------------------------- 2/3. idle


def pageout_file_mappings() -> int:
    """madvise(MADV_PAGEOUT) every file-backed mapping of this process; bytes advised."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    total = 0
    with open("/proc/self/maps") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if libc.madvise(lo, hi - lo, MADV_PAGEOUT) == 0:
                total += hi - lo
    return total


def thrash(seconds: float, mb: int = 256) -> None:
    """Another process streams through ``mb`` MB for ``seconds``: our caches and TLB go cold."""
    code = (
        f"import time\nb = bytearray({mb} << 20)\nend = time.monotonic() + {seconds}\n"
        "while time.monotonic() < end:\n    b[::4096] = b'x' * len(b[::4096])\n    bytes(b)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def rss_file_kb() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    return 0


def _idle_rows(
    voice: Any, ka: Keepalive, text: str, idle_s: float, interval_s: float, repeats: int, thrash_s: float
) -> tuple[dict[str, list[float]], list[int]]:
    """First audio after each kind of idleness; and the RssFile kB MADV_PAGEOUT reclaimed each time."""
    first_audio(voice, text)
    rows: dict[str, list[float]] = {
        "warm (1 s pause)": [],
        f"idle {idle_s:.0f} s, keepalive off": [],
        f"idle {idle_s:.0f} s, keepalive every {interval_s:.0f} s": [],
        "caches thrashed, keepalive off": [],
        "caches thrashed, then a keepalive run": [],
    }
    for _ in range(repeats):
        time.sleep(1.0)
        rows["warm (1 s pause)"].append(first_audio(voice, text))
    # one real idle period each way
    time.sleep(idle_s)
    rows[f"idle {idle_s:.0f} s, keepalive off"].append(first_audio(voice, text))
    ka.note_activity()
    end = time.monotonic() + idle_s
    while (left := end - time.monotonic()) > 0:
        wait = ka.seconds_until_due()
        time.sleep(min(left, wait if wait is not None else left))
        if time.monotonic() < end:
            ka.run_if_due()
    rows[f"idle {idle_s:.0f} s, keepalive every {interval_s:.0f} s"].append(first_audio(voice, text))
    reclaimed = []
    for _ in range(repeats):
        before = rss_file_kb()
        pageout_file_mappings()
        reclaimed.append(before - rss_file_kb())
        thrash(thrash_s)
        rows["caches thrashed, keepalive off"].append(first_audio(voice, text))
        thrash(thrash_s)
        ka.run()
        rows["caches thrashed, then a keepalive run"].append(first_audio(voice, text))
    return rows, reclaimed


def bench_idle(text: str, idle_s: float, interval_s: float, repeats: int, thrash_s: float = 2.0) -> dict[str, Any]:
    from edgetts.voice.catalog import load_voice

    topo = detect()
    threads = default_threads(resolve_cores("auto", topo))
    voice = load_voice("default", threads=threads)
    warm_call = lambda: voice.synthesize(KEEPALIVE_TEXT, NOISELESS)  # noqa: E731
    ka = Keepalive(interval_s, warm_call)

    def thread_cpu_of_a_run() -> float:
        t0 = time.thread_time()
        for _ in warm_call():
            pass
        return time.thread_time() - t0

    def body() -> dict[str, Any]:
        rows, reclaimed = _idle_rows(voice, ka, text, idle_s, interval_s, repeats, thrash_s)
        thread_cpu = [thread_cpu_of_a_run() for _ in range(3)]
        stats = ka.stats()
        return {
            "threads": threads,
            "rss_file_reclaimed_kb_median": statistics.median(reclaimed),
            "rows": {k: {"n": len(v), "median_s": statistics.median(v), "max_s": max(v)} for k, v in rows.items()},
            "keepalive": {
                **stats.to_dict(),
                "thread_cpu_s_per_run": round(statistics.median(thread_cpu), 4),
                "wall_s_per_run": round(stats.wall_s / max(stats.runs, 1), 4),
            },
        }

    return on_thread(body)


# ---------------------------------------------------------------- 4. memory


def _memprobe(mode: str) -> None:
    import numpy as np
    import onnxruntime as ort

    from edgetts.runtime import memlock
    from edgetts.voice.catalog import default_voice_path

    path = str(default_voice_path())
    t0 = time.perf_counter()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    weights = memlock.lock_weights(path, so) if mode == "mlock own map" else None
    session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # as edgetts.voice.onnx_session does after every load
    rc = 0
    if mode == "mlockall(MCL_CURRENT)":
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        rc = libc.mlockall(1)
    load_s = time.perf_counter() - t0
    ids = np.array([[1, 0] + [20, 0, 25, 0, 35, 0, 50, 0, 3, 0, 61, 0] * 8 + [2]], dtype=np.int64)
    feeds = {
        "input": ids,
        "input_lengths": np.array([ids.shape[1]], np.int64),
        "scales": np.array([0, 1, 0], np.float32),
    }
    session.run(None, feeds)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - t)
    status = {}
    for line in open("/proc/self/status"):
        key = line.split(":")[0]
        if key in ("VmLck", "RssAnon", "RssFile", "VmRSS", "VmHWM"):
            status[key + "_mb"] = round(int(line.split()[1]) / 1024, 1)
    print(
        json.dumps(
            {
                "load_s": round(load_s, 3),
                "infer_median_s": round(statistics.median(times), 4),
                "rc": rc,
                **status,
                "locked_bytes": weights.locked_bytes if weights else 0,
            }
        )
    )


def bench_memory() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in ("plain", "mlock own map", "mlockall(MCL_CURRENT)"):
        runs = []
        for _ in range(3):
            r = subprocess.run(
                [sys.executable, "-m", "tools.bench_runtime", "--_memprobe", mode], capture_output=True, text=True
            )
            if r.returncode != 0:
                raise RuntimeError(r.stderr[-500:])
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
        row = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        out[mode] = row
    return out


# ---------------------------------------------------------------- report


def table(result: dict[str, Any]) -> str:
    lines = []
    hog = result.get("hog")
    if hog:
        n = next(iter(hog["rows"].values()))["n"]
        lines.append(f"## time to first audio, CPU hog on CPU {hog['hog_core']} ({n} announcements each)")
        lines.append(f"{'configuration':44} {'p50 s':>8} {'p95 s':>8} {'max s':>8}")
        for name, r in hog["rows"].items():
            lines.append(f"{name:44} {r['p50_s']:8.3f} {r['p95_s']:8.3f} {r['max_s']:8.3f}")
    idle = result.get("idle")
    if idle:
        lines.append("")
        reclaimed_mb = idle["rss_file_reclaimed_kb_median"] / 1024
        lines.append(
            f"## first audio after idleness (threads={idle['threads']}; thrash = 2 s of another process "
            f"streaming 256 MB; MADV_PAGEOUT could reclaim only {reclaimed_mb:.1f} MB of RssFile)"
        )
        lines.append(f"{'situation':44} {'n':>3} {'median s':>9} {'max s':>8}")
        for name, r in idle["rows"].items():
            lines.append(f"{name:44} {r['n']:3d} {r['median_s']:9.3f} {r['max_s']:8.3f}")
        ka = idle["keepalive"]
        lines.append("")
        lines.append(f"## keepalive cost ('{KEEPALIVE_TEXT}', every {ka['interval_s']:.0f} s)")
        lines.append(
            f"CPU per run: {ka['cpu_s_per_run']:.3f} s process "
            f"({ka['thread_cpu_s_per_run']:.3f} s calling thread only), "
            f"wall {ka['wall_s_per_run']:.3f} s; per idle hour: {ka['cpu_s_per_hour']:.1f} CPU s "
            f"({ka['cpu_s_per_hour'] / 36:.2f} % of one core)"
        )
    mem = result.get("memory")
    if mem:
        lines.append("")
        lines.append("## locking the weights (median of 3 fresh processes, 1 thread)")
        lines.append(
            f"{'mode':24} {'load s':>7} {'infer s':>8} {'VmLck MB':>9} {'RssAnon MB':>11} "
            f"{'RssFile MB':>11} {'VmRSS MB':>9}"
        )
        for name, r in mem.items():
            lines.append(
                f"{name:24} {r['load_s']:7.3f} {r['infer_median_s']:8.4f} {r['VmLck_mb']:9.1f} "
                f"{r['RssAnon_mb']:11.1f} {r['RssFile_mb']:11.1f} {r['VmRSS_mb']:9.1f}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="passes over the corpus per configuration")
    parser.add_argument("--idle-s", type=float, default=70.0, help="real idle period, seconds")
    parser.add_argument("--interval-s", type=float, default=30.0, help="keepalive interval, seconds")
    parser.add_argument("--repeats", type=int, default=5, help="samples per idle/reclaim row")
    parser.add_argument("--quick", action="store_true", help="1 round, 5 s idle, 2 repeats (a smoke run)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["hog", "idle", "memory"])
    parser.add_argument(
        "--json", type=Path, default=default_path("bench_runtime"), help="write the results here (default: %(default)s)"
    )
    parser.add_argument("--_memprobe", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args._memprobe:
        _memprobe(args._memprobe)
        return 0
    if args.quick:
        args.rounds, args.idle_s, args.interval_s, args.repeats = 1, 5.0, 2.0, 2
    lines = [line.strip() for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    result: dict[str, Any] = {"cpus": len(os.sched_getaffinity(0)), "load_at_start": os.getloadavg()[0]}
    if "hog" not in args.skip:
        result["hog"] = bench_hog(lines, args.rounds)
    if "idle" not in args.skip:
        result["idle"] = bench_idle(lines[1], args.idle_s, args.interval_s, args.repeats)
    if "memory" not in args.skip:
        result["memory"] = bench_memory()
    result["load_at_end"] = os.getloadavg()[0]
    print(table(result))
    print(f"\nload average: {result['load_at_start']:.2f} at start, {result['load_at_end']:.2f} at end")
    write_result("bench_runtime", result, args.json, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
