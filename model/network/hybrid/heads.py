"""Heads on top of the hybrid model: evidence relevance, token matching, summary salience.

Sentences are token spans [start, end) of the collection. Their mean final states come from ``span_means`` (states
in memory) or a ``SpanAccumulator`` fed by ``HybridModel.prefill(..., on_chunk=acc.add)`` (a long collection whose
token states are never all kept).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

MATCH_TOKENS = 1 << 17  # tokens a question's MaxSim gathers at once outside training


def span_means(states: torch.Tensor, spans: torch.Tensor) -> torch.Tensor:
    """Mean state of each span.  states (T, d), spans (S, 2) [start, end) → (S, d)"""
    csum = F.pad(states.cumsum(0), (0, 0, 1, 0))  # (T + 1, d)
    lengths = (spans[:, 1] - spans[:, 0]).clamp_min(1)[:, None]
    return (csum[spans[:, 1]] - csum[spans[:, 0]]) / lengths


class SpanAccumulator:
    """Span means accumulated over streamed chunks: ``add(start, hidden)`` is an ``on_chunk`` callback."""

    def __init__(self, spans: torch.Tensor, dim: int) -> None:
        self.spans = spans  # (S, 2)
        self.sums = torch.zeros(spans.shape[0], dim)

    def add(self, start: int, hidden: torch.Tensor) -> None:
        """hidden (T, d): the states of tokens [start, start + T)."""
        lo = self.spans[:, 0].clamp(start, start + hidden.shape[0]) - start
        hi = self.spans[:, 1].clamp(start, start + hidden.shape[0]) - start
        self.sums += span_means(hidden, torch.stack([lo, hi], 1)) * (hi - lo)[:, None]

    def means(self) -> torch.Tensor:
        """(S, d)"""
        return self.sums / (self.spans[:, 1] - self.spans[:, 0]).clamp_min(1)[:, None]


class EvidenceHead(nn.Module):
    """Relevance of spans to a question: the cosine of projected mean states, scaled by a learned temperature."""

    def __init__(self, d_model: int, dim: int = 128) -> None:
        super().__init__()
        self.question = nn.Linear(d_model, dim)
        self.span = nn.Linear(d_model, dim)
        self.log_scale = nn.Parameter(torch.tensor(math.log(20.0)))  # the temperature of training's InfoNCE

    def embed_question(self, q_states: torch.Tensor) -> torch.Tensor:
        """(Tq, d) → unit (dim,)"""
        return F.normalize(self.question(q_states.mean(0)), dim=-1)

    def embed_spans(self, means: torch.Tensor) -> torch.Tensor:
        """(S, d) span means → unit (S, dim)"""
        return F.normalize(self.span(means), dim=-1)


class TokenMatchHead(nn.Module):
    """Soft token matching of a question against passages (late interaction, ColBERT's MaxSim) over the model's
    distilled token embeddings. Keys depend only on the piece, so an indexed collection stores no key vectors: a
    passage is its token ids.

        match(q, p) = Σ_t w_t · max_{s ∈ p} cos(k(q_t), k(s)) / Σ_t w_t  −  b · log |p|
        k(x)        = normalize(e_x + e_x A B)                  e_x the token embedding, A B a learned low-rank map
        w_t         = idf_t ^ a · prior_t ^ c · exp(u · e_t)     idf over the collection's passages, prior the
                                                                 piece's SIF weight from the training text

    A passage's logit adds the document term ``doc_weight · log Σ_{p' in p's document} exp(scale · match(q, p'))``:
    which document (meeting, paper) the question is about. Starts as idf-weighted MaxSim (A B = 0, a = 1).
    """

    def __init__(self, width: int, rank: int = 32) -> None:
        super().__init__()
        self.down = nn.Parameter(torch.zeros(width, rank))
        self.up = nn.Parameter(torch.randn(rank, width) * 0.01)
        self.idf_power = nn.Parameter(torch.tensor(1.0))
        self.prior_power = nn.Parameter(torch.tensor(0.0))
        self.direction = nn.Parameter(torch.zeros(width))
        self.length_penalty = nn.Parameter(torch.tensor(0.0))
        self.log_scale = nn.Parameter(torch.tensor(math.log(10.0)))
        self.doc_weight = nn.Parameter(torch.tensor(0.5))

    def keys(self, embeddings: torch.Tensor) -> torch.Tensor:
        """(V, e) token embeddings → unit keys (V, e)"""
        return F.normalize(embeddings + (embeddings @ self.down) @ self.up, dim=-1)

    def question_weights(
        self, ids: torch.Tensor, embeddings: torch.Tensor, idf: torch.Tensor, log_prior: torch.Tensor
    ) -> torch.Tensor:
        """ids (Tq,) → w (Tq,) > 0"""
        log_w = self.idf_power * idf[ids].clamp_min(1e-3).log() + self.prior_power * log_prior[ids]
        return (log_w + embeddings[ids] @ self.direction).clamp(-20, 20).exp()

    def match(
        self,
        similarity: torch.Tensor,
        weights: torch.Tensor,
        token_ids: torch.Tensor,
        owner: torch.Tensor,
        lengths: torch.Tensor,
    ) -> torch.Tensor:
        """MaxSim scores of P passages given as flat tokens.  similarity (Tq, V) question tokens × vocabulary keys,
        weights (Tq,), token_ids (N,) and owner (N,) the passage of each token, lengths (P,) → (P,)"""
        n_passages = lengths.shape[0]
        best = similarity.new_full((similarity.shape[0], n_passages), -1.0)  # (Tq, P)
        if similarity.requires_grad:  # training: one differentiable step
            sims = similarity[:, token_ids]  # (Tq, N)
            best = best.scatter_reduce(1, owner.expand_as(sims), sims, "amax", include_self=True)
        else:  # a collection: MATCH_TOKENS tokens at a time (at 10M tokens, not 10M × Tq floats at once)
            for a in range(0, token_ids.shape[0], MATCH_TOKENS):
                sims = similarity.index_select(1, token_ids[a : a + MATCH_TOKENS])  # (Tq, n)
                best.scatter_reduce_(1, owner[a : a + MATCH_TOKENS].expand_as(sims), sims, "amax")
        score = (weights[:, None] * best).sum(0) / weights.sum()
        return score - self.length_penalty * lengths.float().clamp_min(1).log()

    def logits(self, match: torch.Tensor, document: torch.Tensor, n_documents: int) -> torch.Tensor:
        """Passage logits with the document term.  match (P,), document (P,) int64 → (P,)"""
        scaled = match * self.log_scale.exp()
        top = scaled.new_full((n_documents,), float("-inf")).scatter_reduce(0, document, scaled.detach(), "amax")
        shifted = (scaled - top[document]).exp()  # each document's own log-sum-exp: no other document shifts it
        per_doc = scaled.new_zeros(n_documents).index_add(0, document, shifted).log() + top.clamp_min(-1e30)
        return scaled + self.doc_weight * per_doc[document]


class SalienceHead(nn.Module):
    """Summary salience per sentence from its span mean and the document's mean state."""

    def __init__(self, d_model: int, hidden: int = 256) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3 * d_model, hidden), nn.GELU(), nn.Linear(hidden, 1))

    def forward(self, span_means: torch.Tensor, doc_mean: torch.Tensor | None = None) -> torch.Tensor:
        """span_means (S, d) [, doc_mean (d,), default the mean of the spans] → salience logits (S,)"""
        doc = span_means.mean(0) if doc_mean is None else doc_mean
        doc = doc.expand_as(span_means)
        return self.mlp(torch.cat([span_means, doc, span_means * doc], dim=-1)).squeeze(-1)
