"""PDF text extraction, page by page, turning every failure into a clear IngestError.

Each page is extracted with pypdf and with pdfium (``pypdfium2``) and the more readable text is kept
(``ingest.textquality``: dictionary words, fewer split or fused words, no glyph names), with the spaces either
puts between words the other runs together; pypdf alone on files pdfium cannot open, pdfium alone on damaged files
pypdf cannot read. A page whose text layer is glyph names rather than words is left out (empty) and listed in
``PdfText.unreadable``.
"""

from __future__ import annotations

import html
import io
import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PdfStreamError

from ingest.document import IngestError
from ingest.textquality import frequent_words, measure, spaced_as

# Titles that name no document: authoring-tool leftovers, file names, and the headings every filing or report
# starts with ("Table of Contents", "FORM 10-K", "UNITED STATES SECURITIES AND EXCHANGE COMMISSION").
_GENERIC_TITLE = re.compile(
    r"(?i)^(?:untitled\b|microsoft (?:word|powerpoint)|document\d*$|title$|slide \d|(?:table of )?contents$"
    r"|cover(?: page)?$|form (?:10-?[kq]|20-f|8-k)\b|annual report\b|quarterly report\b|united states$"
    r"|(?:united states )?securities and exchange commission|washington,? d\.? ?c\.?|\(mark one\))"
    r"|\.(?:docx?|pdf|tex|dvi|indd|qxd|rtf|odt|pptx?)$"
    r"|^(?:[\w-]+ )*template(?: - \w+)?$"  # "Proceedings Template - WORD"
)
# What a scanned page's picture can be drawn as; a page of only text and paths holds no scan.
_SCAN_OBJECTS = (pdfium_c.FPDF_PAGEOBJ_IMAGE, pdfium_c.FPDF_PAGEOBJ_FORM)
# A filing's cover page names the company on the line above this one.
_REGISTRANT = re.compile(r"(?im)^\s*\(exact name of (?:the )?registrant as specified in its charter\)")


def generic_title(line: str) -> bool:
    """Whether ``line`` is a title that names no document (too few letters, or a heading any file could have)."""
    return sum(ch.isalpha() for ch in line) < 3 or bool(_GENERIC_TITLE.search(line.strip()))


def registrant_title(first_page: str) -> str | None:
    """ "Apple Inc. Form 10-K" from a filing's cover page: the line above "(Exact name of registrant …)"."""
    match = _REGISTRANT.search(first_page)
    if not match:
        return None
    lines = [line.strip() for line in first_page[: match.start()].splitlines() if line.strip()]
    if not lines or generic_title(lines[-1]):
        return None
    form = re.search(r"(?i)\bform\s+(10-?[kq]|20-f|8-k)\b", first_page)
    return " ".join(lines[-1].split()) + (f" Form {form.group(1).upper()}" if form else "")


@dataclass
class PdfText:
    title: str | None  # from the metadata, when it looks like a real title
    pages: list[str]  # raw extracted text per page ("" when a page has none or it is unreadable)
    warnings: list[str] = field(default_factory=list)
    unreadable: list[int] = field(default_factory=list)  # page numbers whose text layer is glyph names
    flawed: list[int] = field(default_factory=list)  # page numbers whose words are split or fused
    blank: list[int] = field(default_factory=list)  # page numbers with no text and nothing a scan could be (no image)


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _quiet_pypdf() -> Iterator[list[str]]:
    """Silence pypdf's logging and warnings, collecting their messages instead."""
    logger = logging.getLogger("pypdf")
    collector = _Collector()
    saved = logger.level, logger.propagate
    logger.addHandler(collector)
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield collector.messages
            collector.messages.extend(str(w.message) for w in caught)
    finally:
        logger.removeHandler(collector)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def read_pdf(data: bytes, source: str, password: str | None = None) -> PdfText:
    """Extract the text of every page. Raises IngestError for unreadable, encrypted or damaged files."""
    try:
        result = _read_pypdf(data, source, password)
    except IngestError as error:
        alone = _pdfium_pages(data, password) if error.reason.startswith("damaged PDF") else None
        if not alone or not any(page.strip() for page in alone[0]):
            raise
        result = PdfText(None, alone[0], [f"{error.reason}; its text was read with pdfium instead"], blank=alone[1])
    else:
        other = _pdfium_pages(data, password)
        if other is not None and len(other[0]) == len(result.pages):
            result.pages = _more_readable(result.pages, other[0])
            result.blank = other[1]
    own = frequent_words(result.pages)
    for number, text in enumerate(result.pages, start=1):
        quality = measure(text, own)
        if quality.unreadable:
            result.unreadable.append(number)
            result.pages[number - 1] = ""
        elif quality.flawed:
            result.flawed.append(number)
    if result.unreadable and len(result.unreadable) < len(result.pages):
        result.warnings.append(
            f"{page_ranges(result.unreadable)}: the text layer is glyph names, not words: not indexed"
        )
    if result.flawed:
        result.warnings.append(f"{page_ranges(result.flawed)}: words split or run together in the PDF's text layer")
    return result


NOT_A_PDF = "not a PDF: it does not start with a PDF header (another kind of file named .pdf?)"


