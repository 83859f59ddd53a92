"""The app in a real browser: upload and ingest a PDF, ask a cited question, delete; bad files in a batch.

Screenshots of each tab go to tests/ui/screenshots/ for review.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from gradio_client import Client
from playwright.sync_api import Browser, Page, expect
from samples import text_pdf
from ui_support import USERS, choose_collection, new_context, table_rows, upload_and_ingest

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
PAPER = SHARED_DATA / "pdf_papers_papermage_fixtures" / "2304.02623v1.pdf"
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
BENCH_TIMEOUT_MS = 150_000  # the first run on a machine encodes the benchmark text (about a minute on 2 cores)


@dataclass
class Paper:
    path: Path
    title: str  # (part of) the title the library should show
    question: str
    answer_word: str  # a word the answer should contain
    has_abstract: bool


def _paper(folder: Path) -> Paper:
    """A real paper from the shared data when present, else a small generated PDF."""
    if PAPER.exists():
        return Paper(
            PAPER, "Beyond Summarization", "How do the authors characterize expository writing?", "expository", True
        )
    path = folder / "tidal-power.pdf"
    path.write_bytes(
        text_pdf(
            "Notes on Tidal Power",
            [
                [
                    "Tidal power converts the energy of the tides into electricity.",
                    "A tidal barrage holds water behind a dam at high tide and releases it through turbines.",
                    "Tidal stream generators work like underwater wind turbines in fast currents.",
                    "The tides are predictable, which makes tidal power a reliable source of energy.",
                ]
            ],
        )
    )
    return Paper(path, "Notes on Tidal Power", "How does a tidal barrage produce electricity?", "barrage", False)


def _screenshot(page: Page, name: str) -> None:
    for close in page.locator(".toast-close").all():  # a notice of an earlier step is not part of this tab
        close.click()
    expect(page.locator(".toast-close")).to_have_count(0)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_upload_ask_and_delete_a_paper(page: Page, tmp_path: Path) -> None:
    paper = _paper(tmp_path)
    choose_collection(page, "papers")
    log = upload_and_ingest(page, [paper.path])
    assert re.search(rf"{re.escape(paper.path.name)}: ingested \((\d+) pages", log), log
    assert not re.search(r"/[0-9a-f]{32,}/", log), f"the log shows upload temp folders:\n{log}"
    documents = page.locator("#documents")
    expect(documents).to_contain_text(paper.title)
    expect(documents).to_contain_text("ingested")
    _screenshot(page, "library")

    page.get_by_role("tab", name="Ask").click()
    page.locator("#session-name textarea").fill("first reading")
    page.click("#session-new")
    expect(page.locator("#session input")).to_have_value("first reading (0 questions)")
    expect(page.locator("#session-status")).to_contain_text("started session 'first reading'")
    page.locator("#ask-collections input").click()
    page.get_by_role("option", name="papers").click()
    page.locator("#question textarea").fill(paper.question)
    page.click("#ask-btn")
    # the first ask loads the model and encodes the collection (seconds on 2 cores); later asks reuse its index
    expect(page.locator("#timing")).to_contain_text("ms", timeout=90_000)
    expect(page.locator("#session input")).to_have_value("first reading (1 question)")
    expect(page.locator("#session-status")).not_to_contain_text("started session")  # stale once answered
    expect(page.locator("#history")).to_contain_text(paper.question)
    answer = page.locator("#answer").inner_text()
    assert paper.answer_word in answer.lower() and "No sentence" not in answer, answer
    rows = table_rows(page, "citations")
    assert rows, "no citations shown"
    rank, title, page_number, quote, score = rows[0]
    assert rank == "1" and paper.title in title and re.fullmatch(r"\d+", page_number), rows[0]
    assert len(quote.split()) >= 3 and float(score) > 0, rows[0]
    page.locator("#citations [role=row][data-index] [role=gridcell]").nth(3).click()  # the first quoted sentence
    expect(page.locator("#cited-page img")).to_be_visible()
    expect(page.locator("#cited-page")).to_contain_text(f"page {page_number}")
    assert page.locator("#cited-page img").evaluate("img => img.naturalWidth") > 300
    expect(page.locator("#evidence mark")).to_have_text(quote)
    page.locator("#session-name textarea").fill("paper questions")
    page.click("#session-rename")
    expect(page.locator("#session input")).to_have_value("paper questions (1 question)")
    box = page.locator("#export-btn").bounding_box()  # a button, not a block stretched over the row
    assert box and box["height"] < 60 and box["width"] < 320, box
    page.click("#export-btn")
    with page.expect_download() as download:
        page.locator("#export-file a").first.click()
    exported = Path(download.value.path()).read_text()
    href = page.locator("#export-file a").first.get_attribute("href")
    assert href.startswith("data:text/markdown"), href[:80]  # the file is in the link: no URL another user could fetch
    assert exported.startswith("# paper questions") and f"## {paper.question}" in exported, exported[:500]
    _screenshot(page, "ask")
    page.locator("#question textarea").fill("")
    page.click("#ask-btn")
    expect(page.locator("#answer")).to_contain_text("Error: the question is empty")
    expect(page.locator("#evidence mark")).to_have_count(0)  # the last answer's cited sentence went with it
    expect(page.locator("#cited-page img")).to_be_hidden()

    page.get_by_role("tab", name="Summarize").click()
    expect(page.locator("#summary-collection input")).to_have_value("papers")
    page.locator("#summary-budget input").fill("60")
    page.click("#summarize-btn")
    # the shipped model, not a fallback; summarizing takes seconds (more on a loaded machine)
    expect(page.locator("#summary-label")).to_contain_text("indexpool", timeout=60_000)
    expect(page.locator("#summary-label")).to_contain_text("1 of 1 documents")
    sentences = table_rows(page, "summary")
    assert all(paper.title in row[2] and re.fullmatch(r"\d+", row[3]) for row in sentences), sentences
    words = [len(row[1].split()) for row in sentences]  # whole sentences until the budget is reached
    assert words and sum(words) - max(words) < 60, sentences
    expect(page.locator("#summary-rouge")).to_contain_text(
        "ROUGE F1 against its abstract: ROUGE-1" if paper.has_abstract else "no abstract, so no ROUGE"
    )
    _screenshot(page, "summarize")

    page.get_by_role("tab", name="Dashboard").click()
    for plot in ("stages", "histogram", "counts", "memory"):
        expect(page.locator(f"#plot-{plot} img")).to_be_visible()
    named = "Latency per stage over time plot visualising provided data"  # not "undefined plot …" (a screen reader)
    expect(page.locator("#plot-stages img")).to_have_attribute("alt", named)
    expect(page.locator("#latency-percentiles")).to_contain_text("summarize")
    assert re.search(r"ask\s+\d+\s+[\d.]+\s+[\d.]+", page.locator("#latency-percentiles").inner_text())
    page.locator("#bench-tokens input").fill("32768")
    page.click("#bench-btn")
    # the embedded sample's text, which every install has: no shared data needed
    expect(page.locator("#plot-bench img")).to_be_visible(timeout=BENCH_TIMEOUT_MS)
    methods = {row[0]: row for row in table_rows(page, "bench-table")}
    assert float(methods["indexpool"][2]) * 4 == float(methods["uncompressed"][2]), methods
    expect(page.locator("#bench-status")).to_contain_text("32,768 tokens of Python stdlib docs")
    expect(page.get_by_text(re.compile(r"processing \|"))).to_have_count(0)  # the refresh after the benchmark
    _screenshot(page, "dashboard")

    page.get_by_role("tab", name="Settings").click()
    expect(page.locator("#top-k input")).to_have_value("5")
    page.locator("#top-k input").fill("2")
    page.locator("#alpha input").fill("0.9")
    page.click("#settings-save")
    expect(page.locator("#settings-status")).to_contain_text("α + β + γ must add up to 1, got 1.40")
    page.locator("#preset input").click()
    page.get_by_role("option", name="technical").click()
    expect(page.locator("#alpha input")).to_have_value("0.3")
    page.click("#settings-save")
    expect(page.locator("#settings-status")).to_contain_text("saved: top-k 2, reader indexpool")  # the default
    _screenshot(page, "settings")
    page.get_by_role("tab", name="Ask").click()
    page.locator("#question textarea").fill(paper.question)
    page.click("#ask-btn")
    expect(page.locator("#session input")).to_have_value("paper questions (2 questions)")
    assert len(table_rows(page, "citations")) == 2
    page.click("#session-delete")  # asks first, naming what would go
    expect(page.locator("#session-status")).to_contain_text("Delete session 'paper questions' and its 2 questions?")
    page.click("#session-delete-cancel")
    expect(page.locator("#session-delete-confirm")).to_be_hidden()
    expect(page.locator("#session input")).to_have_value("paper questions (2 questions)")

    page.get_by_role("tab", name="Library").click()
    document_id = table_rows(page, "documents")[0][0]
    page.locator("#delete-id textarea").fill(document_id)
    page.click("#delete-btn")  # asks first: nothing is removed yet
    expect(page.locator("#library-status")).to_contain_text(f"Delete {document_id} ({paper.title}")
    page.click("#delete-cancel")
    expect(page.locator("#library-status")).to_contain_text("nothing deleted")
    expect(documents).to_contain_text(paper.title)
    page.click("#delete-btn")
    page.click("#delete-confirm")
    expect(page.locator("#library-status")).to_contain_text(f"removed {document_id}")
    expect(documents).not_to_contain_text(paper.title)

    page.get_by_role("tab", name="Ask").click()
    page.click("#session-delete")
    page.click("#session-delete-confirm")
    expect(page.locator("#session-status")).to_contain_text("deleted session 'paper questions'")
    expect(page.locator("#session input")).to_have_value("no session (answers are not kept)")


def test_a_broken_file_fails_alone(page: Page, tmp_path: Path) -> None:
    broken = tmp_path / "bad.pdf"
    broken.write_bytes(os.urandom(5))
    good = tmp_path / "notes.txt"
    good.write_text(
        "Lighthouses guide ships along dangerous coasts.\n\nTheir lamps rotate to make a "
        "recognisable pattern of flashes.\n"
    )
    program = tmp_path / "setup.exe"  # a type ingest does not read: chosen with the others, it fails alone
    program.write_bytes(b"MZ\x90\x00" + os.urandom(60))
    choose_collection(page, "mixed")
    log = upload_and_ingest(page, [broken, good, program])
    assert re.search(r"bad\.pdf: error - \S", log), log
    assert re.search(r"setup\.exe: error - \S", log), log
    assert "notes.txt: ingested" in log, log
    rows = {row[1]: row for row in table_rows(page, "documents")}
    assert rows["bad.pdf"][2:4] == ["bad.pdf", "error"] and rows["bad.pdf"][7], rows  # id, title, file, status, …
    assert any(row[3] == "ingested" for title, row in rows.items() if title != "bad.pdf"), rows
    _screenshot(page, "library-errors")

    copy = tmp_path / "notes-copy.txt"
    copy.write_bytes(good.read_bytes())
    log = upload_and_ingest(page, [copy])
    assert "notes-copy.txt: duplicate - same content as notes.txt" in log, log


def test_the_ask_api_keeps_its_two_parameters_and_three_results(server_url: str) -> None:
    """README's gradio_client example (and scripts/load_test.py): sessions and citation state stay out of it."""
    client = Client(server_url, verbose=False)
    answer, citations, timing = client.predict(["no-such-collection"], "What is tidal power?", api_name="/ask")
    assert "no collection named" in answer and timing == "", (answer, citations, timing)
    answer, *_ = client.predict("no-such-collection", "What is tidal power?", api_name="/ask")  # a string, one name
    assert "no collection named 'no\\-such\\-collection'" in answer, answer
    answer, *_ = client.predict(["no-such-collection"], None, api_name="/ask")
    assert "the question is empty" in answer, answer


