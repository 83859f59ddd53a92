"""IndexPool component: pooling weight definitions, causality, compression switch, adaptive ratio, selection."""

import math

import pytest
import torch
from tolerance import assert_close

from kernels.indexer_topk import indexer_scores_reference
from model.network.indexpool import IndexPoolConfig, IndexPoolIndexer, PoolingWeights
from model.network.indexpool.pooling import (
    adaptive_keep,
    content_weights,
    positional_weights,
    temporal_weights,
    weight_entropy,
    write_queries,
)

D, H = 32, 4


def _stream(T: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(T, D, generator=g), torch.randn(T, H, D, generator=g), torch.rand(T, H, generator=g)


def _cfg(**kw) -> IndexPoolConfig:
    return IndexPoolConfig(
        **({"head_dim": D, "n_heads": H, "min_length": 0, "sink_tokens": 8, "local_tokens": 16} | kw)
    )


def test_weight_definitions_match_the_docstring():
    r, sigma, lam = 4, 1.5, 0.5
    pos = positional_weights(r, sigma)
    assert_close(pos, torch.tensor([math.exp(-((i - 1.5) ** 2) / (2 * sigma**2)) for i in range(r)]), "float32")
    assert_close(temporal_weights(r, lam), torch.tensor([math.exp(-lam * (3 - i)) for i in range(r)]), "float32")
    blocks, u = torch.randn(5, r, D), torch.randn(5, D)
    cos = torch.nn.functional.cosine_similarity(blocks, u[:, None], dim=-1)
    assert_close(content_weights(blocks, u), (1 + cos) / 2, "float32")
    assert (content_weights(blocks, u) >= 0).all()
    cfg = _cfg()
    w = PoolingWeights(cfg)(blocks, u)
    expected = 0.5 * pos + 0.3 * (1 + cos) / 2 + 0.2 * temporal_weights(r, cfg.decay)
    assert_close(w, expected, "float32")


def test_last_query_content_query_is_the_head_weighted_query_of_the_last_token():
    keys, q, hw = _stream(8)
    blocks = keys.reshape(2, 4, D)
    u = write_queries(blocks, q[[3, 7]], hw[[3, 7]], "last_query")
    assert_close(u[1], (hw[7][:, None] * q[7]).sum(0), "float32")
    assert_close(write_queries(blocks, None, None, "block_mean"), blocks.mean(1), "float32")


def test_pooling_parameters_are_learnable():
    keys, q, hw = _stream(64)
    ix = IndexPoolIndexer(_cfg(), "indexpool")
    blocks = keys.reshape(16, 4, D)
    u = write_queries(blocks, q[3::4], hw[3::4], "last_query")
    w = ix.weights(blocks, u)
    from kernels.pooling import weighted_pool

    weighted_pool(keys, w.reshape(-1), 4).square().sum().backward()
    for name in ("alpha", "beta", "gamma", "sigma", "decay"):
        assert getattr(ix.weights, name).grad is not None and getattr(ix.weights, name).grad.abs() > 0, name


@pytest.mark.parametrize("method", ["indexpool", "mean_pool", "static", "quest"])
def test_pooled_keys_do_not_change_when_later_tokens_arrive(method):
    keys, q, hw = _stream(203)
    ix = IndexPoolIndexer(_cfg(), method)
    ix.append(keys[:101], q[:101], hw[:101])
    before = ix.t1.data.clone()
    for lo, hi in [(101, 102), (102, 150), (150, 203)]:  # ragged appends, blocks completed across calls
        ix.append(keys[lo:hi], q[lo:hi], hw[lo:hi])
    assert torch.equal(ix.t1.data[: before.shape[0]], before)
    once = IndexPoolIndexer(_cfg(), method)
    once.append(keys, q, hw)
    assert_close(once.t1.data, ix.t1.data, "float32")


def test_compression_is_off_below_min_length_and_catches_up():
    keys, q, hw = _stream(400)
    ix = IndexPoolIndexer(_cfg(min_length=300), "indexpool")
    ix.append(keys[:299], q[:299], hw[:299])
    assert not ix.compressed and ix.cache_bytes() == 299 * D * 4 and ix.t1.n == 0
    ix.append(keys[299:], q[299:], hw[299:])
    assert ix.compressed and ix.t1.n == 100 and ix.cache_bytes() == 100 * D * 4
    full = IndexPoolIndexer(_cfg(), "indexpool")
    full.append(keys, q, hw)
    assert_close(full.t1.data, ix.t1.data, "float32")


def test_selecting_every_block_gives_the_uncompressed_tokens():
    keys, q, hw = _stream(1001)
    ref = IndexPoolIndexer(_cfg(), "uncompressed")
    ref.append(keys)
    for method in ["indexpool", "mean_pool", "quest"]:
        ix = IndexPoolIndexer(_cfg(), method)
        ix.append(keys, q, hw)
        a, b = ix.select(q[-2:], hw[-2:], 10_000), ref.select(q[-2:], hw[-2:], 10_000)
        assert torch.equal(a.tokens(0), b.tokens(0)) and torch.equal(a.tokens(0), torch.arange(1001))


def test_selection_counts_k_in_tokens_and_always_adds_sink_and_local():
    keys, q, hw = _stream(1000)
    ix = IndexPoolIndexer(_cfg(), "indexpool")
    ix.append(keys, q, hw)
    sel = ix.select(q[-3:], hw[-3:], 64)
    assert sel.starts.shape == (3, 16)  # 64 tokens = 16 entries of 4
    toks = sel.tokens(1)
    assert set(range(8)) <= set(toks.tolist()) and set(range(984, 1000)) <= set(toks.tolist())
    assert sel.scored_tokens(1).numel() == 64


def test_pooled_selection_picks_the_best_pooled_entries():
    keys, q, hw = _stream(1000)
    ix = IndexPoolIndexer(_cfg(), "mean_pool")
    ix.append(keys, q, hw)
    sel = ix.select(q[-1:], hw[-1:], 32)
    pooled = keys.reshape(250, 4, D).mean(1)
    scores = indexer_scores_reference(q[-1:], hw[-1:], pooled[2:246])  # entries inside [sink, L - local)
    best = set((scores.topk(8).indices[0] + 2).mul(4).tolist())
    assert set(sel.starts[0].tolist()) == best


def test_quest_score_upper_bounds_every_token_in_its_block():
    keys, q, hw = _stream(512)
    ix = IndexPoolIndexer(_cfg(), "quest")
    ix.append(keys, q, hw)
    bound = indexer_scores_reference(ix.query_space(q[-2:]), hw[-2:], ix.t1.data)  # (2, 64)
    tokens = indexer_scores_reference(q[-2:], hw[-2:], keys).reshape(2, 64, 8).amax(-1)
    assert (bound >= tokens - 1e-5).all()
    assert ix.cache_bytes() == 512 * D * 4 // 4  # min + max per 8 keys: the bytes of 4:1


def test_adaptive_ratio_keeps_disagreeing_blocks_unpooled():
    g = torch.Generator().manual_seed(0)
    smooth = torch.randn(50, 1, D, generator=g).expand(50, 4, D) + 0.01 * torch.randn(50, 4, D, generator=g)
    rough = torch.randn(50, 4, D, generator=g)
    keys = torch.stack([smooth, rough], 1).reshape(400, D)  # alternating smooth / rough blocks
    keep = adaptive_keep(keys.reshape(100, 4, D), 0.3)
    assert keep.tolist() == [False, True] * 50
    ix = IndexPoolIndexer(_cfg(adaptive=True, adaptive_threshold=0.3), "indexpool")
    _, q, hw = _stream(400)
    ix.append(keys, q, hw)
    assert ix.t1.n == 50 + 200
    assert_close(ix.monitor().average_ratio, 400 / 250, "float32")
    sel = ix.select(q[-1:], hw[-1:], 40)
    assert 40 <= sel.scored_tokens(0).numel() < 44


def test_int8_cache_bytes_and_selection():
    keys, q, hw = _stream(4000)
    fp = IndexPoolIndexer(_cfg(head_dim=D), "indexpool")
    i8 = IndexPoolIndexer(_cfg(int8=True), "indexpool")
    fp.append(keys, q, hw)
    i8.append(keys, q, hw)
    assert i8.cache_bytes() == 1000 * (D + 2)  # int8 codes + a float16 scale per entry
    a = set(fp.select(q[-1:], hw[-1:], 256).scored_tokens(0).tolist())
    b = set(i8.select(q[-1:], hw[-1:], 256).scored_tokens(0).tolist())
    assert len(a & b) / 256 > 0.9


def test_monitor_reports_entropy_ratio_and_timings():
    keys, q, hw = _stream(800)
    ix = IndexPoolIndexer(_cfg(), "mean_pool")
    ix.append(keys, q, hw)
    ix.select(q[-1:], hw[-1:], 64)
    rec = ix.monitor().as_dict()
    assert rec["average_ratio"] == 4.0
    assert_close(rec["weight_entropy"], 1.0, "float32")
    assert rec["tier1_bytes"] == 200 * D * 4 and rec["scoring_ms"] > 0 and rec["pooling_ms"] > 0
    peaked = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    assert_close(weight_entropy(peaked, 4), 0.0, "float32")
