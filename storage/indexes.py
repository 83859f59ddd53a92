"""Persisted document indexes: the arrays of each document's ``model.inference.qa.CollectionIndex`` as an ``.npz``
file, ``<library home>/indexpool/<weights id>/<document id>-<content hash>.npz``.

An index of several documents is the concatenation of theirs, so a document is encoded once, when it is ingested,
whichever selection it is later asked in. The files live beside the database rather than in its ``arrays/`` folder,
where ``Library.repair`` deletes whatever no document references; ``prune`` removes those of documents that left the
library and of other checkpoints. A file is written atomically, so a reader sees none or all of it.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Collection
from pathlib import Path

import numpy as np

from storage.arrays import read_npz, write_npz_atomic

FOLDER = "indexpool"
HASH_CHARS = 16  # of the content hash, in file names


class IndexStore:
    def __init__(self, home: Path) -> None:
        self.folder = home / FOLDER

    def path(self, weights_id: str, document_id: int, content_hash: str) -> Path:
        return self.folder / weights_id / f"{document_id}-{content_hash[:HASH_CHARS]}.npz"

    def has(self, weights_id: str, document_id: int, content_hash: str) -> bool:
        return self.path(weights_id, document_id, content_hash).is_file()

    def load(self, weights_id: str, document_id: int, content_hash: str) -> dict[str, np.ndarray] | None:
        """The arrays of the document's index, None when absent or unreadable."""
        try:
            return read_npz(self.path(weights_id, document_id, content_hash))
        except (OSError, ValueError, zipfile.BadZipFile):
            return None

    def save(self, weights_id: str, document_id: int, content_hash: str, arrays: dict[str, np.ndarray]) -> None:
        write_npz_atomic(self.path(weights_id, document_id, content_hash), **arrays)

    def prune(self, weights_id: str, live: Collection[tuple[int, str]]) -> int:
        """Delete every stored index but those of ``weights_id`` for the (document id, content hash) pairs ``live``
        (and files of earlier formats); the number of files deleted."""
        keep = {f"{document_id}-{content_hash[:HASH_CHARS]}.npz" for document_id, content_hash in live}
        deleted = 0
        if not self.folder.is_dir():
            return 0
        for entry in self.folder.iterdir():
            if entry.is_dir() and entry.name == weights_id:
                for file in entry.glob("*.npz"):
                    if file.name not in keep:
                        file.unlink(missing_ok=True)
                        deleted += 1
            elif entry.is_dir() and not entry.is_symlink():
                deleted += sum(1 for _ in entry.glob("*.npz"))
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.suffix == ".npz":  # a whole-selection index of format 2
                os.unlink(entry)
                deleted += 1
        return deleted
