"""Triton fused weighted block pooling (+ optional rotation and INT8 quantization).

One program pools BLOCK_M blocks: it loads the (BLOCK_M·r, D) key tile once, builds the block-diagonal weight tile
(BLOCK_M, BLOCK_M·r) whose row m holds block m's normalized weights, and computes the pooled tile with one ``tl.dot``
(tensor cores for fp16 keys). With QUANT it rotates the tile (``tl.dot`` with R) and writes int8 rows plus a float32
scale per row (float16), so pooled keys never go through memory in floating point.

The backward (keys and weights get gradients) is a few vectorized PyTorch ops: pooling is trained, quantization is
inference-only (training uses ``model.network.indexpool.quant.fake_quant``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .reference import EPS, SCALE_MIN

_EPS = tl.constexpr(EPS)  # globals used inside @triton.jit must be constexpr
_SCALE_MIN = tl.constexpr(SCALE_MIN)


@triton.jit
def _pool_kernel(
    K,  # (NB*r, D) keys, any float dtype
    W,  # (NB*r,) pooling weights
    OUT,  # (NB, D) pooled keys (float) or int8 codes when QUANT
    SCALE,  # (NB,) float16 scales when QUANT
    R,  # (D, D) rotation when ROTATE
    n_blocks,
    D,
    stride_k,
    stride_o,
    RATIO: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_D: tl.constexpr,
    DOT_FP16: tl.constexpr,
    QUANT: tl.constexpr,
    ROTATE: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M * RATIO + tl.arange(0, BLOCK_M * RATIO)  # (BM*r,) key rows of this tile
    d = tl.arange(0, BLOCK_D)
    row_ok = rows < n_blocks * RATIO
    k = tl.load(K + rows[:, None] * stride_k + d[None, :], mask=row_ok[:, None] & (d[None, :] < D), other=0.0)
    w = tl.load(W + rows, mask=row_ok, other=0.0).to(tl.float32)  # (BM*r,)

    blocks = tl.arange(0, BLOCK_M)
    owner = tl.arange(0, BLOCK_M * RATIO) // RATIO
    wt = tl.where(owner[None, :] == blocks[:, None], w[None, :], 0.0)  # (BM, BM*r) block-diagonal
    wt = wt / tl.maximum(tl.sum(wt, axis=1), _EPS)[:, None]
    if DOT_FP16:
        pooled = tl.dot(wt.to(tl.float16), k.to(tl.float16))  # (BM, BD) fp32 accumulation
    else:
        pooled = tl.dot(wt, k.to(tl.float32), input_precision="ieee")

    out_rows = pid * BLOCK_M + blocks
    out_ok = (out_rows < n_blocks)[:, None] & (d[None, :] < D)
    out_ptr = OUT + out_rows[:, None] * stride_o + d[None, :]
    if QUANT:
        if ROTATE:
            rot = tl.load(R + d[:, None] * D + d[None, :], mask=(d[:, None] < D) & (d[None, :] < D), other=0.0)
            pooled = tl.dot(pooled, rot.to(tl.float32), input_precision="ieee")
        scale = tl.maximum(tl.max(tl.abs(pooled), axis=1) / 127.0, _SCALE_MIN).to(tl.float16)  # (BM,)
        q = tl.floor(pooled / scale.to(tl.float32)[:, None] + 0.5)
        q = tl.minimum(tl.maximum(q, -127.0), 127.0)
        tl.store(out_ptr, q.to(tl.int8), mask=out_ok)
        tl.store(SCALE + out_rows, scale, mask=out_rows < n_blocks)
    else:
        tl.store(out_ptr, pooled.to(OUT.dtype.element_ty), mask=out_ok)


def default_block_m(ratio: int) -> int:
    """Pooled rows per program: a key tile of 128 rows (≥ 16 pooled rows for tl.dot; fast to compile, small smem)."""
    return max(16, 128 // ratio)


def _launch(
    keys: torch.Tensor,
    weights: torch.Tensor,
    ratio: int,
    quant: bool,
    rotation: torch.Tensor | None,
    block_m: int | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """keys (NB*r, D) contiguous, weights (NB*r,) → pooled (NB, D) [or int8 codes (NB, D), scales (NB,)]."""
    n_blocks, D = keys.shape[0] // ratio, keys.shape[1]
    block_d = max(16, triton.next_power_of_2(D))
    block_m = max(16, min(block_m or default_block_m(ratio), triton.next_power_of_2(max(n_blocks, 1))))
    out = torch.empty(n_blocks, D, device=keys.device, dtype=torch.int8 if quant else keys.dtype)
    scale = torch.empty(n_blocks, device=keys.device, dtype=torch.float16) if quant else None
    grid = (triton.cdiv(n_blocks, block_m),)
    if n_blocks:
        _pool_kernel[grid](
            keys,
            weights,
            out,
            scale if quant else out,
            rotation if rotation is not None else keys,
            n_blocks,
            D,
            keys.stride(0),
            out.stride(0),
            RATIO=ratio,
            BLOCK_M=block_m,
            BLOCK_D=block_d,
            DOT_FP16=keys.dtype == torch.float16,
            QUANT=quant,
            ROTATE=rotation is not None,
        )
    return out, scale


class _WeightedPool(torch.autograd.Function):
    @staticmethod
    def forward(ctx, keys: torch.Tensor, weights: torch.Tensor, ratio: int, block_m: int | None) -> torch.Tensor:
        n = keys.shape[0] // ratio * ratio
        k, w = keys[:n].contiguous(), weights[:n].contiguous()
        pooled, _ = _launch(k, w, ratio, False, None, block_m)
        ctx.save_for_backward(keys, weights, pooled)
        ctx.ratio = ratio
        return pooled

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        keys, weights, pooled = ctx.saved_tensors
        r, (T, D), nb = ctx.ratio, keys.shape, pooled.shape[0]
        k = keys[: nb * r].float().reshape(nb, r, D)  # (NB, r, D)
        w = weights[: nb * r].float().reshape(nb, r)  # (NB, r)
        g = grad.float()  # (NB, D)
        den = w.sum(-1).clamp_min(EPS)  # (NB,)
        grad_k = torch.zeros(T, D, device=keys.device, dtype=torch.float32)
        grad_k[: nb * r] = ((w / den[:, None])[..., None] * g[:, None, :]).reshape(nb * r, D)
        grad_w = torch.zeros(T, device=keys.device, dtype=torch.float32)
        grad_w[: nb * r] = (((k - pooled.float()[:, None, :]) * g[:, None, :]).sum(-1) / den[:, None]).reshape(-1)
        return grad_k.to(keys.dtype), grad_w.to(weights.dtype), None, None


def weighted_pool_triton(
    keys: torch.Tensor, weights: torch.Tensor, ratio: int, block_m: int | None = None
) -> torch.Tensor:
    """keys (T, D), weights (T,) → pooled (T // ratio, D) in the keys' dtype; differentiable."""
    return _WeightedPool.apply(keys, weights, ratio, block_m)


def pool_quantize_triton(
    keys: torch.Tensor,
    weights: torch.Tensor,
    ratio: int,
    rotation: torch.Tensor | None = None,
    block_m: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """keys (T, D), weights (T,) → (int8 codes (T // ratio, D), scales (T // ratio,) float16)."""
    n = keys.shape[0] // ratio * ratio
    rot = rotation.contiguous().float() if rotation is not None else None
    q, scale = _launch(keys[:n].contiguous(), weights[:n].contiguous(), ratio, True, rot, block_m)
    assert scale is not None
    return q, scale
