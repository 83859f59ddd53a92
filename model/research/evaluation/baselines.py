"""The QA baselines every evaluation reports: BM25 and MiniLM dense retrieval (the summary baselines, LEAD and
LexRank, are the product's: ``model.inference.summarizers``).

Both retrievers cite the model's passages (:func:`model.research.evaluation.passages.split_passages`, at most 200
words, made of the library's sentences); their answer is the best sentence of their best passage. :func:`fit_budget`
cuts a summary to a word budget for scoring.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import scipy.sparse as sp
from nltk.stem import porter

from model.research.evaluation.documents import Document, Response
from model.research.evaluation.embeddings import MiniLMEncoder
from model.research.evaluation.metrics import Span
from model.research.evaluation.passages import Passage, sentence_spans, split_passages

_TOKEN = re.compile(r"[a-z0-9]+")
_STEMMER = porter.PorterStemmer()


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _STEMMER.stem(word) if len(word) > 3 else word  # rouge-score's rule: stem words of 4+ characters


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric words, Porter-stemmed as rouge-score does."""
    return [_stem(w) for w in _TOKEN.findall(text.lower())]


def _passages(documents: Sequence[Document]) -> list[Passage]:
    return [p for d in documents for p in split_passages(d.id, d.text)]


def _sentences(passage: Passage) -> list[str]:
    return [passage.text[s:e] for s, e in sentence_spans(passage.text)]


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first (ties broken by position)."""
    k = min(k, scores.size)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    candidates = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
    return candidates[np.lexsort((candidates, -scores[candidates]))]


class BM25Index:
    """Okapi BM25 over tokenized texts: ``idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))``."""

    def __init__(self, texts: Sequence[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.vocabulary: dict[str, int] = {}
        rows, cols = [], []
        for row, tokens in enumerate(texts):
            ids = [self.vocabulary.setdefault(t, len(self.vocabulary)) for t in tokens]
            rows.extend([row] * len(ids))
            cols.extend(ids)
        shape = (len(texts), len(self.vocabulary))
        tf = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=shape)
        tf.sum_duplicates()
        lengths = np.asarray(tf.sum(axis=1)).ravel()
        df = np.bincount(tf.indices, minlength=shape[1])
        self.idf = np.log1p((shape[0] - df + 0.5) / (df + 0.5)).astype(np.float32)
        norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1e-9))
        tf = tf.tocoo()
        weights = self.idf[tf.col] * tf.data * (k1 + 1) / (tf.data + norm[tf.row])
        self.weights = sp.csc_matrix((weights, (tf.row, tf.col)), shape=shape)

    def query_ids(self, tokens: Sequence[str]) -> list[int]:
        """Vocabulary ids of the distinct known query terms."""
        return sorted({self.vocabulary[t] for t in tokens if t in self.vocabulary})

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every indexed text for the query ``tokens`` (repeated query terms count once)."""
        ids = self.query_ids(tokens)
        if not ids:
            return np.zeros(self.weights.shape[0], dtype=np.float32)
        return np.asarray(self.weights[:, ids].sum(axis=1)).ravel()


class BM25System:
    """BM25 over passages; the answer is the passage sentence holding the most query-term IDF."""

    name = "bm25"

    def index(self, documents: Sequence[Document]) -> None:
        self.passages = _passages(documents)
        self.bm25 = BM25Index([tokenize(p.text) for p in self.passages])

    def ask(self, question: str, k: int) -> Response:
        tokens = tokenize(question)
        order = _top(self.bm25.scores(tokens), k)
        cited = [self.passages[i] for i in order]
        ids = set(self.bm25.query_ids(tokens))

        def matched_idf(sentence: str) -> float:
            found = {self.bm25.vocabulary.get(t) for t in tokenize(sentence)} & ids
            return float(sum(self.bm25.idf[i] for i in found))

        sentences = _sentences(cited[0]) if cited else []
        answer = max(sentences, key=matched_idf, default="")  # max keeps the first of equal scores
        return Response([Span(p.doc, p.start, p.end) for p in cited], answer)


class DenseSystem:
    """Cosine similarity of MiniLM embeddings (question vs passages, then vs the best passage's sentences).

    MiniLM reads at most 256 word pieces, so the end of a long passage (200 words of dense text) is not seen.
    """

    name = "dense"

    def __init__(self, encoder: MiniLMEncoder | None = None) -> None:
        self.encoder = encoder or MiniLMEncoder()

    def index(self, documents: Sequence[Document]) -> None:
        self.passages = _passages(documents)
        self.vectors = self.encoder.encode([p.text for p in self.passages])

    def ask(self, question: str, k: int) -> Response:
        query = self.encoder.encode_uncached([question])[0]
        order = _top(self.vectors @ query, k)
        cited = [self.passages[i] for i in order]
        sentences = _sentences(cited[0]) if cited else []
        answer = ""
        if sentences:
            answer = sentences[int(np.argmax(self.encoder.encode_uncached(sentences) @ query))]
        return Response([Span(p.doc, p.start, p.end) for p in cited], answer)


def fit_budget(sentences: Sequence[str], budget_words: int) -> str:
    """The sentences in order, one per line, the last one cut so the total is at most ``budget_words`` words."""
    lines, left = [], budget_words
    for sentence in sentences:
        words = sentence.split()
        if left <= 0 or not words:
            break
        lines.append(" ".join(words[:left]))
        left -= len(words)
    return "\n".join(lines)
