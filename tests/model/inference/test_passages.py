"""Passages are runs of the library's sentences (the one splitter), exact character spans, bounded, paragraph-local."""

from __future__ import annotations

from ingest.segment import segment
from model.inference.passages import DocumentText, pack_passages
from model.research.evaluation.passages import document_text, sentence_spans, split_passages

TEXT = (
    "Alice: We start now. Is the mike on?\nBob: Yes! It works fine.\n"
    "Alice: " + " ".join(f"w{i}" for i in range(450)) + ".\n\n\n"
    "A new paragraph. It is short.\n  \nAnd a last one"
)


def test_evaluation_texts_get_the_library_sentences() -> None:
    library = [(s.start, s.end) for s in segment(TEXT).sentences]
    assert sentence_spans(TEXT) == library
    sentences = [TEXT[s:e] for s, e in library]
    assert sentences[:4] == ["Alice: We start now.", "Is the mike on?", "Bob: Yes!", "It works fine."]
    assert sentences[-3:] == ["A new paragraph.", "It is short.", "And a last one"]


def test_passages_are_exact_bounded_runs_of_sentences() -> None:
    document = document_text("m1", TEXT)
    passages = pack_passages(document, max_words=200)
    starts = set(document.sentences[:, 0].tolist())
    ends = set(document.sentences[:, 1].tolist())
    for (start, end), first, last in zip(passages.spans.tolist(), passages.first[:-1], passages.first[1:], strict=True):
        assert start in starts and end in ends  # whole sentences
        assert len(set(document.paragraphs[first:last].tolist())) == 1  # one paragraph
        words = len(TEXT[start:end].split())
        assert words <= 200 or last - first == 1  # a longer sentence stands alone
    assert passages.first[-1] == len(document.sentences)
    for p in split_passages("m1", TEXT):
        assert TEXT[p.start : p.end] == p.text and p.doc == "m1"
    assert split_passages("m1", TEXT)[-1].text == "And a last one"


def test_sentences_are_packed_up_to_the_limit() -> None:
    text = "One two three. Four five. Six seven eight nine. Ten."
    assert [p.text for p in split_passages("d", text)] == [text]
    document = DocumentText.of("d", text, [(0, 14), (15, 25), (26, 47), (48, 52)], [0, 0, 0, 0])
    spans = pack_passages(document, max_words=5).spans.tolist()
    assert [text[s:e] for s, e in spans] == ["One two three. Four five.", "Six seven eight nine. Ten."]
