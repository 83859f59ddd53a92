"""The Library tab's documents table: the "needs OCR" column names the pages without text, or every page of a file
refused for having none (its error says so); documents are listed by title."""

from __future__ import annotations

from pathlib import Path

from app.services import Services
from app.ui.library import documents_table, needs_ocr_cell
from app.ui.summarize import summary_documents


def test_the_needs_ocr_column_says_which_pages() -> None:
    assert needs_ocr_cell([2, 5], None) == "2, 5"
    assert needs_ocr_cell(None, "no extractable text on its only page (scanned?): needs OCR") == "every page"
    assert needs_ocr_cell(None, "encrypted: needs its password") == ""
    assert needs_ocr_cell([], None) == ""


def test_documents_are_shown_by_title_whatever_its_case(tmp_path: Path) -> None:
    services = Services(tmp_path / "home")
    for name in ("IS1006b", "education_10", "ES2009b"):  # titled by file name: they open with transcript turns
        (tmp_path / f"{name}.txt").write_text(f"Project Manager: So.\nMarketing: The {name} meeting opens.\n")
        assert [e.status for e in services.ingest.ingest([tmp_path / f"{name}.txt"], "meetings")] == ["ingested"]
    table = documents_table(services, "meetings", None)
    shown = table["title"].tolist()
    assert shown == ["education_10", "ES2009b", "IS1006b"]  # stored by source path: ES…, IS…, education…
    assert table["pages"].tolist() == ["", "", ""]  # a text file has no pages (the walk saw "0")
    choices = summary_documents(services, "meetings", None)["choices"]
    assert [label.split(": ", 1)[1] for label, _ in choices] == shown
