"""The Gradio app behind ``indexpool serve``: a Library tab and an Ask tab.

Every handler here only calls ``app.services.Services``, the same services the CLI uses. Errors the services
report (``UserError``) reach the user as a warning toast and a one-line message, never as a stack trace.
"""

from __future__ import annotations

import html
import inspect
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from app.sample import build_sample
from app.services import (
    BENCH_TOKENS,
    MAX_BUDGET_WORDS,
    Evidence,
    GenerationFailed,
    IngestEvent,
    Services,
    Summary,
    UserError,
)
from app.summarize import DEFAULT_BUDGET_WORDS, ROUGE_NAMES
from ingest.sources import Limits
from model.reader import available_readers
from storage.db import StorageError

DEFAULT_COLLECTION = "default"
UPLOAD_TYPES = [".pdf", ".txt", ".md", ".markdown", ".html", ".htm", ".jsonl", ".xml", ".zip"]
DOCUMENT_COLUMNS = ["id", "title", "status", "pages", "tokens", "needs OCR", "error"]
CITATION_COLUMNS = ["rank", "document", "page", "quoted sentence", "score"]
SUMMARY_COLUMNS = ["#", "sentence", "document", "page"]
BENCH_COLUMNS = ["method", "latency ms", "cache MiB", "recall@512", "recall@2048", "needle F1"]
SUMMARIZER_CHOICES = [
    ("IndexPool model (LEAD baseline when its checkpoint is missing)", "indexpool"),
    ("LEAD baseline", "lead"),
    ("LexRank baseline", "lexrank"),
]
# Offline means offline: system fonts instead of the default theme's web fonts.
THEME = gr.themes.Default(font=["system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"])

NO_SESSION = 0  # the session dropdown's value for "answers are not kept in a session"
_UNCHANGED = (gr.skip(), gr.skip(), gr.skip())  # the three library views, left as they are
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~])")


