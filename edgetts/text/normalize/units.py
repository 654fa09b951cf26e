"""Quantities: percentages, temperatures, units of measure and time ("5 km", "-18°C", "2 hrs")."""

from __future__ import annotations

import re

from edgetts.text.normalize.numbers import NUMBER_PATTERN, cardinal, ordinal, read_number
from edgetts.text.normalize.options import NormalizeOptions
from edgetts.text.normalize.rules import Rule

# abbreviation -> (singular, plural). Case matters: "m" is metres, "M" is not a unit here.
# US spelling: the default voice is en-us and espeak-ng says both the same.
_UNITS: dict[str, tuple[str, str]] = {
    "km/h": ("kilometer per hour", "kilometers per hour"),
    "km/hr": ("kilometer per hour", "kilometers per hour"),
    "kph": ("kilometer per hour", "kilometers per hour"),
    "mph": ("mile per hour", "miles per hour"),
    "m/s": ("meter per second", "meters per second"),
    "km": ("kilometer", "kilometers"),
    "m": ("meter", "meters"),
    "cm": ("centimeter", "centimeters"),
    "mm": ("millimeter", "millimeters"),
    "mi": ("mile", "miles"),
    "ft": ("foot", "feet"),
    "kg": ("kilogram", "kilograms"),
    "g": ("gram", "grams"),
    "mg": ("milligram", "milligrams"),
    "lb": ("pound", "pounds"),
    "lbs": ("pound", "pounds"),
    "t": ("tonne", "tonnes"),
    "pc": ("piece", "pieces"),
    "pcs": ("piece", "pieces"),
    "sq ft": ("square foot", "square feet"),
    "sq m": ("square meter", "square meters"),
    "sqm": ("square meter", "square meters"),
    "oz": ("ounce", "ounces"),
    "l": ("liter", "liters"),
    "L": ("liter", "liters"),
    "ml": ("milliliter", "milliliters"),
    "mL": ("milliliter", "milliliters"),
    "cl": ("centiliter", "centiliters"),
    "kWh": ("kilowatt hour", "kilowatt hours"),
    "Wh": ("watt hour", "watt hours"),
    "mAh": ("milliamp hour", "milliamp hours"),
    "kV": ("kilovolt", "kilovolts"),
    "V": ("volt", "volts"),
    "W": ("watt", "watts"),
    "kW": ("kilowatt", "kilowatts"),
    "MW": ("megawatt", "megawatts"),
    "Hz": ("hertz", "hertz"),
    "kHz": ("kilohertz", "kilohertz"),
    "MHz": ("megahertz", "megahertz"),
    "GHz": ("gigahertz", "gigahertz"),
    "dB": ("decibel", "decibels"),
    "kB": ("kilobyte", "kilobytes"),
    "KB": ("kilobyte", "kilobytes"),
    "MB": ("megabyte", "megabytes"),
    "GB": ("gigabyte", "gigabytes"),
    "TB": ("terabyte", "terabytes"),
    "ms": ("millisecond", "milliseconds"),
    "sec": ("second", "seconds"),
    "secs": ("second", "seconds"),
    "min": ("minute", "minutes"),
    "mins": ("minute", "minutes"),
    "h": ("hour", "hours"),
    "hr": ("hour", "hours"),
    "hrs": ("hour", "hours"),
    "yr": ("year", "years"),
    "yrs": ("year", "years"),
}
_UNIT_ALTERNATION = "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True))
_TEMPERATURE_SCALES = {"C": "Celsius", "F": "Fahrenheit", "K": "kelvin"}

# A sign counts only at the start of a word: "-18°C" is minus, "10-12" is a range (done earlier).
_SIGNED = r"(?P<num>(?:(?<![^\s(\[/])[-−+])?(?:" + NUMBER_PATTERN + r"))"
_B = r"(?<![0-9A-Za-z.,])"


def _number(m: re.Match[str], options: NormalizeOptions) -> str:
    return read_number(m["num"].replace("−", "-"), options.hundred_and, options.say_zero_as)


def _is_one(m: re.Match[str]) -> bool:
    return m["num"].lstrip("-−+") == "1"


def _percent(m: re.Match[str], options: NormalizeOptions) -> str:
    return f"{_number(m, options)} percent"


def _temperature(m: re.Match[str], options: NormalizeOptions) -> str:
    words = f"{_number(m, options)} {'degree' if _is_one(m) else 'degrees'}"
    if m["scale"]:
        words += " " + _TEMPERATURE_SCALES[m["scale"]]
    return words


def _unit(m: re.Match[str], options: NormalizeOptions) -> str:
    one, many = _UNITS[m["unit"]]
    return f"{_number(m, options)} {one if _is_one(m) else many}"


def _seconds(m: re.Match[str], options: NormalizeOptions) -> str:
    return f"{_number(m, options)} {'second' if _is_one(m) else 'seconds'}"


_DENOMINATORS = {2: ("half", "halves"), 4: ("quarter", "quarters")}


def _fraction(m: re.Match[str], options: NormalizeOptions) -> str:
    top, bottom = int(m["a"]), int(m["b"])
    if (top, bottom) == (24, 7):
        return "twenty four seven"
    if 0 < top < bottom <= 10:
        one, many = _DENOMINATORS.get(bottom, (ordinal(bottom), ordinal(bottom) + "s"))
        return f"{cardinal(top)} {one if top == 1 else many}"
    return f"{cardinal(top, options.hundred_and)} slash {cardinal(bottom, options.hundred_and)}"


RULES = (
    Rule("percent", re.compile(_B + _SIGNED + r"\s?%"), _percent),
    Rule(
        "temperature",
        re.compile(_B + _SIGNED + r"\s?°\s?(?P<scale>[CFK])?(?![A-Za-z])"),
        _temperature,
    ),
    Rule(
        "unit",
        re.compile(_B + _SIGNED + r"\s?(?P<unit>" + _UNIT_ALTERNATION + r")(?![A-Za-z0-9/-])"),
        _unit,
    ),
    # "10 s" is seconds, but only with the space: "18s" is a plural ("over 18s").
    Rule("seconds", re.compile(_B + _SIGNED + r" s(?![A-Za-z0-9])"), _seconds),
    Rule(
        "fraction",
        re.compile(r"(?<![0-9/.,])(?P<a>[0-9]{1,3})/(?P<b>[0-9]{1,3})(?![0-9/])"),
        _fraction,
    ),
)
