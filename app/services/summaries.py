"""Summaries of documents: whole library sentences in reading order, each cited by its span and page, with ROUGE
against the document's abstract (or a given reference) when there is one. Several documents (a selection or a
whole collection) get one summary within one budget (``model.inference.summarizers.choose_across``: each document's
best sentences in turn, a text quoted once), each sentence attributed to its document; it has no reference, so no
ROUGE.

Summaries are made from the body: headings, keywords, references and figure and table captions are left out, and
so are the abstract and the title block before it. A reference that is the document's own abstract
(``Reference.is_abstract``) has its copy in the document found by content (``ingest.abstract.strip_abstract``: many
papers carry their abstract untagged at the start of the first section) and cut from the input too, so a summary
cannot copy its reference.

``summarize_document`` serves the Summarize tab (``SummaryService``) and the batch command (``app.batch``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from app.services.errors import UserError
from app.services.library import LibraryService
from ingest.abstract import strip_abstract
from ingest.document import ParsedDocument
from ingest.segment import CAPTION, section_name
from model.inference.passages import DocumentText
from model.inference.rouge import rouge
from model.inference.summarizers import (
    SUMMARIZERS,
    Summarizer,
    SummarizerUnavailable,
    choose_across,
    make_summarizer,
)
from model.network.paths import indexpool_checkpoint
from storage.metrics import MetricStore
from storage.models import Document
from storage.summaries import SummaryStore

DEFAULT_BUDGET_WORDS = 150
MAX_BUDGET_WORDS = 2000
SUMMARIZER_LABELS = {
    "indexpool": "IndexPool model",
    "lead": "LEAD baseline",
    "lexrank": "LexRank baseline",
}
ROUGE_NAMES = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeLsum": "ROUGE-Lsum"}
_FRONT_MATTER = {"keywords", "key words", "index terms", "ccs concepts", "additional key words and phrases"}
_PIECE_BREAK = "\n\n"  # between sections
_PANEL = re.compile(r"\((?:[A-Za-z]|[ivx]+|\d{1,2})(?:, ?(?:[A-Za-z]|\d{1,2}))*\) ")  # a caption's "(B) ", "(D, E) "
_LINE_BREAK = "\n"  # between the parts of a section around a cut sentence
# A sentence about the call itself in a call's transcript: the operator's script, the safe-harbor notice.
_ABOUT_THE_CALL = re.compile(
    r"(?i)\b(?:conference call|earnings call|this call\b|listen-only|operator instructions|webcast|safe harbou?r"
    r"|forward-looking (?:statements?|information)|please go ahead|question-and-answer session"
    r"|turn (?:the )?(?:call|conference|floor|it) over to|non-GAAP financ\w* measures|no obligation to update"
    r"|forward-looking comments)"
)
_ENDED = re.compile(r"[.!?][\"'’”)\]]*\s*$")  # a sentence's last characters
# A transcript's turn label written as a sentence: "Bob Butchofsky Speaking." (a name is no summary).
_TURN_LABEL = re.compile(r"(?:[A-Z][\w.'’-]*\s){1,5}[Ss]peaking\W*")
CALL_MENTIONS = 3  # a document with this many sentences about the call is a call's transcript

SummaryProgress = Callable[[int, int, str], None]  # (documents done, documents in all, title of the next one)


# ------------------------------------------------------------------------------------------- one document


@dataclass(frozen=True)
class Reference:
    text: str  # one sentence per line, as ROUGE-Lsum expects
    kind: str  # "abstract" or "file"
    is_abstract: bool = False  # the document's own abstract (a ``<stem>.abstract.txt`` file): cut from the input


@dataclass(frozen=True)
class Body:
    """The text to summarize: pieces of the document text joined by line breaks (a blank line between sections),
    and its sentences, each a library sentence of the document (``sentences[i]`` is the body's sentence i)."""

    document: DocumentText  # the body text and its sentences, in body coordinates
    sentences: list[int]  # index of each body sentence among the document's sentences


def captions(document: ParsedDocument) -> frozenset[int]:
    """Indices of the document's sentences that are figure or table captions: from "Table 1: …" or "Figure 2." (the
    label split off as a sentence of its own: the next sentence of its paragraph too), and the sentences of its
    paragraph after it that describe a panel ("(B) They compose models …")."""
    found: set[int] = set()
    sentences = document.sentences
    for i, sentence in enumerate(sentences):
        label = CAPTION.match(document.text, sentence.start)
        if label is None:
            continue
        found.add(i)
        j = i + 1
        alone = label.end() >= sentence.end - 1
        while j < len(sentences) and sentences[j].paragraph == sentence.paragraph:
            if not (alone and j == i + 1) and not _PANEL.match(document.text, sentences[j].start):
                break
            found.add(j)
            j += 1
    return frozenset(found)


def about_the_call(document: ParsedDocument) -> frozenset[int]:
    """Indices of the sentences about the call itself ("… the conference is being recorded", "(Operator
    Instructions)", the forward-looking statements notice) when the document is a call's transcript: at least
    ``CALL_MENTIONS`` such sentences (a news story's one "conference call" is news)."""
    text, sentences = document.text, document.sentences
    found = {i for i, s in enumerate(sentences) if _ABOUT_THE_CALL.search(text, s.start, s.end)}
    if len(found) < CALL_MENTIONS:
        return frozenset()
    for i in sorted(found):  # a sentence too long for one, cut in pieces: the pieces after the one found
        while i + 1 < len(sentences) and not _ENDED.search(text, sentences[i].start, sentences[i].end):
            i += 1
            found.add(i)
    return frozenset(found)


def turn_labels(document: ParsedDocument) -> frozenset[int]:
    """Indices of the sentences that are a transcript's turn labels ("Karen Peterson Speaking.")."""
    text = document.text
    return frozenset(i for i, s in enumerate(document.sentences) if _TURN_LABEL.fullmatch(text, s.start, s.end))


def body_of(document: ParsedDocument, cut: frozenset[int] = frozenset()) -> tuple[Body, int | None]:
    """The document's sections without their headings, leaving out the abstract and what precedes it, keywords,
    references, figure and table captions ("Table 1: Test performances of …" says nothing without its table), a
    call transcript's sentences about the call (``about_the_call``), turn labels and the sentences whose indices are
    in ``cut``; and the index of the abstract section (None when there is none)."""
    abstract = next((i for i, s in enumerate(document.sections) if s.kind == "abstract"), None)
    cut = cut | captions(document) | about_the_call(document) | turn_labels(document)
    by_section: dict[int, list[int]] = {}
    for i, sentence in enumerate(document.sentences):
        if sentence.section is not None:
            by_section.setdefault(sentence.section, []).append(i)
    text, pieces, offset = document.text, [], 0
    spans, paragraphs, kept = [], [], []
    for index, section in enumerate(document.sections):
        if section.kind != "body" or section_name(section.title) in _FRONT_MATTER:
            continue
        if abstract is not None and index < abstract:
            continue
        start = section.start
        if section.title and text.startswith(section.title, start):
            start += len(section.title)
        members = by_section.get(index, [])
        bounds = [start]  # the section's text around its cut sentences: [bounds[0], bounds[1]), [bounds[2], ...
        for i in members:
            if i in cut:
                bounds += [document.sentences[i].start, document.sentences[i].end]
        bounds.append(section.end)
        separator = _PIECE_BREAK
        for piece_start, piece_end in zip(bounds[::2], bounds[1::2], strict=True):
            piece = text[piece_start:piece_end]
            stripped = piece.strip()
            if not stripped:
                continue
            if pieces:
                pieces.append(separator)
                offset += len(separator)
            origin = piece_start + len(piece) - len(piece.lstrip())
            for i in members:
                sentence = document.sentences[i]
                if i not in cut and origin <= sentence.start and sentence.end <= origin + len(stripped):
                    spans.append((sentence.start - origin + offset, sentence.end - origin + offset))
                    paragraphs.append(sentence.paragraph)
                    kept.append(i)
            pieces.append(stripped)
            offset += len(stripped)
            separator = _LINE_BREAK
    body = DocumentText.of(document.source, "".join(pieces), spans, paragraphs, document.title)
    return Body(body, kept), abstract


def abstract_copy(document: ParsedDocument, abstract: str) -> frozenset[int]:
    """Indices of the document's sentences that form its copy of ``abstract``; sentences outside any section (a
    title) are not considered."""
    candidates = [i for i, s in enumerate(document.sentences) if s.section is not None]
    spans = [document.sentences[i] for i in candidates]
    run, _ = strip_abstract([" ".join(document.text[s.start : s.end].split()) for s in spans], abstract)
    return frozenset(candidates[j] for j in run)


def abstract_reference(document: ParsedDocument, abstract: int) -> Reference | None:
    lines = [" ".join(document.text[s.start : s.end].split()) for s in document.sentences if s.section == abstract]
    return Reference("\n".join(lines), "abstract") if lines else None


def budget_for(body: str, reference: Reference | None, budget_words: int | None, ratio: float | None) -> int:
    """``budget_words``, else ``ratio`` of the body's words, else the reference's length, else the default."""
    if budget_words:
        return budget_words
    if ratio:
        return max(1, round(ratio * len(body.split())))
    return len(reference.text.split()) if reference else DEFAULT_BUDGET_WORDS


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
    summarizer: Summarizer,
    reference: Reference | None = None,
    budget_words: int | None = None,
    ratio: float | None = None,
) -> DocumentSummary:
    """Summarize the body of ``document`` (whole sentences until the budget is reached: the last may run past it);
    ``reference`` takes precedence over its abstract for ROUGE. ValueError when there is nothing to summarize."""
    cut = abstract_copy(document, reference.text) if reference is not None and reference.is_abstract else frozenset()
    body, abstract = body_of(document, cut)
    if not len(body.sentences):
        raise ValueError("no text to summarize outside the abstract and references")
    if reference is None and abstract is not None:
        reference = abstract_reference(document, abstract)
    budget = budget_for(body.document.text, reference, budget_words, ratio)
    result = DocumentSummary(cited(document, body, summarizer.choose(body.document, budget)), budget, reference, None)
    if reference is not None:
        result.rouge = {k: round(v, 4) for k, v in rouge(result.summary, [reference.text]).items()}
    return result


