"""Gated linear attention (GLA): the linear-attention stream of the hybrid block.

Per head, with a data-dependent per-key-dim decay α_t = exp(g_t) ∈ (0, 1]^Dk:

    S_t = diag(α_t) S_{t-1} + k_tᵀ v_t          state (Dk, Dv)
    o_t = q_t S_t

Three forms compute the same thing, all on (B, H, T, D) tensors with an optional initial state (B, H, Dk, Dv):
    gla_naive      the quadratic "attention" form, O(T²): readable, for tests;
    gla_recurrent  the step form (gla_step per token), O(T): streaming;
    gla_chunkwise  the chunkwise-parallel form, O(T·C): prefill and training.
Each returns (o (B, H, T, Dv), final state (B, H, Dk, Dv)).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def gla_naive(q, k, v, g, state=None):
    """Quadratic form. o_t = Σ_{s≤t} Σ_d q_td e^{G_td − G_sd} k_sd v_s + (q_t ⊙ e^{G_t}) S_0, G = cumsum(g)."""
    B, H, T, Dk = q.shape
    G = g.cumsum(2)  # (B, H, T, Dk)
    decay = torch.exp(G[:, :, :, None, :] - G[:, :, None, :, :])  # (B, H, T, T, Dk) from s to t
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    A = torch.einsum("bhtd,bhtsd,bhsd->bhts", q, decay, k).masked_fill(~causal, 0)  # (B, H, T, T)
    o = A @ v  # (B, H, T, Dv)
    end = torch.exp(G[:, :, -1:, :] - G)  # (B, H, T, Dk) from s to the end
    final = torch.einsum("bhsd,bhse->bhde", k * end, v)  # (B, H, Dk, Dv)
    if state is not None:
        o = o + (q * G.exp()) @ state
        final = final + G[:, :, -1, :, None].exp() * state
    return o, final


def gla_step(q_t, k_t, v_t, g_t, state):
    """One token: q_t, k_t, g_t (B, H, Dk), v_t (B, H, Dv), state (B, H, Dk, Dv) → (o_t (B, H, Dv), new state)."""
    state = g_t.exp()[..., None] * state + k_t[..., :, None] * v_t[..., None, :]
    return torch.einsum("bhd,bhde->bhe", q_t, state), state


def gla_recurrent(q, k, v, g, state=None):
    """Step form: gla_step over the tokens."""
    B, H, T, Dk = q.shape
    if state is None:
        state = q.new_zeros(B, H, Dk, v.shape[-1])
    outs = []
    for t in range(T):
        o_t, state = gla_step(q[:, :, t], k[:, :, t], v[:, :, t], g[:, :, t], state)
        outs.append(o_t)
    return torch.stack(outs, dim=2), state


def gla_chunkwise(q, k, v, g, state=None, chunk: int = 64):
    """Chunkwise-parallel form: exact attention-like products inside each chunk of C tokens, the state carried
    between chunks. Needs C · max|g| ≲ 80 (float32 exp range); the model clamps g accordingly."""
    B, H, T, Dk = q.shape
    Dv = v.shape[-1]
    if state is None:
        state = q.new_zeros(B, H, Dk, Dv)
    pad = -T % chunk
    if pad:  # zero keys/values and zero log-decay leave the state unchanged; padded outputs are dropped
        q, k, v, g = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v, g))
    N = (T + pad) // chunk
    q, k, v, g = (x.reshape(B, H, N, chunk, -1) for x in (q, k, v, g))  # (B, H, N, C, D)
    b = g.cumsum(3)  # (B, H, N, C, Dk) log-decay from the chunk start, inclusive
    q_in = q * b.exp()  # decayed to the chunk start
    k_in = k * (-b).exp()
    causal = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).tril()
    A = (q_in @ k_in.transpose(-1, -2)).masked_fill(~causal, 0)  # (B, H, N, C, C)
    o = A @ v  # (B, H, N, C, Dv) intra-chunk
    b_end = b[:, :, :, -1:, :]  # (B, H, N, 1, Dk)
    k_end = k * (b_end - b).exp()  # decayed to the chunk end
    kv = k_end.transpose(-1, -2) @ v  # (B, H, N, Dk, Dv) each chunk's contribution to the state
    chunk_decay = b_end.squeeze(3).exp()[..., None]  # (B, H, N, Dk, 1)
    starts = []  # the state entering each chunk
    for n in range(N):
        starts.append(state)
        state = chunk_decay[:, :, n] * state + kv[:, :, n]
    o = o + q_in @ torch.stack(starts, dim=2)  # (B, H, N, C, Dv) inter-chunk
    return o.reshape(B, H, N * chunk, Dv)[:, :, :T], state


class GatedLinearAttention(nn.Module):
    """x (B, T, d) → per-head outputs (B, T, H, Dh) (RMS-normed per head; the block projects and fuses them)."""

    def __init__(self, cfg) -> None:
        super().__init__()
        H, D = cfg.n_heads, cfg.head_dim
        self.n_heads, self.head_dim, self.chunk = H, D, cfg.gla_chunk
        self.normalizer, self.min_log_decay = cfg.gla_gate_normalizer, cfg.gla_min_log_decay
        self.qkv = nn.Linear(cfg.d_model, 3 * H * D, bias=False)
        self.gate = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.gla_gate_rank, bias=False), nn.Linear(cfg.gla_gate_rank, H * D, bias=True)
        )
        self.out_norm = nn.RMSNorm(D, eps=cfg.norm_eps)

    def project(self, x: torch.Tensor):
        """x (B, T, d) → q, k, g (B, H, T, Dk), v (B, H, T, Dv)."""
        B, T, _ = x.shape
        H, D = self.n_heads, self.head_dim
        q, k, v = self.qkv(x).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)  # 3 × (B, H, T, D)
        g = F.logsigmoid(self.gate(x)) / self.normalizer  # (B, T, H·D)
        g = g.clamp_min(self.min_log_decay).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        return q * D**-0.5, k, v, g

    def forward(self, x: torch.Tensor, state: torch.Tensor | None = None, recurrent: bool = False):
        """x (B, T, d), state (B, H, Dk, Dv) | None → (o (B, T, H, Dv), final state)."""
        q, k, v, g = self.project(x)
        if recurrent:
            o, state = gla_recurrent(q, k, v, g, state)
        else:
            o, state = gla_chunkwise(q, k, v, g, state, self.chunk)
        return self.out_norm(o.transpose(1, 2)), state  # (B, T, H, Dv)
