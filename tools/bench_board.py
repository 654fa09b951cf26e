#!/usr/bin/env python3
"""edgetts against piper-tts on a slow board: this machine's core slowed to a Pi 4's by a CPU quota.

    python -m tools.bench_board [--board pi4|pi4-1core] [--corpus F] [--piper-rtf X] [--threads N]
                                [--runs N] [--lines N] [--json OUT]

The quota is calibrated first (tools/slowboard.py: piper-tts on the joe voice
at 1 thread runs at ``--piper-rtf``, 0.8 = one Pi 4 core; ``--quota`` skips
that), times ``--threads`` (one slow core per thread).  Each run is one fresh
worker process (tools/board_worker.py) in that CPU-quota group: both engines
loaded at full speed, then, slowed, each line spoken by piper-tts and by
edgetts one after the other (which goes first alternates by run).  edgetts
plays, as the daemon's default configuration does, through the real sound
card into a sound card with a real clock (tools/paced_sink.py), recorded with
parec.

Per engine: ``rtf_median`` (synthesis wall / audio seconds, median over lines),
``first_audio_median_s`` / ``first_audio_p95_s`` (edgetts: the player's
`started` minus the call; piper-tts: its first sentence chunk),
``underruns`` / ``gap_ms_total`` (edgetts: the player's `finished` report;
piper-tts: what its sentence-at-a-time output gives a player that starts at
its first chunk), ``cpu_s_total`` (process CPU of that engine's lines); each the
median over runs of the run's figure.  edgetts also has the same simulation as
piper (``sim_*``) and the recording's view (``recorded_*``: silences in what
reached the sink beyond those in the voice's own output).  ``ratio`` =
edgetts / piper.  ``--whole`` adds ``edgetts_whole`` (voice.streaming false).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tools.bench_engine import DEFAULT_CORPUS  # (the held-out announcement lines)
from tools.benchstats import percentile
from tools.paced_sink import PacedSink, find_gaps, onset_s
from tools.results import default_path, write_result
from tools.slowboard import CpuQuota, ask, calibrate, period_for, start_worker, stop_worker

WORKER = "tools.board_worker"
RATE = 22050
"""The joe voice's rate, which the daemon opens the device at: the paced sink runs at it."""
FIELDS = ("rtf_median", "first_audio_median_s", "first_audio_p95_s", "underruns", "gap_ms_total", "cpu_s_total")
RATIO_FIELDS = (
    "rtf_median",
    "first_audio_median_s",
    "first_audio_p95_s",
    "cpu_s_total",
    "rtf_total",
    "underruns",
    "gap_ms_total",
)
# Recorded audio is sliced per line from the player's `started` (minus this) to its `finished` (plus this).
SLICE_BEFORE_S, SLICE_AFTER_S = 0.1, 0.3
PREVIOUS_TAIL_S = 0.1
"""The sink is still playing a line this long after its `finished` (measured here: ~40 ms)."""


def recorded_view(pcm: Any, rec_started: float, line: dict[str, Any], after: float, before: float) -> dict[str, Any]:
    """What reached the sink for one edgetts line: onset after the call, and silences the voice did not make.

    ``after`` / ``before``: monotonic bounds of this line's audio in the recording (the line
    played before it has finished by then; the one after has not started): `finished` comes a
    few tens of ms before the sink has played the last sample, and the next line may start soon after.
    """

    def index(t: float) -> int:
        return max(0, min(len(pcm), int(round((t - rec_started) * RATE))))

    stop = min(line["finished_mono"] + SLICE_AFTER_S, before)
    from_call = pcm[index(max(line["t0_mono"], after)) : index(stop)]
    onset = onset_s(from_call, RATE)
    gaps = find_gaps(pcm[index(max(line["started_mono"] - SLICE_BEFORE_S, after)) : index(stop)], RATE)
    return {
        "recorded_first_audio_s": (index(max(line["t0_mono"], after)) / RATE + rec_started - line["t0_mono"] + onset)
        if onset is not None
        else None,
        "recorded_gaps_extra": max(0, len(gaps) - line["source_gaps"]),
        "recorded_gap_ms_extra": max(0.0, 1000.0 * sum(length for _, length in gaps) - line["source_gap_ms"]),
    }


