"""``indexpool summarize``: batch summaries of files, folders and zip archives, with citations and ROUGE.

Each input is parsed in the isolated ingestion workers (time and memory caps, one clear error per bad file), then
summarized by ``app.services.summaries.summarize_document``: whole sentences of the document in reading order, each
cited by its character span in the extracted text and its page. A reference file named ``<stem>.txt`` or
``<stem>.abstract.txt`` anywhere under ``--references DIR`` takes precedence over the document's abstract.

Results go to a JSONL file, one line per input, flushed and fsynced as each is done. A rerun with the same
``--out`` skips the sources already there (a last line cut short by a kill is dropped first), so an interrupted
batch resumes without duplicates. Each summary is also stored in the library (``storage.summaries``) with a metric
record of kind "summarize".
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, TextIO

from app.services.errors import UserError
from app.services.summaries import ROUGE_NAMES, DocumentSummary, Reference, summarize_document
from ingest.document import IngestError, ParsedDocument
from ingest.pipeline import parse_items_isolated
from ingest.sources import InputItem, Limits, expand_inputs
from model.inference.rouge import ROUGE_TYPES
from model.inference.summarizers import Summarizer
from storage.arrays import atomic_write
from storage.library import Library
from storage.metrics import MetricStore
from storage.summaries import SummaryStore

Record = dict[str, Any]
Progress = Callable[[int, int, Record], None]


class ReferenceFiles:
    """Reference summaries found by name anywhere under a folder: ``<stem>.txt``, else ``<stem>.abstract.txt``
    (the document's own abstract, whose copy in the document is then cut from the summarizer's input)."""

    def __init__(self, folder: Path) -> None:
        self.paths: dict[str, list[Path]] = {}
        for path in sorted(folder.rglob("*.txt")):
            self.paths.setdefault(path.name, []).append(path)

    def find(self, stem: str) -> Reference | None:
        """The reference of the input called ``stem``; None when there is none; ValueError when it is ambiguous."""
        for name, is_abstract in ((f"{stem}.txt", False), (f"{stem}.abstract.txt", True)):
            found = self.paths.get(name, [])
            if len(found) > 1:
                raise ValueError(f"{len(found)} reference files are named {name}: {found[0]}, {found[1]}")
            if found:
                lines = [line.strip() for line in found[0].read_text(encoding="utf-8", errors="replace").splitlines()]
                text = "\n".join(line for line in lines if line)
                return Reference(text, "file", is_abstract) if text else None
        return None


def source_stem(source: str) -> str:
    """The name a reference file is looked up by: the file's stem, or the record id of a JSONL record."""
    name = source.rsplit("!", 1)[-1]
    return name.rsplit("#", 1)[-1] if ".jsonl#" in name else PurePath(name).stem


# ------------------------------------------------------------------------------------------- the results file


def read_results(out: Path) -> list[Record]:
    """The complete lines of a results file (none when it does not exist). A last line cut short by a killed run
    is dropped and the file rewritten without it; any other unreadable line is a UserError."""
    try:
        # A kill can cut a character in half: decoding must not fail on the line that gets dropped anyway.
        raw = out.read_bytes().decode("utf-8", errors="replace") if out.exists() else ""
    except OSError as error:
        raise UserError(f"cannot read the results file {out}: {error}") from error
    lines = raw.split("\n")
    records: list[Record] = []
    clean = raw.endswith("\n") or not raw
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if isinstance(record, dict) and isinstance(record.get("source"), str):
            records.append(record)
        elif number == len(lines):
            clean = False  # the line a killed run was writing: summarize that input again
        else:
            raise UserError(f"{out}: line {number} is not a summarize result; use another --out or remove the line")
    if not clean:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        atomic_write(out, lambda handle: handle.write(text.encode("utf-8")))
    return records


def append_line(handle: TextIO, record: Record) -> None:
    """Write one result line and make it durable before the next input starts."""
    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    handle.flush()
    os.fsync(handle.fileno())


def rouge_table(records: list[Record]) -> dict[str, Any] | None:
    """Mean ROUGE F-measures over the documents that have a reference; None when none has."""
    scored = [r["rouge"] for r in records if r.get("rouge")]
    if not scored:
        return None
    return {"documents": len(scored)} | {k: round(sum(s[k] for s in scored) / len(scored), 4) for k in ROUGE_TYPES}


