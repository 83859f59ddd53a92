"""Metric definitions shared by the evaluation tasks.

Evidence recall@k: a question is a hit at k when at least one of the system's first k cited spans overlaps (shares
at least one character with) a gold evidence span of the same document; recall@k is the fraction of hits among
the questions that have gold evidence. A question without evidence spans but with an answer and its document (L-Eval)
is a hit at k when one of the first k cited spans lies in that document and holds the answer (:func:`answer_in`:
the normalised answer, or for an answer of more than ``SHORT_ANSWER_WORDS`` words at least half of its content
words). ROUGE is rouge-score's F-measure with Porter stemming. Latencies are
percentiles of per-question wall times in milliseconds. A citation may hold at most ``MAX_CITATION_WORDS`` words.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from model.inference.rouge import ROUGE_TYPES, rouge

__all__ = [
    "ROUGE_TYPES",
    "Span",
    "answer_hit_rank",
    "answer_in",
    "check_citations",
    "first_hit_rank",
    "latency_percentiles",
    "recall_at",
    "rouge",
]
MAX_CITATION_WORDS = 250  # "a cited span is at most ~200 words": the baselines cite at most 200
SHORT_ANSWER_WORDS = 5  # an answer of at most this many words must appear whole in the cited span
_STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the their this to was were which with"
    " will would can could do does did not no but if then than so such these those there they them he she his her"
    " we our you your i".split()
)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch if ch not in string.punctuation else " " for ch in text.lower())
    return " ".join(w for w in text.split() if w not in {"a", "an", "the"})


def answer_in(answer: str, text: str) -> bool:
    """Whether ``text`` holds ``answer`` (see the module docstring)."""
    wanted, held = normalize_answer(answer), normalize_answer(text)
    words = wanted.split()
    if not words:
        return False
    if len(words) <= SHORT_ANSWER_WORDS:
        return re.search(rf"(?<!\S){re.escape(wanted)}(?!\S)", held) is not None
    content = {w for w in words if w not in _STOPWORDS}
    return bool(content) and len(content & set(held.split())) >= 0.5 * len(content)


def answer_hit_rank(
    cited: Sequence[Span], texts: Mapping[str, str], document: str, answers: Sequence[str]
) -> int | None:
    """1-based rank of the first cited span of ``document`` holding one of ``answers``, or None."""
    for rank, span in enumerate(cited, 1):
        if span.doc == document and any(answer_in(a, texts[span.doc][span.start : span.end]) for a in answers):
            return rank
    return None


@dataclass(frozen=True)
class Span:
    """A half-open character span ``[start, end)`` of document ``doc``."""

    doc: str
    start: int
    end: int


def overlaps(a: Span, b: Span) -> bool:
    """True when the spans belong to the same document and share at least one character."""
    return a.doc == b.doc and a.start < b.end and b.start < a.end


def check_citations(texts: Mapping[str, str], cited: Iterable[Span], system: str) -> None:
    """Raise ValueError when a citation names an unknown document or is longer than ``MAX_CITATION_WORDS``,
    so no system can score by citing whole documents."""
    for span in cited:
        if span.doc not in texts:
            raise ValueError(f"{system} cited unknown document {span.doc!r}")
        words = len(texts[span.doc][span.start : span.end].split())
        if words > MAX_CITATION_WORDS:
            raise ValueError(f"{system} cited {words} words of {span.doc!r}; at most {MAX_CITATION_WORDS} allowed")


def first_hit_rank(cited: Sequence[Span], gold: Iterable[Span]) -> int | None:
    """1-based rank of the first cited span overlapping a gold span, or None when none does."""
    gold = list(gold)
    for rank, span in enumerate(cited, 1):
        if any(overlaps(span, g) for g in gold):
            return rank
    return None


def recall_at(ranks: Sequence[int | None], k: int) -> float:
    """Fraction of questions whose first hit is at rank <= k (``ranks`` holds one entry per question)."""
    if not ranks:
        return float("nan")
    return sum(r is not None and r <= k for r in ranks) / len(ranks)


def latency_percentiles(milliseconds: Sequence[float]) -> dict[str, float]:
    """``latency_ms_p50`` and ``latency_ms_p95`` of per-question wall times."""
    values = np.asarray(milliseconds, dtype=float)
    if values.size == 0:
        return {"latency_ms_p50": float("nan"), "latency_ms_p95": float("nan")}
    return {
        "latency_ms_p50": float(np.percentile(values, 50)),
        "latency_ms_p95": float(np.percentile(values, 95)),
    }
