"""Questions over collections: the readers that answer them, and the ask service that runs one and records it.

    services.ask.ask(["papers"], "Which dataset did they train on?", top_k=5)

A reader turns a question into an extractive answer with citations; every citation is a sentence of the library
(its document, page and character span), and the answer is made of cited sentences, each followed by its number.

- ``bm25``: BM25 (SQLite FTS5, Porter stemming) over the sentences of the chosen collections.
- ``indexpool``: the trained model (``model.inference.qa``) over the collections' index (``app.services.indexes``):
  the question's read (its tokens through the hybrid stack, each sparse layer selecting collection tokens through
  the IndexPool indexer's tier 1 and attending to their keys and values, fetched through tiers 2-3) and the other
  evidence terms rank the passages, each cited by its best sentence. It runs only where the checkpoint is installed;
  ``Answer.read`` says what the read cost (tier-2 hits, bytes read, tokens attended, tier-1 bytes, the device).

``AskService.ask`` checks the request, runs the reader, optionally a generator writing prose from the citations
(``app.generators``), and records the answer in the user's session (``storage.sessions``) with a metric record.
``timings_ms`` holds each stage and, last, ``total``: the whole request up to recording it.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from app.generators import GeneratorError, parse_generator
from app.services.errors import UserError, storage_errors
from app.services.indexes import IndexService
from app.services.sessions import SessionService
from ingest.segment import turn_speakers
from model.network.paths import indexpool_checkpoint
from storage.library import Library, search_words
from storage.metrics import MetricStore

if TYPE_CHECKING:
    from app.services.shards import ShardGroup
    from model.inference.qa import Cited
    from model.network.checkpoint import Model

NO_ANSWER = "No sentence in the chosen collections matches the question."
LOW_CONFIDENCE = (
    "No confident answer: no passage of the chosen collections holds enough of the question's words (the best holds"
    " {held:.0%} of their weight, an answer needs {needed:.0%}) or comes close to it in meaning. The closest passages"
    " are cited below."
)
NO_SHARED_WORDS = (
    "No confident answer: no passage of the chosen collections shares more than one of the question's words or"
    " comes close to it in meaning. The closest passages are cited below."
)

NO_SHARED_WORD_SENTENCE = (
    "No confident answer: the best sentence of the chosen collections and those beside it hold only one of the"
    " question's words. The closest sentences are cited below."
)


@dataclass
class Citation:
    doc: int  # document id in the library
    source: str
    title: str
    page: int | None
    start: int  # character span in the document's extracted text
    end: int
    text: str  # == document text[start:end], a sentence of the library
    score: float
    speaker: str = ""  # a transcript's: who speaks the turn the sentence is in, when the sentence does not name them


@dataclass
class Generated:
    """Prose a generator wrote from an answer's citations (which it cites as [1]..[n])."""

    text: str
    generator: str  # the generator's name, e.g. "hf:/models/qwen"


@dataclass
class Answer:
    answer: str
    citations: list[Citation]
    reader: str
    timings_ms: dict[str, float] = field(default_factory=dict)
    generated: Generated | None = None  # when a generator ran
    read: dict[str, Any] | None = None  # the IndexPool reader's read: tiers, bytes, tokens, device
    confident: bool = True  # False: the best passage holds too little of the question; the citations are the closest

    def to_json(self) -> dict[str, Any]:
        """The documented ``ask --json`` object; ``generated`` only when a generator ran."""
        data = {
            "answer": self.answer,
            "citations": [asdict(c) for c in self.citations],
            "timings_ms": self.timings_ms,
            "reader": self.reader,
            "confident": self.confident,
        }
        if self.generated is not None:
            data["generated"] = asdict(self.generated)
        if self.read is not None:
            data["read"] = self.read
        return data


class GenerationFailed(UserError):
    """The generator failed; ``answer`` is the extractive answer, which stands (and was recorded)."""

    def __init__(self, message: str, answer: Answer) -> None:
        super().__init__(message)
        self.answer = answer


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def _quote(citations: list[Citation]) -> str:
    return " ".join(f"{spoken(c)} [{i + 1}]" for i, c in enumerate(citations))


