"""Evaluation texts as the product reads them: sentences from the library's one splitter (``ingest.segment``),
passages packed by ``model.inference.passages``.

Evaluation documents are raw texts whose gold spans index them, so they are segmented as they are (ingestion would
first clean them, moving the spans); the sentences and passages are otherwise exactly the product's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest.segment import segment
from model.inference.passages import DocumentText, pack_passages


@dataclass(frozen=True)
class Passage:
    """A cited unit: ``text == document_text[start:end]``."""

    doc: str
    start: int
    end: int
    text: str


def document_text(doc: str, text: str, title: str = "") -> DocumentText:
    """The document ``doc`` with its sentences as the library would split them (and which are its references
    section's), and its ``title``."""
    segmentation = segment(text)
    sentences, sections = segmentation.sentences, segmentation.sections
    references = [
        i for i, s in enumerate(sentences) if s.section is not None and sections[s.section].kind == "references"
    ]
    return DocumentText.of(
        doc, text, [(s.start, s.end) for s in sentences], [s.paragraph for s in sentences], title, references
    )


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text``."""
    return [(int(s), int(e)) for s, e in document_text("", text).sentences]


def split_passages(doc: str, text: str) -> list[Passage]:
    """The passages of ``text`` (document ``doc``)."""
    spans = pack_passages(document_text(doc, text)).spans.tolist()
    return [Passage(doc, start, end, text[start:end]) for start, end in spans]
