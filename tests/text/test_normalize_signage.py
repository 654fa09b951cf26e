"""Signage and timetable forms (issue 43): Roman numerals, street types, titles, limits and quantities,
durations, ranges, time ranges and weekdays, each with the cases that must stay as written; and the
held-out table (tests/data/signage_heldout.tsv), whose exact-match rate must not fall below its floor."""

from __future__ import annotations

import pytest

from edgetts.text.normalize import NormalizeOptions, normalize
from edgetts.text.normalize.roman import value

from tools.bench_signage import load_table, measure, spoken_words

ROMAN = [
    ("Edward VIII abdicated in 1936.", "Edward the eighth abdicated in nineteen thirty six."),
    ("Pope Benedict XVI visited.", "Pope Benedict the sixteenth visited."),
    ("King Henry IV Road", "King Henry the fourth Road"),
    ("Catherine II of Russia", "Catherine the second of Russia"),
    ("Chapter XX: Evacuation", "Chapter twenty: Evacuation"),
    ("Part I of the tour", "Part one of the tour"),
    ("PART II", "PART two"),
    ("Rocky IV is showing in screen 4.", "Rocky four is showing in screen four."),
    ("Block II, level 3", "Block two, level three"),
    ("IV. Emergency exits", "four. Emergency exits"),
    ("King Henry I", "King Henry the first"),
    ("Vol. II", "Volume two"),
    ("Super Bowl XL", "Super Bowl forty"),
]
ROMAN_KEPT = [
    ("I think I can.", "I think I can."),  # the pronoun
    ("Henry I said", "Henry I said"),  # a lone I after a name is the pronoun without a regnal title
    ("Type C charger", "Type C charger"),  # a lone C, D, L or M is a letter
    ("Block D", "Block D"),
    ("MIX FM", "MIX FM"),
    ("CD and DC", "CD and DC"),
    ("Vitamin C and D", "Vitamin C and D"),
    ("Size XL", "Size XL"),
    ("Malcolm X", "Malcolm X"),
    ("The IV stand is on the left.", "The IV stand is on the left."),
    ("XXL sizes", "XXL sizes"),
    ("John C. Smith", "John C. Smith"),
]
STREETS = [
    ("Luke Street, St Ives", "Luke Street, Saint Ives"),
    ("St. Paul's Cathedral", "Saint Paul's Cathedral"),
    ("Market St. Thank you for shopping.", "Market Street. Thank you for shopping."),  # St. ends the sentence
    ("Bridge St Station", "Bridge Street Station"),
    ("Old St Kensington", "Old Street Kensington"),
    ("London St Pancras", "London Saint Pancras"),
    ("Park Pl", "Park Place"),
    ("Cathedral Ct.", "Cathedral Court."),
    ("Hwy 61 south", "Highway sixty one south"),
    ("the 3rd Ave exit", "the third Avenue exit"),
    ("Lake Pkwy", "Lake Parkway"),
    ("Grand Central Sta.", "Grand Central Station."),
    ("Civic Ctr", "Civic Center"),
    ("Albert Terr", "Albert Terrace"),
    ("from Plat. 9", "from Platform nine"),
]
TITLES = [
    ("Sgt. Pepper", "Sergeant Pepper"),
    ("Mr and Mrs Smith", "Mister and Missus Smith"),
    ("Mr & Mrs Smith", "Mister and Missus Smith"),
    ("MRS A JONES", "Missus eh JONES"),
    ("Capt Nemo", "Captain Nemo"),
    ("Lt. Gen. Ross", "Lieutenant General Ross"),
    ("Rev. Green", "Reverend Green"),
    ("The Rt Hon. Member", "The Right Honorable Member"),
    ("Col Mustard", "Colonel Mustard"),
    ("Cllr Ahmed", "Councillor Ahmed"),
    ("Gen Z", "Gen Z"),  # a generation
    ("col de la Croix", "col de la Croix"),  # only capitalised titles
]
LIMITS = [
    ("Max 4 persons", "Maximum four persons"),
    ("Max. load 250 kg", "Maximum load two hundred fifty kilograms"),
    ("max 2 per customer", "maximum two per customer"),
    ("Min. stay 2 nights", "Minimum stay two nights"),
    ("min spend £20", "minimum spend twenty pounds"),
    ("MIN 2 PERSONS", "minimum two PERSONS"),
    ("Qty. 3", "Quantity three"),
    ("Box of 50 pcs", "Box of fifty pieces"),
    ("Gross wt 20 kg", "Gross weight twenty kilograms"),
    ("Apples 30p ea.", "Apples thirty pence each."),
    ("Max width 7 ft 6 in", "Maximum width seven feet six inches"),
    ("6 ft 2 in tall", "six feet two inches tall"),
    ("TV 42 in", "TV forty two inches"),
    ("Screen 65 in, wall mounted", "Screen sixty five inches, wall mounted"),
    ("Dimensions 30x20x10 cm", "Dimensions thirty by twenty by ten centimeters"),
    ("Weight limit 18t", "Weight limit eighteen tonnes"),
    ("Office 450 sq ft", "Office four hundred fifty square feet"),
    ("No. of bikes: 4", "Number of bikes: four"),
]
LIMITS_KEPT = [
    ("Keep 2 in reserve", "Keep two in reserve"),  # "in" as a word
    ("1 in 3 people", "one in three people"),
    ("Wait 5 in the queue", "Wait five in the queue"),
    ("Doors open in 5 minutes.", "Doors open in five minutes."),
    ("Max Verstappen", "Max Verstappen"),  # a name
    ("Bags of 3.5kg max.", "Bags of three point five kilograms max."),  # said "max"
    ("15 min", "fifteen minutes"),  # after a number, minutes
    ("max and min", "max and min"),  # lower case without a number: words as written
    ("5 t-shirts", "five t-shirts"),
]
DURATIONS = [
    ("Approx. 3 hrs", "Approximately three hours"),
    ("approx 40 mins", "approximately forty minutes"),
    ("3 hrs 45 mins", "three hours forty five minutes"),
    ("1½ hrs", "one and a half hours"),
    ("2¼ hrs", "two and a quarter hours"),
    ("10 secs", "ten seconds"),
    ("Office hrs: 9-5", "Office hours: nine to five"),
    ("½ price", "one half price"),
]
RANGES = [
    ("Gates 5-9", "Gates five to nine"),
    ("pages 30–45", "pages thirty to forty five"),
    ("£10-20", "ten to twenty pounds"),
    ("$3-5 per hour", "three to five dollars per hour"),
    ("£1.50-£2", "one pound fifty to two pounds"),
    ("£5-£10", "five pounds to ten pounds"),  # written twice, said twice
    ("Seats C1-C12", "Seats C one to C twelve"),
    ("Rows B-H", "Rows B to H"),
    ("Rooms A – C", "Rooms eh to C"),
    ("10.5-12.5 kg", "ten point five to twelve point five kilograms"),
]
RANGES_KEPT = [
    ("T-shirts", "T-shirts"),
    ("the X-ray unit", "the X-ray unit"),
    ("Rows H-B", "Rows H-B"),  # out of order: no range
    ("Call 0161 496 0000 ext 204", "Call oh one six one, four nine six, oh oh oh oh extension two oh four"),
]
TIME_RANGES = [
    ("08:00–18:00", "eight hundred to eighteen hundred"),
    ("7am–9pm", "seven eh m to nine p m"),
    ("8.45-16.15", "eight forty five to sixteen fifteen"),
    ("9.15-11.45am", "nine fifteen to eleven forty five eh m"),
    ("0600-2200", "six hundred to twenty two hundred"),
    ("Open 10-4", "Open ten to four"),
]
WEEKDAYS = [
    ("Mon-Thu 9-5", "Monday to Thursday nine to five"),
    ("Fri & Sat 10pm-3am", "Friday and Saturday ten p m to three eh m"),
    ("Tue, Thu", "Tuesday, Thursday"),
    ("Sat 10:00", "Saturday ten o'clock"),
    ("Wed/Fri", "Wednesday and Friday"),
    ("Mon/Wed/Fri", "Monday, Wednesday and Friday"),
    ("Sun 10am-4pm", "Sunday ten eh m to four p m"),
    ("Mon to Sat", "Monday to Saturday"),
    ("Closed Sun", "Closed Sunday"),
    ("every Sun", "every Sunday"),
    ("Sun, Mon", "Sunday, Monday"),
    ("M-F 8am-6pm", "Monday to Friday eight eh m to six p m"),
    ("TUES-SAT", "Tuesday to Saturday"),
    ("Open Fri", "Open Friday"),
]
WEEKDAYS_KEPT = [
    ("The Sun is out.", "The Sun is out."),
    ("Sat down.", "Sat down."),
    ("Sun Life Insurance", "Sun Life Insurance"),
    ("Sun & Sea Travel", "Sun and Sea Travel"),
    ("They wed in May.", "They wed in May."),
]
CASES = (
    ROMAN
    + ROMAN_KEPT
    + STREETS
    + TITLES
    + LIMITS
    + LIMITS_KEPT
    + DURATIONS
    + RANGES
    + RANGES_KEPT
    + TIME_RANGES
    + WEEKDAYS
    + WEEKDAYS_KEPT
)


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_signage(text: str, expected: str) -> None:
    assert normalize(text) == expected


