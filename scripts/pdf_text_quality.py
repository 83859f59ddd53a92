"""The PDF text-quality figure of BENCHMARKS.md: pages whose words are split or fused, before and after.

    python scripts/pdf_text_quality.py [--data ../shared/data]

"Before" is pypdf alone (the extraction until 2026-12-05); "after" is ``ingest.pdf.read_pdf`` (per page the more
readable of pypdf and pdfium, glyph-name pages left out). Both are cleaned as ingest cleans them
(``clean_pdf_pages``) and measured by ``ingest.textquality.measure`` with the document's own vocabulary. Pages with
fewer than 20 words in both are not counted. A file that either extraction cannot read is counted apart.
"""

from __future__ import annotations

import argparse
import io
import logging
import warnings
from pathlib import Path

from pypdf import PdfReader

from ingest.clean import clean_pdf_pages
from ingest.document import IngestError
from ingest.pdf import read_pdf
from ingest.textquality import frequent_words, measure


def _pypdf_pages(data: bytes) -> list[str]:
    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        reader.decrypt("")
    return [page.extract_text() or "" for page in reader.pages]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    paths = sorted(p for folder in args.data.glob("pdf_*") for p in folder.rglob("*.pdf"))
    counted = before_flawed = after_flawed = unreadable = words_before = words_after = 0
    only_before = only_after = neither = 0
    for path in paths:
        data = path.read_bytes()
        try:
            before = clean_pdf_pages(_pypdf_pages(data))
        except Exception:  # damaged: pypdf cannot read it
            before = None
        try:
            result = read_pdf(data, str(path))
            after, unreadable = clean_pdf_pages(result.pages), unreadable + len(result.unreadable)
        except IngestError:
            after = None
        if before is None or after is None:
            only_before += after is None and before is not None
            only_after += before is None and after is not None
            neither += before is None and after is None
            continue
        own = frequent_words(before + after)
        for old, new in zip(before, after, strict=True):
            q_old, q_new = measure(old, own), measure(new, own)
            if max(q_old.words, q_new.words) < 20:
                continue
            counted += 1
            before_flawed += q_old.flawed
            after_flawed += q_new.flawed
            words_before += q_old.known
            words_after += q_new.known
    print(f"{len(paths)} PDFs; {counted} pages of 20+ words read by both")
    print(f"pages with split or fused words: before {before_flawed} ({before_flawed / counted:.1%}),")
    print(f"                                 after  {after_flawed} ({after_flawed / counted:.1%})")
    print(f"dictionary words on those pages: before {words_before:,}, after {words_after:,}")
    print(f"glyph-name pages left out: {unreadable}")
    print(f"files read only before: {only_before}, only after: {only_after}, by neither: {neither}")


if __name__ == "__main__":
    main()
