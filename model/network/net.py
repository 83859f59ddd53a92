"""IndexPoolNet: the hybrid model with the heads the product reads, and span pooling over its token states.

    net = IndexPoolNet(cfg)
    means = encode_spans(net, ids, spans)       # ids (T,) one document, spans (S, 2) token spans → (S, d)

A span's state is the weighted mean of its tokens' final states (weights from :class:`TokenPooling`); a long
document is encoded by streaming prefill, so its token states are never all kept.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from model.network.hybrid import (
    CollectionState,
    EvidenceHead,
    HybridConfig,
    HybridModel,
    SalienceHead,
    SpanAccumulator,
    TokenMatchHead,
)
from model.network.hybrid.heads import span_means

TEACHER_DIM = 384
POSITION_BUCKETS = 16
CHUNK_TOKENS = 4096  # tokens per prefill step


class TokenPooling(nn.Module):
    """Weights of the tokens in a span's pooled state: w_t = exp(log prior[id_t] + g(h_t)).

    The prior is the SIF weight a / (a + p(id)) of the token's training frequency (set by training); g, a learned
    linear function of the token's final state, starts at 0. Every block ends in an RMSNorm, so plain means of final
    states weigh "uh" and "the" like content words; these weights give pooled spans the static SIF emphasis back.
    """

    def __init__(self, cfg: HybridConfig) -> None:
        super().__init__()
        self.register_buffer("log_prior", torch.zeros(cfg.vocab_size))
        self.gate = nn.Linear(cfg.d_model, 1)
        nn.init.zeros_(self.gate.weight)
        nn.init.zeros_(self.gate.bias)

    def forward(self, ids: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
        """ids (..., T), states (..., T, d) → weights (..., T) > 0"""
        return (self.log_prior[ids] + self.gate(states).squeeze(-1)).clamp(-20, 20).exp()


def weighted_spans(states: torch.Tensor, weights: torch.Tensor, spans: torch.Tensor) -> torch.Tensor:
    """Weighted span means.  states (T, d), weights (T,), spans (S, 2) → (S, d)"""
    sums = span_means(torch.cat([states * weights[:, None], weights[:, None]], 1), spans)  # (S, d + 1)
    return sums[:, :-1] / sums[:, -1:].clamp_min(1e-12)


def weighted_mean(states: torch.Tensor, weights: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Weighted means of right-padded rows.  states (B, T, d), weights (B, T), lengths (B,) → (B, d)"""
    w = weights * (torch.arange(states.shape[1])[None] < lengths[:, None])  # padding weighs 0
    return (states * w[..., None]).sum(1) / w.sum(1, keepdim=True).clamp_min(1e-12)


class WeightedSpanAccumulator:
    """Weighted span means over streamed chunks (a SpanAccumulator over [w·h, w]); ``add`` is an on_chunk callback
    of a prefill of ``ids``."""

    def __init__(self, pool: TokenPooling, ids: torch.Tensor, spans: torch.Tensor, dim: int) -> None:
        self.pool, self.ids = pool, ids  # ids (T_total,) of the whole stream
        self.acc = SpanAccumulator(spans, dim + 1)

    def add(self, start: int, hidden: torch.Tensor) -> None:
        w = self.pool(self.ids[start : start + hidden.shape[0]], hidden)  # (T,)
        self.acc.add(start, torch.cat([hidden * w[:, None], w[:, None]], 1))

    def means(self) -> torch.Tensor:
        """(S, d)"""
        sums = self.acc.means()
        return sums[:, :-1] / sums[:, -1:].clamp_min(1e-12)


class IndexPoolNet(nn.Module):
    """The hybrid model with its heads, the span pooling weights and the training-only teacher projection."""

    def __init__(self, cfg: HybridConfig) -> None:
        super().__init__()
        self.model = HybridModel(cfg)
        self.pool = TokenPooling(cfg)
        self.evidence = EvidenceHead(cfg.d_model)
        self.salience = SalienceHead(cfg.d_model)
        self.position_prior = nn.Linear(POSITION_BUCKETS, 1)  # salience prior of the relative position
        self.teacher_proj = nn.Linear(cfg.d_model, TEACHER_DIM)  # span mean → teacher embedding (distillation)
        self.match = TokenMatchHead(cfg.embed_dim or cfg.d_model)

    @property
    def cfg(self) -> HybridConfig:
        return self.model.cfg

    def salience_scores(self, means: torch.Tensor) -> torch.Tensor:
        """means (S, d) of a document's sentences in order → salience logits (S,)"""
        rel = torch.arange(means.shape[0], dtype=torch.float32) / max(means.shape[0], 1)
        buckets = F.one_hot((rel * POSITION_BUCKETS).long(), POSITION_BUCKETS).float()  # (S, P)
        return self.salience(means) + self.position_prior(buckets).squeeze(-1)

    @torch.no_grad()
    def encode_question(self, ids: torch.Tensor) -> torch.Tensor:
        """A question's ids (Tq,), encoded on their own → unit embedding (e,)."""
        h = self.model(ids[None])[0]  # (Tq, d)
        w = self.pool(ids, h)  # (Tq,)
        return self.evidence.embed_question((h * w[:, None]).sum(0, keepdim=True) / w.sum())


def char_to_token_spans(starts: np.ndarray, spans: np.ndarray, offset: int = 0) -> np.ndarray:
    """Character spans → token spans [first token starting at/after start, first token starting at/after end),
    shifted by ``offset`` tokens.  starts (T,) token start characters, spans (S, 2) → (S, 2) int64"""
    chars = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    return np.searchsorted(starts, chars, side="left").astype(np.int64) + offset


@torch.no_grad()
def encode_spans(
    net: IndexPoolNet, ids: np.ndarray, spans: np.ndarray, state: CollectionState | None = None
) -> torch.Tensor:
    """Weighted mean states of token ``spans`` (S, 2) of one document, by streaming prefill (continuing ``state``
    when given, e.g. a recording one: ``net.model.new_state(record=True)``).  → (S, d)"""
    if len(ids) == 0:
        return torch.zeros(len(spans), net.cfg.d_model)
    stream = torch.as_tensor(ids, dtype=torch.int64)
    acc = WeightedSpanAccumulator(net.pool, stream, torch.as_tensor(spans), net.cfg.d_model)
    net.model.prefill(stream, CHUNK_TOKENS, state=state, on_chunk=acc.add)
    return acc.means()
