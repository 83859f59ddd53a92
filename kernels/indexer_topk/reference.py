"""Readable float32 reference for the indexer score and its top-k.

Query t has H heads q_{t,h} (D,) with weights w_{t,h}; key s is k_s (D,), or int8 codes c_s with a scale σ_s
(k_s ≈ σ_s c_s). The score is

    score[t, s] = Σ_h w_{t,h} · ReLU(q_{t,h} · k_s)

and the op returns, per query, the k largest scores (descending) and their key indices.
"""

from __future__ import annotations

import torch


def indexer_scores_reference(
    q: torch.Tensor, w: torch.Tensor, keys: torch.Tensor, scales: torch.Tensor | None = None
) -> torch.Tensor:
    """q (Tq, H, D), w (Tq, H), keys (N, D) [int8 with scales (N,)] → scores (Tq, N) float32."""
    k = keys.float()
    if scales is not None:
        k = k * scales.float()[:, None]  # (N, D) dequantized
    dots = torch.einsum("thd,nd->thn", q.float(), k)  # (Tq, H, N)
    return (w.float()[..., None] * dots.relu()).sum(dim=1)  # (Tq, N)


def indexer_topk_reference(
    q: torch.Tensor, w: torch.Tensor, keys: torch.Tensor, k: int, scales: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """→ (values (Tq, k) float32 descending, indices (Tq, k) int64)."""
    return indexer_scores_reference(q, w, keys, scales).topk(k, dim=-1)