def _login(browser: Browser, url: str, user: str, password: str) -> Page:
    page = new_context(browser).new_page()
    page.goto(url)
    page.get_by_label("username").fill(user)
    page.get_by_label("password").fill(password)
    page.get_by_role("button", name="Login").click()
    page.wait_for_selector("#ingest-btn")
    page.get_by_role("tab", name="Ask").click()
    return page


def _session_names(page: Page) -> list[str]:
    page.locator("#session input").click()
    names = [name.split("\n")[-1].strip() for name in page.get_by_role("option").all_inner_texts()]  # after a ✓
    page.keyboard.press("Escape")
    return names


def test_with_auth_each_user_sees_only_their_sessions(browser: Browser, auth_server_url: str) -> None:
    anonymous = new_context(browser).new_page()
    anonymous.goto(auth_server_url)
    anonymous.get_by_label("username").fill("alice")
    anonymous.get_by_label("password").fill("not her password")
    anonymous.get_by_role("button", name="Login").click()
    expect(anonymous.get_by_text("Incorrect Credentials")).to_be_visible()
    expect(anonymous.locator("#ingest-btn")).to_have_count(0)

    pages = {user: _login(browser, auth_server_url, user, password) for user, password in USERS.items()}
    for user, page in pages.items():
        page.locator("#session-name textarea").fill(f"{user}'s reading")
        page.click("#session-new")
        expect(page.locator("#session input")).to_have_value(f"{user}'s reading (0 questions)")
    for user, page in pages.items():
        page.reload()
        page.get_by_role("tab", name="Ask").click()
        names = _session_names(page)
        assert names == ["no session (answers are not kept)", f"{user}'s reading (0 questions)"], (user, names)
    for page in pages.values():
        page.context.close()
    anonymous.context.close()


def test_summarize_offers_the_collection_just_uploaded_to(page: Page, tmp_path: Path) -> None:
    """The Summarize tab's collection follows the Library tab's: after an upload into "zz-minutes" it offers that
    collection and its document, not the first collection by name."""
    for collection, name, text in [
        ("aa-earlier", "earlier.txt", "An earlier collection holds this note about the weather."),
        ("zz-minutes", "minutes.txt", "The committee met on Monday. It approved the new library building."),
    ]:
        (tmp_path / name).write_text(text)
        choose_collection(page, collection)
        assert ": ingested" in upload_and_ingest(page, [tmp_path / name])
    page.get_by_role("tab", name="Summarize").click()
    expect(page.locator("#summary-collection input")).to_have_value("zz-minutes")
    page.locator("#summary-documents input").click()
    expect(page.get_by_role("option", name=re.compile(r"\d+: minutes"))).to_be_visible()
