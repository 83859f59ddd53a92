"""Readable float32 reference for weighted block pooling (+ INT8 quantization).

Keys (..., T, D) are cut into ``T // ratio`` complete blocks of ``ratio`` consecutive rows (a trailing incomplete
block is not pooled yet: it is written once complete). Block b becomes

    pooled_b = Σ_i w_i k_i / max(Σ_i w_i, EPS)          i over the block's rows

INT8: optional rotation R (D, D) first (x ← x R), then per row scale = fp16(max(max(|x|) / 127, SCALE_MIN)) (stored
as float16: 34 bytes per entry at D = 32 instead of 36) and q = clamp(floor(x / scale + 0.5), -127, 127), so
x ≈ q · scale.
"""

from __future__ import annotations

import torch

EPS = 1e-12
SCALE_MIN = 2.0**-24  # the smallest positive float16: a scale never rounds to zero


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
    """x (..., D) → (q (..., D) int8, scale (...) float16) with x R ≈ q · scale."""
    x = x.float()
    if rotation is not None:
        x = x @ rotation.float()  # (..., D)
    scale = (x.abs().amax(dim=-1) / 127.0).clamp_min(SCALE_MIN).half()  # (...)
    q = torch.floor(x / scale.float()[..., None] + 0.5).clamp(-127, 127).to(torch.int8)
    return q, scale


def pool_quantize_reference(
    keys: torch.Tensor, weights: torch.Tensor, ratio: int, rotation: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pooling then INT8 quantization: (q (..., T // ratio, D) int8, scale (..., T // ratio) float16)."""
    return quantize_int8_reference(weighted_pool_reference(keys, weights, ratio), rotation)
