"""A Piper model's inputs: the one place they are built (:func:`model_feeds`, every run's), and
those of the check sentences a graph split is checked and calibrated on."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgetts.text.prepare import TextOptions
from edgetts.voice.piper.frontend import PiperFrontend
from edgetts.voice.piper.model_config import PiperVoiceConfig
from edgetts.voice.piper.seeded_noise import NOISE_SEED_INPUT

CHECK_TEXT = (
    "Attention please. The next train to arrive at platform two is the service to Edinburgh. "
    "Please stand clear of the closing doors. Mind the gap!"
)
"""Sentences that check a split graph and measure a voice's streaming gain (docs/streaming.md)."""


def model_feeds(
    ids: Sequence[int], scales: np.ndarray, speaker: int | None = None, noise_seed: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """The inputs of one run on one sentence's ``ids``: ``scales`` (noise, length, noise_w), the
    ``speaker`` of a model with a ``sid`` input, the ``noise_seed`` feed of a seeded graph
    (:func:`.seeded_noise.seed_feed`)."""
    feeds: dict[str, np.ndarray] = {
        "input": np.asarray(ids, dtype=np.int64)[np.newaxis, :],
        "input_lengths": np.array([len(ids)], dtype=np.int64),
        "scales": np.asarray(scales, dtype=np.float32),
    }
    if speaker is not None:
        feeds["sid"] = np.array([speaker], dtype=np.int64)
    if noise_seed is not None:
        feeds[NOISE_SEED_INPUT] = noise_seed
    return feeds


def check_feeds(config: PiperVoiceConfig) -> list[dict[str, np.ndarray]]:
    """Model inputs of the check sentences at noise 0 (deterministic), for the graph split."""
    frontend = PiperFrontend(config, TextOptions(normalize=False))
    scales = np.array([0.0, config.length_scale, 0.0], dtype=np.float32)
    speaker = config.default_speaker_id if config.num_speakers > 1 else None
    return [model_feeds(ids, scales, speaker) for ids in frontend.sentence_ids(CHECK_TEXT)]
