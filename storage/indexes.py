"""Persisted collection indexes: the arrays of a ``model.inference.qa.CollectionIndex`` as ``.npz`` files under
``<library home>/indexpool/<key>.npz``, the ``STORED`` most recently used kept.

They live beside the database rather than in its ``arrays/`` folder, where ``Library.repair`` deletes whatever no
document references. A file is written atomically, so a reader sees none or all of it.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from storage.arrays import read_npz, write_npz_atomic

FOLDER = "indexpool"
STORED = 16


class IndexStore:
    def __init__(self, home: Path) -> None:
        self.folder = home / FOLDER

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.npz"

    def load(self, key: str) -> dict[str, np.ndarray] | None:
        """The arrays stored under ``key`` (marked as recently used), None when absent or unreadable."""
        path = self.path(key)
        try:
            arrays = read_npz(path)
            os.utime(path)
        except (OSError, ValueError, zipfile.BadZipFile):
            return None
        return arrays

    def save(self, key: str, arrays: dict[str, np.ndarray]) -> None:
        write_npz_atomic(self.path(key), **arrays)
        files = sorted(self.folder.glob("*.npz"), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in files[STORED:]:
            stale.unlink(missing_ok=True)
