"""Process heap settings made where sessions are built (issue 14: peak RSS)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_PROBE = """
from edgetts.voice.catalog import default_voice_path
from edgetts.voice.onnx_session import RuntimeOptions, create_session, fix_mmap_threshold
create_session(default_voice_path(), RuntimeOptions(threads=1, optimization="disable"))
result = fix_mmap_threshold()  # a cache hit if the session made the call
print(fix_mmap_threshold.cache_info().hits, result)
"""


def _probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env={**clean, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return out.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_building_a_session_fixes_the_mmap_threshold_unless_the_operator_did() -> None:
    # In a fresh process: building the session made the one call, and it set the threshold.
    assert _probe() == "1 True"
    # MALLOC_MMAP_THRESHOLD_ already fixes it the operator's way: left alone.
    assert _probe(MALLOC_MMAP_THRESHOLD_="262144") == "1 False"


def test_only_large_runs_give_the_arena_back() -> None:
    # Issue 14: shrinking after every run cost 7-8 % CPU; a streamed voice's small runs keep their blocks.
    import onnxruntime as ort

    from edgetts.voice.onnx_session import SHRINK_ABOVE, RuntimeOptions, run_options

    key = "memory.enable_memory_arena_shrinkage"

    def shrinks(options: RuntimeOptions, size: int | None) -> bool:
        try:
            return run_options(options, size).get_run_config_entry(key) == "cpu:0"
        except (RuntimeError, ort.capi.onnxruntime_pybind11_state.Fail):
            return False

    options = RuntimeOptions()
    assert not shrinks(options, 140) and not shrinks(options, SHRINK_ABOVE)
    assert shrinks(options, SHRINK_ABOVE + 1) and shrinks(options, None)
    assert not shrinks(RuntimeOptions(arena_shrinkage=False), 10_000)
