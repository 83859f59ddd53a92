"""The services the CLI and the web app call, one per concern; neither front end touches storage, ingestion or the
model directly.

    services = Services(home)
    services.library     collections, documents, removal, citations in context, PDF pages   (library.py)
    services.ingest      files, folders, zips, uploads → documents                          (ingest.py)
    services.indexes     each document's IndexPool index, built once, in the background      (indexes.py)
    services.ask         questions → cited answers, recorded in sessions                    (ask.py)
    services.summaries   summaries of documents and collections                             (summaries.py)
    services.sessions    chat sessions: list, create, rename, delete, history, export       (sessions.py)
    services.settings    per-user settings, validated                                       (settings.py)
    services.metrics     the dashboard's records, read-cache memory and the indexer benchmark (metrics.py)

Every service reports a request it cannot serve as a ``UserError`` (one line for the user).
"""

from __future__ import annotations

from pathlib import Path

from app.services.ask import AskService
from app.services.errors import UserError
from app.services.indexes import IndexService
from app.services.ingest import IngestService
from app.services.library import LibraryService
from app.services.metrics import MetricsService
from app.services.sessions import SessionService
from app.services.settings import SettingsService
from app.services.summaries import SummaryService
from storage.db import StorageError
from storage.library import Library

__all__ = ["Services", "UserError"]


class Services:
    def __init__(self, home: Path | None = None, generator: str = "") -> None:
        """``generator`` is the generator spec the app offers its users (``serve --generator``), "" for none."""
        try:
            library = Library(home)
        except StorageError as error:
            raise UserError(str(error)) from error
        self.home = library.home
        self.library = LibraryService(library)
        self.indexes = IndexService(library)
        self.ingest = IngestService(library, self.indexes)
        self.sessions = SessionService(library)
        self.ask = AskService(library, self.sessions, self.indexes, generator)
        self.summaries = SummaryService(self.library)
        self.settings = SettingsService(library, self.ask)
        self.indexes.settings_of = self.settings.settings  # each user's cache settings shape their read caches
        self.metrics = MetricsService(self.library, self.indexes, self.settings)