def _read_pypdf(data: bytes, source: str, password: str | None) -> PdfText:
    header = b"%PDF" in data[:1024]
    with _quiet_pypdf() as problems:
        try:
            result = _read(data, source, password)
        except (IngestError, MemoryError):
            raise
        except Exception as error:  # pypdf raises many kinds of errors on damaged files
            if not header:  # the parser's complaint says nothing to someone who renamed another file
                raise IngestError(source, NOT_A_PDF) from error
            if isinstance(error, RecursionError):
                raise IngestError(source, "damaged PDF: object structure nested too deeply") from error
            detail = _describe(error, with_type=not isinstance(error, PdfReadError | PdfStreamError))
            raise IngestError(source, f"damaged PDF: {detail}") from error
    if problems:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        result.warnings.append(f"the PDF is damaged, text may be incomplete (pypdf: {_shorten(problems[0], 80)}{more})")
    return result


def _pdfium_pages(data: bytes, password: str | None) -> tuple[list[str], list[int]] | None:
    """Every page's text as pdfium extracts it, line breaks and hyphens as pypdf writes them, and the numbers of the
    pages holding no image or form (blank, not a scan: nothing, or only drawn rules, as a printed web page's page
    break leaves); None when pdfium cannot open the file."""
    try:
        document = pdfium.PdfDocument(data, password=password)
    except pdfium.PdfiumError:
        return None
    try:
        pages, blank = [], []
        for index in range(len(document)):
            try:
                page = document[index]
                text = page.get_textpage().get_text_bounded()
                if not any(o.type in _SCAN_OBJECTS for o in page.get_objects(max_depth=1)):
                    blank.append(index + 1)
            except pdfium.PdfiumError:
                text = ""
            pages.append(text.replace("\r\n", "\n").replace("\x02", "-\n"))  # \x02: a hyphen at a line end
        return pages, blank
    finally:
        document.close()


def _more_readable(first: list[str], second: list[str]) -> list[str]:
    """Per page, the more readable of two extractions of the same pages (ties: the first), each first given the
    spaces the other puts between words it runs together (``spaced_as``)."""
    own = frequent_words(first + second)
    chosen = []
    for a, b in zip(first, second, strict=True):
        a, b = spaced_as(a, b), spaced_as(b, a)
        chosen.append(b if measure(b, own).score > measure(a, own).score else a)
    return chosen


def _read(data: bytes, source: str, password: str | None) -> PdfText:
    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        _decrypt(reader, source, password)
    count = len(reader.pages)
    if count == 0:
        raise IngestError(source, "damaged PDF: no pages found")
    result = PdfText(_metadata_title(reader), [])
    failed: list[int] = []
    for number in range(1, count + 1):
        try:
            result.pages.append(reader.pages[number - 1].extract_text() or "")
        except (MemoryError, FileNotDecryptedError):
            raise
        except Exception:  # one bad page must not lose the others
            failed.append(number)
            result.pages.append("")
    if len(failed) == count:
        raise IngestError(source, "damaged PDF: the text of no page could be extracted")
    if failed:
        result.warnings.append(f"text extraction failed on {page_ranges(failed)} (damaged content)")
    return result


def _decrypt(reader: PdfReader, source: str, password: str | None) -> None:
    try:
        if reader.decrypt(""):
            return
        if password is None:
            damaged = (
                " — or its encryption dictionary is damaged (it gives no key length)" if _no_key_length(reader) else ""
            )
            raise IngestError(
                source,
                "encrypted: needs its password (the Library tab's PDF password field, or ingest --password)" + damaged,
            )
        if not reader.decrypt(password):
            raise IngestError(source, "wrong password")
    except DependencyError as error:
        raise IngestError(source, "encrypted with AES: reading it needs the 'cryptography' package") from error
    except NotImplementedError as error:
        raise IngestError(source, f"encrypted with an unsupported method: {error}") from error


def _no_key_length(reader: PdfReader) -> bool:
    """Whether the encryption dictionary of a /V 2 or 3 file gives no /Length: a 40-bit key then, by the
    specification, or a damaged dictionary whose real key is longer (qpdf's bad-encryption-length.pdf: "/Wength 128",
    an empty user password that opens it with a 128-bit key)."""
    try:
        encrypt = reader.trailer["/Encrypt"].get_object()
        return int(encrypt.get("/V", 0)) in (2, 3) and "/Length" not in encrypt
    except Exception:  # a dictionary too damaged to read says nothing more
        return False


def _metadata_title(reader: PdfReader) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:  # damaged metadata is not worth failing the file
        return None
    if not isinstance(title, str):
        return None
    title = " ".join(html.unescape(title).split())  # some producers write entities: "COVID&#x02010;19"
    if generic_title(title):
        return None
    return title[:300]


def page_ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 5] → "pages 1-3, 5"; [4] → "page 4"."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)
    return ("pages " if len(numbers) > 1 else "page ") + text


def _describe(error: Exception, with_type: bool = False) -> str:
    message = _shorten(str(error))
    if not message:
        return type(error).__name__
    return f"{type(error).__name__}: {message}" if with_type else message


def _shorten(message: str, limit: int = 120) -> str:
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 1] + "\u2026"
