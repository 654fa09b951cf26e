"""The start-up heap frozen out of the collector's way (edgetts.runtime.heap)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from edgetts.runtime.heap import freeze_startup_heap


@pytest.fixture()
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the rest of the suite collects as usual


class _Loaded:
    """Stands for what a loaded voice leaves on the heap."""


def test_what_start_up_left_is_out_of_every_later_collection(unfrozen: None) -> None:
    loaded = [_Loaded() for _ in range(10_000)]
    for item in loaded:
        item.me = item  # type: ignore[attr-defined]  # a cycle: only the collector could free it
    marker = loaded[0]
    assert any(o is marker for o in gc.get_objects())  # the collector walks it
    frozen = freeze_startup_heap()
    # (a thread left by an earlier test in this worker may free a frozen object meanwhile: never more)
    assert frozen >= len(loaded) and len(loaded) <= gc.get_freeze_count() <= frozen
    # A full collection walks the generations only: start-up's objects are in none of them now.
    assert not any(o is marker for o in gc.get_objects())
    later = _Loaded()
    assert any(o is later for o in gc.get_objects())  # what comes after is collected as usual
