"""IndexPool pooling weights.

A block is r consecutive indexer keys k_0 … k_{r-1} (token positions b·r + i). It is written once, when its last
token k_{r-1} arrives, as the single pooled key

    k̂ = Σ_i w_i k_i / Σ_i w_i,            w_i = α · pos_i + β · content_i + γ · temporal_i

with (c = (r - 1) / 2 the block centre, i the offset inside the block):

    pos_i      = exp(-(i - c)² / (2 σ²))                   positional Gaussian of the distance to the centre
    content_i  = (1 + cos(k_i, u)) / 2  ∈ [0, 1]            cosine to the write-time content query u, made ≥ 0
    temporal_i = exp(-λ · (r - 1 - i))                      exponential decay with age inside the block

The content query u exists when the block is written:
    "last_query": u = Σ_h w_{t,h} q_{t,h} of the block's last token t (its own head-weighted indexer query),
    "block_mean": u = mean_i k_i.
So k̂ depends only on the block's own keys and its last token's query: pooled keys never change when later tokens
arrive and are computed once. α, β, γ (clamped ≥ 0), σ and λ are learnable parameters (defaults 0.5 / 0.3 / 0.2).

Adaptive ratio: a block whose disagreement 1 - mean_i cos(k_i, mean key) exceeds a threshold is kept at r = 1 (its r
keys stored unpooled); the average ratio is tokens / stored entries.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .config import IndexPoolConfig


def positional_weights(ratio: int, sigma: torch.Tensor | float) -> torch.Tensor:
    """pos_i for i in [0, r).  # (r,)"""
    sigma = torch.as_tensor(sigma, dtype=torch.float32)
    i = torch.arange(ratio, dtype=torch.float32, device=sigma.device)
    return torch.exp(-((i - (ratio - 1) / 2) ** 2) / (2 * sigma**2))


def temporal_weights(ratio: int, decay: torch.Tensor | float) -> torch.Tensor:
    """temporal_i = exp(-λ (r - 1 - i)).  # (r,)"""
    decay = torch.as_tensor(decay, dtype=torch.float32)
    age = torch.arange(ratio - 1, -1, -1, dtype=torch.float32, device=decay.device)
    return torch.exp(-decay * age)


def content_weights(blocks: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """blocks (NB, r, D), query (NB, D) → (1 + cos(k_i, u)) / 2.  # (NB, r)"""
    cos = torch.nn.functional.cosine_similarity(blocks.float(), query.float()[:, None, :], dim=-1, eps=1e-8)
    return (1 + cos) / 2


def write_queries(
    keys: torch.Tensor, last_queries: torch.Tensor | None, last_head_weights: torch.Tensor | None, mode: str
) -> torch.Tensor:
    """Write-time content query u per block.  keys (NB, r, D), last_queries (NB, H, D), last_head_weights (NB, H)
    of each block's last token → u (NB, D)"""
    if mode == "block_mean":
        return keys.float().mean(1)
    if last_queries is None or last_head_weights is None:
        raise ValueError("content_query='last_query' needs the indexer queries and head weights of the tokens")
    return torch.einsum("bhd,bh->bd", last_queries.float(), last_head_weights.float())


def weight_entropy(weights: torch.Tensor, ratio: int) -> float:
    """Mean entropy of the normalized per-block weights divided by log r: 1 = uniform, 0 = one key takes all."""
    if ratio == 1 or weights.numel() == 0:
        return 1.0
    p = weights.detach().float().reshape(-1, ratio)
    p = p / p.sum(-1, keepdim=True).clamp_min(1e-12)
    return float(-(p * p.clamp_min(1e-12).log()).sum(-1).mean() / math.log(ratio))


class PoolingWeights(nn.Module):
    """Learnable α, β, γ, σ, λ → per-token pooling weights w_i (see the module docstring)."""

    def __init__(self, cfg: IndexPoolConfig) -> None:
        super().__init__()
        self.ratio, self.mode = cfg.ratio, cfg.content_query
        self.alpha = nn.Parameter(torch.tensor(float(cfg.alpha)))
        self.beta = nn.Parameter(torch.tensor(float(cfg.beta)))
        self.gamma = nn.Parameter(torch.tensor(float(cfg.gamma)))
        self.sigma = nn.Parameter(torch.tensor(float(cfg.sigma)))
        self.decay = nn.Parameter(torch.tensor(float(cfg.decay)))

    def forward(self, blocks: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """blocks (NB, r, D), write-time content queries u (NB, D) → w (NB, r)."""
        r = self.ratio
        content = content_weights(blocks, u)  # (NB, r)
        pos = positional_weights(r, self.sigma)  # (r,)
        temporal = temporal_weights(r, self.decay)  # (r,)
        w = self.alpha.clamp_min(0) * pos + self.beta.clamp_min(0) * content + self.gamma.clamp_min(0) * temporal
        return w


class StaticPoolingWeights(nn.Module):
    """Baseline: one learned weight per slot of the block, the same for every block (softmax of r logits)."""

    def __init__(self, ratio: int) -> None:
        super().__init__()
        self.ratio = ratio
        self.logits = nn.Parameter(torch.zeros(ratio))

    def forward(self, blocks: torch.Tensor, u: torch.Tensor | None = None) -> torch.Tensor:
        return self.logits.softmax(0).expand(blocks.shape[0], -1)  # (NB, r)


class MeanPoolingWeights(nn.Module):
    """Baseline (MoBA / NSA style): uniform weights."""

    def __init__(self, ratio: int) -> None:
        super().__init__()
        self.ratio = ratio

    def forward(self, blocks: torch.Tensor, u: torch.Tensor | None = None) -> torch.Tensor:
        return torch.ones(blocks.shape[:2], device=blocks.device)  # (NB, r)


def adaptive_keep(blocks: torch.Tensor, threshold: float) -> torch.Tensor:
    """Which blocks stay unpooled (r = 1).  blocks (NB, r, D) → keep (NB,) bool"""
    blocks = blocks.float()
    mean = blocks.mean(1, keepdim=True)
    cos = torch.nn.functional.cosine_similarity(blocks, mean, dim=-1, eps=1e-8)  # (NB, r)
    return (1 - cos.mean(1)) > threshold
