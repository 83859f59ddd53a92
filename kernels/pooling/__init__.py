"""Weighted block pooling of indexer keys (+ optional INT8 quantization with per-row scales).

    pooled = weighted_pool(keys, weights, ratio)                    # (..., T // ratio, D)
    codes, scales = weighted_pool(keys, weights, ratio, quantize=True, rotation=R)

backend: "auto" (Triton on CUDA tensors, the vectorized CPU path otherwise), "triton" (also on CPU tensors under
TRITON_INTERPRET=1), "cpu" or "reference".
"""

from __future__ import annotations

import torch

from .cpu import quantize_int8_cpu, weighted_pool_cpu
from .reference import pool_quantize_reference, quantize_int8_reference, weighted_pool_reference

__all__ = ["weighted_pool", "quantize_int8", "weighted_pool_reference", "pool_quantize_reference"]

BACKENDS = ("auto", "triton", "cpu", "reference")


def _check(keys: torch.Tensor, weights: torch.Tensor, ratio: int, rotation: torch.Tensor | None, backend: str):
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if keys.dim() < 2 or not keys.is_floating_point():
        raise ValueError(f"keys must be a float tensor (..., T, D), got {tuple(keys.shape)} {keys.dtype}")
    if tuple(weights.shape) != tuple(keys.shape[:-1]):
        raise ValueError(
            f"weights must have shape keys.shape[:-1] = {tuple(keys.shape[:-1])}, got {tuple(weights.shape)}"
        )
    if not isinstance(ratio, int) or ratio < 1 or ratio & (ratio - 1):
        raise ValueError(f"ratio must be a power of two ≥ 1 (1, 2, 4, 8, ...), got {ratio!r}")
    if weights.device != keys.device:
        raise ValueError(f"weights are on {weights.device}, keys on {keys.device}: expected the same device")
    D = keys.shape[-1]
    if rotation is not None and tuple(rotation.shape) != (D, D):
        raise ValueError(f"rotation must be (D, D) = ({D}, {D}), got {tuple(rotation.shape)}")


def _use_triton(keys: torch.Tensor, backend: str) -> bool:
    return backend == "triton" or (backend == "auto" and keys.is_cuda)


def weighted_pool(
    keys: torch.Tensor,
    weights: torch.Tensor,
    ratio: int,
    *,
    quantize: bool = False,
    rotation: torch.Tensor | None = None,
    backend: str = "auto",
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """keys (..., T, D), weights (..., T) → pooled (..., T // ratio, D) in the keys' dtype (differentiable), or with
    quantize=True (int8 codes (..., T // ratio, D), float16 scales (..., T // ratio)) of the (rotated) pooled keys."""
    _check(keys, weights, ratio, rotation, backend)
    if rotation is not None and not quantize:
        raise ValueError("rotation is applied before INT8 quantization: pass quantize=True with it")
    lead, (T, D) = keys.shape[:-2], keys.shape[-2:]
    nb = T // ratio
    if backend == "reference":
        if quantize:
            return pool_quantize_reference(keys, weights, ratio, rotation)
        return weighted_pool_reference(keys, weights, ratio).to(keys.dtype)
    k = keys[..., : nb * ratio, :].reshape(-1, D)  # (B*NB*r, D): blocks never straddle a batch row
    w = weights[..., : nb * ratio].reshape(-1)  # (B*NB*r,)
    if _use_triton(keys, backend):
        from .triton_kernel import pool_quantize_triton, weighted_pool_triton

        if quantize:
            q, s = pool_quantize_triton(k, w, ratio, rotation)
            return q.reshape(*lead, nb, D), s.reshape(*lead, nb)
        return weighted_pool_triton(k, w, ratio).reshape(*lead, nb, D)
    pooled = weighted_pool_cpu(k[None], w[None], ratio)[0]  # (B*NB, D)
    if quantize:
        q, s = quantize_int8_cpu(pooled, rotation)
        return q.reshape(*lead, nb, D), s.reshape(*lead, nb)
    return pooled.reshape(*lead, nb, D)


def quantize_int8(
    x: torch.Tensor, rotation: torch.Tensor | None = None, backend: str = "auto"
) -> tuple[torch.Tensor, torch.Tensor]:
    """x (..., D) → (int8 codes (..., D), float16 scales (...)) with x R ≈ codes · scales (per-row absmax / 127)."""
    if backend == "reference":
        return quantize_int8_reference(x, rotation)
    q, s = quantize_int8_cpu(x.reshape(-1, x.shape[-1]), rotation)
    return q.reshape(x.shape), s.reshape(x.shape[:-1])
