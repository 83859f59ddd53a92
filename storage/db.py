"""The SQLite database of a library: engine set-up (WAL, foreign keys), schema creation and version check."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, select, text
from sqlalchemy.dialects.sqlite import dialect as sqlite_dialect
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.schema import CreateTable

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


# What takes a library from schema version N to N + 1: SQL statements, or ``rebuild:<table>`` (SQLite cannot change
# a table's constraints: the table is created anew from its model under a temporary name, its rows copied with the
# new columns' defaults, the old one dropped and the new one renamed). A library is upgraded when it is opened, all
# versions in one transaction, with foreign keys checked at the end.
MIGRATIONS: dict[int, list[str]] = {
    1: ["ALTER TABLE answers ADD COLUMN generated TEXT"],  # version 2: the generated prose of an answer
    2: [  # version 3: token arrays and token spans, which nothing read, are gone
        "ALTER TABLE documents DROP COLUMN array_file",
        "ALTER TABLE sentences DROP COLUMN token_start",
        "ALTER TABLE sentences DROP COLUMN token_end",
    ],
    3: [  # version 4: collections belong to a user (names unique per user), and may be shared; metrics name theirs
        "rebuild:collections",
        "UPDATE collections SET shared = 1 WHERE name = 'python-stdlib'",  # the embedded sample, for every user
        "ALTER TABLE metrics ADD COLUMN user VARCHAR(200) NOT NULL DEFAULT ''",
    ],
    4: ["ALTER TABLE citations ADD COLUMN speaker TEXT NOT NULL DEFAULT ''"],  # version 5: who said a cited sentence
}


def _set_pragmas(dbapi_connection, _record) -> None:  # noqa: ANN001 (DB-API connection)
    dbapi_connection.isolation_level = None  # transactions are begun by _begin, not guessed by the driver
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _begin(connection: Connection) -> None:
    """Every transaction is a real SQLite transaction (also around DDL and SAVEPOINTs); one opened on a connection
    with the execution option ``immediate`` takes the write lock at once, so what it reads cannot change before it
    writes."""
    connection.exec_driver_sql("BEGIN IMMEDIATE" if connection.get_execution_options().get("immediate") else "BEGIN")


def open_database(path: Path) -> tuple[Engine, sessionmaker[Session]]:
    """Open (creating if needed) the library database at ``path`` and check its schema version."""
    engine: Engine = create_engine(f"sqlite:///{path}")
    event.listen(engine, "connect", _set_pragmas)
    event.listen(engine, "begin", _begin)
    try:
        with engine.connect().execution_options(immediate=True) as connection, connection.begin():
            Base.metadata.create_all(connection)  # under the write lock: another process may be creating it too
            for statement in _FTS_DDL:
                connection.execute(text(statement))
            # in the same write transaction: a read transaction that then writes fails at once ("database is
            # locked") when another process wrote in between
            stored = connection.scalar(select(Meta.value).where(Meta.key == "schema_version"))
            if stored is None:  # a new library
                connection.execute(sqlite_insert(Meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
    except Exception as error:  # an unreadable or foreign file
        reason = getattr(error, "orig", None) or error  # the driver's own message, without SQLAlchemy's links
        raise StorageError(f"cannot open the library database {path}: {reason}") from error
    factory = sessionmaker(engine, expire_on_commit=False)
    if stored is not None and stored != str(SCHEMA_VERSION):
        _upgrade(engine, path, stored)
    return engine, factory


_ALTER_COLUMN = re.compile(r"ALTER TABLE (\w+) (ADD|DROP) COLUMN (\w+).*")


def _columns(cursor: sqlite3.Cursor, table: str) -> list[str]:
    return [row[1] for row in cursor.execute(f"PRAGMA table_info({table})")]


def _run(cursor: sqlite3.Cursor, statement: str) -> None:
    """One migration statement (see MIGRATIONS); adding a column that is there, or dropping one that is not, does
    nothing (a library can be part-way between versions when a test builds one)."""
    if statement.startswith("rebuild:"):
        table = Base.metadata.tables[statement.removeprefix("rebuild:")]
        ddl = str(CreateTable(table).compile(dialect=sqlite_dialect()))
        cursor.execute(ddl.replace(f"CREATE TABLE {table.name}", f"CREATE TABLE {table.name}__new", 1))
        kept = [c for c in _columns(cursor, table.name) if c in table.columns]
        cursor.execute(f"INSERT INTO {table.name}__new ({', '.join(kept)}) SELECT {', '.join(kept)} FROM {table.name}")
        cursor.execute(f"DROP TABLE {table.name}")
        cursor.execute(f"ALTER TABLE {table.name}__new RENAME TO {table.name}")
        return
    match = _ALTER_COLUMN.fullmatch(statement)
    if match is None or (match.group(3) in _columns(cursor, match.group(1))) == (match.group(2) == "DROP"):
        cursor.execute(statement)


def _upgrade(engine: Engine, path: Path, stored: str) -> None:
    """Bring a library of an older schema version up to ``SCHEMA_VERSION`` in one transaction: a failed upgrade
    leaves the library as it was."""
    version = int(stored) if stored.isdigit() else -1
    if not 1 <= version < SCHEMA_VERSION:
        raise StorageError(
            f"the library at {path.parent} has schema version {stored}; this indexpool expects "
            f"{SCHEMA_VERSION} (use another --home or a matching indexpool version)"
        )
    connection = engine.raw_connection()  # the DB-API connection: explicit BEGIN / COMMIT around DDL
    try:
        raw = connection.driver_connection
        raw.isolation_level = None  # autocommit mode: the transaction below is ours
        cursor = raw.cursor()
        cursor.execute("PRAGMA foreign_keys=OFF")  # a table rebuild drops a referenced table (outside a transaction)
        cursor.execute("BEGIN IMMEDIATE")
        try:
            for step in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[step]:
                    _run(cursor, statement)
            broken = cursor.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise StorageError(f"upgrading the library at {path.parent} would break {len(broken)} references")
            cursor.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
            cursor.execute("COMMIT")
        except BaseException:
            cursor.execute("ROLLBACK")
            raise
        finally:
            cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        connection.close()
