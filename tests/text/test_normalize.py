"""Text normalisation: hand-written expectations (how an announcer says it), and properties."""
# ruff: noqa: E501  (the corpus lines are kept verbatim, one per line)

from __future__ import annotations

import pytest
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

CARDINALS = [
    ("0", "zero"),
    ("7", "seven"),
    ("13", "thirteen"),
    ("20", "twenty"),
    ("42", "forty two"),
    ("99", "ninety nine"),
    ("100", "one hundred"),
    ("105", "one hundred five"),
    ("250", "two hundred fifty"),
    ("999", "nine hundred ninety nine"),
    ("1,000", "one thousand"),
    ("1,250", "one thousand two hundred fifty"),
    ("12,345", "twelve thousand three hundred forty five"),
    ("100,000", "one hundred thousand"),
    ("1,000,000", "one million"),
    ("2,500,000", "two million five hundred thousand"),
    ("3000000000", "three billion"),
    ("10000", "ten thousand"),
    ("1000", "one thousand"),
    ("007", "oh oh seven"),
    ("Gate 17", "Gate seventeen"),
    ("3 trains", "three trains"),
    ("We have 21 items.", "We have twenty one items."),
    ("Queue 5, please.", "Queue five, please."),
]

ORDINALS = [
    ("1st", "first"),
    ("2nd", "second"),
    ("3rd", "third"),
    ("4th", "fourth"),
    ("11th", "eleventh"),
    ("12th", "twelfth"),
    ("21st", "twenty first"),
    ("22nd", "twenty second"),
    ("30th", "thirtieth"),
    ("100th", "one hundredth"),
    ("103rd", "one hundred third"),
    ("the 2nd floor", "the second floor"),
]

DECIMALS_NEGATIVES_RANGES = [
    ("3.14", "three point one four"),
    ("0.5", "zero point five"),
    (".5", "point five"),
    ("12.50", "twelve point five zero"),
    ("2.05", "two point zero five"),
    ("-5", "minus five"),
    ("-3.5", "minus three point five"),
    ("It is -2 outside.", "It is minus two outside."),
    ("10-12", "ten to twelve"),
    ("10 - 12", "ten to twelve"),
    ("10–12", "ten to twelve"),
    ("Platforms 3-5", "Platforms three to five"),
    ("pages 5-10.", "pages five to ten."),
    ("+5", "plus five"),
]

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

MONEY = [
    ("$500", "five hundred dollars"),
    ("$1", "one dollar"),
    ("$5.99", "five dollars ninety nine"),
    ("$1.05", "one dollar five"),
    ("$0.99", "ninety nine cents"),
    ("$0.01", "one cent"),
    ("$12.00", "twelve dollars"),
    ("$1,250", "one thousand two hundred fifty dollars"),
    ("£12.50", "twelve pounds fifty"),
    ("£1", "one pound"),
    ("£0.50", "fifty pence"),
    ("£0.01", "one penny"),
    ("€0.99", "ninety nine cents"),
    ("€20", "twenty euros"),
    ("€1", "one euro"),
    ("¥500", "five hundred yen"),
    ("GBP 12.50", "twelve pounds fifty"),
    ("USD 100", "one hundred dollars"),
    ("EUR 5", "five euros"),
    ("20 EUR", "twenty euros"),
    ("50 GBP", "fifty pounds"),
    ("5€", "five euros"),
    ("50p", "fifty pence"),
    ("1p", "one penny"),
    ("99¢", "ninety nine cents"),
    ("£1.5m", "one point five million pounds"),
    ("$3bn", "three billion dollars"),
    ("$2 million", "two million dollars"),
    ("£10k", "ten thousand pounds"),
    ("-$5", "minus five dollars"),
    ("£5-£10", "five pounds to ten pounds"),
    ("Tickets cost £4.20 each.", "Tickets cost four pounds twenty each."),
]

PERCENT_TEMPERATURE_UNITS = [
    ("12%", "twelve percent"),
    ("12.5 %", "twelve point five percent"),
    ("-3%", "minus three percent"),
    ("100%", "one hundred percent"),
    ("-18°C", "minus eighteen degrees Celsius"),
    ("-18 °C", "minus eighteen degrees Celsius"),
    ("5 °F", "five degrees Fahrenheit"),
    ("1°C", "one degree Celsius"),
    ("20°", "twenty degrees"),
    ("72°F", "seventy two degrees Fahrenheit"),
    ("5 km", "five kilometers"),
    ("1 km", "one kilometer"),
    ("5km", "five kilometers"),
    ("2.5 kg", "two point five kilograms"),
    ("1 kg", "one kilogram"),
    ("500 g", "five hundred grams"),
    ("3 m", "three meters"),
    ("10 cm", "ten centimeters"),
    ("5 mm", "five millimeters"),
    ("2 l", "two liters"),
    ("330 ml", "three hundred thirty milliliters"),
    ("60 mph", "sixty miles per hour"),
    ("50 km/h", "fifty kilometers per hour"),
    ("10 m/s", "ten meters per second"),
    ("6 ft", "six feet"),
    ("1 ft", "one foot"),
    ("3 kW", "three kilowatts"),
    ("85 dB", "eighty five decibels"),
    ("16 GB", "sixteen gigabytes"),
    ("1/2", "one half"),
    ("3/4", "three quarters"),
    ("2/3", "two thirds"),
    ("24/7", "twenty four seven"),
]

