"""The SQLite database of a library: engine set-up (WAL, foreign keys), schema creation and version check."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, select, text
from sqlalchemy.orm import Session, sessionmaker

from storage.models import SCHEMA_VERSION, Base, Meta


class StorageError(Exception):
    """The library on disk cannot be used as it is (wrong schema version, unreadable database)."""


# Full-text index over sentences (BM25 lives in SQLite itself), kept in step with the table by triggers.
_FTS_DDL = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS sentences_fts USING fts5("
    "text, content='sentences', content_rowid='id', tokenize='porter unicode61')",
    "CREATE TRIGGER IF NOT EXISTS sentences_ai AFTER INSERT ON sentences BEGIN "
    "INSERT INTO sentences_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER IF NOT EXISTS sentences_ad AFTER DELETE ON sentences BEGIN "
    "INSERT INTO sentences_fts(sentences_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
]


# Statements that take a library from schema version N to N + 1, applied in one transaction when it is opened.
MIGRATIONS: dict[int, list[str]] = {
    1: ["ALTER TABLE answers ADD COLUMN generated TEXT"],  # version 2: the generated prose of an answer
    2: [  # version 3: token arrays and token spans, which nothing read, are gone
        "ALTER TABLE documents DROP COLUMN array_file",
        "ALTER TABLE sentences DROP COLUMN token_start",
        "ALTER TABLE sentences DROP COLUMN token_end",
    ],
}


def _set_pragmas(dbapi_connection, _record) -> None:  # noqa: ANN001 (DB-API connection)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def open_database(path: Path) -> sessionmaker[Session]:
    """Open (creating if needed) the library database at ``path`` and check its schema version."""
    engine: Engine = create_engine(f"sqlite:///{path}")
    event.listen(engine, "connect", _set_pragmas)
    try:
        with engine.begin() as connection:
            Base.metadata.create_all(connection)
            for statement in _FTS_DDL:
                connection.execute(text(statement))
    except Exception as error:  # an unreadable or foreign file
        reason = getattr(error, "orig", None) or error  # the driver's own message, without SQLAlchemy's links
        raise StorageError(f"cannot open the library database {path}: {reason}") from error
    factory = sessionmaker(engine, expire_on_commit=False)
    with factory.begin() as session:
        stored = session.scalar(select(Meta.value).where(Meta.key == "schema_version"))
        if stored is None:
            session.add(Meta(key="schema_version", value=str(SCHEMA_VERSION)))
        elif stored != str(SCHEMA_VERSION):
            _upgrade(session, path, stored)
    return factory


_DROP_COLUMN = re.compile(r"ALTER TABLE (\w+) DROP COLUMN (\w+)")


def _drops_a_missing_column(session: Session, statement: str) -> bool:
    """True for ``ALTER TABLE t DROP COLUMN c`` when ``t`` has no column ``c`` (nothing to do)."""
    match = _DROP_COLUMN.fullmatch(statement)
    if match is None:
        return False
    table, column = match.groups()
    return column not in {row[1] for row in session.execute(text(f"PRAGMA table_info({table})"))}


def _upgrade(session: Session, path: Path, stored: str) -> None:
    """Bring a library of an older schema version up to ``SCHEMA_VERSION`` inside the caller's transaction (SQLite
    DDL is transactional: a failed upgrade leaves the library as it was)."""
    version = int(stored) if stored.isdigit() else -1
    if not 1 <= version < SCHEMA_VERSION:
        raise StorageError(
            f"the library at {path.parent} has schema version {stored}; this indexpool expects "
            f"{SCHEMA_VERSION} (use another --home or a matching indexpool version)"
        )
    for step in range(version, SCHEMA_VERSION):
        for statement in MIGRATIONS[step]:
            if not _drops_a_missing_column(session, statement):
                session.execute(text(statement))
    session.get(Meta, "schema_version").value = str(SCHEMA_VERSION)
