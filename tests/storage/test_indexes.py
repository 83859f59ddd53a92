"""Stored document indexes (``storage.indexes``): what ``prune`` keeps of the format before this one, and how
``adopt`` carries a document's files over to this format's folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from storage.indexes import IndexStore

NEW, OLD = "w-index9", "w-index8"


def _stored(store: IndexStore, key: str, document_id: int, content_hash: str) -> None:
    store.save(key, document_id, content_hash, {"format": np.array(8)}, (np.zeros(3), np.ones(2)))
    store.save_entries(key, "cache", document_id, content_hash, {"entries": np.zeros(1)})


def test_prune_keeps_the_previous_formats_indexes_of_live_documents_until_adopted(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    _stored(store, OLD, 1, "a" * 64)
    _stored(store, OLD, 2, "b" * 64)  # a document that left the library
    _stored(store, "w-index7", 1, "a" * 64)  # two formats back: gone
    store.prune(NEW, [(1, "a" * 64)], previous=OLD)
    assert store.has(OLD, 1, "a" * 64) and not store.has(OLD, 2, "b" * 64)
    assert not store.has_entries(OLD, "cache", 1, "a" * 64)  # pooled again from the carried store
    assert not (tmp_path / "indexpool" / "w-index7").exists()

    store.adopt(OLD, NEW, 1, "a" * 64, {"format": np.array(9)})
    assert store.has(NEW, 1, "a" * 64) and not store.has(OLD, 1, "a" * 64)
    kv, keys = store.load_store(NEW, 1, "a" * 64)
    assert kv.tolist() == [0.0, 0.0, 0.0] and keys.tolist() == [1.0, 1.0]
    assert int(store.load(NEW, 1, "a" * 64)["format"]) == 9
    store.prune(NEW, [(1, "a" * 64)], previous=OLD)  # nothing left to carry: the folder goes
    assert not (tmp_path / "indexpool" / OLD).exists() and store.has(NEW, 1, "a" * 64)
