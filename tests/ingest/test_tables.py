"""Filings as PDFs: table rows get their column labels (a figure read alone does not say which year or quarter it
is); a blank page is not called a scan."""

from __future__ import annotations

from pathlib import Path

import pytest
from samples import text_pdf

from ingest.document import IngestError, ParsedDocument
from ingest.pipeline import parse_item
from ingest.sources import InputItem
from ingest.tables import column_labels, label_rows, parse_row


@pytest.mark.parametrize(
    ("line", "labels"),
    [
        ("Year Ended December 31, 2018 2019 2020", ["2018", "2019", "2020"]),
        ("CONSOLIDATED STATEMENTS OF OPERATIONS (in thousands) Year Ended December 31, 2019 2018", ["2019", "2018"]),
        ("December 31, 2020 December 31, 2019", ["December 31, 2020", "December 31, 2019"]),
        (
            "First Quarter Second Quarter Third Quarter Fourth Quarter",
            ["First Quarter", "Second Quarter", "Third Quarter", "Fourth Quarter"],
        ),
        ("Three Months Ended Nine Months Ended", ["Three Months Ended", "Nine Months Ended"]),
        ("Q1 Q2 Q3 Q4", ["Q1", "Q2", "Q3", "Q4"]),
        ("We sell routers in 60 countries", []),
        ("Total net sales 88,400 97,250", []),
        ("Revenue 100.0 % 100.0 %", []),  # a row of percentages, not two column groups
    ],
)
def test_column_labels(line: str, labels: list[str]) -> None:
    assert column_labels(line) == labels


def test_rows_keep_currency_signs_negatives_dashes_and_percentages() -> None:
    row = parse_row("Net income (loss) $ (1,200) — 3.5 %")
    assert row is not None and (row.label, row.cells) == ("Net income (loss)", ["$(1,200)", "—", "3.5%"])
    assert parse_row("We had 3,950 employees in 2020") is None  # prose: words after the figures
    assert parse_row("2019 2020") is None  # no label


def test_rows_under_a_header_are_labelled_until_the_table_ends() -> None:
    lines = [
        "Year Ended December 31, 2018 2019 2020",
        "Total net sales $ 88,400 $ 97,250 $ 112,630",
        "Operating expenses:",
        "Research and development 9,800 11,200 14,050",
        "Per share 1.10 1.25",  # two figures under three labels: left as it is
        "The increase in net sales was driven by higher router shipments to customers in Europe and Asia.",
        "Other income 1,200 1,300 1,400",  # after prose: no header any more
    ]
    out, rows = label_rows(lines)
    assert out[1] == "Total net sales (2018: $88,400; 2019: $97,250; 2020: $112,630)"
    assert out[3] == "Research and development (2018: 9,800; 2019: 11,200; 2020: 14,050)"
    assert rows == {1, 3} and out[4] == lines[4] and out[6] == lines[6]


def test_a_pdf_table_row_is_one_sentence_with_its_columns(tmp_path: Path) -> None:
    page: list[str | bytes] = [
        "Item 8. Financial Statements",
        "CONSOLIDATED STATEMENTS OF OPERATIONS (in thousands)",
        "Year Ended December 31, 2018 2019 2020",
        "Total net sales 88,400 97,250 112,630",
        "Net income 6,500 7,900 10,200",
        "Sales grew in every region during the year as customers replaced older routers with new models.",
    ]
    path = tmp_path / "borealis-10k.pdf"
    path.write_bytes(text_pdf(None, [page]))
    [doc] = parse_item(InputItem(str(path), "pdf", path=path))
    assert isinstance(doc, ParsedDocument)
    sentences = [doc.text[s.start : s.end] for s in doc.sentences]
    assert "Total net sales (2018: 88,400; 2019: 97,250; 2020: 112,630)" in sentences
    assert "Net income (2018: 6,500; 2019: 7,900; 2020: 10,200)" in sentences


def test_a_blank_page_is_not_called_scanned(tmp_path: Path) -> None:
    """A page with nothing on it (a page break before a section), or only a drawn rule (a web page printed to PDF),
    is no scan to OCR; a file of nothing else says so."""
    readable: list[str | bytes] = ["The annual report states total net sales of 280,522 thousand dollars."] * 5
    path = tmp_path / "report.pdf"
    path.write_bytes(text_pdf(None, [readable, [], readable, [], readable], ruled=(3,)))
    [doc] = parse_item(InputItem(str(path), "pdf", path=path))
    assert isinstance(doc, ParsedDocument) and len(doc.pages) == 5
    assert not doc.pages[1].needs_ocr and not doc.pages[3].needs_ocr
    assert not any("scanned" in warning for warning in doc.warnings), doc.warnings
    path.write_bytes(text_pdf(None, [[]]))
    [error] = parse_item(InputItem(str(path), "pdf", path=path))
    assert isinstance(error, IngestError) and error.reason == "no text on its only page: blank"


def test_a_header_given_a_cell_per_line_under_column_groups() -> None:
    """A filing printed from its web page gives each header cell a line; two groups of two dates make four columns."""
    lines = [
        "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)",
        "Three Months Ended Nine Months Ended",
        "June 29,",
        "2024",
        "July 1,",
        "2023",
        "June 29,",
        "2024",
        "July 1,",
        "2023",
        "Net sales:",
        "Total net sales 85,777 81,797 296,105 293,787",
    ]
    out, rewritten = label_rows(lines)
    assert rewritten == {11}
    assert out[11] == (
        "Total net sales (Three Months Ended June 29, 2024: 85,777; Three Months Ended July 1, 2023: 81,797;"
        " Nine Months Ended June 29, 2024: 296,105; Nine Months Ended July 1, 2023: 293,787)"
    )
    yearly = ["Year Ended", " ", "January 29,", "2023", "January 30,", "2022", "Net income $ 4,368 $ 9,752"]
    out, rewritten = label_rows(yearly)
    assert out[6] == "Net income (January 29, 2023: $4,368; January 30, 2022: $9,752)"
    assert (
        label_rows(["Year Ended", "Our revenue grew in every segment this year.", "Net income 4,368 9,752"])[1] == set()
    )
