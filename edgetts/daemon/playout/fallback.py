"""Which clip plays when speech cannot be produced in time (issue 6).

Order: the announcement's own ``fallback`` field, else the first rule of
``fallback.rules`` whose regex matches the text (case-insensitive search),
else ``fallback.default_clip``, else nothing (the announcement then fails as
before, with its reason).  The `reason` names of a `fallback` event are
``edgetts.vocabulary.FALLBACK_REASONS``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Choice:
    """The clip chosen and why it was chosen."""

    clip: str
    source: str
    """`announcement`, `rule N` (0-based index in fallback.rules) or `default`."""


@dataclass(frozen=True)
class CompiledRule:
    pattern: re.Pattern[str]
    clip: str


def compile_rules(rules: Iterable[tuple[str, str]]) -> tuple[CompiledRule, ...]:
    """(regex, clip) pairs -> compiled rules; raises re.error for a bad regex."""
    return tuple(CompiledRule(re.compile(rx, re.IGNORECASE), clip) for rx, clip in rules)


def choose(own: str | None, text: str | None, rules: Iterable[CompiledRule], default: str | None) -> Choice | None:
    """The fallback clip for an announcement (see the module docstring)."""
    if own is not None:
        return Choice(own, "announcement")
    if text:
        for i, rule in enumerate(rules):
            if rule.pattern.search(text):
                return Choice(rule.clip, f"rule {i}")
    if default is not None:
        return Choice(default, "default")
    return None


__all__ = ["Choice", "CompiledRule", "choose", "compile_rules"]
