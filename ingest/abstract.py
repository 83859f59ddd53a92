"""Finding a paper's copy of its own abstract among its sentences, by content.

Paper sources are inconsistent: some mark the abstract, many carry it untagged at the start of the first section,
some place it after other text. A summary scored against the abstract must not be able to copy it, so the copy is
found by its word bigrams and cut from the summarizer's input (the batch summarizer and the evaluation data both use
:func:`strip_abstract`).
"""

from __future__ import annotations

import html
import re

ABSTRACT_MATCH = 0.5  # a sentence belongs to the abstract when this share of its word bigrams occur in it
ABSTRACT_HEAD = 0.3  # ...or this share, for the sentences just before the run
_WORD = re.compile(r"[a-z0-9]+")


def _bigrams(text: str) -> list[tuple[str, str]]:
    words = _WORD.findall(html.unescape(text).lower())
    return list(zip(words, words[1:], strict=False))


def strip_abstract(sentences: list[str], abstract: str) -> tuple[list[int], float]:
    """Indices of the sentences that form the paper's copy of its abstract, and the share of it they cover.

    The XMLs are inconsistent: some have an ``<ABSTRACT>`` element (which sometimes runs on into the body),
    many carry the abstract as the start of the first section, and some place it after other text. So the
    abstract copy is found by content: the sentences whose word bigrams mostly (``ABSTRACT_MATCH``) occur in
    the abstract are grouped into runs (gaps of one sentence allowed), and the run covering the most abstract
    bigrams (the earliest on a tie) is cut. Later sentences that merely resemble the abstract (conclusions)
    stay in the body. Sentences just before the run join it at ``ABSTRACT_HEAD``: there the header is often
    fused with the first abstract sentence. (Heavy OCR noise can still leave abstract sentences in two papers.)
    """
    reference = set(_bigrams(abstract))
    if not reference:
        return [], 0.0
    share = []
    for sentence in sentences:
        grams = _bigrams(sentence)
        share.append(sum(g in reference for g in grams) / len(grams) if grams else 0.0)
    matching = [i for i, s in enumerate(share) if s >= ABSTRACT_MATCH]
    runs: list[list[int]] = []
    for i in matching:
        if runs and i - runs[-1][-1] <= 2:
            runs[-1].append(i)
        else:
            runs.append([i])
    best: list[int] = []
    best_cover: set[tuple[str, str]] = set()
    for run in runs:
        cover = {g for i in run for g in _bigrams(sentences[i])} & reference
        if len(cover) > len(best_cover):
            best, best_cover = run, cover
    if best:  # the first abstract sentence is often fused with the header (affiliations, "Abstract")
        while best[0] > 0 and share[best[0] - 1] >= ABSTRACT_HEAD:
            best.insert(0, best[0] - 1)
        best_cover = {g for i in best for g in _bigrams(sentences[i])} & reference
    return best, len(best_cover) / len(reference)
