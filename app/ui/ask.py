"""The Ask tab: questions over collections answered with cited sentences, the cited page and context, and chat
sessions (new, rename, delete, history, export).

A question goes ``ask`` → ``services.ask.ask`` (app/services/ask.py) → the reader → ``model.inference.qa``.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from app.services import Services, UserError
from app.services.ask import GenerationFailed, spoken
from app.services.library import Evidence, cited_as
from app.ui.common import IN_STEP, PRIVATE, bind, escape_markdown, fail, user_of

CITATION_COLUMNS = ["rank", "document", "page", "quoted sentence", "score"]
NO_SESSION = 0  # the session dropdown's value for "answers are not kept in a session"


Cited = list[dict[str, Any]]  # the answer's citations as the Ask tab keeps them: {"doc", "page", "start", "end"}
EXTRACTIVE_LABEL = "**Extractive answer** (quoted from the documents):"


def ask(
    services: Services, collections: list[str] | str | None, question: str | None, session_id: int, request: gr.Request
) -> tuple[str, pd.DataFrame, str, Cited]:
    """Answer ``question`` over the chosen collections with the user's top-k, reader and generator (kept in session
    ``session_id`` unless it is ``NO_SESSION``): the answer (the generated prose first when a generator ran, or its
    error), its citations, a timing line and the cited spans (for showing their pages)."""
    user = user_of(request)
    failure = ""
    try:
        settings = services.settings.settings(user)
        answer = services.ask.ask(
            [collections] if isinstance(collections, str) else list(collections or []),  # API callers send either
            question or "",
            settings["top_k"],
            settings["reader"],
            session_id or None,
            user,
            settings["generator"],
        )
    except GenerationFailed as error:  # the extractive answer stands, shown under the error
        answer, failure = error.answer, fail(error)
    except UserError as error:
        return f"**{escape_markdown(fail(error))}**", pd.DataFrame(columns=CITATION_COLUMNS), "", []
    cited = [{"doc": c.doc, "page": c.page, "start": c.start, "end": c.end} for c in answer.citations]
    citations = pd.DataFrame(
        [
            [rank, cited_as(c.title, c.source), "" if c.page is None else c.page, spoken(c), round(c.score, 3)]
            for rank, c in enumerate(answer.citations, start=1)
        ],
        columns=CITATION_COLUMNS,
    )
    timings = ", ".join(f"{stage} {ms:.1f} ms" for stage, ms in answer.timings_ms.items())
    text = escape_markdown(answer.answer)
    if answer.generated is not None:
        text = _prose_first(answer.generated.generator, answer.generated.text, text)
    elif failure:
        text = f"**{escape_markdown(failure)}**\n\n{EXTRACTIVE_LABEL}\n\n{text}"
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


def show_citation(services: Services, cited: Cited, selected: gr.SelectData, request: gr.Request) -> tuple[Any, str]:
    """The page image (PDFs, the cited sentence boxed on it) and the evidence text of the citation in the selected
    row of the citations table."""
    rank = int(selected.row_value[0]) if selected.row_value else selected.index[0] + 1
    if not 1 <= rank <= len(cited):
        return gr.update(value=None, visible=False), ""
    citation = cited[rank - 1]
    try:
        evidence = services.library.evidence(
            citation["doc"], citation["start"], citation["end"], citation["page"], user=user_of(request)
        )
    except UserError as error:
        return gr.update(value=None, visible=False), html.escape(fail(error))
    if evidence.kind != "pdf" or citation["page"] is None:
        return gr.update(value=None, visible=False), evidence_html(evidence)
    try:
        image = services.library.render_page(
            citation["doc"], citation["page"], user=user_of(request), highlight=evidence.quote
        )
    except UserError as error:
        return gr.update(value=None, visible=False), f"<p>{html.escape(fail(error))}</p>" + evidence_html(evidence)
    return gr.update(value=image, visible=True, label=f"{evidence.title}, page {citation['page']}"), evidence_html(
        evidence
    )


# ----------------------------------------------------------------------------------------------- sessions


def _session_choices(services: Services, user: str) -> list[tuple[str, int]]:
    choices = [("no session (answers are not kept)", NO_SESSION)]
    for info in services.sessions.list(user):
        choices.append((f"{info.name} ({info.questions} question{'' if info.questions == 1 else 's'})", info.id))
    return choices


def _prose_first(generator: str, prose: str, extractive_markdown: str) -> str:
    """Generated prose, labelled with its generator, above the extractive answer it was written from."""
    head = f"**{escape_markdown(generator)}** (generated from the citations below):\n\n{escape_markdown(prose)}"
    return f"{head}\n\n{EXTRACTIVE_LABEL}\n\n{extractive_markdown}"


def _history(services: Services, session_id: int, user: str) -> list[dict[str, str]]:
    """The session's questions and answers as chat messages, each answer followed by its citations."""
    if not session_id:
        return []
    messages = []
    for turn in services.sessions.history(session_id, user):
        sources = [
            f"[{rank}] {escape_markdown(c['title'])}" + (f", page {c['page']}" if c["page"] else "")
            for rank, c in enumerate(turn["citations"], start=1)
        ]
        messages.append({"role": "user", "content": escape_markdown(turn["question"])})
        answer = escape_markdown(turn["answer"])
        if turn["generated"] is not None:
            answer = _prose_first(turn["settings"].get("generator", "generator"), turn["generated"], answer)
        messages.append({"role": "assistant", "content": "\n\n".join([answer, "  \n".join(sources)])})
    return messages


