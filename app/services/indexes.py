"""The indexes the IndexPool reader reads: one per document, built once, when the document is ingested, and the
question-time read caches built from them under each user's cache settings.

    services.indexes.background()             # the web app: a thread indexes every document not indexed yet,
    services.indexes.schedule([document_id])  # ...and each document ingested from then on
    services.indexes.reconfigure(user)        # the user's cache settings changed: re-pool their documents' tier 1
    services.indexes.build(document_ids, progress)   # the CLI: in the foreground, after ingest
    services.indexes.progress(["papers"], user)      # how far the indexing of collections has come
    services.indexes.index(model, entries)    # a question's selection: the concatenation of its documents' indexes
    services.indexes.read_cache(model, entries, user)   # ...and what its read scores and fetches (tiers 1-3)

A document's index is kept on disk (``storage.indexes``, keyed by the checkpoint, the document id and its content
hash, so it is never used for a document that changed): its arrays, and its tier-3 store (every token's keys and
values, memory-mapped when read). Its tier-1 entries are pooled from the store under a cache configuration (the
preset, α, β, γ, ratio and INT8 of the user's settings: ``cache_key``), kept on disk per configuration, so a new
configuration re-pools without encoding again. Tier 2 is one LRU of pages shared by every question of the process
(``KVTiers``), its budget the asking user's ``tier2_mb``. A document not indexed yet when a question reaches it is
indexed then (the question waits for it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from app.services.errors import UserError, storage_errors
from app.services.library import file_name
from model.inference.passages import DocumentText
from model.network.paths import indexpool_checkpoint
from storage.indexes import IndexStore
from storage.library import Library

if TYPE_CHECKING:  # torch: imported when an index is built or loaded, so that the CLI starts fast
    from model.inference.qa import CollectionIndex
    from model.inference.read import CacheConfig, DocumentEntries, ReadCache
    from model.network.checkpoint import Model
    from model.network.indexpool.cache import KVTiers

MEMORY_SELECTIONS = 4  # selection indexes (and read caches) kept in memory
MEMORY_DOCUMENTS = 4096  # document indexes and entries kept in memory (a selection of several then holds them)
CACHE_FIELDS = ("preset", "alpha", "beta", "gamma", "ratio", "int8")  # the settings that shape tier 1
DEFAULT_CACHE: dict[str, Any] = {"preset": "default", "alpha": 0.5, "beta": 0.3, "gamma": 0.2, "ratio": 4, "int8": True}
DEFAULT_TIER2_MB = 64
MIN_TOKENS = 10_000  # model.inference.read.MIN_TOKENS: below it a selection is read uncompressed
log = logging.getLogger(__name__)


def cache_key(settings: Mapping[str, Any]) -> str:
    """Short hash of the settings that shape tier 1 (names the folder of its stored entries)."""
    fields = {name: settings.get(name, DEFAULT_CACHE[name]) for name in CACHE_FIELDS}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:10]


def cache_config(settings: Mapping[str, Any]) -> CacheConfig:
    """The read cache's configuration from a user's settings."""
    from model.inference.read import CacheConfig

    get = {name: settings.get(name, DEFAULT_CACHE[name]) for name in CACHE_FIELDS}
    try:
        return CacheConfig(
            ratio=int(get["ratio"]),
            int8=bool(get["int8"]),
            preset=str(get["preset"]),
            alpha=float(get["alpha"]),
            beta=float(get["beta"]),
            gamma=float(get["gamma"]),
        )
    except ValueError as error:
        raise UserError(f"the cache settings are not valid: {error}") from error


def store_key(model: Model, before: int = 0) -> str:
    """What a document's stored index and caches are filed under: the checkpoint's weights and the index format
    (a new format is built, by ``build`` too, rather than found and refused when a question loads it; ``before``
    1: the format before, whose indexes are carried over when they can be: :meth:`IndexService.document_index`)."""
    from model.inference.qa import FORMAT

    return f"{model.weights_id}-index{FORMAT - before}"


def fingerprint(entries: Sequence[tuple[str, int, str]], weights_id: str) -> str:
    """sha256 of the selection's sorted (collection, document id, content hash) and the checkpoint's weights id."""
    digest = hashlib.sha256(weights_id.encode())
    for collection, document_id, content_hash in sorted(entries):
        digest.update(f"\0{collection}\0{document_id}\0{content_hash}".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class IndexProgress:
    """How far the indexing of some collections' documents has come."""

    ready: int  # documents indexed (and pooled under the user's cache settings)
    total: int  # documents to index
    state: str  # "ready", "building", "pending" (indexed at the first question), "loading" (the model), "off"
    tokens: int = 0  # tokens of the documents

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
            small = self.tokens < MIN_TOKENS
            note = f"; {self.tokens:,} tokens: compression is off under {MIN_TOKENS:,}" if small else ""
            return f"IndexPool index: ready ({counts}{note})"
        if self.state == "loading":
            return f"IndexPool index: loading the model before indexing {self.total} documents"
        if self.state == "building":
            return f"IndexPool index: building, {counts} indexed; a question now waits for the rest"
        return f"IndexPool index: {counts} indexed; the rest are indexed at the first question"


