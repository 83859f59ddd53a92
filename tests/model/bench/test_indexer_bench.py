"""Benchmark pieces that need no encoder: recall, the block-oracle bound, causal key smoothing, the CLI contract."""

import argparse

import pytest
import torch
from tolerance import assert_close

from model.bench.indexer import Projection, add_arguments, oracle_recall, recall
from model.bench.keys import corpus_name
from model.network.indexpool.indexer import Selection


def _sel(starts, lengths) -> Selection:
    return Selection(torch.tensor([starts]), torch.tensor([lengths]), [])


def test_recall_counts_reference_tokens_covered_by_selected_blocks():
    ref = _sel([10, 11, 12, 13, 40, 41, 90, 91], [1] * 8)  # uncompressed top-8 tokens
    pooled = _sel([8, 40], [4, 4])  # covers 8..11 and 40..43: 10, 11, 40, 41
    assert recall(pooled, ref, 8) == 0.5
    # the best two aligned 4-blocks hold 12, 13 ∪ 10, 11 → 8..11 and 12..15: 4 tokens
    assert oracle_recall(ref, 100, 0, 100, 4, 8) == 0.5


def test_projection_keys_are_causal_and_window_one_is_plain():
    states = torch.randn(50, 384)
    proj = Projection(states.mean(0), heads=2, dim=16, seed=0)
    plain = proj.keys(states, 0, 50)
    assert_close(plain, (states - states.mean(0)) @ proj.P, "float32")
    smooth = proj.keys(states, 0, 50, window=4)
    assert_close(smooth[10], plain[7:11].mean(0), "float32")
    assert_close(smooth[1], plain[:2].mean(0), "float32")
    assert_close(proj.keys(states, 20, 30, window=4), smooth[20:30], "float32")  # same keys from a slice
    q, w = proj.queries(states[:3])
    assert q.shape == (3, 2, 16)
    assert_close(w.sum(-1), torch.ones(3), "float32")


def test_cli_contract(tmp_path):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--tokens", "32000", "--json", "--threads", "0"])
    assert args.tokens == "32000" and args.json and args.heads == 8 and args.dim == 64
    assert args.data is None and corpus_name(None) == "Python stdlib docs"  # by default, text every install has
    with pytest.raises(FileNotFoundError, match="expected Gutenberg texts and QMSum transcripts"):
        corpus_name(tmp_path)
