"""The question-time read: a question's tokens attending, in every sparse layer, to a stored collection.

A collection (one document or many, each encoded as its own stream) keeps per sparse layer what a question needs
(``model.inference.read`` builds, stores and joins it):

    tier 1      pooled indexer entries of its tokens' indexer keys (IndexPool r:1, INT8 by default), resident;
    tiers 2-3   every token's key and value (float16): an LRU of recently read pages over a memory-mapped store.

A question goes through the blocks with its own linear-attention state (from zero: the documents are separate
streams) and, in each sparse layer (:func:`read`):

    1. its tokens' indexer queries score every tier-1 entry with ``kernels.indexer_topk``; each token keeps its best
       entries, ``k_tokens`` tokens' worth (``CollectionLayer.select``);
    2. the selected tokens' keys and values are fetched (``CollectionLayer.fetch``);
    3. exact softmax attention runs over them and the question's own tokens (causal).

Keys and values are the collection's own, as its prefill wrote them; the question has its own projections in each
layer (:class:`QuestionQueries`: attention queries with a per-head temperature, indexer queries and head weights),
trained to read. The attention mass each collection token receives, weighted per head, comes back with the read: its
sum over a passage is the read's evidence for that passage. :func:`attend_all` is the same attention over every token
of a collection held in memory (training; the reference that a read selecting every token equals).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from .config import HybridConfig


class QuestionQueries(nn.Module):
    """One sparse layer's projections of question tokens: attention queries (H heads, with a learned temperature
    each), indexer queries and head weights, and the weights of the attention mass in the evidence: one per head
    and one per question token (a gate on its state: "what", "the" weigh less than the words that carry it)."""

    def __init__(self, cfg: HybridConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, bias=False)
        self.q_norm = nn.RMSNorm(cfg.head_dim, eps=cfg.norm_eps)
        self.log_scale = nn.Parameter(torch.zeros(cfg.n_heads))  # logits = exp(log_scale) · q·k / √D
        self.index_q = nn.Linear(cfg.d_model, cfg.indexer_heads * cfg.indexer_dim, bias=False)
        self.index_w = nn.Linear(cfg.d_model, cfg.indexer_heads, bias=False)
        self.mass_logit = nn.Parameter(torch.zeros(cfg.n_heads))  # head weights of the mass: softplus(·) / ln 2
        self.token_gate = nn.Linear(cfg.d_model, 1)  # question-token weights of the mass: softplus(·) / ln 2
        nn.init.zeros_(self.token_gate.weight)
        nn.init.zeros_(self.token_gate.bias)

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """h (Tq, d) → attention queries (Tq, H, D), indexer queries (Tq, H_I, d_I), indexer head weights (Tq, H_I)."""
        cfg, Tq = self.cfg, h.shape[0]
        q = self.q_norm(self.q_proj(h).view(Tq, cfg.n_heads, cfg.head_dim))
        iq = self.index_q(h).view(Tq, cfg.indexer_heads, cfg.indexer_dim)
        return q, iq, self.index_w(h) * cfg.indexer_heads**-0.5

    def scale(self) -> torch.Tensor:
        """(H,) the logit scale of each head."""
        return self.log_scale.exp() * self.cfg.head_dim**-0.5

    def mass_weights(self, h: torch.Tensor) -> torch.Tensor:
        """Weight of each question token's attention mass in each head: h (Tq, d) → (Tq, H) > 0, 1 at
        initialization."""
        logits = self.mass_logit[None, :] + self.token_gate(h)  # (Tq, H)
        return F.softplus(logits) / math.log(2)


class CollectionLayer(Protocol):
    """One sparse layer of a stored collection, as a read sees it (token positions are the collection's)."""

    def select(self, q: torch.Tensor, w: torch.Tensor, k_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Indexer queries q (Tq, H_I, d_I), head weights w (Tq, H_I) → each token's best entries: first tokens
        (Tq, m) and lengths (Tq, m) int64, length 0 = no entry; about ``k_tokens`` tokens a row (-1: all)."""

    def fetch(self, positions: torch.Tensor) -> torch.Tensor:
        """Keys and values of token ``positions`` (n,) int64 ascending → (n, 2, Hkv, D) float32."""


@dataclass
class DenseLayer:
    """A collection layer held in memory whole: every token is read (:func:`attend_all`)."""

    kv: torch.Tensor  # (L, 2, Hkv, D)


@dataclass
class LayerRead:
    """What one layer's read touched: the collection tokens it attended to and the mass each received."""

    tokens: torch.Tensor  # (n,) int64 ascending collection positions
    mass: torch.Tensor  # (n,) float32 attention mass, summed over the question's tokens, weighted per head
    timings_ms: dict[str, float] = field(default_factory=dict)  # select, fetch, attend
    attention: torch.Tensor | None = None  # (Tq, H, n) the probabilities on the tokens (attend_all only)


def _attention(
    queries: QuestionQueries,
    q: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    valid: torch.Tensor | None,
    own: torch.Tensor,
    einsum_keys: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax attention of question tokens over collection keys and their own tokens (causal).
    q (Tq, H, D); keys/values (Tq, n, Hkv, D) per token (einsum_keys "tngd") or (n, Hkv, D) shared ("ngd");
    valid (Tq, n) | None; own (Tq, 2, Hkv, D) → (out (Tq, H, D), probabilities on the collection (Tq, H, n))."""
    Tq, H, D = q.shape
    Hkv = own.shape[2]
    qg = q.view(Tq, Hkv, H // Hkv, D) * queries.scale().view(Hkv, H // Hkv, 1)  # (Tq, g, rep, D)
    logits = torch.einsum(f"tgrd,{einsum_keys}->tgrn", qg, keys.float()).reshape(Tq, H, -1)  # (Tq, H, n)
    if valid is not None:
        logits = logits.masked_fill(~valid[:, None, :], float("-inf"))
    own_logits = torch.einsum("tgrd,sgd->tgrs", qg, own[:, 0].float()).reshape(Tq, H, Tq)  # (Tq, H, Tq)
    causal = torch.ones(Tq, Tq, dtype=torch.bool, device=q.device).tril()
    own_logits = own_logits.masked_fill(~causal[:, None, :], float("-inf"))
    n = logits.shape[-1]
    p = torch.cat([logits, own_logits], -1).softmax(-1)  # (Tq, H, n + Tq); the own token is always valid
    pc, po = p[..., :n].view(Tq, Hkv, H // Hkv, n), p[..., n:].view(Tq, Hkv, H // Hkv, Tq)
    out = torch.einsum(f"tgrn,{einsum_keys}->tgrd", pc, values.float())
    out = out + torch.einsum("tgrs,sgd->tgrd", po, own[:, 1].float())
    return out.reshape(Tq, H, D), p[..., :n]


def attend_all(layer: nn.Module, h: torch.Tensor, collection: DenseLayer) -> tuple[torch.Tensor, LayerRead]:
    """Question states h (Tq, d) attending to every token of ``collection`` and to themselves (differentiable).
    → (out (Tq, H, D), LayerRead over all L tokens)."""
    _, own = layer.project(h[None])
    q, _, _ = layer.question(h)
    kv = collection.kv
    out, p = _attention(layer.question, q, kv[:, 0], kv[:, 1], None, own[0], "ngd")
    mass = (p * layer.question.mass_weights(h)[:, :, None]).sum((0, 1))  # (L,)
    return out, LayerRead(torch.arange(kv.shape[0], device=kv.device), mass, attention=p)


@torch.no_grad()
def read(
    layer: nn.Module, h: torch.Tensor, collection: CollectionLayer, k_tokens: int
) -> tuple[torch.Tensor, LayerRead]:
    """Question states h (Tq, d) reading a stored collection layer: select, fetch, attend (the module docstring).
    → (out (Tq, H, D), LayerRead of the selected tokens)."""
    started = time.perf_counter()
    _, own = layer.project(h[None])
    q, iq, iw = layer.question(h)
    starts, lengths = collection.select(iq, iw, k_tokens)  # (Tq, m)
    selected = time.perf_counter()
    width = int(lengths.max()) if lengths.numel() else 0
    offsets = torch.arange(width)
    positions = (starts[:, :, None] + offsets).flatten(1)  # (Tq, n)
    valid = (offsets < lengths[:, :, None]).flatten(1)  # (Tq, n)
    tokens, inverse = torch.unique(positions[valid], return_inverse=True)  # (u,), (valid count,)
    rows = collection.fetch(tokens)  # (u, 2, Hkv, D)
    kv = rows.new_zeros(*positions.shape, *rows.shape[1:])  # (Tq, n, 2, Hkv, D)
    kv[valid] = rows[inverse]
    fetched = time.perf_counter()
    out, p = _attention(layer.question, q, kv[:, :, 0], kv[:, :, 1], valid, own[0], "tngd")
    per_token = (p * layer.question.mass_weights(h)[:, :, None]).sum(1)  # (Tq, n)
    mass = torch.zeros(tokens.shape[0]).index_add_(0, inverse, per_token[valid])
    timings = {
        "select": (selected - started) * 1e3,
        "fetch": (fetched - selected) * 1e3,
        "attend": (time.perf_counter() - fetched) * 1e3,
    }
    return out, LayerRead(tokens, mass, timings)
