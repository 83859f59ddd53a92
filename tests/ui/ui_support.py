"""Helpers shared by the app tests: small generated PDFs (no data files needed), browser contexts, test logins."""

from __future__ import annotations

from playwright.sync_api import Browser, BrowserContext

USERS = {"alice": "wonderland-42", "bob": "builder-7"}  # the logins of the app started with --auth


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
