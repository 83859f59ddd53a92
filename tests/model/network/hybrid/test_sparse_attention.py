"""The sparse stream: with every block selected it is full causal softmax attention; selection respects bounds."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F
from tolerance import assert_close

from model.network.hybrid.sparse_attention import SparseAttention, SparseCache, window_mean


def full_causal(layer: SparseAttention, x: torch.Tensor) -> torch.Tensor:
    """Reference: plain causal softmax attention with the layer's projections.  x (1, T, d) → (T, H, D)"""
    q, kv = layer.project(x)
    k, v = kv[0, :, 0], kv[0, :, 1]  # (T, Hkv, D)
    rep = q.shape[2] // k.shape[1]
    k, v = (t.repeat_interleave(rep, dim=1).transpose(0, 1) for t in (k, v))  # (H, T, D)
    return F.scaled_dot_product_attention(q[0].transpose(0, 1), k, v, is_causal=True).transpose(0, 1)


@pytest.mark.parametrize("method", ["indexpool", "uncompressed"])
@pytest.mark.parametrize("chunks", [[150], [7, 60, 83]])
@pytest.mark.parametrize("block, window, sink", [(16, 32, 16), (32, 8, 8)])
def test_all_blocks_is_full_causal_attention(tiny, method, chunks, block, window, sink):
    cfg = dataclasses.replace(
        tiny, prefill_topk_tokens=-1, pool_method=method, query_block=block, local_window=window, sink_tokens=sink
    )
    layer = SparseAttention(cfg)
    x = torch.randn(1, sum(chunks), cfg.d_model)
    cache = SparseCache(layer)
    outs, p = [], 0
    for n in chunks:  # streamed: each chunk continues the cache
        outs.append(layer(x[:, p : p + n], [cache])[0])
        p += n
    assert_close(torch.cat(outs), full_causal(layer, x), "float32")


def test_top_k_selection_respects_sink_and_block_bounds(tiny):
    layer = SparseAttention(tiny)
    cache = SparseCache(layer)
    layer(torch.randn(1, 300, tiny.d_model), [cache])
    bounds = torch.tensor([0, 40, 100, 200, 260])
    G, H = len(bounds), tiny.indexer_heads
    q, w = torch.randn(G, H, tiny.indexer_dim), torch.rand(G, H)
    starts, lens = cache.indexer.select_blocks(q, w, bounds, 16, 32)
    assert starts.shape == (G, 8)  # 32 tokens / r = 4
    used = lens > 0
    assert (starts[used] >= 16).all() and ((starts + lens)[used] <= bounds[:, None].expand_as(starts)[used]).all()
    assert used.sum(1).tolist() == [0, 6, 8, 8, 8]  # (40 - 16) / 4 = 6 candidates for the second block


def test_block_selection_is_the_kernel_op_with_per_block_limits(tiny):
    """The sparse stream's selection is ``kernels.indexer_topk`` over the tier-1 entries, each block limited to the
    entries before its bound: the same entries the reference op picks block by block."""
    from kernels.indexer_topk import indexer_topk_reference

    layer = SparseAttention(tiny)
    cache = SparseCache(layer)
    layer(torch.randn(1, 300, tiny.d_model), [cache])
    bounds = torch.tensor([60, 100, 200, 260])
    G, H = len(bounds), tiny.indexer_heads
    q, w = torch.randn(G, H, tiny.indexer_dim), torch.rand(G, H)
    starts, lens = cache.indexer.select_blocks(q, w, bounds, 16, 32)
    e = cache.indexer.entries()
    e0 = int(torch.searchsorted(e.starts, 16))
    for g in range(G):
        n = int(torch.searchsorted(e.starts + e.lengths, bounds[g], right=True)) - e0
        _, best = indexer_topk_reference(q[g : g + 1], w[g : g + 1], e.rows[e0 : e0 + n], min(8, n))
        assert starts[g][lens[g] > 0].tolist() == e.starts[e0 + best[0]].tolist()


@pytest.mark.parametrize("window", [1, 4, 64])
@pytest.mark.parametrize("chunks", [[63], [5, 1, 57], [40, 23]], ids=["one-pass", "ragged", "two"])
def test_window_mean_keys_stream_in_any_chunks(window, chunks):
    """Each stored indexer key is the mean of its own and the window − 1 token keys before it (fewer at the start);
    carrying the last window − 1 token keys makes any chunking compute the same keys."""
    keys = torch.randn(sum(chunks), 16)
    expected = torch.stack([keys[max(0, s - window + 1) : s + 1].mean(0) for s in range(len(keys))])
    out, tail, at = [], keys[:0], 0
    for n in chunks:
        out.append(window_mean(keys[at : at + n], tail, window))
        tail = torch.cat([tail, keys[at : at + n]])[-(window - 1) :] if window > 1 else tail
        at += n
    assert_close(torch.cat(out), expected, "float32")


def test_window_mean_refuses_a_longer_history():
    with pytest.raises(ValueError, match="at most 3 previous keys"):
        window_mean(torch.zeros(5, 8), torch.zeros(4, 8), 4)
