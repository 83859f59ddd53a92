"""Metric definitions on hand-made cases."""

from __future__ import annotations

import math

import pytest

from model.research.evaluation.metrics import (
    MAX_CITATION_WORDS,
    Span,
    check_citations,
    first_hit_rank,
    latency_percentiles,
    overlaps,
    recall_at,
    rouge,
)


def test_overlap_needs_a_shared_character_of_the_same_document() -> None:
    gold = Span("a", 10, 20)
    assert overlaps(Span("a", 19, 30), gold)
    assert overlaps(Span("a", 0, 11), gold)
    assert overlaps(Span("a", 12, 15), gold)
    assert not overlaps(Span("a", 20, 30), gold)  # half-open: touching is not overlapping
    assert not overlaps(Span("a", 0, 10), gold)
    assert not overlaps(Span("b", 12, 15), gold)


def test_first_hit_rank_and_recall_at_k() -> None:
    gold = [Span("a", 100, 200), Span("b", 0, 50)]
    assert first_hit_rank([Span("a", 0, 10), Span("b", 40, 60)], gold) == 2
    assert first_hit_rank([Span("c", 0, 500)], gold) is None
    ranks = [1, 2, 6, None]
    assert recall_at(ranks, 1) == 0.25
    assert recall_at(ranks, 5) == 0.5
    assert recall_at(ranks, 10) == 0.75
    assert math.isnan(recall_at([], 5))


def test_rouge_uses_stemming_and_takes_the_best_reference() -> None:
    assert rouge("the cats were running", ["the cat was runs"], ("rouge1",))["rouge1"] == pytest.approx(0.75)
    scores = rouge("a b c d", ["x y", "a b c d"])
    assert all(v == pytest.approx(1.0) for v in scores.values())
    assert rouge("", ["a b"])["rougeL"] == 0.0
    # ROUGE-L: LCS "a c" of lengths 3 and 3 -> P = R = F = 2/3
    assert rouge("a b c", ["a c d"], ("rougeL",))["rougeL"] == pytest.approx(2 / 3)


def test_latency_percentiles() -> None:
    result = latency_percentiles([float(i) for i in range(1, 101)])
    assert result["latency_ms_p50"] == pytest.approx(50.5)
    assert result["latency_ms_p95"] == pytest.approx(95.05)


def test_citations_must_be_short_and_of_known_documents() -> None:
    texts = {"a": "word " * (MAX_CITATION_WORDS + 10)}
    check_citations(texts, [Span("a", 0, 5 * MAX_CITATION_WORDS)], "ok")
    with pytest.raises(ValueError, match="cited 260 words"):
        check_citations(texts, [Span("a", 0, len(texts["a"]))], "greedy")
    with pytest.raises(ValueError, match="unknown document"):
        check_citations(texts, [Span("b", 0, 1)], "lost")
