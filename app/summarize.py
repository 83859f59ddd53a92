"""``indexpool summarize``: batch summaries of files, folders and zip archives, with citations and ROUGE.

Each input is parsed in the isolated ingestion workers (time and memory caps, one clear error per bad file), then
summarized extractively: whole sentences of the document in reading order, each cited by its character span in
the extracted text (``text[start:end]``) and its page, skipping a sentence too similar to one already chosen, within
a word budget. Summaries are made from the body: headings, keywords and references are left out, and so are the
abstract and the title block before it, against which ROUGE is then reported; a reference file named
``<stem>.txt`` or ``<stem>.abstract.txt`` anywhere under ``--references DIR`` takes precedence over the abstract.
A ``<stem>.abstract.txt`` reference is the document's own abstract: the document's copy of it (found by content,
as for the evaluation data, since many papers carry their abstract untagged at the start of the first section)
is cut from the input too, so the summary cannot copy its reference.

Results go to a JSONL file, one line per input, flushed and fsynced as each is done. A rerun with the same
``--out`` skips the sources already there (a last line cut short by a kill is dropped first), so an interrupted
batch resumes without duplicates. Each summary is also stored in the library: a ``SummaryRow`` and a
``MetricRecord`` of kind "summarize".
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, TextIO

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from sqlalchemy import select

from app.cli import positive_int
from app.services import UserError
from ingest.document import IngestError, ParsedDocument
from ingest.pipeline import parse_items_isolated
from ingest.segment import section_name
from ingest.sources import InputItem, Limits, expand_inputs
from model.checkpoint import indexpool_checkpoint
from model.evaluation import systems
from model.evaluation.baselines import tokenize
from model.evaluation.datasets import strip_abstract
from model.evaluation.metrics import ROUGE_TYPES, rouge
from model.evaluation.passages import sentence_spans
from storage.arrays import atomic_write
from storage.library import Library
from storage.models import Document, MetricRecord, SummaryRow

DEFAULT_BUDGET_WORDS = 150
REDUNDANCY = 0.6  # skip a sentence whose stemmed content words overlap a chosen one's by more (cosine)
MAX_ROUNDS = 4  # how often the summarizer is asked for more words to make up for skipped sentences
ROUGE_NAMES = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeLsum": "ROUGE-Lsum"}
_FRONT_MATTER = {"keywords", "key words", "index terms", "ccs concepts", "additional key words and phrases"}
_PIECE_BREAK = "\n\n"  # between sections
_LINE_BREAK = "\n"  # between the parts of a section around a cut sentence
_WORD = re.compile(r"\S+")
_STOP_STEMS = frozenset(tokenize(" ".join(ENGLISH_STOP_WORDS)))

Record = dict[str, Any]
Progress = Callable[[int, int, Record], None]


# ------------------------------------------------------------------------------------------- one document


@dataclass(frozen=True)
class Reference:
    text: str  # one sentence per line, as ROUGE-Lsum expects
    kind: str  # "abstract" or "file"
    is_abstract: bool = False  # the document's own abstract (a ``<stem>.abstract.txt`` file): cut from the input


@dataclass(frozen=True)
class Cited:
    """A summary sentence: the span ``[start, end)`` of the body (or, mapped back, the document), of ``words``
    words."""

    start: int
    end: int
    words: int


@dataclass(frozen=True)
class Body:
    """The text to summarize: pieces of the document text joined by line breaks (a blank line between sections),
    and where each piece starts in both texts, so that a span of the body (never across a line break) maps back to
    the document."""

    text: str
    starts: list[int]  # of each piece in ``text``
    origins: list[int]  # of each piece in the document text

    def to_document(self, cited: Cited) -> Cited:
        piece = bisect.bisect_right(self.starts, cited.start) - 1
        shift = self.origins[piece] - self.starts[piece]
        return Cited(cited.start + shift, cited.end + shift, cited.words)


def body_of(document: ParsedDocument, cut: frozenset[int] = frozenset()) -> tuple[Body, int | None]:
    """The document's sections without their headings, leaving out the abstract and what precedes it, keywords,
    references and the sentences whose indices are in ``cut``; and the index of the abstract section (None when
    there is none)."""
    abstract = next((i for i, s in enumerate(document.sections) if s.kind == "abstract"), None)
    cut_spans: dict[int, list[tuple[int, int]]] = {}
    for i in sorted(cut):
        sentence = document.sentences[i]
        if sentence.section is not None:
            cut_spans.setdefault(sentence.section, []).append((sentence.start, sentence.end))
    text, pieces, starts, origins, offset = document.text, [], [], [], 0
    for index, section in enumerate(document.sections):
        if section.kind != "body" or section_name(section.title) in _FRONT_MATTER:
            continue
        if abstract is not None and index < abstract:
            continue
        start = section.start
        if section.title and text.startswith(section.title, start):
            start += len(section.title)
        bounds = [start]  # the section's text around its cut sentences: [bounds[0], bounds[1]), [bounds[2], ...
        for cut_start, cut_end in cut_spans.get(index, []):
            bounds += [cut_start, cut_end]
        bounds.append(section.end)
        separator = _PIECE_BREAK
        for piece_start, piece_end in zip(bounds[::2], bounds[1::2], strict=True):
            piece = text[piece_start:piece_end]
            stripped = piece.strip()
            if stripped:
                if pieces:
                    pieces.append(separator)
                    offset += len(separator)
                pieces.append(stripped)
                starts.append(offset)
                origins.append(piece_start + len(piece) - len(piece.lstrip()))
                offset += len(stripped)
                separator = _LINE_BREAK
    return Body("".join(pieces), starts, origins), abstract


def abstract_copy(document: ParsedDocument, abstract: str) -> frozenset[int]:
    """Indices of the document's sentences that form its copy of ``abstract`` (found by content, as the evaluation
    data is made: ``model.evaluation.datasets.strip_abstract``); sentences outside any section (a title) are not
    considered."""
    candidates = [i for i, s in enumerate(document.sentences) if s.section is not None]
    spans = [document.sentences[i] for i in candidates]
    run, _ = strip_abstract([" ".join(document.text[s.start : s.end].split()) for s in spans], abstract)
    return frozenset(candidates[j] for j in run)


def abstract_reference(document: ParsedDocument, abstract: int) -> Reference | None:
    lines = [" ".join(document.text[s.start : s.end].split()) for s in document.sentences if s.section == abstract]
    return Reference("\n".join(lines), "abstract") if lines else None


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


def locate(text: str, lines: list[str]) -> list[Cited]:
    """The span in ``text`` of each summary line (a whitespace-normalized sentence of ``text``, or the first words
    of one), in reading order. Raises ValueError for a line that is not a sentence of the text."""
    spans = sentence_spans(text)
    words = [text[s:e].split() for s, e in spans]
    found: list[Cited] = []
    cursor = 0
    for line in lines:
        wanted = line.split()
        if not wanted:
            continue
        order = [*range(cursor, len(spans)), *range(cursor)]
        match = next((j for j in order if words[j] == wanted), None)
        if match is None:
            match = next((j for j in order if words[j][: len(wanted)] == wanted), None)
        if match is None:
            raise ValueError(f"the summarizer returned a sentence that is not in the document: {line[:80]!r}")
        found.append(_first_words(text, *spans[match], len(wanted)))
        cursor = match + 1
    return sorted(found, key=lambda c: c.start)


def _first_words(text: str, start: int, end: int, count: int) -> Cited:
    """The span of the first ``count`` words of ``text[start:end]``."""
    words = list(_WORD.finditer(text, start, end))[:count]
    return Cited(start, words[-1].end(), len(words))


def _content(text: str) -> frozenset[str]:
    return frozenset(tokenize(text)) - _STOP_STEMS


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / math.sqrt(len(a) * len(b)) if a and b else 0.0


def drop_redundant(text: str, cited: list[Cited]) -> list[Cited]:
    """The sentences in order, without those more than ``REDUNDANCY`` similar to one kept before."""
    kept: list[tuple[Cited, frozenset[str]]] = []
    for sentence in cited:
        content = _content(text[sentence.start : sentence.end])
        if all(_similarity(content, other) <= REDUNDANCY for _, other in kept):
            kept.append((sentence, content))
    return [sentence for sentence, _ in kept]


def fit(text: str, cited: list[Cited], budget_words: int) -> list[Cited]:
    """The sentences in order, the last one cut so that they hold at most ``budget_words`` words."""
    fitted: list[Cited] = []
    left = budget_words
    for sentence in cited:
        if left <= 0:
            break
        fitted.append(sentence if sentence.words <= left else _first_words(text, sentence.start, sentence.end, left))
        left -= sentence.words
    return fitted


def choose_sentences(summarizer: systems.Summarizer, text: str, budget_words: int) -> list[Cited]:
    """The summarizer's sentences without redundant ones, asking it for more words (up to ``MAX_ROUNDS`` times)
    while skipped sentences leave the budget unfilled and the text has more to offer."""
    requested = budget_words
    for _ in range(MAX_ROUNDS):
        located = locate(text, summarizer.summarize(text, requested).splitlines())
        kept = drop_redundant(text, located)
        kept_words = sum(c.words for c in kept)
        if kept_words >= budget_words or sum(c.words for c in located) < requested:
            break
        requested += budget_words - kept_words
    return fit(text, kept, budget_words)


def budget_for(body: str, reference: Reference | None, budget_words: int | None, ratio: float | None) -> int:
    """``budget_words``, else ``ratio`` of the body's words, else the reference's length, else the default."""
    if budget_words:
        return budget_words
    if ratio:
        return max(1, round(ratio * len(body.split())))
    return len(reference.text.split()) if reference else DEFAULT_BUDGET_WORDS


def page_of(document: ParsedDocument, offset: int) -> int | None:
    index = bisect.bisect_right([p.start for p in document.pages], offset)
    return document.pages[index - 1].number if index else None


@dataclass
class DocumentSummary:
    sentences: list[dict[str, Any]]  # {"text", "start", "end", "page"}; text == document.text[start:end]
    budget_words: int
    reference: Reference | None
    rouge: dict[str, float] | None

    @property
    def summary(self) -> str:
        """One sentence per line, whitespace-normalized."""
        return "\n".join(" ".join(s["text"].split()) for s in self.sentences)


def summarize_document(
    document: ParsedDocument,
    summarizer: systems.Summarizer,
    reference: Reference | None = None,
    budget_words: int | None = None,
    ratio: float | None = None,
) -> DocumentSummary:
    """Summarize the body of ``document``; ``reference`` takes precedence over its abstract for ROUGE."""
    cut = abstract_copy(document, reference.text) if reference is not None and reference.is_abstract else frozenset()
    body, abstract = body_of(document, cut)
    if not body.text:
        raise ValueError("no text to summarize outside the abstract and references")
    if reference is None and abstract is not None:
        reference = abstract_reference(document, abstract)
    budget = budget_for(body.text, reference, budget_words, ratio)
    sentences = [
        {"text": document.text[c.start : c.end], "start": c.start, "end": c.end, "page": page_of(document, c.start)}
        for c in map(body.to_document, choose_sentences(summarizer, body.text, budget))
    ]
    result = DocumentSummary(sentences, budget, reference, None)
    if reference is not None:
        result.rouge = {k: round(v, 4) for k, v in rouge(result.summary, [reference.text]).items()}
    return result


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


# ------------------------------------------------------------------------------------------- the batch


@dataclass
class BatchSettings:
    summarizer: systems.Summarizer
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
        for entry in expand_inputs([p.expanduser().resolve() for p in paths], limits):
            if entry.source not in done:
                (errors if isinstance(entry, IngestError) else todo).append(entry)
        total, finished = len(todo) + len(errors), 0
        for error in errors:
            finished += 1
            yield self._report(self._error_record(error.source, error.reason, 0.0), finished, total, progress)
        for item, results, seconds in parse_items_isolated(todo, None, limits, self.settings.workers):
            finished += 1
            results = results or [IngestError(item.source, "no text found")]
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
        with self.library.session() as session, session.begin():
            same_file = select(Document.id).where(
                Document.content_hash == document.content_hash, Document.status == "ingested"
            )
            settings = {
                "summarizer": self.name,
                "budget_words": record["budget_words"],
                "source": record["source"],
                "title": record["title"],
                "reference_kind": record["reference_kind"],
                "out": str(self.out),
            }
            session.add(
                SummaryRow(
                    scope="document",
                    document_ids=list(session.scalars(same_file)),
                    collection=None,
                    summary=record["summary"],
                    settings=settings,
                    scores=record["rouge"] or {},
                    citations=[
                        {"source": record["source"], "title": record["title"], **s} for s in record["sentences"]
                    ],
                )
            )
            session.add(
                MetricRecord(
                    kind="summarize",
                    total_ms=round(record["seconds"] * 1000, 2),
                    data={
                        "source": record["source"],
                        "summarizer": self.name,
                        "budget_words": record["budget_words"],
                        "words": len(record["summary"].split()),
                        "rouge": record["rouge"],
                        "timings_ms": {"parse": round(parse_s * 1000, 2), "summarize": round(summarize_s * 1000, 2)},
                    },
                )
            )


# ------------------------------------------------------------------------------------------- command line


def _ratio(value: str) -> float:
    number = float(value)
    if not 0 < number <= 1:
        raise argparse.ArgumentTypeError(f"expected a ratio in (0, 1], got {value}")
    return number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Summarize files, folders and .zip archives into a resumable JSONL file, with ROUGE."
    parser.add_argument("paths", nargs="+", metavar="PATH", type=Path)
    parser.add_argument("--out", required=True, type=Path, help="results JSONL (appended to; a rerun resumes)")
    parser.add_argument(
        "--references",
        type=Path,
        metavar="DIR",
        help="reference summaries DIR/<stem>.txt or DIR/<stem>.abstract.txt (before abstracts)",
    )
    parser.add_argument("--workers", type=positive_int, default=min(2, os.cpu_count() or 1), help="parsing processes")
    parser.add_argument(
        "--summarizer",
        choices=systems.SUMMARIZERS,
        default="indexpool",
        help="indexpool (the model, default) or a baseline: lead, lexrank",
    )
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument(
        "--budget-words",
        type=positive_int,
        help=f"summary length (default: the reference's, else {DEFAULT_BUDGET_WORDS})",
    )
    budget.add_argument("--ratio", type=_ratio, help="summary length as a fraction of the body's words")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="also write a Markdown report")
    parser.add_argument("--json", action="store_true", help="print the final report as JSON")


def load_summarizer(name: str) -> systems.Summarizer:
    """The summarizer called ``name``; a UserError (never a substitute) when it cannot run here."""
    try:
        return systems.make_summarizer(name)
    except systems.SystemUnavailable as error:
        raise UserError(
            f"the {name} summarizer is unavailable: {error}; use --summarizer lead (or lexrank) for a baseline"
        ) from error


def interactive_summarizer(name: str) -> tuple[systems.Summarizer, str]:
    """For the app: the summarizer called ``name`` and how to label its output. The IndexPool model falls back to
    the LEAD baseline, labelled as such, when it cannot run here; the batch command never falls back."""
    try:
        return load_summarizer(name), name
    except UserError as error:
        if name != "indexpool":
            raise
        reason = (
            "model checkpoint not installed"
            if not indexpool_checkpoint().is_file()
            else f"the model cannot run here: {error.__cause__}"
        )
        return load_summarizer("lead"), f"baseline: lead ({reason})"


def _progress_line(finished: int, total: int, record: Record) -> None:
    if record["error"]:
        outcome = f"error: {record['error']}"
    else:
        outcome = f"{len(record['summary'].split())} words"
        if record["rouge"]:
            outcome += f", ROUGE-L {record['rouge']['rougeL']:.3f} vs {record['reference_kind']}"
    print(
        f"[{finished}/{total}] {record['source']}: {outcome} ({record['seconds']:.1f} s)", file=sys.stderr, flush=True
    )


def run(args: argparse.Namespace) -> int:
    """Summarize the inputs, print the ROUGE table (or the JSON report); 1 when any input failed."""
    if args.references is not None and not args.references.is_dir():
        raise UserError(f"--references {args.references} is not a folder")
    summarizer = load_summarizer(args.summarizer)
    previous = read_results(args.out)
    others = sorted({r.get("summarizer") for r in previous} - {summarizer.name}, key=str)
    if others:
        raise UserError(
            f"{args.out} holds summaries by {', '.join(map(str, others))}; resume it with that "
            f"--summarizer or write to another --out"
        )
    settings = BatchSettings(summarizer, args.references, args.budget_words, args.ratio, args.workers)
    batch = Batch(settings, Library(Path(args.home) if args.home else None), args.out)
    started = time.perf_counter()
    done = {r["source"] for r in previous}
    if done:
        print(f"resuming: {len(done)} inputs already in {args.out}", file=sys.stderr)
    fresh: list[Record] = []
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("a", encoding="utf-8") as handle:
            for record in batch.run(args.paths, done, _progress_line):
                append_line(handle, record)
                fresh.append(record)
    except OSError as error:
        raise UserError(f"cannot write {args.out}: {error.strerror or error}") from error
    records = previous + fresh
    table = rouge_table(records)
    if args.markdown:
        report_text = markdown_report(records, table, summarizer.name)
        atomic_write(args.markdown, lambda handle: handle.write(report_text.encode("utf-8")))
    failed = sum(bool(r["error"]) for r in records)
    report = {
        "out": str(args.out),
        "summarizer": summarizer.name,
        "documents": len(records),
        "new": len(fresh),
        "resumed": len(previous),
        "errors": failed,
        "seconds": round(time.perf_counter() - started, 2),
        "rouge": table,
        "markdown": str(args.markdown) if args.markdown else None,
    }
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(
            f"{len(records)} results in {args.out} ({len(fresh)} new, {len(previous)} from an earlier run, "
            f"{failed} failed) in {report['seconds']:.1f} s\n{format_table(table, summarizer.name)}"
        )
    if failed:
        print(f"indexpool: error: {failed} of {len(records)} inputs could not be summarized", file=sys.stderr)
    return 1 if failed else 0