def add_recorded_views(result: dict[str, Any], pcm: Any, rec_started: float) -> None:
    """Each played line's recorded view, bounded by the lines played before and after it."""
    played = sorted(
        (line for name, per_line in result.items() if name != "piper" for line in per_line),
        key=lambda line: line["started_mono"],
    )
    for n, line in enumerate(played):
        after = played[n - 1]["finished_mono"] + PREVIOUS_TAIL_S if n else -math.inf
        before = played[n + 1]["started_mono"] - SLICE_BEFORE_S if n + 1 < len(played) else math.inf
        line.update(recorded_view(pcm, rec_started, line, after, before))


def run_once(
    rep: int,
    lines: list[str],
    args: argparse.Namespace,
    quota: float,
    audio_quota: float | None,
    sink: PacedSink,
    scratch: Path,
) -> dict[str, Any]:
    """One fresh worker, slowed, speaking every line with each engine; with each edgetts line's recording.

    ``audio_quota``: the player's audio thread (and the PortAudio threads it starts) on a slow
    core of its own beside inference; None: on the inference's quota.
    """
    lines_file = scratch / "lines.json"
    lines_file.write_text(json.dumps(lines))
    argv = ["-m", WORKER, "--lines-file", str(lines_file), "--threads", str(args.threads), "--seed", str(1000 + rep)]
    argv += ["--parallel", args.parallel]
    if args.whole:
        argv.append("--whole")
    if rep % 2:
        argv.append("--edgetts-first")
    proc, ready = start_worker(argv, env=sink.env)
    try:
        with CpuQuota(quota) as group, CpuQuota(audio_quota or quota) as audio:
            group.add(proc.pid)
            if audio_quota:
                for tid in ready["audio_tids"]:
                    audio.add_thread(tid)
            with sink.record() as recording:
                result = ask(proc, "go")
                time.sleep(SLICE_AFTER_S)
                pcm = recording.stop()
            throttled = {"throttled_s": group.throttled_s(), "audio_throttled_s": audio.throttled_s()}
    finally:
        stop_worker(proc)
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        (args.keep / f"run{rep}.s16le").write_bytes(pcm.tobytes())
        (args.keep / f"run{rep}.json").write_text(
            json.dumps({"recording_started_mono": recording.started_mono, "rate": RATE, **result})
        )
    add_recorded_views(result, pcm, recording.started_mono)
    result["_worker"] = {**ready, **throttled, "recorded_s": len(pcm) / RATE}
    return result


def _total(values: list[Any]) -> float | None:
    return None if any(v is None for v in values) else float(sum(values))