def show_sessions(
    services: Services, session_id: int | None, request: gr.Request
) -> tuple[Any, int, list[dict[str, str]]]:
    """The user's sessions (keeping ``session_id`` chosen while it exists), the chosen one and its history."""
    user = user_of(request)
    choices = _session_choices(services, user)
    chosen = session_id if session_id in {value for _, value in choices} else NO_SESSION
    return gr.update(choices=choices, value=chosen), chosen, _history(services, chosen, user)


def reopen_last_session(services: Services, request: gr.Request) -> tuple[Any, int, list[dict[str, str]], Any]:
    """When the page opens: the user's most recently used session, its history, and the collections of its last
    question (those the user can still read) chosen again."""
    user = user_of(request)
    sessions = services.sessions.list(user)
    chosen = sessions[0].id if sessions else NO_SESSION
    names = services.library.collection_names(user)
    turns = services.sessions.history(chosen, user) if chosen else []
    asked = [name for name in (turns[-1]["collections"] if turns else []) if name in names]
    session, chosen, history = show_sessions(services, chosen, request)
    return session, chosen, history, gr.update(choices=names, value=asked)


def new_session(services: Services, name: str, request: gr.Request) -> tuple[Any, int, list[dict[str, str]], str]:
    """Start a session called ``name`` and choose it."""
    try:
        info = services.sessions.create(name, user_of(request))
    except UserError as error:
        return gr.skip(), gr.skip(), gr.skip(), fail(error)
    return *show_sessions(services, info.id, request), f"started session '{info.name}'"


def rename_session(
    services: Services, session_id: int, name: str, request: gr.Request
) -> tuple[Any, int, list[dict[str, str]], str]:
    if not session_id:
        return gr.skip(), gr.skip(), gr.skip(), fail(UserError("choose a session to rename"))
    try:
        info = services.sessions.rename(session_id, name, user_of(request))
    except UserError as error:
        return gr.skip(), gr.skip(), gr.skip(), fail(error)
    return *show_sessions(services, info.id, request), f"renamed the session to '{info.name}'"


def ask_to_delete_session(services: Services, session_id: int, request: gr.Request) -> tuple[str, Any]:
    """The first step of Delete: name the session and how many answers would go, show the confirmation buttons."""
    if not session_id:
        return fail(UserError("choose a session to delete")), gr.update(visible=False)
    try:
        info = services.sessions.info(session_id, user_of(request))
        turns = len(services.sessions.history(session_id, user_of(request)))
    except UserError as error:
        return fail(error), gr.update(visible=False)
    answers = f"{turns} question{'s' if turns != 1 else ''}"
    return f"Delete session '{info.name}' and its {answers}? This cannot be undone.", gr.update(visible=True)


def delete_session(
    services: Services, session_id: int, request: gr.Request
) -> tuple[Any, int, list[dict[str, str]], str, Any]:
    """The second step of Delete: remove the session and hide the confirmation buttons."""
    hide = gr.update(visible=False)
    if not session_id:
        return gr.skip(), gr.skip(), gr.skip(), fail(UserError("choose a session to delete")), hide
    try:
        name = services.sessions.info(session_id, user_of(request)).name
        services.sessions.delete(session_id, user_of(request))
    except UserError as error:
        return gr.skip(), gr.skip(), gr.skip(), fail(error), hide
    return *show_sessions(services, NO_SESSION, request), f"deleted session '{name}'", hide


EXPORT_TYPES = {"md": "text/markdown", "json": "application/json"}


def export_session(services: Services, session_id: int, fmt: str, request: gr.Request) -> tuple[str, str]:
    """A link downloading the session as Markdown or JSON. The file travels inside the link (a data: URL) to the user
    who asked, so the server keeps no copy that another user's cookie could fetch."""
    if not session_id:
        return "", fail(UserError("choose a session to export"))
    try:
        text = services.sessions.export(session_id, fmt, user_of(request))
    except UserError as error:
        return "", fail(error)
    name = f"session-{session_id}.{fmt}"
    data = base64.b64encode((text + "\n").encode("utf-8")).decode("ascii")
    link = f'<a download="{name}" href="data:{EXPORT_TYPES[fmt]};charset=utf-8;base64,{data}">Download {name}</a>'
    return link, f"exported session {session_id} as {fmt}"