def test_roman_values() -> None:
    assert [value(n) for n in ("I", "IV", "IX", "XIV", "XL", "LVIII", "MCMXCIX")] == [1, 4, 9, 14, 40, 58, 1999]


def test_options_apply_inside_signage_forms() -> None:
    options = NormalizeOptions(hundred_and=True, letter_a="A")
    assert normalize("Louis CXV", options) == "Louis the one hundred and fifteenth"
    assert normalize("Coaches A-D", options) == "Coaches A to D"
    assert normalize("£105-110", options) == "one hundred and five to one hundred and ten pounds"


def test_normalising_twice_is_harmless() -> None:
    for text, _ in CASES:
        once = normalize(text)
        assert normalize(once) == once, text


# Floors a few points below what the rules reached on the table (1.0 overall and in every family);
# the rates before them, 0.502 overall, are recorded in tools/bench_signage.py.
FLOOR = 0.95
FAMILY_FLOOR = 0.85


def test_the_held_out_table_is_read_right() -> None:
    lines = load_table()
    result = measure(lines)
    assert result["lines"] >= 150
    assert result["exact_match"] >= FLOOR, result
    low = {family: r["exact_match"] for family, r in result["by_family"].items() if r["exact_match"] < FAMILY_FLOOR}
    assert not low, low
    assert set(result["by_family"]) == {
        "roman",
        "street",
        "title",
        "limits",
        "duration",
        "range",
        "time_range",
        "weekday",
    }


def test_the_table_compares_spoken_words() -> None:
    assert spoken_words("Platform 3, please. It's nine o'clock!") == "platform 3 please it's nine o'clock"