def _escape_markdown(text: str) -> str:
    """Quote document text literally inside Markdown (no emphasis, links or HTML from the source)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _fail(error: Exception) -> str:
    """Show a services error as a warning toast and return it as a one-line message."""
    gr.Warning(str(error))
    return f"Error: {error}"


def _user(request: gr.Request | None) -> str:
    """The signed-in user (``indexpool serve --auth``), "" without authentication."""
    return (request.username if request is not None else None) or ""


def _bind(handler: Callable[..., Any], services: Services) -> Callable[..., Any]:
    """``handler`` with ``services`` as its first argument, keeping the signature and the type hints Gradio reads
    to pass ``gr.Request``, ``gr.SelectData`` and ``gr.Progress`` (``functools.partial`` hides the hints)."""
    if inspect.isgeneratorfunction(handler):

        def bound(*args: Any, **kwargs: Any) -> Any:
            yield from handler(services, *args, **kwargs)
    else:

        def bound(*args: Any, **kwargs: Any) -> Any:
            return handler(services, *args, **kwargs)

    signature = inspect.signature(handler)
    bound.__signature__ = signature.replace(parameters=list(signature.parameters.values())[1:])  # type: ignore[attr-defined]
    bound.__annotations__ = {k: v for k, v in handler.__annotations__.items() if k != "services"}
    bound.__name__ = bound.__qualname__ = handler.__name__
    return bound


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


Cited = list[dict[str, Any]]  # the answer's citations as the Ask tab keeps them: {"doc", "page", "start", "end"}
EXTRACTIVE_LABEL = "**Extractive answer** (quoted from the documents):"


def ask(
    services: Services, collections: list[str] | None, question: str, session_id: int, request: gr.Request
) -> tuple[str, pd.DataFrame, str, Cited]:
    """Answer ``question`` over the chosen collections with the user's top-k, reader and generator (kept in session
    ``session_id`` unless it is ``NO_SESSION``): the answer (the generated prose first when a generator ran, or its
    error), its citations, a timing line and the cited spans (for showing their pages)."""
    user = _user(request)
    failure = ""
    try:
        settings = services.settings(user)
        answer = services.ask(
            collections or [],
            question,
            settings["top_k"],
            settings["reader"],
            session_id or None,
            user,
            settings["generator"],
        )
    except GenerationFailed as error:  # the extractive answer stands, shown under the error
        answer, failure = error.answer, _fail(error)
    except (UserError, StorageError) as error:
        return f"**{_escape_markdown(_fail(error))}**", pd.DataFrame(columns=CITATION_COLUMNS), "", []
    cited = [{"doc": c.doc, "page": c.page, "start": c.start, "end": c.end} for c in answer.citations]
    citations = pd.DataFrame(
        [
            [rank, c.title, "" if c.page is None else c.page, c.text, round(c.score, 3)]
            for rank, c in enumerate(answer.citations, start=1)
        ],
        columns=CITATION_COLUMNS,
    )
    timings = ", ".join(f"{stage} {ms:.1f} ms" for stage, ms in answer.timings_ms.items())
    text = _escape_markdown(answer.answer)
    if answer.generated is not None:
        text = _prose_first(answer.generated.generator, answer.generated.text, text)
    elif failure:
        text = f"**{_escape_markdown(failure)}**\n\n{EXTRACTIVE_LABEL}\n\n{text}"
    return text, citations, f"{answer.reader} reader: {timings}", cited


def evidence_html(evidence: Evidence) -> str:
    """The cited sentence highlighted in its context, with where it comes from."""
    where = html.escape(evidence.title) + (f", page {evidence.page}" if evidence.page is not None else "")
    body = (
        ("… " if evidence.cut_before else "")
        + html.escape(evidence.before)
        + f"<mark>{html.escape(evidence.quote)}</mark>"
        + html.escape(evidence.after)
        + (" …" if evidence.cut_after else "")
    )
    return f'<p class="evidence-source"><b>{where}</b></p><p style="white-space: pre-wrap">{body}</p>'


def show_citation(services: Services, cited: Cited, selected: gr.SelectData) -> tuple[Any, str]:
    """The page image (PDFs) and the evidence text of the citation in the selected row of the citations table."""
    rank = int(selected.row_value[0]) if selected.row_value else selected.index[0] + 1
    if not 1 <= rank <= len(cited):
        return gr.update(value=None, visible=False), ""
    citation = cited[rank - 1]
    try:
        evidence = services.evidence(citation["doc"], citation["start"], citation["end"], citation["page"])
    except (UserError, StorageError) as error:
        return gr.update(value=None, visible=False), html.escape(_fail(error))
    if evidence.kind != "pdf" or citation["page"] is None:
        return gr.update(value=None, visible=False), evidence_html(evidence)
    try:
        image = services.render_page(citation["doc"], citation["page"])
    except UserError as error:
        return gr.update(value=None, visible=False), f"<p>{html.escape(_fail(error))}</p>" + evidence_html(evidence)
    return gr.update(value=image, visible=True, label=f"{evidence.title}, page {citation['page']}"), evidence_html(
        evidence
    )


# ----------------------------------------------------------------------------------------------- sessions


def _session_choices(services: Services, user: str) -> list[tuple[str, int]]:
    choices = [("no session (answers are not kept)", NO_SESSION)]
    for info in services.list_sessions(user):
        choices.append((f"{info.name} ({info.questions} question{'' if info.questions == 1 else 's'})", info.id))
    return choices


def _prose_first(generator: str, prose: str, extractive_markdown: str) -> str:
    """Generated prose, labelled with its generator, above the extractive answer it was written from."""
    head = f"**{_escape_markdown(generator)}** (generated from the citations below):\n\n{_escape_markdown(prose)}"
    return f"{head}\n\n{EXTRACTIVE_LABEL}\n\n{extractive_markdown}"


def _history(services: Services, session_id: int, user: str) -> list[dict[str, str]]:
    """The session's questions and answers as chat messages, each answer followed by its citations."""
    if not session_id:
        return []
    messages = []
    for turn in services.session_history(session_id, user):
        sources = [
            f"[{rank}] {_escape_markdown(c['title'])}" + (f", page {c['page']}" if c["page"] else "")
            for rank, c in enumerate(turn["citations"], start=1)
        ]
        messages.append({"role": "user", "content": _escape_markdown(turn["question"])})
        answer = _escape_markdown(turn["answer"])
        if turn["generated"] is not None:
            answer = _prose_first(turn["settings"].get("generator", "generator"), turn["generated"], answer)
        messages.append({"role": "assistant", "content": "\n\n".join([answer, "  \n".join(sources)])})
    return messages


