"""The ``indexpool`` command line. Exit codes: 0 ok, 1 user error (one line on stderr), 2 usage.

Every command that reports something takes ``--json``; the schemas are documented in README.md.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import sys
import time
from dataclasses import asdict
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from app.generators import SPEC_FORMS
from app.services import Services, UserError
from app.services.ask import GenerationFailed
from app.services.ingest import IngestEvent, IngestSummary
from app.services.library import by_title, cited_as
from app.services.summaries import DEFAULT_BUDGET_WORDS
from ingest.sources import Limits
from model.inference.summarizers import SUMMARIZERS
from storage.db import StorageError
from storage.library import HOME_ENV

TITLE_WIDTH = 60  # characters of a title in ``documents``' table (a longer one ends in "…")


def _services(args: argparse.Namespace, generator: str = "") -> Services:
    return Services(Path(args.home) if args.home else None, generator)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _event_line(event: IngestEvent) -> str:
    head = f"[{event.index}/{event.total}] {event.source}: {event.status}"
    if event.status in ("ingested", "replaced"):
        head += f" ({event.sizes()})"
    return head + (f" - {event.message}" if event.message else "")


def cmd_ingest(args: argparse.Namespace) -> int:
    services = _services(args)
    limits = Limits(timeout_s=args.timeout, max_file_bytes=int(args.max_file_mb * 2**20))
    started = time.perf_counter()
    events = []
    for event in services.ingest.ingest(
        [Path(p) for p in args.paths], args.collection, args.password, limits, args.workers
    ):
        events.append(event)
        if not args.json:
            print(_event_line(event), flush=True)
    summary = IngestSummary.of(events, time.perf_counter() - started)
    if args.share:
        services.library.share(args.collection, True)
    if not args.json:
        print(
            f"{summary.files} inputs: {summary.ingested} ingested, {summary.unchanged} unchanged, "
            f"{summary.errors} failed; {summary.sizes()}",
            flush=True,
        )
    named = {e.document_id for e in events if e.document_id is not None}  # ingested, replaced or unchanged
    index = None if args.no_index or not named else index_collection(services, args.collection, args.json, named)
    if args.json:
        _print_json(
            {
                "collection": args.collection,
                "files": [e.to_json() for e in events],
                "summary": summary.to_json(),
                "index": index,
            }
        )
    if summary.errors:
        print(
            f"indexpool: error: {summary.errors} of {summary.files} inputs could not be ingested",
            file=sys.stderr,
        )
        return 1
    return 0


def index_collection(
    services: Services, collection: str, quiet: bool = False, only: set[int] | None = None
) -> dict[str, Any] | None:
    """Index the documents of ``collection`` (those of ``only``, when given: the ones an ingest named) not indexed
    yet for the IndexPool reader, printing progress unless ``quiet``; what was done (None without the model
    checkpoint)."""
    if "indexpool" not in services.ask.available_readers():
        return None
    documents = [
        d.id
        for d in services.library.documents(collection)
        if d.status == "ingested" and (only is None or d.id in only)
    ]
    step = max(1, len(documents) // 10)

    def report(done: int, total: int, seconds: float) -> None:
        if not quiet and (done == total or done % step == 0):
            print(f"indexing for the IndexPool reader: {done}/{total} documents ({seconds:.1f} s)", flush=True)

    started = time.perf_counter()
    indexed = services.indexes.build(documents, report)
    return {"documents": indexed, "seconds": round(time.perf_counter() - started, 2)}


def cmd_share(args: argparse.Namespace) -> int:
    _services(args).library.share(args.collection, not args.off)
    if args.json:
        _print_json({"collection": args.collection, "shared": not args.off})
    else:
        print(f"collection {args.collection} is {'no longer shared' if args.off else 'shared with every user'}")
    return 0


def cmd_collections(args: argparse.Namespace) -> int:
    infos = _services(args).library.collections()
    if args.json:
        _print_json([asdict(info) for info in infos])
        return 0
    if not infos:
        print("no collections yet: indexpool ingest PATH --collection NAME")
    for info in infos:
        print(
            f"{info.name}: {info.documents} documents, "
            + (f"{info.pages} pages, " if info.pages else "")
            + f"{info.tokens:,} tokens, "
            f"{info.sentences:,} sentences"
            + (f", {info.errors} failed" if info.errors else "")
            + (", shared with every user" if info.shared else "")
        )
    return 0


def cmd_documents(args: argparse.Namespace) -> int:
    documents = by_title(_services(args).library.documents(args.collection))
    rows = [
        {
            "id": d.id,
            "title": d.title,
            "source": d.source,
            "kind": d.kind,
            "status": d.status,
            "error": d.error,
            "pages": d.pages,
            "tokens": d.tokens,
            "sentences": d.sentence_count,
            "needs_ocr_pages": d.needs_ocr_pages,
            "warnings": d.warnings,
            "content_hash": d.content_hash,
        }
        for d in documents
    ]
    if args.json:
        _print_json(rows)
        return 0
    for row in rows:
        pages = f"{row['pages']} pages, " if row["pages"] else ""  # a text file has none
        detail = row["error"] if row["status"] == "error" else f"{pages}{row['tokens']:,} tokens"
        ocr = f", needs OCR: pages {row['needs_ocr_pages']}" if row["needs_ocr_pages"] else ""
        title = row["title"] if len(row["title"]) <= TITLE_WIDTH else row["title"][: TITLE_WIDTH - 1] + "…"
        print(f"{row['id']:>6}  {row['status']:<8}  {title:<{TITLE_WIDTH}}  {detail}{ocr}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    services = _services(args)
    if args.documents:
        removed = [{"id": d.id, "source": d.source} for d in services.library.remove(args.collection, args.documents)]
        report: dict[str, Any] = {"collection": args.collection, "removed": removed}
    elif args.all:
        report = {
            "collection": args.collection,
            "removed_collection": True,
            "documents": services.library.remove_collection(args.collection),
        }
    else:
        raise UserError("name the documents to remove (id, source or title), or pass --all to remove the collection")
    if args.json:
        _print_json(report)
    elif "removed" in report:
        for row in report["removed"]:
            print(f"removed {row['id']}: {row['source']}")
    else:
        print(f"removed collection {args.collection} ({report['documents']} documents)")
    return 0


def _print_answer(answer_json: dict[str, Any]) -> None:
    if "generated" in answer_json:
        print(f"{answer_json['generated']['generator']} (generated from the citations):")
        print(answer_json["generated"]["text"])
        print("\nExtractive answer (quoted from the documents):")
    print(answer_json["answer"])
    print()
    for i, c in enumerate(answer_json["citations"], start=1):
        where = cited_as(c["title"], c["source"]) + (f", p. {c['page']}" if c["page"] else "")
        said = f"{c['speaker']}: " if c.get("speaker") else ""
        print(f"[{i}] {where} (chars {c['start']}-{c['end']}, score {c['score']:.2f})\n    {said}{c['text']}")
    print(f"\n{answer_json['reader']} reader, {answer_json['timings_ms']['total']:.1f} ms")


def cmd_ask(args: argparse.Namespace) -> int:
    services = _services(args)
    saved = services.settings.settings()  # the command-line user's settings (the app's without --auth)
    top_k, reader = args.top_k or saved["top_k"], args.reader or saved["reader"]
    try:
        answer = services.ask.ask(args.collection, args.question, top_k, reader, args.session, generator=args.generator)
    except GenerationFailed as failure:  # the extractive answer stands: print it, then report the failure
        (_print_json if args.json else _print_answer)(failure.answer.to_json())
        raise
    (_print_json if args.json else _print_answer)(answer.to_json())
    return 0


def cmd_session(args: argparse.Namespace) -> int:
    sessions = _services(args).sessions
    action = args.action
    if action == "export":
        output = sessions.export(args.id, args.format)
        if args.out:
            Path(args.out).write_text(output + "\n", encoding="utf-8")
            print(f"wrote session {args.id} to {args.out}")
        else:
            print(output)
        return 0
    if action == "list":
        result: Any = [asdict(info) for info in sessions.list()]
    elif action == "new":
        result = asdict(sessions.create(args.name))
    elif action == "rename":
        result = asdict(sessions.rename(args.id, args.name))
    elif action == "delete":
        sessions.delete(args.id)
        result = {"deleted": args.id}
    else:  # show
        result = {"session": asdict(sessions.info(args.id)), "questions": sessions.history(args.id)}
    if args.json:
        _print_json(result)
    elif action == "list":
        for info in result:
            print(f"{info['id']:>5}  {info['name']:<40}  {info['questions']} questions, last used {info['updated_at']}")
    elif action == "show":
        print(sessions.export(args.id, "md"))
    elif action == "delete":
        print(f"deleted session {args.id}")
    else:
        print(f"session {result['id']}: {result['name']}")
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    from app.services.sample import build_sample

    services = _services(args)
    report = build_sample(services, limit=args.limit, progress=None if args.json else print)
    report["index"] = index_collection(services, report["collection"], quiet=args.json)
    if args.json:
        _print_json(report)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from app.services.sample import SAMPLE_QUESTIONS, build_sample

    services = _services(args)
    report = build_sample(services, progress=print)
    if services.ask.default_reader() == "indexpool":
        print(
            "indexing the sample for the IndexPool model: each document is encoded once (minutes on a small CPU); "
            "the index is saved, so questions here and in `indexpool serve` read it"
        )
        index_collection(services, report["collection"])
    for question, _ in SAMPLE_QUESTIONS[:10]:
        print(f"\n=== {question}")
        _print_answer(services.ask.ask([report["collection"]], question, top_k=3).to_json())
    print(f"\nlibrary: {services.home}\nnext: indexpool serve   (then open http://127.0.0.1:7860)")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from app.ui.app import serve

    users = [pair for pairs in args.auth for pair in pairs]
    repeated = sorted({user for user, _ in users if [u for u, _ in users].count(user) > 1})
    if repeated:
        raise UserError(f"--auth names {', '.join(repeated)} more than once")
    if not is_loopback(args.host):
        if not users and not args.insecure_no_auth:
            raise UserError(
                f"--host {args.host} opens the app to other machines: add --auth USER:PASSWORD "
                "(or --insecure-no-auth to serve everyone without a login)"
            )
        print(
            f"indexpool: warning: --host {args.host} listens on every network this machine can reach"
            + ("" if users else ", without a login (--insecure-no-auth)"),
            file=sys.stderr,
            flush=True,
        )
    if args.torchrun and int(os.environ.get("RANK", "0")) > 0:  # every rank runs this command; 1.. answer rank 0
        from app.services.shards import worker

        return worker(Path(args.home) if args.home else None, args.shard_timeout)
    if args.shards > 1:  # before torch loads: this rank's share of the cores (OpenMP reads it once)
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // args.shards)))
    services = _services(args, args.generator)
    group = None
    if args.shards > 1 or args.torchrun:
        from app.services.shards import ShardGroup

        library, indexes = services.ask.library, services.indexes
        if args.torchrun:
            group = ShardGroup.from_env(library, indexes, args.shard_timeout)
        else:
            group = ShardGroup.spawn(library, indexes, args.shards, args.shard_timeout)
        services.ask.use_shards(group)
        print(f"IndexPool reads over {group.size} shards (ranks of torch.distributed, gloo)", flush=True)
    try:
        serve(services, host=args.host, port=args.port, build_sample_if_empty=not args.no_sample, auth=users or None)
    finally:
        if group is not None:
            group.close()
    return 0


def cmd_bench_ingest(args: argparse.Namespace) -> int:
    from app.bench_ingest import run_ingest_benchmark

    report = run_ingest_benchmark(
        pdf_dirs=[Path(p) for p in args.pdfs],
        text_dirs=[Path(p) for p in args.texts],
        text_tokens=args.text_tokens,
        workers=args.workers,
        progress=None if args.json else print,
    )
    if args.json:
        _print_json(report)
    return 0


def cmd_summarize(args: argparse.Namespace) -> int:
    """Summarize the inputs, print the ROUGE table (or the JSON report); 1 when any input failed. With
    ``--collection``: one summary of a library collection (or of its ``--document``s), as the Summarize tab makes."""
    if args.collection is not None:
        return _summarize_collection(args)
    if args.document:
        raise UserError("--document names documents of a --collection")
    if not args.paths:
        raise UserError("give the files, folders or .zip archives to summarize, or --collection NAME")
    if args.out is None:
        raise UserError("--out FILE is required to summarize files (the results JSONL, resumed by a rerun)")
    from app.batch import BatchSettings, format_table, progress_line, run_batch
    from app.services.summaries import load_summarizer
    from storage.library import Library

    settings = BatchSettings(
        load_summarizer(args.summarizer), args.references, args.budget_words, args.ratio, args.workers
    )
    report = run_batch(
        args.paths,
        args.out,
        settings,
        Library(Path(args.home) if args.home else None),
        args.markdown,
        progress_line,
        lambda n: print(f"resuming: {n} inputs already in {args.out}", file=sys.stderr),
    )
    if args.json:
        _print_json(report)
    else:
        print(
            f"{report['documents']} results in {args.out} ({report['new']} new, {report['resumed']} from an earlier "
            f"run, {report['errors']} failed) in {report['seconds']:.1f} s\n"
            f"{format_table(report['rouge'], report['summarizer'])}"
        )
    if report["errors"]:
        print(
            f"indexpool: error: {report['errors']} of {report['documents']} inputs could not be summarized",
            file=sys.stderr,
        )
    return 1 if report["errors"] else 0


def _summarize_collection(args: argparse.Namespace) -> int:
    """One summary of a collection (or of the named documents of it): its sentences in reading order, each with its
    document and page; a document without a summary says why on stderr (1)."""
    given = [flag for flag, value in (("PATH", args.paths), ("--out", args.out), ("--references", args.references),
             ("--ratio", args.ratio), ("--markdown", args.markdown)) if value]  # fmt: skip
    if given:
        raise UserError(f"{', '.join(given)}: for files; a collection's summary takes --document, --budget-words")
    services = _services(args)
    chosen = services.library.named(args.collection, args.document) if args.document else []
    budget = args.budget_words or DEFAULT_BUDGET_WORDS
    summary = services.summaries.summarize(args.collection, [d.id for d in chosen], budget, args.summarizer)
    failed = [d for d in summary.documents if d.error]
    for d in failed:
        print(f"indexpool: {d.title}: no summary ({d.error})", file=sys.stderr)
    if args.json:
        _print_json(asdict(summary))
        return 1 if failed else 0
    done = [d for d in summary.documents if d.sentences]
    cited = [(d, s) for d in done for s in d.sentences]
    words = sum(len(s["text"].split()) for _, s in cited)
    print(
        f"{summary.label} · {summary.scope} of '{summary.collection}': {words} words from {len(done)} of "
        f"{len(summary.documents)} documents (budget {summary.budget_words} words) in {summary.seconds:.1f} s\n"
    )
    for number, (d, s) in enumerate(cited, start=1):
        page = "" if s["page"] is None else f", page {s['page']}"
        print(f"[{number}] {' '.join(s['text'].split())}\n    — {d.title}{page}")
    if len(summary.documents) == 1 and summary.documents[0].rouge:
        scores = ", ".join(f"{k} {v:.3f}" for k, v in summary.documents[0].rouge.items())
        print(f"\nROUGE F1 against its abstract: {scores}")
    return 1 if failed else 0


def cmd_bench(args: argparse.Namespace) -> int:
    from model.bench import indexer  # torch and the key encoders: only for this command

    return _parsed(indexer, "bench", args)


def cmd_bench_read(args: argparse.Namespace) -> int:
    from model.bench import read  # torch: only for this command

    return _parsed(read, "bench-read", args)


def research_commands() -> dict[str, Any]:
    """The research commands (``train``, ``eval``) the installed package declares under the entry-point group
    ``indexpool.commands`` (pyproject.toml): the product names no research module, research plugs into it."""
    return {entry.name: entry for entry in entry_points(group="indexpool.commands")}


def _research(name: str):  # noqa: ANN202
    def handler(args: argparse.Namespace) -> int:
        entry = research_commands().get(name)
        if entry is None:
            raise UserError(f"'indexpool {name}' is not installed (pip install -e . from the checkout declares it)")
        return _parsed(entry.load(), name, args)

    return handler


def _parsed(module: Any, prog: str, args: argparse.Namespace) -> int:
    """Run ``module.run`` on the remaining arguments, parsed by ``module.add_arguments``."""
    parser = argparse.ArgumentParser(prog=f"indexpool {prog}")
    module.add_arguments(parser)
    delegated = parser.parse_args(args.rest)
    delegated.home = args.home
    return module.run(delegated)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="indexpool", description="IndexPool: ingest long documents, ask questions with checkable citations."
    )
    parser.add_argument("--home", help=f"library folder (default: ${HOME_ENV} or the user data dir)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler, help_text: str, json_flag: bool = True) -> argparse.ArgumentParser:  # noqa: ANN001
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(handler=handler)
        if json_flag:
            sub.add_argument("--json", action="store_true", help="print JSON (schema in README.md)")
        return sub

    ingest = command("ingest", cmd_ingest, "ingest files, folders and .zip archives into a collection")
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--collection", required=True)
    ingest.add_argument("--password", help="password for encrypted PDFs")
    ingest.add_argument("--workers", type=positive_int, default=min(2, os.cpu_count() or 1))
    ingest.add_argument("--timeout", type=positive_float, default=Limits.timeout_s, help="CPU seconds per file")
    ingest.add_argument("--max-file-mb", type=positive_float, default=Limits.max_file_bytes / 2**20)
    ingest.add_argument("--share", action="store_true", help="let every user of the app read the collection")
    ingest.add_argument(
        "--no-index", action="store_true", help="leave the IndexPool index to the first question (or `serve`)"
    )

    share = command("share", cmd_share, "let every user of the app read a collection (or stop it with --off)")
    share.add_argument("--collection", required=True)
    share.add_argument("--off", action="store_true", help="stop sharing it")

    command("collections", cmd_collections, "list collections")
    documents = command("documents", cmd_documents, "list the documents of a collection")
    documents.add_argument("--collection", required=True)

    remove = command("remove", cmd_remove, "remove documents, or a whole collection with --all")
    remove.add_argument("documents", nargs="*", metavar="DOC", help="document id, source path or title")
    remove.add_argument("--collection", required=True)
    remove.add_argument("--all", action="store_true", help="remove the collection and all its documents")

    ask = command("ask", cmd_ask, "answer a question with citations")
    ask.add_argument("question")
    ask.add_argument("--collection", required=True, action="append", help="repeat to ask over several")
    ask.add_argument(
        "--top-k",
        type=positive_int,
        help="citations to return (default: the saved setting of the app without a login, 5)",
    )
    ask.add_argument(
        "--reader",
        help="answering method: indexpool (the trained model) or bm25 (default: the saved setting, else the model "
        "when its checkpoint is installed)",
    )
    ask.add_argument("--session", type=positive_int, help="record the question in this chat session")
    ask.add_argument(
        "--generator",
        default="",
        metavar="SPEC",
        help=f"also write prose from the citations with a local model: {SPEC_FORMS}; off by default",
    )

    session = command("session", cmd_session, "chat sessions: list, new, rename, delete, show, export", False)
    actions = session.add_subparsers(dest="action", required=True, metavar="ACTION")
    json_flag = argparse.ArgumentParser(add_help=False)
    json_flag.add_argument("--json", action="store_true", help="print JSON (schema in README.md)")
    actions.add_parser("list", help="list sessions, most recently used first", parents=[json_flag])
    actions.add_parser("new", help="start a session", parents=[json_flag]).add_argument("name")
    rename = actions.add_parser("rename", help="rename a session", parents=[json_flag])
    rename.add_argument("id", type=positive_int)
    rename.add_argument("name")
    delete = actions.add_parser("delete", help="delete a session with its answers", parents=[json_flag])
    delete.add_argument("id", type=positive_int)
    show = actions.add_parser("show", help="questions, answers and citations", parents=[json_flag])
    show.add_argument("id", type=positive_int)
    export = actions.add_parser("export", help="write a session as Markdown or JSON")
    export.add_argument("id", type=positive_int)
    export.add_argument("--format", choices=("md", "json"), default="md")
    export.add_argument("--out", help="file to write (default: standard output)")

    sample = command("sample", cmd_sample, "build the embedded sample library (Python standard library docs)")
    sample.add_argument("--limit", type=positive_int, help="only the first N modules")
    command("demo", cmd_demo, "build the sample library and answer example questions", json_flag=False)

    serve = command("serve", cmd_serve, "start the web app", json_flag=False)
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on; another than this machine's needs --auth"
    )
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="allow a non-loopback --host without --auth (everyone reaching the port sees the library)",
    )
    serve.add_argument("--port", type=positive_int, default=7860)
    serve.add_argument(
        "--shards",
        type=positive_int,
        default=1,
        metavar="N",
        help="spread the documents over N ranks of torch.distributed on this machine (README: Shards)",
    )
    serve.add_argument(
        "--torchrun",
        action="store_true",
        help="run as one rank of a torchrun group (rank 0 serves the app; README: Shards)",
    )
    serve.add_argument(
        "--shard-timeout",
        type=float,
        default=20.0,
        metavar="S",
        help="seconds after which a silent rank counts as stalled (default: 20)",
    )
    serve.add_argument("--no-sample", action="store_true", help="do not build the sample library on first start")
    serve.add_argument(
        "--generator",
        default="",
        metavar="SPEC",
        help=f"offer a generator writing prose from the citations, on by default for every user: {SPEC_FORMS}",
    )
    serve.add_argument(
        "--auth",
        type=auth_pairs,
        action="append",
        default=[],
        metavar="USER:PASSWORD",
        help="require a login; repeat or separate with commas for several users (each sees only their sessions)",
    )

    bench_ingest = command("bench-ingest", cmd_bench_ingest, "measure ingestion throughput and peak RSS")
    bench_ingest.add_argument("--pdfs", nargs="*", default=[], help="folders of PDFs (default: shared papers)")
    bench_ingest.add_argument("--texts", nargs="*", default=[], help="folders of .txt (default: shared books)")
    bench_ingest.add_argument("--text-tokens", type=positive_int, default=1_000_000)
    bench_ingest.add_argument("--workers", type=positive_int, default=min(2, os.cpu_count() or 1))
    summarize = command(
        "summarize",
        cmd_summarize,
        "summarize files, folders and .zip archives into a resumable JSONL with ROUGE, or a library collection",
    )
    summarize.add_argument("paths", nargs="*", metavar="PATH", type=Path)
    summarize.add_argument("--out", type=Path, help="results JSONL of PATHs (appended to; a rerun resumes)")
    summarize.add_argument(
        "--collection", help="summarize this library collection instead of files: one summary within the budget"
    )
    summarize.add_argument(
        "--document", action="append", metavar="DOC", help="with --collection: only these (id, source or title)"
    )
    summarize.add_argument(
        "--references",
        type=Path,
        metavar="DIR",
        help="reference summaries DIR/<stem>.txt or DIR/<stem>.abstract.txt (before abstracts)",
    )
    summarize.add_argument("--workers", type=positive_int, default=min(2, os.cpu_count() or 1), help="parsers")
    summarize.add_argument(
        "--summarizer", choices=SUMMARIZERS, default="indexpool", help="indexpool (the model) or lead, lexrank"
    )
    budget = summarize.add_mutually_exclusive_group()
    budget.add_argument(
        "--budget-words",
        type=positive_int,
        help=f"summary length (default: the reference's, else {DEFAULT_BUDGET_WORDS}); whole sentences",
    )
    budget.add_argument("--ratio", type=ratio, help="summary length as a fraction of the body's words")
    summarize.add_argument("--markdown", type=Path, metavar="FILE", help="also write a Markdown report")

    bench = commands.add_parser(
        "bench", help="indexer benchmark: latency, memory and recall per method (see --help)", add_help=False
    )
    bench.set_defaults(handler=cmd_bench, delegated=True)
    bench_read = commands.add_parser(
        "bench-read",
        help="questions over an indexed 1M-token collection through the read cache: latency, tiers, RSS (see --help)",
        add_help=False,
    )
    bench_read.set_defaults(handler=cmd_bench_read, delegated=True)
    for name, help_text in (
        ("eval", "evaluate qa, summarize or niah against baselines (see --help)"),
        ("train", "train the IndexPool model from a JSON config (see --help)"),
    ):
        research = commands.add_parser(name, help=help_text, add_help=False)
        research.set_defaults(handler=_research(name), delegated=True)
    return parser


def is_loopback(host: str) -> bool:
    """``host`` names only this machine (localhost, 127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return number


def auth_pairs(value: str) -> list[tuple[str, str]]:
    """``user:password[,user:password...]`` as (user, password) pairs."""
    pairs = []
    for item in value.split(","):
        user, colon, password = item.partition(":")
        if not colon or not user.strip() or not password:
            raise argparse.ArgumentTypeError(f"expected USER:PASSWORD, got {item!r}")
        pairs.append((user.strip(), password))
    return pairs


def ratio(value: str) -> float:
    number = float(value)
    if not 0 < number <= 1:
        raise argparse.ArgumentTypeError(f"expected a ratio in (0, 1], got {value}")
    return number


def positive_float(value: str) -> float:
    number = float(value)
    if not number > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return number


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)  # delegated commands (bench, eval) parse the rest themselves
    if rest and not getattr(args, "delegated", False):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.rest = rest
    try:
        return args.handler(args)
    except (UserError, StorageError) as error:
        print(f"indexpool: error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader of our output went away (e.g. `| head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("indexpool: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
