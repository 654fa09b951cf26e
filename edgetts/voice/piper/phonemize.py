"""espeak-ng phonemization, producing what a Piper voice was trained on.

The library is libespeak-ng 1.52 shipped in the ``espeakng-loader`` wheel
(x86_64 and aarch64), driven through ctypes, so no system espeak-ng or
compiler is needed on a board.  Its data is not the wheel's (1.52.0's): it is
the data of espeak-ng 724808c, the commit piper-tts 1.8.0 builds, compiled by
that commit's own code and shipped in ``edgetts/data/espeak`` (see
:func:`espeak_data_path`); 1.52.0's English dictionary reads "has been" as
``hˈæzbiːn`` where piper-tts reads ``hɐzbɪn``.

Two details of the library make the output match piper-tts 1.8.0 (which links
its own espeak-ng build) phoneme for phoneme:

* Clause terminators.  piper asks espeak-ng for the punctuation that ended each
  clause (a function only its fork exports) and appends it to the phonemes; a
  sentence ends at ``.``, ``?``, ``!`` or the end of the text.  The stock
  library only advances a text pointer, so the terminator is read from the
  text that clause consumed (see :func:`clause_terminator`).
* The English linking glide.  espeak-ng writes the phoneme ``;`` between a
  final ``i``/``iː`` and a following vowel ("the alarm").  Newer espeak-ng
  (piper's) writes it as ``ʲ`` in IPA; 1.52.0 writes nothing.  We phonemize
  twice, IPA and espeak's own mnemonics, with a separator between phonemes, and
  put ``ʲ`` where the mnemonic pass shows ``;`` and the IPA pass has nothing.

espeak-ng is a process-wide C library with global state, so every call holds
one lock.
"""

from __future__ import annotations

import ctypes
import logging
import re
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from edgetts.errors import PhonemizerError
from edgetts.voice.piper.espeak_voices import check_dictionary

_LOGGER = logging.getLogger(__name__)

_AUDIO_OUTPUT_SYNCHRONOUS = 0x02
_CHARS_AUTO = 0  # what piper-tts passes: UTF-8, detected
_PHONEMES_IPA = 0x02
# Bits 8-23 of the phoneme mode hold a separator written between phonemes.
_SEPARATOR = "\x7f"  # DEL: never part of espeak-ng's IPA or mnemonic output
_SEPARATED = ord(_SEPARATOR) << 8
_LINK_MNEMONIC = ";"
_LINK_IPA = "ʲ"
_VOWELS = frozenset("aeiouyæɑɐɒɔəɘɚɛɜɞɤɨɪʉʊʌʏøœɶɯɵ")

_SENTENCE_END = frozenset(".?!")
# Marks of other scripts (issue 16), as espeak-ng classes them and piper-tts writes them.  Those
# espeak-ng lets end a clause with no space after (CJK, danda) carry a flag that piper-tts's
# terminator test does not expect: the clause ends, a sentence too for a full stop, ? or !, but no
# punctuation is written.  The others are written as their ASCII counterpart.
_NO_SPACE_SENTENCE_END = frozenset("\u3002\uff0e\uff01\uff1f\u0964\u0589")  # 。．！？ danda, Armenian
_NO_SPACE_CLAUSE = frozenset("\u3001\uff0c\uff1a\uff1b")  # 、，：；
_AS_ASCII = {"\u061f": "?", "\u060c": ",", "\u061b": ";", "\u06d4": ".", "\u037e": "?", "\u0387": ";"}
_MARKS = ".?!,:;\u2026" + "".join(_NO_SPACE_SENTENCE_END | _NO_SPACE_CLAUSE) + "".join(_AS_ASCII)
# Closing quotes and brackets may follow a clause's punctuation: `he said "go."`
_CLOSERS = "\"')]}»”’›」』）》〉】〕"  # CJK brackets too: 「列车晚点。」然后
_LANG_SWITCH = re.compile(r"\([^)]+\)")


@dataclass(frozen=True)
class Clause:
    """One clause as espeak-ng saw it."""

    phonemes: str
    """IPA phonemes of the clause's words (no punctuation)."""

    terminator: str
    """The punctuation that ended it: one of ``. ? ! , : ;`` or ``""``."""

    ends_sentence: bool
    """True when a sentence ends after this clause."""


def espeak_data_path() -> Path:
    """The folder holding the shipped ``espeak-ng-data`` (what ``espeak_Initialize`` is given).

    It is espeak-ng 724808c's data, built by ``tools/build_espeak_data.py``
    (provenance in its ``PROVENANCE``): the data piper-tts 1.8.0 ships, read by
    espeakng-loader's 1.52 library (issue 16).
    """
    path = Path(__file__).resolve().parents[2] / "data" / "espeak"
    if not (path / "espeak-ng-data" / "phontab").is_file():
        raise PhonemizerError(f"the espeak-ng data is missing from {path} (rebuild: tools/build_espeak_data.py)")
    return path


