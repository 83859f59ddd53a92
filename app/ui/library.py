"""The Library tab: upload files into a collection with a per-file log, the documents table, how far the collection's
index has come, deleting a document."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from app.services import Services, UserError
from app.services.ingest import IngestEvent, IngestSummary
from app.services.library import by_title
from app.ui.common import fail, user_of

DEFAULT_COLLECTION = "default"
DOCUMENT_COLUMNS = ["id", "title", "file", "status", "pages", "tokens", "needs OCR", "error or warning"]
UNCHANGED = (gr.skip(), gr.skip(), gr.skip())  # the three library views, left as they are


def documents_table(services: Services, collection: str, request: gr.Request) -> pd.DataFrame:
    """The documents of the user's ``collection`` by title (an empty table for a collection not created yet)."""
    user = user_of(request)
    if collection not in services.library.collection_names(user):
        return pd.DataFrame(columns=DOCUMENT_COLUMNS)
    rows = [
        [
            d.id,
            d.title,
            Path(d.source).name,  # a title read from the first page ("Potato") may not say which file it is
            d.status,
            d.pages or "",  # a text file has no pages: not "0"
            d.tokens,
            needs_ocr_cell(d.needs_ocr_pages, d.error),
            d.error or "; ".join(d.warnings or []),  # "damaged PDF: … read with pdfium instead" stays after a reload
        ]
        for d in by_title(services.library.documents(collection, user))
    ]
    return pd.DataFrame(rows, columns=DOCUMENT_COLUMNS)


def needs_ocr_cell(pages: list[int] | None, error: str | None) -> str:
    """The "needs OCR" column: the pages without text, or every page of a file refused for having none."""
    if pages:
        return ", ".join(map(str, pages))
    return "every page" if error and error.endswith("needs OCR") else ""


def refresh(
    services: Services, collection: str, asked: list[str] | None, request: gr.Request
) -> tuple[Any, pd.DataFrame, Any]:
    """The user's current collection choices for both tabs and the chosen collection's documents. The placeholder
    collection "default" gives way to the user's first collection when it holds nothing (a page opened on a library
    whose documents are all in other collections shows them, not an empty table)."""
    names = services.library.collection_names(user_of(request))
    placeholder = (collection or DEFAULT_COLLECTION) == DEFAULT_COLLECTION and DEFAULT_COLLECTION not in names
    if placeholder and names:
        collection = names[0]
    library_choices = sorted({*names, collection or DEFAULT_COLLECTION})
    ask_value = [name for name in asked or [] if name in names]
    return (
        gr.update(choices=library_choices, value=collection)
        if placeholder and names
        else gr.update(choices=library_choices),
        documents_table(services, collection, request),
        gr.update(choices=names, value=ask_value) if asked else gr.update(choices=names),  # none chosen: keep it so
    )


def index_status(services: Services, collection: str, asked: list[str] | None, request: gr.Request) -> tuple[str, str]:
    """How far the indexing has come for the Library tab's collection and for the Ask tab's chosen collections."""
    user = user_of(request)
    try:
        library = services.indexes.progress([collection] if collection else [], user).text()
        ask = services.indexes.progress(list(asked or []), user).text() if asked else ""
    except UserError as error:
        return f"Error: {error}", ""
    return library, ask


def _upload_folders(services: Services) -> re.Pattern[str]:
    """The library's folder of uploaded files, as it appears in sources and messages."""
    return re.compile(
        re.escape(f"{services.home.resolve()}/uploads/") + r"[^/]+/[^/]+/"
    )  # uploads/<user>/<collection>/


def _display_name(text: str, upload_folders: re.Pattern[str]) -> str:
    """A source (or a message naming sources) with uploaded files shown by the names the user gave them."""
    return upload_folders.sub("", text)


def _event_line(event: IngestEvent, upload_folders: re.Pattern[str]) -> str:
    line = f"[{event.index}/{event.total}] {_display_name(event.source, upload_folders)}: {event.status}"
    if event.status in ("ingested", "replaced"):
        line += f" ({event.sizes()})"
    if event.needs_ocr_pages:
        line += f" - needs OCR: no text on pages {', '.join(map(str, event.needs_ocr_pages))}"
    if event.message:
        line += f" - {_display_name(event.message, upload_folders)}"
    return line