class IndexService:
    def __init__(self, library: Library) -> None:
        self.library = library
        self.store = IndexStore(library.home)
        self.settings_of: Callable[[str], Mapping[str, Any]] = lambda user: DEFAULT_CACHE  # Services sets it
        self._documents: OrderedDict[tuple[int, str], CollectionIndex] = OrderedDict()
        self._entries: OrderedDict[tuple[int, str, str], DocumentEntries] = OrderedDict()
        self._selections: OrderedDict[str, CollectionIndex] = OrderedDict()
        self._reads: OrderedDict[tuple[str, str], ReadCache] = OrderedDict()
        self._memory_lock = threading.Lock()
        self._build_lock = threading.Lock()  # one document encoded at a time, so none is encoded twice
        self._queue: deque[tuple[int, str | None]] = deque()  # (document id, user whose settings to pool for)
        self._backlog: deque[tuple[int, str | None]] = deque()  # the library's documents at start: after the queue
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._weights_id: str | None = None  # known once the model is loaded
        self._tiers: KVTiers | None = None
        self.holds: Callable[[int], bool] = lambda document_id: True  # kept in memory once built or loaded (shards:
        # only this rank's documents; the others are built into the home for their ranks and left there)

    # ------------------------------------------------------------------ building

    def background(self) -> None:
        """Start the thread that loads what a question reads with (the checkpoint, MiniLM: 1.2 s that the first
        question would wait for), then indexes, one document at a time, every document of the library not indexed
        yet and each scheduled one (the web app's; a no-op without the checkpoint or when already started)."""
        if self._thread is not None or not indexpool_checkpoint().is_file():
            return
        with storage_errors():
            every = [(document_id, owner) for document_id, _, owner in self.library.ingested_documents()]
        with self._wake:
            self._backlog.extend(every)
            self._thread = threading.Thread(target=self._run, name="indexpool-indexer", daemon=True)
        self._thread.start()

    def schedule(self, document_ids: Sequence[int], user: str | None = None) -> None:
        """Queue documents for the background thread (pooled under ``user``'s settings, default their owner's),
        ahead of the library's documents not indexed at start (a new user's upload is not left behind the embedded
        sample's 549 documents, which a first start queues); without a thread (the CLI) nothing happens."""
        with self._wake:
            if self._thread is not None:
                self._queue.extend((document_id, user) for document_id in document_ids)
                self._wake.notify()

    def reconfigure(self, user: str) -> None:
        """``user``'s cache settings changed: pool the tier 1 of their documents again, in the background."""
        with storage_errors():
            owned = [document_id for document_id, _, owner in self.library.ingested_documents() if owner == user]
        with self._memory_lock:
            self._reads.clear()
        self.schedule(owned, user)

    def _run(self) -> None:
        try:
            model = self._model()
        except UserError as error:
            log.warning("background indexing is off: %s", error)
            return
        from model.inference.qa import Question

        Question.encode(model, "What does a first question load?")  # MiniLM and the stemmer: not the user's wait
        self._prune(store_key(model), store_key(model, before=1))
        while True:
            with self._wake:
                while not (self._queue or self._backlog):
                    self._wake.wait()
                document_id, user = (self._queue or self._backlog).popleft()
            try:
                document = self.library.document(document_id)
                if document is not None and document.status == "ingested":
                    self.document_index(model, document_id, document.content_hash)
                    who = user if user is not None else self._owner(document_id)
                    self.document_entries(model, document_id, document.content_hash, self.settings_of(who))
            except UserError:  # the document left the library meanwhile
                continue
            except Exception:  # a defect must not end the indexing of every later document
                log.exception("indexing document %s failed", document_id)

    def building(self) -> bool:
        """Whether the background thread has documents left to index."""
        with self._wake:
            return self._thread is not None and (bool(self._queue or self._backlog) or self._build_lock.locked())

    def build(
        self,
        document_ids: Sequence[int],
        progress: Callable[[int, int, float], None] | None = None,
        user: str = "",
    ) -> int:
        """Index the documents of ``document_ids`` that are not indexed yet, and pool them under ``user``'s cache
        settings, in the foreground; ``progress(done, total, seconds)`` after each. The number of documents
        indexed or pooled now."""
        model = self._model()
        settings = self.settings_of(user)
        key = cache_key(settings)
        with storage_errors():
            documents = [self.library.document(i) for i in document_ids]
        missing = [
            (d.id, d.content_hash)
            for d in documents
            if d is not None
            and d.status == "ingested"
            and not (
                self.store.has(store_key(model), d.id, d.content_hash)
                and self.store.has_entries(store_key(model), key, d.id, d.content_hash)
            )
        ]
        started = time.perf_counter()
        for done, (document_id, content_hash) in enumerate(missing, start=1):
            self.document_index(model, document_id, content_hash)
            self.document_entries(model, document_id, content_hash, settings)
            if progress is not None:
                progress(done, len(missing), time.perf_counter() - started)
        return len(missing)

    def _model(self) -> Model:
        from model.network.checkpoint import CheckpointMissing, load_model

        try:
            model = load_model()
        except CheckpointMissing as error:
            raise UserError(f"{error}; use --reader bm25") from error
        self._weights_id = store_key(model)
        return model

    def _owner(self, document_id: int) -> str:
        with storage_errors():
            owners = {i: owner for i, _, owner in self.library.ingested_documents()}
        return owners.get(document_id, "")

    def _prune(self, weights_id: str, previous: str = "") -> None:
        with storage_errors():
            live = [(document_id, content_hash) for document_id, content_hash, _ in self.library.ingested_documents()]
        deleted = self.store.prune(weights_id, live, previous)
        if deleted:
            log.info("removed %d index files of documents no longer in the library", deleted)

    # ------------------------------------------------------------------ reading

    def document_index(self, model: Model, document_id: int, content_hash: str) -> CollectionIndex:
        """The index of one document, with its tier-3 store: from memory, else from its files, else encoded and
        stored."""
        from model.inference.qa import CollectionIndex
        from model.inference.read import DocumentStore

        key = (document_id, content_hash)
        index = self._cached(self._documents, key)
        if index is not None:
            return index
        with self._build_lock:
            index = self._cached(self._documents, key)
            if index is not None:
                return index
            arrays = self.store.load(store_key(model), document_id, content_hash)
            store = self.store.load_store(store_key(model), document_id, content_hash)
            index = None
            if arrays is not None and store is not None:
                try:
                    stores = [DocumentStore(*store)]
                    index = CollectionIndex.from_arrays(arrays, [str(document_id)], model.weights_id, stores)
                except (TypeError, ValueError):  # stale or partial: encode it again
                    index = None
            if index is None:
                index = self._carried_over(model, document_id, content_hash)
            if index is None:
                index = CollectionIndex.build(model, [self._document_text(document_id)])
                (built,) = index.stores
                self.store.save(store_key(model), document_id, content_hash, index.to_arrays(), (built.kv, built.keys))
                store = self.store.load_store(store_key(model), document_id, content_hash)
                if store is not None:  # read from the memory-mapped files from now on, not the encoder's arrays
                    index.stores = [DocumentStore(*store)]
            if self.holds(document_id):
                self._remember(self._documents, key, index, MEMORY_DOCUMENTS)
            return index

    def _carried_over(self, model: Model, document_id: int, content_hash: str) -> CollectionIndex | None:
        """The document's index stored by the index format before this one, brought to this format without encoding
        the document again (its store files moved over); None when there is none to carry."""
        from model.inference.qa import CollectionIndex, upgraded
        from model.inference.read import DocumentStore

        previous = store_key(model, before=1)
        arrays = self.store.load(previous, document_id, content_hash)
        if arrays is None or not self.store.has(previous, document_id, content_hash):
            return None
        try:
            arrays = upgraded(arrays, self._document_text(document_id))
        except (KeyError, ValueError):
            return None
        if arrays is None:
            return None
        self.store.adopt(previous, store_key(model), document_id, content_hash, arrays)
        store = self.store.load_store(store_key(model), document_id, content_hash)
        if store is None:
            return None
        try:
            return CollectionIndex.from_arrays(arrays, [str(document_id)], model.weights_id, [DocumentStore(*store)])
        except (TypeError, ValueError):  # encoded again over the carried files
            return None

    def document_entries(
        self, model: Model, document_id: int, content_hash: str, settings: Mapping[str, Any]
    ) -> DocumentEntries:
        """The tier-1 entries of one document under the cache ``settings``: from memory, else from their file,
        else pooled from its store and saved."""
        from model.inference.read import DocumentEntries

        key = cache_key(settings)
        entries = self._stored_entries(store_key(model), model.net.cfg.n_layers, key, document_id, content_hash)
        if entries is None:
            (store,) = self.document_index(model, document_id, content_hash).stores
            entries = DocumentEntries.pool(store, cache_config(settings), model)
            self.store.save_entries(store_key(model), key, document_id, content_hash, entries.to_arrays())
        if self.holds(document_id):
            self._remember(self._entries, (document_id, content_hash, key), entries, MEMORY_DOCUMENTS)
        return entries

    def _stored_entries(
        self, weights_id: str, layers: int, key: str, document_id: int, content_hash: str
    ) -> DocumentEntries | None:
        """A document's tier-1 entries under the cache ``key`` from memory, else from their file; None when neither
        holds them whole."""
        from model.inference.read import DocumentEntries

        entries = self._cached(self._entries, (document_id, content_hash, key))
        if entries is not None:
            return entries
        arrays = self.store.load_entries(weights_id, key, document_id, content_hash)
        try:
            return DocumentEntries.from_arrays(arrays, layers) if arrays is not None else None
        except ValueError:
            return None

    def index(self, model: Model, entries: Sequence[tuple[str, int, str]]) -> CollectionIndex:
        """The index of the selection ``entries`` ((collection, document id, content hash), at least one), its
        documents in id order: the concatenation of their indexes."""
        from model.inference.qa import CollectionIndex

        key = fingerprint(entries, model.weights_id)
        index = self._cached(self._selections, key)
        if index is None:
            documents = self._ordered(entries)
            index = CollectionIndex.concat([self.document_index(model, *document) for document in documents])
            self._remember(self._selections, key, index, MEMORY_SELECTIONS)
            if len(documents) > 1:  # the selection holds a copy of each: not two in memory (10M tokens: 788 MiB)
                self._forget(self._documents, documents)
        return index

    def read_cache(self, model: Model, entries: Sequence[tuple[str, int, str]], user: str = "") -> ReadCache:
        """What a question of ``user`` over the selection ``entries`` reads: its documents' tier-1 entries under the
        user's cache settings, joined in the order of :meth:`index`, in front of their stores and the shared tier 2
        (budget: the user's ``tier2_mb``)."""
        from model.inference.read import ReadCache

        settings = self.settings_of(user)
        tiers = self.tiers()
        tiers.set_budget(int(float(settings.get("tier2_mb", DEFAULT_TIER2_MB)) * (1 << 20)))
        slot = (fingerprint(entries, model.weights_id), cache_key(settings))
        cache = self._cached(self._reads, slot)
        if cache is None:
            documents = []
            ordered = self._ordered(entries)
            stores = self.index(model, entries).stores  # the documents' tier-3 stores, in the same order
            for (document_id, content_hash), store in zip(ordered, stores, strict=True):
                pooled = self.document_entries(model, document_id, content_hash, settings)
                documents.append((f"{document_id}-{content_hash}", store, pooled))
            cache = ReadCache(model, documents, cache_config(settings), tiers)
            self._remember(self._reads, slot, cache, MEMORY_SELECTIONS)
            if len(ordered) > 1:  # joined in the cache: not two copies of each document's entries in memory
                self._forget(self._entries, [(d, h, cache_key(settings)) for d, h in ordered])
        return cache

    def tiers(self) -> KVTiers:
        """Tier 2, shared by every question of the process."""
        from model.network.indexpool.cache import KVTiers

        with self._memory_lock:
            if self._tiers is None:
                self._tiers = KVTiers(DEFAULT_TIER2_MB << 20)
            return self._tiers

    def cache_bytes(self, collection: str, user: str = "") -> dict[str, int]:
        """The read cache of ``user``'s ``collection`` as a question over it reads it: tier-1 bytes under the user's
        cache settings (of the documents pooled so far; under ``MIN_TOKENS`` tokens, the uncompressed keys), the
        same entries uncompressed (every token's float32 indexer key, what r = 1 takes), and the tier-3 bytes on
        disk; all 0 until the model is loaded."""
        weights_id = self._weights_id
        totals = {"tier1": 0, "uncompressed": 0, "tier3": 0}
        if weights_id is None:
            return totals
        cfg = self._model().net.cfg
        key = cache_key(self.settings_of(user))
        with storage_errors():
            documents = [d for d in self.library.documents(collection, user) if d.status == "ingested"]
        for d in documents:
            totals["tier3"] += self.store.store_bytes(weights_id, d.id, d.content_hash)
            entries = self._stored_entries(weights_id, cfg.n_layers, key, d.id, d.content_hash)
            if entries is not None:
                totals["tier1"] += entries.nbytes
                totals["uncompressed"] += d.tokens * cfg.n_layers * cfg.indexer_dim * 4
        if sum(d.tokens for d in documents) < MIN_TOKENS:  # read uncompressed: every token's indexer key
            totals["tier1"] = totals["uncompressed"]
        return totals

    def progress(self, collections: Sequence[str], user: str = "") -> IndexProgress:
        """How many of the ingested documents of ``user``'s ``collections`` are indexed and pooled under the user's
        cache settings."""
        with storage_errors():
            visible = set(self.library.collection_names(user))
            documents = {
                (d.id, d.content_hash, d.tokens)
                for name in collections
                if name in visible
                for d in self.library.documents(name, user)
                if d.status == "ingested"
            }
        tokens = sum(t for _, _, t in documents)
        if not indexpool_checkpoint().is_file():
            return IndexProgress(0, len(documents), "off", tokens)
        weights_id = self._weights_id
        if weights_id is None:
            return IndexProgress(0, len(documents), "loading" if self._thread is not None else "pending", tokens)
        key = cache_key(self.settings_of(user))
        ready = sum(
            self.store.has(weights_id, i, h) and self.store.has_entries(weights_id, key, i, h) for i, h, _ in documents
        )
        if ready == len(documents):
            return IndexProgress(ready, len(documents), "ready", tokens)
        return IndexProgress(ready, len(documents), "building" if self.building() else "pending", tokens)

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _ordered(entries: Sequence[tuple[str, int, str]]) -> list[tuple[int, str]]:
        return sorted({(document_id, content_hash) for _, document_id, content_hash in entries})

    def _cached(self, memory: OrderedDict, key: object) -> Any:
        with self._memory_lock:
            value = memory.get(key)
            if value is not None:
                memory.move_to_end(key)
            return value

    def _forget(self, memory: OrderedDict, keys: Sequence[object]) -> None:
        with self._memory_lock:
            for key in keys:
                memory.pop(key, None)

    def _remember(self, memory: OrderedDict, key: object, value: object, size: int) -> None:
        with self._memory_lock:
            memory[key] = value
            while len(memory) > size:
                memory.popitem(last=False)

    def _document_text(self, document_id: int) -> DocumentText:
        row = self.library.document(document_id, with_text=True)
        if row is None:
            raise UserError(f"document {document_id} left the library while it was being indexed; ask again")
        spans = self.library.sentence_spans(document_id)
        title = f"{row.title} {PurePath(file_name(row.source)).stem}"
        sentences, paragraphs = [(s, e) for s, e, _ in spans], [p for _, _, p in spans]
        references = self.library.reference_sentences(document_id)
        return DocumentText.of(str(document_id), row.text, sentences, paragraphs, title, references)
