"""Chat sessions: answers recorded per session, rename, export, delete, per-user isolation, restarts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.services import Services, UserError


@pytest.fixture
def services(home: Path, tmp_path: Path) -> Services:
    notes = tmp_path / "whales.txt"
    notes.write_text("The whale is a large mammal.\n\nWhales breathe air through a blowhole.\n", encoding="utf-8")
    services = Services(home)
    assert [e.status for e in services.ingest.ingest([notes], "zoo")] == ["ingested"]
    return services


def test_answers_are_recorded_in_their_session_and_survive_a_restart(services: Services, home: Path) -> None:
    session = services.sessions.create("Whales")
    services.ask.ask(["zoo"], "How do whales breathe?", session_id=session.id)
    services.ask.ask(["zoo"], "What is a whale?", session_id=session.id)
    services.ask.ask(["zoo"], "Unrelated question about whales")  # no session

    restarted = Services(home)
    [info] = restarted.sessions.list()
    assert (info.id, info.name, info.questions) == (session.id, "Whales", 2)
    history = restarted.sessions.history(session.id)
    assert [turn["question"] for turn in history] == ["How do whales breathe?", "What is a whale?"]
    first = history[0]
    assert "blowhole" in first["answer"]
    document = restarted.library.document(first["citations"][0]["doc"])
    citation = first["citations"][0]
    assert document.text[citation["start"] : citation["end"]] == citation["text"]


def test_rename_export_and_delete(services: Services) -> None:
    session = services.sessions.create("first name")
    services.ask.ask(["zoo"], "How do whales breathe?", session_id=session.id)
    assert services.sessions.rename(session.id, "Whale breathing").name == "Whale breathing"

    markdown = services.sessions.export(session.id, "md")
    assert markdown.startswith("# Whale breathing") and "## How do whales breathe?" in markdown
    assert "“Whales breathe air through a blowhole.”" in markdown
    exported = json.loads(services.sessions.export(session.id, "json"))
    assert exported["session"]["name"] == "Whale breathing"
    assert exported["questions"][0]["citations"][0]["text"] == "Whales breathe air through a blowhole."
    with pytest.raises(UserError, match="unknown export format"):
        services.sessions.export(session.id, "pdf")

    services.sessions.delete(session.id)
    assert services.sessions.list() == []
    with pytest.raises(UserError, match=f"no session with id {session.id}"):
        services.sessions.history(session.id)


def test_a_cited_speaker_is_kept_in_the_session_and_a_version_4_library_gains_the_column(
    services: Services, home: Path
) -> None:
    """A transcript's citation names its speaker in the answer; the session kept it too ("Industrial Designer"), in
    its history and both exports, and a library of schema version 4 (no speaker kept) is upgraded in place."""
    import sqlite3

    old = services.sessions.create("before")
    services.ask.ask(["zoo"], "How do whales breathe?", session_id=old.id)
    database = sqlite3.connect(home / "library.db", isolation_level=None)  # as schema version 4 wrote it
    database.execute("ALTER TABLE citations DROP COLUMN speaker")
    database.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    database.close()
    services = Services(home)
    assert services.sessions.history(old.id)[0]["citations"][0]["speaker"] == ""  # kept, and no speaker
    meeting = home.parent / "meeting.txt"
    meeting.write_text(
        "Project Manager: Okay, let us start the meeting now.\n"
        "Industrial Designer: Right. My favourite animal is a cow, because cows are so calm.\n"
        "Marketing: Mine is a dog. Dogs are loyal friends.\n",
        encoding="utf-8",
    )
    assert [e.status for e in services.ingest.ingest([meeting], "talk")] == ["ingested"]
    session = services.sessions.create("animals")
    services.ask.ask(["talk"], "Is the favourite animal a cow?", session_id=session.id)
    cited = services.sessions.history(session.id)[0]["citations"][0]
    assert (cited["speaker"], cited["text"]) == (
        "Industrial Designer",
        "My favourite animal is a cow, because cows are so calm.",
    )
    assert json.loads(services.sessions.export(session.id, "json"))["questions"][0]["citations"][0]["speaker"]
    markdown = services.sessions.export(session.id, "md")
    assert "“Industrial Designer: My favourite animal is a cow, because cows are so calm.”" in markdown


def test_users_see_only_their_own_sessions(services: Services) -> None:
    alice = services.sessions.create("Alice's", user="alice")
    services.sessions.create("Bob's", user="bob")
    assert [s.name for s in services.sessions.list("alice")] == ["Alice's"]
    for attempt in (
        lambda: services.sessions.history(alice.id, "bob"),
        lambda: services.sessions.rename(alice.id, "mine now", "bob"),
        lambda: services.sessions.delete(alice.id, "bob"),
        lambda: services.ask.ask(["zoo"], "whales?", session_id=alice.id, user="bob"),
    ):
        with pytest.raises(UserError, match="no session with id"):
            attempt()
    assert [s.name for s in services.sessions.list("alice")] == ["Alice's"]


def test_bad_session_requests(services: Services) -> None:
    with pytest.raises(UserError, match="non-empty name"):
        services.sessions.create("   ")
    with pytest.raises(UserError, match="no session with id 99"):
        services.ask.ask(["zoo"], "whales?", session_id=99)
