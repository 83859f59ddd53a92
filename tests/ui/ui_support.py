"""Helpers shared by the app tests: small generated PDFs (no data files needed), browser contexts, test logins, and
the Library tab's steps (a collection, an upload, a table's rows)."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Browser, BrowserContext, Page, expect

USERS = {"alice": "wonderland-42", "bob": "builder-7"}  # the logins of the app started with --auth
INGEST_TIMEOUT_MS = 90_000


def new_context(browser: Browser) -> BrowserContext:
    """A fresh browser context (its own cookies, so its own login)."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.set_default_timeout(20_000)
    return context


def text_pdf(title: str, pages: list[list[str]]) -> bytes:
    """A PDF with one page per entry of ``pages``, each holding its lines in Helvetica, and a metadata title
    (no parentheses or backslashes in the text)."""
    count = len(pages)
    font = 3 + 2 * count  # object numbers: 1 catalog, 2 pages, then (page, contents) per page, the font, the info
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(count)), count),
    ]
    for index, lines in enumerate(pages):
        content = ("BT /F1 11 Tf 72 720 Td 16 TL " + " ".join(f"({line}) '" for line in lines) + " ET").encode()
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
            b"/Contents %d 0 R >>" % (font, 4 + 2 * index)
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objects.append(b"<< /Title (%s) >>" % title.encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\n" % (len(objects) + 1, len(objects))
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def choose_collection(page: Page, name: str) -> None:
    """Type a (new) collection name into the Library tab's collection box."""
    box = page.locator("#collection input")
    box.fill(name)
    box.press("Enter")
    expect(box).to_have_value(name)


def upload_and_ingest(page: Page, paths: list[Path]) -> str:
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


def table_rows(page: Page, elem_id: str) -> list[list[str]]:
    """The visible body rows of a gr.Dataframe (its ARIA grid), as cell texts; waits for the first row to render."""
    rows = page.locator(f"#{elem_id} [role=row][data-index]")
    expect(rows.first).to_be_visible()
    return [[cell.strip() for cell in row.locator("[role=gridcell]").all_inner_texts()] for row in rows.all()]
