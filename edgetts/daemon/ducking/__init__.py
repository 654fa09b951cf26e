"""Ducking: other audio lowered while edgetts plays, and brought back after it (docs/ducking.md).

``control`` is the loop's side (:class:`Ducking`); ``worker`` the thread per mixer that fades,
holds and restores; ``journal`` the record of what was lowered, for a restart after a kill;
``pulse``, ``mpd`` and ``snapcast`` the mixers.
"""

from edgetts.daemon.ducking.control import Ducking
from edgetts.daemon.ducking.worker import DuckReport

__all__ = ["DuckReport", "Ducking"]
