"""The collection indexes the IndexPool reader reads: in memory (an LRU), else from their file, else built.

An index covers a selection of documents and is keyed by a fingerprint of it (collection, document id and content
hash of every document, and the checkpoint's ``weights_id``), so a question never re-encodes a selection that was
indexed before, and an index is never used for documents that changed.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.services.errors import UserError
from model.inference.passages import DocumentText
from storage.indexes import IndexStore
from storage.library import Library

if TYPE_CHECKING:  # torch: imported when an index is built or loaded, so that the CLI starts fast
    from model.inference.qa import CollectionIndex
    from model.network.checkpoint import Model

MEMORY_INDEXES = 4  # indexed selections kept in memory


def fingerprint(entries: Sequence[tuple[str, int, str]], weights_id: str) -> str:
    """sha256 of the selection's sorted (collection, document id, content hash) and the checkpoint's weights id."""
    digest = hashlib.sha256(weights_id.encode())
    for collection, document_id, content_hash in sorted(entries):
        digest.update(f"\0{collection}\0{document_id}\0{content_hash}".encode())
    return digest.hexdigest()


class IndexService:
    def __init__(self, library: Library) -> None:
        self.library = library
        self.store = IndexStore(library.home)
        self._memory: OrderedDict[str, CollectionIndex] = OrderedDict()
        self._memory_lock = threading.Lock()
        self._build_lock = threading.Lock()  # one index built or restored at a time, so none is built twice

    def cached(self, key: str) -> CollectionIndex | None:
        with self._memory_lock:
            index = self._memory.get(key)
            if index is not None:
                self._memory.move_to_end(key)
            return index

    def _remember(self, key: str, index: CollectionIndex) -> None:
        with self._memory_lock:
            self._memory[key] = index
            while len(self._memory) > MEMORY_INDEXES:
                self._memory.popitem(last=False)

    def get(self, model: Model, key: str, document_ids: Sequence[int]) -> CollectionIndex:
        """The index of documents ``document_ids`` (in that order) fingerprinted ``key``: from memory (when another
        question made it meanwhile), else from its file, else built and stored."""
        from model.inference.qa import CollectionIndex

        with self._build_lock:
            index = self.cached(key)
            if index is not None:
                return index
            names = [str(i) for i in document_ids]
            arrays = self.store.load(key)
            try:
                index = CollectionIndex.from_arrays(arrays, names, model.weights_id) if arrays else None
            except ValueError:  # stale or partial: build it again
                index = None
            if index is None:
                index = CollectionIndex.build(model, [self._document(i) for i in document_ids])
                self.store.save(key, index.to_arrays())
            self._remember(key, index)
            return index

    def _document(self, document_id: int) -> DocumentText:
        row = self.library.document(document_id, with_text=True)
        if row is None:
            raise UserError(f"document {document_id} left the library while it was being indexed; ask again")
        spans = self.library.sentence_spans(document_id)
        return DocumentText.of(str(document_id), row.text, [(s, e) for s, e, _ in spans], [p for _, _, p in spans])
