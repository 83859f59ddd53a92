"""Chat sessions of a user: create, list, rename, delete, history and export (``storage.sessions``)."""

from __future__ import annotations

from typing import Any

from app.services.errors import storage_errors
from storage.library import Library
from storage.sessions import SessionInfo, SessionStore


class SessionService:
    def __init__(self, library: Library) -> None:
        self.store = SessionStore(library)

    def create(self, name: str, user: str = "") -> SessionInfo:
        with storage_errors():
            return self.store.create(name, user)

    def list(self, user: str = "") -> list[SessionInfo]:
        return self.store.list(user)

    def info(self, session_id: int, user: str = "") -> SessionInfo:
        with storage_errors():
            return self.store.info(session_id, user)

    def check(self, session_id: int, user: str = "") -> None:
        """UserError unless ``session_id`` is a session of ``user``."""
        with storage_errors():
            self.store.check(session_id, user)

    def rename(self, session_id: int, name: str, user: str = "") -> SessionInfo:
        with storage_errors():
            return self.store.rename(session_id, name, user)

    def delete(self, session_id: int, user: str = "") -> None:
        with storage_errors():
            self.store.delete(session_id, user)

    def history(self, session_id: int, user: str = "") -> list[dict[str, Any]]:
        with storage_errors():
            return self.store.history(session_id, user)

    def export(self, session_id: int, fmt: str, user: str = "") -> str:
        with storage_errors():
            return self.store.export(session_id, fmt, user)