class _Espeak:
    """The loaded libespeak-ng: one per process, used under ``lock``."""

    lock = threading.Lock()
    _instance: _Espeak | None = None

    def __init__(self, library_path: str, data_parent: str) -> None:
        try:
            lib = ctypes.CDLL(library_path)
        except OSError as err:
            raise PhonemizerError(f"cannot load espeak-ng library {library_path}: {err}") from err
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_TextToPhonemes.argtypes = [
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.c_int,
            ctypes.c_int,
        ]
        lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        rate = lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, data_parent.encode(), 0)
        if rate <= 0:
            raise PhonemizerError(f"espeak-ng failed to initialise with data in {data_parent}")
        self._lib = lib
        self._data = Path(data_parent) / "espeak-ng-data"
        self._voice: str | None = None

    @classmethod
    def get(cls) -> _Espeak:
        """The process's espeak-ng, loaded on first use (call with ``lock`` held)."""
        if cls._instance is None:
            try:
                import espeakng_loader
            except ImportError as err:  # pragma: no cover - a broken install
                raise PhonemizerError("the espeakng-loader package is missing: pip install espeakng-loader") from err
            cls._instance = cls(espeakng_loader.get_library_path(), str(espeak_data_path()))
        return cls._instance

    def set_voice(self, voice: str) -> None:
        if voice != self._voice:
            # espeak-ng takes a voice whose dictionary is missing and then reads every word as nothing.
            check_dictionary(self._data, voice)
            if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise PhonemizerError(f"espeak-ng has no voice named {voice!r} (no language file in {self._data})")
            self._voice = voice

    def clauses(self, text: str, mode: int) -> list[tuple[str, str]]:
        """(phonemes, text consumed) for each clause of ``text``."""
        raw = text.encode("utf-8") + b"\0"
        buf = ctypes.create_string_buffer(raw, len(raw))
        base = ctypes.addressof(buf)
        pointer = ctypes.c_void_p(base)
        out: list[tuple[str, str]] = []
        while pointer.value:
            start = pointer.value - base
            result = self._lib.espeak_TextToPhonemes(ctypes.byref(pointer), _CHARS_AUTO, mode)
            end = pointer.value - base if pointer.value else len(raw) - 1
            phonemes = result.decode("utf-8", errors="replace") if result else ""
            out.append((phonemes, raw[start:end].decode("utf-8", errors="replace")))
        return out


def check_voice(voice: str) -> None:
    """Raise PhonemizerError unless espeak-ng can read text as ``voice``: it knows the voice, and
    the data holds the dictionary of its language (what loading a Piper voice checks)."""
    with _Espeak.lock:
        _Espeak.get().set_voice(voice)


def clause_terminator(consumed: str, is_last: bool) -> tuple[str, bool]:
    """The punctuation that ended a clause, and whether it ended a sentence.

    espeak-ng reads one character past a clause before it returns, so every
    clause but the last has consumed the first character of the next one.
    In a run of marks the first one counts ("What?!" is a question), and an
    ellipsis is a pause inside the sentence that piper-tts writes as nothing.
    """
    if not is_last and consumed:
        consumed = consumed[:-1]
    tail = consumed.rstrip().rstrip(_CLOSERS).rstrip()
    marks = tail[len(tail.rstrip(_MARKS)) :]
    if "..." in marks or "\u2026" in marks:
        return "", is_last
    if marks:
        if marks[0] in _NO_SPACE_SENTENCE_END or marks[0] in _NO_SPACE_CLAUSE:
            return "", is_last or marks[0] in _NO_SPACE_SENTENCE_END
        mark = _AS_ASCII.get(marks[0], marks[0])
        return mark, is_last or mark in _SENTENCE_END
    # A blank line is a paragraph end: a sentence end with no punctuation.
    paragraph = "\n\n" in consumed[len(tail) :].replace("\r", "")
    return "", is_last or paragraph


def _phone(ipa_phones: list[str], mnemonic_phones: list[str], i: int, german: bool) -> str:
    """The IPA of phone ``i`` of a word as piper-tts's espeak-ng writes it.

    Its IPA writer evaluates the phoneme tables with every ``prevPh`` condition false
    (espeak-ng issue 2367, a regression after 1.52).  Two effects show: the linking ``;``
    after ``i`` is written ``ʲ``, and German ``r`` before a vowel is ``r`` where 1.52 writes
    the tap ``ɾ`` (after t, d, b, g, k, p: "drei", "Express"; issue 16).
    """
    phone, mnem = ipa_phones[i], mnemonic_phones[i]
    if not phone and mnem == _LINK_MNEMONIC:
        return _LINK_IPA
    after_schwa = i > 0 and mnemonic_phones[i - 1] == "@-"
    if german and phone == "ɾ" and mnem == "r" and i + 1 < len(ipa_phones) and not after_schwa:
        return "r" if ipa_phones[i + 1].lstrip("ˈˌ")[:1] in _VOWELS else phone
    return phone