def spoken(citation: Citation) -> str:
    """The cited sentence as a reader shows it: after its speaker in a transcript ("Industrial Designer: Um my
    favourite animal … is a cow .")."""
    return f"{citation.speaker}: {citation.text}" if citation.speaker else citation.text


# Characters read before a cited sentence for the turn that holds it (an earnings call's turn under its "Name - Title
# Speaking." line runs to 10,000 characters and more), and after it (the lines around it, for the transcript rule)
TURN_CHARS_BEFORE, TURN_CHARS_AFTER = 30_000, 3000


def with_speakers(library: Library, citations: list[Citation]) -> list[Citation]:
    """``citations``, each with the speaker of its transcript turn (``ingest.segment.turn_speakers``, read in a
    window around it) when the sentence does not begin with the label itself: in a meeting, "Um my favourite animal
    is a cow ." says nothing of who said it."""
    firsts = [max(0, c.start - TURN_CHARS_BEFORE) for c in citations]
    speakers: dict[int, str] = {}  # citation's position → speaker, each document's windows read in one query
    for doc in dict.fromkeys(c.doc for c in citations):
        mine = [i for i, c in enumerate(citations) if c.doc == doc]
        windows = library.text_windows(doc, [(firsts[i], citations[i].end + TURN_CHARS_AFTER) for i in mine])
        for i, window in zip(mine, windows, strict=True):
            at = citations[i].start - firsts[i]
            (label,) = turn_speakers(window, [at])
            speakers[i] = "" if window.startswith(label, at) else label
    return [replace(c, speaker=speakers[i]) for i, c in enumerate(citations)]


# ----------------------------------------------------------------------------------------------- readers


class Reader(Protocol):
    name: str

    def answer(self, collections: list[str], question: str, top_k: int, user: str = "") -> Answer:
        """The answer over ``collections`` as ``user`` sees them."""


class BM25Reader:
    """The answer is the best-scoring sentence(s) and the citations are the top-k sentences; not a confident one
    when the best sentence and the sentences beside it hold only one of the question's several words."""

    name = "bm25"

    def __init__(self, library: Library, answer_sentences: int = 2, relative_score: float = 0.8) -> None:
        self.library = library
        self.answer_sentences = answer_sentences  # at most this many sentences form the answer
        self.relative_score = relative_score  # ...each scoring at least this fraction of the best one

    def answer(self, collections: list[str], question: str, top_k: int, user: str = "") -> Answer:
        started = time.perf_counter()
        with storage_errors():
            hits = self.library.search_sentences(collections, question, limit=top_k, user=user)
        citations = [
            Citation(h.document_id, h.source, h.title, h.page, h.start, h.end, h.text, round(h.score, 4)) for h in hits
        ]
        with storage_errors():
            citations = with_speakers(self.library, citations)
        if not citations:
            return Answer(NO_ANSWER, [], self.name, {"retrieve": _ms(started)})
        timings = {"retrieve": _ms(started)}
        with storage_errors():
            held = self.library.words_held(hits[0], question)
        if held < min(2, len(search_words(question))):  # one shared word of several is chance, as for IndexPool
            return Answer(NO_SHARED_WORD_SENTENCE, citations, self.name, timings, confident=False)
        best = citations[0].score
        chosen = [c for c in citations[: self.answer_sentences] if c.score >= self.relative_score * best]
        return Answer(_quote(chosen), citations, self.name, timings)


