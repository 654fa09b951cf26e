"""Fast start: a long first sentence starts from the encoder run on its first ids (issue 4, #14).

The text encoder attends over the whole sentence, so a sentence's first audio
normally waits for the encoder over all of it (on a Pi 4 ~0.8 s for 240 ids).
Fast start runs the front on the first N ids, decodes the first windows from
the frames of its first K ids, then runs the front on the whole sentence and
continues from id K with the whole sentence's frames spliced after the
prefix's: everything from the splice on is what whole-sentence decoding
computes.  See docs/streaming.md, "Fast start".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import numpy as np

from edgetts.engine import SynthesisConfig
from edgetts.voice.piper.graph_split import SplitModels
from edgetts.voice.piper.lead import Windows
from edgetts.voice.piper.model_config import PiperVoiceConfig
from edgetts.voice.piper.speed import SpeedModel
from edgetts.voice.piper.streaming import (
    FLOW_REACH,
    Latent,
    WindowWorkers,
    decode_jobs,
    splice_frames,
    window_jobs,
)
from edgetts.voice.piper.windows import SeamJoiner, StreamingOptions, fast_start_kept, plan_windows, window_size


class SplitVoice(Protocol):
    """What fast start needs of a split Piper voice (:class:`~edgetts.voice.piper.voice.PiperVoice`)."""

    split: SplitModels | None
    config: PiperVoiceConfig
    speed: SpeedModel

    def front(self, ids: Sequence[int], config: SynthesisConfig, names: list[str]) -> dict[str, np.ndarray]: ...

    def flow_runner(self) -> Callable[[dict[str, np.ndarray]], np.ndarray] | None: ...

    def decode(self, feeds: dict[str, np.ndarray]) -> np.ndarray: ...

    def window_workers(self) -> WindowWorkers | None: ...


def word_ends(ids: Sequence[int], space: int) -> tuple[int, ...]:
    """Positions of the word separator ``space`` in ``ids``: where fast start may end its kept ids."""
    return tuple(k for k, i in enumerate(ids) if i == space)


def kept_ids(ids: Sequence[int], limit: int, space: int) -> int:
    """K of a ``limit``-id prefix of ``ids`` (:func:`.windows.fast_start_kept`)."""
    return fast_start_kept(limit, word_ends(ids, space))


def stream_fast(
    voice: SplitVoice,
    ids: Sequence[int],
    config: SynthesisConfig,
    options: StreamingOptions,
    schedule: Windows | None = None,
    on_frames: Callable[[int, int], None] | None = None,
) -> Iterator[tuple[np.ndarray, bool]] | None:
    """The sentence's raw audio windows with fast start, each with "is it the last"; None when the
    prefix is too short to hold a first window (then the exact path runs).  ``on_frames``: told
    (frames, of how many first ids) after the prefix's front (of the ids it keeps) and after the
    whole sentence's."""
    split = voice.split
    assert split is not None and split.durations
    schedule = schedule or Windows(options.first_frames, options.growth, options.fast_start_ids)
    limit = schedule.prefix or options.fast_start_ids
    keep = kept_ids(ids, limit, voice.config.space_id)
    prefix = voice.front(ids[:limit], config, [*split.front_outputs, split.durations])
    durations = prefix.pop(split.durations).reshape(-1)
    kept = int(durations[:keep].sum())
    # Windows of the prefix end where the flow and the decoder would start to see its end.
    safe = kept - FLOW_REACH - split.margin
    if safe < 2 * options.first_frames:
        return None
    told = on_frames or (lambda frames, of_ids: None)
    told(kept, keep)  # what the plan reckons the head from: the kept ids' own frames
    jobs = _jobs(voice, ids, config, options, schedule, prefix, (keep, kept, safe), told)
    return _windows(voice, options, jobs)


def _windows(
    voice: SplitVoice,
    options: StreamingOptions,
    jobs: Iterator[tuple[tuple[int, int, int, bool, bool], dict[str, np.ndarray]]],
) -> Iterator[tuple[np.ndarray, bool]]:
    """The windows of ``jobs`` (:func:`_jobs`) decoded in order, their seams joined."""
    split = voice.split
    assert split is not None
    joiner = SeamJoiner(split.hop, min(options.crossfade, 2 * split.margin * split.hop))
    for (lo, start, end, final, last), audio in decode_jobs(voice.decode, jobs, voice.window_workers()):
        yield joiner.piece(audio, lo, start, end, final), last


def _whole_front(voice: SplitVoice, ids: Sequence[int], config: SynthesisConfig) -> dict[str, np.ndarray]:
    """The whole sentence's front outputs, what it took told to the speed model (the plan reckons
    this run apart: it runs while the prefix's windows decode)."""
    split = voice.split
    assert split is not None
    predicted = voice.speed.cost("front")(len(ids))
    started = time.perf_counter()
    whole = voice.front(ids, config, [*split.front_outputs, split.durations])
    voice.speed.record_busy_front(predicted, time.perf_counter() - started)
    return whole


def _jobs(
    voice: SplitVoice,
    ids: Sequence[int],
    config: SynthesisConfig,
    options: StreamingOptions,
    schedule: Windows,
    prefix: dict[str, np.ndarray],
    cut: tuple[int, int, int],
    told: Callable[[int, int], None],
) -> Iterator[tuple[tuple[int, int, int, bool, bool], dict[str, np.ndarray]]]:
    """Each window's (lo, start, end, ends the sentence, is the last) and decoder inputs: the
    prefix's windows, then (the whole sentence's front run meanwhile) the rest."""
    keep, kept, safe = cut
    split = voice.split
    assert split is not None
    prefix_frames = max(v.shape[-1] for v in prefix.values())
    head = {k: np.ascontiguousarray(v[..., :kept]) if v.shape[-1] == prefix_frames else v for k, v in prefix.items()}
    flow = voice.flow_runner()
    windows = plan_windows(safe, schedule.first, schedule.growth, options.max_frames)
    head_latent = Latent(head, flow, split.frame_inputs[0], split.flow_margin)
    for start, end in windows:
        lo, hi = max(0, start - split.margin), end + split.margin
        yield (lo, start, end, False, False), head_latent.window(lo, hi)
    # The whole sentence, spliced after the prefix's first `keep` ids.  With window workers its
    # front runs here while the prefix's last windows decode.
    whole = _whole_front(voice, ids, config)
    spliced = splice_frames(head, whole, whole.pop(split.durations), keep)
    latent = Latent(spliced, flow, split.frame_inputs[0], FLOW_REACH)
    told(latent.frames, len(ids))
    # The flow frames of the prefix windows saw FLOW_REACH frames of what follows them in the
    # spliced sentence too (the prefix's own frames): they are reused, not run again.
    latent.adopt(head_latent, safe + split.margin)
    # The schedule goes on where the prefix's windows left it: the prefix's audio is in hand, so
    # starting small again would only add seams.
    following = window_size(len(windows), schedule.first, schedule.growth, options.max_frames)
    rest = [
        (safe + a, safe + b)
        for a, b in plan_windows(latent.frames - safe, following, schedule.growth, options.max_frames)
    ]
    for index, ((lo, start, end), feeds) in enumerate(window_jobs(latent, split.margin, rest)):
        yield (lo, start, end, end >= latent.frames, index == len(rest) - 1), feeds
