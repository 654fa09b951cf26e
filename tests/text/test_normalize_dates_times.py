"""Text normalisation of dates and times: years, dates, clock times, durations, and their styles."""

from __future__ import annotations

import pytest

from edgetts.text.normalize import NormalizeOptions, normalize

YEARS = [
    ("1984", "nineteen eighty four"),
    ("2005", "two thousand five"),
    ("2024", "twenty twenty four"),
    ("2000", "two thousand"),
    ("2010", "twenty ten"),
    ("1900", "nineteen hundred"),
    ("1905", "nineteen oh five"),
    ("1100", "eleven hundred"),
    ("in 1966", "in nineteen sixty six"),
    ("since 2019", "since twenty nineteen"),
    ("the 1980s", "the nineteen eighties"),
    ("the 90s", "the nineties"),
    ("the '60s", "the sixties"),
    ("the 2000s", "the two thousands"),
    ("2100", "two thousand one hundred"),
    ("1,984", "one thousand nine hundred eighty four"),
    ("1500 people", "fifteen hundred people"),
]

DATES = [
    ("12/03/2025", "the twelfth of March twenty twenty five"),
    ("on 12/03/2025", "on the twelfth of March twenty twenty five"),
    ("01/01/2000", "the first of January two thousand"),
    ("25/12/24", "the twenty fifth of December twenty twenty four"),
    ("12.03.2025", "the twelfth of March twenty twenty five"),
    ("2025-03-12", "the twelfth of March twenty twenty five"),
    ("3 March", "the third of March"),
    ("3rd March", "the third of March"),
    ("3rd of March", "the third of March"),
    ("3 March 2025", "the third of March twenty twenty five"),
    ("on Monday 3 March", "on Monday the third of March"),
    ("March 3rd", "March third"),
    ("March 3", "March third"),
    ("March 3, 2025", "March third, twenty twenty five"),
    ("Jan 5", "January fifth"),
    ("Jan. 5", "January fifth"),
    ("21 Sept", "the twenty first of September"),
    ("the 3 May", "the third of May"),
    ("1 Dec 2024", "the first of December twenty twenty four"),
    ("March 2025", "March twenty twenty five"),
]

DATES_MDY = [
    ("12/03/2025", "December third twenty twenty five"),
    ("2025-03-12", "March twelfth twenty twenty five"),
    ("3 March", "the third of March"),
    ("07/04/1976", "July fourth nineteen seventy six"),
]

TIMES = [
    ("9:42", "nine forty two"),
    ("09:42", "nine forty two"),
    ("14:05", "fourteen oh five"),
    ("18:15", "eighteen fifteen"),
    ("14:00", "fourteen hundred"),
    ("23:59", "twenty three fifty nine"),
    ("00:00", "midnight"),
    ("00:30", "zero thirty"),
    ("9:00", "nine o'clock"),
    ("12:00", "twelve o'clock"),
    ("09:00", "nine hundred"),
    ("14:05:30", "fourteen oh five and thirty seconds"),
    ("2 pm", "two p m"),
    ("10 am", "ten eh m"),
    ("2pm", "two p m"),
    ("2:30pm", "two thirty p m"),
    ("2:30 PM", "two thirty p m"),
    ("11:05 am", "eleven oh five eh m"),
    ("7 p.m. tonight", "seven p m tonight"),
    ("at 7 p.m. Please", "at seven p m. Please"),
    ("at 7 p.m.", "at seven p m."),
    ("2.30pm", "two thirty p m"),
    ("12 pm", "twelve p m"),
    ("noon", "noon"),
    ("midnight", "midnight"),
    ("from 9am-5pm", "from nine eh m to five p m"),
    ("the 08.15 from Euston", "the eight fifteen from Euston"),
    ("8.15", "eight point one five"),
    ("14:00-16:00", "fourteen hundred to sixteen hundred"),
]

TIMES_OH = [
    ("09:42", "oh nine forty two"),
    ("14:05", "fourteen oh five"),
    ("14:00", "fourteen hundred"),
    ("09:00", "oh nine hundred"),
    ("9:42", "nine forty two"),
    ("00:30", "oh oh thirty"),
]

TIMES_12H = [
    ("14:05", "two oh five p m"),
    ("09:42", "nine forty two eh m"),
    ("9:42", "nine forty two"),
    ("12:00", "noon"),
    ("18:00", "six p m"),
    ("00:00", "midnight"),
    ("00:15", "twelve fifteen eh m"),
    ("12:30", "twelve thirty"),
    ("9:00", "nine o'clock"),
]

DURATIONS = [
    ("5 min", "five minutes"),
    ("1 min", "one minute"),
    ("30 mins", "thirty minutes"),
    ("2 hrs", "two hours"),
    ("1 hr", "one hour"),
    ("2h", "two hours"),
    ("1h30", "one hour thirty minutes"),
    ("2h 15m", "two hours fifteen minutes"),
    ("1 hr 30 min", "one hour thirty minutes"),
    ("45 secs", "forty five seconds"),
    ("500 ms", "five hundred milliseconds"),
    ("Wait 10 s.", "Wait ten seconds."),
    ("Over 18s only.", "Over eighteens only."),
    ("delayed by 20 min.", "delayed by twenty minutes."),
]

CASES = YEARS + DATES + TIMES + DURATIONS
"""Read with the default options (test_normalize.py counts them with the other topics)."""

OPTION_CASES = [
    *[(NormalizeOptions(date_order="mdy"), t, e) for t, e in DATES_MDY],
    *[(NormalizeOptions(time_24h="oh"), t, e) for t, e in TIMES_OH],
    *[(NormalizeOptions(time_24h="12h"), t, e) for t, e in TIMES_12H],
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_default_options(text: str, expected: str) -> None:
    assert normalize(text) == expected


@pytest.mark.parametrize(("options", "text", "expected"), OPTION_CASES)
def test_style_options(options: NormalizeOptions, text: str, expected: str) -> None:
    assert normalize(text, options) == expected
