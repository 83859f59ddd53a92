"""The indexes the IndexPool reader reads: one per document, built once, when the document is ingested.

    services.indexes.background()             # the web app: a thread indexes every document not indexed yet,
    services.indexes.schedule([document_id])  # ...and each document ingested from then on
    services.indexes.build(document_ids, progress)   # the CLI: in the foreground, after ingest
    services.indexes.progress(["papers"], user)      # how far the indexing of collections has come
    services.indexes.index(model, entries)    # a question's selection: the concatenation of its documents' indexes

A document's index is kept on disk (``storage.indexes``, keyed by the checkpoint, the document id and its content
hash, so it is never used for a document that changed) and in memory; a selection's index is keyed by its
fingerprint, so a question never re-concatenates a selection asked before. A document not indexed yet when a
question reaches it is indexed then (the question waits for it).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.services.errors import UserError, storage_errors
from model.inference.passages import DocumentText
from model.network.paths import indexpool_checkpoint
from storage.indexes import IndexStore
from storage.library import Library

if TYPE_CHECKING:  # torch: imported when an index is built or loaded, so that the CLI starts fast
    from model.inference.qa import CollectionIndex
    from model.network.checkpoint import Model

MEMORY_SELECTIONS = 4  # selection indexes kept in memory
MEMORY_DOCUMENTS = 4096  # document indexes kept in memory
log = logging.getLogger(__name__)


def fingerprint(entries: Sequence[tuple[str, int, str]], weights_id: str) -> str:
    """sha256 of the selection's sorted (collection, document id, content hash) and the checkpoint's weights id."""
    digest = hashlib.sha256(weights_id.encode())
    for collection, document_id, content_hash in sorted(entries):
        digest.update(f"\0{collection}\0{document_id}\0{content_hash}".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class IndexProgress:
    """How far the indexing of some collections' documents has come."""

    ready: int  # documents indexed
    total: int  # documents to index
    state: str  # "ready", "building", "pending" (indexed at the first question), "loading" (the model), "off"

    @property
    def done(self) -> bool:
        return self.state in ("ready", "off")

    def text(self) -> str:
        """One line for the user."""
        if self.state == "off":
            return "IndexPool index: off (the model checkpoint is not installed; BM25 answers)"
        if self.total == 0:
            return "IndexPool index: no documents yet"
        counts = f"{self.ready} of {self.total} documents"
        if self.state == "ready":
            return f"IndexPool index: ready ({counts})"
        if self.state == "loading":
            return f"IndexPool index: loading the model before indexing {self.total} documents"
        if self.state == "building":
            return f"IndexPool index: building, {counts} indexed; a question now waits for the rest"
        return f"IndexPool index: {counts} indexed; the rest are indexed at the first question"


