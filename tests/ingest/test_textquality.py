"""The readability measure that chooses between two extractions of a PDF page and flags unreadable ones."""

from __future__ import annotations

from ingest.pdf import _pdfium_pages as pdfium_pages
from ingest.pdf import read_pdf
from ingest.textquality import dictionary, frequent_words, measure, spaced_as
from tests.samples import text_pdf

CLEAN = (
    "We changed the method of recognizing revenue over time. Total net sales increased in the year, and the company"
    " reported the number of its employees at the end of the period. "
) * 3


def test_the_dictionary_ships_with_the_dependencies() -> None:
    words = dictionary()
    assert len(words) > 20_000 and {"the", "revenue", "employees", "changed"} <= words


def test_clean_text_is_neither_flawed_nor_unreadable() -> None:
    quality = measure(CLEAN)
    assert quality.split == quality.fused == quality.glyphs == 0
    assert not quality.flawed and not quality.unreadable


def test_split_and_fused_words_are_counted() -> None:
    damaged = CLEAN.replace("We changed", "Wechanged").replace("the year", "th e year").replace("of its", "ofits")
    quality = measure(damaged)
    assert (quality.split, quality.fused) == (3, 6) and quality.flawed
    assert quality.score < measure(CLEAN).score


def test_a_documents_own_words_are_not_fused() -> None:
    text = "The Ontrack system logs each delay. " * 3  # "on" + "track", not a dictionary word: a name used thrice
    assert "ontrack" not in dictionary() and measure(text).fused == 3
    assert measure(text, frequent_words([text])).fused == 0


def test_glyph_names_make_a_page_unreadable_but_other_scripts_do_not() -> None:
    assert measure("/CF /D3/D6/CS /D4 /D5 " * 5 + "(cid:12)(cid:7) " * 5).unreadable
    assert measure("\x01\x02\x03 \x04\x05 " * 10).unreadable
    arabic = "هذا نص عربي مكتوب بشكل صحيح في ملف " * 5
    quality = measure(arabic)
    assert not quality.unreadable and not quality.flawed
    assert not measure("Der Bericht nennt die Umsätze und die Zahl der Mitarbeiter des Jahres. " * 5).flawed


def test_possessives_hyphenated_codes_and_compounds_are_not_flawed() -> None:
    """An exhibit index of a 10-K printed to PDF: "Officer's", "Regulation S-K", "herewith", "bylaws" are words
    as written; "bythe" and "Th e" still count."""
    exhibits = (
        "Certification of Chief Executive Officer's and Trustee's reports pursuant to Regulation S-K. "
        "Filed herewith; the Company hereby undertakes to furnish its bylaws. "
    ) * 3
    quality = measure(exhibits)
    assert (quality.split, quality.fused) == (0, 0) and not quality.flawed
    assert (measure("bythe way").fused, measure("Th e total").split) == (1, 1)


def test_a_space_one_extraction_keeps_is_put_back_in_the_other() -> None:
    """Chromium draws a space as a glyph of its own, which pdfium drops ("USFAAdministrator") and pypdf keeps;
    pdfium keeps apart words pypdf runs together. Either page gets the other's spaces between words, never a split
    inside a dictionary word, a subscript, a drop cap or after a hyphen."""
    # "the USFA" is 47.685 points wide; the next word starts half-way through the space after it.
    space_glyph = b"(the USFA) ' 47.685 0 Td ( ) Tj 1.5 0 Td (Administrator in 2017.) Tj ()"
    data = text_pdf(None, [["Chief Bryant was named", space_glyph]])
    pdfium = "Chief Bryant was named the USFAAdministrator in 2017."
    pypdf = "Chief Bryant was named the USFA Administrator in 2017."
    assert " ".join(pdfium_pages(data, None)[0][0].split()) == pdfium  # type: ignore[index]
    assert " ".join(read_pdf(data, "report.pdf").pages[0].split()) == pypdf
    assert spaced_as(pdfium, pypdf) == pypdf
    assert spaced_as("Wechanged the clauses,8similar (e.g.,to", "We changed the clauses,8 similar (e.g., to") == (
        "We changed the clauses,8 similar (e.g., to"
    )
    kept = "The a2 under-water Annotating"
    assert spaced_as(kept, "Th e a 2 under- water A nnotating") == kept
    assert spaced_as("the USFAAdministrator", "the USFA Administrator and the USFAAdministrator") == (
        "the USFAAdministrator"
    )
