"""The check sentences of a Piper voice: what a graph split is checked and calibrated on."""

from __future__ import annotations

import numpy as np

from edgetts.text.prepare import TextOptions
from edgetts.voice.piper.frontend import PiperFrontend
from edgetts.voice.piper.model_config import PiperVoiceConfig

CHECK_TEXT = (
    "Attention please. The next train to arrive at platform two is the service to Edinburgh. "
    "Please stand clear of the closing doors. Mind the gap!"
)
"""Sentences that check a split graph and measure a voice's streaming gain (docs/streaming.md)."""


def check_feeds(config: PiperVoiceConfig) -> list[dict[str, np.ndarray]]:
    """Model inputs of the check sentences at noise 0 (deterministic), for the graph split."""
    frontend = PiperFrontend(config, TextOptions(normalize=False))
    scales = np.array([0.0, config.length_scale, 0.0], dtype=np.float32)
    feeds: list[dict[str, np.ndarray]] = []
    for ids in frontend.sentence_ids(CHECK_TEXT):
        feed: dict[str, np.ndarray] = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": scales,
        }
        if config.num_speakers > 1:
            feed["sid"] = np.array([config.default_speaker_id], dtype=np.int64)
        feeds.append(feed)
    return feeds