class IndexService:
    def __init__(self, library: Library) -> None:
        self.library = library
        self.store = IndexStore(library.home)
        self._documents: OrderedDict[tuple[int, str], CollectionIndex] = OrderedDict()
        self._selections: OrderedDict[str, CollectionIndex] = OrderedDict()
        self._memory_lock = threading.Lock()
        self._build_lock = threading.Lock()  # one document encoded at a time, so none is encoded twice
        self._queue: deque[int] = deque()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._weights_id: str | None = None  # known once the model is loaded

    # ------------------------------------------------------------------ building

    def background(self) -> None:
        """Start the thread that indexes, one document at a time, every document of the library not indexed yet and
        then each scheduled one (the web app's; a no-op without the checkpoint or when already started)."""
        if self._thread is not None or not indexpool_checkpoint().is_file():
            return
        with storage_errors():
            every = [document_id for document_id, _ in self.library.ingested_documents()]
        with self._wake:
            self._queue.extend(every)
            self._thread = threading.Thread(target=self._run, name="indexpool-indexer", daemon=True)
        self._thread.start()

    def schedule(self, document_ids: Sequence[int]) -> None:
        """Queue documents for the background thread; without one (the CLI) nothing happens."""
        with self._wake:
            if self._thread is not None:
                self._queue.extend(document_ids)
                self._wake.notify()

    def _run(self) -> None:
        try:
            model = self._model()
        except UserError as error:
            log.warning("background indexing is off: %s", error)
            return
        self._prune(model.weights_id)
        while True:
            with self._wake:
                while not self._queue:
                    self._wake.wait()
                document_id = self._queue.popleft()
            try:
                document = self.library.document(document_id)
                if document is not None and document.status == "ingested":
                    self.document_index(model, document_id, document.content_hash)
            except UserError:  # the document left the library meanwhile
                continue
            except Exception:  # a defect must not end the indexing of every later document
                log.exception("indexing document %s failed", document_id)

    def building(self) -> bool:
        """Whether the background thread has documents left to index."""
        with self._wake:
            return self._thread is not None and (bool(self._queue) or self._build_lock.locked())

    def build(self, document_ids: Sequence[int], progress: Callable[[int, int, float], None] | None = None) -> int:
        """Index the documents of ``document_ids`` that are not indexed yet, in the foreground; ``progress(done,
        total, seconds)`` after each. The number of documents indexed now."""
        model = self._model()
        with storage_errors():
            documents = [self.library.document(i) for i in document_ids]
        missing = [
            (d.id, d.content_hash)
            for d in documents
            if d is not None and d.status == "ingested" and not self.store.has(model.weights_id, d.id, d.content_hash)
        ]
        started = time.perf_counter()
        for done, (document_id, content_hash) in enumerate(missing, start=1):
            self.document_index(model, document_id, content_hash)
            if progress is not None:
                progress(done, len(missing), time.perf_counter() - started)
        return len(missing)

    def _model(self) -> Model:
        from model.network.checkpoint import CheckpointMissing, load_model

        try:
            model = load_model()
        except CheckpointMissing as error:
            raise UserError(f"{error}; use --reader bm25") from error
        self._weights_id = model.weights_id
        return model

    def _prune(self, weights_id: str) -> None:
        with storage_errors():
            live = self.library.ingested_documents()
        deleted = self.store.prune(weights_id, live)
        if deleted:
            log.info("removed %d indexes of documents no longer in the library", deleted)

    # ------------------------------------------------------------------ reading

    def document_index(self, model: Model, document_id: int, content_hash: str) -> CollectionIndex:
        """The index of one document: from memory, else from its file, else encoded and stored."""
        from model.inference.qa import CollectionIndex

        key = (document_id, content_hash)
        index = self._cached(self._documents, key)
        if index is not None:
            return index
        with self._build_lock:
            index = self._cached(self._documents, key)
            if index is not None:
                return index
            arrays = self.store.load(model.weights_id, document_id, content_hash)
            try:
                index = CollectionIndex.from_arrays(arrays, [str(document_id)], model.weights_id) if arrays else None
            except ValueError:  # stale or partial: encode it again
                index = None
            if index is None:
                index = CollectionIndex.build(model, [self._document_text(document_id)])
                self.store.save(model.weights_id, document_id, content_hash, index.to_arrays())
            self._remember(self._documents, key, index, MEMORY_DOCUMENTS)
            return index

    def index(self, model: Model, entries: Sequence[tuple[str, int, str]]) -> CollectionIndex:
        """The index of the selection ``entries`` ((collection, document id, content hash), at least one), its
        documents in id order: the concatenation of their indexes."""
        from model.inference.qa import CollectionIndex

        key = fingerprint(entries, model.weights_id)
        index = self._cached(self._selections, key)
        if index is None:
            documents = sorted({(document_id, content_hash) for _, document_id, content_hash in entries})
            index = CollectionIndex.concat([self.document_index(model, *document) for document in documents])
            self._remember(self._selections, key, index, MEMORY_SELECTIONS)
        return index

    def progress(self, collections: Sequence[str], user: str = "") -> IndexProgress:
        """How many of the ingested documents of ``user``'s ``collections`` are indexed."""
        with storage_errors():
            visible = set(self.library.collection_names(user))
            documents = {
                (d.id, d.content_hash)
                for name in collections
                if name in visible
                for d in self.library.documents(name, user)
                if d.status == "ingested"
            }
        if not indexpool_checkpoint().is_file():
            return IndexProgress(0, len(documents), "off")
        weights_id = self._weights_id
        if weights_id is None:
            return IndexProgress(0, len(documents), "loading" if self._thread is not None else "pending")
        ready = sum(self.store.has(weights_id, *document) for document in documents)
        if ready == len(documents):
            return IndexProgress(ready, len(documents), "ready")
        return IndexProgress(ready, len(documents), "building" if self.building() else "pending")

    # ------------------------------------------------------------------ helpers

    def _cached(self, memory: OrderedDict, key: object) -> CollectionIndex | None:
        with self._memory_lock:
            index = memory.get(key)
            if index is not None:
                memory.move_to_end(key)
            return index

    def _remember(self, memory: OrderedDict, key: object, index: CollectionIndex, size: int) -> None:
        with self._memory_lock:
            memory[key] = index
            while len(memory) > size:
                memory.popitem(last=False)

    def _document_text(self, document_id: int) -> DocumentText:
        row = self.library.document(document_id, with_text=True)
        if row is None:
            raise UserError(f"document {document_id} left the library while it was being indexed; ask again")
        spans = self.library.sentence_spans(document_id)
        return DocumentText.of(str(document_id), row.text, [(s, e) for s, e, _ in spans], [p for _, _, p in spans])
