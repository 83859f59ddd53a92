"""Large arrays (token ids and spans, model caches) live in .npz files beside the database, written atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np


def write_npz_atomic(path: Path, **arrays: np.ndarray) -> None:
    """Write ``arrays`` to ``path`` so that readers see either the old file or the complete new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **arrays)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def read_npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {name: data[name] for name in data.files}
