"""With ``serve --auth``, each user's library is private: another user cannot list, read, ask over, summarize,
delete or download any of it, through the API (``gradio_client``) or the browser; nothing shows before a login."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from gradio_client import Client, handle_file
from playwright.sync_api import Browser, expect
from samples import text_pdf
from ui_support import USERS, new_context

SECRET = "alices-secret-notes"
QUESTION = "Where does the lighthouse keeper live?"


@pytest.fixture(scope="module")
def alice_ingested(auth_server: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Alice uploads a PDF into her collection through the API."""
    url, folder = auth_server
    pdf = tmp_path_factory.mktemp("alice") / "lighthouse-notes.pdf"
    pdf.write_bytes(text_pdf("Lighthouse notes", [["The lighthouse keeper lives on the rock.", "He rows ashore."]]))
    alice = Client(url, auth=("alice", USERS["alice"]), verbose=False)
    log, *_ = alice.predict([handle_file(str(pdf))], SECRET, "", [], api_name="/ingest")
    assert "lighthouse-notes.pdf: ingested" in log, log
    return {"url": url, "folder": folder, "alice": alice, "file": pdf.name}


def test_another_user_cannot_reach_a_private_collection_through_the_api(alice_ingested: dict) -> None:
    url, alice = alice_ingested["url"], alice_ingested["alice"]
    answer, *_ = alice.predict([SECRET], QUESTION, api_name="/ask")
    assert "lighthouse keeper lives on the rock" in answer, answer  # her own collection answers her

    bob = Client(url, auth=("bob", USERS["bob"]), verbose=False)
    _, documents, ask_choices = bob.predict("default", [], api_name="/refresh")
    assert SECRET not in str(ask_choices) and SECRET not in str(documents)
    answer, citations, timing = bob.predict([SECRET], QUESTION, api_name="/ask")
    answer = answer.replace("\\", "")  # Markdown escapes
    assert f"no collection named '{SECRET}' (collections: none yet)" in answer, answer
    assert "lighthouse" not in str(citations) + answer
    table = bob.predict(SECRET, api_name="/documents")
    assert "lighthouse" not in str(table).lower()
    status, *_ = bob.predict(SECRET, "lighthouse-notes.pdf", [], api_name="/delete")
    assert f"no collection named '{SECRET}'" in status
    label, sentences, _ = bob.predict(SECRET, [], 50, "lead", api_name="/summarize")
    assert f"no collection named '{SECRET}'" in label.replace("\\", "") and "lighthouse" not in str(sentences).lower()
    answer, *_ = alice.predict([SECRET], QUESTION, api_name="/ask")  # still there for alice
    assert "lighthouse keeper lives on the rock" in answer


def test_uploads_leave_the_web_servers_temporary_folder(alice_ingested: dict) -> None:
    temporary = alice_ingested["folder"] / "uploads"  # GRADIO_TEMP_DIR of the test server
    assert not [p for p in temporary.rglob(alice_ingested["file"]) if p.is_file()]


def test_nothing_about_the_library_shows_before_a_login(alice_ingested: dict) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for path in ("", "config", "gradio_api/info", "info"):
        try:
            with opener.open(alice_ingested["url"] + path, timeout=10) as response:
                body = response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            body = error.read().decode("utf-8", "replace")
        assert SECRET not in body, path


def test_in_the_browser_another_user_sees_none_of_it(browser: Browser, alice_ingested: dict) -> None:
    page = new_context(browser).new_page()
    page.goto(alice_ingested["url"])
    page.get_by_label("username").fill("bob")
    page.get_by_label("password").fill(USERS["bob"])
    page.get_by_role("button", name="Login").click()
    page.wait_for_selector("#ingest-btn")
    page.locator("#collection input").click()
    library_choices = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    page.get_by_role("tab", name="Ask").click()
    page.locator("#ask-collections input").click()
    ask_choices = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    assert not any(SECRET in choice for choice in library_choices + ask_choices), (library_choices, ask_choices)
    expect(page.locator("body")).not_to_contain_text(SECRET)
    page.context.close()


def test_the_app_is_built_without_the_library_in_its_config(tmp_path: Path) -> None:
    """The page config and API info are served before a login: they hold no collection name (choices fill per user
    when the page loads)."""
    import json

    from app.services import Services
    from app.ui.app import build_app

    services = Services(tmp_path / "library")
    (tmp_path / "notes.txt").write_text("The zebra runs fast.")
    assert [e.status for e in services.ingest.ingest([tmp_path / "notes.txt"], SECRET)] == ["ingested"]
    app = build_app(services)
    assert SECRET not in json.dumps(app.get_config_file(), default=str)
    assert SECRET not in json.dumps(app.get_api_info(), default=str)
