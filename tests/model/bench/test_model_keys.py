"""``indexpool bench --keys model``: the shipped model's indexer keys, queries and head weights as the key source."""

from __future__ import annotations

import argparse
import json

import pytest
import torch
from tolerance import assert_close

from model.bench.indexer import NEEDLES, add_arguments, causal_window, insert_needle_ids, run
from model.bench.keys import ModelIndexerKeys
from model.network.indexpool import IndexPoolIndexer
from model.network.paths import indexpool_checkpoint

TEXT = (
    "The committee met on Tuesday to discuss the budget for the new library. Several members argued that the "
    "reading room needed better lighting, while others wanted more money spent on the children's section. "
)


@pytest.fixture(scope="module")
def tap() -> ModelIndexerKeys:
    if not indexpool_checkpoint().is_file():
        pytest.skip(f"model checkpoint {indexpool_checkpoint()} is absent")
    return ModelIndexerKeys()


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_model_keys_are_the_indexers_own(tap):
    ids = torch.tensor(tap.encode(TEXT * 20))
    n, r, H, D = 512, tap.ratio, tap.heads, tap.dim
    assert ids.numel() > 600 and tap.layer == len(tap.model.blocks) - 1
    qpos = torch.tensor([520, 560, 600])
    s = tap.stream(ids, n, qpos, [tap.encode("What did the committee discuss?")])
    assert s.keys.shape == (n, D) and s.block_q.shape == (n // r, H, D) and s.block_w.shape == (n // r, H)
    assert s.q.shape == (3, H, D) and s.w.shape == (3, H) and s.q.abs().sum(-1).gt(0).all()
    ((qq, qw),) = s.questions
    assert qq.shape[1:] == (H, D) and qw.shape == (qq.shape[0], H)

    # the keys are exactly those the model's own indexer stored during a plain prefill
    state = tap.model.prefill(ids[:n], 4096)
    own = state.sparse[tap.layer].indexer
    assert torch.equal(own.keys.data, s.keys)
    # the decode queries are the layer's indexer queries of those tokens (a longer prefill, read back by the hook)
    longer = tap.stream(ids, 601, torch.tensor([520, 560, 600]))
    assert_close(longer.q, s.q, "float32")
    assert_close(longer.w, s.w, "float32")

    # pooling those keys with the layer's trained weights reproduces the model's pooled indexer cache
    ix = IndexPoolIndexer(tap.indexpool_config(), "indexpool", weights=tap.pool_weights)
    for lo in range(0, n, 128):
        q, w = s.queries(lo, lo + 128, r)
        assert q.shape == (128, H, D) and torch.equal(q[r - 1], s.block_q[0 + lo // r])
        ix.append(s.keys[lo : lo + 128], q, w)
    assert_close(ix.t1.data, own.t1.data[: n // r], "float32")
    assert s.model_t1 is not None
    assert_close(ix.t1.data, s.model_t1, "float32")

    with pytest.raises(ValueError, match="sparse-stream layers"):
        ModelIndexerKeys(tap.checkpoint, layer=len(tap.model.blocks))


def test_needles_and_key_window():
    ids = torch.arange(20_000)
    out, positions = insert_needle_ids(ids, 16_000, lambda text: [7] * len(text.split()))
    assert len(positions) == len(NEEDLES) and torch.equal(ids, torch.arange(20_000))  # a copy
    for pos, (fact, _) in zip(positions, NEEDLES, strict=True):
        assert len(pos) == len(fact.split()) and (out[pos] == 7).all() and int(pos[-1]) < 16_000
    k = torch.randn(50, 4)
    assert causal_window(k, 1) is k
    smooth = causal_window(k, 4)
    assert_close(smooth[10], k[7:11].mean(0), "float32")
    assert_close(smooth[1], k[:2].mean(0), "float32")


def test_missing_checkpoint(tmp_path, capsys):
    missing = tmp_path / "none.pt"
    assert run(_args("--tokens", "4096", "--keys", "model", "--checkpoint", str(missing))) == 2
    assert "model keys" in capsys.readouterr().err


def test_the_bench_runs_on_the_stdlib_docs_by_default(tap, capsys):
    """By default (a fresh install has no ../shared) the benchmark and the dashboard's button read the embedded
    sample's text."""
    args = _args("--tokens", "4096", "--queries", "4", "--steps", "2", "--json", "--keys", "model")
    assert run(args) == 0
    (res,) = json.loads(capsys.readouterr().out)
    assert res["setting"]["corpus"] == "Python stdlib docs" and res["tokens"] == 4096
    assert res["methods"]["uncompressed"]["recall@2048"] == 1.0


def test_bench_end_to_end_with_model_keys(tap, shared_data, capsys):
    args = _args(
        "--tokens", "4096", "--queries", "4", "--steps", "2", "--threads", "1", "--json", "--keys", "model",
        "--data", str(shared_data),
    )  # fmt: skip
    assert run(args) == 0
    (res,) = json.loads(capsys.readouterr().out)
    setting = res["setting"]
    assert setting["keys"] == "model" and setting["layer"] == tap.layer
    assert setting["checkpoint_sha256"] == tap.checkpoint_sha256 and len(setting["checkpoint_sha256"]) == 12
    assert (setting["heads"], setting["d_I"], setting["ratio"]) == (tap.heads, tap.dim, tap.ratio)
    assert res["tokens"] == 4096 and res["model_cache_max_diff"] < 1e-5
    methods = res["methods"]
    assert methods["uncompressed"]["recall@2048"] == 1.0
    for m in methods.values():
        assert set(m) == {"latency_ms", "cache_bytes", "recall@512", "recall@2048", "needle_f1"}
        assert 0 <= m["recall@2048"] <= 1 and 0 <= m["needle_f1"] <= 1
    assert methods["indexpool"]["cache_bytes"] == methods["uncompressed"]["cache_bytes"] // 4
    assert -1 <= res["key_stats"]["neighbour_cosine"] <= 1 and 0 <= res["key_stats"]["query_overlap@2048"] <= 1