def cited(document: ParsedDocument, body: Body, chosen: list[int]) -> list[dict[str, Any]]:
    """The chosen body sentences as citations of ``document``: {"text", "start", "end", "page"}."""
    spans = [document.sentences[body.sentences[i]] for i in chosen]
    return [{"text": document.text[s.start : s.end], "start": s.start, "end": s.end, "page": s.page} for s in spans]


def load_summarizer(name: str) -> Summarizer:
    """The summarizer called ``name``; a UserError (never a substitute) when it cannot run here."""
    try:
        return make_summarizer(name)
    except SummarizerUnavailable as error:
        raise UserError(
            f"the {name} summarizer is unavailable: {error}; use --summarizer lead (or lexrank) for a baseline"
        ) from error
    except ValueError as error:
        raise UserError(str(error)) from error


def interactive_summarizer(name: str) -> tuple[Summarizer, str]:
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


# ------------------------------------------------------------------------------------------- the Summarize tab


@dataclass
class CollectionDocumentSummary:
    """One document's summary in the app; ``error`` says why it has none."""

    document_id: int
    title: str
    sentences: list[dict[str, Any]]
    rouge: dict[str, float] | None
    error: str | None = None


@dataclass
class Summary:
    id: int  # of the stored summary
    scope: str  # "document", "selection" or "collection"
    collection: str
    summarizer: str  # the summarizer that ran
    label: str  # how its output is labelled: the summarizer, or "baseline: lead (model checkpoint not installed)"
    budget_words: int  # of the whole summary (one summary of several documents, too)
    documents: list[CollectionDocumentSummary] = field(default_factory=list)  # each with its sentences of it
    seconds: float = 0.0