def _is_german(voice: str) -> bool:
    return voice.split("-")[0].lower() == "de"


def _needs_mnemonic(ipa_word: str, german: bool) -> bool:
    """Whether :func:`_phone` can write anything but the IPA itself in ``ipa_word``: only where a
    phone is empty (espeak-ng's link ``;``, which 1.52 writes as nothing) or, in German, at a tap."""
    return (
        not ipa_word
        or ipa_word.startswith(_SEPARATOR)
        or ipa_word.endswith(_SEPARATOR)
        or _SEPARATOR * 2 in ipa_word
        or (german and "ɾ" in ipa_word)
    )


def _with_link_glides(ipa: str, mnemonic: str, voice: str = "") -> str:
    """Join separated IPA phonemes as piper-tts's espeak-ng writes them (:func:`_phone`)."""
    ipa_words = ipa.split(" ")
    mnemonic_words = mnemonic.split(" ")
    if len(ipa_words) != len(mnemonic_words):
        _LOGGER.debug("glide alignment failed (words): %r / %r", ipa, mnemonic)
        return ipa.replace(_SEPARATOR, "")
    german = _is_german(voice)
    words: list[str] = []
    for ipa_word, mnemonic_word in zip(ipa_words, mnemonic_words):
        if not _needs_mnemonic(ipa_word, german):
            words.append(ipa_word.replace(_SEPARATOR, ""))
            continue
        ipa_phones = ipa_word.split(_SEPARATOR)
        mnemonic_phones = mnemonic_word.split(_SEPARATOR)
        if len(ipa_phones) != len(mnemonic_phones):
            _LOGGER.debug("glide alignment failed (phones): %r / %r", ipa_word, mnemonic_word)
            words.append("".join(ipa_phones))
            continue
        words.append("".join(_phone(ipa_phones, mnemonic_phones, i, german) for i in range(len(ipa_phones))))
    return " ".join(words)


def phonemize_clauses(text: str, voice: str) -> list[Clause]:
    """espeak-ng's clauses of ``text`` with IPA phonemes and their terminators."""
    german = _is_german(voice)
    with _Espeak.lock:
        espeak = _Espeak.get()
        espeak.set_voice(voice)
        ipa = espeak.clauses(text, _PHONEMES_IPA | _SEPARATED)
        # The mnemonic pass (half of espeak-ng's time) only where its answer can change the IPA.
        if any(_needs_mnemonic(word, german) for phonemes, _ in ipa for word in phonemes.split(" ")):
            mnemonic = espeak.clauses(text, _SEPARATED)
        else:
            mnemonic = ipa
    if len(mnemonic) != len(ipa):  # cannot happen for one text; keep the IPA if it does
        mnemonic = [(p.replace(_SEPARATOR, ""), c) for p, c in ipa]
    clauses: list[Clause] = []
    for index, ((ipa_phonemes, consumed), (mnemonic_phonemes, _)) in enumerate(zip(ipa, mnemonic)):
        terminator, ends = clause_terminator(consumed, is_last=index == len(ipa) - 1)
        # Without the mnemonic pass no word needs it: the IPA joined is what _with_link_glides gives.
        joined = (
            ipa_phonemes.replace(_SEPARATOR, "")
            if mnemonic is ipa
            else _with_link_glides(ipa_phonemes, mnemonic_phonemes, voice)
        )
        clauses.append(
            Clause(
                phonemes=joined,
                terminator=terminator,
                ends_sentence=ends,
            )
        )
    return clauses


def phonemize(text: str, voice: str) -> list[list[str]]:
    """Phonemes of ``text`` grouped by sentence, one codepoint per phoneme.

    Each clause's punctuation is kept as a phoneme (the voices were trained with
    it), followed by a space after ``, : ;``; accents are split into their own
    codepoints (NFD), and espeak-ng's language-switch flags are dropped.
    """
    sentences: list[list[str]] = []
    current: list[str] = []
    for clause in phonemize_clauses(text, voice):
        phonemes = _LANG_SWITCH.sub("", clause.phonemes) + clause.terminator
        if clause.terminator in (",", ":", ";"):
            phonemes += " "
        current.extend(unicodedata.normalize("NFD", phonemes))
        if clause.ends_sentence:
            if current:
                sentences.append(current)
            current = []
    if current:
        sentences.append(current)
    return sentences