class IndexPoolReader:
    """The trained model: citations are the best sentences of the best-scoring passages; the answer is the cited
    sentence of the best passage, followed by the second's when its score is within ``answer_margin`` of the best (and,
    when the question names a document, the second is of the same document as the first). With ``shards`` (a
    :class:`~app.services.shards.ShardGroup`) every rank reads its own documents and the answer is the same."""

    name = "indexpool"

    def __init__(self, library: Library, indexes: IndexService, answer_margin: float = 0.5) -> None:
        self.library, self.indexes, self.answer_margin = library, indexes, answer_margin
        self.shards: ShardGroup | None = None

    def answer(self, collections: list[str], question: str, top_k: int, user: str = "") -> Answer:
        timings: dict[str, float] = {}
        started = time.perf_counter()  # "load": the documents, then the model (imported and loaded once per process)
        sources: dict[int, tuple[str, str]] = {}  # document id → (source, title)
        entries: list[tuple[str, int, str]] = []
        with storage_errors():  # an unknown collection is reported before the model loads
            for collection in collections:
                for document in self.library.documents(collection, user):
                    if document.status == "ingested" and document.id not in sources:
                        sources[document.id] = (document.source, document.title)
                        entries.append((collection, document.id, document.content_hash))
        if not entries:
            return Answer(NO_ANSWER, [], self.name, {"load": _ms(started)})
        from model.network.checkpoint import CheckpointMissing, load_model  # torch: only when the model reads

        try:
            model = load_model()
        except CheckpointMissing as error:
            raise UserError(f"{error}; use --reader bm25") from error
        timings["load"] = _ms(started)
        if self.shards is not None:
            asking = time.perf_counter()
            with self.shards.question(model, question, entries, user, top_k) as (stream, names_document, stats):
                timings["shards"] = _ms(asking)
                return self._answer(model, stream, names_document, stats, sources, top_k, timings)
        from model.inference.qa import Question, cited, read
        from model.inference.read import read_figures

        indexing = time.perf_counter()  # the documents' indexes and read caches: memory, files, or built now
        index = self.indexes.index(model, entries)
        cache = self.indexes.read_cache(model, entries, user)
        timings["index"] = _ms(indexing)
        encoding = time.perf_counter()
        q = Question.encode(model, question, index)
        timings["encode_question"] = _ms(encoding)
        reading = read(model, index, cache, q)
        for stage, ms in reading.timings_ms.items():
            timings[f"read_{stage}"] = ms
        stats = read_figures(reading, cache)
        return self._answer(model, cited(model, index, q, reading), q.names_document, stats, sources, top_k, timings)

    def _answer(
        self,
        model: Model,
        ranking: Iterator[Cited],
        names_document: bool,
        stats: dict[str, Any],
        sources: dict[int, tuple[str, str]],
        top_k: int,
        timings: dict[str, float],
    ) -> Answer:
        """The answer from the ranked citations: the first ``top_k`` distinct sentences, the best one or two quoted."""
        scoring = time.perf_counter()
        hits: list[Cited] = []
        citations: list[Citation] = []
        quoted: set[str] = set()
        while len(citations) < top_k:  # a sentence quoted before (boilerplate, a risk factor on every page): skipped
            batch = list(itertools.islice(ranking, top_k - len(citations)))  # as many as still wanted
            if not batch:
                break
            with storage_errors():
                sentences = self.library.sentences_at([(int(h.document_id), h.sentence_number) for h in batch])
            for s, h in zip(sentences, batch, strict=True):
                text = " ".join(s.text.split())
                if text not in quoted:
                    quoted.add(text)
                    hits.append(h)
                    citations.append(
                        Citation(
                            s.document_id, *sources[s.document_id], s.page, s.start, s.end, s.text, round(h.score, 4)
                        )
                    )
        with storage_errors():
            citations = with_speakers(self.library, citations)
        timings["score"] = _ms(scoring)
        if not hits:
            return Answer(NO_ANSWER, [], self.name, timings, read=stats)
        chosen = [citations[0]]
        same_document = len(citations) > 1 and citations[1].doc == citations[0].doc
        if (
            len(citations) > 1
            and citations[1].score >= citations[0].score - self.answer_margin
            and (same_document or not names_document)  # "… does Borealis have?": Borealis's figures alone
        ):
            chosen.append(citations[1])
        if not hits[0].confident:
            held = hits[0].held
            text = LOW_CONFIDENCE.format(held=held, needed=model.weights.min_coverage) if held else NO_SHARED_WORDS
            return Answer(text, citations, self.name, timings, read=stats, confident=False)
        return Answer(_quote(chosen), citations, self.name, timings, read=stats)