def show_sessions(
    services: Services, session_id: int | None, request: gr.Request
) -> tuple[Any, int, list[dict[str, str]]]:
    """The user's sessions (keeping ``session_id`` chosen while it exists), the chosen one and its history."""
    user = _user(request)
    choices = _session_choices(services, user)
    chosen = session_id if session_id in {value for _, value in choices} else NO_SESSION
    return gr.update(choices=choices, value=chosen), chosen, _history(services, chosen, user)


def new_session(services: Services, name: str, request: gr.Request) -> tuple[Any, int, list[dict[str, str]], str]:
    """Start a session called ``name`` and choose it."""
    try:
        info = services.create_session(name, _user(request))
    except UserError as error:
        return gr.skip(), gr.skip(), gr.skip(), _fail(error)
    return *show_sessions(services, info.id, request), f"started session '{info.name}'"


def rename_session(
    services: Services, session_id: int, name: str, request: gr.Request
) -> tuple[Any, int, list[dict[str, str]], str]:
    if not session_id:
        return gr.skip(), gr.skip(), gr.skip(), _fail(UserError("choose a session to rename"))
    try:
        info = services.rename_session(session_id, name, _user(request))
    except UserError as error:
        return gr.skip(), gr.skip(), gr.skip(), _fail(error)
    return *show_sessions(services, info.id, request), f"renamed the session to '{info.name}'"


def delete_session(
    services: Services, session_id: int, request: gr.Request
) -> tuple[Any, int, list[dict[str, str]], str]:
    if not session_id:
        return gr.skip(), gr.skip(), gr.skip(), _fail(UserError("choose a session to delete"))
    try:
        services.delete_session(session_id, _user(request))
    except UserError as error:
        return gr.skip(), gr.skip(), gr.skip(), _fail(error)
    return *show_sessions(services, NO_SESSION, request), f"deleted session {session_id}"


def export_session(services: Services, session_id: int, fmt: str, request: gr.Request) -> tuple[str | None, str]:
    """The session as a Markdown or JSON file to download."""
    if not session_id:
        return None, _fail(UserError("choose a session to export"))
    try:
        text = services.export_session(session_id, fmt, _user(request))
    except UserError as error:
        return None, _fail(error)
    path = Path(tempfile.mkdtemp(prefix="indexpool-export-")) / f"session-{session_id}.{fmt}"
    path.write_text(text + "\n", encoding="utf-8")
    return str(path), f"exported session {session_id} as {fmt}"


# ----------------------------------------------------------------------------------------------- summarize


def summary_collections(services: Services, chosen: str | None, request: gr.Request) -> tuple[Any, Any, str]:
    """The collections to summarize (keeping ``chosen`` while it exists), the chosen one's documents and the
    user's summarizer."""
    names = collection_names(services)
    chosen = chosen if chosen in names else (names[0] if names else None)
    try:
        summarizer = services.settings(_user(request))["summarizer"]
    except UserError as error:
        _fail(error)
        summarizer = "indexpool"
    return gr.update(choices=names, value=chosen), summary_documents(services, chosen), summarizer


def summary_documents(services: Services, collection: str | None) -> Any:
    """The ingested documents of ``collection`` to choose from (none chosen: the whole collection)."""
    if not collection or collection not in collection_names(services):
        return gr.update(choices=[], value=[])
    choices = [(f"{d.id}: {d.title}", d.id) for d in services.documents(collection) if d.status == "ingested"]
    return gr.update(choices=choices, value=[])


