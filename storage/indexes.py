"""Persisted document indexes, beside the database in ``<library home>/indexpool/<weights id>/``:

    <document id>-<content hash>.npz         the document's ``CollectionIndex`` arrays (passages, embeddings, bags)
    <document id>-<content hash>.kv.npy      tier 3: every token's key and value per sparse layer (float16)
    <document id>-<content hash>.keys.npy    every token's indexer key and content query per sparse layer (float16)
    entries-<cache key>/<document id>-<content hash>.npz   tier 1 under one cache configuration (the pooled entries)

An index of several documents is the concatenation of theirs, so a document is encoded once, when it is ingested,
whichever selection it is later asked in; a new cache configuration re-pools its entries from ``.keys.npy`` without
encoding it again. The ``.npy`` files are memory-mapped when read (a question reads the pages it needs). The files live
beside the database rather than in its ``arrays/`` folder, where ``Library.repair`` deletes whatever no document
references; ``prune`` removes those of documents that left the library and of other checkpoints. Every file is written
atomically, and the ``.npz`` index last, so a document counts as indexed only once all of its files are complete.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Collection
from pathlib import Path

import numpy as np

from storage.arrays import atomic_write, read_npz, write_npz_atomic

FOLDER = "indexpool"
HASH_CHARS = 16  # of the content hash, in file names
STORE_SUFFIXES = (".kv.npy", ".keys.npy")
ENTRIES_PREFIX = "entries-"


class IndexStore:
    def __init__(self, home: Path) -> None:
        self.folder = home / FOLDER

    def _stem(self, weights_id: str, document_id: int, content_hash: str) -> Path:
        return self.folder / weights_id / f"{document_id}-{content_hash[:HASH_CHARS]}"

    def path(self, weights_id: str, document_id: int, content_hash: str) -> Path:
        return self._stem(weights_id, document_id, content_hash).with_suffix(".npz")

    def entries_path(self, weights_id: str, cache_key: str, document_id: int, content_hash: str) -> Path:
        return (
            self.folder / weights_id / f"{ENTRIES_PREFIX}{cache_key}" / f"{document_id}-{content_hash[:HASH_CHARS]}.npz"
        )

    def has(self, weights_id: str, document_id: int, content_hash: str) -> bool:
        stem = self._stem(weights_id, document_id, content_hash)
        return all(Path(f"{stem}{suffix}").is_file() for suffix in (".npz", *STORE_SUFFIXES))

    def has_entries(self, weights_id: str, cache_key: str, document_id: int, content_hash: str) -> bool:
        return self.entries_path(weights_id, cache_key, document_id, content_hash).is_file()

    def load(self, weights_id: str, document_id: int, content_hash: str) -> dict[str, np.ndarray] | None:
        """The arrays of the document's index, None when absent or unreadable."""
        try:
            return read_npz(self.path(weights_id, document_id, content_hash))
        except (OSError, ValueError, zipfile.BadZipFile):
            return None

    def load_store(self, weights_id: str, document_id: int, content_hash: str) -> tuple[np.ndarray, ...] | None:
        """The document's tier-3 arrays (keys/values, indexer keys), memory-mapped; None when absent or unreadable."""
        stem = self._stem(weights_id, document_id, content_hash)
        try:
            return tuple(np.load(f"{stem}{suffix}", mmap_mode="r") for suffix in STORE_SUFFIXES)
        except (OSError, ValueError):
            return None

    def load_entries(
        self, weights_id: str, cache_key: str, document_id: int, content_hash: str
    ) -> dict[str, np.ndarray] | None:
        try:
            return read_npz(self.entries_path(weights_id, cache_key, document_id, content_hash))
        except (OSError, ValueError, zipfile.BadZipFile):
            return None

    def save(
        self,
        weights_id: str,
        document_id: int,
        content_hash: str,
        arrays: dict[str, np.ndarray],
        store: tuple[np.ndarray, ...],
    ) -> None:
        """The index ``arrays`` and the tier-3 ``store`` arrays (in ``STORE_SUFFIXES`` order), the index last."""
        stem = self._stem(weights_id, document_id, content_hash)
        for suffix, array in zip(STORE_SUFFIXES, store, strict=True):
            atomic_write(Path(f"{stem}{suffix}"), lambda handle, a=array: np.save(handle, np.ascontiguousarray(a)))
        write_npz_atomic(stem.with_suffix(".npz"), **arrays)

    def save_entries(
        self, weights_id: str, cache_key: str, document_id: int, content_hash: str, arrays: dict[str, np.ndarray]
    ) -> None:
        write_npz_atomic(self.entries_path(weights_id, cache_key, document_id, content_hash), **arrays)

    def store_bytes(self, weights_id: str, document_id: int, content_hash: str) -> int:
        """Bytes of the document's tier-3 files on disk (0 when absent)."""
        stem = self._stem(weights_id, document_id, content_hash)
        return sum(p.stat().st_size for p in (Path(f"{stem}{s}") for s in STORE_SUFFIXES) if p.is_file())

    def adopt(
        self, previous: str, weights_id: str, document_id: int, content_hash: str, arrays: dict[str, np.ndarray]
    ) -> None:
        """Carry a document's stored index over from the folder ``previous`` (the index format before this one) to
        ``weights_id``'s: its store files renamed (not copied), its index saved as ``arrays`` (brought to this
        format), the previous index file removed."""
        old, new = self._stem(previous, document_id, content_hash), self._stem(weights_id, document_id, content_hash)
        new.parent.mkdir(parents=True, exist_ok=True)
        for suffix in STORE_SUFFIXES:
            os.replace(f"{old}{suffix}", f"{new}{suffix}")
        write_npz_atomic(new.with_suffix(".npz"), **arrays)
        old.with_suffix(".npz").unlink(missing_ok=True)

    def prune(self, weights_id: str, live: Collection[tuple[int, str]], previous: str = "") -> int:
        """Delete every stored file but those of ``weights_id`` for the (document id, content hash) pairs ``live``
        (and files of earlier formats, but the indexes of live documents in the folder ``previous`` of the format
        just before, until :meth:`adopt` carries them over); the number of files deleted."""
        keep = {f"{document_id}-{content_hash[:HASH_CHARS]}" for document_id, content_hash in live}
        deleted = 0
        if not self.folder.is_dir():
            return 0
        for entry in self.folder.iterdir():
            if entry.is_dir() and entry.name == weights_id:
                deleted += _prune_files(entry, keep)
                for sub in entry.iterdir():
                    if sub.is_dir() and not sub.is_symlink() and sub.name.startswith(ENTRIES_PREFIX):
                        deleted += _prune_files(sub, keep)
            elif entry.is_dir() and entry.name == previous and not entry.is_symlink() and any(entry.glob("*.npz")):
                deleted += _prune_files(entry, keep)  # tier 1 is pooled again from the carried store
                for sub in entry.iterdir():
                    if sub.is_dir() and not sub.is_symlink():
                        deleted += sum(1 for p in sub.rglob("*") if p.is_file())
                        shutil.rmtree(sub, ignore_errors=True)
            elif entry.is_dir() and not entry.is_symlink():
                deleted += sum(1 for p in entry.rglob("*") if p.is_file())
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.suffix == ".npz":  # a whole-selection index of format 2
                entry.unlink(missing_ok=True)
                deleted += 1
        return deleted


def _prune_files(folder: Path, keep: set[str]) -> int:
    """Delete the regular files of ``folder`` whose name does not start with a kept stem and a dot (files being
    written, ``.tmp-*``, are left alone)."""
    deleted = 0
    for file in folder.iterdir():
        if file.name.startswith(".tmp-") or not file.is_file() or file.is_symlink():
            continue
        if file.name.split(".", 1)[0] not in keep:
            file.unlink(missing_ok=True)
            deleted += 1
    return deleted