@dataclass
class AskTab:
    session: gr.Dropdown
    session_name: gr.Textbox
    new_session: gr.Button
    rename_session: gr.Button
    delete_session: gr.Button
    session_id: gr.State
    collections: gr.Dropdown
    index_status: gr.Markdown
    question: gr.Textbox
    ask: gr.Button
    answer: gr.Markdown
    citations: gr.Dataframe
    timing: gr.Markdown
    cited: gr.State
    page_image: gr.Image
    evidence: gr.HTML
    history: gr.Chatbot
    export_format: gr.Radio
    export: gr.Button
    export_file: gr.HTML
    session_status: gr.Markdown


def ask_tab(services: Services, app: gr.Blocks) -> AskTab:
    """The tab, its components and their events."""
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
            new = gr.Button("New", elem_id="session-new", scale=0, min_width=80)
            rename = gr.Button("Rename", elem_id="session-rename", scale=0, min_width=80)
            delete = gr.Button("Delete", variant="stop", elem_id="session-delete", scale=0, min_width=80)
        with gr.Row(visible=False, elem_id="session-delete-confirm-row") as confirm_row:
            confirm = gr.Button(
                "Yes, delete it", variant="stop", elem_id="session-delete-confirm", scale=0, min_width=160
            )
            cancel = gr.Button("Cancel", elem_id="session-delete-cancel", scale=0, min_width=120)
        session_id = gr.State(NO_SESSION)  # the chosen session, kept out of the ask API's parameters
        collections = gr.Dropdown(
            choices=[],  # the user's, filled when the page loads: nothing of the library shows before a login
            multiselect=True,
            allow_custom_value=True,  # API clients may name any collection; services.ask checks it
            label="Collections",
            elem_id="ask-collections",
        )
        index_status = gr.Markdown(elem_id="ask-index-status")
        question = gr.Textbox(label="Question", placeholder="Ask about the chosen collections", elem_id="question")
        ask_button = gr.Button("Ask", variant="primary", elem_id="ask-btn")
        answer = gr.Markdown(elem_id="answer")
        citations = gr.Dataframe(
            headers=CITATION_COLUMNS,
            label="Citations",
            interactive=False,
            wrap=True,
            column_widths=["6%", "24%", "6%", "56%", "8%"],
            max_height=2400,  # every citation on the page, not in a 500 px box that hides the last ones
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
        history = gr.Chatbot(
            label="Session history",
            elem_id="history",
            height=360,
            buttons=["copy"],  # each message's copy; no toolbar over the latest question, no clear beside Delete
            placeholder="The questions and answers of the chosen session show here. Without a session (New above"
            " starts one) answers are not kept.",
        )
        with gr.Row(equal_height=False):  # the button keeps its own height beside the radio block
            export_format = gr.Radio(
                [("Markdown", "md"), ("JSON", "json")], value="md", label="Export as", elem_id="export-format"
            )
            export = gr.Button("Export session", elem_id="export-btn", size="md", scale=0, min_width=160)
            export_file = gr.HTML(elem_id="export-file")
        session_status = gr.Markdown(elem_id="session-status")
    session_views = [session, session_id, history]
    app.load(bind(reopen_last_session, services), None, [*session_views, collections], **IN_STEP)
    session.input(bind(show_sessions, services), session, session_views, **PRIVATE)
    session.input(lambda: gr.update(visible=False), None, confirm_row, **PRIVATE)  # a Delete asked of another
    new.click(bind(new_session, services), session_name, [*session_views, session_status], **PRIVATE)
    rename.click(
        bind(rename_session, services), [session_id, session_name], [*session_views, session_status], **PRIVATE
    )
    delete.click(bind(ask_to_delete_session, services), session_id, [session_status, confirm_row], **PRIVATE)
    confirm.click(bind(delete_session, services), session_id, [*session_views, session_status, confirm_row], **PRIVATE)
    cancel.click(lambda: ("", gr.update(visible=False)), None, [session_status, confirm_row], **PRIVATE)
    export.click(bind(export_session, services), [session_id, export_format], [export_file, session_status], **PRIVATE)
    gr.on(
        [ask_button.click, question.submit],
        bind(ask, services),
        [collections, question, session_id],
        [answer, citations, timing, cited],
        api_name="ask",
        concurrency_limit=4,  # answering only reads the library (SQLite WAL): a few may run at once
    ).then(bind(show_sessions, services), session_id, session_views, **PRIVATE).then(
        lambda: ("", gr.update(value=None, visible=False), ""),
        None,
        [session_status, page_image, evidence],
        **PRIVATE,  # "started session …" and the last answer's cited page and sentence are stale once one is answered
    )
    citations.select(bind(show_citation, services), cited, [page_image, evidence], **PRIVATE)
    return AskTab(
        session, session_name, new, rename, delete, session_id, collections, index_status, question, ask_button,
        answer, citations,
        timing, cited, page_image, evidence, history, export_format, export, export_file, session_status,
    )  # fmt: skip
