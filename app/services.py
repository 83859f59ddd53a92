"""Services shared by the CLI and the Gradio app: ingest files, list and remove documents, ask questions.

Neither front end touches the database or the ingestion pipeline directly; both call ``Services``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import re
import shutil
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pypdfium2 as pdfium
from PIL import Image

from app.generators import GeneratorError, parse_generator
from ingest.document import IngestError, ParsedDocument
from ingest.pipeline import parse_items_isolated
from ingest.sources import InputItem, Limits, expand_inputs
from model.reader import READERS, Answer, ReaderUnavailable, available_readers
from storage.db import StorageError
from storage.library import CollectionInfo, Library
from storage.models import AnswerRow, CitationRow, Document, MetricRecord, SummaryRow
from storage.queries import metric_records, page_span, parsed_document
from storage.sessions import SessionInfo, SessionStore
from storage.settings import SettingsStore

if TYPE_CHECKING:  # model.indexpool imports torch: imported where needed, so that the CLI starts fast
    from model.indexpool.config import IndexPoolConfig


class UserError(Exception):
    """A request that cannot be served as asked; the message is one line for the user."""


@dataclass
class Generated:
    """Prose a generator wrote from an answer's citations (which it cites as [1]..[n])."""

    text: str
    generator: str  # the generator's name, e.g. "hf:/models/qwen"


@dataclass
class AskResult(Answer):
    """The extractive answer, and the generated prose when a generator ran."""

    generated: Generated | None = None

    def to_json(self) -> dict[str, Any]:
        """The documented ``ask --json`` object; ``generated`` only when a generator ran."""
        data = super().to_json()
        if self.generated is not None:
            data["generated"] = {"text": self.generated.text, "generator": self.generated.generator}
        return data


class GenerationFailed(UserError):
    """The generator failed; ``answer`` is the extractive answer, which stands (and was recorded)."""

    def __init__(self, message: str, answer: AskResult) -> None:
        super().__init__(message)
        self.answer = answer


@dataclass
class IngestEvent:
    """What happened to one input (a file, an archive member or a JSONL record)."""

    index: int  # 1-based position among the inputs of this batch
    total: int
    source: str
    status: str  # "ingested", "replaced", "unchanged", "duplicate" or "error"
    message: str
    document_id: int | None = None
    pages: int = 0
    tokens: int = 0
    sentences: int = 0
    needs_ocr_pages: list[int] | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class IngestSummary:
    files: int
    ingested: int
    unchanged: int
    errors: int
    pages: int
    tokens: int
    seconds: float

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {
            "pages_per_s": round(self.pages_per_s, 2),
            "tokens_per_s": round(self.tokens_per_s),
        }


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


