"""docs/benchmarks.md and the README's headline table, rendered from benchmarks/results/*.json alone: a
figure in the docs is one a tool wrote, with the commit, machine and command of its run (tools/results.py).

    python -m tools.report [--check]    # --check: exit 1 (one line) when either differs from its rendering

Only the result files count (no clock, no path of this checkout, mappings in a fixed or sorted order,
floats in one format): the same files give the same bytes anywhere, so ``--check`` can run in CI.  The
tools it knows get tables laid out for their peers; any other field or tool, a sorted key/value table.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

_LOGGER = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
START = "<!-- report:headline:start -->"
END = "<!-- report:headline:end -->"
PROVENANCE = ("tool", "commit", "command", "machine")
RERUN = "python -m tools.report"

TOOLS: dict[str, tuple[str, str, str]] = {
    "bench_engine": (
        "the engine alone: load, time to first audio, real-time factor (RTF), peak RSS; the same voice "
        "(en_US-joe-medium) and phoneme ids, noise 0, each run a fresh process, the engines alternating",
        "piper-tts 1.8, sherpa-onnx 2.0.1",
        "--runs 5 --threads 1 2",
    ),
    "bench_board": (
        "a core slowed to a Raspberry Pi 4's by a CPU quota: first audio, underruns, RTF, CPU; edgetts "
        "playing through a paced sound card",
        "piper-tts 1.8",
        "--piper-rtf 0.8 --runs 3 --whole",
    ),
    "bench_daemon": (
        "the whole daemon: MQTT publish -> first PCM handed to ALSA, its hops, phrase-cache hits, peak RSS",
        "piper-tts 1.8 (first audio, engine-only peak RSS)",
        "--rounds 2",
    ),
    "bench_wyoming": ("the Wyoming server: synthesize -> first audio chunk, -> audio-stop", "wyoming-piper 2.5.2", ""),
    "bench_runtime": ("first audio beside a CPU hog or after idling; keepalive; locked weights", "edgetts itself", ""),
    "bench_noise": ("what seeded noise costs per sentence", "the voice's graph as shipped", ""),
    "bench_sync": ("N daemons playing one synchronized announcement: spread, error against play_at", "play_at", ""),
    "bench_wer": ("intelligibility (pocketsphinx word error rate) of the default decoding", "whole sentences", ""),
    "bench_ar": ("the block KV cache on a CosyVoice2-shaped LM", "a naive HF-layout export", ""),
}
"""Each benchmark: what it measures, against what, and the arguments of a full run (the intro's table, in
this order; a tool's defaults where none are given)."""

ENGINE_COLUMNS = (
    ("edgetts", "edgetts"),
    ("piper", "piper-tts"),
    ("ratio", "edgetts / piper-tts"),
    ("sherpa", "sherpa-onnx"),
    ("sherpa_ratio", "edgetts / sherpa-onnx"),
    ("edgetts_normalized", "edgetts, normaliser on"),
    ("edgetts_whole", "edgetts, whole sentences"),
    ("edgetts_fast", "edgetts, fast start"),
    ("fast_ratio", "fast start / piper-tts"),
)
ENGINE_ROWS = tuple(
    "load_s first_audio_median_s first_audio_p95_s first_audio_max_s rtf_median rtf_total peak_rss_mb "
    "first_audio_short_s first_audio_long60_s first_audio_fire_drill_s".split()
)
BOARD_COLUMNS = (
    ("piper", "piper-tts"),
    ("edgetts", "edgetts"),
    ("edgetts_whole", "edgetts, whole sentences"),
    ("ratio", "edgetts / piper-tts"),
    ("whole_ratio", "edgetts / whole sentences"),
)
BOARD_ROWS = tuple(
    "rtf_median rtf_total first_audio_median_s first_audio_p95_s first_audio_max_s underruns gap_ms_total "
    "lines_with_underruns cpu_s_total".split()
)
WYOMING_COLUMNS = (("edgetts", "edgetts"), ("wyoming_piper", "wyoming-piper"), ("ratio", "edgetts / wyoming-piper"))
WYOMING_ROWS = ("first_chunk_median_s", "first_chunk_p95_s", "total_s")
"""The tables' columns (a record of the result: its label) and first rows (a record's other figures follow,
sorted)."""


Section = Callable[[Mapping[str, Any]], list[str]]
"""A tool's figures (its result without the provenance) as markdown lines."""


class ReportError(Exception):
    """What stops the report, in one line."""


# -- formatting -------------------------------------------------------------------
def fmt(value: Any) -> str:
    """One fixed format per kind of value, so equal inputs give equal text."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        for bound, spec in ((1000, ".0f"), (100, ".1f"), (1, ".3f"), (0.001, ".4f")):
            if abs(value) >= bound:
                return format(value, spec)
        return "0.0000" if value == 0 else f"{value:.2e}"
    if isinstance(value, list):
        return _fmt_list(value)
    if isinstance(value, dict):
        return f"{len(value)} entries"
    return str(value)


def _fmt_list(values: list[Any]) -> str:
    """Short lists in full; long lists of numbers as their spread (per-line figures); others counted."""
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) == len(values) and values:
        if len(values) <= 6:
            return ", ".join(fmt(v) for v in values)
        finite = sorted(v for v in numbers if not math.isnan(v))
        if finite:
            median = statistics.median(finite)
            return f"{len(values)} values: min {fmt(finite[0])}, median {fmt(median)}, max {fmt(finite[-1])}"
    if values and all(isinstance(v, str) for v in values) and len(values) <= 3:
        return ", ".join(values)
    return f"{len(values)} items"


def _dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a mapping, else an empty one: a partial or older result renders what it has."""
    return value if isinstance(value, dict) else {}


def cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def table(header: Iterable[str], rows: Iterable[Iterable[str]], numeric_from: int = 1) -> list[str]:
    """A markdown table, columns from ``numeric_from`` on right-aligned."""
    header = list(header)
    align = ["---" if i < numeric_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts to dotted keys; lists stay whole (``fmt`` shortens them)."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def key_values(mapping: Mapping[str, Any], title: str = "field") -> list[str]:
    """The generic rendering: every field, flattened, sorted by name."""
    flat = flatten(mapping)
    if not flat:
        return []
    return table((title, "value"), ([key, fmt(flat[key])] for key in sorted(flat)))


def wide(block: Mapping[str, Any], columns: Iterable[tuple[str, str]], first_rows: Iterable[str]) -> tuple:
    """Records side by side (one column per engine, ratios beside): the table, and what it left for
    ``key_values`` (the other keys of ``block``, and list values inside the records)."""
    present = [(key, label) for key, label in columns if isinstance(block.get(key), dict)]
    scalar = {k for key, _ in present for k, v in block[key].items() if not isinstance(v, (list, dict))}
    order = [row for row in first_rows if row in scalar] + sorted(scalar - set(first_rows))
    rows = [[row] + [fmt(block[key].get(row)) for key, _ in present] for row in order]
    left = {k: v for k, v in block.items() if k not in dict(present)}
    for key, _ in present:
        left.update({f"{key}.{k}": v for k, v in block[key].items() if isinstance(v, (list, dict))})
    return (table(["metric", *(label for _, label in present)], rows) if present else []), left


# -- provenance --------------------------------------------------------------------
def commit_text(result: Mapping[str, Any]) -> str:
    commit = result.get("commit")
    if not isinstance(commit, dict) or not commit.get("sha"):
        return "not recorded"
    dirty = {True: " with uncommitted changes", False: "", None: " (clean or not: unknown)"}[commit.get("dirty")]
    return f"`{str(commit['sha'])[:12]}`{dirty}"


def machine_text(result: Mapping[str, Any], short: bool = False) -> str:
    m = result.get("machine")
    if not isinstance(m, dict) or "logical_cores" not in m:
        return "not recorded"
    quota = m.get("cpu_quota")
    cores = f"{m.get('logical_cores')} logical cores"
    if m.get("usable_cores") not in (None, m.get("logical_cores")):
        cores += f" ({m['usable_cores']} usable)"
    cores += f", CPU quota {fmt(quota)}" if quota is not None else ", no CPU quota"
    text = f"{m.get('cpu')}, {cores}, {m.get('arch')}"
    if short:
        return text
    text += f", Linux {m.get('kernel')}, Python {m.get('python')}, onnxruntime {m.get('onnxruntime')}"
    text += f", numpy {m.get('numpy')}"
    load = m.get("load_avg_at_end")
    if isinstance(load, list) and load:
        text += f"; load average at the end {' / '.join(f'{float(x):.2f}' for x in load)} (1/5/15 min)"
    return text


def command_text(result: Mapping[str, Any]) -> str:
    command = result.get("command")
    return f"`{command}`" if command else "not recorded"


def provenance(name: str, result: Mapping[str, Any]) -> list[str]:
    return [
        f"From [`benchmarks/results/{name}.json`](../benchmarks/results/{name}.json).",
        "",
        f"- commit: {commit_text(result)}",
        f"- machine: {machine_text(result)}",
        f"- command: {command_text(result)}",
    ]


# -- sections ----------------------------------------------------------------------
def _extra(left: Mapping[str, Any], heading: str = "Other fields") -> list[str]:
    lines = key_values(left)
    return ["", f"{heading}:", "", *lines] if lines else []


def engine_section(result: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    blocks = _dict(result.get("threads"))
    for threads in sorted(blocks, key=lambda t: (len(t), t)):
        grid, left = wide(blocks[threads], ENGINE_COLUMNS, ENGINE_ROWS)
        out += ["", f"### {threads} thread{'s' if threads != '1' else ''}", "", *grid, *_extra(left)]
    rest = {k: v for k, v in result.items() if k not in (*PROVENANCE, "threads") or k == "threads" and not blocks}
    return out + _extra(rest, "Settings")


def wide_section(columns: tuple[tuple[str, str], ...], first_rows: tuple[str, ...]) -> Section:
    """A tool whose result holds one record per engine at the top (bench_board, bench_wyoming)."""

    def section(result: Mapping[str, Any]) -> list[str]:
        grid, left = wide(result, columns, first_rows)
        return ["", *grid, *_extra({k: v for k, v in left.items() if k not in PROVENANCE}, "Settings and other fields")]

    return section


def daemon_section(result: Mapping[str, Any]) -> list[str]:
    summary = _dict(result.get("summary"))
    keys = ("n", "median_ms", "p95_ms", "min_ms", "max_ms")
    # The tool's order, not sorted: its rows nest ("  of which ...", marked so: markdown drops the spaces).
    rows = [
        [("↳ " if label[:1] == " " else "") + label.strip(), *(fmt(_dict(s).get(k)) for k in keys)]
        for label, s in summary.items()
    ]
    grid = table(("path (ms)", "n", "median", "p95", "min", "max"), rows) if rows else []
    left = {k: v for k, v in result.items() if k not in (*PROVENANCE, "summary") or k == "summary" and not rows}
    return ["", *grid, *_extra(left, "Settings and other fields")]


def generic_section(result: Mapping[str, Any]) -> list[str]:
    return ["", *key_values({k: v for k, v in result.items() if k not in PROVENANCE})]


SECTIONS: dict[str, Section] = {
    "bench_engine": engine_section,
    "bench_board": wide_section(BOARD_COLUMNS, BOARD_ROWS),
    "bench_daemon": daemon_section,
    "bench_wyoming": wide_section(WYOMING_COLUMNS, WYOMING_ROWS),
}


def tool_of(name: str) -> str:
    """The tool that wrote result ``name``: itself, or ``bench_board`` for ``bench_board_pi4`` (a profile's run)."""
    return next((t for t in sorted(TOOLS, key=len, reverse=True) if name == t or name.startswith(t + "_")), name)


def section_order(names: Iterable[str]) -> list[str]:
    """The known tools in the intro's order (each tool's profiles by name), then any other result file."""
    known = [n for t in TOOLS for n in sorted(set(names)) if tool_of(n) == t]
    return known + sorted(set(names) - set(known))


# -- documents ---------------------------------------------------------------------
def intro() -> list[str]:
    rows = (
        [f"`{n}`", what, peer, f"`python -m tools.{n}{' ' * bool(args)}{args}`"]
        for n, (what, peer, args) in TOOLS.items()
    )
    return [
        "# Benchmarks",
        "",
        f"<!-- Generated by `{RERUN}` from benchmarks/results/*.json: rerun a benchmark, then that; "
        "do not edit by hand (`--check` fails). -->",
        "",
        "Every figure below is one a benchmark tool wrote to `benchmarks/results/<tool>.json`, with the "
        "commit, machine and command of its run. Each tool measures edgetts and its peer side by side in "
        "one run (alternating, so load from elsewhere on the machine hits both alike): the ratios "
        "(edgetts / peer) carry over between machines better than the seconds do. How the figures are "
        "taken and how far to trust them: [benchmarking.md](benchmarking.md).",
        "",
        *table(("tool", "measures", "against", "rerun"), rows, numeric_from=4),
        "",
        f"Rerun a tool from the repository root as shown (its JSON goes to `benchmarks/results/`; `--json PATH` "
        f"writes elsewhere), then `{RERUN}` to render this page and the README's headline table again.",
    ]


def render_docs(results: Mapping[str, Mapping[str, Any]]) -> str:
    lines = intro()
    if not results:
        lines += ["", "No results yet: `benchmarks/results/` holds no JSON file."]
    for name in section_order(results):
        result = results[name]
        what = TOOLS.get(tool_of(name))
        title = f"## {name}" + (f": edgetts against {what[1]}" if what else "")
        lines += ["", title, "", *provenance(name, result), *SECTIONS.get(tool_of(name), generic_section)(result)]
    return "\n".join(lines) + "\n"


# -- command line ------------------------------------------------------------------
def load_results(folder: Path) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ReportError(f"{_shown(path)}: cannot read it as JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise ReportError(f"{_shown(path)}: not a JSON object")
        results[path.stem] = data
    return results


def _shown(path: Path) -> str:
    return str(path.resolve().relative_to(ROOT)) if path.resolve().is_relative_to(ROOT) else str(path)


def _write(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"report: wrote {_shown(path)}")


def run(results_dir: Path, docs: Path, readme: Path, check: bool) -> None:
    """Render (or with ``check`` compare) both outputs; ReportError says what is wrong."""
    from tools.report_headline import render_headline, splice  # (it uses this module's formatting)

    results = load_results(results_dir)
    docs_text = render_docs(results)
    if not readme.is_file():
        raise ReportError(f"{_shown(readme)} does not exist")
    readme_old = readme.read_text(encoding="utf-8")
    if check:
        stale = [] if docs.is_file() and docs.read_text(encoding="utf-8") == docs_text else [_shown(docs)]
        if splice(readme_old, render_headline(results), _shown(readme)) != readme_old:
            stale.append(f"the headline table in {_shown(readme)}")
        if stale:
            raise ReportError(f"out of date: {' and '.join(stale)}; run `{RERUN}`")
        return
    _write(docs, docs_text)  # written even when the README's markers are missing: it does not need them
    _write(readme, splice(readme_old, render_headline(results), _shown(readme)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when an output differs from its rendering")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="the result files' folder")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the page rendered wholly")
    parser.add_argument("--readme", type=Path, default=README, help="the file with the headline markers")
    args = parser.parse_args(argv)
    try:
        run(args.results, args.docs, args.readme, args.check)
    except ReportError as exc:
        print(f"report: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
