"""tools/report.py renders the benchmark docs from the result files alone, the same bytes every time;
tools/results.py stamps every result with the commit, machine and command of its run."""

from __future__ import annotations

import ast
import copy
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.paths import ROOT, TOOLS
from tools import report, results

SHA = "0123456789abcdef0123456789abcdef01234567"
MACHINE = {
    "cpu": "Test CPU 9000",
    "logical_cores": 2,
    "usable_cores": 2,
    "cpu_quota": None,
    "kernel": "6.1.0-test",
    "arch": "x86_64",
    "python": "3.11.2",
    "onnxruntime": "1.20.1",
    "numpy": "2.1.0",
    "load_avg_at_end": [1.5, 1.25, 0.75],
}


def _engine_block(scale: float) -> dict[str, Any]:
    figures = {"first_audio_median_s": 0.05 * scale, "rtf_median": 0.08 * scale, "peak_rss_mb": 150.0}
    piper = {"first_audio_median_s": 0.2, "rtf_median": 0.1, "peak_rss_mb": 200.0}
    sherpa = {"first_audio_median_s": 0.25, "rtf_median": 0.09, "peak_rss_mb": 180.0}
    return {
        "edgetts": {**figures, "first_audio_per_line_s": [0.01 * i for i in range(1, 21)]},
        "piper": piper,
        "ratio": {k: figures[k] / piper[k] for k in figures},
        "sherpa": sherpa,
        "sherpa_ratio": {k: figures[k] / sherpa[k] for k in figures},
        "rtf_total_streamed_vs_whole_paired": 1.0123,
    }


def planted() -> dict[str, dict[str, Any]]:
    """Result files as the tools write them (provenance included), small."""
    stamp = {"commit": {"sha": SHA, "dirty": True}, "machine": MACHINE}
    return {
        "bench_engine": {
            "tool": "bench_engine",
            **stamp,
            "command": "python -m tools.bench_engine --runs 1",
            "corpus": "tests/data/announcements.txt",
            "runs": 1,
            "noise": "zero",
            "threads": {"2": _engine_block(0.5), "1": _engine_block(1.0)},
        },
        "bench_daemon": {
            "tool": "bench_daemon",
            **stamp,
            "command": "python -m tools.bench_daemon",
            "daemon_median_ms": 123.456,
            "piper_ms": [300.0, 310.0, 290.0],
            "peak_rss_mb": 210.0,
            "piper_engine_peak_rss_mb": 250.0,
            "summary": {"publish -> first PCM": {"n": 3, "median_ms": 123.456, "p95_ms": 130.0}},
        },
        "bench_future": {  # a tool the report does not know: rendered generically
            "tool": "bench_future",
            **stamp,
            "command": "python -m tools.bench_future",
            "zeta_ms": 12.5,
            "alpha": {"nested_count": 7, "flag": False},
        },
    }


README = f"# project\n\nintro\n\n{report.START}\nstale table\n{report.END}\n\n## more\n"


def _plant(folder: Path, files: dict[str, dict[str, Any]]) -> Path:
    (folder / "results").mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / "results" / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n")
    if not (folder / "README.md").exists():
        (folder / "README.md").write_text(README)
    return folder


def _report(folder: Path, *extra: str) -> int:
    return report.main(
        [
            "--results",
            str(folder / "results"),
            "--docs",
            str(folder / "benchmarks.md"),
            "--readme",
            str(folder / "README.md"),
            *extra,
        ]
    )


def _outputs(folder: Path) -> tuple[bytes, bytes]:
    return (folder / "benchmarks.md").read_bytes(), (folder / "README.md").read_bytes()


