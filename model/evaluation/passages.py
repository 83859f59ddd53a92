"""Sentences and passages of a document, as exact character spans of its text.

A passage is what a QA system cites: at most ``MAX_WORDS`` whitespace-separated words, cut on sentence
boundaries where possible (a single sentence longer than the limit is cut between words), never across a
paragraph break (a blank line), so an edit inside one paragraph changes only that paragraph's passages. Every
span satisfies ``text[start:end] == passage.text`` and has no leading or trailing whitespace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_WORDS = 200

# A sentence ends after . ! or ? (plus closing quotes/brackets) followed by whitespace, or at a line break.
_SENTENCE = re.compile(r"[^\n]*?(?:[.!?][\"'\u201d\u2019)\]]*(?=\s)|(?=\n)|$)")
_WORD = re.compile(r"\S+")
_PARAGRAPH = re.compile(r"\S.*?(?=\n[ \t\r\f\v]*\n|\s*$)", re.DOTALL)


@dataclass(frozen=True)
class Passage:
    """A cited unit: ``text == document_text[start:end]``."""

    doc: str
    start: int
    end: int
    text: str


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text[start:end]`` (whitespace-trimmed, non-empty, in order)."""
    spans = []
    for match in _SENTENCE.finditer(text, start, len(text) if end is None else end):
        piece = match.group()
        stripped = piece.strip()
        if stripped:
            first = match.start() + len(piece) - len(piece.lstrip())
            spans.append((first, first + len(stripped)))
    return spans


def _word_chunks(text: str, start: int, end: int, max_words: int) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` between words into pieces of at most ``max_words`` words."""
    words = [m.span() for m in _WORD.finditer(text, start, end)]
    return [(words[i][0], words[min(i + max_words, len(words)) - 1][1]) for i in range(0, len(words), max_words)]


def split_passages(doc: str, text: str, max_words: int = MAX_WORDS) -> list[Passage]:
    """Pack consecutive sentences of a paragraph of ``text`` into passages of at most ``max_words`` words."""
    return [p for start, end in paragraph_spans(text) for p in _pack(doc, text, start, end, max_words)]


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the blank-line separated paragraphs of ``text``."""
    return [m.span() for m in _PARAGRAPH.finditer(text)]


def _pack(doc: str, text: str, paragraph_start: int, paragraph_end: int, max_words: int) -> list[Passage]:
    units: list[tuple[int, int, int]] = []  # (start, end, words)
    for start, end in sentence_spans(text, paragraph_start, paragraph_end):
        n = len(_WORD.findall(text, start, end))
        if n <= max_words:
            units.append((start, end, n))
        else:
            units.extend((s, e, len(_WORD.findall(text, s, e))) for s, e in _word_chunks(text, start, end, max_words))
    passages: list[Passage] = []
    first, last, words = -1, -1, 0
    for start, end, n in units:
        if words and words + n > max_words:
            passages.append(Passage(doc, first, last, text[first:last]))
            words = 0
        if not words:
            first = start
        last, words = end, words + n
    if words:
        passages.append(Passage(doc, first, last, text[first:last]))
    return passages
