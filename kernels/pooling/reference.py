"""Readable float32 reference for weighted block pooling (+ INT8 quantization).

Keys (..., T, D) are cut into ``T // ratio`` complete blocks of ``ratio`` consecutive rows (a trailing incomplete
block is not pooled yet: it is written once complete). Block b becomes

    pooled_b = Σ_i w_i k_i / max(Σ_i w_i, EPS)          i over the block's rows

INT8: optional rotation R (D, D) first (x ← x R), then per row scale = max(|x|) / 127 and
q = clamp(floor(x / scale + 0.5), -127, 127), so x ≈ q · scale.
"""

from __future__ import annotations

import torch

EPS = 1e-12


def weighted_pool_reference(keys: torch.Tensor, weights: torch.Tensor, ratio: int) -> torch.Tensor:
    """keys (..., T, D), weights (..., T) → pooled (..., T // ratio, D) float32."""
    n_blocks = keys.shape[-2] // ratio
    k = keys[..., : n_blocks * ratio, :].float()  # (..., NB*r, D)
    w = weights[..., : n_blocks * ratio].float()  # (..., NB*r)
    num = torch.zeros(*k.shape[:-2], n_blocks, k.shape[-1], dtype=torch.float32, device=k.device)
    den = torch.zeros(*k.shape[:-2], n_blocks, dtype=torch.float32, device=k.device)
    for i in range(ratio):  # row i of every block
        num = num + w[..., i::ratio, None] * k[..., i::ratio, :]  # (..., NB, D)
        den = den + w[..., i::ratio]  # (..., NB)
    return num / den.clamp_min(EPS)[..., None]


def quantize_int8_reference(x: torch.Tensor, rotation: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """x (..., D) → (q (..., D) int8, scale (...) float32) with x R ≈ q · scale."""
    x = x.float()
    if rotation is not None:
        x = x @ rotation.float()  # (..., D)
    scale = x.abs().amax(dim=-1).clamp_min(EPS) / 127.0  # (...)
    q = torch.floor(x / scale[..., None] + 0.5).clamp(-127, 127).to(torch.int8)
    return q, scale


def pool_quantize_reference(
    keys: torch.Tensor, weights: torch.Tensor, ratio: int, rotation: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pooling then INT8 quantization: (q (..., T // ratio, D) int8, scale (..., T // ratio) float32)."""
    return quantize_int8_reference(weighted_pool_reference(keys, weights, ratio), rotation)
