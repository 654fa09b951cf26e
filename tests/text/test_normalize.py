"""Text normalisation: the announcements corpus, abbreviations, symbols, what passes through,
what cannot be spoken, the options mapping, and properties over every topic's table
(numbers in test_normalize_numbers.py, dates and times in test_normalize_dates_times.py)."""
# ruff: noqa: E501  (the corpus lines are kept verbatim, one per line)

from __future__ import annotations

from pathlib import Path

import pytest
import test_normalize_addresses as addresses
import test_normalize_dates_times as dates_times
import test_normalize_numbers as numbers
from hypothesis import given, settings
from hypothesis import strategies as st

from edgetts.text.normalize import NormalizeOptions, normalize

# The project's announcements corpus, each line with its spoken form (sentence punctuation kept).
CORPUS = [
    (
        "Good morning. The store will open in five minutes.",
        "Good morning. The store will open in five minutes.",
    ),
    (
        "The next train to arrive at platform two is the 9:42 service to Edinburgh Waverley.",
        "The next train to arrive at platform two is the nine forty two service to Edinburgh Waverley.",
    ),
    (
        "Attention please. Would the owner of a blue car, registration KX19 ABC, please return to the car park.",
        "Attention please. Would the owner of a blue car, registration K X one nine eh B C, please return to the car park.",
    ),
    (
        "This is a safety announcement. Smoking is not permitted anywhere on this site.",
        "This is a safety announcement. Smoking is not permitted anywhere on this site.",
    ),
    (
        "Flight BA 2490 to Lisbon is now boarding at gate 17.",
        "Flight B eh twenty four ninety to Lisbon is now boarding at gate seventeen.",
    ),
    (
        "Line 4 has stopped. Maintenance team to conveyor C, please.",
        "Line four has stopped. Maintenance team to conveyor C, please.",
    ),
    (
        "Doctor Patel, please call extension 3105.",
        "Doctor Patel, please call extension three one oh five.",
    ),
    (
        "The library will close in fifteen minutes. Please bring any items you wish to borrow to the front desk.",
        "The library will close in fifteen minutes. Please bring any items you wish to borrow to the front desk.",
    ),
    (
        "Mind the gap between the train and the platform.",
        "Mind the gap between the train and the platform.",
    ),
    (
        "Temperature in freezer room one is above minus 18 degrees. Please check the door.",
        "Temperature in freezer room one is above minus eighteen degrees. Please check the door.",
    ),
    (
        "We are sorry to announce that the 18:15 service to Bristol Temple Meads has been cancelled.",
        "We are sorry to announce that the eighteen fifteen service to Bristol Temple Meads has been cancelled.",
    ),
    ("Shift change in ten minutes.", "Shift change in ten minutes."),
    (
        "Attention all staff: a fire drill will take place today at 2 pm. When you hear the alarm, leave the "
        "building by the nearest exit and assemble in car park B. Do not use the lifts. Wardens will check "
        "each floor and report to the assembly point.",
        "Attention all staff: a fire drill will take place today at two p m. When you hear the alarm, leave the "
        "building by the nearest exit and assemble in car park B. Do not use the lifts. Wardens will check "
        "each floor and report to the assembly point.",
    ),
    (
        "Welcome aboard. Please keep your belongings with you at all times.",
        "Welcome aboard. Please keep your belongings with you at all times.",
    ),
    ("The washing machine has finished.", "The washing machine has finished."),
    ("Someone is at the front door.", "Someone is at the front door."),
    ("Battery level low: 12 percent remaining.", "Battery level low: twelve percent remaining."),
    ("Please stand clear of the closing doors.", "Please stand clear of the closing doors."),
    (
        "Visiting hours are from 10 am to 8 pm, Monday to Friday.",
        "Visiting hours are from ten eh m to eight p m, Monday to Friday.",
    ),
    (
        "Order number 57 is ready for collection at counter 3.",
        "Order number fifty seven is ready for collection at counter three.",
    ),
]