PHONES = [
    ("0161 496 0000", "oh one six one, four nine six, oh oh oh oh"),
    ("+44 20 7946 0958", "plus four four, two oh, seven nine four six, oh nine five eight"),
    ("+44 (0)20 7946 0958", "plus four four, two oh, seven nine four six, oh nine five eight"),
    ("Call 0800 123 456.", "Call oh eight oh oh, one two three, four five six."),
    ("020 7946 0958", "oh two oh, seven nine four six, oh nine five eight"),
    ("(555) 123-4567", "five five five, one two three, four five six seven"),
    ("555-1234", "five five five, one two three four"),
    ("ext. 3105", "extension three one oh five"),
    ("ext 3105", "extension three one oh five"),
    ("Ext. 200", "extension two oh oh"),
    ("extension 3105", "extension three one oh five"),
    ("x3105", "extension three one oh five"),
]

CODES = [
    ("BA 2490", "B eh twenty four ninety"),
    ("BA2490", "B eh twenty four ninety"),
    ("EZY 8023", "E Z Y eighty twenty three"),
    ("LH 400", "L H four hundred"),
    ("AF 1234", "eh F twelve thirty four"),
    ("flight 2405", "flight twenty four oh five"),
    ("KX19 ABC", "K X one nine eh B C"),
    ("LD08 XYZ", "L D oh eight X Y Z"),
    ("platform 3b", "platform three B"),
    ("Platform 3B", "Platform three B"),
    ("seat 12A", "seat twelve eh"),
    ("the M25", "the M twenty five"),
    ("an A380", "an eh three eighty"),
    ("mp3", "M P three"),
    ("No. 57", "number fifty seven"),
    ("no. 5", "number five"),
    ("Nos. 5", "numbers five"),
    ("#12", "number twelve"),
    ("order #4021", "order number four thousand twenty one"),
    ("Room B12", "Room B twelve"),
    ("IN 10 MINUTES", "IN ten MINUTES"),
    ("Call 999 now.", "Call nine nine nine now."),
    ("dial 101", "dial one oh one"),
    ("between J3 and J4", "between J three and J four"),
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

DEFAULT_CASES = (
    CORPUS
    + CARDINALS
    + ORDINALS
    + DECIMALS_NEGATIVES_RANGES
    + YEARS
    + DATES
    + TIMES
    + DURATIONS
    + MONEY
    + PERCENT_TEMPERATURE_UNITS
    + PHONES
    + CODES
    + ABBREVIATIONS
    + SYMBOLS
    + PASS_THROUGH
    + UNSPEAKABLE
)


@pytest.mark.parametrize(("text", "expected"), DEFAULT_CASES)
def test_default_options(text: str, expected: str) -> None:
    assert normalize(text) == expected


OPTION_CASES = [
    *[(NormalizeOptions(date_order="mdy"), t, e) for t, e in DATES_MDY],
    *[(NormalizeOptions(time_24h="oh"), t, e) for t, e in TIMES_OH],
    *[(NormalizeOptions(time_24h="12h"), t, e) for t, e in TIMES_12H],
    (NormalizeOptions(say_zero_as="zero"), "ext. 3105", "extension three one zero five"),
    (
        NormalizeOptions(say_zero_as="zero"),
        "0161 496 0000",
        "zero one six one, four nine six, zero zero zero zero",
    ),
    (NormalizeOptions(hundred_and=True), "105", "one hundred and five"),
    (NormalizeOptions(hundred_and=True), "1,005", "one thousand and five"),
    (NormalizeOptions(hundred_and=True), "£250", "two hundred and fifty pounds"),
    (NormalizeOptions(money_style="full"), "£12.50", "twelve pounds and fifty pence"),
    (NormalizeOptions(money_style="full"), "$1.01", "one dollar and one cent"),
    (NormalizeOptions(letter_a="A"), "BA 2490", "B A twenty four ninety"),
    (NormalizeOptions(letter_a="A"), "KX19 ABC", "K X one nine A B C"),
    (NormalizeOptions(letter_a="A"), "10 am", "ten a m"),
]


@pytest.mark.parametrize(("options", "text", "expected"), OPTION_CASES)
def test_style_options(options: NormalizeOptions, text: str, expected: str) -> None:
    assert normalize(text, options) == expected


def test_table_has_at_least_200_cases() -> None:
    assert len(DEFAULT_CASES) + len(OPTION_CASES) >= 200


def test_spoken_corpus_file_matches_corpus() -> None:
    from pathlib import Path

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


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789 .,:-/$£€%°+#apmhkgAPMBCX", max_size=40))
def test_never_raises_on_number_soup(text: str) -> None:
    normalize(text)
    normalize(text, NormalizeOptions(time_24h="12h", date_order="mdy", hundred_and=True))


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


def test_huge_number_read_digit_by_digit() -> None:
    assert normalize(str(10**40)) == "one " + " ".join(["zero"] * 40)


@pytest.mark.parametrize("spoken", sorted({expected for _, expected in DEFAULT_CASES}))
def test_spoken_forms_pass_through(spoken: str) -> None:
    # Output fed back in is unchanged: normalising twice (e.g. a lexicon respelling) is harmless.
    assert normalize(spoken) == spoken
