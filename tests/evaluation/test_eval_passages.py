"""Passages and sentences are exact character spans."""

from __future__ import annotations

from model.evaluation.passages import paragraph_spans, sentence_spans, split_passages

TEXT = (
    "Alice: We start now. Is the mike on?\nBob: Yes! It works \"fine.\"\n"
    "Alice: " + " ".join(f"w{i}" for i in range(450)) + ".\n\n\n"
    "A new paragraph. It is short.\n  \nAnd a last one"
)


def test_sentence_spans_are_trimmed_and_exact() -> None:
    spans = sentence_spans(TEXT)
    sentences = [TEXT[s:e] for s, e in spans]
    assert sentences[:4] == ["Alice: We start now.", "Is the mike on?", "Bob: Yes!", 'It works "fine."']
    assert sentences[-3:] == ["A new paragraph.", "It is short.", "And a last one"]
    assert all(s == s.strip() and s for s in sentences)


def test_paragraphs_split_on_blank_lines_only() -> None:
    paragraphs = [TEXT[s:e] for s, e in paragraph_spans(TEXT)]
    assert len(paragraphs) == 3
    assert paragraphs[0].startswith("Alice: We start") and paragraphs[0].endswith("w449.")
    assert paragraphs[2] == "And a last one"


def test_passages_are_exact_bounded_and_cover_every_word() -> None:
    passages = split_passages("m1", TEXT, max_words=200)
    for p in passages:
        assert p.doc == "m1"
        assert TEXT[p.start : p.end] == p.text == p.text.strip()
        assert len(p.text.split()) <= 200
    assert [w for p in passages for w in p.text.split()] == TEXT.split()
    assert all(a.end <= b.start for a, b in zip(passages, passages[1:], strict=False))
    # the 451-word sentence is cut between words; no passage crosses a blank line
    assert any(p.text.startswith("w") for p in passages)
    assert not any("\n\n" in p.text or "\n  \n" in p.text for p in passages)
    assert passages[-1].text == "And a last one"


def test_sentences_are_packed_up_to_the_limit() -> None:
    text = "One two three. Four five. Six seven eight nine. Ten."
    assert [p.text for p in split_passages("d", text, max_words=5)] == [
        "One two three. Four five.", "Six seven eight nine. Ten."
    ]
