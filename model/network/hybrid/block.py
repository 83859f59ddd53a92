"""HybridBlock: RMSNorm → linear-attention and sparse streams → per-head gate fusing them → residual → RMSNorm →
SwiGLU MLP → residual."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .config import HybridConfig
from .linear_attention import GatedLinearAttention
from .question_read import CollectionLayer, DenseLayer, LayerRead, attend_all, read
from .sparse_attention import SparseAttention, SparseCache


class SwiGLU(nn.Module):
    def __init__(self, cfg: HybridConfig) -> None:
        super().__init__()
        self.up = nn.Linear(cfg.d_model, 2 * cfg.mlp_hidden, bias=False)
        self.down = nn.Linear(cfg.mlp_hidden, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.up(x).chunk(2, dim=-1)
        return self.down(F.silu(a) * b)


class HybridBlock(nn.Module):
    def __init__(self, cfg: HybridConfig, index: int) -> None:
        super().__init__()
        self.index = index
        self.norm1 = nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.linear = GatedLinearAttention(cfg)
        self.sparse = SparseAttention(cfg)
        self.gate = nn.Linear(cfg.d_model, cfg.n_heads)  # per-head fusion gate (σ = weight of the linear stream)
        self.out = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, bias=False)
        self.norm2 = nn.RMSNorm(cfg.d_model, eps=cfg.norm_eps)
        self.mlp = SwiGLU(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def _fuse(self, h, lin, sparse, stats: dict | None) -> torch.Tensor:
        """h (B, T, d), lin / sparse (B, T, H, D) → the attention output (B, T, d)."""
        g = torch.sigmoid(self.gate(h))  # (B, T, H)
        if stats is not None:
            gd = g.detach()
            stats[f"gate/{self.index}/mean"] = float(gd.mean())
            stats[f"gate/{self.index}/std"] = float(gd.std(unbiased=False))
        y = g[..., None] * lin + (1 - g[..., None]) * sparse  # (B, T, H, D)
        return self.drop(self.out(y.flatten(2)))

    def _mlp(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.drop(self.mlp(self.norm2(x)))

    def forward(self, x, gla_state, caches: list[SparseCache], stats: dict | None = None):
        """Collection tokens: x (B, T, d), gla_state (B, H, Dk, Dv) | None → (x, new gla_state); caches extended."""
        h = self.norm1(x)
        lin, gla_state = self.linear(h, gla_state)
        x = x + self._fuse(h, lin, self.sparse(h, caches), stats)
        return self._mlp(x), gla_state

    def read(
        self, x: torch.Tensor, collection: CollectionLayer | DenseLayer, k_tokens: int
    ) -> tuple[torch.Tensor, LayerRead]:
        """Question tokens reading a stored collection: x (1, Tq, d) → (x, LayerRead). Their linear-attention state
        starts from zero; the sparse stream reads the collection (``question_read``); nothing is written."""
        h = self.norm1(x)
        lin, _ = self.linear(h)
        if isinstance(collection, DenseLayer):
            sparse, trace = attend_all(self.sparse, h[0], collection)
        else:
            sparse, trace = read(self.sparse, h[0], collection, k_tokens)
        return self._mlp(x + self._fuse(h, lin, sparse[None], None)), trace
