"""The Gradio app behind ``indexpool serve``: one module per tab, each building from ``app.services`` only.

Errors the services report (``UserError``) reach the user as a warning toast and a one-line message, never as a
stack trace.
"""

from __future__ import annotations

import gradio as gr

from app.services import Services
from app.services.ingest import MAX_FILE_BYTES
from app.services.sample import build_sample
from app.ui.ask import ask_tab
from app.ui.common import IN_STEP, bind
from app.ui.dashboard import dashboard_tab
from app.ui.library import (
    ask_to_delete,
    cancel_delete,
    delete_document,
    documents_table,
    index_status,
    ingest_files,
    library_tab,
    refresh,
)
from app.ui.settings import settings_tab
from app.ui.summarize import follow_library, summarize_tab

INDEX_STATUS_EVERY_S = 2.0

# Offline means offline: system fonts instead of the default theme's web fonts.
THEME = gr.themes.Default(font=["system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"])
CSS = "#cache-table td, #cache-table th { white-space: nowrap; }"  # "165,775,360", never "165,775,36 / 0"


def build_app(services: Services) -> gr.Blocks:
    """The Blocks app: the tabs, and the Library events that also update the Ask tab's collections."""
    with gr.Blocks(title="IndexPool", analytics_enabled=False) as app:
        gr.Markdown("# IndexPool\nLong documents in, cited answers out.")
        with gr.Tabs():
            library = library_tab()
            ask = ask_tab(services, app)
            summarize = summarize_tab(services, library.collection)
            dashboard_tab(services)
            settings_tab(services)
        views = [library.collection, library.documents, ask.collections]
        # how far the indexing has come, on both tabs, while the background thread indexes what was ingested
        indexing = bind(index_status, services)
        watched, statuses = [library.collection, ask.collections], [library.index_status, ask.index_status]
        gr.Timer(INDEX_STATUS_EVERY_S).tick(indexing, watched, statuses, api_visibility="private")
        gr.on(
            [library.collection.change, ask.collections.change],
            indexing,
            watched,
            statuses,
            api_visibility="private",
            show_progress="hidden",
        )
        app.load(  # no overlay over the choices it fills: a click on them would wait for it
            bind(refresh, services),
            [library.collection, ask.collections],
            views,
            api_name="refresh",
            show_progress="hidden",
        )
        library.collection.change(
            bind(documents_table, services), library.collection, library.documents, api_name="documents"
        )
        library.ingest.click(
            bind(ingest_files, services),
            [library.upload, library.collection, library.password, ask.collections],
            [library.log, *views, library.upload],
            api_name="ingest",
            show_progress_on=[library.log],  # one progress display, on the log
        ).then(indexing, watched, statuses, api_visibility="private", show_progress="hidden").then(
            bind(follow_library, services), library.collection, summarize.choices, **IN_STEP
        )
        # Delete asks first; the API's /delete (what "Yes, delete it" runs) removes at once
        library.delete.click(
            bind(ask_to_delete, services),
            [library.collection, library.reference],
            [library.status, library.confirm_row],
            api_visibility="private",
        )
        library.cancel.click(cancel_delete, None, [library.status, library.confirm_row], api_visibility="private")
        library.confirm.click(
            bind(delete_document, services),
            [library.collection, library.reference, ask.collections],
            [library.status, *views],
            api_name="delete",
        ).then(lambda: gr.update(visible=False), None, library.confirm_row, api_visibility="private").then(
            bind(follow_library, services), library.collection, summarize.choices, **IN_STEP
        )
    return app


def serve(
    services: Services,
    host: str = "127.0.0.1",
    port: int = 7860,
    build_sample_if_empty: bool = True,
    auth: list[tuple[str, str]] | None = None,
) -> None:
    """Start the app on ``host:port`` (never shared); an empty library gets the sample library first, and a thread
    indexes every document not indexed yet, then each one ingested. With
    ``auth`` (user, password) pairs a login is required, and each user sees only their own sessions and settings."""
    if build_sample_if_empty and not services.library.collections():
        build_sample(services, progress=print)
    services.indexes.background()  # every document not indexed yet, then each one ingested
    app = build_app(services)
    app.queue().launch(
        server_name=host,
        server_port=port,
        share=False,
        quiet=True,
        show_error=False,
        ssr_mode=False,
        max_file_size=MAX_FILE_BYTES,  # the same cap as the CLI's --max-file-mb default
        auth=auth,
        prevent_thread_lock=True,
        theme=THEME,
        css=CSS,
    )
    print(f"IndexPool is running at {app.local_url} (Ctrl+C to stop)", flush=True)
    app.block_thread()
