"""tools/sherpa_voice.py's conversion of the default voice, spoken by sherpa-onnx 2.0.1 (issue 14's second peer).

sherpa-onnx runs in a child process: it brings its own libonnxruntime, and this process has
onnxruntime's Python module loaded for edgetts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgetts.engine import SynthesisConfig

from support.paths import ROOT

RATE = 22050
SHORT = "Mind the gap."
TWO = "Mind the gap. Please stand clear of the doors."

# argv: converted voice dir, output .npz, texts... (run with the root as cwd: tools.* import from there).
# Speaks each text with bench_sherpa's engine at 1 thread and zero noise; saves each text's audio and
# its chunk (callback) sizes.
_SPEAK = """
import json, sys
from pathlib import Path
import numpy as np
from tools import sherpa_voice
from tools.bench_sherpa import SherpaEngine
engine = SherpaEngine(sherpa_voice.load(Path(sys.argv[1])), threads=1, zero_noise=True)
audio, sizes = {}, []
for i, text in enumerate(sys.argv[3:]):
    chunks = engine.chunks(text)
    audio[f"text{i}"] = np.concatenate([a for a, _ in chunks]) if chunks else np.zeros(0, np.float32)
    sizes.append([len(a) for a, _ in chunks])
np.savez(sys.argv[2], **audio)
print(json.dumps({"sample_rate": engine.sample_rate, "chunk_sizes": sizes}))
"""


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sherpa-voice")
    subprocess.run(
        [sys.executable, "-m", "tools.sherpa_voice", str(out)], cwd=ROOT, check=True, timeout=300, capture_output=True
    )
    return out


@pytest.fixture(scope="module")
def sherpa_speech(converted: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list[np.ndarray]]:
    npz = tmp_path_factory.mktemp("sherpa-audio") / "audio.npz"
    done = subprocess.run(
        [sys.executable, "-c", _SPEAK, str(converted), str(npz), SHORT, TWO],
        cwd=ROOT,
        check=True,
        timeout=300,
        capture_output=True,
        text=True,
    )
    info = json.loads(done.stdout.strip().splitlines()[-1])
    with np.load(npz) as saved:
        return info, [saved["text0"], saved["text1"]]


def _envelope(audio: np.ndarray, hop: int = 256) -> np.ndarray:
    """RMS per 256-sample frame (~12 ms)."""
    frames = audio[: len(audio) // hop * hop].reshape(-1, hop)
    return np.sqrt((frames.astype(np.float64) ** 2).mean(axis=1))


def test_conversion_adds_sherpa_metadata_and_keeps_the_voice(converted: Path) -> None:
    import onnx

    from tools.sherpa_voice import default_voice_files

    source_model, source_config = default_voice_files()
    model = onnx.load(str(converted / "model.onnx"))
    meta = {p.key: p.value for p in model.metadata_props}
    assert {
        k: meta[k] for k in ("model_type", "comment", "voice", "has_espeak", "n_speakers", "sample_rate", "add_blank")
    } == {
        "model_type": "vits",
        "comment": "piper",
        "voice": "en-us",
        "has_espeak": "1",
        "n_speakers": "1",
        "sample_rate": str(RATE),
        "add_blank": "0",
    }
    assert meta["language"] == "English" and "," in meta["punctuation"].split()
    # The same voice: graph and weights byte for byte, only metadata added.
    original = onnx.load(str(source_model))
    assert model.graph.SerializeToString() == original.graph.SerializeToString()
    assert not original.metadata_props
    # tokens.txt is the voice's phoneme_id_map (the space symbol is a line that is only its id).
    id_map = json.loads(source_config.read_text(encoding="utf-8"))["phoneme_id_map"]
    tokens = {}
    for line in (converted / "tokens.txt").read_text(encoding="utf-8").splitlines():
        symbol, _, number = line.rpartition(" ")
        tokens[symbol if symbol else " "] = int(number)
    assert tokens == {s: ids[0] for s, ids in id_map.items()}


def test_conversion_is_skipped_when_up_to_date(converted: Path) -> None:
    from tools.sherpa_voice import convert, default_voice_files, is_up_to_date

    before = (converted / "model.onnx").stat().st_mtime_ns
    assert is_up_to_date(converted, *default_voice_files())
    convert(converted)
    assert (converted / "model.onnx").stat().st_mtime_ns == before


def test_sherpa_speaks_the_converted_voice_like_edgetts(
    sherpa_speech: tuple[dict, list[np.ndarray]], raw_voice
) -> None:  # type: ignore[no-untyped-def]
    info, (short, two) = sherpa_speech
    assert info["sample_rate"] == RATE
    seconds = len(short) / RATE
    assert 0.5 < seconds < 2.5, seconds  # three words
    assert np.abs(short).max() > 0.1  # speech, not silence
    # edgetts, whole sentences, normaliser off, zero noise: the same phoneme ids on the same model.
    ours = np.concatenate([c.audio for c in raw_voice.synthesize(SHORT, SynthesisConfig(noise_scale=0.0, noise_w=0.0))])
    assert abs(len(short) - len(ours)) <= 0.15 * len(ours), (len(short), len(ours))
    a, b = _envelope(short), _envelope(ours)
    n = min(len(a), len(b))
    assert np.corrcoef(a[:n], b[:n])[0, 1] > 0.9
    # Closer still: the waveforms themselves (edgetts peak-normalises, sherpa does not: scale aside).
    n = min(len(short), len(ours))
    assert np.corrcoef(short[:n], ours[:n])[0, 1] > 0.98
    # Two sentences come back as two callbacks (progressive: the bench's first audio is the first).
    sizes = info["chunk_sizes"][1]
    assert len(sizes) == 2 and sum(sizes) == len(two)
    assert abs(sizes[0] - len(short)) <= 0.05 * len(short)  # the first is "Mind the gap."
