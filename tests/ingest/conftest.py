"""Fixtures for the ingestion tests: an invariant check every parsed document must pass."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ingest.document import ParsedDocument


def _check(doc: ParsedDocument) -> None:
    text = doc.text
    assert doc.title and doc.content_hash and text
    for section in doc.sections:
        assert 0 <= section.start <= section.end <= len(text)
        assert section.kind in ("abstract", "references", "body")
    previous_end = 0
    for s in doc.sentences:
        piece = text[s.start : s.end]
        assert piece and piece == piece.strip(), (s, piece)
        assert s.start >= previous_end
        previous_end = s.end
        assert s.section is not None and doc.sections[s.section].start <= s.start < doc.sections[s.section].end + 1
        if doc.pages:  # a sentence starts on its page, and ends on it unless the page joins the next mid-sentence
            page = doc.pages[s.page - 1]
            assert page.number == s.page and page.start <= s.start < page.end
            last = next(p.number for p in doc.pages[s.page - 1 :] if s.end <= p.end)  # the page it ends on
            crossed = zip(doc.pages[s.page - 1 : last - 1], doc.pages[s.page : last], strict=True)
            assert all(text[a.end : b.start] in (" ", "") for a, b in crossed)
        else:
            assert s.page is None
    for i, page in enumerate(doc.pages):
        assert page.number == i + 1 and 0 <= page.start <= page.end <= len(text)
        if i:  # a paragraph break, or a sentence that goes on: a space, or nothing for a rejoined hyphenated word
            assert text[doc.pages[i - 1].end : page.start] in ("\n\n", " ", "")


@pytest.fixture
def check_document() -> Callable[[ParsedDocument], None]:
    """Assert the span invariants of a ParsedDocument (sentences, sections, pages)."""
    return _check