def ingest_files(
    services: Services,
    files: list[str] | None,
    collection: str,
    password: str,
    asked: list[str] | None,
    request: gr.Request,
    progress: gr.Progress = gr.Progress(),  # noqa: B008 (Gradio's way to ask for a progress tracker)
) -> Iterator[tuple[Any, ...]]:
    """Ingest the uploaded files into ``collection``, streaming one log line per input.

    Yields (log, collection choices, documents table, Ask collection choices, the upload box); the views only at the
    end, when the upload box is emptied (its files are in the library now: the next batch starts empty).
    """
    if not files:
        yield fail(UserError("choose one or more files to upload first")), *UNCHANGED, gr.skip()
        return
    upload_folders = _upload_folders(services)
    lines = [f"ingesting {len(files)} uploaded file(s) into '{collection}' ..."]
    yield "\n".join(lines), *UNCHANGED, gr.skip()
    progress(0, desc="reading the uploaded files")
    started = time.perf_counter()
    events: list[IngestEvent] = []
    try:
        uploads = [Path(f) for f in files]
        for event in services.ingest.ingest_uploads(uploads, collection, password or None, user=user_of(request)):
            events.append(event)
            lines.append(_event_line(event, upload_folders))
            progress((event.index, event.total), desc=_display_name(event.source, upload_folders), unit="files")
            yield "\n".join(lines), *UNCHANGED, gr.skip()
    except UserError as error:
        lines.append(fail(error))
    else:
        summary = IngestSummary.of(events, time.perf_counter() - started)
        lines.append(
            f"done: {summary.files} inputs, {summary.ingested} ingested, {summary.unchanged} unchanged, "
            f"{summary.errors} failed; {summary.sizes()}"
        )
    yield "\n".join(lines), *refresh(services, collection, asked, request), None


def ask_to_delete(services: Services, collection: str, reference: str, request: gr.Request) -> tuple[Any, ...]:
    """The first step of Delete: name what would go and show the confirmation buttons (nothing is removed yet)."""
    reference = reference.strip()
    if not reference:
        return fail(UserError("type the id or title of the document to delete")), gr.update(visible=False)
    try:
        documents = services.library.documents(collection, user_of(request))
    except UserError as error:
        return fail(error), gr.update(visible=False)
    matches = [d for d in documents if reference in (str(d.id), d.title, d.source, Path(d.source).name)]
    if not matches:
        return fail(UserError(f"no document '{reference}' in collection '{collection}'")), gr.update(visible=False)
    names = ", ".join(f"{d.id} ({d.title})" for d in matches)
    return f"Delete {names} from '{collection}'? This cannot be undone.", gr.update(visible=True)


def cancel_delete() -> tuple[str, Any]:
    return "nothing deleted", gr.update(visible=False)


def delete_document(
    services: Services, collection: str, reference: str, asked: list[str] | None, request: gr.Request
) -> tuple[Any, ...]:
    """Remove one document (by id or title) from the user's ``collection``; a status line and refreshed views."""
    if not reference.strip():
        return fail(UserError("type the id or title of the document to delete")), *UNCHANGED
    try:
        removed = services.library.remove(collection, [reference.strip()], user_of(request))
    except UserError as error:
        return fail(error), *UNCHANGED
    names = ", ".join(f"{d.id} ({d.title})" for d in removed)
    return f"removed {names} from '{collection}'", *refresh(services, collection, asked, request)


@dataclass
class LibraryTab:
    collection: gr.Dropdown
    password: gr.Textbox
    upload: gr.File
    ingest: gr.Button
    log: gr.Textbox
    documents: gr.Dataframe
    reference: gr.Textbox
    delete: gr.Button
    confirm_row: gr.Row
    confirm: gr.Button
    cancel: gr.Button
    status: gr.Markdown
    index_status: gr.Markdown


def library_tab() -> LibraryTab:
    """The tab's components (the events are wired in ``app.ui.app``: they update the Ask tab too)."""
    with gr.Tab("Library", id="library"):
        with gr.Row():
            collection = gr.Dropdown(
                choices=[DEFAULT_COLLECTION],
                value=DEFAULT_COLLECTION,
                allow_custom_value=True,
                label="Collection",
                info="choose one or type a new name",
                elem_id="collection",
            )
            password = gr.Textbox(label="PDF password (optional)", type="password", elem_id="pdf-password")
        upload = gr.File(  # any type: a file ingest cannot read fails alone in the log, the others stay chosen
            file_count="multiple",
            label="Files (PDF, text, Markdown, HTML, XML, JSONL or a .zip of them)",
            elem_id="upload",
        )
        ingest = gr.Button("Ingest", variant="primary", elem_id="ingest-btn")
        log = gr.Textbox(label="Ingestion log", lines=8, max_lines=20, interactive=False, elem_id="ingest-log")
        documents = gr.Dataframe(
            headers=DOCUMENT_COLUMNS,
            label="Documents",
            interactive=False,
            wrap=True,
            column_widths=["5%", "24%", "16%", "8%", "6%", "7%", "7%", "27%"],
            max_height=2400,  # an error message wraps over several lines: shown whole, not under an inner scroll
            elem_id="documents",
        )
        index_status = gr.Markdown(elem_id="index-status")
        with gr.Row():
            reference = gr.Textbox(label="Document to delete (id or title)", elem_id="delete-id", scale=3)
            delete = gr.Button("Delete", variant="stop", elem_id="delete-btn", scale=1)
        status = gr.Markdown(elem_id="library-status")
        with gr.Row(visible=False, elem_id="delete-confirm-row") as confirm_row:
            confirm = gr.Button("Yes, delete it", variant="stop", elem_id="delete-confirm", scale=0, min_width=160)
            cancel = gr.Button("Cancel", elem_id="delete-cancel", scale=0, min_width=120)
    return LibraryTab(
        collection,
        password,
        upload,
        ingest,
        log,
        documents,
        reference,
        delete,
        confirm_row,
        confirm,
        cancel,
        status,
        index_status,
    )
