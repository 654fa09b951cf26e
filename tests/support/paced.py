"""The paced sink (tools/paced_sink.py: a private PulseAudio null sink with a real clock) as a fixture.

Unlike the ALSA file plugin (support.alsa), it consumes audio at the sink's rate, so a player
fed too slowly underruns and its recording shows the hole.  One implementation lives in tools/
(benchmarks use it too), imported as tools.paced_sink.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tools.paced_sink import PacedSink, available


@pytest.fixture(scope="module")
def paced_sink(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PacedSink]:
    """A running paced sink at 22050 Hz mono; ``paced_sink.env`` routes ALSA clients to it."""
    missing = available()
    if missing:
        pytest.skip(f"paced sink unavailable: {missing} not installed (scripts/system-deps.sh --test)")
    with PacedSink(tmp_path_factory.mktemp("paced")) as sink:
        yield sink
