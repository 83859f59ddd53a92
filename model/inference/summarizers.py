"""Extractive summarizers: they choose whole sentences of a document (its library sentences), never write text.

    summarizer = make_summarizer("indexpool")          # or "lead", "lexrank"
    chosen = summarizer.choose(document, budget_words=150)   # indices into document.sentences, reading order
    chosen = choose_across(summarizer, documents, 300)       # [(document index, sentence index)]: a collection

Every summarizer ranks a document's sentences in its own order of preference (``ranked``, lazily) and takes them
in that order until the chosen ones hold ``budget_words`` words (the last one whole, so it may run past the budget),
returning them in reading order. None takes a sentence whose text it has already taken (a repeated sentence is
quoted once); beyond that, each handles redundancy its own way (the IndexPool summary policy by embedding cosine,
LexRank by TF-IDF cosine, LEAD not at all).

A collection summary (:func:`choose_across`) is one summary of several documents within one budget: the documents'
rankings are taken in turn (each document's best sentence, then each one's second best, ...), the larger documents
first in each round, a text already taken or found in two or more of the documents (boilerplate) skipped, until
the budget is reached; a document whose turn never comes is never ranked.

- ``indexpool``: the model's salience head and sentence embeddings, combined by the summary policy
  (:mod:`model.inference.indexpool_summarizer`, :mod:`model.inference.summary_policy`).
- ``lead``: the first sentences.
- ``lexrank``: LexRank (Erkan & Radev 2004), continuous variant: PageRank over the TF-IDF cosine graph.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import numpy as np

from model.inference.centrality import DAMPING, THRESHOLD
from model.inference.passages import DocumentText
from model.inference.ranking import Ranking, take_across

SUMMARIZERS = ("indexpool", "lead", "lexrank")


class Summarizer(Protocol):
    name: str

    def ranked(self, document: DocumentText, budget_words: int) -> Iterator[int]:
        """Indices of the sentences of ``document`` the summarizer would take, best first."""

    def choose(self, document: DocumentText, budget_words: int) -> list[int]:
        """Indices of the chosen sentences of ``document``, in reading order (see the module docstring)."""


class SummarizerUnavailable(Exception):
    """The summarizer cannot run here (its model is not installed); the message says why."""


def words_of(document: DocumentText) -> list[int]:
    return [len(document.sentence_text(i).split()) for i in range(len(document.sentences))]


def choose_across(
    summarizer: Summarizer,
    documents: Sequence[DocumentText],
    budget_words: int,
    ranking: Callable[[int], None] | None = None,
) -> list[tuple[int, int]]:
    """One summary of ``documents`` within ``budget_words`` words (see the module docstring): (document index,
    sentence index) pairs, in document then reading order. A document is ranked only when its turn comes (a small
    budget over many documents ranks the larger ones only); ``ranking(d)`` is called before document d is."""
    by_size = sorted(range(len(documents)), key=lambda d: -len(documents[d].text))

    def ranked(d: int) -> Iterator[int]:  # a document is ranked when its first turn comes, if it comes
        if ranking is not None:
            ranking(d)
        yield from summarizer.ranked(documents[d], budget_words)

    orders = [ranked(d) for d in by_size]
    chosen = take_across([documents[d] for d in by_size], orders, budget_words, boilerplate(documents))
    return sorted((by_size[d], i) for d, i in chosen)


def boilerplate(documents: Sequence[DocumentText]) -> set[str]:
    """Sentence texts found in two or more of the documents (licence lines, page footers, inherited docstrings):
    they say nothing about any one of them."""
    found = Counter(
        text
        for document in documents
        for text in {" ".join(document.sentence_text(i).split()) for i in range(len(document.sentences))}
    )
    return {text for text, count in found.items() if count > 1}


class Lead(Ranking):
    """The first sentences of the document."""

    name = "lead"

    def ranked(self, document: DocumentText, budget_words: int) -> Iterator[int]:
        return iter(range(len(document.sentences)))


class LexRank(Ranking):
    """Sentences taken by centrality, skipping those shorter than ``min_words`` or more similar than
    ``redundancy`` to one already chosen."""

    name = "lexrank"

    def __init__(
        self, threshold: float = THRESHOLD, damping: float = DAMPING, min_words: int = 5, redundancy: float = 0.5
    ) -> None:
        self.threshold, self.damping, self.min_words, self.redundancy = threshold, damping, min_words, redundancy

    def centrality(self, similarity: np.ndarray) -> np.ndarray:
        """Stationary distribution of the damped random walk over the thresholded similarity graph (no self-loops;
        a sentence similar to no other jumps uniformly)."""
        n = similarity.shape[0]
        graph = np.where(similarity >= self.threshold, similarity, 0.0)
        np.fill_diagonal(graph, 0.0)  # a self-loop would make an isolated sentence as central as a connected one
        rows = graph.sum(axis=1, keepdims=True)
        transition = np.divide(graph, rows, out=np.full_like(graph, 1.0 / n), where=rows > 0)
        scores = np.full(n, 1.0 / n)
        for _ in range(200):
            updated = (1 - self.damping) / n + self.damping * transition.T @ scores
            if np.abs(updated - scores).sum() < 1e-8:
                return updated
            scores = updated
        return scores

    def ranked(self, document: DocumentText, budget_words: int) -> Iterator[int]:
        """Ranks when called (the centrality is computed here); the redundancy filter runs as the ranking is read."""
        from sklearn.feature_extraction.text import TfidfVectorizer  # scikit-learn: only when LexRank runs

        words = words_of(document)
        candidates = [i for i, n in enumerate(words) if n >= self.min_words]
        texts = [" ".join(document.sentence_text(i).split()) for i in candidates]
        try:
            matrix = TfidfVectorizer(stop_words="english").fit_transform(texts) if texts else None
        except ValueError:  # only stop words
            matrix = None
        if matrix is None:
            return Lead().ranked(document, budget_words)
        similarity = (matrix @ matrix.T).toarray()
        return self._distinct(candidates, similarity, np.argsort(-self.centrality(similarity), kind="stable"))

    def _distinct(self, candidates: list[int], similarity: np.ndarray, order: np.ndarray) -> Iterator[int]:
        """The candidates in ``order``, skipping one more similar than ``redundancy`` to one yielded before."""
        taken: list[int] = []
        for j in order.tolist():
            if any(similarity[j, c] > self.redundancy for c in taken):
                continue
            taken.append(j)
            yield candidates[j]


def make_summarizer(name: str, summary_policy: str = "") -> Summarizer:
    """The summarizer called ``name``; ``summary_policy`` overrides the IndexPool summarizer's policy ("default" or
    a JSON path). Raises SummarizerUnavailable when the model is not installed, ValueError for an unknown name."""
    if name == "lead":
        return Lead()
    if name == "lexrank":
        return LexRank()
    if name != "indexpool":
        raise ValueError(f"unknown summarizer {name!r} (choose from {', '.join(SUMMARIZERS)})")
    from model.inference.indexpool_summarizer import load  # torch: only when the model runs

    try:
        return load(summary_policy)
    except FileNotFoundError as error:  # CheckpointMissing: no checkpoint where it is looked for
        raise SummarizerUnavailable(str(error)) from error