ABBREVIATIONS = [
    ("St. Pancras", "Saint Pancras"),
    ("London St Pancras International", "London Saint Pancras International"),
    ("Baker St.", "Baker Street."),
    ("Meet at Baker St. Thank you.", "Meet at Baker Street. Thank you."),
    ("Baker St is closed", "Baker Street is closed"),
    ("Dr. Patel", "Doctor Patel"),
    ("Dr Patel", "Doctor Patel"),
    ("Paging Dr. Patel", "Paging Doctor Patel"),
    ("Meet at Elm Dr. now", "Meet at Elm Drive now"),
    ("Mr. Smith", "Mister Smith"),
    ("Mrs Jones", "Missus Jones"),
    ("Ms. Khan", "Miz Khan"),
    ("Prof. Lee", "Professor Lee"),
    ("approx. 5 minutes", "approximately five minutes"),
    ("Bring food, drinks, etc.", "Bring food, drinks, et cetera."),
    ("fruit, e.g. apples", "fruit, for example apples"),
    ("one, i.e. this one", "one, that is this one"),
    ("Leeds vs. York", "Leeds versus York"),
    ("Station Rd.", "Station Road."),
    ("Park Ave.", "Park Avenue."),
    ("Jan.", "January."),
    ("Dec. 25", "December twenty fifth"),
    ("Mon.-Fri.", "Monday to Friday."),
    ("Mon-Sun", "Monday to Sunday"),
    ("Open Sat.", "Open Saturday."),
    ("Smith Ltd.", "Smith Limited."),
    ("the U.K. office", "the U K office"),
    ("the BBC", "the BBC"),
]

SYMBOLS = [
    ("rock & roll", "rock and roll"),
    ("M&S", "M and S"),
    ("info@example.com", "info at example dot com"),
    ("2 + 2 = 4", "two plus two equals four"),
    ("Terms & Conditions apply.", "Terms and Conditions apply."),
    ("arrivals/departures", "arrivals or departures"),
    ("and/or", "and or"),
    ("press *", "press star"),
    ("press #", "press hash"),
    ("~5 minutes", "about five minutes"),
    ("C++", "C plus plus"),
    ("Wait... what?!", "Wait. what?"),
    ("Exit (left)", "Exit, left"),
    ("Exit — left", "Exit, left"),
    ('"Quoted" words', "Quoted words"),
]

PASS_THROUGH = [
    ("Please stand clear of the doors.", "Please stand clear of the doors."),
    ("  extra   spaces  here ", "extra spaces here"),
    ("line\nbreak", "line break"),
    ("café über naïve", "café über naïve"),
    ("It's five o'clock.", "It's five o'clock."),
    ("a well-known place", "a well-known place"),
    ("Is it late?", "Is it late?"),
    ("Stop!", "Stop!"),
    ("one; two", "one; two"),
    ("car park A", "car park A"),
    ("A train is approaching.", "A train is approaching."),
    ("Mind the step", "Mind the step"),
    ("the st john ambulance", "the st john ambulance"),
    ("dr who", "dr who"),
    ("no. thank you", "no. thank you"),
    ("am I late", "am I late"),
    ("vs", "vs"),
    ("The Sun. The moon.", "The Sun. The moon."),
    ("No. I won't.", "No. I won't."),
    ("Open Sat. and Sun.", "Open Saturday and Sunday."),
    ("Closed Sun., Mon.", "Closed Sunday, Monday."),
    ("Wed. and Thu.", "Wednesday and Thursday."),
]