def _summary_view(summary: Summary) -> tuple[str, pd.DataFrame, str]:
    """The label line, the sentences table (reading order, with their citations) and the ROUGE lines."""
    done = [d for d in summary.documents if not d.error]
    words = sum(len(s["text"].split()) for d in done for s in d.sentences)
    label = (
        f"**{_escape_markdown(summary.label)}** · {summary.scope} of '{_escape_markdown(summary.collection)}': "
        f"{len(done)} of {len(summary.documents)} documents, {words} words "
        f"(budget {summary.budget_words} per document) in {summary.seconds:.1f} s"
    )
    rows = [
        [number, " ".join(s["text"].split()), d.title, "" if s["page"] is None else s["page"]]
        for d in done
        for number, s in enumerate(d.sentences, start=1)
    ]
    notes = []
    for d in summary.documents:
        if d.error:
            notes.append(f"- {_escape_markdown(d.title)}: no summary ({_escape_markdown(d.error)})")
        elif d.rouge:
            scores = ", ".join(f"{ROUGE_NAMES[k]} {v:.3f}" for k, v in d.rouge.items())
            notes.append(f"- {_escape_markdown(d.title)}: ROUGE F1 against its abstract: {scores}")
        else:
            notes.append(f"- {_escape_markdown(d.title)}: no abstract, so no ROUGE")
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
    """Summarize the chosen documents (or the whole collection) within ``budget_words`` words each."""

    def report(done: int, total: int, title: str) -> None:
        progress((done, total), desc=f"summarizing {title}", unit="documents")

    try:
        if not collection:
            raise UserError("choose a collection to summarize")
        summary = services.summarize(
            collection, document_ids or [], int(budget_words or 0), summarizer, _user(request), report
        )
    except (UserError, StorageError) as error:
        return f"**{_escape_markdown(_fail(error))}**", pd.DataFrame(columns=SUMMARY_COLUMNS), ""
    return _summary_view(summary)


# ----------------------------------------------------------------------------------------------- dashboard


def _figure(title: str) -> tuple[Figure, Any]:
    figure = Figure(figsize=(6.4, 3.4), layout="constrained")
    axes = figure.add_subplot()
    axes.set_title(title, fontsize=11)
    return figure, axes


def _no_data(axes: Any, message: str) -> None:
    axes.text(0.5, 0.5, message, ha="center", va="center", transform=axes.transAxes, color="grey")
    axes.set_xticks([])
    axes.set_yticks([])


def stage_plot(records: list[dict[str, Any]]) -> Figure:
    """Each request's per-stage latency over time, one line per kind and stage."""
    figure, axes = _figure("Latency per stage")
    series: dict[str, tuple[list[Any], list[float]]] = {}
    for record in records:
        for stage, ms in record["data"].get("timings_ms", {}).items():
            times, values = series.setdefault(f"{record['kind']}: {stage}", ([], []))
            times.append(record["created_at"])
            values.append(ms)
    if not series:
        _no_data(axes, "no requests yet")
        return figure
    for name, (times, values) in sorted(series.items()):
        axes.plot(times, values, marker="o", markersize=3, label=name)
    axes.set_ylabel("ms")
    axes.legend(fontsize=8)
    figure.autofmt_xdate()
    return figure


def latency_histogram(records: list[dict[str, Any]]) -> Figure:
    """The distribution of total latency, per kind of request."""
    figure, axes = _figure("Total latency distribution")
    kinds = sorted({r["kind"] for r in records})
    if not kinds:
        _no_data(axes, "no requests yet")
        return figure
    for kind in kinds:
        axes.hist([r["total_ms"] for r in records if r["kind"] == kind], bins=20, alpha=0.6, label=kind)
    axes.set_xlabel("ms")
    axes.set_ylabel("requests")
    axes.legend(fontsize=8)
    return figure


