"""A Piper voice speaks a Prepared text as prepared, and only when it was prepared its way (issue 12)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgetts.engine import SynthesisConfig
from edgetts.errors import UnspeakableTextError
from edgetts.text.normalize import NormalizeOptions
from edgetts.text.prepare import Prepared, Speak, TextOptions, prepare_text
from edgetts.voice.piper import frontend as frontend_mod

from support.paths import corpus_lines

DETERMINISTIC = SynthesisConfig(noise_scale=0.0, noise_w=0.0)


@pytest.fixture()
def preparations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the Piper front end prepares itself (edgetts.text.prepare.prepare, as it calls it)."""
    seen: list[str] = []
    real = frontend_mod.prepare

    def spy(text: str, **kwargs: Any) -> Any:
        seen.append(text)
        return real(text, **kwargs)

    monkeypatch.setattr(frontend_mod, "prepare", spy)
    return seen


def test_prepared_with_the_voice_options_is_not_prepared_again(default_voice, preparations) -> None:  # type: ignore[no-untyped-def]
    options = default_voice.frontend.text
    # segments that are not the source's reading: the voice speaks what was prepared, as prepared
    told = Prepared("Hello.", (Speak("Goodbye now."),), options)
    assert default_voice.frontend.plan(told) == default_voice.frontend.plan("Goodbye now.")
    assert preparations == ["Goodbye now."]  # the str was prepared; the Prepared was not


def test_prepared_otherwise_is_read_as_the_voice_reads_it(default_voice, preparations) -> None:  # type: ignore[no-untyped-def]
    raw = prepare_text("Platform 4 at 14:05.", TextOptions(normalize=False))
    assert raw.segments == (Speak("Platform 4 at 14:05."),)
    assert default_voice.frontend.plan(raw) == default_voice.frontend.plan("Platform 4 at 14:05.")
    assert preparations == ["Platform 4 at 14:05.", "Platform 4 at 14:05."]  # the source, by the voice
    twelve = prepare_text("14:05.", TextOptions(normalize_options=NormalizeOptions(time_24h="12h")))
    assert default_voice.frontend.plan(twelve) != default_voice.frontend.plan(
        Prepared("14:05.", twelve.segments, default_voice.frontend.text)
    )  # never the other options' reading


def test_prepared_audio_equals_the_text_audio(default_voice, preparations) -> None:  # type: ignore[no-untyped-def]
    line = corpus_lines()[1]
    prepared = prepare_text(line, default_voice.frontend.text)
    got = [c.audio for c in default_voice.synthesize(prepared, DETERMINISTIC)]
    assert preparations == []
    want = [c.audio for c in default_voice.synthesize(line, DETERMINISTIC)]
    assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def test_unspeakable_prepared_text_names_its_source(default_voice) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UnspeakableTextError, match=r"nothing speakable in '\.\.\. !!!'"):
        next(iter(default_voice.synthesize(prepare_text("... !!!", default_voice.frontend.text))))
