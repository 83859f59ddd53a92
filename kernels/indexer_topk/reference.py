"""Readable float32 reference for the indexer score and its top-k.

Query t has H heads q_{t,h} (D,) with weights w_{t,h}; key s is k_s (D,), or int8 codes c_s with a scale σ_s
(k_s ≈ σ_s c_s). The score is

    score[t, s] = Σ_h w_{t,h} · ReLU(q_{t,h} · k_s)

and the op returns, per query, the k largest scores (descending) and their key indices; equal scores are taken
lowest index first. With ``limits``, query t scores only keys [0, limits[t]); slots it cannot fill score -inf.
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
    q: torch.Tensor,
    w: torch.Tensor,
    keys: torch.Tensor,
    k: int,
    scales: torch.Tensor | None = None,
    limits: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """→ (values (Tq, k) float32 descending, indices (Tq, k) int64)."""
    scores = indexer_scores_reference(q, w, keys, scales)  # (Tq, N)
    if limits is not None:
        beyond = torch.arange(keys.shape[0], device=scores.device)[None] >= limits.to(scores.device)[:, None]
        scores = scores.masked_fill(beyond, float("-inf"))
    values, order = scores.sort(dim=-1, descending=True, stable=True)  # stable: ties keep the lower index first
    return values[:, :k], order[:, :k]
