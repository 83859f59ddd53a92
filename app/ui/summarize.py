"""The Summarize tab: one document, several, or a whole collection within a word budget, as whole sentences in
reading order with their citations; one document's summary is scored (ROUGE) against its abstract, several
documents get one summary, each sentence under its document."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from app.services import Services, UserError
from app.services.library import by_title
from app.services.summaries import DEFAULT_BUDGET_WORDS, ROUGE_NAMES, Summary
from app.ui.common import IN_STEP, bind, escape_markdown, fail, user_of

SUMMARY_COLUMNS = ["#", "sentence", "document", "page"]


def _summarizer(services: Services, request: gr.Request) -> str:
    """The user's summarizer setting (the model's when the settings cannot be read, with a notice)."""
    try:
        return services.settings.settings(user_of(request))["summarizer"]
    except UserError as error:
        fail(error)
        return "indexpool"


def summary_collections(services: Services, chosen: str | None, request: gr.Request) -> tuple[Any, Any, str]:
    """The collections to summarize (``chosen`` while it exists: the one picked here, or the one the Library tab
    shows), the chosen one's documents and the user's summarizer."""
    names = services.library.collection_names(user_of(request))
    chosen = chosen if chosen in names else (names[0] if names else None)
    return (
        gr.update(choices=names, value=chosen),
        summary_documents(services, chosen, request),
        _summarizer(services, request),
    )


def open_tab(services: Services, chosen: str | None, request: gr.Request) -> tuple[Any, Any, str]:
    """The tab opens: the collections are listed again, and the one chosen and its documents stay while it exists.
    ``chosen`` is the value when the tab was clicked, which :func:`follow_library` may have changed since (an
    upload just finished): showing it again would undo that."""
    names = services.library.collection_names(user_of(request))
    if chosen not in names:
        return summary_collections(services, None, request)
    return gr.update(choices=names), gr.update(), _summarizer(services, request)


def follow_library(services: Services, shown: str | None, request: gr.Request) -> tuple[Any, Any, Any]:
    """The Library tab's collection ``shown`` as the one to summarize, once it holds documents (a name being typed
    there changes nothing here)."""
    if shown not in services.library.collection_names(user_of(request)):
        return gr.update(), gr.update(), gr.update()
    return summary_collections(services, shown, request)


def summary_documents(services: Services, collection: str | None, request: gr.Request) -> Any:
    """The ingested documents of the user's ``collection`` to choose from (none chosen: the whole collection)."""
    user = user_of(request)
    if not collection or collection not in services.library.collection_names(user):
        return gr.update(choices=[], value=[])
    choices = [(f"{d.id}: {d.title}", d.id) for d in by_title(services.library.ingested(collection, user))]
    return gr.update(choices=choices, value=[])


def _summary_view(summary: Summary) -> tuple[str, pd.DataFrame, str]:
    """The label line, the sentences table (reading order, with their citations) and the ROUGE lines."""
    done = [d for d in summary.documents if d.sentences]
    words = sum(len(s["text"].split()) for d in done for s in d.sentences)
    label = (
        f"**{escape_markdown(summary.label)}** · {summary.scope} of '{escape_markdown(summary.collection)}': "
        f"{words} words from {len(done)} of {len(summary.documents)} documents "
        f"(budget {summary.budget_words} words) in {summary.seconds:.1f} s"
    )
    cited = [(d, s) for d in done for s in d.sentences]
    rows = [
        [number, " ".join(s["text"].split()), d.title, "" if s["page"] is None else s["page"]]
        for number, (d, s) in enumerate(cited, start=1)
    ]
    notes = []
    several = len(summary.documents) > 1
    if several:
        notes.append("One summary of the documents within the budget (each sentence under its document): no ROUGE.")
    for d in summary.documents:
        if d.error:
            notes.append(f"- {escape_markdown(d.title)}: no summary ({escape_markdown(d.error)})")
        elif several:
            continue
        elif d.rouge:
            scores = ", ".join(f"{ROUGE_NAMES[k]} {v:.3f}" for k, v in d.rouge.items())
            notes.append(f"- {escape_markdown(d.title)}: ROUGE F1 against its abstract: {scores}")
        else:
            notes.append(f"- {escape_markdown(d.title)}: no abstract, so no ROUGE")
    return label, pd.DataFrame(rows, columns=SUMMARY_COLUMNS), "\n".join(notes)


