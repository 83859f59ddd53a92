"""Metric definitions shared by the evaluation tasks.

Evidence recall@k: a question is a hit at k when at least one of the system's first k cited spans overlaps (shares
at least one character with) a gold evidence span of the same document; recall@k is the fraction of hits among
the questions that have gold evidence. ROUGE is rouge-score's F-measure with Porter stemming. Latencies are
percentiles of per-question wall times in milliseconds. A citation may hold at most ``MAX_CITATION_WORDS`` words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from model.inference.rouge import ROUGE_TYPES, rouge

__all__ = ["ROUGE_TYPES", "Span", "check_citations", "first_hit_rank", "latency_percentiles", "recall_at", "rouge"]
MAX_CITATION_WORDS = 250  # "a cited span is at most ~200 words": the baselines cite at most 200


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
