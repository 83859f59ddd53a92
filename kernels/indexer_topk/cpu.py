"""CPU fast path for indexer scoring + top-k.

Keys are processed in chunks: one matrix product per chunk gives every (query, head) dot product, ReLU, one more
product with the block-diagonal head-weight matrix gives the chunk's scores, and a running top-k keeps the best, so
memory stays O(chunk·Tq·H + Tq·k) whatever the number of keys. The running top-k is kept in key order and takes
equal scores lowest index first, so the selection is the same however the keys are chunked; keys at or beyond a
query's limit score -inf.

INT8 keys are widened to float32 chunk by chunk and their per-key scales applied to the ReLU'd sums
(ReLU(σ x) = σ ReLU(x) for σ > 0), as the Triton kernel does: the queries stay float, so both paths score alike
(and pick the same entries) up to the order of float32 sums.
"""

from __future__ import annotations

import torch

CHUNK_ELEMENTS = 1 << 23  # chunk rows · Tq · H dot products per step (32 MiB of float32)


def _head_weight_matrix(w: torch.Tensor) -> torch.Tensor:
    """w (Tq, H) → block-diagonal (Tq·H, Tq) with [t·H + h, t] = w[t, h]."""
    Tq, H = w.shape
    eye = torch.eye(Tq, dtype=torch.float32)  # (Tq, Tq)
    return (w.float()[:, :, None] * eye[:, None, :]).reshape(Tq * H, Tq)


def top_first(scores: torch.Tensor, m: int) -> torch.Tensor:
    """Positions (G, m), ascending, of the m largest scores of each row; ties go to the lowest positions."""
    tau = scores.topk(m, dim=1).values[:, -1:]  # (G, 1) the m-th value
    above, tied = scores > tau, scores == tau
    need = m - above.sum(1, keepdim=True)
    take = above | (tied & (tied.cumsum(1) <= need))
    return take.nonzero()[:, 1].view(-1, m)


def indexer_topk_cpu(
    q: torch.Tensor,
    w: torch.Tensor,
    keys: torch.Tensor,
    k: int,
    scales: torch.Tensor | None = None,
    limits: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """q (Tq, H, D), w (Tq, H), keys (N, D) [int8 + scales (N,)], limits (Tq,) | None
    → (values (Tq, k) float32 descending, indices (Tq, k) int64)."""
    Tq, H, D = q.shape
    N = keys.shape[0]
    qm = q.float().reshape(Tq * H, D).t().contiguous()  # (D, Tq*H)
    wm = _head_weight_matrix(w)  # (Tq*H, Tq)
    chunk = max(k, CHUNK_ELEMENTS // (Tq * H))
    best_v = torch.empty(Tq, 0)
    best_i = torch.empty(Tq, 0, dtype=torch.int64)
    for s in range(0, N, chunk):
        kc = keys[s : s + chunk]  # (n, D)
        dots = torch.mm(kc.float(), qm).relu_()  # (n, Tq*H); int8 codes widened
        sc = torch.mv(dots, wm[:, 0])[None] if Tq == 1 else torch.mm(dots, wm).t()  # (Tq, n)
        if scales is not None:
            sc = sc * scales[s : s + chunk].float()
        ids = torch.arange(s, s + sc.shape[1])
        if limits is not None:
            sc = sc.masked_fill(ids[None] >= limits[:, None], float("-inf"))
        best_v = torch.cat([best_v, sc], dim=1)  # key order: the kept ones come before this chunk
        best_i = torch.cat([best_i, ids.expand(Tq, -1)], dim=1)
        if best_v.shape[1] > k:
            j = top_first(best_v, k)
            best_v, best_i = best_v.gather(1, j), best_i.gather(1, j)
    best_v, order = best_v.sort(dim=1, descending=True, stable=True)  # ties stay lowest index first
    return best_v, best_i.gather(1, order)
