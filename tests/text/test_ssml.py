"""The SSML subset: every supported tag, and rejection of everything else with a reason."""

from __future__ import annotations

import pytest

from edgetts.errors import EdgeTTSError
from edgetts.text.normalize import NormalizeOptions
from edgetts.text.prepare import Break, Phonemes, Speak, prepare
from edgetts.text.ssml import SSMLError, looks_like_ssml


def run(body: str, **kwargs: object) -> list[object]:
    return prepare(f"<speak>{body}</speak>", **kwargs)  # type: ignore[arg-type]


def test_ssml_error_is_an_edgetts_error() -> None:
    assert issubclass(SSMLError, EdgeTTSError)


class TestDetection:
    @pytest.mark.parametrize(
        "text",
        [
            "<speak>x</speak>",
            "  \n<speak version='1.0'>x</speak>",
            "<?xml version='1.0'?><speak>x</speak>",
        ],
    )
    def test_detected(self, text: str) -> None:
        assert looks_like_ssml(text)

    @pytest.mark.parametrize("text", ["speak now", "<b>bold</b>", "Gate < 5"])
    def test_not_detected(self, text: str) -> None:
        assert not looks_like_ssml(text)

    def test_auto_reads_ssml(self) -> None:
        assert prepare("<speak>Hello</speak>") == [Speak("Hello")]

    def test_forced_plain_reads_tags_as_text_without_raising(self) -> None:
        assert prepare("<speak>Hello</speak>", ssml=False) != []


class TestSpeak:
    def test_plain_text_is_normalised(self) -> None:
        assert run("Gate 17 at 14:05") == [Speak("Gate seventeen at fourteen oh five")]

    def test_namespace_and_lang_accepted(self) -> None:
        text = '<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" xml:lang="en-GB">Hello</speak>'
        assert prepare(text) == [Speak("Hello")]

    def test_predefined_entities_are_text(self) -> None:
        assert run("Marks &amp; Spencer") == [Speak("Marks and Spencer")]

    def test_comments_ignored(self) -> None:
        assert run("Hello <!-- not this --> world") == [Speak("Hello world")]

    def test_empty_document_gives_nothing(self) -> None:
        assert prepare("<speak></speak>") == []
        assert prepare("<speak> <break time='1s'/> </speak>") == []


class TestBreak:
    @pytest.mark.parametrize(
        ("attr", "seconds"),
        [
            ('time="500ms"', 0.5),
            ('time="2s"', 2.0),
            ('time="1.5s"', 1.5),
            ('time="250 ms"', 0.25),
            ('time="60s"', 10.0),
            ('strength="weak"', 0.25),
            ('strength="medium"', 0.5),
            ('strength="strong"', 0.75),
            ('strength="x-strong"', 1.25),
            ("", 0.5),
        ],
    )
    def test_durations(self, attr: str, seconds: float) -> None:
        assert run(f"One <break {attr}/> two") == [Speak("One"), Break(seconds), Speak("two")]

    def test_strength_none_is_no_break(self) -> None:
        assert run('One <break strength="none"/> two') == [Speak("One two")]

    def test_adjacent_breaks_add_up(self) -> None:
        assert run('A <break time="1s"/><break time="500ms"/> B') == [
            Speak("A"),
            Break(1.5),
            Speak("B"),
        ]

    @pytest.mark.parametrize("attr", ['time="fast"', 'time="-1s"', 'time="5"', 'strength="huge"'])
    def test_bad_values(self, attr: str) -> None:
        with pytest.raises(SSMLError, match="<break>"):
            run(f"x <break {attr}/>")

    def test_break_with_text_rejected(self) -> None:
        with pytest.raises(SSMLError, match="<break>.*must be empty"):
            run("x <break>text</break>")