READERS = ("bm25", "indexpool")


# ----------------------------------------------------------------------------------------------- the service


class AskService:
    def __init__(self, library: Library, sessions: SessionService, indexes: IndexService, generator: str = "") -> None:
        """``generator`` is the generator spec the app offers its users (``serve --generator``), "" for none."""
        self.library, self.sessions = library, sessions
        self.indexes = indexes
        self.readers = {"bm25": BM25Reader(library), "indexpool": IndexPoolReader(library, indexes)}
        self.metrics = MetricStore(library)
        self.generator = check_generator(generator)

    def use_shards(self, group: ShardGroup) -> None:
        """Answer with the IndexPool reader over ``group``'s ranks (``serve --shards``)."""
        self.readers["indexpool"].shards = group  # type: ignore[attr-defined]

    @staticmethod
    def available_readers() -> list[str]:
        """The readers that can run here: "indexpool" only when its checkpoint is installed."""
        return [name for name in READERS if name != "indexpool" or indexpool_checkpoint().is_file()]

    def default_reader(self) -> str:
        """The trained model ("indexpool") when its checkpoint is installed, else the BM25 baseline."""
        return "indexpool" if "indexpool" in self.available_readers() else "bm25"

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
    ) -> Answer:
        """Answer ``question`` over ``collections`` with ``reader`` (by default ``default_reader()``; the answer's
        ``reader`` says which ran); the answer (in ``session_id`` when given, a session of ``user``) and a metric
        record are stored. With a ``generator`` spec and at least one citation, the generator also writes prose
        from the citations (``generated``; its time is ``timings_ms["generate"]``); when it fails,
        ``GenerationFailed`` carries the extractive answer, which is stored all the same."""
        started = time.perf_counter()
        reader = reader or self.default_reader()
        if not isinstance(question, str) or not question.strip():
            raise UserError("the question is empty")
        if not any(len(w) > 1 or not w.isascii() for w in re.findall(r"\w+", question)):
            raise UserError(f"the question {question.strip()!r} holds no word to look for (two letters or more)")
        if not collections:
            raise UserError("choose at least one collection to ask over")
        if not isinstance(collections, list) or not all(isinstance(c, str) and c for c in collections):
            raise UserError(f"collections must be a list of collection names, got {collections!r}")
        if top_k < 1 or top_k > 100:
            raise UserError(f"top-k must be between 1 and 100, got {top_k}")
        if reader not in self.readers:
            raise UserError(f"unknown reader '{reader}' (readers: {', '.join(READERS)})")
        writer = parse_generator(check_generator(generator))
        if session_id is not None:
            self.sessions.check(session_id, user)
        result = self.readers[reader].answer(collections, question, top_k, user)
        failure = None
        if writer is not None and result.citations:
            generating = time.perf_counter()
            try:
                result.generated = Generated(writer.generate(question, result.citations), writer.name)
            except GeneratorError as error:
                failure = GenerationFailed(f"generator {writer.name} failed: {error}", result)
            result.timings_ms["generate"] = _ms(generating)
        ran = {"generator": writer.name} if writer is not None and result.citations else {}
        result.timings_ms["total"] = _ms(started)
        self.sessions.store.record_answer(
            session_id,
            question,
            collections,
            result.answer,
            result.generated.text if result.generated is not None else None,
            result.reader,
            {"top_k": top_k} | ran,
            result.timings_ms,
            [asdict(c) for c in result.citations],
        )
        self.metrics.add(
            "ask",
            result.timings_ms["total"],
            {"timings_ms": result.timings_ms, "reader": result.reader}
            | ran
            | ({"read": result.read} if result.read else {}),
            collection=",".join(collections),
            session_id=session_id,
            user=user,
        )
        if failure is not None:
            raise failure
        return result


def check_generator(spec: str) -> str:
    """``spec`` stripped, after checking that it names a generator (or none: "" or "off")."""
    try:
        parse_generator(spec)
    except ValueError as error:
        raise UserError(str(error)) from error
    return spec.strip()
