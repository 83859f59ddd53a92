"""Where the IndexPool checkpoint is: ``$INDEXPOOL_CHECKPOINT``, else the shipped ``model/assets/indexpool.pt``.

Looked up at each call (not at import), so every reader, evaluation and benchmark follows the variable as it is now.
"""

from __future__ import annotations

import os
from pathlib import Path

SHIPPED_CHECKPOINT = Path(__file__).resolve().parent / "assets" / "indexpool.pt"


def indexpool_checkpoint() -> Path:
    return Path(os.environ.get("INDEXPOOL_CHECKPOINT", SHIPPED_CHECKPOINT))