class TestSayAs:
    @pytest.mark.parametrize(
        ("attrs", "content", "words"),
        [
            ('interpret-as="characters"', "ABC", "eh B C"),
            ('interpret-as="spell-out"', "kx19", "K X one nine"),
            ('interpret-as="digits"', "3105", "three one oh five"),
            ('interpret-as="cardinal"', "1,234", "one thousand two hundred thirty four"),
            ('interpret-as="number"', "-7", "minus seven"),
            ('interpret-as="cardinal"', "2024", "two thousand twenty four"),
            ('interpret-as="ordinal"', "22", "twenty second"),
            ('interpret-as="ordinal"', "3rd", "third"),
            ('interpret-as="time"', "14:05", "fourteen oh five"),
            ('interpret-as="time"', "2:30pm", "two thirty p m"),
            ('interpret-as="time"', "9 am", "nine eh m"),
            ('interpret-as="date"', "12/03/2025", "the twelfth of March twenty twenty five"),
            (
                'interpret-as="date" format="mdy"',
                "12/03/2025",
                "the third of December twenty twenty five",
            ),
            (
                'interpret-as="date" format="ymd"',
                "2025-03-12",
                "the twelfth of March twenty twenty five",
            ),
            ('interpret-as="date" format="dm"', "3/4", "the third of April"),
            (
                'interpret-as="telephone"',
                "0161 496 0000",
                "oh one six one, four nine six, oh oh oh oh",
            ),
        ],
    )
    def test_reads(self, attrs: str, content: str, words: str) -> None:
        assert run(f"<say-as {attrs}>{content}</say-as>") == [Speak(words)]

    def test_options_apply(self) -> None:
        opts = NormalizeOptions(time_24h="12h", say_zero_as="zero")
        assert run('<say-as interpret-as="time">14:05</say-as>', options=opts) == [Speak("two oh five p m")]
        assert run('<say-as interpret-as="digits">10</say-as>', options=opts) == [Speak("one zero")]

    def test_merges_with_surrounding_text(self) -> None:
        body = 'Call <say-as interpret-as="digits">999</say-as> now.'
        assert run(body) == [Speak("Call nine nine nine now.")]

    @pytest.mark.parametrize(
        ("attrs", "content", "message"),
        [
            ('interpret-as="colour"', "red", "interpret-as='colour' is not one of"),
            ('interpret-as="cardinal"', "abc", "'abc' cannot be read as cardinal"),
            ('interpret-as="time"', "25:00", "cannot be read as time"),
            ('interpret-as="date"', "31/02/2025", "cannot be read as date"),
            ('interpret-as="date" format="xyz"', "1/2/3", "format='xyz'"),
            ('interpret-as="cardinal" format="dmy"', "5", "format is only supported"),
            ("", "5", "'interpret-as' is required"),
            ('interpret-as="digits" detail="1"', "5", "unsupported attribute 'detail'"),
        ],
    )
    def test_rejections(self, attrs: str, content: str, message: str) -> None:
        with pytest.raises(SSMLError, match=message):
            run(f"<say-as {attrs}>{content}</say-as>")

    def test_no_child_elements(self) -> None:
        with pytest.raises(SSMLError, match="<say-as>.*must not contain other elements"):
            run('<say-as interpret-as="digits">1<break/>2</say-as>')


class TestSub:
    def test_alias_replaces_content_and_is_normalised(self) -> None:
        assert run('Go to <sub alias="St. Pancras at 14:05">SPX</sub>.') == [
            Speak("Go to Saint Pancras at fourteen oh five.")
        ]

    def test_alias_required(self) -> None:
        with pytest.raises(SSMLError, match="<sub>.*'alias' is required"):
            run("<sub>SPX</sub>")


class TestProsody:
    @pytest.mark.parametrize(
        ("rate", "factor"),
        [
            ("x-slow", 0.6),
            ("slow", 0.8),
            ("medium", 1.0),
            ("fast", 1.25),
            ("x-fast", 1.5),
            ("80%", 0.8),
            ("150%", 1.5),
            ("+10%", 1.1),
            ("-20%", 0.8),
            ("1.2", 1.2),
            ("0.5", 0.5),
        ],
    )
    def test_rate(self, rate: str, factor: float) -> None:
        [seg] = run(f'<prosody rate="{rate}">Hello</prosody>')
        assert isinstance(seg, Speak) and seg.rate == pytest.approx(factor) and seg.volume == 1.0

    @pytest.mark.parametrize(
        ("volume", "gain"),
        [
            ("silent", 0.0),
            ("x-soft", 10 ** (-12 / 20)),
            ("soft", 10 ** (-6 / 20)),
            ("medium", 1.0),
            ("loud", 10 ** (6 / 20)),
            ("x-loud", 10 ** (12 / 20)),
            ("+6dB", 10 ** (6 / 20)),
            ("-3dB", 10 ** (-3 / 20)),
            ("0dB", 1.0),
        ],
    )
    def test_volume(self, volume: str, gain: float) -> None:
        [seg] = run(f'<prosody volume="{volume}">Hello</prosody>')
        assert isinstance(seg, Speak) and seg.volume == pytest.approx(gain, rel=1e-5)

    def test_nesting_multiplies_and_restores(self) -> None:
        body = '<prosody rate="slow" volume="+6dB">Mind <prosody rate="80%">the gap</prosody></prosody> now'
        a, b, c = run(body)
        assert isinstance(a, Speak) and isinstance(b, Speak) and isinstance(c, Speak)
        assert (a.text, a.rate, a.volume) == ("Mind", 0.8, pytest.approx(1.995262, rel=1e-5))
        assert (b.text, b.rate) == ("the gap", pytest.approx(0.64))
        assert (c.text, c.rate, c.volume) == ("now", 1.0, 1.0)

    def test_equal_prosody_merges(self) -> None:
        body = '<prosody rate="fast">One</prosody><prosody rate="fast">two</prosody>'
        assert run(body) == [Speak("One two", rate=1.25)]

    @pytest.mark.parametrize(
        ("attr", "message"),
        [
            ('rate="warp"', "rate='warp'"),
            ('rate="9"', "rate='9'"),
            ('rate="+0.2"', "rate='\\+0.2'"),
            ('volume="11"', "volume='11'"),
            ('volume="+30dB"', "volume='\\+30dB'"),
            ('pitch="high"', "unsupported attribute 'pitch'"),
        ],
    )
    def test_bad_values(self, attr: str, message: str) -> None:
        with pytest.raises(SSMLError, match="<prosody>.*" + message):
            run(f"<prosody {attr}>x</prosody>")


