"""Things people type (issue 16 part 3): web and e-mail addresses, hashtags, units glued to numbers,
times with seconds, ordinal dates in other orders; hand-written cases and properties."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgetts.text.normalize import NormalizeOptions, normalize
from edgetts.text.normalize.numbers import cardinal, ordinal

ADDRESSES = [
    ("Visit www.example.com/tickets today.", "Visit W W W dot example dot com slash tickets today."),
    (
        "See https://trains.example.co.uk/status?id=5 for updates.",
        "See trains dot example dot co dot U K slash status question mark id equals five for updates.",
    ),
    ("http://example.com:8080/", "example dot com colon eight oh eight oh"),
    ("Go to bbc.co.uk/news.", "Go to B B C dot co dot U K slash news."),
    ("www.nationalrail.co.uk", "W W W dot nationalrail dot co dot U K"),
    ("Check tfl.gov.uk/route66/ first.", "Check T F L dot gov dot U K slash route sixty six first."),
    (
        "Book at https://shop.example.de/room-101_a",
        "Book at shop dot example dot D E slash room dash one oh one underscore a",
    ),
    ("Visit example.com.", "Visit example dot com."),
    ("Email lost-property@station.org.uk.", "Email lost dash property at station dot org dot U K."),
    ("Mail john.smith99@nhs.net today", "Mail john dot smith ninety nine at N H S dot net today"),
    ("user.name+tag@mail.example.com", "user dot name plus tag at mail dot example dot com"),
    ("info@example.com", "info at example dot com"),
    ("Follow #TrainTimes for news.", "Follow hashtag Train Times for news."),
    ("#MindTheGap2026!", "hashtag Mind The Gap twenty twenty six!"),
    ("Tag us #summer_sale", "Tag us hashtag summer sale"),
    ("#12", "number twelve"),
]

UNITS_GLUED = [
    ("It is 5km away.", "It is five kilometers away."),
    ("It is 20°C outside.", "It is twenty degrees Celsius outside."),
    ("Bags of 3.5kg max.", "Bags of three point five kilograms max."),
    ("A 12V socket", "A twelve volts socket"),
    ("a 100W bulb", "a one hundred watts bulb"),
    ("3000mAh", "three thousand milliamp hours"),
    ("2kWh", "two kilowatt hours"),
    ("1V", "one volt"),
    ("-5°C", "minus five degrees Celsius"),
]

TIMES_SECONDS = [
    ("The time is 10:15:30.", "The time is ten fifteen and thirty seconds."),
    ("at 10:15:00.", "at ten fifteen."),
    ("14:05:01", "fourteen oh five and one second"),
    ("12:00:00", "twelve o'clock"),
    ("at 9:05:07 pm", "at nine oh five p m and seven seconds"),
    ("00:00:30", "midnight and thirty seconds"),
]

ORDINAL_DATES = [
    ("Open 1st of May.", "Open the first of May."),
    ("Open May the 1st.", "Open May the first."),
    ("Open 1 May 2026.", "Open the first of May twenty twenty six."),
    ("the 1st of May, 2026", "the first of May twenty twenty six"),
    ("May the 1st, 2026", "May the first, twenty twenty six"),
    ("Friday the 21st of December", "Friday the twenty first of December"),
    ("December the 25th", "December the twenty fifth"),
    ("May 1st 2026", "May first twenty twenty six"),
]

CASES = ADDRESSES + UNITS_GLUED + TIMES_SECONDS + ORDINAL_DATES
OPTION_CASES = [
    (NormalizeOptions(time_24h="12h"), "23:59:59", "eleven fifty nine p m and fifty nine seconds"),
    (NormalizeOptions(time_24h="12h"), "12:00:00", "noon"),
    (NormalizeOptions(say_zero_as="zero"), "http://example.com:8080", "example dot com colon eight zero eight zero"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_default_options(text: str, expected: str) -> None:
    assert normalize(text) == expected


@pytest.mark.parametrize(("options", "text", "expected"), OPTION_CASES)
def test_with_options(options: NormalizeOptions, text: str, expected: str) -> None:
    assert normalize(text, options) == expected


_LABEL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_LABEL, min_size=1, max_size=3),
    st.sampled_from(["com", "org", "net", "uk", "de"]),
    st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=10), max_size=3),
    st.sampled_from(["", "https://", "http://", "www."]),
)
def test_every_web_address_is_words(labels: list[str], tld: str, path: list[str], scheme: str) -> None:
    url = scheme + ".".join([*labels, tld]) + "".join("/" + p for p in path)
    out = normalize(f"Visit {url} now.")
    assert out.startswith("Visit ") and out.endswith(" now.")
    middle = out[len("Visit ") : -len(" now.")]
    assert not re.search(r"[0-9/.:_@-]", middle), out  # every symbol and digit said as a word
    assert middle.count(" dot ") == len(labels) + (scheme == "www.")
    assert middle.count("slash") == sum(1 for _ in path)
    assert "http" not in middle  # the scheme is not said
    assert normalize(out) == out  # the spoken form passes through


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_WORD, min_size=1, max_size=3),
    st.lists(_WORD, min_size=1, max_size=2),
    st.sampled_from(["com", "org", "uk"]),
)
def test_every_email_address_is_words(local: list[str], domain: list[str], tld: str) -> None:
    out = normalize(".".join(local) + "@" + ".".join([*domain, tld]))
    assert "@" not in out and "." not in out
    # The "at" said for "@" is one of the " at "s (a word of the address may be "at" too): one of
    # them splits the words into the local part's, every word kept (a word without a vowel is
    # spelled: "nhs" -> "N H S"), and the domain's.
    ats = [i for i in range(len(out)) if out.startswith(" at ", i)]
    splits = [(out[:i], out[i + 4 :]) for i in ats]
    assert any(
        [w.replace(" ", "").lower() for w in before.split(" dot ")] == local and after.count(" dot ") == len(domain)
        for before, after in splits
    ), out


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_times_with_seconds(hour: int, minute: int, second: int) -> None:
    out = normalize(f"{hour:02d}:{minute:02d}:{second:02d}")
    without = normalize(f"{hour:02d}:{minute:02d}")
    if second == 0:
        assert out == without
    else:
        unit = "second" if second == 1 else "seconds"
        assert out == f"{without} and {cardinal(second)} {unit}"


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0.1, 999, allow_nan=False).map(lambda f: round(f, 1)),
    st.sampled_from(["km", "kg", "mm", "ml", "kWh", "mph", "GB", "V", "W", "°C", "%"]),
)
def test_a_unit_reads_the_same_glued_or_spaced(number: float, unit: str) -> None:
    text = f"{number:g}"
    assert normalize(f"{text}{unit}") == normalize(f"{text} {unit}")


_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 31), st.sampled_from(_MONTHS))
def test_ordinal_dates_in_every_order(day: int, month: str) -> None:
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(day % 10 if day not in (11, 12, 13) else 0, "th")
    day_first = f"the {ordinal(day)} of {month}"
    for written in (
        f"{day} {month}",
        f"{day}{suffix} {month}",
        f"{day}{suffix} of {month}",
        f"the {day}{suffix} of {month}",
    ):
        assert normalize(written) == day_first, written
    assert normalize(f"{month} the {day}{suffix}") == f"{month} the {ordinal(day)}"
    assert normalize(f"{month} {day}{suffix}") == f"{month} {ordinal(day)}"
