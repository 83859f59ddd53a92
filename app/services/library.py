"""The library as users see it: collections, documents, removal, and a citation shown in its context or page."""

from __future__ import annotations

import hashlib
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePath

import pypdfium2 as pdfium
from PIL import Image, ImageDraw

from app.services.errors import UserError, storage_errors
from storage.library import CollectionInfo, Library
from storage.models import Document


def file_name(source: str) -> str:
    """The file name of a document's source: ``/a/b.pdf`` → ``b.pdf``, ``x.zip!dir/m.txt`` → ``m.txt``,
    ``notes.jsonl#7`` → ``notes.jsonl``."""
    return PurePath(source.rsplit("!", 1)[-1].split("#", 1)[0]).name


def cited_as(title: str, source: str) -> str:
    """How a citation names its document: the title with the file name, or the file name alone when the title is
    the file's name without its suffix."""
    name = file_name(source)
    if not name or name in title:
        return title
    return name if PurePath(name).stem == title else f"{title} ({name})"


def by_title(documents: list[Document]) -> list[Document]:
    """Documents in the order a reader looks for them: by title, whatever its case ("education_10" among "ES2009b"
    and "IS1006b", not after them), then by id."""
    return sorted(documents, key=lambda d: (d.title.casefold(), d.id))


@dataclass(frozen=True)
class Evidence:
    """A cited span in its context: ``before + quote + after`` is a stretch of the document's text (of its page for
    a PDF) and ``quote`` is exactly ``text[start:end]``; ``cut_before``/``cut_after`` say whether the page (or the
    document) goes on beyond it."""

    document_id: int
    title: str
    kind: str
    page: int | None
    before: str
    quote: str
    after: str
    cut_before: bool
    cut_after: bool


class LibraryService:
    """Every call acts for a ``user`` ("" without authentication): they read their own collections and the shared
    ones, and change only their own."""

    def __init__(self, library: Library) -> None:
        self.library = library

    def collections(self, user: str = "") -> list[CollectionInfo]:
        return self.library.collections(user)

    def collection_names(self, user: str = "") -> list[str]:
        return self.library.collection_names(user)

    def documents(self, collection: str, user: str = "") -> list[Document]:
        with storage_errors():
            return self.library.documents(collection, user)

    def ingested(self, collection: str, user: str = "") -> list[Document]:
        return [d for d in self.documents(collection, user) if d.status == "ingested"]

    def share(self, collection: str, shared: bool, user: str = "") -> None:
        """Let every user read ``user``'s collection (or stop it)."""
        with storage_errors():
            self.library.set_shared(collection, shared, user)

    def named(self, collection: str, refs: list[str], user: str = "") -> list[Document]:
        """The documents of ``user``'s ``collection`` named by id, source, file name or title, one per name."""
        documents = self.documents(collection, user)
        chosen: list[Document] = []
        for ref in refs:
            matches = [d for d in documents if ref in (str(d.id), d.source, d.title, Path(d.source).name)]
            if not matches:
                raise UserError(f"no document '{ref}' in collection '{collection}'")
            if len(matches) > 1:
                ids = ", ".join(str(d.id) for d in matches)
                raise UserError(f"'{ref}' names several documents in '{collection}' (ids {ids}); use an id")
            chosen.append(matches[0])
        return chosen

    def remove(self, collection: str, refs: list[str], user: str = "") -> list[Document]:
        """Remove documents of ``user``'s ``collection`` named by id, source or title; an uploaded copy goes with its
        document."""
        chosen = self.named(collection, refs, user)
        with storage_errors():
            removed = [self.library.remove_document(d.id, user) for d in chosen]
        uploads = self.library.home / "uploads"
        for document in removed:
            if Path(document.source).is_relative_to(uploads):
                Path(document.source).unlink(missing_ok=True)
        return removed

    def remove_collection(self, collection: str, user: str = "") -> int:
        with storage_errors():
            return self.library.remove_collection(collection, user)

    def document(self, document_id: int, user: str = "") -> Document:
        """A document ``user`` may read (UserError otherwise, as for a removed one)."""
        document = self.library.document(document_id, with_text=True, user=user)
        if document is None or document.status != "ingested":
            raise UserError(f"document {document_id} is no longer in the library")
        return document

    # ----------------------------------------------------------------- citations and pages

    def evidence(
        self, document_id: int, start: int, end: int, page: int | None = None, context: int = 600, user: str = ""
    ) -> Evidence:
        """The span ``[start, end)`` of the document with up to ``context`` characters either side, cut at word
        boundaries and, when ``page`` is given, kept inside that page."""
        document = self.document(document_id, user)
        text = document.text
        if not 0 <= start < end <= len(text):
            raise UserError(f"characters {start}-{end} are outside document {document_id} ({len(text)} characters)")
        low, high = 0, len(text)
        if page is not None:
            low, high = self.library.page_span(document_id, page) or (low, high)
        first, last = max(low, start - context), min(high, end + context)
        if first > low:  # start after the first whitespace, not inside a word
            first = next((m.end() for m in re.finditer(r"\s+", text[first:start])), 0) + first
        if last < high:
            last = next((end + m.start() for m in re.finditer(r"\s+\S*$", text[end:last])), last)
        return Evidence(
            document_id,
            cited_as(document.title, document.source),
            document.kind,
            page,
            text[first:start],
            text[start:end],
            text[end:last],
            first > low,
            last < high,
        )

    def render_page(
        self, document_id: int, page: int, scale: float = 1.5, user: str = "", highlight: str = ""
    ) -> Image.Image:
        """Page ``page`` (1-based) of the document's PDF, from its stored or uploaded file, as an image; the text
        ``highlight`` (a cited sentence) is boxed on it where the page's own text layer holds it."""
        document = self.document(document_id, user)
        if document.kind != "pdf":
            raise UserError(f"'{document.title}' is not a PDF: it has no pages to show")
        if not 1 <= page <= document.pages:
            raise UserError(f"'{document.title}' has pages 1-{document.pages}, not {page}")
        data = source_bytes(document)
        if hashlib.sha256(data).hexdigest() != document.content_hash:
            raise UserError(
                f"the file of '{document.title}' changed since it was ingested ({document.source}); "
                "ingest it again to see its pages"
            )
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as error:
            raise UserError(f"cannot open the PDF of '{document.title}': {error}") from error
        try:
            pdf_page = pdf[page - 1]
            image = pdf_page.render(scale=scale).to_pil().convert("RGB")
            if highlight:
                height = pdf_page.get_height()
                draw = ImageDraw.Draw(image, "RGBA")
                for left, bottom, right, top in quote_rects(pdf_page.get_textpage(), highlight):
                    box = (left * scale, (height - top) * scale, right * scale, (height - bottom) * scale)
                    draw.rectangle(box, fill=(255, 220, 0, 90), outline=(220, 150, 0, 255), width=2)
            return image
        finally:
            pdf.close()