class TestPhoneme:
    def test_ipa_bypasses_normalisation(self) -> None:
        assert run('Next stop <phoneme alphabet="ipa" ph="ɹˈɛdɪŋ">Reading</phoneme>.') == [
            Speak("Next stop"),
            Phonemes("ɹˈɛdɪŋ"),
        ]

    def test_prosody_carries_to_phonemes(self) -> None:
        assert run('<prosody rate="fast"><phoneme ph="lˈɛstɚ">Leicester</phoneme></prosody>') == [
            Phonemes("lˈɛstɚ", rate=1.25)
        ]

    @pytest.mark.parametrize(
        ("attrs", "message"),
        [
            ('ph="x" alphabet="x-sampa"', "alphabet='x-sampa' is not supported"),
            ('ph="  "', "'ph' is empty"),
            ("", "'ph' is required"),
        ],
    )
    def test_rejections(self, attrs: str, message: str) -> None:
        with pytest.raises(SSMLError, match="<phoneme>.*" + message):
            run(f"<phoneme {attrs}>x</phoneme>")


class TestSentencesAndParagraphs:
    def test_s_ends_sentences(self) -> None:
        assert run("<s>Platform two</s><s>Mind the gap</s>") == [Speak("Platform two. Mind the gap.")]

    def test_s_keeps_existing_question_mark(self) -> None:
        assert run("<s>Is this it?</s><s>Yes</s>") == [Speak("Is this it? Yes.")]

    def test_p_pauses_between_paragraphs(self) -> None:
        assert run("<p>First</p><p><s>Second</s></p>") == [
            Speak("First."),
            Break(0.5),
            Speak("Second."),
        ]


class TestRejection:
    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("<speak><foo>x</foo></speak>", "<foo> at speak/foo: unsupported element"),
            ("<speak><audio src='x.wav'/></speak>", "<audio>.*unsupported element"),
            ("<speak><s>unclosed</speak>", "not well-formed"),
            ("<speak>unclosed", "not well-formed"),
            ("<speak><break time='1s'></speak>", "not well-formed"),
            ("<speak><speak>x</speak></speak>", "may only be the root element"),
            ("<speak><s><speak>x</speak></s></speak>", "may only be the root element"),
            ("<speak>&foo;</speak>", "undefined entity"),
            ('<!DOCTYPE speak [<!ENTITY a "aaaa">]><speak>&a;</speak>', "DOCTYPE"),
            (
                (
                    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
                    '<!ENTITY lol2 "&lol;&lol;">]><speak>&lol2;</speak>'
                ),
                "DOCTYPE",
            ),
            ("<speak foo='1'>x</speak>", "<speak>.*unsupported attribute 'foo'"),
            ("<speak><s id='1'>x</s></speak>", "<s>.*unsupported attribute 'id'"),
            ("<speak><x:y xmlns:x='urn:x'>z</x:y></speak>", "unknown namespace"),
            ("<?xml version='1.0'?><p>x</p>", "root element must be <speak>"),
            ("<speak>" + "<s>" * 40 + "x" + "</s>" * 40 + "</speak>", "nested more than"),
        ],
    )
    def test_rejected_with_reason(self, text: str, message: str) -> None:
        with pytest.raises(SSMLError, match=message):
            prepare(text)

    def test_doctype_detected_even_in_auto_mode(self) -> None:
        with pytest.raises(SSMLError, match="DOCTYPE"):
            prepare("<!DOCTYPE speak><speak>x</speak>")

    def test_forced_ssml_on_plain_text_rejected(self) -> None:
        with pytest.raises(SSMLError):
            prepare("Just words", ssml=True)
