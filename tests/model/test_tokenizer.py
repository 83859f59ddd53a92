"""The committed tokenizer: exact round trips, spans that tile the text, determinism, asset provenance."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.research.training.train_tokenizer import TRAINER_OPTIONS, train
from model.tokenizer import DEFAULT_MODEL, Tokenizer, load_tokenizer

AWKWARD = [
    "",
    " ",
    "   ",
    "\n",
    "\t\t",
    "a",
    "Hello, world.",
    "  leading and trailing  ",
    "tabs\tand\nnewlines\r\nand   runs     of spaces",
    "    def f(self, x):\n        return x ** 2  # indented code\n",
    "emoji 😀👍🏽 and flags 🇫🇷",
    "中文文本，日本語のテキスト、한국어",
    "combining e\u0301 a\u0308 and precomposed é ä",
    "control \x00\x01\x07\x1b[0m chars \x7f",
    "zero width \u200b\u200d joiners \ufeff BOM",
    "the space marker \u2581 itself, twice \u2581\u2581",
    "lone surrogates \ud800 and \udfff",
    "1234567890 3.14159 1e-10",
    "x" * 5000,
    "\u00a0non-breaking\u2003em space\u3000ideographic",
]


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return load_tokenizer()


def assert_tiles(tok: Tokenizer, text: str) -> None:
    ids, starts, ends = tok.encode_offsets(text)
    assert ids.dtype == starts.dtype == ends.dtype == np.int32
    assert len(ids) == len(starts) == len(ends)
    assert tok.decode(ids) == text
    if not text:
        assert len(ids) == 0
        return
    assert starts[0] == 0 and ends[-1] == len(text)
    assert np.array_equal(ends[:-1], starts[1:])
    assert np.all(ends >= starts)
    # Each token's span is its own text: decoding token by token (whole characters) rebuilds the pieces.
    pieces = [text[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
    assert "".join(pieces) == text
    np.testing.assert_array_equal(tok.encode(text), ids)


@pytest.mark.parametrize("text", AWKWARD)
def test_round_trip_and_spans(tok: Tokenizer, text: str) -> None:
    assert_tiles(tok, text)


def test_span_is_token_text(tok: Tokenizer) -> None:
    text = "The  quick brown fox\tjumps over 42 lazy dogs.\n"
    ids, starts, ends = tok.encode_offsets(text)
    for i, s, e in zip(ids.tolist(), starts.tolist(), ends.tolist(), strict=True):
        assert tok.decode([i]) == text[s:e]


def test_partial_character_byte_pieces(tok: Tokenizer) -> None:
    ids, starts, ends = tok.encode_offsets("a\U0001f600b")  # the emoji is four byte pieces
    assert len(ids) == 6
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == [
        (0, 1),
        (1, 2),
        (2, 2),
        (2, 2),
        (2, 2),
        (2, 3),
    ]


# Any code point (surrogates included), mixed with the characters most likely to break spans.
_CHARS = st.one_of(
    st.characters(exclude_categories=()),
    st.sampled_from(" \t\n\r\x00\u2581\u0301\u200d\ud800\udc00😀é漢"),
    st.sampled_from("abcdefghijklmnopqrstuvwxyz .,"),
)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_CHARS, max_size=200))
def test_any_text_round_trips(text: str) -> None:
    assert_tiles(load_tokenizer(), text)


def test_batch_matches_single(tok: Tokenizer) -> None:
    batch = tok.encode_offsets_batch(AWKWARD)
    for text, (ids, starts, ends) in zip(AWKWARD, batch, strict=True):
        single = tok.encode_offsets(text)
        for a, b in zip((ids, starts, ends), single, strict=True):
            np.testing.assert_array_equal(a, b)


def test_deterministic_and_cached(tok: Tokenizer) -> None:
    text = " ".join(AWKWARD)
    np.testing.assert_array_equal(tok.encode(text), tok.encode(text))
    assert load_tokenizer() is tok
    assert load_tokenizer(DEFAULT_MODEL) is tok
    assert Tokenizer(DEFAULT_MODEL.read_bytes()).encode(text).tolist() == tok.encode(text).tolist()


def test_english_is_compact(tok: Tokenizer) -> None:
    text = "The results show that the proposed method improves accuracy on all benchmarks."
    assert len(tok.encode(text)) < len(text.split()) * 2


def test_asset_matches_its_recipe(tok: Tokenizer) -> None:
    recipe = json.loads(DEFAULT_MODEL.with_suffix(".json").read_text(encoding="utf-8"))
    data = DEFAULT_MODEL.read_bytes()
    assert hashlib.sha256(data).hexdigest() == recipe["sha256"]
    assert tok.model_version == recipe["sha256"][:12]
    assert tok.vocab_size == recipe["trainer_options"]["vocab_size"] == TRAINER_OPTIONS["vocab_size"]
    assert len(data) < 1_000_000


def test_training_is_deterministic() -> None:
    lines = [f"line {i}: the quick brown fox jumps over the lazy dog {i * 7}" for i in range(300)]
    first = train(lines, vocab_size=400, hard_vocab_limit=False)
    assert train(lines, vocab_size=400, hard_vocab_limit=False) == first
    tiny = Tokenizer(first)
    assert_tiles(tiny, "the  lazy\tfox 😀 \u2581")


def test_rejects_model_without_exact_round_trips() -> None:
    lines = [f"the quick brown fox {i}" for i in range(200)]
    with pytest.raises(ValueError):
        Tokenizer(train(lines, vocab_size=400, hard_vocab_limit=False, add_dummy_prefix=True))
