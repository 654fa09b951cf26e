"""The README's headline table (tools/report.py renders it between its markers): the comparisons with the
peers that matter most, and what the Debian package weighs, each from its tool's result file alone."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping
from typing import Any

from tools.report import (
    END,
    START,
    ReportError,
    _dict,
    command_text,
    commit_text,
    fmt,
    machine_text,
    section_order,
    table,
    tool_of,
)

ENGINE_HEADLINE = (("first audio, median", "first_audio_median_s", "s"), ("RTF, median", "rtf_median", ""))
BOARD_HEADLINE = (
    *ENGINE_HEADLINE[:1],
    ("first audio, p95", "first_audio_p95_s", "s"),
    ("underruns (median run)", "underruns", ""),
    *ENGINE_HEADLINE[1:],
)
"""(figure, key in each engine's record, unit) of the rows the README shows."""
DEB_HEADLINE = (
    ("package size", "deb_mb", "MB"),
    ("installed size", "installed_mb", "MB"),
    ("apt install in a fresh Debian 12", "apt_install_s", "s"),
)


def _row(bench: str, figure: str, ours: Any, peer: str, theirs: Any, unit: str) -> list[str] | None:
    """One comparison; None when either side is missing (a tool's older or partial result)."""
    a, b = (v if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan for v in (ours, theirs))
    if not (math.isfinite(a) and math.isfinite(b)):
        return None
    ratio = f"{a / b:.2f}x" if b else "-"
    return [bench, figure, f"{fmt(a)} {unit}".rstrip(), peer, f"{fmt(b)} {unit}".rstrip(), ratio]


def _get(mapping: Any, record: str, key: str) -> Any:
    return _dict(_dict(mapping).get(record)).get(key)


def engine_rows(result: Mapping[str, Any]) -> list[list[str] | None]:
    rows: list[list[str] | None] = []
    blocks = _dict(result.get("threads"))
    for threads in sorted(blocks, key=lambda t: (len(t), t)):
        bench = f"engine, {threads} thread{'s' if threads != '1' else ''}"
        for figure, key, unit in ENGINE_HEADLINE:
            for peer, label in (("piper", "piper-tts"), ("sherpa", "sherpa-onnx")):
                ours, theirs = _get(blocks[threads], "edgetts", key), _get(blocks[threads], peer, key)
                rows.append(_row(bench, figure, ours, label, theirs, unit))
    return rows


def board_rows(result: Mapping[str, Any]) -> list[list[str] | None]:
    board = f"{result['board']}, " if result.get("board") else ""
    bench = f"slow board ({board}{fmt(result.get('threads', 1))} thread(s) by {result.get('parallel', 'threads')})"
    return [
        _row(bench, figure, _get(result, "edgetts", key), "piper-tts", _get(result, "piper", key), unit)
        for figure, key, unit in BOARD_HEADLINE
    ]


def daemon_rows(result: Mapping[str, Any]) -> list[list[str] | None]:
    piper = result.get("piper_ms")
    piper_median = statistics.median(piper) if isinstance(piper, list) and piper else None
    latency = ("MQTT publish -> first PCM, median", result.get("daemon_median_ms"), "piper-tts, first audio")
    memory = ("peak RSS", result.get("peak_rss_mb"), "piper-tts engine")
    return [
        _row("daemon", *latency, piper_median, "ms"),
        _row("daemon", *memory, result.get("piper_engine_peak_rss_mb"), "MB"),
    ]


def wyoming_rows(result: Mapping[str, Any]) -> list[list[str] | None]:
    key = "first_chunk_median_s"
    ours, theirs = _get(result, "edgetts", key), _get(result, "wyoming_piper", key)
    return [_row("Wyoming server", "first audio chunk, median", ours, "wyoming-piper", theirs, "s")]


def deb_rows(result: Mapping[str, Any]) -> list[list[str] | None]:
    """What the package weighs and how long apt takes to install it here: no peer ships one."""
    rows: list[list[str] | None] = []
    for arch in ("arm64", "amd64"):
        block = _dict(result.get(arch))
        for figure, key, unit in DEB_HEADLINE:
            value = block.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if arch == "arm64" and unit == "s":
                    figure += " (under qemu here)"  # test-deb.sh installs arm64 emulated: not a board's time
                rows.append([f"Debian package, {arch}", figure, f"{fmt(value)} {unit}", "-", "-", "-"])
    return rows


HEADLINE: dict[str, Callable[[Mapping[str, Any]], list[list[str] | None]]] = {
    "bench_engine": engine_rows,
    "bench_board": board_rows,
    "bench_daemon": daemon_rows,
    "bench_wyoming": wyoming_rows,
    "deb_package": deb_rows,
}


def render_headline(results: Mapping[str, Mapping[str, Any]]) -> str:
    """The README's table: the peers' comparisons that matter most, each tool's run named under it."""
    rows: list[list[str]] = []
    sources: list[str] = []
    for name in section_order(results):
        make = HEADLINE.get(tool_of(name))
        if make is None:
            continue
        found = [row for row in make(results[name]) if row is not None]
        if found:
            rows += found
            result = results[name]
            sources.append(
                f"- `{name}`: commit {commit_text(result)}; {machine_text(result, short=True)}; {command_text(result)}"
            )
    if not rows:
        return "No benchmark results yet: run `python -m tools.bench_engine`, then `python -m tools.report`."
    lines = table(("benchmark", "figure", "edgetts", "peer", "peer's", "edgetts / peer"), rows, numeric_from=2)
    lines[1] = "|---|---|---:|---|---:|---:|"
    lines += ["", "Measured side by side in one run per tool (ratio = edgetts / peer; lower is better):", "", *sources]
    return "\n".join(lines)


def splice(readme: str, headline: str, name: str = "README.md") -> str:
    """``readme`` with the lines between the two marker lines replaced by ``headline``."""
    lines = readme.split("\n")
    for marker in (START, END):
        count = sum(line.strip() == marker for line in lines)
        if count != 1:
            raise ReportError(f"{name} has {'no' if count == 0 else count} line `{marker}` (needs exactly one)")
    start = next(i for i, line in enumerate(lines) if line.strip() == START)
    end = next(i for i, line in enumerate(lines) if line.strip() == END)
    if end < start:
        raise ReportError(f"{name}: `{END}` comes before `{START}`")
    return "\n".join([*lines[: start + 1], "", headline, "", *lines[end:]])
