"""The Gradio app behind ``indexpool serve``: a Library tab and an Ask tab.

Every handler here only calls ``app.services.Services``, the same services the CLI uses. Errors the services
report (``UserError``) reach the user as a warning toast and a one-line message, never as a stack trace.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import pandas as pd

from app.sample import build_sample
from app.services import IngestEvent, Services, UserError
from ingest.sources import Limits
from storage.db import StorageError

DEFAULT_COLLECTION = "default"
UPLOAD_TYPES = [".pdf", ".txt", ".md", ".markdown", ".html", ".htm", ".jsonl", ".zip"]
DOCUMENT_COLUMNS = ["id", "title", "status", "pages", "tokens", "needs OCR", "error"]
CITATION_COLUMNS = ["rank", "document", "page", "quoted sentence", "score"]
# Offline means offline: system fonts instead of the default theme's web fonts.
THEME = gr.themes.Default(font=["system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"])

_UNCHANGED = (gr.skip(), gr.skip(), gr.skip())  # the three library views, left as they are
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~])")


def _escape_markdown(text: str) -> str:
    """Quote document text literally inside Markdown (no emphasis, links or HTML from the source)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _fail(error: Exception) -> str:
    """Show a services error as a warning toast and return it as a one-line message."""
    gr.Warning(str(error))
    return f"Error: {error}"


# ----------------------------------------------------------------------------------------------- library


def collection_names(services: Services) -> list[str]:
    return [info.name for info in services.collections()]


def documents_table(services: Services, collection: str) -> pd.DataFrame:
    """The documents of ``collection`` (an empty table for a collection not created yet)."""
    if collection not in collection_names(services):
        return pd.DataFrame(columns=DOCUMENT_COLUMNS)
    rows = [
        [
            d.id,
            d.title,
            d.status,
            d.pages,
            d.tokens,
            ", ".join(map(str, d.needs_ocr_pages)) if d.needs_ocr_pages else "",
            d.error or "",
        ]
        for d in services.documents(collection)
    ]
    return pd.DataFrame(rows, columns=DOCUMENT_COLUMNS)


def refresh(services: Services, collection: str, asked: list[str] | None) -> tuple[Any, pd.DataFrame, Any]:
    """Current collection choices for both tabs and the chosen collection's documents."""
    names = collection_names(services)
    library_choices = sorted({*names, collection or DEFAULT_COLLECTION})
    ask_value = [name for name in asked or [] if name in names]
    return (
        gr.update(choices=library_choices),
        documents_table(services, collection),
        gr.update(choices=names, value=ask_value),
    )


def _upload_folders(services: Services) -> re.Pattern[str]:
    """The library's folder of uploaded files, as it appears in sources and messages."""
    return re.compile(re.escape(f"{services.library.home.resolve()}/uploads/") + r"[^/]+/")


def _display_name(text: str, upload_folders: re.Pattern[str]) -> str:
    """A source (or a message naming sources) with uploaded files shown by the names the user gave them."""
    return upload_folders.sub("", text)


def _event_line(event: IngestEvent, upload_folders: re.Pattern[str]) -> str:
    line = f"[{event.index}/{event.total}] {_display_name(event.source, upload_folders)}: {event.status}"
    if event.status in ("ingested", "replaced"):
        line += f" ({event.pages} pages, {event.tokens:,} tokens, {event.sentences:,} sentences, {event.seconds:.1f} s)"
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
    progress: gr.Progress = gr.Progress(),  # noqa: B008 (Gradio's way to ask for a progress tracker)
) -> Iterator[tuple[Any, ...]]:
    """Ingest the uploaded files into ``collection``, streaming one log line per input.

    Yields (log, collection choices, documents table, Ask collection choices); the last three only at the end.
    """
    if not files:
        yield _fail(UserError("choose one or more files to upload first")), *_UNCHANGED
        return
    upload_folders = _upload_folders(services)
    lines = [f"ingesting {len(files)} uploaded file(s) into '{collection}' ..."]
    yield "\n".join(lines), *_UNCHANGED
    progress(0, desc="reading the uploaded files")
    started = time.perf_counter()
    events: list[IngestEvent] = []
    try:
        for event in services.ingest_uploads([Path(f) for f in files], collection, password or None):
            events.append(event)
            lines.append(_event_line(event, upload_folders))
            progress((event.index, event.total), desc=_display_name(event.source, upload_folders), unit="files")
            yield "\n".join(lines), *_UNCHANGED
    except (UserError, StorageError) as error:
        lines.append(_fail(error))
    else:
        summary = services.summarize_events(events, time.perf_counter() - started)
        lines.append(
            f"done: {summary.files} inputs, {summary.ingested} ingested, {summary.unchanged} unchanged, "
            f"{summary.errors} failed; {summary.pages} pages, {summary.tokens:,} tokens "
            f"in {summary.seconds:.1f} s ({summary.pages_per_s:.1f} pages/s, "
            f"{summary.tokens_per_s:,.0f} tokens/s)"
        )
    yield "\n".join(lines), *refresh(services, collection, asked)


