"""The Library tab's documents table: the "needs OCR" column names the pages without text, or every page of a file
refused for having none (its error says so); documents are listed by title, with their file and warnings; the
settings status says when the weights are not the preset's."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from app.services import Services
from app.ui.library import documents_table, needs_ocr_cell
from app.ui.settings import save_settings
from app.ui.summarize import summary_documents
from ingest.pipeline import parse_text


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


def test_the_table_names_each_file_and_keeps_its_warning(tmp_path: Path) -> None:
    """A new user's walk: a damaged PDF titled "Potato" by its first line showed neither its file name nor the
    warning its ingest gave, once the page was reloaded."""
    text = "Potato\n\nPotatoes grow underground."
    parsed = parse_text("uploads/bad-xref.pdf", "", "txt", text, hashlib.sha256(text.encode()).hexdigest())
    warning = "damaged PDF: Could not read Null object; its text was read with pdfium instead"
    services = Services(tmp_path / "home")
    events = list(services.ingest.ingest_texts([replace(parsed, warnings=[warning])], "broken"))
    assert [e.status for e in events] == ["ingested"]
    row = documents_table(services, "broken", None).iloc[0]
    assert (row["title"], row["file"], row["error or warning"]) == ("Potato", "bad-xref.pdf", warning)


def test_weights_of_ones_own_are_not_called_the_preset_s(tmp_path: Path) -> None:
    """A new user's walk: α 0.2, β 0.4, γ 0.4 were saved as "preset default (α 0.2, …)", the default being 0.5 /
    0.3 / 0.2."""
    services = Services(tmp_path / "home")
    common = {"ratio": 4, "int8": True, "tier2_mb": 64, "top_k": 5, "reader": "bm25", "summarizer": "lead"}
    own = save_settings(services, "default", 0.2, 0.4, 0.4, **common, generator="off", request=None)[-1]
    assert "preset default with its own weights (α 0.2, β 0.4, γ 0.4)" in own, own
    alpha, beta, gamma = services.settings.preset_weights("news")
    kept = save_settings(services, "news", alpha, beta, gamma, **common, generator="off", request=None)[-1]
    assert f"preset news (α {alpha}, β {beta}, γ {gamma})" in kept, kept
