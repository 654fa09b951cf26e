"""Every espeak-ng language reads with its dictionary, and a missing one is refused at load, never silent."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edgetts.errors import PhonemizerError
from edgetts.voice.piper import phonemize as phonemize_module
from edgetts.voice.piper.espeak_voices import check_dictionary, dictionary_of, voice_file
from edgetts.voice.piper.phonemize import espeak_data_path, phonemize
from edgetts.voice.piper.voice import PiperVoice

DATA = espeak_data_path() / "espeak-ng-data"

# One announcement-like line per language of Piper voices edgetts did not ship a dictionary for
# before (the shipped voice's en and the de/fr/es/cmn of issue 16 had theirs).
LINES = {
    "it": "Buongiorno a tutti. Il treno per Milano parte dal binario tre.",
    "nl": "Goedemorgen. De trein naar Utrecht vertrekt van spoor vier.",
    "pl": "Dzień dobry. Pociąg do Krakowa odjedzie z peronu drugiego.",
    "pt-br": "Bom dia a todos. O trem para Lisboa parte da plataforma dois.",
    "sv": "God morgon. Tåget till Göteborg avgår från spår tre.",
    "uk": "Доброго ранку. Потяг до Києва відправляється з першої колії.",
    "tr": "Günaydın. İstanbul treni üçüncü perondan kalkacak.",
    "cs": "Dobrý den. Vlak do Brna odjede z druhé koleje.",
    "fi": "Hyvää huomenta. Juna Tampereelle lähtee raiteelta kolme.",
    "el": "Καλημέρα. Το τρένο για την Αθήνα αναχωρεί από την αποβάθρα δύο.",
    "ar": "صباح الخير. القطار إلى القاهرة يغادر من الرصيف الثاني.",
    "vi": "Xin chào. Tàu đi Hà Nội khởi hành từ sân ga số ba.",
    "ro": "Bună dimineața. Trenul spre București pleacă de la linia trei.",
    "hu": "Jó reggelt. A budapesti vonat a harmadik vágányról indul.",
    "da": "Godmorgen. Toget til Aarhus afgår fra spor tre.",
    "nb": "God morgen. Toget til Bergen går fra spor tre.",
    "sk": "Dobré ráno. Vlak do Bratislavy odchádza z tretej koľaje.",
    "ca": "Bon dia. El tren cap a Girona surt de la via tres.",
    "id": "Selamat pagi. Kereta ke Bandung berangkat dari jalur tiga.",
    "hi": "सुप्रभात। दिल्ली जाने वाली ट्रेन प्लेटफार्म तीन से जाएगी।",
    "fa": "صبح بخیر. قطار تهران از سکوی سه حرکت می کند.",
    "sr": "Dobro jutro. Voz za Beograd polazi sa trećeg koloseka.",
    "ka": "დილა მშვიდობისა. მატარებელი თბილისში გადის მესამე ბაქანიდან.",
    "kk": "Қайырлы таң. Алматыға пойыз үшінші жолдан жөнейді.",
    "lv": "Labrīt. Vilciens uz Rīgu atiet no trešā ceļa.",
    "sw": "Habari za asubuhi. Treni ya Dodoma inaondoka kutoka jukwaa la tatu.",
    "cy": "Bore da. Mae'r trên i Gaerdydd yn gadael o blatfform tri.",
    "is": "Góðan daginn. Lestin til Akureyrar fer frá spori þrjú.",
    "lb": "Gudde Moien. Den Zuch op Ettelbréck fiert vum Quai dräi of.",
    "sl": "Dobro jutro. Vlak za Ljubljano odpelje s tretjega tira.",
    "ne": "शुभ प्रभात। काठमाडौं जाने रेल तीन नम्बर प्लेटफर्मबाट छुट्छ।",
    "ml": "സുപ്രഭാതം. കൊച്ചിയിലേക്കുള്ള ട്രെയിൻ മൂന്നാം പ്ലാറ്റ്ഫോമിൽ നിന്ന് പുറപ്പെടും.",
    "te": "శుభోదయం. హైదరాబాద్ రైలు మూడవ ప్లాట్‌ఫారమ్ నుండి బయలుదేరుతుంది.",
    "ru": "Доброе утро. Поезд до Москвы отправляется с третьего пути.",
}
R_TAP = ("it", "ro", "sw")
"""Where the 1.52 library writes ``r`` and piper-tts's build ``ɾ`` (Italian "treno", "per"; Romanian and
Swahili "tren"): a difference of the library's code, not of the data, not yet bridged in phonemize.py."""
STRESS = ("ru",)
"""Russian reads without its extra word list (build_espeak_data.UNAVAILABLE): other stresses than piper-tts's."""

_PIPER = r"""
import json, sys
from piper.phonemize_espeak import EspeakPhonemizer
lines = json.loads(sys.stdin.read())
phonemizer = EspeakPhonemizer()  # piper-tts's own espeak-ng and data: the oracle
print(json.dumps({lang: phonemizer.phonemize(lang, text) for lang, text in lines.items()}))
"""


