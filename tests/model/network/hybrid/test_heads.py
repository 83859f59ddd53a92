"""Heads: evidence relevance (with the interaction term), answer spans, summary salience."""

from __future__ import annotations

import torch
from tolerance import assert_close

from model.network.hybrid import AnswerHead, EvidenceHead, SalienceHead, best_sentences, best_span, span_means


def test_heads_score_spans_and_train():
    torch.manual_seed(0)
    d = 32
    states, question = torch.randn(50, d), torch.randn(6, d)
    spans = torch.tensor([[0, 10], [10, 12], [12, 50]])
    means = span_means(states, spans)
    assert_close(means[1], states[10:12].mean(0), "float32")
    evidence = EvidenceHead(d, dim=16)
    tokens = torch.zeros(3, 38, d)
    mask = torch.zeros(3, 38, dtype=torch.bool)
    for s, (a, b) in enumerate(spans.tolist()):
        tokens[s, : b - a], mask[s, : b - a] = states[a:b], True
    dense = evidence(question, means)
    with torch.no_grad():
        evidence.mix.fill_(1.0)
    both = evidence(question, means, tokens, mask)
    assert dense.shape == both.shape == (3,) and not torch.allclose(dense, both)
    assert best_sentences(both, 2).tolist() == both.argsort(descending=True)[:2].tolist()
    start, end = AnswerHead(d)(question, states[12:50])
    i, j, score = best_span(start, end, max_len=5)
    assert 0 <= i <= j < i + 5 and abs(score - float((start[i] + end[j]).detach())) < 1e-5
    salience = SalienceHead(d, hidden=16)(means)
    assert salience.shape == (3,)
    (both.sum() + start.sum() + salience.sum()).backward()
    assert evidence.token.weight.grad is not None


def test_best_span_respects_order_and_length():
    start = torch.tensor([0.0, 6.0, 0.0, 0.0])
    end = torch.tensor([9.0, 0.0, 0.0, 4.0])  # end 0 is before start 1: not allowed
    assert best_span(start, end, max_len=4)[:2] == (1, 3)
    assert best_span(start, end, max_len=2)[:2] == (0, 0)
