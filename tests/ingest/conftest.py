"""Fixtures for the ingestion tests: an invariant check every parsed document must pass."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from ingest.document import ParsedDocument


def _check(doc: ParsedDocument) -> None:
    text = doc.text
    assert doc.title and doc.content_hash and text
    # Tokens tile the text exactly.
    assert len(doc.token_ids) == len(doc.token_starts) == len(doc.token_ends) > 0
    assert doc.token_ids.dtype == doc.token_starts.dtype == doc.token_ends.dtype == np.int32
    assert doc.token_starts[0] == 0 and doc.token_ends[-1] == len(text)
    assert np.array_equal(doc.token_starts[1:], doc.token_ends[:-1])
    for section in doc.sections:
        assert 0 <= section.start <= section.end <= len(text)
        assert section.kind in ("abstract", "references", "body")
    previous_end = 0
    for s in doc.sentences:
        piece = text[s.start:s.end]
        assert piece and piece == piece.strip(), (s, piece)
        assert s.start >= previous_end
        previous_end = s.end
        assert s.section is not None and doc.sections[s.section].start <= s.start < doc.sections[s.section].end + 1
        starts = doc.token_starts[s.token_start:s.token_end]
        assert s.token_start <= s.token_end and all(s.start <= starts) and all(starts < s.end)
        if s.token_start < len(doc.token_starts):
            assert doc.token_starts[s.token_start] >= s.start
        if doc.pages:
            page = doc.pages[s.page - 1]
            assert page.number == s.page and page.start <= s.start and s.end <= page.end
        else:
            assert s.page is None
    for i, page in enumerate(doc.pages):
        assert page.number == i + 1 and 0 <= page.start <= page.end <= len(text)
        if i:
            assert text[doc.pages[i - 1].end:page.start] == "\n\n"


@pytest.fixture
def check_document() -> Callable[[ParsedDocument], None]:
    """Assert the span invariants of a ParsedDocument (sentences, sections, pages, tokens)."""
    return _check
