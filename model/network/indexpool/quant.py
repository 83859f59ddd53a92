"""INT8 helpers: Hadamard rotation and quantization-aware-training fake quant."""

from __future__ import annotations

import math

import torch

from kernels.pooling.reference import SCALE_MIN


def hadamard(d: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Orthonormal Sylvester Hadamard matrix (d, d), d a power of two: x H spreads outliers over all dims."""
    if d < 1 or d & (d - 1):
        raise ValueError(f"Hadamard rotation needs a power-of-two dimension, got {d}")
    h = torch.ones(1, 1)
    while h.shape[0] < d:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return (h / math.sqrt(d)).to(device)


class _FakeQuant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, noise: float) -> torch.Tensor:
        # the stored scale: float16, as kernels.pooling writes it
        scale = (x.detach().abs().amax(dim=-1, keepdim=True) / 127.0).clamp_min(SCALE_MIN).half().float()  # (..., 1)
        y = x / scale
        if noise > 0:  # noise injection: jitter before rounding, within ±noise of a quantization step
            y = y + (torch.rand_like(y) - 0.5) * 2 * noise
        return torch.floor(y + 0.5).clamp(-127, 127) * scale

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad, None  # straight-through estimator


def fake_quant(x: torch.Tensor, noise: float = 0.0) -> torch.Tensor:
    """INT8 quantize-dequantize with per-row absmax scales (float16, as stored); gradient passes straight through.
    x (..., D)"""
    return _FakeQuant.apply(x, noise)
