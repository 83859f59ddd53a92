"""The app over two shards, in the browser: documents uploaded to `indexpool serve --shards 2` are answered from,
with the citations of one process (each rank holds some of them)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, expect
from ui_support import choose_collection, new_context, table_rows, upload_and_ingest

SCREENSHOTS = Path(__file__).parent / "screenshots"
TEXTS = {
    "whales.txt": "Whales are marine mammals. They breathe air through a blowhole on the top of the head. The blue"
    " whale is the largest animal known to have lived. It feeds almost only on krill.",
    "trains.txt": "The first public railway to use steam locomotives opened in 1825. It ran between Stockton and"
    " Darlington. High-speed trains run on dedicated tracks. Some reach more than 300 kilometres per hour.",
    "budget.txt": "The budget committee met on Monday. It approved the new library building. Construction starts"
    " in the spring. The architect expects it to take two years.",
}


def test_questions_over_two_shards(browser: Browser, shard_server_url: str, tmp_path: Path) -> None:
    for name, text in TEXTS.items():
        (tmp_path / name).write_text(text)
    context = new_context(browser)
    page = context.new_page()
    page.goto(shard_server_url)
    page.wait_for_selector("#ingest-btn")
    choose_collection(page, "notes")
    log = upload_and_ingest(page, [tmp_path / name for name in TEXTS])
    assert log.count(": ingested") == 3, log
    page.get_by_role("tab", name="Ask").click()
    expect(page.locator("#history")).to_contain_text("Without a session")  # not an empty panel
    page.locator("#ask-collections input").click()
    page.get_by_role("option", name="notes").click()
    for question, source, word in [
        ("How do whales breathe?", "whales.txt", "blowhole"),
        ("When did the first steam railway open?", "trains.txt", "1825"),
    ]:
        page.locator("#question textarea").fill(question)
        page.click("#ask-btn")
        expect(page.locator("#answer")).to_contain_text(word, timeout=90_000)
        rows = table_rows(page, "citations")
        assert source in rows[0][1], rows
        expect(page.locator("#timing")).to_contain_text("shards")  # the ranks answered: a stage of their own
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "ask-shards.png"), full_page=True)
    context.close()
