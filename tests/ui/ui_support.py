"""Helpers shared by the browser tests: browser contexts, test logins, and the Library tab's steps (a collection, an
upload, a table's rows). Small generated PDFs come from ``samples.text_pdf``."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Browser, BrowserContext, Page, expect

USERS = {"alice": "wonderland-42", "bob": "builder-7"}  # the logins of the app started with --auth
INGEST_TIMEOUT_MS = 90_000


def new_context(browser: Browser) -> BrowserContext:
    """A fresh browser context (its own cookies, so its own login)."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.set_default_timeout(20_000)
    return context


def choose_collection(page: Page, name: str) -> None:
    """Type a (new) collection name into the Library tab's collection box; again when the page's first refresh, still
    under way on a busy host, put the library's first collection in its place (it reads the box as the page opened
    it: "default")."""
    box = page.locator("#collection input")
    for _ in range(3):
        box.fill(name)
        box.press("Enter")
        page.wait_for_timeout(500)  # long enough for a refresh already answered to arrive
        if box.input_value() == name:
            break
    expect(box).to_have_value(name)


def upload_and_ingest(page: Page, paths: list[Path]) -> str:
    """Upload ``paths``, press Ingest, wait for the end of the log and return the log."""
    page.set_input_files("#upload input[type=file]", [str(p) for p in paths])
    for path in paths:
        expect(page.locator("#upload")).to_contain_text(path.stem)  # shown as "name .ext"
    log = page.locator("#ingest-log textarea")
    previous = log.input_value()
    page.click("#ingest-btn")
    expect(log).not_to_have_value(previous)  # this run's log, not the last one
    expect(log).to_have_value(re.compile(r"^done: ", re.M), timeout=INGEST_TIMEOUT_MS)
    return log.input_value()


def table_rows(page: Page, elem_id: str) -> list[list[str]]:
    """The visible body rows of a gr.Dataframe (its ARIA grid), as cell texts; waits for the first row to render."""
    rows = page.locator(f"#{elem_id} [role=row][data-index]")
    expect(rows.first).to_be_visible()
    return [[cell.strip() for cell in row.locator("[role=gridcell]").all_inner_texts()] for row in rows.all()]
