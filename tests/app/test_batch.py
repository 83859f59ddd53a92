"""``indexpool summarize``: result lines with exact citations, ROUGE against abstracts and reference files, one bad
file not stopping the batch, resuming after a kill, the Markdown report, and no silent baseline for the model."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.cli import main
from ingest.pipeline import parse_item
from ingest.sources import Limits, expand_inputs
from storage.library import Library
from storage.models import MetricRecord, SummaryRow

PAPERS = ("2304.02623v1.pdf", "2020.acl-main.447.pdf")
KEYS = {"source", "title", "summarizer", "summary", "sentences", "reference_kind", "rouge", "seconds", "error"}
REPEATED = "The river flooded the lower town twice during the spring of that year."


def summarize(home: Path, *argv: str) -> tuple[int, str, str]:
    """``indexpool --home HOME summarize ARGV...`` as app.cli runs it (delegated to app.summarize)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["--home", str(home), "summarize", *argv])
    return code, out.getvalue(), err.getvalue()


def read_lines(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def parsed(source: str):  # noqa: ANN201
    [item] = expand_inputs([Path(source)], Limits())
    [document] = parse_item(item)
    return document


def write_texts(folder: Path) -> list[Path]:
    folder.mkdir()
    paragraphs = {
        "river": [
            "Notes on the river at Flußheim",
            f"{REPEATED} {REPEATED} Many houses near the old bridge were damaged.",
            "The council built a new dyke in the following decade. It has held since then.",
        ],
        "mill": [
            "The mill",
            "A water mill stood at the edge of the village for two centuries. It ground wheat and "
            "barley for the farms around it.",
            "The mill closed when the railway brought cheap flour.",
        ],
    }
    paths = []
    for stem, parts in paragraphs.items():
        path = folder / f"{stem}.txt"
        path.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def check_citations(record: dict) -> None:
    document = parsed(record["source"])
    starts = [s["start"] for s in record["sentences"]]
    assert starts == sorted(starts), "sentences are in reading order"
    for sentence in record["sentences"]:
        assert document.text[sentence["start"] : sentence["end"]] == sentence["text"]
        assert (sentence["page"] is None) == (not document.pages)
    assert record["summary"].splitlines() == [" ".join(s["text"].split()) for s in record["sentences"]]


# ----------------------------------------------------------------------------------------------- papers


@pytest.fixture(scope="module")
def paper_run(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a PDF")
    texts = write_texts(folder / "texts")
    papers = [str(shared_data / "pdf_papers_papermage_fixtures" / name) for name in PAPERS]
    out, markdown, home = folder / "results.jsonl", folder / "report.md", tmp_path_factory.mktemp("library")
    code, stdout, stderr = summarize(
        home,
        *papers,
        str(folder / "broken.pdf"),
        str(texts[0]),
        "--out",
        str(out),
        "--summarizer",
        "lead",
        "--workers",
        "1",
        "--markdown",
        str(markdown),
    )
    return {
        "code": code,
        "stdout": stdout,
        "stderr": stderr,
        "out": out,
        "markdown": markdown,
        "home": home,
        "papers": papers,
        "broken": str(folder / "broken.pdf"),
        "text": str(texts[0]),
    }


def test_one_bad_file_gives_an_error_line_and_the_batch_goes_on(paper_run: dict) -> None:
    lines = read_lines(paper_run["out"])
    assert all(set(line) >= KEYS and line["summarizer"] == "lead" for line in lines)
    by_source = {line["source"]: line for line in lines}
    assert sorted(by_source) == sorted([*paper_run["papers"], paper_run["broken"], paper_run["text"]])
    broken = by_source[paper_run["broken"]]
    assert broken["error"] and broken["sentences"] == [] and broken["rouge"] is None
    good = [by_source[source] for source in [*paper_run["papers"], paper_run["text"]]]
    assert all(record["error"] is None and record["summary"] for record in good)
    assert paper_run["code"] == 1 and "1 of 4 inputs could not be summarized" in paper_run["stderr"]
    counters = re.findall(r"^\[(\d+)/(\d+)\] ", paper_run["stderr"], flags=re.MULTILINE)
    assert counters == [(str(i), "4") for i in range(1, 5)], "a progress line per input, counted from 1 to 4"


def test_papers_are_summarized_from_the_body_and_scored_against_their_abstract(paper_run: dict) -> None:
    by_source = {line["source"]: line for line in read_lines(paper_run["out"])}
    for source in paper_run["papers"]:
        record = by_source[source]
        assert record["reference_kind"] == "abstract"
        assert set(record["rouge"]) == {"rouge1", "rouge2", "rougeL", "rougeLsum"}
        assert 0 < record["rouge"]["rougeL"] <= record["rouge"]["rouge1"] <= 1
        document = parsed(source)
        abstract = next(s for s in document.sections if s.kind == "abstract")
        assert all(s["start"] >= abstract.end and s["page"] >= 1 for s in record["sentences"])
        words = [len(s["text"].split()) for s in record["sentences"]]  # whole sentences up to the abstract's length
        assert sum(words) >= record["budget_words"] > sum(words) - words[-1], "budget: the abstract's length"
        check_citations(record)
    text = by_source[paper_run["text"]]
    assert text["reference_kind"] is None and text["rouge"] is None
    check_citations(text)
    assert text["summary"].count(REPEATED) == 1, "a repeated sentence is kept once"
    assert "ROUGE-L" in paper_run["stdout"] and "mean over 2 documents" in paper_run["stdout"]


def test_markdown_report_and_library_records(paper_run: dict) -> None:
    report = paper_run["markdown"].read_text(encoding="utf-8")
    by_source = {line["source"]: line for line in read_lines(paper_run["out"])}
    for source in paper_run["papers"]:
        assert f"## {by_source[source]['title']}" in report
    first = by_source[paper_run["papers"][0]]["sentences"][0]
    assert f"p. {first['page']}, chars {first['start']}–{first['end']}" in report
    assert "| ROUGE-1 | ROUGE-2 | ROUGE-L | ROUGE-Lsum |" in report and "## Failed inputs" in report
    with Library(paper_run["home"]).session() as session:
        rows = list(session.scalars(select(SummaryRow)))
        metrics = session.scalar(select(func.count()).where(MetricRecord.kind == "summarize"))
    assert len(rows) == 3 and metrics == 3
    assert {row.settings["summarizer"] for row in rows} == {"lead"}
    assert all(row.citations and row.citations[0]["text"] for row in rows)


# ----------------------------------------------------------------------------------------------- plain texts


def test_resume_after_a_kill_repairs_the_last_line_and_adds_no_duplicates(tmp_path: Path, home: Path) -> None:
    texts = write_texts(tmp_path / "texts")
    references = tmp_path / "references"
    references.mkdir()
    (references / "mill.abstract.txt").write_text("A village water mill ground grain until the railway came.\n")
    out = tmp_path / "results.jsonl"
    args = ("--out", str(out), "--summarizer", "lead", "--workers", "1", "--references", str(references))
    assert summarize(home, str(texts[0]), *args)[0] == 0  # a first run on part of the inputs
    first = out.read_bytes()
    out.write_bytes(first + first[: first.index("ß".encode()) + 1])  # killed mid-line, mid-character
    code, stdout, stderr = summarize(home, str(tmp_path / "texts"), *args)
    assert code == 0, stderr
    assert "resuming: 1 inputs already" in stderr
    lines = read_lines(out)
    assert sorted(line["source"] for line in lines) == sorted(str(p) for p in texts)
    assert out.read_bytes().startswith(first)
    mill = next(line for line in lines if line["source"].endswith("mill.txt"))
    assert mill["reference_kind"] == "file" and mill["rouge"]["rouge1"] > 0
    assert mill["budget_words"] == 10, "the reference's length"
    assert "(1 new, 1 from an earlier run, 0 failed)" in stdout
    code, stdout, _ = summarize(home, str(tmp_path / "texts"), *args)
    assert code == 0 and "(0 new, 2 from an earlier run, 0 failed)" in stdout
    assert len(read_lines(out)) == 2


def test_the_model_summarizer_unavailable_is_a_user_error(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INDEXPOOL_CHECKPOINT", str(tmp_path / "missing.pt"))
    [text] = write_texts(tmp_path / "texts")[:1]
    code, stdout, stderr = summarize(home, str(text), "--out", str(tmp_path / "results.jsonl"))
    assert code == 1 and stdout == ""
    assert stderr.count("\n") == 1 and "indexpool summarizer is unavailable" in stderr
    assert "--summarizer lead" in stderr
    assert not (tmp_path / "results.jsonl").exists()


def test_resuming_with_another_summarizer_is_refused(tmp_path: Path, home: Path) -> None:
    texts = write_texts(tmp_path / "texts")
    out = tmp_path / "results.jsonl"
    assert summarize(home, str(texts[0]), "--out", str(out), "--summarizer", "lead", "--workers", "1")[0] == 0
    code, _, stderr = summarize(home, str(texts[1]), "--out", str(out), "--summarizer", "lexrank")
    assert code == 1 and "holds summaries by lead" in stderr
    assert len(read_lines(out)) == 1