def request_counts(records: list[dict[str, Any]]) -> Figure:
    figure, axes = _figure("Requests by kind")
    counts = pd.Series([r["kind"] for r in records], dtype=object).value_counts().sort_index()
    if counts.empty:
        _no_data(axes, "no requests yet")
        return figure
    axes.bar(counts.index, counts.values, color="tab:blue")
    axes.set_ylabel("requests")
    return figure


def latency_table(records: list[dict[str, Any]]) -> str:
    """Total latency p50 and p95 per kind of request, as a Markdown table."""
    if not records:
        return "No requests recorded yet."
    lines = ["| requests | count | p50 ms | p95 ms |", "|---|---:|---:|---:|"]
    for kind in sorted({r["kind"] for r in records}):
        totals = np.array([r["total_ms"] for r in records if r["kind"] == kind])
        p50, p95 = np.percentile(totals, [50, 95])
        lines.append(f"| {kind} | {len(totals)} | {p50:.1f} | {p95:.1f} |")
    return "\n".join(lines)


def memory_plot(rows: list[dict[str, Any]]) -> Figure:
    """Indexer key-cache memory per collection and method."""
    figure, axes = _figure("Indexer key cache per collection")
    if not rows:
        _no_data(axes, "no collections yet")
        return figure
    table = pd.DataFrame(rows).pivot(index="collection", columns="method", values="bytes")
    table = table[sorted(table.columns, key=lambda method: (method != "uncompressed", method))] / 2**20
    width = 0.8 / len(table.columns)
    for offset, method in enumerate(table.columns):
        axes.bar(np.arange(len(table)) + offset * width, table[method], width, label=method)
    axes.set_xticks(np.arange(len(table)) + width * (len(table.columns) - 1) / 2, table.index)
    axes.set_ylabel("MiB")
    axes.legend(fontsize=8)
    return figure


def dashboard(services: Services, request: gr.Request) -> tuple[Figure, Figure, Figure, str, Figure]:
    """The dashboard's plots from the recorded metrics and the library's token counts (the cache memory at the
    user's pooling ratio)."""
    records = services.metrics()
    try:
        ratio = services.settings(_user(request))["ratio"]
    except UserError as error:
        _fail(error)
        ratio = 4
    return (
        stage_plot(records),
        latency_histogram(records),
        request_counts(records),
        latency_table(records),
        memory_plot(services.cache_memory(ratio)),
    )


def bench_plot(methods: dict[str, dict[str, float]], tokens: int) -> Figure:
    """Latency and cache bytes per method of one benchmark run."""
    figure = Figure(figsize=(9, 3.4), layout="constrained")
    latency, memory = figure.subplots(1, 2)
    names = list(methods)
    latency.barh(names, [m["latency_ms"] for m in methods.values()], color="tab:orange")
    latency.set_xlabel("ms per indexer step")
    latency.invert_yaxis()
    memory.barh(names, [m["cache_bytes"] / 2**20 for m in methods.values()], color="tab:green")
    memory.set_xlabel("cache MiB")
    memory.invert_yaxis()
    memory.set_yticklabels([])
    figure.suptitle(f"Indexer benchmark at {tokens:,} tokens", fontsize=11)
    return figure


def run_bench(services: Services, tokens: float | None) -> tuple[pd.DataFrame, Any, str]:
    """Run the indexer benchmark at ``tokens`` tokens: its table, its plot and a status line."""
    try:
        result = services.run_indexer_bench(int(tokens or 0))
    except UserError as error:
        return pd.DataFrame(columns=BENCH_COLUMNS), gr.skip(), _fail(error)
    methods = result["methods"]
    table = pd.DataFrame(
        [
            [
                name,
                m["latency_ms"],
                round(m["cache_bytes"] / 2**20, 3),
                m["recall@512"],
                m["recall@2048"],
                m["needle_f1"],
            ]
            for name, m in methods.items()
        ],
        columns=BENCH_COLUMNS,
    )
    setting = result["setting"]
    status = (
        f"{result['tokens']:,} tokens on {setting['device']} ({setting['cpu']}), {setting['queries']} queries, "
        f"median of {setting['steps']} timed steps"
    )
    return table, bench_plot(methods, result["tokens"]), status


