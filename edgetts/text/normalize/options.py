"""Style options of the normaliser: where English conventions differ, the operator chooses.

Every field becomes the config key ``normalize.<field>``.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class NormalizeOptions:
    """How numbers, times and codes are read; defaults: what a UK/US announcer says."""

    time_24h: Literal["hundred", "oh", "12h"] = "hundred"
    """Reading of clock times without am/pm.
    "hundred": "14:05" -> "fourteen oh five", "14:00" -> "fourteen hundred",
    "09:42" -> "nine forty two", "9:00" -> "nine o'clock".
    "oh": as "hundred" but a written leading zero is said: "09:42" -> "oh nine forty two".
    "12h": "14:05" -> "two oh five p m", "09:42" -> "nine forty two a m", "12:00" -> "noon"."""

    date_order: Literal["dmy", "mdy"] = "dmy"
    """Order of all-numeric dates: "12/03/2025" is 12 March ("dmy") or December 3 ("mdy").
    Also the spoken order: "the twelfth of March" (dmy) or "March twelfth" (mdy)."""

    say_zero_as: Literal["oh", "zero"] = "oh"
    """The word for 0 in digit groups (phone numbers, extensions, codes): "three one oh five".
    Decimals always say "zero" ("point zero five") and a lone 0 is "zero"."""

    hundred_and: bool = False
    """British "one hundred and five" (True) or American "one hundred five" (False)."""

    money_style: Literal["short", "full"] = "short"
    """"£12.50": "twelve pounds fifty" ("short") or "twelve pounds and fifty pence" ("full")."""

    letter_a: Literal["eh", "A"] = "eh"
    """How the letter A is written when a code is spelled ("BA 2490", "10 am").
    "eh" because espeak-ng reads a lone "A" before another word as the article (/ɐ/):
    "B eh twenty four ninety", "ten eh m". "A" gives the display form "B A twenty four ninety"."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> NormalizeOptions:
        """Options from a config mapping (``normalize:`` section); ValueError names a bad key."""
        if not isinstance(data, Mapping):
            raise ValueError(f"normalize: expected a mapping, got {type(data).__name__}")
        hints = typing.get_type_hints(cls)
        known = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, object] = {}
        for key, value in data.items():
            if key not in known:
                raise ValueError(f"normalize.{key}: unknown key (known: {', '.join(sorted(known))})")
            values[key] = _check(str(key), value, hints[key])
        return cls(**values)  # type: ignore[arg-type]


def _check(key: str, value: object, hint: object) -> object:
    allowed = typing.get_args(hint)
    if hint is bool:
        if not isinstance(value, bool):
            raise ValueError(f"normalize.{key}: expected true or false, got {value!r}")
        return value
    if value not in allowed or not isinstance(value, str):
        choices = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"normalize.{key}: expected one of {choices}, got {value!r}")
    return value