UNSPEAKABLE = [
    ("Hello 👋 world", "Hello world"),
    ("fire🔥alarm", "fire alarm"),
    ("🔥🔥🔥", ""),
    ("", ""),
    ("   ", ""),
    ("tab\there", "tab here"),
    ("bell\x07here", "bell here"),
    ("nul\x00here", "nul here"),
    ("soft\u00adhyphen", "softhyphen"),
    ("zero\u200bwidth", "zerowidth"),
    ("lone \ud800 surrogate", "lone surrogate"),
    ("½ price", "one half price"),
    ("℃", "degrees C"),
    ("１２", "twelve"),
    ("5×3", "five times three"),
    ("10" * 20, " ".join(["one", "zero"] * 20)),
    ("❤️ love", "love"),
]

CASES = CORPUS + ABBREVIATIONS + SYMBOLS + PASS_THROUGH + UNSPEAKABLE

DEFAULT_CASES = CASES + numbers.CASES + dates_times.CASES + addresses.CASES
"""Every topic's table read with the default options."""

OPTION_CASES = numbers.OPTION_CASES + dates_times.OPTION_CASES + addresses.OPTION_CASES


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_default_options(text: str, expected: str) -> None:
    assert normalize(text) == expected


def test_table_has_at_least_200_cases() -> None:
    assert len(DEFAULT_CASES) + len(OPTION_CASES) >= 200


def test_spoken_corpus_file_matches_corpus() -> None:
    rows = (Path(__file__).resolve().parents[1] / "data" / "spoken_corpus.tsv").read_text("utf-8").splitlines()
    written = [row.split("\t") for row in rows if row.strip()]
    assert [w[0] for w in written] == [text for text, _ in CORPUS]
    display = NormalizeOptions(letter_a="A")
    for text, spoken in written:
        # The TSV is how an announcer says it: lower case, no punctuation, letters as letters.
        assert spoken == spoken.lower()
        assert not any(ch in spoken for ch in ".,?!:;")
        words = normalize(text, display).lower()
        assert " ".join(words.translate(str.maketrans("", "", ".,?!:;")).split()) == spoken


class TestOptionsFromMapping:
    def test_empty_mapping_gives_defaults(self) -> None:
        assert NormalizeOptions.from_mapping({}) == NormalizeOptions()

    def test_values_are_taken(self) -> None:
        opts = NormalizeOptions.from_mapping(
            {"time_24h": "12h", "date_order": "mdy", "hundred_and": True, "say_zero_as": "zero"}
        )
        assert (opts.time_24h, opts.date_order, opts.hundred_and, opts.say_zero_as) == (
            "12h",
            "mdy",
            True,
            "zero",
        )

    def test_unknown_key_is_named(self) -> None:
        with pytest.raises(ValueError, match=r"normalize\.time24: unknown key"):
            NormalizeOptions.from_mapping({"time24": "oh"})

    def test_bad_choice_is_named(self) -> None:
        with pytest.raises(ValueError, match=r"normalize\.date_order: expected one of"):
            NormalizeOptions.from_mapping({"date_order": "ymd"})

    def test_bool_must_be_bool(self) -> None:
        with pytest.raises(ValueError, match=r"normalize\.hundred_and: expected true or false"):
            NormalizeOptions.from_mapping({"hundred_and": "yes"})

    def test_not_a_mapping(self) -> None:
        with pytest.raises(ValueError, match="normalize"):
            NormalizeOptions.from_mapping(["oh"])  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=()), max_size=200))
def test_never_raises_on_any_unicode(text: str) -> None:
    out = normalize(text)
    assert isinstance(out, str)
    out.encode("utf-8")  # no lone surrogates survive
    assert "\x00" not in out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12),
        min_size=1,
        max_size=12,
    )
)
def test_plain_lowercase_words_pass_through(words: list[str]) -> None:
    text = " ".join(words)
    assert normalize(text) == text


@pytest.mark.parametrize("spoken", sorted({expected for _, expected in DEFAULT_CASES}))
def test_spoken_forms_pass_through(spoken: str) -> None:
    # Output fed back in is unchanged: normalising twice (e.g. a lexicon respelling) is harmless.
    assert normalize(spoken) == spoken