# ----------------------------------------------------------------------------------------------- settings

PRESETS = ["default", "technical", "news"]  # of model/indexpool/config.py
GENERATOR_OFF_LABEL = "off (the extractive answer only)"
SETTING_NAMES = ["preset", "alpha", "beta", "gamma", "ratio", "int8", "top_k", "reader", "summarizer", "generator"]


def show_settings(services: Services, request: gr.Request) -> tuple[Any, ...]:
    """The user's settings, one value per control of the Settings tab (in ``SETTING_NAMES`` order)."""
    try:
        settings = services.settings(_user(request))
    except UserError as error:
        return *(gr.skip() for _ in SETTING_NAMES), _fail(error)
    return *(settings[name] for name in SETTING_NAMES), ""


def preset_weights(services: Services, preset: str) -> tuple[Any, Any, Any]:
    """α, β, γ of an IndexPool preset, to start from."""
    try:
        return services.preset_weights(preset)
    except UserError as error:
        _fail(error)
        return gr.skip(), gr.skip(), gr.skip()


def save_settings(
    services: Services,
    preset: str,
    alpha: float,
    beta: float,
    gamma: float,
    ratio: int,
    int8: bool,
    top_k: float,
    reader: str,
    summarizer: str,
    generator: str,
    request: gr.Request,
) -> tuple[Any, ...]:
    """Validate and store the Settings tab's values for the user; a status line says what happened."""
    values = [preset, alpha, beta, gamma, ratio, int8, top_k, reader, summarizer, generator]
    settings = dict(zip(SETTING_NAMES, values, strict=True))
    if isinstance(top_k, float) and top_k.is_integer():  # a number box gives floats
        settings["top_k"] = int(top_k)
    try:
        saved = services.save_settings(settings, _user(request))
    except UserError as error:
        return *(gr.skip() for _ in SETTING_NAMES), _fail(error)
    return *(saved[name] for name in SETTING_NAMES), (
        f"saved: top-k {saved['top_k']}, reader {saved['reader']}, summarizer {saved['summarizer']}, preset "
        f"{saved['preset']} (α {saved['alpha']}, β {saved['beta']}, γ {saved['gamma']}), ratio {saved['ratio']}:1"
        f"{', INT8' if saved['int8'] else ''}, generator {saved['generator']}"
    )


# ----------------------------------------------------------------------------------------------- app


