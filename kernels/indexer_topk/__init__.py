"""Fused indexer scoring + top-k over (pooled) indexer keys, float or INT8 with per-row scales.

    values, indices = indexer_topk(q, w, keys, k)                      # q (Tq, H, D), w (Tq, H), keys (N, D)
    values, indices = indexer_topk(q, w, codes, k, scales=scales)      # codes (N, D) int8, scales (N,)

score[t, s] = Σ_h w[t, h] · ReLU(q[t, h] · k_s); the k best per query, equal scores lowest index first on every
backend. ``limits`` (Tq,) int64: query t scores only keys [0, limits[t]) (the causal selection of many query blocks at
once); slots a query cannot fill score -inf. backend: "auto" (Triton on CUDA tensors, the chunked CPU path otherwise),
"triton" (also on CPU tensors under TRITON_INTERPRET=1), "cpu" or "reference".
"""

from __future__ import annotations

import torch

from .cpu import indexer_topk_cpu
from .reference import indexer_scores_reference, indexer_topk_reference

__all__ = ["indexer_topk", "indexer_topk_reference", "indexer_scores_reference"]

BACKENDS = ("auto", "triton", "cpu", "reference")


def _check(
    q: torch.Tensor,
    w: torch.Tensor,
    keys: torch.Tensor,
    k: int,
    scales: torch.Tensor | None,
    limits: torch.Tensor | None,
    backend: str,
) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if q.dim() != 3 or not q.is_floating_point():
        raise ValueError(f"q must be a float tensor (Tq, H, D), got {tuple(q.shape)} {q.dtype}")
    Tq, H, D = q.shape
    if tuple(w.shape) != (Tq, H):
        raise ValueError(f"w must be (Tq, H) = ({Tq}, {H}), got {tuple(w.shape)}")
    if keys.dim() != 2 or keys.shape[1] != D:
        raise ValueError(f"keys must be (N, D) with D = {D} like q, got {tuple(keys.shape)}")
    if keys.dtype == torch.int8:
        if scales is None or tuple(scales.shape) != (keys.shape[0],):
            got = None if scales is None else tuple(scales.shape)
            raise ValueError(f"int8 keys need float scales of shape (N,) = ({keys.shape[0]},), got {got}")
    elif not keys.is_floating_point() or scales is not None:
        raise ValueError(
            f"keys must be float (no scales) or int8 with scales, got {keys.dtype} scales={scales is not None}"
        )
    if not 1 <= k <= keys.shape[0]:
        raise ValueError(f"k must be in [1, N] = [1, {keys.shape[0]}], got {k}")
    if limits is not None and (tuple(limits.shape) != (Tq,) or limits.dtype != torch.int64):
        raise ValueError(f"limits must be int64 of shape (Tq,) = ({Tq},), got {tuple(limits.shape)} {limits.dtype}")
    extra = [t for t in (scales, limits) if t is not None]
    devices = {q.device, w.device, keys.device} | {t.device for t in extra}
    if len(devices) != 1:
        raise ValueError(f"q, w, keys, scales and limits must be on one device, got {sorted(map(str, devices))}")


def indexer_topk(
    q: torch.Tensor,
    w: torch.Tensor,
    keys: torch.Tensor,
    k: int,
    *,
    scales: torch.Tensor | None = None,
    limits: torch.Tensor | None = None,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """→ (values (Tq, k) float32, descending; indices (Tq, k) int64 into keys)."""
    _check(q, w, keys, k, scales, limits, backend)
    if backend == "reference":
        return indexer_topk_reference(q, w, keys, k, scales, limits)
    if backend == "triton" or (backend == "auto" and keys.is_cuda):
        from .triton_kernel import indexer_topk_triton

        return indexer_topk_triton(q, w, keys, k, scales, limits)
    return indexer_topk_cpu(q, w, keys, k, scales, limits)