def per_run(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's figures for one engine."""
    first = [line["first_audio_s"] for line in lines]
    out: dict[str, Any] = {
        "rtf_median": statistics.median(line["rtf"] for line in lines),
        "rtf_total": sum(line["synth_s"] for line in lines) / sum(line["audio_s"] for line in lines),
        "first_audio_median_s": statistics.median(first),
        "first_audio_p95_s": percentile(first, 0.95),
        "first_audio_max_s": max(first),
        "underruns": _total([line["underruns"] for line in lines]),
        "gap_ms_total": _total([line["gap_ms"] for line in lines]),
        "lines_with_underruns": sum(1 for line in lines if (line["underruns"] or 0) > 0),
        "cpu_s_total": sum(line["cpu_s"] for line in lines),
        "audio_s_total": sum(line["audio_s"] for line in lines),
    }
    if "sim_underruns" in lines[0]:
        recorded = [line["recorded_first_audio_s"] for line in lines if line["recorded_first_audio_s"] is not None]
        out.update(
            sim_underruns=sum(line["sim_underruns"] for line in lines),
            sim_gap_ms_total=sum(line["sim_gap_ms"] for line in lines),
            recorded_gaps_extra=sum(line["recorded_gaps_extra"] for line in lines),
            recorded_gap_ms_extra=sum(line["recorded_gap_ms_extra"] for line in lines),
            recorded_first_audio_median_s=statistics.median(recorded) if recorded else None,
            engine_first_chunk_median_s=statistics.median(line["first_chunk_s"] for line in lines),
            # The first audio a lead that knew the chunks' arrivals in advance would have given.
            earliest_start_median_s=(
                statistics.median(line["earliest_start_s"] for line in lines)
                if "earliest_start_s" in lines[0]
                else None
            ),
            lead_s_max=max(line["lead_s"] for line in lines),
            lines_with_lead=sum(1 for line in lines if line["lead_s"] > 0),
            synth_cpu_s_total=sum(line["synth_cpu_s"] for line in lines),
            device_opens=sum(line["device_opens"] for line in lines),
            device_open_s_total=sum(line["device_open_s"] for line in lines),
        )
    return out


def summarise(runs: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """An engine's figures: each the median over runs of the run's figure; underruns also their max."""
    figures = [per_run(lines) for lines in runs]
    out: dict[str, Any] = {}
    for key in figures[0]:
        values = [f[key] for f in figures]
        out[key] = None if any(v is None for v in values) else statistics.median(values)
    if out["underruns"] is not None:
        out["underruns_max"] = max(f["underruns"] for f in figures)
    out["first_audio_per_line_s"] = [
        statistics.median(r[i]["first_audio_s"] for r in runs) for i in range(len(runs[0]))
    ]
    return out


def ratio(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float | None]:
    """ours / theirs for each figure where both exist and the divisor is not 0."""
    out: dict[str, float | None] = {}
    for key in RATIO_FIELDS:
        a, b = ours.get(key), theirs.get(key)
        out[key] = a / b if a is not None and b else None
    return out


def machine() -> dict[str, Any]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.machine(),
    )
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_avg_at_start": os.getloadavg(),
    }


def print_table(res: dict[str, Any]) -> None:
    engines = [e for e in ("piper", "edgetts", "edgetts_whole") if e in res]
    print(
        f"\nslow board: piper-tts RTF target {res['piper_rtf_target']} -> quota {res['quota_cpus']:.4f} CPU "
        f"(period {res['period_us']} us), {res['threads']} thread(s), audio thread on a core "
        f"{'of its own' if res['audio_core'] == 'own' else 'shared with inference'}, "
        f"{res['lines']} lines, {res['runs']} runs; "
        "medians over runs"
    )
    header = f"{'metric':<24}" + "".join(f"{e:>15}" for e in engines) + f"{'edgetts/piper':>15}"
    print(header)
    print("-" * len(header))
    for key in (*FIELDS, "first_audio_max_s", "rtf_total", "lines_with_underruns"):
        cells = "".join(_cell(res[e].get(key)) for e in engines)
        print(f"{key:<24}{cells}{_cell(res['ratio'].get(key))}")
    e = res["edgetts"]
    print(
        f"edgetts cross-checks: simulated {e['sim_underruns']:.0f} underruns / {e['sim_gap_ms_total']:.0f} ms; "
        f"recording {e['recorded_gaps_extra']:.0f} extra gaps / {e['recorded_gap_ms_extra']:.0f} ms; "
        f"first audio in the recording {_cell(e['recorded_first_audio_median_s']).strip()} s; "
        f"lead up to {e['lead_s_max']:.2f} s on {e['lines_with_lead']:.0f} lines; "
        f"engine's first chunk {_cell(e['engine_first_chunk_median_s']).strip()} s, earliest start "
        f"without a stop {_cell(e.get('earliest_start_median_s')).strip()} s (medians); "
        f"device opened {e['device_opens']:.0f}x ({e['device_open_s_total']:.2f} s)"
    )


BOARDS = {"pi4": 2, "pi4-1core": 1}
"""Board profiles: inference threads, each on a slow core of ``--piper-rtf``'s speed, the audio thread
on a slow core of its own (``--audio-core own``).  The daemon's default gives inference one thread
per core (edgetts/runtime/topology.py), four on a Pi 4; two is what this two-core machine can run
truly in parallel, and past two piper-tts's own Pi 4 figures gain little (RTF 0.48 at 2 threads,
0.36 at 4)."""