def test_the_same_results_render_the_same_bytes(tmp_path: Path) -> None:
    one, two = _plant(tmp_path / "one", planted()), tmp_path / "two"
    # The same figures written in another order (files, keys): the report does not depend on it.
    reordered = {name: dict(reversed(list(data.items()))) for name, data in reversed(list(planted().items()))}
    _plant(two, reordered)
    assert _report(one) == 0 and _report(two) == 0
    first = _outputs(one)
    assert first == _outputs(two)
    assert _report(one) == 0
    assert _outputs(one) == first  # rendering again changes nothing
    assert _report(one, "--check") == 0
    docs, readme = (text.decode() for text in first)
    # The engine's section: provenance, then the peers side by side, 1 thread before 2.
    assert "- commit: `0123456789ab` with uncommitted changes" in docs
    assert "- command: `python -m tools.bench_engine --runs 1`" in docs
    assert "Test CPU 9000, 2 logical cores, no CPU quota, x86_64, Linux 6.1.0-test" in docs
    assert docs.index("### 1 thread") < docs.index("### 2 threads")
    header = "| metric | edgetts | piper-tts | edgetts / piper-tts | sherpa-onnx | edgetts / sherpa-onnx |"
    assert header in docs
    assert "| first_audio_median_s | 0.0500 | 0.2000 | 0.2500 | 0.2500 | 0.2000 |" in docs
    assert "| edgetts.first_audio_per_line_s | 20 values: min 0.0100, median 0.1050, max 0.2000 |" in docs
    # The README: the text around the markers kept, the table between them replaced.
    assert readme.startswith("# project\n\nintro\n\n" + report.START + "\n")
    assert readme.endswith(report.END + "\n\n## more\n") and "stale table" not in readme
    assert "| engine, 1 thread | first audio, median | 0.0500 s | piper-tts | 0.2000 s | 0.25x |" in readme
    assert "| engine, 2 threads | RTF, median | 0.0400 | sherpa-onnx | 0.0900 | 0.44x |" in readme
    assert (
        "| daemon | MQTT publish -> first PCM, median | 123.5 ms | piper-tts, first audio | 300.0 ms | 0.41x |"
        in readme
    )
    assert "- `bench_engine`: commit `0123456789ab` with uncommitted changes; Test CPU 9000" in readme
    assert "`python -m tools.bench_engine --runs 1`" in readme


def test_a_changed_result_changes_the_output_and_fails_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = planted()
    _plant(tmp_path, files)
    assert _report(tmp_path) == 0
    before = _outputs(tmp_path)
    changed = copy.deepcopy(files)
    changed["bench_engine"]["threads"]["1"]["piper"]["first_audio_median_s"] = 0.4
    _plant(tmp_path, {"bench_engine": changed["bench_engine"]})
    capsys.readouterr()
    assert _report(tmp_path, "--check") == 1
    message = capsys.readouterr().err.strip()
    assert "\n" not in message and "benchmarks.md" in message and "headline table" in message
    assert _outputs(tmp_path) == before  # --check writes nothing
    assert _report(tmp_path) == 0
    docs, readme = _outputs(tmp_path)
    assert docs != before[0] and readme != before[1]
    assert b"| engine, 1 thread | first audio, median | 0.0500 s | piper-tts | 0.4000 s | 0.12x |" in readme


def test_unknown_tools_and_fields_render_as_sorted_key_values(tmp_path: Path) -> None:
    files = planted()
    files["bench_engine"]["threads"]["1"]["edgetts"]["new_metric_s"] = 0.125
    files["bench_engine"]["brand_new_setting"] = "on"
    _plant(tmp_path, files)
    assert _report(tmp_path) == 0
    docs = (tmp_path / "benchmarks.md").read_text()
    future = docs[docs.index("## bench_future") :]
    assert "- command: `python -m tools.bench_future`" in future
    rows = [line for line in future.splitlines() if line.startswith("| ") and "field" not in line]
    assert rows == ["| alpha.flag | no |", "| alpha.nested_count | 7 |", "| zeta_ms | 12.500 |"]
    engine = docs[docs.index("## bench_engine") : docs.index("## bench_daemon")]
    assert "| new_metric_s | 0.1250 | - | - | - | - |" in engine  # a new figure gets its row
    assert "| brand_new_setting | on |" in engine


def test_a_missing_marker_fails_in_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "README.md").write_text(f"# project\n{report.START}\n")
    _plant(tmp_path, planted())
    for extra in ((), ("--check",)):
        capsys.readouterr()
        assert _report(tmp_path, *extra) == 1
        message = capsys.readouterr().err.strip()
        assert "\n" not in message and report.END in message and "README.md" in message


