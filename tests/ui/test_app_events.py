"""The app's event wiring, read from the page config Gradio serves (no browser needed)."""

from __future__ import annotations

from pathlib import Path

from app.services import Services
from app.ui.app import build_app


def test_keeping_the_summarize_choices_in_step_never_covers_them(tmp_path: Path) -> None:
    """The events that refill the Summarize tab's collection and documents (the tab opening, the Library tab's
    collection changing, an upload or a delete ending) show no loading overlay there: while the machine is busy
    indexing, an overlay pending over the documents box took the user's clicks (a CI run's browser test waited
    20 s on it)."""
    config = build_app(Services(tmp_path / "library")).get_config_file()
    elem_ids = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
    refills = [d for d in config["dependencies"] if "summary-documents" in {elem_ids.get(o) for o in d["outputs"]}]
    assert len(refills) == 5  # tab select, Library collection change, collection input, after ingest, after delete
    assert {d["show_progress"] for d in refills} == {"hidden"}


def test_the_page_load_fills_the_choices_without_covering_them(tmp_path: Path) -> None:
    """The events of the page's load (the library's views, the last session reopened) fill the collection choices
    the tests and users click first: no loading overlay over them."""
    config = build_app(Services(tmp_path / "library")).get_config_file()
    loads = [d for d in config["dependencies"] if any(event == "load" for _, event in d["targets"])]
    assert len(loads) == 2
    assert {d["show_progress"] for d in loads} == {"hidden"}
