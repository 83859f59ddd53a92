"""Triton fused indexer scoring with a running top-k per tile.

Grid (Tq, n_tiles). A program holds one query's H heads, walks its tile of keys BLOCK_N at a time, scores them with
one ``tl.dot`` (Σ_h w_h ReLU(q_h · k) in float32; int8 keys are widened and scaled per key), and keeps the TOPK best
(score, index) pairs in registers: each pair is packed into one int64 whose order is the score's order (float bits
mapped to a monotone int32 in the high half, 2³¹ − 1 − index in the low half, so that equal scores rank the lower
index first), and ``tl.topk`` on the packed values selects scores and indices together. Keys at or beyond a query's
limit score -inf. Each tile writes its TOPK candidates; the wrapper merges them with one small ``torch.topk`` over
the n_tiles·TOPK packed candidates, then unpacks. The million-wide score row never exists in memory.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

EMPTY = -(2**63)  # packed value of an empty slot: below every real candidate
LOW = 0x7FFFFFFF  # the low half holds LOW - index (a constant Triton types as int32)
_EMPTY = tl.constexpr(EMPTY)


@triton.jit
def _indexer_topk_kernel(
    Q,  # (Tq, H, D) queries
    W,  # (Tq, H) head weights
    K,  # (N, D) keys: float, or int8 codes
    S,  # (N,) float scales when INT8
    L,  # (Tq,) int64 limits when HAS_LIMITS: query t scores keys [0, L[t])
    OUT,  # (Tq, n_tiles, TOPK) int64 packed candidates
    N,
    H,
    D,
    span,  # keys per tile, a multiple of BLOCK_N
    n_tiles,
    stride_qt,
    stride_qh,
    stride_wt,
    stride_k,
    BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr,
    BLOCK_N: tl.constexpr,
    TOPK: tl.constexpr,
    INT8: tl.constexpr,
    DOT_FP16: tl.constexpr,
    HAS_LIMITS: tl.constexpr,
):
    t = tl.program_id(0)
    tile = tl.program_id(1)
    h = tl.arange(0, BLOCK_H)
    d = tl.arange(0, BLOCK_D)
    q = tl.load(
        Q + t * stride_qt + h[:, None] * stride_qh + d[None, :], mask=(h[:, None] < H) & (d[None, :] < D), other=0.0
    )
    w = tl.load(W + t * stride_wt + h, mask=h < H, other=0.0).to(tl.float32)  # (BH,) padded heads weigh 0
    if DOT_FP16:
        q = q.to(tl.float16)
    else:
        q = q.to(tl.float32)

    limit = N
    if HAS_LIMITS:
        limit = tl.minimum(tl.load(L + t), N)
    best = tl.full((TOPK,), _EMPTY, tl.int64)
    start = tile * span
    for off in range(start, start + span, BLOCK_N):
        n = off + tl.arange(0, BLOCK_N)  # (BN,) key indices
        k = tl.load(K + n[:, None] * stride_k + d[None, :], mask=(n[:, None] < N) & (d[None, :] < D), other=0.0)
        if DOT_FP16:
            dots = tl.dot(q, tl.trans(k.to(tl.float16)))  # (BH, BN) fp32 accumulation
        else:
            dots = tl.dot(q, tl.trans(k.to(tl.float32)), input_precision="ieee")
        if INT8:
            dots = dots * tl.load(S + n, mask=n < N, other=0.0).to(tl.float32)[None, :]
        score = tl.sum(tl.maximum(dots, 0.0) * w[:, None], axis=0)  # (BN,)
        score = tl.where(n < limit, score, float("-inf"))
        bits = score.to(tl.int32, bitcast=True)
        mono = bits ^ ((bits >> 31) & 0x7FFFFFFF)  # int32 with the float order
        packed = (mono.to(tl.int64) << 32) | (0x7FFFFFFF - n).to(tl.int64)  # (BN,) equal scores: lower n first
        cand = tl.topk(packed, TOPK)  # (TOPK,)
        best = tl.topk(tl.reshape(tl.join(best, cand), (2 * TOPK,)), TOPK)
    tl.store(OUT + (t * n_tiles + tile) * TOPK + tl.arange(0, TOPK), best)


def unpack(packed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """int64 packed candidates → (scores float32, indices int64); empty slots score -inf."""
    mono = (packed >> 32).to(torch.int32)
    bits = mono ^ ((mono >> 31) & 0x7FFFFFFF)
    values = bits.view(torch.float32).masked_fill(packed == EMPTY, float("-inf"))
    return values, LOW - (packed & 0xFFFFFFFF)


def pack(values: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
    """(scores float32, indices int64) → int64 packed candidates, as the kernel packs them."""
    bits = values.contiguous().view(torch.int32)
    mono = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    return (mono.to(torch.int64) << 32) | (LOW - indices)


def indexer_topk_triton(
    q: torch.Tensor,
    w: torch.Tensor,
    keys: torch.Tensor,
    k: int,
    scales: torch.Tensor | None = None,
    limits: torch.Tensor | None = None,
    block_n: int | None = None,
    tiles_per_query: int | None = None,
    tile_topk: int = 256,
) -> tuple[torch.Tensor, torch.Tensor]:
    """q (Tq, H, D), w (Tq, H), keys (N, D) [int8 + scales (N,)], limits (Tq,) | None → (values (Tq, k), indices
    (Tq, k)), equal scores lowest index first.

    Each tile keeps at most ``tile_topk`` candidates (registers / shared memory bound the in-kernel sort). The merge
    is exact anyway: a tile whose last kept candidate still reaches the merged k-th score may hide more of the top k,
    so only such saturated tiles are rescored with smaller tiles (recursively) before the final merge."""
    Tq, H, D = q.shape
    N = keys.shape[0]
    topk = min(triton.next_power_of_2(k), tile_topk)
    if block_n is None:  # GPU: register-sized tiles; CPU interpreter: few, large steps (its cost is per op)
        block_n = 256 if keys.is_cuda else min(4096, triton.next_power_of_2(N))
    block_n = max(block_n, topk, 16)
    if tiles_per_query is None:  # GPU: enough programs to fill the chip; interpreter: one per query
        tiles_per_query = max(1, min(triton.cdiv(N, 8 * block_n), 1024 // max(Tq, 1))) if keys.is_cuda else 1
    span = triton.cdiv(triton.cdiv(N, tiles_per_query), block_n) * block_n
    n_tiles = triton.cdiv(N, span)
    q, w, keys = q.contiguous(), w.contiguous(), keys.contiguous()
    out = torch.empty(Tq, n_tiles, topk, device=keys.device, dtype=torch.int64)
    _indexer_topk_kernel[(Tq, n_tiles)](
        q,
        w,
        keys,
        scales if scales is not None else w,
        limits if limits is not None else w,
        out,
        N,
        H,
        D,
        span,
        n_tiles,
        q.stride(0),
        q.stride(1),
        w.stride(0),
        keys.stride(0),
        BLOCK_H=max(16, triton.next_power_of_2(H)),
        BLOCK_D=max(16, triton.next_power_of_2(D)),
        BLOCK_N=block_n,
        TOPK=topk,
        INT8=scales is not None,
        DOT_FP16=q.dtype == torch.float16 and keys.dtype != torch.float32,
        HAS_LIMITS=limits is not None,
    )
    values, _ = unpack(out)  # (Tq, n_tiles, topk)
    kk = min(k, n_tiles * topk)
    v, i = unpack(out.reshape(Tq, -1).topk(kk, dim=1).values)  # packed values are distinct: ties by index
    if topk >= k:
        return v, i
    # with fewer candidates than k, every full tile may hide more of the top k
    threshold = v[:, -1:] if kk == k else torch.full_like(v[:, -1:], float("-inf"))
    saturated = (values[:, :, -1] >= threshold) & (values[:, :, -1] > float("-inf"))  # (Tq, n_tiles)
    if kk < k:
        v = torch.cat([v, v.new_full((Tq, k - kk), float("-inf"))], 1)
        i = torch.cat([i, i.new_zeros(Tq, k - kk)], 1)
    for t in saturated.any(1).nonzero().flatten().tolist():
        candidates = [out[t][~saturated[t]].flatten()]
        for tile in saturated[t].nonzero().flatten().tolist():
            lo, hi = tile * span, min(N, (tile + 1) * span)
            sv, si = indexer_topk_triton(
                q[t : t + 1],
                w[t : t + 1],
                keys[lo:hi],
                min(k, hi - lo),
                scales[lo:hi] if scales is not None else None,
                (limits[t : t + 1] - lo).clamp(0, hi - lo) if limits is not None else None,
                topk,
                8,
                tile_topk,
            )
            candidates.append(pack(sv[0], si[0] + lo))
        v[t], i[t] = unpack(torch.cat(candidates).topk(k).values)
    return v, i
