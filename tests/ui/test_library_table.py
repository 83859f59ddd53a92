"""The Library tab's documents table: the "needs OCR" column names the pages without text, or every page of a file
refused for having none (its error says so)."""

from __future__ import annotations

from app.ui.library import needs_ocr_cell


def test_the_needs_ocr_column_says_which_pages() -> None:
    assert needs_ocr_cell([2, 5], None) == "2, 5"
    assert needs_ocr_cell(None, "no extractable text on its only page (scanned?): needs OCR") == "every page"
    assert needs_ocr_cell(None, "encrypted: needs its password") == ""
    assert needs_ocr_cell([], None) == ""
