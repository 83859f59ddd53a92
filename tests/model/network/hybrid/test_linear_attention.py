"""The three GLA forms agree: naive (quadratic) reference, recurrent steps, chunkwise-parallel."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from tolerance import assert_close

from model.network.hybrid import HybridConfig
from model.network.hybrid.linear_attention import GatedLinearAttention, gla_chunkwise, gla_naive, gla_recurrent


def inputs(T: int, dtype=torch.float64, B=2, H=3, Dk=8, Dv=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, H, T, Dk, generator=g, dtype=dtype) for _ in range(2))
    v = torch.randn(B, H, T, Dv, generator=g, dtype=dtype)
    logdecay = (F.logsigmoid(torch.randn(B, H, T, Dk, generator=g, dtype=dtype) * 3) / 4).clamp_min(-1.0)
    state = torch.randn(B, H, Dk, Dv, generator=g, dtype=dtype)
    return q, k, v, logdecay, state


@pytest.mark.parametrize("T, chunk", [(1, 16), (37, 16), (64, 16), (70, 64)])
def test_forms_agree(T, chunk):
    q, k, v, g, s0 = inputs(T)
    for state in (None, s0):
        o_ref, s_ref = gla_naive(q, k, v, g, state)
        o_rec, s_rec = gla_recurrent(q, k, v, g, state)
        o_chk, s_chk = gla_chunkwise(q, k, v, g, state, chunk=chunk)
        for o, s in ((o_rec, s_rec), (o_chk, s_chk)):
            assert_close(o, o_ref, "float64")
            assert_close(s, s_ref, "float64")


def test_float32_strong_decay_stays_finite():
    q, k, v, g, s0 = inputs(128, torch.float32)
    g = torch.full_like(g, -1.0)  # the floor: exp(±64) inside a 64-token chunk
    o_ref, s_ref = gla_naive(q.double(), k.double(), v.double(), g.double(), s0.double())
    o, s = gla_chunkwise(q, k, v, g, s0, chunk=64)
    assert_close(o, o_ref, "float32-vs-float64")
    assert_close(s, s_ref, "float32-vs-float64")


def test_chunkwise_gradients_match_naive():
    leaves = [x.requires_grad_() for x in inputs(37)]
    grads = []
    for form in (gla_naive, lambda *a: gla_chunkwise(*a, chunk=16)):
        o, s = form(*leaves)
        grads.append(torch.autograd.grad((o**2).sum() + (s**3).sum(), leaves))
    for a, b in zip(*grads, strict=True):
        assert_close(a, b, "float64")


def test_module_recurrent_equals_chunkwise_and_streams():
    torch.manual_seed(0)
    cfg = HybridConfig(d_model=32, n_heads=2, head_dim=16, gla_chunk=16)
    gla = GatedLinearAttention(cfg)
    x = torch.randn(2, 45, 32)
    o_chk, s_chk = gla(x)
    o_rec, s_rec = gla(x, recurrent=True)
    assert_close(o_rec, o_chk, "float32-recurrence")
    assert_close(s_rec, s_chk, "float32-recurrence")
    o1, s1 = gla(x[:, :20])  # streaming: the state carries over
    o2, s2 = gla(x[:, 20:], s1)
    assert_close(torch.cat([o1, o2], 1), o_chk, "float32-recurrence")
    assert_close(s2, s_chk, "float32-recurrence")