def format_table(table: dict[str, Any] | None, summarizer: str) -> str:
    if table is None:
        return "no ROUGE: no document had a reference (an abstract, or a file from --references)"
    header = "  ".join(f"{name:>10}" for name in ROUGE_NAMES.values())
    values = "  ".join(f"{table[key]:>10.4f}" for key in ROUGE_NAMES)
    return f"ROUGE F1 of {summarizer}, mean over {table['documents']} documents with a reference\n{header}\n{values}"


def markdown_report(records: list[Record], table: dict[str, Any] | None, summarizer: str) -> str:
    """Per document: title, summary sentences with their citations, ROUGE; failed inputs at the end."""
    lines = [f"# Summaries ({summarizer})", ""]
    if table is not None:
        lines += [
            f"Mean ROUGE F1 over {table['documents']} documents with a reference:",
            "",
            "| " + " | ".join(ROUGE_NAMES.values()) + " |",
            "|" + "---:|" * len(ROUGE_NAMES),
            "| " + " | ".join(f"{table[key]:.4f}" for key in ROUGE_NAMES) + " |",
            "",
        ]
    for record in (r for r in records if not r["error"]):
        lines += [f"## {record['title']}", "", f"`{record['source']}`", ""]
        for sentence in record["sentences"]:
            page = f"p. {sentence['page']}, " if sentence["page"] else ""
            where = f"{page}chars {sentence['start']}–{sentence['end']}"
            lines.append(f"- {' '.join(sentence['text'].split())} *({where})*")
        if record["rouge"]:
            scores = ", ".join(f"{ROUGE_NAMES[k]} {record['rouge'][k]:.4f}" for k in ROUGE_NAMES)
            lines += ["", f"ROUGE against the {record['reference_kind']} reference: {scores}"]
        lines.append("")
    failed = [r for r in records if r["error"]]
    if failed:
        lines += ["## Failed inputs", "", *(f"- `{r['source']}`: {r['error']}" for r in failed), ""]
    return "\n".join(lines)


@dataclass
class BatchSettings:
    summarizer: Summarizer
    references: Path | None = None
    budget_words: int | None = None
    ratio: float | None = None
    workers: int = 2
    limits: Limits | None = None


class Batch:
    """Summarizes inputs one by one, yielding a result line for each; summaries go into ``library`` too."""

    def __init__(self, settings: BatchSettings, library: Library, out: Path) -> None:
        self.settings, self.library, self.out = settings, library, out
        self.references = ReferenceFiles(settings.references) if settings.references else None
        self.name = settings.summarizer.name

    def run(self, paths: list[Path], done: set[str], progress: Progress | None = None) -> Iterator[Record]:
        """Result lines for the inputs under ``paths`` whose source is not in ``done``, as each is finished."""
        limits = self.settings.limits or Limits()
        todo: list[InputItem] = []
        errors: list[IngestError] = []
        for entry in expand_inputs(paths, limits):
            if entry.source not in done:
                (errors if isinstance(entry, IngestError) else todo).append(entry)
        total, finished = len(todo) + len(errors), 0
        for error in errors:
            finished += 1
            yield self._report(self._error_record(error.source, error.reason, 0.0), finished, total, progress)
        produced: set[int] = set()  # id() of the items that gave results: counted finished at their first
        for item, results, seconds, last in parse_items_isolated(todo, None, limits, self.settings.workers):
            if not results and last and id(item) not in produced:
                results = [IngestError(item.source, "no text found")]
            if results and id(item) not in produced:  # a worker sends an item's results, then that it is done
                produced.add(id(item))
                finished += 1
            for result in results:
                if result.source not in done:
                    record = self._record(result, seconds / len(results))
                    yield self._report(record, finished, total, progress)

    @staticmethod
    def _report(record: Record, finished: int, total: int, progress: Progress | None) -> Record:
        if progress is not None:
            progress(finished, total, record)
        return record

    def _error_record(self, source: str, message: str, seconds: float) -> Record:
        return {
            "source": source,
            "title": source_stem(source),
            "summarizer": self.name,
            "summary": "",
            "sentences": [],
            "reference_kind": None,
            "rouge": None,
            "budget_words": None,
            "seconds": round(seconds, 3),
            "error": message,
        }

    def _record(self, result: ParsedDocument | IngestError, parse_seconds: float) -> Record:
        if isinstance(result, IngestError):
            return self._error_record(result.source, result.reason, parse_seconds)
        started = time.perf_counter()
        try:
            summary = self._summarize(result)
        except Exception as error:  # a bug or an input nobody foresaw: report it for this file, keep the batch going
            seconds = parse_seconds + time.perf_counter() - started
            return self._error_record(result.source, f"cannot summarize: {type(error).__name__}: {error}", seconds)
        summarize_seconds = time.perf_counter() - started
        record = {
            "source": result.source,
            "title": result.title,
            "summarizer": self.name,
            "summary": summary.summary,
            "sentences": summary.sentences,
            "reference_kind": summary.reference.kind if summary.reference else None,
            "rouge": summary.rouge,
            "budget_words": summary.budget_words,
            "seconds": round(parse_seconds + summarize_seconds, 3),
            "error": None,
        }
        self._store(record, result, parse_seconds, summarize_seconds)
        return record

    def _summarize(self, document: ParsedDocument) -> DocumentSummary:
        s = self.settings
        reference = self.references.find(source_stem(document.source)) if self.references else None
        return summarize_document(document, s.summarizer, reference, s.budget_words, s.ratio)

    def _store(self, record: Record, document: ParsedDocument, parse_s: float, summarize_s: float) -> None:
        """The summary (linked to the library's copies of the same file, if any) and its metric record."""
        summaries = SummaryStore(self.library)
        summaries.add(
            scope="document",
            document_ids=summaries.documents_with_content(document.content_hash),
            collection=None,
            summary=record["summary"],
            citations=[{"source": record["source"], "title": record["title"], **s} for s in record["sentences"]],
            settings={
                "summarizer": self.name,
                "budget_words": record["budget_words"],
                "source": record["source"],
                "title": record["title"],
                "reference_kind": record["reference_kind"],
                "out": str(self.out),
            },
            scores=record["rouge"] or {},
        )
        MetricStore(self.library).add(
            "summarize",
            record["seconds"] * 1000,
            {
                "source": record["source"],
                "summarizer": self.name,
                "budget_words": record["budget_words"],
                "words": len(record["summary"].split()),
                "rouge": record["rouge"],
                "timings_ms": {"parse": round(parse_s * 1000, 2), "summarize": round(summarize_s * 1000, 2)},
            },
        )