def delete_document(services: Services, collection: str, reference: str, asked: list[str] | None) -> tuple[Any, ...]:
    """Remove one document (by id or title) from ``collection``; returns a status line and refreshed views."""
    if not reference.strip():
        return _fail(UserError("type the id or title of the document to delete")), *_UNCHANGED
    try:
        removed = services.remove(collection, [reference.strip()])
    except (UserError, StorageError) as error:
        return _fail(error), *_UNCHANGED
    names = ", ".join(f"{d.id} ({d.title})" for d in removed)
    return f"removed {names} from '{collection}'", *refresh(services, collection, asked)


# ----------------------------------------------------------------------------------------------- ask


def ask(services: Services, collections: list[str] | None, question: str) -> tuple[str, pd.DataFrame, str]:
    """Answer ``question`` over the chosen collections: the answer, its citations and a timing line."""
    try:
        answer = services.ask(collections or [], question)
    except (UserError, StorageError) as error:
        return f"**{_escape_markdown(_fail(error))}**", pd.DataFrame(columns=CITATION_COLUMNS), ""
    citations = pd.DataFrame(
        [
            [rank, c.title, "" if c.page is None else c.page, c.text, round(c.score, 3)]
            for rank, c in enumerate(answer.citations, start=1)
        ],
        columns=CITATION_COLUMNS,
    )
    timings = ", ".join(f"{stage} {ms:.1f} ms" for stage, ms in answer.timings_ms.items())
    return _escape_markdown(answer.answer), citations, f"{answer.reader} reader: {timings}"


# ----------------------------------------------------------------------------------------------- app


def build_app(services: Services) -> gr.Blocks:
    """The Blocks app; every event calls one of the module-level handlers above with ``services``."""
    bind = functools.partial
    with gr.Blocks(title="IndexPool", analytics_enabled=False) as app:
        gr.Markdown("# IndexPool\nLong documents in, cited answers out.")
        with gr.Tabs():
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
                upload = gr.File(
                    file_count="multiple",
                    file_types=UPLOAD_TYPES,
                    label="Files (PDF, text, Markdown, HTML, JSONL or a .zip of them)",
                    elem_id="upload",
                )
                ingest_button = gr.Button("Ingest", variant="primary", elem_id="ingest-btn")
                log = gr.Textbox(label="Ingestion log", lines=8, max_lines=20, interactive=False, elem_id="ingest-log")
                documents = gr.Dataframe(
                    headers=DOCUMENT_COLUMNS,
                    label="Documents",
                    interactive=False,
                    wrap=True,
                    column_widths=["6%", "38%", "9%", "7%", "9%", "10%", "21%"],
                    elem_id="documents",
                )
                with gr.Row():
                    reference = gr.Textbox(label="Document to delete (id or title)", elem_id="delete-id", scale=3)
                    delete_button = gr.Button("Delete", variant="stop", elem_id="delete-btn", scale=1)
                library_status = gr.Markdown(elem_id="library-status")
            with gr.Tab("Ask", id="ask"):
                ask_collections = gr.Dropdown(
                    choices=collection_names(services),
                    multiselect=True,
                    allow_custom_value=True,  # API clients may name any collection; services.ask checks it
                    label="Collections",
                    elem_id="ask-collections",
                )
                question = gr.Textbox(
                    label="Question", placeholder="Ask about the chosen collections", elem_id="question"
                )
                ask_button = gr.Button("Ask", variant="primary", elem_id="ask-btn")
                answer = gr.Markdown(elem_id="answer")
                citations = gr.Dataframe(
                    headers=CITATION_COLUMNS,
                    label="Citations",
                    interactive=False,
                    wrap=True,
                    column_widths=["6%", "24%", "6%", "56%", "8%"],
                    elem_id="citations",
                )
                timing = gr.Markdown(elem_id="timing")

        views = [collection, documents, ask_collections]
        app.load(bind(refresh, services), [collection, ask_collections], views, api_name="refresh")
        collection.change(bind(documents_table, services), collection, documents, api_name="documents")
        ingest_button.click(
            bind(ingest_files, services),
            [upload, collection, password, ask_collections],
            [log, *views],
            api_name="ingest",
        )
        delete_button.click(
            bind(delete_document, services),
            [collection, reference, ask_collections],
            [library_status, *views],
            api_name="delete",
        )
        gr.on(
            [ask_button.click, question.submit],
            bind(ask, services),
            [ask_collections, question],
            [answer, citations, timing],
            api_name="ask",
            concurrency_limit=4,  # answering only reads the library (SQLite WAL): a few may run at once
        )
    return app


def serve(services: Services, host: str = "127.0.0.1", port: int = 7860, build_sample_if_empty: bool = True) -> None:
    """Start the app on ``host:port`` (never shared); an empty library gets the sample library first."""
    if build_sample_if_empty and not services.collections():
        build_sample(services, progress=print)
    app = build_app(services)
    app.queue().launch(
        server_name=host,
        server_port=port,
        share=False,
        quiet=True,
        show_error=False,
        ssr_mode=False,
        max_file_size=Limits().max_file_bytes,  # the same cap as the CLI's --max-file-mb default
        prevent_thread_lock=True,
        theme=THEME,
    )
    print(f"IndexPool is running at {app.local_url} (Ctrl+C to stop)", flush=True)
    app.block_thread()
