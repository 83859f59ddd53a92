"""CPU fast path for indexer scoring + top-k.

Keys are processed in chunks: one matrix product gives every (query, head) dot product, ReLU, one more product with
the block-diagonal head-weight matrix gives the scores, a block of ``BLOCK_ROWS`` keys at a time (the products stay
in the CPU's cache); a running top-k keeps the best, and the keys of a chunk below every query's running k-th score
skip its merge (2.5M keys, a 10M-token layer, 12 question tokens: 0.42 → 0.18 s here with both). Memory stays
O(chunk·Tq + Tq·k) whatever the number of keys. The running top-k is kept in key order and takes equal scores lowest
index first, so the selection is the same however the keys are chunked; keys at or beyond a query's limit score -inf.

INT8 keys are widened to float32 block by block and their per-key scales applied to the ReLU'd sums
(ReLU(σ x) = σ ReLU(x) for σ > 0), as the Triton kernel does: the queries stay float, so both paths score alike
(and pick the same entries) up to the order of float32 sums.
"""

from __future__ import annotations

import torch

CHUNK_ELEMENTS = 1 << 23  # chunk rows · Tq · H: the keys of one running top-k step
BLOCK_ROWS = 16384  # keys scored by one pair of matrix products


def _head_weight_matrix(w: torch.Tensor) -> torch.Tensor:
    """w (Tq, H) → block-diagonal (Tq·H, Tq) with [t·H + h, t] = w[t, h]."""
    Tq, H = w.shape
    eye = torch.eye(Tq, dtype=torch.float32)  # (Tq, Tq)
    return (w.float()[:, :, None] * eye[:, None, :]).reshape(Tq * H, Tq)


def _scores(keys: torch.Tensor, qm: torch.Tensor, wm: torch.Tensor, scales: torch.Tensor | None) -> torch.Tensor:
    """keys (n, D) [INT8 + scales (n,)], qm (D, Tq·H), wm (Tq·H, Tq) → the keys' scores (Tq, n), contiguous (the
    top-k reads rows: on a transposed view it was several times slower). Each block's second product is taken with
    ``dots`` as it lies, (b, Tq), and written transposed while the block is in the cache: a product with the
    transposed ``dots`` cost 1.5–2× the whole first product."""
    out = torch.empty(wm.shape[1], keys.shape[0])  # (Tq, n)
    for a in range(0, keys.shape[0], BLOCK_ROWS):
        dots = torch.mm(keys[a : a + BLOCK_ROWS].float(), qm).relu_()  # (b, Tq·H); int8 codes widened
        block = torch.mm(dots, wm)  # (b, Tq)
        if scales is not None:
            block *= scales[a : a + BLOCK_ROWS, None].float()
        out[:, a : a + BLOCK_ROWS] = block.t()
    return out


def top_first(scores: torch.Tensor, m: int) -> torch.Tensor:
    """Positions (G, m), ascending, of the m largest scores of each row; ties go to the lowest positions."""
    G, n = scores.shape
    values, positions = scores.topk(m, dim=1, sorted=False)  # (G, m) the m largest, ties in any order
    tau = values.min(dim=1, keepdim=True).values  # (G, 1) the m-th value
    slots = (values == tau).sum(1)  # (G,) the slots the ties at tau fill
    at_tau = scores == tau
    tied = at_tau.sum(1)  # (G,)
    if torch.equal(tied, slots):  # the usual case: every tie is taken
        return positions.sort(dim=1).values
    rows, cols = at_tau.nonzero(as_tuple=True)  # every tie at tau, by row, lowest position first
    rank = torch.arange(rows.shape[0]) - (tied.cumsum(0) - tied)[rows]  # each tie's rank within its row
    first = rank < slots[rows]  # the lowest positions fill the slots
    above = values > tau
    row = torch.cat([torch.arange(G)[:, None].expand(G, m)[above], rows[first]])
    position = torch.cat([positions[above], cols[first]])
    return (row * n + position).sort().values.view(G, m) - torch.arange(G)[:, None] * n


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
        sc = _scores(keys[s : s + chunk], qm, wm, None if scales is None else scales[s : s + chunk])  # (Tq, n)
        ids = torch.arange(s, s + sc.shape[1])
        if limits is not None:
            sc = sc.masked_fill(ids[None] >= limits[:, None], float("-inf"))
        if best_v.shape[1] == k:  # a key below every row's running k-th score cannot enter: left out before the merge
            kth = best_v.min(dim=1).values.tolist()  # each row's running k-th score
            keep = sc[0] >= kth[0]
            for t in range(1, Tq):  # row by row: ``(sc >= kth).any(0)`` reduces across rows, several times slower
                keep |= sc[t] >= kth[t]
            cols = keep.nonzero().flatten()
            sc, ids = sc[:, cols], ids[cols]
        best_v = torch.cat([best_v, sc], dim=1)  # key order: the kept ones come before this chunk
        best_i = torch.cat([best_i, ids.expand(Tq, -1)], dim=1)
        if best_v.shape[1] > k:
            j = top_first(best_v, k)
            best_v, best_i = best_v.gather(1, j), best_i.gather(1, j)
    best_v, order = best_v.sort(dim=1, descending=True, stable=True)  # ties stay lowest index first
    return best_v, best_i.gather(1, order)