def file_hash(item: InputItem) -> str:
    digest = hashlib.sha256()
    if item.data is not None:
        digest.update(item.data)
    elif item.path is not None:
        with open(item.path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


@dataclass
class DocumentSummary:
    """One document's summary: whole sentences in reading order, each ``{"text", "start", "end", "page"}`` with
    ``text == document.text[start:end]``; ROUGE against the document's abstract when it has one."""

    document_id: int
    title: str
    sentences: list[dict[str, Any]]
    rouge: dict[str, float] | None
    error: str | None = None  # why this document has no summary


@dataclass
class Summary:
    id: int  # of the stored SummaryRow
    scope: str  # "document", "selection" or "collection"
    collection: str
    summarizer: str  # the summarizer that ran
    label: str  # how its output is labelled: the summarizer, or "baseline: lead (model checkpoint not installed)"
    budget_words: int  # per document
    documents: list[DocumentSummary] = field(default_factory=list)
    seconds: float = 0.0


def indexer_cache_bytes(tokens: int, cfg: IndexPoolConfig, compressed: bool) -> int:
    """Bytes of the indexer key cache (tier 1) of a ``tokens``-token context, as ``IndexPoolIndexer.cache_bytes``
    counts them: float32 keys of ``head_dim``; compressed, one pooled entry per ``ratio`` tokens (INT8 rows with a
    float16 scale when ``cfg.int8``) plus the keys of the unfinished block; below ``min_length`` tokens nothing is
    compressed."""
    key_bytes = cfg.head_dim * 4
    if not compressed or tokens < cfg.min_length:
        return tokens * key_bytes
    entry_bytes = cfg.head_dim + 2 if cfg.int8 else key_bytes
    return tokens // cfg.ratio * entry_bytes + tokens % cfg.ratio * key_bytes


BENCH_TOKENS = (8192, 1_000_000)  # the lengths the dashboard's benchmark accepts


DEFAULT_SETTINGS: dict[str, Any] = {
    "preset": "default",  # of model/indexpool/config.py: default, technical or news
    "alpha": 0.5,  # IndexPool pooling weights: positional, content, temporal
    "beta": 0.3,
    "gamma": 0.2,
    "ratio": 4,
    "int8": False,
    "top_k": 5,  # used by Ask
    "reader": "",  # used by Ask; "" = Services.default_reader() (the model when its checkpoint is installed)
    "summarizer": "indexpool",  # the Summarize tab's default
    "generator": "",  # used by Ask: "off", or the generator the app offers; "" = the app's (serve --generator)
}


SummaryProgress = Callable[[int, int, str], None]  # (documents done, documents in all, title of the next one)
MAX_BUDGET_WORDS = 2000


class Services:
    def __init__(self, home: Path | None = None, generator: str = "") -> None:
        """``generator`` is the generator spec the app offers its users (``serve --generator``), "" for none."""
        try:
            self.library = Library(home)
        except StorageError as error:
            raise UserError(str(error)) from error
        self.generator = self.check_generator(generator)
        self.sessions = SessionStore(self.library)
        self.settings_store = SettingsStore(self.library.home)

    # ----------------------------------------------------------------- library

    def collections(self) -> list[CollectionInfo]:
        return self.library.collections()

    def documents(self, collection: str) -> list[Document]:
        try:
            return self.library.documents(collection)
        except StorageError as error:
            raise UserError(str(error)) from error

    def remove(self, collection: str, refs: list[str]) -> list[Document]:
        """Remove documents of ``collection`` named by id, source or title."""
        documents = self.documents(collection)
        chosen: list[Document] = []
        for ref in refs:
            matches = [d for d in documents if ref in (str(d.id), d.source, d.title, Path(d.source).name)]
            if not matches:
                raise UserError(f"no document '{ref}' in collection '{collection}'")
            if len(matches) > 1:
                ids = ", ".join(str(d.id) for d in matches)
                raise UserError(f"'{ref}' names several documents in '{collection}' (ids {ids}); use an id")
            chosen.append(matches[0])
        removed = [self.library.remove_document(d.id) for d in chosen]
        uploads = self.library.home / "uploads"
        for document in removed:  # an uploaded copy goes with its document
            if Path(document.source).parent.parent == uploads:
                Path(document.source).unlink(missing_ok=True)
        return removed

    def remove_collection(self, collection: str) -> int:
        try:
            return self.library.remove_collection(collection)
        except StorageError as error:
            raise UserError(str(error)) from error

    def document(self, document_id: int) -> Document:
        document = self.library.document(document_id, with_text=True)
        if document is None or document.status != "ingested":
            raise UserError(f"document {document_id} is no longer in the library")
        return document

    # ----------------------------------------------------------------- citations and pages

    def evidence(self, document_id: int, start: int, end: int, page: int | None = None, context: int = 600) -> Evidence:
        """The span ``[start, end)`` of the document with up to ``context`` characters either side, cut at word
        boundaries and, when ``page`` is given, kept inside that page."""
        document = self.document(document_id)
        text = document.text
        if not 0 <= start < end <= len(text):
            raise UserError(f"characters {start}-{end} are outside document {document_id} ({len(text)} characters)")
        low, high = 0, len(text)
        if page is not None:
            low, high = page_span(self.library, document_id, page) or (low, high)
        first, last = max(low, start - context), min(high, end + context)
        if first > low:  # start after the first whitespace, not inside a word
            first = next((m.end() for m in re.finditer(r"\s+", text[first:start])), 0) + first
        if last < high:
            last = next((end + m.start() for m in re.finditer(r"\s+\S*$", text[end:last])), last)
        return Evidence(
            document_id,
            document.title,
            document.kind,
            page,
            text[first:start],
            text[start:end],
            text[end:last],
            first > low,
            last < high,
        )

    def render_page(self, document_id: int, page: int, scale: float = 1.5) -> Image.Image:
        """Page ``page`` (1-based) of the document's PDF, from its stored or uploaded file, as an image."""
        document = self.document(document_id)
        if document.kind != "pdf":
            raise UserError(f"'{document.title}' is not a PDF: it has no pages to show")
        if not 1 <= page <= document.pages:
            raise UserError(f"'{document.title}' has pages 1-{document.pages}, not {page}")
        data = self._source_bytes(document)
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
            return pdf[page - 1].render(scale=scale).to_pil()
        finally:
            pdf.close()

    @staticmethod
    def _source_bytes(document: Document) -> bytes:
        """The bytes of the document's source: a file, or a member of a (nested) zip archive ``a.zip!b/c.pdf``."""
        path, *members = [document.source] if Path(document.source).exists() else document.source.split("!")
        try:
            data = Path(path).read_bytes()
            for member in members:
                with zipfile.ZipFile(io.BytesIO(data)) as archive:
                    data = archive.read(member)
        except (OSError, KeyError, zipfile.BadZipFile) as error:
            raise UserError(
                f"the file of '{document.title}' is gone ({document.source}): ingest it again to see its pages"
            ) from error
        return data

    # ----------------------------------------------------------------- ingestion

    def ingest(
        self,
        paths: Iterable[Path],
        collection: str,
        password: str | None = None,
        limits: Limits | None = None,
        workers: int = 2,
    ) -> Iterator[IngestEvent]:
        """Ingest files, folders and zip archives into ``collection``, yielding one event per input."""
        if not collection.strip():
            raise UserError("--collection needs a non-empty name")
        limits = limits or Limits()
        self.library.ensure_collection(collection)
        inputs = list(expand_inputs([Path(p).expanduser().resolve() for p in paths], limits))
        total = len(inputs)
        index = 0
        to_parse: list[InputItem] = []
        for entry in inputs:
            if isinstance(entry, IngestError):
                index += 1
                result = self.library.record_error(collection, entry.source, entry.reason)
                yield IngestEvent(index, total, entry.source, "error", result.message, result.document_id)
            elif self.library.is_unchanged(collection, entry.source, file_hash(entry)):
                index += 1
                yield IngestEvent(index, total, entry.source, "unchanged", "unchanged since the last ingest")
            else:
                to_parse.append(entry)
        for item, results, seconds in parse_items_isolated(to_parse, password, limits, workers):
            index += 1
            if not results:
                results = [IngestError(item.source, "no text found")]
            for result in results:
                yield self._store(collection, result, index, total, seconds / len(results))

    def uploads_dir(self, collection: str) -> Path:
        """Where uploaded files of ``collection`` are kept under the names their users gave them."""
        safe = re.sub(r"[^\w.-]+", "_", collection).strip("._") or "collection"
        return self.library.home / "uploads" / safe

    def ingest_uploads(
        self, files: Iterable[Path], collection: str, password: str | None = None, limits: Limits | None = None
    ) -> Iterator[IngestEvent]:
        """Ingest uploaded temporary files: each is first copied into ``uploads_dir`` under its own name, so a
        changed file uploaded again replaces its earlier version instead of adding a second document."""
        target = self.uploads_dir(collection)
        target.mkdir(parents=True, exist_ok=True)
        staged: list[Path] = []
        for file in files:
            destination = target / Path(file).name
            if destination in staged:  # two uploads with the same name in one batch
                destination = target / f"{destination.stem}-{len(staged)}{destination.suffix}"
            shutil.copyfile(file, destination)
            staged.append(destination)
        yield from self.ingest(staged, collection, password, limits)

    def ingest_texts(self, documents: Iterable[ParsedDocument], collection: str) -> Iterator[IngestEvent]:
        """Store documents already parsed in memory (e.g. the embedded standard-library sample)."""
        documents = list(documents)
        for index, parsed in enumerate(documents, start=1):
            yield self._store(collection, parsed, index, len(documents), 0.0)

    def _store(
        self, collection: str, result: ParsedDocument | IngestError, index: int, total: int, seconds: float
    ) -> IngestEvent:
        if isinstance(result, IngestError):
            stored = self.library.record_error(collection, result.source, result.reason)
            return IngestEvent(
                index, total, result.source, "error", stored.message, stored.document_id, seconds=seconds
            )
        stored = self.library.store(collection, result)
        message = stored.message or "; ".join(result.warnings)
        return IngestEvent(
            index,
            total,
            result.source,
            stored.status,
            message,
            stored.document_id,
            pages=len(result.pages),
            tokens=int(len(result.token_ids)),
            sentences=len(result.sentences),
            needs_ocr_pages=result.needs_ocr_pages,
            seconds=seconds,
        )

    @staticmethod
    def summarize_events(events: list[IngestEvent], seconds: float) -> IngestSummary:
        fresh = [e for e in events if e.status in ("ingested", "replaced")]
        return IngestSummary(
            files=len(events),
            ingested=len(fresh),
            unchanged=sum(e.status in ("unchanged", "duplicate") for e in events),
            errors=sum(e.status == "error" for e in events),
            pages=sum(e.pages for e in fresh),
            tokens=sum(e.tokens for e in fresh),
            seconds=seconds,
        )

    # ----------------------------------------------------------------- questions

    @staticmethod
    def readers() -> list[str]:
        """The readers that can run here ("indexpool" only when the model checkpoint is installed)."""
        return available_readers()

    @staticmethod
    def default_reader() -> str:
        """The trained model ("indexpool") when its checkpoint is installed, else the BM25 baseline."""
        return "indexpool" if "indexpool" in available_readers() else "bm25"

    @staticmethod
    def check_generator(spec: str) -> str:
        """``spec`` stripped, after checking that it names a generator (or none: "" or "off")."""
        try:
            parse_generator(spec)
        except ValueError as error:
            raise UserError(str(error)) from error
        return spec.strip()

    def generator_choices(self) -> list[str]:
        """The generators a user of the app may choose: "off", and the app's own when it has one."""
        return ["off", self.generator] if self.generator not in ("", "off") else ["off"]

    def ask(
        self,
        collections: list[str],
        question: str,
        top_k: int = 5,
        reader: str | None = None,
        session_id: int | None = None,
        user: str = "",
        generator: str = "",
    ) -> AskResult:
        """Answer ``question`` over ``collections`` with ``reader`` (by default ``default_reader()``; the answer's
        ``reader`` says which ran); the answer (in ``session_id`` when given, a session of ``user``) and a metric
        record are stored. With a ``generator`` spec (see ``app.generators``) and at least one citation, the
        generator also writes prose from the citations (``generated``; its time is ``timings_ms["generate"]``); when
        it fails, ``GenerationFailed`` carries the extractive answer, which is stored all the same."""
        reader = reader or self.default_reader()
        if not question.strip():
            raise UserError("the question is empty")
        if not collections:
            raise UserError("choose at least one collection to ask over")
        if top_k < 1 or top_k > 100:
            raise UserError(f"top-k must be between 1 and 100, got {top_k}")
        if reader not in READERS:
            raise UserError(f"unknown reader '{reader}' (readers: {', '.join(READERS)})")
        try:
            writer = parse_generator(generator)
        except ValueError as error:
            raise UserError(str(error)) from error
        if session_id is not None:
            self._sessions_call("check", session_id, user)
        started = time.perf_counter()
        try:
            extractive = READERS[reader]().answer(self.library, collections, question, top_k)
        except (StorageError, ReaderUnavailable) as error:
            raise UserError(str(error)) from error
        answer = AskResult(**{f.name: getattr(extractive, f.name) for f in fields(Answer)})
        failure, ran = None, ""
        if writer is not None and answer.citations:
            ran = writer.name
            generating = time.perf_counter()
            try:
                answer.generated = Generated(writer.generate(question, answer.citations), writer.name)
            except GeneratorError as error:
                failure = GenerationFailed(f"generator {writer.name} failed: {error}", answer)
            answer.timings_ms.pop("total", None)  # "total" stays the last stage
            answer.timings_ms["generate"] = round((time.perf_counter() - generating) * 1000, 2)
        answer.timings_ms["total"] = round((time.perf_counter() - started) * 1000, 2)
        self._record_answer(collections, question, answer, top_k, session_id, ran)
        if session_id is not None:
            self.sessions.touch(session_id)
        if failure is not None:
            raise failure
        return answer

    # ----------------------------------------------------------------- summaries

    def summarize(
        self,
        collection: str,
        document_ids: list[int] | None,
        budget_words: int,
        summarizer: str = "indexpool",
        user: str = "",
        progress: SummaryProgress | None = None,
    ) -> Summary:
        """Summarize each chosen document of ``collection`` (all of them when ``document_ids`` is empty) within
        ``budget_words`` words; the summary is stored (a ``SummaryRow``) with a metric record."""
        from app.summarize import interactive_summarizer, summarize_document

        if not 1 <= budget_words <= MAX_BUDGET_WORDS:
            raise UserError(f"the word budget must be between 1 and {MAX_BUDGET_WORDS}, got {budget_words}")
        documents = [d for d in self.documents(collection) if d.status == "ingested"]
        if document_ids:
            known = {d.id for d in documents}
            missing = [str(i) for i in document_ids if i not in known]
            if missing:
                raise UserError(f"no ingested document {', '.join(missing)} in collection '{collection}'")
            documents = [d for d in documents if d.id in set(document_ids)]
        if not documents:
            raise UserError(f"collection '{collection}' has no ingested documents to summarize")
        started = time.perf_counter()
        model, label = interactive_summarizer(summarizer)
        scope = "collection" if not document_ids else "document" if len(documents) == 1 else "selection"
        result = Summary(0, scope, collection, model.name, label, budget_words)
        for index, document in enumerate(documents):
            if progress is not None:
                progress(index, len(documents), document.title)
            parsed = parsed_document(self.library, document.id)
            if parsed is None:
                raise UserError(f"document {document.id} is no longer in the library")
            try:
                done = summarize_document(parsed, model, budget_words=budget_words)
            except ValueError as error:  # nothing to summarize, or a summarizer quoting outside the document
                result.documents.append(DocumentSummary(document.id, document.title, [], None, str(error)))
                continue
            result.documents.append(DocumentSummary(document.id, document.title, done.sentences, done.rouge))
        result.seconds = time.perf_counter() - started
        result.id = self._store_summary(result, user)
        return result

    def _store_summary(self, result: Summary, user: str) -> int:
        summarized = [d for d in result.documents if not d.error]
        scored = [d.rouge for d in summarized if d.rouge]
        words = sum(len(s["text"].split()) for d in summarized for s in d.sentences)
        with self.library.session() as session, session.begin():
            row = SummaryRow(
                scope=result.scope,
                document_ids=[d.document_id for d in result.documents],
                collection=result.collection,
                summary="\n\n".join("\n".join(" ".join(s["text"].split()) for s in d.sentences) for d in summarized),
                citations=[{"doc": d.document_id, "title": d.title, **s} for d in summarized for s in d.sentences],
                settings={
                    "summarizer": result.summarizer,
                    "label": result.label,
                    "budget_words": result.budget_words,
                    "user": user,
                },
                scores={str(d.document_id): d.rouge for d in summarized if d.rouge},
            )
            session.add(row)
            session.add(
                MetricRecord(
                    kind="summarize",
                    collection=result.collection,
                    total_ms=round(result.seconds * 1000, 2),
                    data={
                        "summarizer": result.summarizer,
                        "label": result.label,
                        "documents": len(result.documents),
                        "errors": len(result.documents) - len(summarized),
                        "budget_words": result.budget_words,
                        "words": words,
                        "rouge": {k: round(sum(r[k] for r in scored) / len(scored), 4) for k in scored[0]}
                        if scored
                        else None,
                        "timings_ms": {"summarize": round(result.seconds * 1000, 2)},
                    },
                )
            )
            session.flush()
            return row.id

    # ----------------------------------------------------------------- settings

    def settings(self, user: str = "") -> dict[str, Any]:
        """The settings of ``user``: the defaults, overridden by what the user saved."""
        try:
            stored = self.settings_store.load(user)
        except StorageError as error:
            raise UserError(str(error)) from error
        settings = DEFAULT_SETTINGS | {k: v for k, v in stored.items() if k in DEFAULT_SETTINGS}
        generator = settings["generator"]  # a generator the app no longer offers falls back to its default
        if generator not in self.generator_choices():
            generator = self.generator_choices()[-1]
        return settings | {"reader": settings["reader"] or self.default_reader(), "generator": generator}

    @staticmethod
    def preset_weights(preset: str) -> tuple[float, float, float]:
        """α, β, γ of the IndexPool preset ``preset``."""
        from model.indexpool.config import IndexPoolConfig

        try:
            config = IndexPoolConfig.preset(preset)
        except ValueError as error:
            raise UserError(str(error)) from error
        return config.alpha, config.beta, config.gamma

    def save_settings(self, values: dict[str, Any], user: str = "") -> dict[str, Any]:
        """Validate and store ``values`` (any subset of the settings) for ``user``; returns all their settings."""
        from model.evaluation.systems import SUMMARIZERS
        from model.indexpool.config import PRESETS, IndexPoolConfig

        unknown = sorted(set(values) - set(DEFAULT_SETTINGS))
        if unknown:
            raise UserError(f"unknown settings: {', '.join(unknown)}")
        merged = self.settings(user) | values
        if merged["preset"] not in PRESETS:
            raise UserError(f"unknown preset '{merged['preset']}' (presets: {', '.join(PRESETS)})")
        weights = {"α": merged["alpha"], "β": merged["beta"], "γ": merged["gamma"]}
        for name, weight in weights.items():
            if not isinstance(weight, int | float) or not 0 <= weight <= 1:
                raise UserError(f"{name} must be a number between 0 and 1, got {weight}")
        if abs(sum(weights.values()) - 1) > 0.01:
            raise UserError(f"α + β + γ must add up to 1, got {sum(weights.values()):.2f}")
        if merged["ratio"] not in (1, 2, 4, 8):
            raise UserError(f"the pooling ratio must be 1, 2, 4 or 8, got {merged['ratio']}")
        top_k = merged["top_k"]
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 100:
            raise UserError(f"top-k must be a whole number between 1 and 100, got {merged['top_k']}")
        if not isinstance(merged["int8"], bool):
            raise UserError(f"INT8 must be on or off, got {merged['int8']}")
        if merged["reader"] not in READERS:
            raise UserError(f"unknown reader '{merged['reader']}' (readers: {', '.join(READERS)})")
        if merged["summarizer"] not in SUMMARIZERS:
            raise UserError(f"unknown summarizer '{merged['summarizer']}' (summarizers: {', '.join(SUMMARIZERS)})")
        if merged["generator"] not in self.generator_choices():  # users choose among what the app was started with
            raise UserError(
                f"unknown generator '{merged['generator']}' (this app offers: {', '.join(self.generator_choices())}; "
                "start it with `indexpool serve --generator SPEC` to offer another)"
            )
        try:
            IndexPoolConfig.preset(
                merged["preset"],
                alpha=float(merged["alpha"]),
                beta=float(merged["beta"]),
                gamma=float(merged["gamma"]),
                ratio=merged["ratio"],
                int8=merged["int8"],
            )
        except ValueError as error:
            raise UserError(str(error)) from error
        default_generator = self.generator_choices()[-1]  # stored as "": it follows the app's generator
        stored = merged | {"generator": "" if merged["generator"] == default_generator else merged["generator"]}
        try:
            self.settings_store.save(stored, user)
        except (OSError, StorageError) as error:
            raise UserError(f"cannot save the settings: {error}") from error
        return merged

    # ----------------------------------------------------------------- metrics

    def metrics(self) -> list[dict[str, Any]]:
        """The recorded requests (asks, summaries, benchmarks), oldest first."""
        return metric_records(self.library)

    def cache_memory(self, ratio: int = 4) -> list[dict[str, Any]]:
        """Per collection, the indexer key-cache bytes of its documents (each its own context) uncompressed, with
        IndexPool at ``ratio``:1, and with INT8 entries: ``[{"collection", "method", "bytes"}]``."""
        from model.indexpool.config import IndexPoolConfig

        try:
            methods = {
                "uncompressed": (IndexPoolConfig(), False),
                f"IndexPool {ratio}:1": (IndexPoolConfig(ratio=ratio), True),
                f"IndexPool {ratio}:1 INT8": (IndexPoolConfig(ratio=ratio, int8=True), True),
            }
        except ValueError as error:
            raise UserError(str(error)) from error
        rows = []
        for info in self.collections():
            tokens = [d.tokens for d in self.documents(info.name) if d.status == "ingested"]
            for method, (cfg, compressed) in methods.items():
                size = sum(indexer_cache_bytes(t, cfg, compressed) for t in tokens)
                rows.append({"collection": info.name, "method": method, "bytes": size})
        return rows

    def run_indexer_bench(self, tokens: int, queries: int = 8, steps: int = 5) -> dict[str, Any]:
        """``indexpool bench`` at one context length (few queries and timed steps, so that it takes seconds on a
        CPU once the encoder states are cached); its result for that length, also stored as a "bench" metric."""
        from model.indexpool import bench

        low, high = BENCH_TOKENS
        if not low <= tokens <= high:
            raise UserError(f"the benchmark length must be between {low:,} and {high:,} tokens, got {tokens:,}")
        parser = argparse.ArgumentParser()
        bench.add_arguments(parser)
        args = parser.parse_args(["--tokens", str(tokens), "--queries", str(queries), "--steps", str(steps), "--json"])
        out, err = io.StringIO(), io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = bench.run(args)
        seconds = time.perf_counter() - started
        if status != 0:
            reason = next((line for line in reversed(err.getvalue().splitlines()) if line.strip()), f"status {status}")
            raise UserError(f"the indexer benchmark failed: {reason.removeprefix('indexpool bench: ')}")
        printed = out.getvalue()  # progress lines, then the JSON list of results
        (result,) = json.loads(printed[printed.index("\n[") + 1 if not printed.startswith("[") else 0 :])
        with self.library.session() as session, session.begin():
            session.add(
                MetricRecord(
                    kind="bench",
                    total_ms=round(seconds * 1000, 2),
                    data={"tokens": tokens, "methods": result["methods"], "setting": result["setting"]},
                )
            )
        return result

    # ----------------------------------------------------------------- chat sessions

    def _sessions_call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self.sessions, method)(*args)
        except StorageError as error:
            raise UserError(str(error)) from error

    def create_session(self, name: str, user: str = "") -> SessionInfo:
        return self._sessions_call("create", name, user)

    def list_sessions(self, user: str = "") -> list[SessionInfo]:
        return self.sessions.list(user)

    def rename_session(self, session_id: int, name: str, user: str = "") -> SessionInfo:
        return self._sessions_call("rename", session_id, name, user)

    def delete_session(self, session_id: int, user: str = "") -> None:
        self._sessions_call("delete", session_id, user)

    def session_history(self, session_id: int, user: str = "") -> list[dict[str, Any]]:
        return self._sessions_call("history", session_id, user)

    def export_session(self, session_id: int, fmt: str, user: str = "") -> str:
        return self._sessions_call("export", session_id, fmt, user)

    def _record_answer(
        self,
        collections: list[str],
        question: str,
        answer: AskResult,
        top_k: int,
        session_id: int | None,
        generator: str = "",
    ) -> None:
        """Store the answer with its citations and a metric record; ``generator`` names the generator that ran."""
        ran = {"generator": generator} if generator else {}
        with self.library.session() as session, session.begin():
            row = AnswerRow(
                session_id=session_id,
                question=question,
                collections=collections,
                answer=answer.answer,
                generated=answer.generated.text if answer.generated is not None else None,
                reader=answer.reader,
                settings={"top_k": top_k} | ran,
                timings_ms=answer.timings_ms,
            )
            row.citations = [
                CitationRow(
                    rank=i,
                    document_id=c.doc,
                    source=c.source,
                    title=c.title,
                    page=c.page,
                    start=c.start,
                    end=c.end,
                    text=c.text,
                    score=c.score,
                )
                for i, c in enumerate(answer.citations)
            ]
            session.add(row)
            session.add(
                MetricRecord(
                    kind="ask",
                    session_id=session_id,
                    collection=",".join(collections),
                    total_ms=answer.timings_ms["total"],
                    data={"timings_ms": answer.timings_ms, "reader": answer.reader} | ran,
                )
            )
