"""Extractive summarizers: they choose whole sentences of a document (its library sentences), never write text.

    summarizer = make_summarizer("indexpool")          # or "lead", "lexrank"
    chosen = summarizer.choose(document, budget_words=150)   # indices into document.sentences, reading order

Every summarizer takes sentences in its own order of preference until the chosen ones hold ``budget_words`` words
(the last one whole, so it may run past the budget) and returns them in reading order. None takes a sentence whose
text it has already taken (a repeated sentence is quoted once); beyond that, each handles redundancy its own way
(the IndexPool summary policy by embedding cosine, LexRank by TF-IDF cosine, LEAD not at all).

- ``indexpool``: the model's salience head and sentence embeddings, combined by the summary policy
  (:mod:`model.inference.indexpool_summarizer`, :mod:`model.inference.summary_policy`).
- ``lead``: the first sentences.
- ``lexrank``: LexRank (Erkan & Radev 2004), continuous variant: PageRank over the TF-IDF cosine graph.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from model.inference.passages import DocumentText

SUMMARIZERS = ("indexpool", "lead", "lexrank")


class Summarizer(Protocol):
    name: str

    def choose(self, document: DocumentText, budget_words: int) -> list[int]:
        """Indices of the chosen sentences of ``document``, in reading order (see the module docstring)."""


class SummarizerUnavailable(Exception):
    """The summarizer cannot run here (its model is not installed); the message says why."""


def words_of(document: DocumentText) -> list[int]:
    return [len(document.sentence_text(i).split()) for i in range(len(document.sentences))]


def take(document: DocumentText, order: list[int], budget_words: int) -> list[int]:
    """Sentences of ``order`` (a repeated text once) until they hold ``budget_words`` words, in reading order."""
    chosen, seen, held = [], set(), 0
    for i in order:
        if held >= budget_words:
            break
        text = " ".join(document.sentence_text(i).split())
        if text in seen:
            continue
        chosen.append(i)
        seen.add(text)
        held += len(text.split())
    return sorted(chosen)


class Lead:
    """The first sentences of the document."""

    name = "lead"

    def choose(self, document: DocumentText, budget_words: int) -> list[int]:
        return take(document, list(range(len(document.sentences))), budget_words)


class LexRank:
    """Sentences taken by centrality, skipping those shorter than ``min_words`` or more similar than
    ``redundancy`` to one already chosen."""

    name = "lexrank"

    def __init__(
        self, threshold: float = 0.1, damping: float = 0.85, min_words: int = 5, redundancy: float = 0.5
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

    def choose(self, document: DocumentText, budget_words: int) -> list[int]:
        from sklearn.feature_extraction.text import TfidfVectorizer  # scikit-learn: only when LexRank runs

        words = words_of(document)
        candidates = [i for i, n in enumerate(words) if n >= self.min_words]
        texts = [" ".join(document.sentence_text(i).split()) for i in candidates]
        try:
            matrix = TfidfVectorizer(stop_words="english").fit_transform(texts) if texts else None
        except ValueError:  # only stop words
            matrix = None
        if matrix is None:
            return Lead().choose(document, budget_words)
        similarity = (matrix @ matrix.T).toarray()
        chosen: list[int] = []
        held = 0
        for j in np.argsort(-self.centrality(similarity), kind="stable").tolist():
            if held >= budget_words:
                break
            if any(similarity[j, c] > self.redundancy for c in chosen):
                continue
            chosen.append(j)
            held += words[candidates[j]]
        return sorted(candidates[j] for j in chosen)


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
