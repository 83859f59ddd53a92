"""Where the IndexPool checkpoint is, without loading anything (no torch): ``$INDEXPOOL_CHECKPOINT`` when set (read at
each call), else the shipped ``model/assets/indexpool.pt``."""

from __future__ import annotations

import os
from pathlib import Path

SHIPPED_CHECKPOINT = Path(__file__).resolve().parents[1] / "assets" / "indexpool.pt"


def indexpool_checkpoint() -> Path:
    """``$INDEXPOOL_CHECKPOINT``, else the shipped checkpoint."""
    return Path(os.environ.get("INDEXPOOL_CHECKPOINT", SHIPPED_CHECKPOINT))