def summarize(
    services: Services,
    collection: str | None,
    document_ids: list[int] | None,
    budget_words: float,
    summarizer: str,
    request: gr.Request,
    progress: gr.Progress = gr.Progress(),  # noqa: B008 (Gradio's way to ask for a progress tracker)
) -> tuple[str, pd.DataFrame, str]:
    """Summarize the chosen documents (or the whole collection) within ``budget_words`` words."""

    def report(done: int, total: int, title: str) -> None:
        progress((done, total), desc=f"summarizing {title}", unit="documents")

    try:
        if not collection:
            raise UserError("choose a collection to summarize")
        summary = services.summaries.summarize(
            collection, document_ids or [], int(budget_words or 0), summarizer, user_of(request), report
        )
    except UserError as error:
        return f"**{escape_markdown(fail(error))}**", pd.DataFrame(columns=SUMMARY_COLUMNS), ""
    return _summary_view(summary)


@dataclass
class SummarizeTab:
    tab: gr.Tab
    collection: gr.Dropdown
    choices: list[gr.Dropdown]  # what follow_library updates: the collection, its documents, the summarizer


def summarize_tab(services: Services, library_collection: gr.Dropdown) -> SummarizeTab:
    """The tab, its components and their events; the collection follows the one ``library_collection`` (the
    Library tab's) shows, and the app calls :func:`follow_library` after an upload, so that what was just uploaded
    is what the tab offers to summarize."""
    choices = [(label, name) for name, label in services.summaries.summarizers().items()]
    with gr.Tab("Summarize", id="summarize") as tab:
        with gr.Row():
            # API clients may name any collection and documents (the choices fill when the tab opens): the
            # summaries service checks them
            collection = gr.Dropdown(label="Collection", allow_custom_value=True, elem_id="summary-collection")
            documents = gr.Dropdown(
                multiselect=True,
                allow_custom_value=True,
                label="Documents",
                info="one, several, or none for the whole collection",
                elem_id="summary-documents",
            )
        with gr.Row():
            budget = gr.Number(
                value=DEFAULT_BUDGET_WORDS,
                precision=0,
                label="Word budget of the summary (whole sentences: the last may run over)",
                elem_id="summary-budget",
            )
            summarizer = gr.Dropdown(choices, value="indexpool", label="Summarizer", elem_id="summarizer")
        button = gr.Button("Summarize", variant="primary", elem_id="summarize-btn")
        label = gr.Markdown(elem_id="summary-label")
        table = gr.Dataframe(
            headers=SUMMARY_COLUMNS,
            label="Summary sentences in reading order, with their citations",
            interactive=False,
            wrap=True,
            column_widths=["5%", "63%", "24%", "8%"],
            max_height=2400,  # a summary's sentences on the page, not in a box that hides the last (Gradio: 500 px)
            elem_id="summary",
        )
        rouge = gr.Markdown(elem_id="summary-rouge")
    tab.select(bind(open_tab, services), collection, [collection, documents, summarizer], **IN_STEP)
    library_collection.change(
        bind(follow_library, services), library_collection, [collection, documents, summarizer], **IN_STEP
    )
    collection.input(bind(summary_documents, services), collection, documents, **IN_STEP)
    button.click(
        bind(summarize, services),
        [collection, documents, budget, summarizer],
        [label, table, rouge],
        api_name="summarize",
        show_progress_on=[table],  # one progress display
        concurrency_limit=1,  # one summary at a time: the machine's cores are shared
    )
    return SummarizeTab(tab, collection, [collection, documents, summarizer])
