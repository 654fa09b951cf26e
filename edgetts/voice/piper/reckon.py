"""A text's playback lead reckoned again as its sentences' frames become known (issue 14).

:func:`.lead.plan_text` plans from frames predicted from ids; the voice tells what each front
gave as it runs, and the lead is reckoned from that (:class:`Reckoner`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from edgetts.voice.piper.lead import Item, Shape, Windows, lead_s
from edgetts.voice.piper.speed import SpeedModel


class Reckoner:
    """A text's lead as its sentences' frames become known (by the voice, as each front runs).

    :meth:`lead` is the first chunk's (with whatever frames are known by then).  On fast start's
    path the first sentence's frames are only partly known then (its prefix's); once its whole front
    has run, :meth:`more` reckons the lead again, and if that ends later than the first one, how
    much longer from now playback must wait: a hold not yet over is extended (a sentence longer
    than predicted has its last windows later than predicted, and a held start costs no more
    than a later one, while a stop mid-word is what the lead is for)."""

    def __init__(
        self, items: Sequence[Item], shape: Shape, speed: SpeedModel, windows: Sequence[Windows | None], offset: int = 0
    ) -> None:
        """``offset``: the plan index of ``items[0]`` (what :meth:`teller` is asked with)."""
        self._items, self._shape, self._speed, self._windows = items, shape, speed, windows
        self._offset = offset
        self._whole: dict[int, int] = {}
        self._prefix: dict[int, tuple[int, int]] = {}
        self._at: float | None = None
        self._first = 0.0
        self._partial: set[int] = set()

    def teller(self, index: int) -> Callable[[int, int], None]:
        """What the voice tells of the sentence at plan ``index``: (frames, of how many first ids)."""

        def told(frames: int, of_ids: int) -> None:
            if of_ids < self._items[index - self._offset].ids:
                self._prefix[index] = (frames, of_ids)
            else:
                self._whole[index] = frames

        return told

    def lead(self) -> float:
        """The lead of the first chunk, produced now."""
        self._at = time.monotonic()
        self._partial = set(self._prefix) - set(self._whole)
        self._first = self._reckon()
        return self._first

    def more(self) -> float:
        """0, or once the sentences only partly known at the first chunk are known whole, how long
        from now playback must still wait (0 if the first lead already covers them)."""
        if self._at is None or not self._partial or not self._partial <= set(self._whole):
            return 0.0
        self._partial = set()
        lead = self._reckon()
        return max(0.0, self._at + lead - time.monotonic()) if lead > self._first + 1e-3 else 0.0

    def _reckon(self) -> float:
        known = [
            replace(
                item, frames=self._whole.get(self._offset + k, 0), prefix=self._prefix.get(self._offset + k, (0, 0))
            )
            for k, item in enumerate(self._items)
        ]
        return lead_s(known, self._shape, self._speed, self._windows)
