"""The flow's runs for a streamed sentence: exact, and no frame computed twice that need not be (issue 14).

The flow is a fifth of a streamed sentence's CPU and its spans cost more than one whole run (each
reaches FLOW_REACH frames back and ahead).  A first window's short, close run is worth it only
while the window is small: past that, the next run has to start at frame 0 again and recompute it.
"""

from __future__ import annotations

import numpy as np
import pytest

from edgetts.engine import SynthesisConfig
from edgetts.text.prepare import TextOptions
from edgetts.voice.catalog import default_voice_path
from edgetts.voice.onnx_session import RuntimeOptions
from edgetts.voice.piper.streaming import FLOW_CHUNK, FLOW_REACH, Latent, flow_span
from edgetts.voice.piper.voice import PiperVoice

RAW = SynthesisConfig(noise_scale=0.0, noise_w=0.0, normalize_audio=False)
LONG = (
    "The next train to arrive at platform two is the ten fifteen service to Manchester Piccadilly, "
    "calling at all stations except Stockport and Wilmslow, and it is formed of eight coaches."
)


def test_a_small_first_window_gets_a_short_close_run() -> None:
    # 4 frames + 6 of decoder margin, 12 of flow margin: first audio waits for 22 frames of flow only.
    assert flow_span(0, 10, 400, 12, first=True) == (0, 22, 10)
    # The largest first window where a close run still pays: 2 * FLOW_REACH - margin.
    assert flow_span(0, 36, 400, 12, first=True) == (0, 48, 36)


def test_a_large_first_window_gets_an_exact_run_over_what_it_asks() -> None:
    hi = 134  # a later sentence's first window of 128 frames, with its decoder margin
    assert flow_span(0, hi, 400, 12, first=True) == (0, hi + FLOW_REACH, hi)
    # The rest shorter than half a chunk: one run over the whole sentence.
    frames = hi + FLOW_CHUNK // 2 - 1
    assert flow_span(0, hi, frames, 12, first=True) == (0, frames, frames)


def test_later_runs_go_on_from_the_exact_frames() -> None:
    assert flow_span(134, 262, 400, 12, first=False) == (134 - FLOW_REACH, 400, 400)
    assert flow_span(10, 42, 400, 12, first=False) == (0, 84 + FLOW_REACH, 84)


@pytest.fixture(scope="module")
def voice(tmp_path_factory: pytest.TempPathFactory) -> PiperVoice:
    loaded = PiperVoice.load(
        default_voice_path(),
        runtime=RuntimeOptions(threads=2),
        text=TextOptions(normalize=False),
        cache_dir=tmp_path_factory.mktemp("split"),
        streaming=True,
    )
    assert loaded.split is not None and loaded.split.flow is not None
    return loaded


def _latent(voice: PiperVoice, runs: list[int]) -> tuple[Latent, dict[str, np.ndarray]]:
    assert voice.split is not None
    sentence = next(item for item in voice.frontend.plan(LONG) if hasattr(item, "phonemes"))
    front = voice.front(voice.frontend.phoneme_ids(sentence.phonemes), RAW, list(voice.split.front_outputs))
    flow = voice.flow_runner()
    assert flow is not None

    def recorded(feeds: dict[str, np.ndarray]) -> np.ndarray:
        runs.append(max(v.shape[-1] for v in feeds.values()))
        return flow(feeds)

    return Latent(front, recorded, voice.split.frame_inputs[0], voice.split.flow_margin), front


@pytest.mark.parametrize("first", [10, 134])
def test_windows_see_what_one_whole_flow_run_gives_and_compute_little_twice(voice: PiperVoice, first: int) -> None:
    """A first window of ``first`` frames (with margin), then the rest in 128-frame windows: every
    window after the first is the whole run's to float rounding, so is a large first window (its run
    is exact), and the flow computes at most what its spans' reach requires."""
    runs: list[int] = []
    latent, front = _latent(voice, runs)
    whole = voice.flow_runner()(front)  # type: ignore[misc]
    assert latent.frames > first + FLOW_CHUNK, "the sentence must need more than two runs"
    [(name, head)] = latent.window(0, first).items()
    bounds = [first, *range(first + 128, latent.frames, 128), latent.frames]
    later = [latent.window(lo, hi)[name] for lo, hi in zip(bounds, bounds[1:])]
    np.testing.assert_allclose(np.concatenate(later, axis=-1), whole[..., first:], atol=1e-4)
    if first > 2 * FLOW_REACH - voice.split.flow_margin:  # type: ignore[union-attr]
        np.testing.assert_allclose(head, whole[..., :first], atol=1e-4)
    computed = sum(runs)
    # Each run after the first reaches FLOW_REACH back and ahead; the first, close or exact, ahead only.
    assert computed <= latent.frames + FLOW_REACH + 2 * FLOW_REACH * (len(runs) - 1) + (
        first + voice.split.flow_margin if first <= 2 * FLOW_REACH - voice.split.flow_margin else 0
    )  # type: ignore[union-attr]


def test_a_large_first_window_no_longer_recomputes_its_frames(voice: PiperVoice) -> None:
    """Before, a 134-frame first window's close run was followed by a run from frame 0: its frames
    were computed twice.  Now the second run starts FLOW_REACH before where the first one ended."""
    runs: list[int] = []
    latent, _ = _latent(voice, runs)
    latent.window(0, 134)
    latent.window(128, 262)
    assert runs[0] == 134 + FLOW_REACH
    assert runs[1] <= latent.frames - (134 - FLOW_REACH)
