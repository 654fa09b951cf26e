"""The loop's side of degrading (issue 14): speed samples in, `degraded: speed` and the variant out.

:class:`Degrade` belongs to the play-out (edgetts.daemon.playout.play), so the
one loop decides, from the :class:`~edgetts.daemon.pacing.speed.Governor`'s last
minute of runs and the assets in force, which voice speaks an announcement.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from edgetts.daemon.assets import Assets
from edgetts.daemon.health import Health
from edgetts.daemon.pacing.int8 import Int8Wanted
from edgetts.daemon.pacing.speed import Governor, Plan, SpeedSample
from edgetts.daemon.pacing.variants import Variant

_LOGGER = logging.getLogger(__name__)


def speed_plans(assets: Assets) -> dict[str, Plan]:
    """Each loaded voice's limit and the variant (degrade_to as configured) that is loaded for it."""
    settings = assets.config.all_voices()
    plans = {}
    for name in assets.voices:
        if name in settings:
            variant = assets.variant(name)
            plans[name] = Plan(settings[name].degrade_rtf, variant.label if variant is not None else None)
    return plans


class Degrade:
    """Which voices are too slow, and what speaks for them; says so in `degraded: speed`."""

    def __init__(self, health: Health, governor: Governor | None = None) -> None:
        self._health = health
        self.governor = governor or Governor()
        self.make_int8: Callable[[Int8Wanted], object] | None = None
        """Asked for a voice found too slow whose `degrade_to: int8` variant is not made yet
        (the loop's edgetts.daemon.pacing.int8.Int8Builder)."""

    def on_sample(self, sample: SpeedSample, assets: Assets) -> None:
        """From the loop: a synthesis run ended."""
        self.governor.add(sample)
        self.refresh(assets)
        self._health.changed()  # the status shows the speed

    def refresh(self, assets: Assets) -> None:
        """Decide again (runs age out of the window; a reload changes voices and limits)."""
        reason = self.governor.update(speed_plans(assets), assets.speed_cost)
        if self.make_int8 is not None:
            for name in self.governor.too_slow():
                if name in assets.int8_wanted:
                    self.make_int8(assets.int8_wanted[name])
        if reason is None:
            if "speed" in self._health:
                _LOGGER.info("speed: every voice keeps up again")
                self._health.clear("speed")
        elif self._health.get("speed") != reason:
            if "speed" not in self._health:
                _LOGGER.warning("speed: %s", reason)
            self._health.set("speed", reason)

    def variant_for(self, name: str, assets: Assets) -> tuple[Variant, str] | None:
        """What speaks for voice ``name`` now, and why; None: the voice itself."""
        label = self.governor.variant_in_use(name)
        variant = assets.variant(name) if label is not None else None
        if variant is None or variant.label != label:
            return None
        plan = speed_plans(assets).get(name)
        why = self.governor.why(name, plan) if plan is not None else None
        return variant, why or f"voice {name} is too slow"

    def status(self, assets: Assets) -> dict[str, Any]:
        return self.governor.status(assets.speed_cost)


__all__ = ["Degrade", "speed_plans"]
