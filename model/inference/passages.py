"""Documents as the model reads them, and the passages it scores.

A :class:`DocumentText` is a document's text with its sentences: the library's sentences (``ingest.segment``, the
one sentence splitter), as character spans in reading order with the paragraph of each. Nothing here splits text.

A passage is what the evidence score ranks: consecutive sentences of one paragraph holding at most ``MAX_WORDS``
whitespace-separated words (a longer sentence is a passage of its own). A passage never crosses a paragraph break,
so an edit inside one paragraph changes only that paragraph's passages; its span runs from its first sentence's
start to its last sentence's end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAX_WORDS = 200


@dataclass(frozen=True)
class DocumentText:
    id: str
    text: str
    sentences: np.ndarray  # (S, 2) int64 character spans [start, end) in reading order
    paragraphs: np.ndarray  # (S,) int64 paragraph of each sentence
    title: str = ""  # what names the document (its title and file name): words every passage of it is about
    references: frozenset[int] = frozenset()  # the sentences of its references section: other works, not its own

    @classmethod
    def of(
        cls,
        id: str,
        text: str,
        sentences: Sequence[tuple[int, int]],
        paragraphs: Sequence[int],
        title: str = "",
        references: Sequence[int] = (),
    ) -> DocumentText:
        spans = np.asarray(sentences, dtype=np.int64).reshape(-1, 2)
        paragraph = np.asarray(paragraphs, dtype=np.int64).reshape(-1)
        return cls(id, text, spans, paragraph, title, frozenset(references))

    def sentence_text(self, i: int) -> str:
        start, end = self.sentences[i]
        return self.text[start:end]


@dataclass(frozen=True)
class Passages:
    """A document's passages as runs of its sentences: passage p holds sentences [first[p], first[p + 1])."""

    first: np.ndarray  # (P + 1,) int64 first sentence of each passage, then S
    spans: np.ndarray  # (P, 2) int64 character spans


def pack_passages(document: DocumentText, max_words: int = MAX_WORDS) -> Passages:
    """Pack the document's sentences into passages (see the module docstring)."""
    words = [len(document.sentence_text(i).split()) for i in range(len(document.sentences))]
    first: list[int] = []
    held, paragraph = 0, None
    for i, (n, para) in enumerate(zip(words, document.paragraphs.tolist(), strict=True)):
        if not first or para != paragraph or held + n > max_words:
            first.append(i)
            held = 0
        held, paragraph = held + n, para
    bounds = np.array([*first, len(words)], dtype=np.int64)
    spans = np.stack([document.sentences[bounds[:-1], 0], document.sentences[bounds[1:] - 1, 1]], 1)
    return Passages(bounds, spans.reshape(-1, 2))
