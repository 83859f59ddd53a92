"""HybridModel: streaming prefill equals one pass, collection states are keyed by model version, the config
round-trips through JSON, gate statistics are logged, and a tiny end-to-end forward/backward runs."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from tolerance import assert_close

from model.network.hybrid import DenseLayer, HybridConfig, HybridModel, SpanAccumulator, span_means


def prefill(model, ids, chunk):
    hidden = []
    state = model.prefill(ids, chunk_tokens=chunk, on_chunk=lambda start, h: hidden.append(h))
    return state, torch.cat(hidden)


def assert_same_caches(a, b, exact=False):
    kind = "exact" if exact else "float32-stack"
    assert a.length == b.length and a.model_version == b.model_version
    for ga, gb, ca, cb in zip(a.gla, b.gla, a.sparse, b.sparse, strict=True):
        assert_close(ga, gb, kind)
        assert_close(ca.kv.data, cb.kv.data, kind)
        assert_close(ca.block_q, cb.block_q, kind)
        ea, eb = ca.indexer.entries(), cb.indexer.entries()
        for ra, rb in [(ea.rows, eb.rows), (ea.starts, eb.starts), (ea.lengths, eb.lengths)]:
            assert_close(ra, rb, kind)
        assert ca.indexer.pooled_blocks == cb.indexer.pooled_blocks


@pytest.mark.parametrize("n, chunks", [(63, (10, 17)), (1000, (77, 300))])
def test_chunked_prefill_equals_one_shot(tiny, n, chunks):
    model = HybridModel(tiny).eval()
    ids = torch.randint(0, tiny.vocab_size, (n,))
    ref_state, ref = prefill(model, ids, n)
    assert_close(model(ids[None])[0], ref, "float32-stack")  # forward = one-shot prefill
    for chunk in chunks:
        state, hidden = prefill(model, ids, chunk)
        assert_close(hidden, ref, "float32-stack")
        assert_same_caches(state, ref_state)
    pieces = [ids[:5], ids[5:40].numpy(), ids[40:]]  # an iterable of pieces, continuing a state
    state = model.prefill(pieces[:2], chunk_tokens=16)
    model.prefill(pieces[2:], chunk_tokens=33, state=state)
    assert_same_caches(state, ref_state)


def test_read_attends_to_the_collection_without_changing_it(tiny):
    model = HybridModel(tiny).eval()
    state = model.prefill(torch.randint(0, tiny.vocab_size, (400,)), chunk_tokens=128)
    layers = [DenseLayer(cache.kv.data.float()) for cache in state.sparse]
    question = torch.randint(0, tiny.vocab_size, (7,))
    with torch.no_grad():  # as answering reads
        out = model.read(question, layers)
        again = model.read(question, layers)
    assert out.hidden.shape == (7, tiny.d_model) and len(out.layers) == tiny.n_layers
    assert_close(out.hidden, again.hidden, "exact")
    for trace in out.layers:  # every token read; the mass of 7 tokens × 4 heads, less what they gave themselves
        assert trace.tokens.tolist() == list(range(400)) and 0 < float(trace.mass.sum()) < 7 * tiny.n_heads
    assert state.length == 400


def test_a_state_of_another_model_version_is_refused(tiny):
    model = HybridModel(tiny).eval()
    state = model.prefill(torch.randint(0, tiny.vocab_size, (100,)), chunk_tokens=64)
    other = HybridModel(dataclasses.replace(tiny, weights_id="retrained"))
    with pytest.raises(ValueError, match="re-encode"):
        other.prefill(torch.randint(0, tiny.vocab_size, (5,)), state=state)


def test_config_json_round_trip(tmp_path):
    cfg = HybridConfig(d_model=128, n_layers=3, pool_preset="technical", int8_cache=True)
    cfg.to_json(tmp_path / "cfg.json")
    back = HybridConfig.from_json(tmp_path / "cfg.json")
    assert back == cfg and back.model_version == cfg.model_version
    assert HybridConfig(d_model=128).model_version != HybridConfig().model_version
    assert back.indexpool_config().beta == 0.55  # the preset reaches the indexer
    with pytest.raises(ValueError, match="unknown"):
        HybridConfig.from_dict({"d_modle": 3})
    with pytest.raises(ValueError, match="query_block must be a multiple"):
        HybridConfig(query_block=100)


def test_forward_backward_and_gate_statistics(tiny):
    model = HybridModel(dataclasses.replace(tiny, dropout=0.1))
    ids = torch.randint(0, tiny.vocab_size, (3, 70))
    ids[1, 50:] = tiny.pad_id  # right padding
    hidden, states = model(ids, return_states=True)
    assert hidden.shape == (3, 70, tiny.d_model) and len(states) == 3
    for i in range(tiny.n_layers):
        assert 0 < model.stats[f"gate/{i}/mean"] < 1 and model.stats[f"gate/{i}/std"] >= 0
    layers = [DenseLayer(cache.kv.data.detach().float()) for cache in states[0].sparse]
    question = model.read(torch.randint(0, tiny.vocab_size, (6,)), layers)
    loss = hidden.pow(2).mean() + question.hidden.pow(2).mean() + sum(t.mass.sum() for t in question.layers)
    loss.backward()
    block = model.blocks[0]
    for p in (model.embed.weight, block.gate.weight, block.linear.qkv.weight, block.sparse.q_proj.weight):
        assert p.grad is not None and p.grad.abs().sum() > 0
    for p in (block.sparse.question.q_proj.weight, block.sparse.question.log_scale, block.sparse.question.mass_logit):
        assert p.grad is not None and p.grad.abs().sum() > 0  # the read learns


def test_static_embeddings_with_projection(tiny):
    model = HybridModel(tiny)
    version = model.model_version
    model.load_token_embeddings(torch.randn(tiny.vocab_size, 48))
    assert model.cfg.embed_dim == 48 and model.model_version != version
    assert model(torch.randint(0, tiny.vocab_size, (1, 9))).shape == (1, 9, tiny.d_model)
    with pytest.raises(ValueError, match="rows"):
        model.load_token_embeddings(torch.randn(10, 48))


def test_span_accumulator_matches_span_means(tiny):
    model = HybridModel(tiny).eval()
    spans = torch.tensor([[0, 5], [5, 40], [40, 41], [41, 120]])
    acc = SpanAccumulator(spans, tiny.d_model)
    hidden = []
    model.prefill(
        torch.randint(0, tiny.vocab_size, (120,)),
        chunk_tokens=32,
        on_chunk=lambda s, h: (acc.add(s, h), hidden.append(h)),
    )
    assert_close(acc.means(), span_means(torch.cat(hidden), spans), "float32")