_UNCOMPARED = frozenset("-\u00ad\u2010\u2011\ufffe\x02")  # hyphens, and pdfium's marks of a line-break hyphen


def quote_rects(textpage: pdfium.PdfTextPage, quote: str) -> list[tuple[float, float, float, float]]:
    """The rectangles (left, bottom, right, top, in PDF points) of ``quote`` in a page's text layer
    (:func:`quote_span`)."""
    span = quote_span(textpage.get_text_range(), quote)
    if span is None:
        return []
    first, last = span
    return [textpage.get_rect(k) for k in range(textpage.count_rects(first, last - first + 1))]


def quote_span(text: str, quote: str) -> tuple[int, int] | None:
    """The first and last character (indexes into ``text``, a page's text layer) of ``quote``. The library's text
    and the page's may differ in line breaks, spacing and hyphenation ("pa\ufffepers" on the page, "papers" in the
    library), so both are compared without white space and hyphens; when the whole quote is not found (a sentence
    that runs on to the next page), its longest found beginning of at least 20 characters is."""
    kept = [(i, ch) for i, ch in enumerate(text.lower()) if not ch.isspace() and ch not in _UNCOMPARED]
    page = "".join(ch for _, ch in kept)
    wanted = "".join(ch for ch in quote.lower() if not ch.isspace() and ch not in _UNCOMPARED)
    if not wanted:
        return None
    start = min(20, len(wanted))
    best: tuple[int, int] | None = None  # (length, at) of the longest match among the beginning's occurrences
    at = page.find(wanted[:start])
    while at >= 0:
        length = start
        while length < len(wanted) and at + length < len(page) and page[at + length] == wanted[length]:
            length += 1
        if best is None or length > best[0]:
            best = (length, at)
        at = page.find(wanted[:start], at + 1)
    if best is None:
        return None
    length, at = best
    return kept[at][0], kept[at + length - 1][0]


def source_bytes(document: Document) -> bytes:
    """The bytes of the document's source: a file, or a member of a zip archive ``a.zip!b/c.pdf``."""
    path, _, member = (document.source, "", "") if Path(document.source).exists() else document.source.partition("!")
    try:
        if not member:
            return Path(path).read_bytes()
        with zipfile.ZipFile(path) as archive:
            data = archive.read(member)
    except (OSError, KeyError, zipfile.BadZipFile) as error:
        raise UserError(
            f"the file of '{document.title}' is gone ({document.source}): ingest it again to see its pages"
        ) from error
    return data