class SummaryService:
    def __init__(self, library: LibraryService) -> None:
        self.library = library
        self.store = SummaryStore(library.library)
        self.metrics = MetricStore(library.library)

    @staticmethod
    def summarizers() -> dict[str, str]:
        """Each summarizer with its label in the app."""
        return {name: SUMMARIZER_LABELS[name] for name in SUMMARIZERS}

    def summarize(
        self,
        collection: str,
        document_ids: list[int] | None,
        budget_words: int,
        summarizer: str = "indexpool",
        user: str = "",
        progress: SummaryProgress | None = None,
    ) -> Summary:
        """Summarize the chosen documents of ``collection`` (all of them when ``document_ids`` is empty) within
        ``budget_words`` words: one document's summary, or one summary of several; stored with a metric record."""
        if not 1 <= budget_words <= MAX_BUDGET_WORDS:
            raise UserError(f"the word budget must be between 1 and {MAX_BUDGET_WORDS}, got {budget_words}")
        documents = self.library.ingested(collection, user)
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
        if len(documents) == 1:  # a collection of one document too: scored against its abstract
            self._one(result, documents[0], model, progress)
        else:
            self._across(result, documents, model, progress)
        result.seconds = time.perf_counter() - started
        result.id = self._store(result, user)
        return result

    def _parsed(self, document_id: int) -> ParsedDocument:
        parsed = self.library.library.parsed_document(document_id)
        if parsed is None:
            raise UserError(f"document {document_id} is no longer in the library")
        return parsed

    def _one(self, result: Summary, document: Document, model: Summarizer, progress: SummaryProgress | None) -> None:
        """One document's summary, with ROUGE against its abstract when it has one."""
        if progress is not None:
            progress(0, 1, document.title)
        try:
            done = summarize_document(self._parsed(document.id), model, budget_words=result.budget_words)
        except ValueError as error:  # nothing to summarize
            result.documents.append(CollectionDocumentSummary(document.id, document.title, [], None, str(error)))
            return
        result.documents.append(CollectionDocumentSummary(document.id, document.title, done.sentences, done.rouge))

    def _across(
        self, result: Summary, documents: list[Document], model: Summarizer, progress: SummaryProgress | None
    ) -> None:
        """One summary of several documents within the budget, each sentence under its document (see the module
        docstring); a document with nothing to summarize is listed with the reason."""
        parsed, bodies = [], []
        for document in documents:
            one = self._parsed(document.id)
            body, _ = body_of(one)
            if not len(body.sentences):
                error = "no text to summarize outside the abstract and references"
                result.documents.append(CollectionDocumentSummary(document.id, document.title, [], None, error))
                continue
            parsed.append((document, one))
            bodies.append(body)

        ranked = count()

        def ranking(d: int) -> None:
            if progress is not None:
                progress(next(ranked), len(parsed), parsed[d][0].title)

        chosen: dict[int, list[int]] = {}
        for d, i in choose_across(model, [b.document for b in bodies], result.budget_words, ranking):
            chosen.setdefault(d, []).append(i)
        for d, (document, one) in enumerate(parsed):  # a document none of whose sentences made it: listed, empty
            sentences = cited(one, bodies[d], chosen.get(d, []))
            result.documents.append(CollectionDocumentSummary(document.id, document.title, sentences, None))

    def _store(self, result: Summary, user: str) -> int:
        summarized = [d for d in result.documents if not d.error]
        scored = [d.rouge for d in summarized if d.rouge]
        words = sum(len(s["text"].split()) for d in summarized for s in d.sentences)
        summary_id = self.store.add(
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
        self.metrics.add(
            "summarize",
            result.seconds * 1000,
            {
                "summarizer": result.summarizer,
                "label": result.label,
                "documents": len(result.documents),
                "errors": len(result.documents) - len(summarized),
                "budget_words": result.budget_words,
                "words": words,
                "rouge": {k: round(sum(r[k] for r in scored) / len(scored), 4) for k in scored[0]} if scored else None,
                "timings_ms": {"summarize": round(result.seconds * 1000, 2)},
            },
            collection=result.collection,
            user=user,
        )
        return summary_id
