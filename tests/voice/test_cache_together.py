"""Several processes starting on one cold model cache (a board's zones, a rig's speakers).

Each made the voice's split and optimised models itself and replaced the others' files; one's
clean-up of what it took for stale forms then deleted what another was about to open, and a
daemon of tests/daemon/test_sync_zones.py started on clips only ("voice model not found: ...
.split-....front.onnx").  Under the cache's lock the split is made once and every process
gets the same voice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from support.paths import ROOT

_CHILD = r"""
import json, logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
from edgetts.engine import SynthesisConfig
from edgetts.voice.catalog import default_voice_path
from edgetts.voice.onnx_session import RuntimeOptions
from edgetts.voice.piper.voice import PiperVoice
from edgetts.voice.piper.windows import StreamingOptions
voice = PiperVoice.load(default_voice_path(), runtime=RuntimeOptions(threads=1), cache_dir=Path(sys.argv[1]),
                        streaming=StreamingOptions())
audio = [c.audio.tolist() for c in voice.synthesize("Doors are closing.", SynthesisConfig(seed=7))]
print(json.dumps({"split": voice.split is not None, "audio": sum(audio, [])}))
"""

PROCESSES = 4


def test_processes_starting_together_make_the_split_once_and_all_stream(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ORT_DISABLE_TELEMETRY": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(cache)],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(PROCESSES)
    ]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    logs = "".join(err for _, err in outs)
    assert all(r["split"] for r in results), logs[-3000:]  # none fell back to whole sentences
    assert logs.count("for streaming") == 1, logs[-3000:]  # one made it, the others read it
    assert "rebuilding" not in logs and "dropping" not in logs, logs[-3000:]
    first = np.asarray(results[0]["audio"])
    assert first.size > 10000
    for r in results[1:]:
        np.testing.assert_array_equal(np.asarray(r["audio"]), first)