def test_espeak_names_dictionaries_as_its_voice_files_say() -> None:
    assert voice_file(DATA, "en-us") == DATA / "lang" / "gmw" / "en-US"
    assert [dictionary_of(DATA, v) for v in ("en-us", "it", "cmn", "nb", "de-de", "yue", "pt-BR", "en-us+f3")] == [
        "en",
        "it",
        "cmn",
        "no",
        "de",
        "yue",
        "pt",
        "en",
    ]
    assert dictionary_of(DATA, "xx-made-up") is None


def test_every_language_file_has_its_dictionary_in_the_shipped_data() -> None:
    """But four: espeak-ng 724808c has their language files and no dictionary for them (its data.cmake
    builds none, and piper-tts 1.8.0 ships none): a voice of those is refused at load."""
    voices = sorted(p.name for p in (DATA / "lang").rglob("*") if p.is_file())
    assert len(voices) > 100
    missing = {v: dictionary_of(DATA, v) for v in voices if not (DATA / f"{dictionary_of(DATA, v)}_dict").is_file()}
    assert missing == {"fo": "fo", "kaa": "kaa", "ps": "ps", "xex": "xex"}
    with pytest.raises(PhonemizerError, match="fo_dict is not in the espeak-ng data"):
        check_dictionary(DATA, "fo")


def test_a_data_copy_lacking_a_dictionary_is_refused_naming_it(tmp_path: Path) -> None:
    copy = tmp_path / "espeak-ng-data"
    shutil.copytree(DATA / "lang", copy / "lang")
    shutil.copyfile(DATA / "en_dict", copy / "en_dict")
    check_dictionary(copy, "en-us")
    with pytest.raises(PhonemizerError) as err:
        check_dictionary(copy, "it")
    assert str(err.value) == (
        f"espeak-ng voice 'it' reads language 'it', whose dictionary it_dict is not in the "
        f"espeak-ng data {copy} (rebuild it: tools/build_espeak_data.py)"
    )


def test_loading_a_voice_whose_dictionary_is_missing_fails_clearly(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tools.make_test_voice import make_voice

    assert phonemize("Buongiorno a tutti.", "it") != [["."]]  # the shipped data has it_dict
    copy = tmp_path / "data" / "espeak-ng-data"
    shutil.copytree(DATA, copy, ignore=lambda _d, names: [n for n in names if n == "it_dict"])
    espeak = phonemize_module._Espeak.get()
    monkeypatch.setattr(espeak, "_data", copy)  # what the library was given, for the check
    espeak._voice = None  # not restored by monkeypatch: None makes the next call set its voice again
    with pytest.raises(
        PhonemizerError, match=f"language 'it', whose dictionary it_dict is not in the espeak-ng data {copy}"
    ):
        PiperVoice.load(make_voice(tmp_path, "ok", language="it"))
    with pytest.raises(PhonemizerError, match="language 'it'"):
        phonemize("Buongiorno a tutti.", "it")
    assert phonemize("Hello.", "en-us")  # other voices are unaffected
    espeak._voice = None


def test_loading_a_voice_espeak_ng_does_not_know_fails_clearly(tmp_path: Path) -> None:
    from tools.make_test_voice import make_voice

    with pytest.raises(PhonemizerError, match=f"no voice named 'xx-made-up' \\(no language file in {DATA}\\)"):
        PiperVoice.load(make_voice(tmp_path, "ok", language="xx-made-up"))


def _joined(sentences: list[list[str]]) -> list[str]:
    return ["".join(s) for s in sentences]


def test_other_languages_read_as_piper_tts_reads_them() -> None:
    """With every dictionary shipped, 30 of these 34 languages phonemize exactly as piper-tts 1.8.0 does;
    the other four differ in two known ways, each pinned to what it is."""
    done = subprocess.run(
        [sys.executable, "-c", _PIPER], input=json.dumps(LINES), capture_output=True, text=True, check=True, timeout=300
    )
    oracle = {lang: _joined(sentences) for lang, sentences in json.loads(done.stdout).items()}
    ours = {lang: _joined(phonemize(text, lang)) for lang, text in LINES.items()}
    assert all(len(sentences) == 2 and min(map(len, sentences)) > 8 for sentences in ours.values()), ours
    same = {lang for lang in LINES if lang not in R_TAP + STRESS}
    assert {lang: ours[lang] for lang in same} == {lang: oracle[lang] for lang in same}
    for lang in R_TAP:  # the same phonemes but for r where piper-tts has ɾ
        assert [len(s) for s in ours[lang]] == [len(s) for s in oracle[lang]]
        pairs = {(a, b) for mine, theirs in zip(ours[lang], oracle[lang]) for a, b in zip(mine, theirs) if a != b}
        assert pairs == {("r", "ɾ")}, lang
    assert ours["ru"][0] != oracle["ru"][0] and ours["ru"][0].replace("ˈ", "") != ours["ru"][0]
