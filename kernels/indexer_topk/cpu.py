"""CPU fast path for indexer scoring + top-k.

Keys are processed in chunks: one matrix product per chunk gives every (query, head) dot product, ReLU, one more
product with the block-diagonal head-weight matrix gives the chunk's scores, and a running top-k keeps the best, so
memory stays O(chunk·Tq·H + Tq·k) whatever the number of keys.

INT8 keys use an integer product (``torch._int_mm``, int32 accumulation, exact) with each query head quantized to
int8 by its absmax; the per-key and per-head scales are applied to the int32 sums in float32
(ReLU(σ x) = σ ReLU(x) for σ > 0). Its only error beyond the keys' own quantization is the query rounding.
"""

from __future__ import annotations

import torch

CHUNK_ELEMENTS = 1 << 23  # chunk rows · Tq · H dot products per step (32 MiB of float32)


def _head_weight_matrix(w: torch.Tensor) -> torch.Tensor:
    """w (Tq, H) → block-diagonal (Tq·H, Tq) with [t·H + h, t] = w[t, h]."""
    Tq, H = w.shape
    eye = torch.eye(Tq, dtype=torch.float32)  # (Tq, Tq)
    return (w.float()[:, :, None] * eye[:, None, :]).reshape(Tq * H, Tq)


def indexer_topk_cpu(
    q: torch.Tensor, w: torch.Tensor, keys: torch.Tensor, k: int, scales: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """q (Tq, H, D), w (Tq, H), keys (N, D) [int8 + scales (N,)]
    → (values (Tq, k) float32 descending, indices (Tq, k) int64)."""
    Tq, H, D = q.shape
    N = keys.shape[0]
    qm = q.float().reshape(Tq * H, D).t().contiguous()  # (D, Tq*H)
    wm = _head_weight_matrix(w)  # (Tq*H, Tq)
    if scales is not None:  # int8 queries: per-(t, h) absmax scale, folded into the head weights
        q_scale = qm.abs().amax(0).clamp_min(1e-12) / 127.0  # (Tq*H,)
        qm = torch.floor(qm / q_scale + 0.5).clamp_(-127, 127).to(torch.int8)
        wm = wm * q_scale[:, None]
    chunk = max(k, CHUNK_ELEMENTS // (Tq * H))
    best_v = torch.empty(Tq, 0)
    best_i = torch.empty(Tq, 0, dtype=torch.int64)
    for s in range(0, N, chunk):
        kc = keys[s : s + chunk]  # (n, D)
        if scales is None:
            dots = torch.mm(kc.float(), qm).relu_()  # (n, Tq*H)
        else:
            dots = torch._int_mm(kc, qm).relu_().float()  # (n, Tq*H) exact int32 sums
        sc = torch.mv(dots, wm[:, 0])[None] if Tq == 1 else torch.mm(dots, wm).t()  # (Tq, n)
        if scales is not None:
            sc = sc * scales[s : s + chunk].float()
        v, i = sc.topk(min(k, sc.shape[1]), dim=1)
        best_v = torch.cat([best_v, v], dim=1)
        best_i = torch.cat([best_i, i + s], dim=1)
        if best_v.shape[1] > k:
            best_v, j = best_v.topk(k, dim=1)
            best_i = best_i.gather(1, j)
    return best_v, best_i