def test_check_passes_on_the_committed_docs_and_readme(capsys: pytest.CaptureFixture[str]) -> None:
    """Not skipped when the README lacks its markers: then the committed docs are not what the results say."""
    code = report.main(["--check"])
    assert code == 0, capsys.readouterr().err
    assert list((ROOT / "benchmarks" / "results").glob("*.json")), "no committed result to render"


def test_results_stamps_commit_machine_and_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = {"runs": 1, "machine": {"cpus": 2, "cpu": "as the tool saw it"}, "figures": {"x_s": 0.5}}
    path = results.write_result("bench_probe", own, tmp_path / "out.json", ["--runs", "1", "--note", "a b"])
    data = json.loads(path.read_text())
    assert list(data)[:4] == ["tool", "commit", "command", "machine"]
    assert data["tool"] == "bench_probe"
    assert data["command"] == "python -m tools.bench_probe --runs 1 --note 'a b'"
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert data["commit"]["sha"] == head.stdout.strip() and len(data["commit"]["sha"]) == 40
    assert isinstance(data["commit"]["dirty"], bool)
    machine = data["machine"]
    for key in ("logical_cores", "usable_cores", "cpu_quota", "kernel", "arch", "python", "onnxruntime", "numpy"):
        assert key in machine, key
    assert machine["logical_cores"] >= 1 and re.fullmatch(r"\d+\.\d+\.\d+.*", machine["onnxruntime"])
    assert machine["cpu"] == "as the tool saw it" and machine["cpus"] == 2  # the tool's own names win
    assert data["runs"] == 1 and data["figures"] == {"x_s": 0.5}
    # Without --json: benchmarks/results/<tool>.json, its folder made.
    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path / "made" / "results")
    assert (
        results.write_result("bench_probe", {"runs": 2}, None, []) == tmp_path / "made" / "results" / "bench_probe.json"
    )
    with pytest.raises(ValueError, match="command"):
        results.with_provenance("bench_probe", {"command": "mine"})


def test_every_benchmark_with_json_output_writes_through_results() -> None:
    """A new tools/bench_*.py with --json must stamp its result and default to benchmarks/results/."""
    for path in sorted(TOOLS.glob("bench_*.py")):
        text = path.read_text(encoding="utf-8")
        if '"--json"' not in text:
            continue
        calls = [
            node
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("write_result", "default_path")
        ]
        names = {(node.func.id, node.args[0].value) for node in calls if isinstance(node.args[0], ast.Constant)}  # type: ignore[attr-defined]
        assert names == {("write_result", path.stem), ("default_path", path.stem)}, path.name


def test_the_package_s_sizes_and_install_time_are_in_the_headline(tmp_path: Path) -> None:
    provenance = {key: value for key, value in planted()["bench_engine"].items() if key in report.PROVENANCE}
    deb = {**provenance, "tool": "deb_package", "command": "sudo bash scripts/test-deb.sh"}
    deb |= {
        "amd64": {"deb_mb": 108.8, "installed_mb": 256.7, "apt_install_s": 16.6},
        "arm64": {"deb_mb": 101.5, "apt_install_s": 162.3},
    }
    folder = _plant(tmp_path, {"deb_package": deb})
    assert _report(folder) == 0
    readme = (folder / "README.md").read_text()
    # arm64 (the boards') first; a figure the run did not record is left out, not shown as zero
    assert "| Debian package, arm64 | package size | 101.5 MB | - | - | - |" in readme
    assert "| Debian package, amd64 | installed size | 256.7 MB | - | - | - |" in readme
    assert "| Debian package, amd64 | apt install in a fresh Debian 12 | 16.600 s | - | - | - |" in readme
    assert readme.index("arm64 | package size") < readme.index("amd64 | package size")
    assert "arm64 | installed size" not in readme
    assert "| Debian package, arm64 | apt install in a fresh Debian 12 (under qemu here) | 162.3 s |" in readme
    assert "- `deb_package`: commit `0123456789ab`" in readme
