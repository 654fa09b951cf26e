"""A sentence too long for one model run, cut into pieces at phrase and word boundaries.

A VITS run's memory and time grow with its input (the encoder's attention with
its square): a 2 KB announcement without a full stop (1,999 digits, a
``<say-as interpret-as="characters">`` of 1,900 letters) was one sentence of
15-32k ids and took 5.9 GB in 9.5 s before it gave any audio (issue 13).  So a
sentence over ``max_ids`` is spoken as pieces of at most ``max_ids`` ids: cut
after clause punctuation where there is some, else between words, else (one
"word" longer than a piece) at the id limit.  A sentence within the limit is
never touched, so every normal sentence sounds exactly as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

MAX_SENTENCE_IDS = 400
"""Default piece size, in model input ids.  Measured on en_US-joe-medium at 2 threads
(one run in a fresh process, tools/bench_pieces.py): peak RSS grows ~0.47 MB per id
(200 ids +87 MB, 400 +183 MB, 800 +376 MB, 1600 +800 MB over the 135 MB of a loaded
voice) and time ~2.8 ms per id, more above 800 (1600 ids: 3.8 ms per id).  400 ids
are ~9 s of speech, longer than any sentence of the corpus (239 ids at most), give
first audio in ~1.1 s here and keep the peak near 330 MB."""

MIN_SENTENCE_IDS = 32
"""Below this a piece holds a word or two: the smallest ``max_ids`` accepted."""

CLAUSE_ENDS = frozenset(",;:.!?")
"""Phonemes after which a cut sounds like the speaker's own pause."""
PIECE_END = ","
"""Appended to a piece cut between words, so it ends as a phrase does (not as a sentence)."""
WORD_GAP = " "


def split_sentence(phonemes: Sequence[str], cost: Callable[[str], int], budget: int) -> list[list[str]]:
    """``phonemes`` as pieces whose ids (``cost`` of each phoneme, summed) are at most ``budget``.

    ``budget`` excludes what every run adds (BOS, EOS) and the :data:`PIECE_END` a
    piece may get.  The cuts aim at pieces of equal size (no short tail piece):
    the clause end nearest the target that fits, else the word gap nearest it,
    else the most that fits.
    """
    if budget < 1:
        raise ValueError(f"budget must be at least 1 id, not {budget}")
    pieces: list[list[str]] = []
    rest = _strip(list(phonemes))
    costs = [cost(p) for p in rest]  # once: what is left after a cut keeps its costs
    while rest:
        total = sum(costs)
        if total <= budget:
            pieces.append(rest)
            break
        cut = _cut(rest, costs, budget, total / math.ceil(total / budget))
        pieces.append(_strip(rest[:cut]))
        rest, costs = _strip_costed(rest[cut:], costs[cut:])
    return [piece for piece in pieces if piece]


def _cut(phonemes: list[str], costs: list[int], budget: int, target: float) -> int:
    """Where the first piece ends: an index into ``phonemes`` (at least 1)."""
    clause: list[tuple[float, int]] = []
    word: list[tuple[float, int]] = []
    prefix = 0
    fits = 1
    for index, (phoneme, ids) in enumerate(zip(phonemes, costs)):
        if prefix + ids > budget:
            break
        prefix += ids
        fits = index + 1
        if phoneme in CLAUSE_ENDS:
            clause.append((abs(prefix - target), index + 1))
        elif phoneme == WORD_GAP and index > 0:
            word.append((abs(prefix - target), index))
    for candidates in (clause, word):
        if candidates:
            return min(candidates)[1]
    return fits


def _strip_costed(phonemes: list[str], costs: list[int]) -> tuple[list[str], list[int]]:
    """:func:`_strip` of ``phonemes``, and their ``costs`` cut the same way."""
    start, end = _bounds(phonemes)
    return phonemes[start:end], costs[start:end]


def _strip(phonemes: list[str]) -> list[str]:
    start, end = _bounds(phonemes)
    return phonemes[start:end]


def _bounds(phonemes: list[str]) -> tuple[int, int]:
    """Where ``phonemes`` start and end without the word gaps around them."""
    start, end = 0, len(phonemes)
    while start < end and phonemes[start] == WORD_GAP:
        start += 1
    while end > start and phonemes[end - 1] == WORD_GAP:
        end -= 1
    return start, end


def ends_phrase(piece: Sequence[str]) -> bool:
    """True when ``piece`` already ends in punctuation the voice pauses at."""
    return bool(piece) and piece[-1] in CLAUSE_ENDS
