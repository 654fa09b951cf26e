"""Text normalisation of numbers and amounts: cardinals, ordinals, decimals, money, units, phones, codes."""
# ruff: noqa: E501  (the table lines are kept verbatim, one per line)

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgetts.text.normalize import NormalizeOptions, normalize

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

CASES = CARDINALS + ORDINALS + DECIMALS_NEGATIVES_RANGES + MONEY + PERCENT_TEMPERATURE_UNITS + PHONES + CODES
"""Read with the default options (test_normalize.py counts them with the other topics)."""

OPTION_CASES = [
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


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_default_options(text: str, expected: str) -> None:
    assert normalize(text) == expected


@pytest.mark.parametrize(("options", "text", "expected"), OPTION_CASES)
def test_style_options(options: NormalizeOptions, text: str, expected: str) -> None:
    assert normalize(text, options) == expected


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789 .,:-/$£€%°+#apmhkgAPMBCX", max_size=40))
def test_never_raises_on_number_soup(text: str) -> None:
    normalize(text)
    normalize(text, NormalizeOptions(time_24h="12h", date_order="mdy", hundred_and=True))


def test_huge_number_read_digit_by_digit() -> None:
    assert normalize(str(10**40)) == "one " + " ".join(["zero"] * 40)
