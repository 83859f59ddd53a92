"""Per-user app settings: one JSON file, ``settings.json`` in the library folder, mapping user → settings.

The file is rewritten atomically; values are validated by the caller (``Services.save_settings``).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from storage.arrays import atomic_write
from storage.db import StorageError


class SettingsStore:
    def __init__(self, home: Path) -> None:
        self.path = home / "settings.json"
        self._lock = threading.Lock()

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else {}
        except (OSError, json.JSONDecodeError) as error:
            raise StorageError(f"cannot read the settings file {self.path}: {error}") from error
        return data if isinstance(data, dict) else {}

    def load(self, user: str = "") -> dict[str, Any]:
        """The stored settings of ``user`` (empty when none were saved)."""
        return dict(self._read().get(user, {}))

    def save(self, values: dict[str, Any], user: str = "") -> None:
        with self._lock:
            data = self._read()
            data[user] = values
            text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True)
            atomic_write(self.path, lambda handle: handle.write(text.encode("utf-8")))
