"""CPU fast path for weighted block pooling: vectorized over blocks, chunked so temporaries stay bounded.

Plain PyTorch ops, so autograd gives the gradients for keys and weights.
"""

from __future__ import annotations

import torch

from .reference import EPS, SCALE_MIN

CHUNK_BLOCKS = 1 << 16  # pooled rows per chunk


def weighted_pool_cpu(keys: torch.Tensor, weights: torch.Tensor, ratio: int) -> torch.Tensor:
    """keys (B, T, D), weights (B, T) → pooled (B, T // ratio, D) in the keys' dtype (fp32 accumulation)."""
    B, T, D = keys.shape
    n_blocks = T // ratio
    k = keys[:, : n_blocks * ratio].reshape(B, n_blocks, ratio, D)  # (B, NB, r, D)
    w = weights[:, : n_blocks * ratio].reshape(B, n_blocks, ratio).float()  # (B, NB, r)
    out = []
    for s in range(0, max(n_blocks, 1), CHUNK_BLOCKS):
        kc, wc = k[:, s : s + CHUNK_BLOCKS].float(), w[:, s : s + CHUNK_BLOCKS]
        num = torch.einsum("bnr,bnrd->bnd", wc, kc)  # (B, nb, D)
        out.append(num / wc.sum(-1).clamp_min(EPS)[..., None])
    return torch.cat(out, dim=1).to(keys.dtype)


def quantize_int8_cpu(x: torch.Tensor, rotation: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """x (M, D) → (q (M, D) int8, scale (M,) float16), chunked over rows."""
    qs, scales = [], []
    for s in range(0, max(x.shape[0], 1), CHUNK_BLOCKS):
        xc = x[s : s + CHUNK_BLOCKS].float()  # (m, D)
        if rotation is not None:
            xc = xc @ rotation.float()
        scale = (xc.abs().amax(dim=-1) / 127.0).clamp_min(SCALE_MIN).half()  # (m,)
        qs.append(torch.floor(xc / scale.float()[:, None] + 0.5).clamp_(-127, 127).to(torch.int8))
        scales.append(scale)
    return torch.cat(qs), torch.cat(scales)
