"""Static token embeddings: shape, determinism, scale and SIF weights on a small slice of the vocabulary."""

from __future__ import annotations

import numpy as np
import pytest
from tolerance import assert_close

from model.research.training.distill import piece_texts, reduce, sif_weights, teacher_encoder, teacher_piece_vectors
from model.tokenizer import load_tokenizer


@pytest.fixture(scope="module")
def slice_vectors() -> tuple[list[str], np.ndarray]:
    tokenizer = load_tokenizer()
    ids = list(range(0, 300)) + list(range(4000, 4200))  # control and byte pieces, then word pieces
    texts = piece_texts(tokenizer, ids)
    return texts, teacher_piece_vectors(texts, teacher_encoder())


def test_shape_determinism_and_scale(slice_vectors) -> None:
    texts, raw = slice_vectors
    assert raw.shape == (len(texts), 384)
    assert any(t == "" for t in texts) and sum(bool(t) for t in texts) >= 200
    a, b = reduce(raw, 32), reduce(raw.copy(), 32)
    assert a.shape == (len(texts), 32) and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    assert_close(reduce(teacher_piece_vectors(texts, teacher_encoder()), 32), a, "distilled")
    has_text = np.array([bool(t) for t in texts])
    assert_close(np.sqrt((a[has_text] ** 2).mean(1)), 1.0, "distilled")  # unit RMS
    assert not a[~has_text].any()  # textless pieces sit at the origin


def test_sif_weights_fade_frequent_pieces() -> None:
    counts = np.array([10**6, 10**3, 1, 0])
    w = sif_weights(counts)
    assert w[3] == 1.0 and 0 < w[0] < w[1] < w[2] <= 1.0
    assert w[0] < 0.01
