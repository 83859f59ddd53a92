"""The app recovers as a user expects: bad settings are named and the form stays usable; a new page reopens the last
session with its collections; one progress display per job."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

INGEST_TIMEOUT_MS = 90_000


def test_an_out_of_range_setting_is_named_and_the_form_keeps_its_values(page: Page) -> None:
    page.get_by_role("tab", name="Settings").click()
    expect(page.locator("#top-k input")).not_to_have_value("")  # the user's settings are shown
    page.click("#settings-save")
    expect(page.locator("#settings-status")).to_contain_text("saved:")
    page.locator("#alpha input").fill("-3")
    page.locator("#top-k input").fill("0")
    page.click("#settings-save")
    status = page.locator("#settings-status")
    expect(status).to_contain_text("must be")
    expect(status).not_to_contain_text("saved:")  # no stale line
    assert re.search(r"(α|top-k) must be", status.inner_text()), status.inner_text()  # the field is named
    expect(page.locator("#alpha input")).to_have_value("-3")  # what was typed, not an "Error" pill
    expect(page.locator("#top-k input")).to_have_value("0")
    for field, value in (("alpha", "0.5"), ("beta", "0.3"), ("gamma", "0.2"), ("top-k", "4")):
        page.locator(f"#{field} input").fill(value)
    page.click("#settings-save")
    expect(status).to_contain_text("saved: top-k 4")  # usable again without a reload


def test_a_new_page_reopens_the_last_session_and_its_collections(page: Page, tmp_path: Path) -> None:
    notes = tmp_path / "harbour-notes.txt"
    notes.write_text("The harbour master opens the lock gates at dawn. Ships wait outside until then.")
    box = page.locator("#collection input")
    box.fill("harbour")
    box.press("Enter")
    page.set_input_files("#upload input[type=file]", str(notes))
    page.click("#ingest-btn")
    expect(page.locator("#ingest-log textarea")).to_have_value(re.compile(r"^done: ", re.M), timeout=INGEST_TIMEOUT_MS)
    expect(page.locator("#upload")).not_to_contain_text("harbour-notes")  # the next batch starts empty
    page.get_by_role("tab", name="Ask").click()
    page.locator("#session-name textarea").fill("harbour questions")
    page.click("#session-new")
    page.locator("#ask-collections input").click()
    page.get_by_role("option", name="harbour").click()
    page.keyboard.press("Escape")
    page.locator("#question textarea").fill("When are the lock gates opened?")
    page.click("#ask-btn")
    expect(page.locator("#session input")).to_have_value("harbour questions (1 question)", timeout=90_000)

    page.reload()
    page.wait_for_selector("#ingest-btn")
    page.get_by_role("tab", name="Ask").click()
    expect(page.locator("#session input")).to_have_value("harbour questions (1 question)")
    expect(page.locator("#ask-collections")).to_contain_text("harbour")
    expect(page.locator("#history")).to_contain_text("When are the lock gates opened?")


def test_the_dashboard_plots_carry_no_label_over_their_titles(page: Page) -> None:
    """Gradio's block label sat over the plots' own titles: every dashboard plot is built without it."""
    config = page.evaluate("() => window.gradio_config")
    props = [c.get("props", {}) for c in config["components"]]
    plots = {p["elem_id"]: p for p in props if str(p.get("elem_id")).startswith("plot-")}
    assert {"plot-stages", "plot-histogram", "plot-counts", "plot-read", "plot-memory", "plot-bench"} <= set(plots)
    assert all(props.get("show_label") is False for props in plots.values()), plots


def test_each_job_shows_one_progress_display(page: Page) -> None:
    """Ingest shows its progress on the log only, a summary on its table only (not once per output)."""
    config = page.evaluate("() => window.gradio_config")
    by_id = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
    for api_name, elem_id in (("ingest", "ingest-log"), ("summarize", "summary")):
        (event,) = [d for d in config["dependencies"] if d.get("api_name") == api_name]
        shown = event.get("show_progress_on") or event["outputs"]
        assert [by_id[i] for i in shown] == [elem_id], (api_name, [by_id[i] for i in shown])
