"""`edgetts render` prepares each phrase once, as the daemon's admission does (issue 12)."""

from __future__ import annotations

import io
from pathlib import Path

from edgetts.cli.render import Item, render
from edgetts.config import load_config
from edgetts.daemon.playout.phrase_cache import PhraseCache

from support.fakes import PreparationSpy

PLAIN = "The next train departs at 9:42 from platform 2."
SSML = '<speak>Mind the gap at platform <say-as interpret-as="cardinal">4</say-as>.</speak>'


def test_render_prepares_each_phrase_once(tmp_path: Path, test_voices: dict[str, Path], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    config_file = tmp_path / "edgetts.yaml"
    config_file.write_text(
        f"voice:\n  model: {test_voices['ok']}\n  threads: 1\n  noise_scale: 0\n  noise_w: 0\n"
        f"cache:\n  dir: {tmp_path / 'cache'}\n  max_mb: 50\n"
    )
    config = load_config(config_file)
    cache = PhraseCache(tmp_path / "cache", 50_000_000)
    items = [Item(PLAIN, config.voice.name, where="a:1"), Item(SSML, config.voice.name, where="a:2")]
    spy = PreparationSpy(monkeypatch)
    err = io.StringIO()
    first = render(items, config, cache, None, err=err)
    assert (first.rendered, first.failed) == (2, 0), err.getvalue()
    assert spy.parsed.count(SSML) == 1 and spy.normalised.count(PLAIN) == 1
    assert spy.normalised_with("Mind the gap") == 1
    again = render(items, config, cache, None, err=err)  # hits: prepared for the key only
    assert (again.cached, again.rendered) == (2, 0)
    assert spy.parsed.count(SSML) == 2 and spy.normalised.count(PLAIN) == 2