def run_batch(
    paths: list[Path],
    out: Path,
    settings: BatchSettings,
    library: Library,
    markdown: Path | None = None,
    progress: Progress | None = None,
    resuming: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Summarize the inputs into ``out`` (resuming it), write the Markdown report when asked; the report object
    (``summarize --json``). ``resuming(n)`` is told how many inputs an earlier run already did."""
    if settings.references is not None and not settings.references.is_dir():
        raise UserError(f"--references {settings.references} is not a folder")
    name = settings.summarizer.name
    previous = read_results(out)
    others = sorted({r.get("summarizer") for r in previous} - {name}, key=str)
    if others:
        raise UserError(
            f"{out} holds summaries by {', '.join(map(str, others))}; resume it with that "
            f"--summarizer or write to another --out"
        )
    batch = Batch(settings, library, out)
    started = time.perf_counter()
    done = {r["source"] for r in previous}
    if done and resuming is not None:
        resuming(len(done))
    fresh: list[Record] = []
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("a", encoding="utf-8") as handle:
            for record in batch.run(paths, done, progress):
                append_line(handle, record)
                fresh.append(record)
    except OSError as error:
        raise UserError(f"cannot write {out}: {error.strerror or error}") from error
    records = previous + fresh
    table = rouge_table(records)
    if markdown:
        report_text = markdown_report(records, table, name)
        atomic_write(markdown, lambda handle: handle.write(report_text.encode("utf-8")))
    return {
        "out": str(out),
        "summarizer": name,
        "documents": len(records),
        "new": len(fresh),
        "resumed": len(previous),
        "errors": sum(bool(r["error"]) for r in records),
        "seconds": round(time.perf_counter() - started, 2),
        "rouge": table,
        "markdown": str(markdown) if markdown else None,
    }


def progress_line(finished: int, total: int, record: Record) -> None:
    """One stderr line per finished input."""
    if record["error"]:
        outcome = f"error: {record['error']}"
    else:
        outcome = f"{len(record['summary'].split())} words"
        if record["rouge"]:
            outcome += f", ROUGE-L {record['rouge']['rougeL']:.3f} vs {record['reference_kind']}"
    print(
        f"[{finished}/{total}] {record['source']}: {outcome} ({record['seconds']:.1f} s)", file=sys.stderr, flush=True
    )
