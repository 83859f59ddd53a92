"""What a sentence is, read from its text when its document is indexed: a whole sentence or a fragment, and whether
it quotes a figure. The answer path cites whole sentences first, and a sentence quoting a figure for "How many …".

A word is a run of letters or digits that is not part of a web address ("github.com/allenai/papermage" is none) and
not a citation mark; a figure is a number standing alone ("3,950", "$280,522", "12.5%", "2019"), never a citation
mark ("[44]", "[3, 7–9]") nor a footnote mark stuck to a word ("networks20", "papermage1").

    kinds = sentence_kinds(["We had 3,950 employees.", "§ github.com/allenai/papermage1"])
    kinds & WHOLE, kinds & FIGURE                                  # → [1, 0], [2, 0]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

MIN_WORDS = 4  # a whole sentence has at least this many words
WHOLE, FIGURE = 1, 2  # the bits of a sentence's kind

_ADDRESS = re.compile(r"\S*(?:https?://|www\.|\w\.(?:com|org|net|edu|gov|io)\b|\w/\w)\S*", re.IGNORECASE)
_CITATION = re.compile(r"\[\s*\d+(?:\s*[,;\u2013-]\s*\d+)*\s*\]")  # [44], [3, 7–9]
_WORD = re.compile(r"[^\W_]+")
_FIGURE = re.compile(r"(?<!\w)\d")  # a number's first digit, not stuck to a word before it


def sentence_kind(text: str) -> int:
    """The kind bits of one sentence's text."""
    plain = _CITATION.sub(" ", _ADDRESS.sub(" ", text))
    kind = WHOLE if len(_WORD.findall(plain)) >= MIN_WORDS else 0
    return kind | (FIGURE if _FIGURE.search(plain) else 0)


def sentence_kinds(texts: Sequence[str]) -> np.ndarray:
    """(S,) int8 the kind bits of each sentence."""
    return np.array([sentence_kind(t) for t in texts], dtype=np.int8)
