"""Heads: span means, evidence relevance, summary salience."""

from __future__ import annotations

import torch
from tolerance import assert_close

from model.network.hybrid import EvidenceHead, SalienceHead, span_means


def test_heads_score_spans_and_train():
    torch.manual_seed(0)
    d = 32
    states, question = torch.randn(50, d), torch.randn(6, d)
    spans = torch.tensor([[0, 10], [10, 12], [12, 50]])
    means = span_means(states, spans)
    assert_close(means[1], states[10:12].mean(0), "float32")
    evidence = EvidenceHead(d, dim=16)
    q, p = evidence.embed_question(question), evidence.embed_spans(means)
    assert q.shape == (16,) and p.shape == (3, 16)
    assert_close(p.norm(dim=-1), torch.ones(3), "float32")  # unit embeddings: their dot product is a cosine
    salience = SalienceHead(d, hidden=16)(means)
    assert salience.shape == (3,)
    ((p @ q).sum() + salience.sum()).backward()
    assert evidence.question.weight.grad is not None and evidence.span.weight.grad is not None
