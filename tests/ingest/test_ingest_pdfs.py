"""The shared real PDFs: damaged, unusual, encrypted, image-only and full papers."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ingest.document import IngestError, ParsedDocument
from ingest.pipeline import parse_item, parse_items_isolated
from ingest.sources import InputItem, Limits, expand_inputs

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
pytestmark = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"shared data folder {DATA} is absent (it sits beside the checkout in CI)"
)
SAMPLES = DATA / "pdf_py-pdf_sample-files"
PAPERS = DATA / "pdf_papers_papermage_fixtures"
# The seven full papers and words from their abstracts.
ABSTRACTS = {
    "2020.acl-main.447.pdf": "We introduce S2ORC, a large corpus",
    "2023.eacl-main.121.pdf": "While human evaluation remains best practice",
    "2203.00130v1.pdf": "When seeking information not covered in patient-friendly documents",
    "2206.10883v3.pdf": "With the advent of large language models",
    "2302.07302v1.pdf": "When reading a scholarly article, inline citations",
    "2304.02623v1.pdf": "Large language models have introduced exciting new opportunities",
    "papermage.pdf": "Despite growing interest in applying natural language processing",
}

Check = Callable[[ParsedDocument], None]


def _parse(path: Path, password: str | None = None) -> ParsedDocument | IngestError:
    [result] = parse_item(InputItem(str(path), "pdf", path=path), password)
    return result


def test_damaged_and_sample_pdfs_end_as_documents_or_clear_errors(check_document: Check) -> None:
    paths = sorted((DATA / "pdf_qpdf_malformed" / "pdfs").glob("*.pdf")) + sorted(SAMPLES.rglob("*.pdf"))
    assert len(paths) == 79 + 31
    limits = Limits(timeout_s=60)
    items = list(expand_inputs(paths, limits))
    assert all(isinstance(item, InputItem) for item in items)
    outcomes: dict[str, ParsedDocument | IngestError] = {}
    started = time.monotonic()
    for item, results, seconds, _ in parse_items_isolated(items, None, limits, workers=2):  # type: ignore[arg-type]
        assert seconds < limits.timeout_s and len(results) <= 1
        if results:  # one result per PDF, then the message that the file is done
            assert item.source not in outcomes
            outcomes[item.source] = results[0]
    assert len(outcomes) == len(paths) and time.monotonic() - started < 240
    for source, result in outcomes.items():
        if isinstance(result, IngestError):
            assert result.source == source and len(result.reason) > 10 and "\n" not in result.reason
            assert "timed out" not in result.reason and "crashed" not in result.reason, result
        else:
            check_document(result)
    documents = [r for r in outcomes.values() if isinstance(r, ParsedDocument)]
    assert len(documents) >= 50  # best-effort text from most files


def test_password_protected_pdf() -> None:
    path = SAMPLES / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf"
    error = _parse(path)
    assert (
        isinstance(error, IngestError)
        and error.reason == "encrypted: needs its password (the Library tab's PDF password field, or ingest --password)"
    )
    error = _parse(path, password="not-it")
    assert isinstance(error, IngestError) and error.reason == "wrong password"
    doc = _parse(path, password="openpassword")
    assert isinstance(doc, ParsedDocument) and "Lorem ipsum" in doc.text


def test_an_encryption_dictionary_without_its_key_length_is_named() -> None:
    """qpdf's bad-encryption-length.pdf ("/Wength 128"): no password opens it here, and the message says the
    dictionary may be damaged rather than only asking for a password."""
    error = _parse(DATA / "pdf_qpdf_malformed" / "pdfs" / "bad-encryption-length.pdf")
    assert isinstance(error, IngestError) and error.reason.endswith("damaged (it gives no key length)"), error


def test_image_only_pdf_needs_ocr() -> None:
    error = _parse(SAMPLES / "007-imagemagick-images" / "imagemagick-images.pdf")
    assert isinstance(error, IngestError)
    assert error.reason == "no extractable text on any of its 6 pages (scanned?): needs OCR"


def test_page_without_text_is_flagged(check_document: Check) -> None:
    doc = _parse(SAMPLES / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf")
    assert isinstance(doc, ParsedDocument) and len(doc.pages) == 4 and not doc.needs_ocr_pages
    check_document(doc)


@pytest.mark.parametrize("name", sorted(ABSTRACTS))
def test_full_papers(name: str, check_document: Check) -> None:
    doc = _parse(PAPERS / name)
    assert isinstance(doc, ParsedDocument)
    check_document(doc)
    pages_with_sentences = {s.page for s in doc.sentences}
    for page in doc.pages:
        if any(ch.isalnum() for ch in doc.text[page.start : page.end]):
            assert page.number in pages_with_sentences, f"page {page.number} has text but no sentences"
    abstracts = [s for s in doc.sections if s.kind == "abstract"]
    assert abstracts, [s.title for s in doc.sections]
    abstract = doc.text[abstracts[0].start : abstracts[0].end]
    assert ABSTRACTS[name] in " ".join(re.sub(r"S2ORC,1 ?", "S2ORC, ", abstract).split())  # footnote mark
    assert 400 < len(abstract) < 3000 and "introduction" not in abstract.lower()
    assert any(s.kind == "references" for s in doc.sections)
    assert any(doc.sections[s.section].kind == "abstract" for s in doc.sentences if s.section is not None)