def build_app(services: Services) -> gr.Blocks:
    """The Blocks app; every event calls one of the module-level handlers above with ``services``."""
    bind = _bind
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
                with gr.Row(equal_height=True):
                    session = gr.Dropdown(
                        choices=[("no session (answers are not kept)", NO_SESSION)],
                        value=NO_SESSION,
                        label="Session",
                        elem_id="session",
                        scale=3,
                    )
                    session_name = gr.Textbox(label="Session name", elem_id="session-name", scale=2)
                    new_session_button = gr.Button("New", elem_id="session-new", scale=0, min_width=80)
                    rename_session_button = gr.Button("Rename", elem_id="session-rename", scale=0, min_width=80)
                    delete_session_button = gr.Button(
                        "Delete", variant="stop", elem_id="session-delete", scale=0, min_width=80
                    )
                session_id = gr.State(NO_SESSION)  # the chosen session, kept out of the ask API's parameters
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
                cited = gr.State([])
                gr.Markdown("Select a citation to see its page and the cited sentence in context.")
                with gr.Row():
                    page_image = gr.Image(
                        label="Cited page", type="pil", interactive=False, visible=False, elem_id="cited-page", scale=3
                    )
                    evidence = gr.HTML(elem_id="evidence", padding=True)
                history = gr.Chatbot(label="Session history", elem_id="history", height=360)
                with gr.Row(equal_height=True):
                    export_format = gr.Radio(
                        [("Markdown", "md"), ("JSON", "json")], value="md", label="Export as", elem_id="export-format"
                    )
                    export_button = gr.Button("Export session", elem_id="export-btn")
                    export_file = gr.File(label="Exported session", interactive=False, elem_id="export-file")
                session_status = gr.Markdown(elem_id="session-status")
            with gr.Tab("Summarize", id="summarize") as summarize_tab:
                with gr.Row():
                    summary_collection = gr.Dropdown(label="Collection", elem_id="summary-collection")
                    summary_docs = gr.Dropdown(
                        multiselect=True,
                        label="Documents",
                        info="one, several, or none for the whole collection",
                        elem_id="summary-documents",
                    )
                with gr.Row():
                    budget = gr.Number(
                        value=DEFAULT_BUDGET_WORDS,
                        minimum=1,
                        maximum=MAX_BUDGET_WORDS,
                        precision=0,
                        label="Word budget per document",
                        elem_id="summary-budget",
                    )
                    summarizer = gr.Dropdown(
                        SUMMARIZER_CHOICES, value="indexpool", label="Summarizer", elem_id="summarizer"
                    )
                summarize_button = gr.Button("Summarize", variant="primary", elem_id="summarize-btn")
                summary_label = gr.Markdown(elem_id="summary-label")
                summary_table = gr.Dataframe(
                    headers=SUMMARY_COLUMNS,
                    label="Summary sentences in reading order, with their citations",
                    interactive=False,
                    wrap=True,
                    column_widths=["5%", "63%", "24%", "8%"],
                    elem_id="summary",
                )
                summary_rouge = gr.Markdown(elem_id="summary-rouge")
            with gr.Tab("Dashboard", id="dashboard") as dashboard_tab:
                refresh_button = gr.Button("Refresh", elem_id="dashboard-refresh")
                with gr.Row():
                    stages = gr.Plot(label="Latency per stage over time", elem_id="plot-stages")
                    histogram = gr.Plot(label="Total latency distribution", elem_id="plot-histogram")
                with gr.Row():
                    counts = gr.Plot(label="Requests by kind", elem_id="plot-counts")
                    with gr.Column():
                        percentiles = gr.Markdown(elem_id="latency-percentiles")
                        memory = gr.Plot(label="Indexer cache memory per collection", elem_id="plot-memory")
                gr.Markdown(
                    "**Indexer benchmark** (`indexpool bench`): latency, cache bytes and recall of each indexer "
                    "method at one context length. The first run encodes the benchmark text (about a minute on a "
                    "CPU); later runs take seconds."
                )
                with gr.Row(equal_height=True):
                    bench_tokens = gr.Number(
                        value=32768,
                        minimum=BENCH_TOKENS[0],
                        maximum=BENCH_TOKENS[1],
                        precision=0,
                        label="Context length (tokens)",
                        elem_id="bench-tokens",
                    )
                    bench_button = gr.Button("Run the indexer benchmark", elem_id="bench-btn")
                bench_status = gr.Markdown(elem_id="bench-status")
                bench_table = gr.Dataframe(
                    headers=BENCH_COLUMNS, label="Benchmark", interactive=False, elem_id="bench-table"
                )
                bench_chart = gr.Plot(label="Benchmark: latency and cache per method", elem_id="plot-bench")
            with gr.Tab("Settings", id="settings") as settings_tab:
                gr.Markdown(
                    "Top-k, the reader and the generator are used by Ask, the summarizer by Summarize and the pooling "
                    "ratio by the dashboard's memory plot; the IndexPool weights and INT8 are kept for the model."
                )
                with gr.Row():
                    top_k = gr.Number(label="Top-k citations", precision=0, minimum=1, maximum=100, elem_id="top-k")
                    reader = gr.Dropdown(available_readers(), label="Reader", elem_id="reader")
                    default_summarizer = gr.Dropdown(
                        SUMMARIZER_CHOICES, label="Summarizer", elem_id="settings-summarizer"
                    )
                    generator = gr.Dropdown(
                        [(GENERATOR_OFF_LABEL if g == "off" else g, g) for g in services.generator_choices()],
                        label="Generator",
                        info="prose written from the citations; `indexpool serve --generator SPEC` offers one",
                        elem_id="generator",
                    )
                with gr.Row():
                    preset = gr.Dropdown(["default", "technical", "news"], label="IndexPool preset", elem_id="preset")
                    alpha = gr.Number(label="α (positional)", minimum=0, maximum=1, step=0.05, elem_id="alpha")
                    beta = gr.Number(label="β (content)", minimum=0, maximum=1, step=0.05, elem_id="beta")
                    gamma = gr.Number(label="γ (temporal)", minimum=0, maximum=1, step=0.05, elem_id="gamma")
                with gr.Row():
                    ratio = gr.Dropdown([1, 2, 4, 8], label="Pooling ratio r (keys per entry)", elem_id="ratio")
                    int8 = gr.Checkbox(label="INT8 pooled keys", elem_id="int8")
                save_button = gr.Button("Save settings", variant="primary", elem_id="settings-save")
                settings_status = gr.Markdown(elem_id="settings-status")

        views = [collection, documents, ask_collections]
        app.load(bind(refresh, services), [collection, ask_collections], views, api_name="refresh")
        private = {"api_visibility": "private"}
        session_views = [session, session_id, history]
        app.load(bind(show_sessions, services), session_id, session_views, **private)
        session.input(bind(show_sessions, services), session, session_views, **private)
        new_session_button.click(bind(new_session, services), session_name, [*session_views, session_status], **private)
        rename_session_button.click(
            bind(rename_session, services), [session_id, session_name], [*session_views, session_status], **private
        )
        delete_session_button.click(
            bind(delete_session, services), session_id, [*session_views, session_status], **private
        )
        export_button.click(
            bind(export_session, services), [session_id, export_format], [export_file, session_status], **private
        )
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
            [ask_collections, question, session_id],
            [answer, citations, timing, cited],
            api_name="ask",
            concurrency_limit=4,  # answering only reads the library (SQLite WAL): a few may run at once
        ).then(bind(show_sessions, services), session_id, session_views, **private)
        citations.select(bind(show_citation, services), cited, [page_image, evidence], **private)
        summarize_tab.select(
            bind(summary_collections, services),
            summary_collection,
            [summary_collection, summary_docs, summarizer],
            **private,
        )
        dashboard_views = [stages, histogram, counts, percentiles, memory]
        gr.on([dashboard_tab.select, refresh_button.click], bind(dashboard, services), None, dashboard_views, **private)
        bench_button.click(
            bind(run_bench, services),
            bench_tokens,
            [bench_table, bench_chart, bench_status],
            concurrency_limit=1,
            **private,
        ).then(bind(dashboard, services), None, dashboard_views, **private)
        setting_controls = [preset, alpha, beta, gamma, ratio, int8, top_k, reader, default_summarizer, generator]
        settings_tab.select(bind(show_settings, services), None, [*setting_controls, settings_status], **private)
        preset.input(bind(preset_weights, services), preset, [alpha, beta, gamma], **private)
        save_button.click(
            bind(save_settings, services), setting_controls, [*setting_controls, settings_status], **private
        )
        summary_collection.input(bind(summary_documents, services), summary_collection, summary_docs, **private)
        summarize_button.click(
            bind(summarize, services),
            [summary_collection, summary_docs, budget, summarizer],
            [summary_label, summary_table, summary_rouge],
            api_name="summarize",
            concurrency_limit=1,  # one summary at a time: the machine's cores are shared
        )
    return app


def serve(
    services: Services,
    host: str = "127.0.0.1",
    port: int = 7860,
    build_sample_if_empty: bool = True,
    auth: list[tuple[str, str]] | None = None,
) -> None:
    """Start the app on ``host:port`` (never shared); an empty library gets the sample library first. With
    ``auth`` (user, password) pairs a login is required, and each user sees only their own sessions and settings."""
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
        auth=auth,
        prevent_thread_lock=True,
        theme=THEME,
    )
    print(f"IndexPool is running at {app.local_url} (Ctrl+C to stop)", flush=True)
    app.block_thread()
