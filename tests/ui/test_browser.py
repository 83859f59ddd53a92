"""The app in a real browser: upload and ingest a PDF, ask a cited question, delete; bad files in a batch.

Screenshots of each tab go to tests/ui/screenshots/ for review.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Page, expect

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
PAPER = SHARED_DATA / "pdf_papers_papermage_fixtures" / "2304.02623v1.pdf"
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
INGEST_TIMEOUT_MS = 90_000


@dataclass
class Paper:
    path: Path
    title: str  # (part of) the title the library should show
    question: str
    answer_word: str  # a word the answer should contain


def _text_pdf(title: str, lines: list[str]) -> bytes:
    """A one-page PDF with ``lines`` of Helvetica text and a metadata title (no parentheses in the text)."""
    content = ("BT /F1 11 Tf 72 720 Td 16 TL " + " ".join(f"({line}) '" for line in lines) + " ET").encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> "
        b"/Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Title (%s) >>" % title.encode(),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def _paper(folder: Path) -> Paper:
    """A real paper from the shared data when present, else a small generated PDF."""
    if PAPER.exists():
        return Paper(PAPER, "Beyond Summarization", "How do the authors characterize expository writing?", "expository")
    path = folder / "tidal-power.pdf"
    path.write_bytes(
        _text_pdf(
            "Notes on Tidal Power",
            [
                "Tidal power converts the energy of the tides into electricity.",
                "A tidal barrage holds water behind a dam at high tide and releases it through turbines.",
                "Tidal stream generators work like underwater wind turbines in fast currents.",
                "The tides are predictable, which makes tidal power a reliable source of energy.",
            ],
        )
    )
    return Paper(path, "Notes on Tidal Power", "How does a tidal barrage produce electricity?", "barrage")


def _screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def _choose_collection(page: Page, name: str) -> None:
    """Type a (new) collection name into the Library tab's collection box."""
    box = page.locator("#collection input")
    box.fill(name)
    box.press("Enter")
    expect(box).to_have_value(name)


def _upload_and_ingest(page: Page, paths: list[Path]) -> str:
    """Upload ``paths``, press Ingest, wait for the end of the log and return the log."""
    page.set_input_files("#upload input[type=file]", [str(p) for p in paths])
    for path in paths:
        expect(page.locator("#upload")).to_contain_text(path.stem)  # shown as "name .ext"
    log = page.locator("#ingest-log textarea")
    previous = log.input_value()
    page.click("#ingest-btn")
    expect(log).not_to_have_value(previous)  # this run's log, not the last one
    expect(log).to_have_value(re.compile(r"^done: ", re.M), timeout=INGEST_TIMEOUT_MS)
    return log.input_value()


def _table_rows(page: Page, elem_id: str) -> list[list[str]]:
    """The visible body rows of a gr.Dataframe (its ARIA grid), as cell texts; waits for the first row to render."""
    rows = page.locator(f"#{elem_id} [role=row][data-index]")
    expect(rows.first).to_be_visible()
    return [[cell.strip() for cell in row.locator("[role=gridcell]").all_inner_texts()] for row in rows.all()]


def test_upload_ask_and_delete_a_paper(page: Page, tmp_path: Path) -> None:
    paper = _paper(tmp_path)
    _choose_collection(page, "papers")
    log = _upload_and_ingest(page, [paper.path])
    assert re.search(rf"{re.escape(paper.path.name)}: ingested \((\d+) pages", log), log
    assert not re.search(r"/[0-9a-f]{32,}/", log), f"the log shows upload temp folders:\n{log}"
    documents = page.locator("#documents")
    expect(documents).to_contain_text(paper.title)
    expect(documents).to_contain_text("ingested")
    _screenshot(page, "library")

    page.get_by_role("tab", name="Ask").click()
    page.locator("#ask-collections input").click()
    page.get_by_role("option", name="papers").click()
    page.locator("#question textarea").fill(paper.question)
    page.click("#ask-btn")
    expect(page.locator("#timing")).to_contain_text("ms")
    answer = page.locator("#answer").inner_text()
    assert paper.answer_word in answer.lower() and "No sentence" not in answer, answer
    rows = _table_rows(page, "citations")
    assert rows, "no citations shown"
    rank, title, page_number, quote, score = rows[0]
    assert rank == "1" and paper.title in title and re.fullmatch(r"\d+", page_number), rows[0]
    assert len(quote.split()) >= 3 and float(score) > 0, rows[0]
    _screenshot(page, "ask")
    page.locator("#question textarea").fill("")
    page.click("#ask-btn")
    expect(page.locator("#answer")).to_contain_text("Error: the question is empty")

    page.get_by_role("tab", name="Library").click()
    document_id = _table_rows(page, "documents")[0][0]
    page.locator("#delete-id textarea").fill(document_id)
    page.click("#delete-btn")
    expect(page.locator("#library-status")).to_contain_text(f"removed {document_id}")
    expect(documents).not_to_contain_text(paper.title)


def test_a_broken_file_fails_alone(page: Page, tmp_path: Path) -> None:
    broken = tmp_path / "bad.pdf"
    broken.write_bytes(os.urandom(5))
    good = tmp_path / "notes.txt"
    good.write_text(
        "Lighthouses guide ships along dangerous coasts.\n\nTheir lamps rotate to make a "
        "recognisable pattern of flashes.\n"
    )
    _choose_collection(page, "mixed")
    log = _upload_and_ingest(page, [broken, good])
    assert re.search(r"bad\.pdf: error - \S", log), log
    assert "notes.txt: ingested" in log, log
    rows = {row[1]: row for row in _table_rows(page, "documents")}
    assert rows["bad.pdf"][2] == "error" and rows["bad.pdf"][6], rows
    assert any(row[2] == "ingested" for title, row in rows.items() if title != "bad.pdf"), rows
    _screenshot(page, "library-errors")

    copy = tmp_path / "notes-copy.txt"
    copy.write_bytes(good.read_bytes())
    log = _upload_and_ingest(page, [copy])
    assert "notes-copy.txt: duplicate - same content as notes.txt" in log, log