def _threads(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The inference threads of ``--board`` or ``--threads`` (they must agree when both are given)."""
    if args.board is None:
        return args.threads or 1
    wanted = BOARDS[args.board]
    if args.threads not in (None, wanted):
        parser.error(f"--board {args.board} runs {wanted} inference thread(s), not --threads {args.threads}")
    return wanted


def _cell(value: Any) -> str:
    return f"{'-':>15}" if value is None else f"{value:>15.3f}"


def _terminate(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--piper-rtf", type=float, default=0.8, help="piper-tts's RTF on the slow core (0.8: Pi 4)")
    parser.add_argument("--quota", type=float, help="CPU quota per thread, instead of calibrating one")
    parser.add_argument(
        "--board",
        choices=sorted(BOARDS),
        help="a board profile: pi4 = the daemon's default on a Pi 4 (two inference threads, each on a slow "
        "core, the audio thread on a third); pi4-1core = one slow core for inference (sets --threads)",
    )
    parser.add_argument("--threads", type=int, help="inference threads, each on a slow core (default 1)")
    parser.add_argument(
        "--parallel",
        choices=["threads", "windows"],
        help="edgetts's voice.parallel: its threads inside each run, or windows decoded at once (default: windows "
        "with --board, as the daemon's `auto` does on an ARM board; else threads)",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lines", type=int, help="only the first N lines of the corpus")
    parser.add_argument("--whole", action="store_true", help="also edgetts with voice.streaming false")
    parser.add_argument(
        "--audio-core",
        choices=["own", "shared"],
        default="own",
        help="own: the audio thread on a second slow core (a board has several: cpu.audio_core); "
        "shared: in the inference's quota",
    )
    parser.add_argument("--keep", type=Path, help="keep each run's recording (s16le) and raw figures here")
    parser.add_argument(
        "--json", type=Path, default=default_path("bench_board"), help="write the results here (default: %(default)s)"
    )
    args = parser.parse_args()
    args.threads = _threads(parser, args)
    args.parallel = args.parallel or ("windows" if args.board else "threads")
    # SIGTERM (and SIGINT, which a shell's background job ignores) unwinds like an exception, so
    # the quota group, the worker and the sink are cleaned up.
    signal.signal(signal.SIGTERM, _terminate)
    corpus = [line.strip() for line in args.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = corpus[: args.lines] if args.lines else corpus
    res: dict[str, Any] = {"piper_rtf_target": args.piper_rtf, "machine": machine()}

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.quota is None:
        res["calibration"] = calibrate(args.piper_rtf, threads=1, log=log)
        per_core = res["calibration"]["quota_cpus"]
    else:
        per_core = args.quota
    quota = per_core * args.threads
    res.update(
        quota_cpus=quota,
        quota_cpus_per_thread=per_core,
        period_us=period_for(quota),
        audio_core=args.audio_core,
        audio_quota_cpus=per_core if args.audio_core == "own" else None,
        board=args.board,
        threads=args.threads,
        parallel=args.parallel,
        runs=args.runs,
        lines=len(lines),
        corpus=str(args.corpus),
    )
    raw: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-board-") as tmp, PacedSink(Path(tmp), RATE) as sink:
        for rep in range(args.runs):
            audio_quota = per_core if args.audio_core == "own" else None
            raw.append(run_once(rep, lines, args, quota, audio_quota, sink, Path(tmp)))
            log(f"run {rep + 1}/{args.runs} done")
    for name in [n for n in raw[0] if not n.startswith("_")]:
        res[name] = summarise([r[name] for r in raw])
    res["ratio"] = ratio(res["edgetts"], res["piper"])
    if "edgetts_whole" in res:
        res["whole_ratio"] = ratio(res["edgetts"], res["edgetts_whole"])
    res["worker"] = [r["_worker"] for r in raw]
    res["per_line"] = {"text": lines, **{name: [r[name] for r in raw] for name in raw[0] if not name.startswith("_")}}
    print_table(res)
    print(f"\nwrote {write_result('bench_board', res, args.json)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
