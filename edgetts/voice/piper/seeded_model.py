"""A Piper voice's whole model with seeded noise (:mod:`.seeded_noise`), as a graph transform.

The optimised-model cache keeps the seeded graph's optimised form under the voice file's own
cache name with the transform's tag in its key (:func:`edgetts.voice.model_cache.cache_key`), so
the graph is parsed and transformed once per voice file, not on every load (a second or more on
a Pi for a 60 MB voice), and the unseeded form of an older edgetts is replaced.  Without a cache
directory it is transformed on every load.
"""

from __future__ import annotations

import logging
from pathlib import Path

from edgetts.errors import VoiceError
from edgetts.voice.onnx_session import GraphTransform
from edgetts.voice.piper.seeded_noise import VERSION, SeededNoiseError, add_seeded_noise

_LOGGER = logging.getLogger(__name__)


def _seeded_graph(model_path: Path) -> bytes | None:
    """The seeded graph, serialised; None when the graph draws no random numbers."""
    import onnx

    try:
        model = onnx.load(str(model_path))
    except Exception as err:  # a corrupt file: onnxruntime's own load reports it as usual
        _LOGGER.debug("%s: not transformed: %s", model_path, err)
        return None
    try:
        replaced = add_seeded_noise(model)
    except SeededNoiseError as err:
        raise VoiceError(f"{model_path}: cannot seed the voice's noise: {err}") from err
    _LOGGER.debug("%s: %d random node(s) seeded", model_path, replaced)
    return model.SerializeToString() if replaced else None


SEEDED_NOISE = GraphTransform(tag=f"seeded-noise-{VERSION}", apply=_seeded_graph)
"""What a Piper voice's whole model is loaded with (``create_session(..., transform=SEEDED_NOISE)``)."""
