"""The ``indexpool`` command line. Exit codes: 0 ok, 1 user error (one line on stderr), 2 usage.

Every command that reports something takes ``--json``; the schemas are documented in README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from app.generators import SPEC_FORMS
from app.services import GenerationFailed, IngestEvent, Services, UserError
from ingest.sources import Limits
from storage.db import StorageError
from storage.library import HOME_ENV

SAMPLE_QUESTIONS = [
    "How do I read a CSV file with a header row into dictionaries?",
    "How can I run a function after a delay in another thread?",
    "What does the strict parameter of zip do?",
]


def _services(args: argparse.Namespace, generator: str = "") -> Services:
    return Services(Path(args.home) if args.home else None, generator)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _event_line(event: IngestEvent) -> str:
    head = f"[{event.index}/{event.total}] {event.source}: {event.status}"
    if event.status in ("ingested", "replaced"):
        head += f" ({event.pages} pages, {event.tokens:,} tokens, {event.sentences:,} sentences, {event.seconds:.1f} s)"
    return head + (f" - {event.message}" if event.message else "")


def cmd_ingest(args: argparse.Namespace) -> int:
    services = _services(args)
    limits = Limits(timeout_s=args.timeout, max_file_bytes=int(args.max_file_mb * 2**20))
    started = time.perf_counter()
    events = []
    for event in services.ingest([Path(p) for p in args.paths], args.collection, args.password, limits, args.workers):
        events.append(event)
        if not args.json:
            print(_event_line(event), flush=True)
    summary = services.summarize_events(events, time.perf_counter() - started)
    if args.json:
        _print_json(
            {
                "collection": args.collection,
                "files": [e.to_json() for e in events],
                "summary": summary.to_json(),
            }
        )
    else:
        print(
            f"{summary.files} inputs: {summary.ingested} ingested, {summary.unchanged} unchanged, "
            f"{summary.errors} failed; {summary.pages} pages, {summary.tokens:,} tokens in {summary.seconds:.1f} s "
            f"({summary.pages_per_s:.1f} pages/s, {summary.tokens_per_s:,.0f} tokens/s)"
        )
    if summary.errors:
        print(
            f"indexpool: error: {summary.errors} of {summary.files} inputs could not be ingested",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_collections(args: argparse.Namespace) -> int:
    infos = _services(args).collections()
    if args.json:
        _print_json([asdict(info) for info in infos])
        return 0
    if not infos:
        print("no collections yet: indexpool ingest PATH --collection NAME")
    for info in infos:
        print(
            f"{info.name}: {info.documents} documents, {info.pages} pages, {info.tokens:,} tokens, "
            f"{info.sentences:,} sentences" + (f", {info.errors} failed" if info.errors else "")
        )
    return 0


def cmd_documents(args: argparse.Namespace) -> int:
    documents = _services(args).documents(args.collection)
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
        detail = row["error"] if row["status"] == "error" else f"{row['pages']} pages, {row['tokens']:,} tokens"
        ocr = f", needs OCR: pages {row['needs_ocr_pages']}" if row["needs_ocr_pages"] else ""
        print(f"{row['id']:>6}  {row['status']:<8}  {row['title'][:60]:<60}  {detail}{ocr}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    services = _services(args)
    if args.documents:
        removed = [{"id": d.id, "source": d.source} for d in services.remove(args.collection, args.documents)]
        report: dict[str, Any] = {"collection": args.collection, "removed": removed}
    elif args.all:
        report = {
            "collection": args.collection,
            "removed_collection": True,
            "documents": services.remove_collection(args.collection),
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
        where = f"{c['title']}" + (f", p. {c['page']}" if c["page"] else "")
        print(f"[{i}] {where} (chars {c['start']}-{c['end']}, score {c['score']:.2f})\n    {c['text']}")
    print(f"\n{answer_json['reader']} reader, {answer_json['timings_ms']['total']:.1f} ms")


def cmd_ask(args: argparse.Namespace) -> int:
    try:
        answer = _services(args).ask(
            args.collection, args.question, args.top_k, args.reader, args.session, generator=args.generator
        )
    except GenerationFailed as failure:  # the extractive answer stands: print it, then report the failure
        (_print_json if args.json else _print_answer)(failure.answer.to_json())
        raise
    (_print_json if args.json else _print_answer)(answer.to_json())
    return 0


def cmd_session(args: argparse.Namespace) -> int:
    services = _services(args)
    action = args.action
    if action == "export":
        output = services.export_session(args.id, args.format)
        if args.out:
            Path(args.out).write_text(output + "\n", encoding="utf-8")
            print(f"wrote session {args.id} to {args.out}")
        else:
            print(output)
        return 0
    if action == "list":
        result: Any = [asdict(info) for info in services.list_sessions()]
    elif action == "new":
        result = asdict(services.create_session(args.name))
    elif action == "rename":
        result = asdict(services.rename_session(args.id, args.name))
    elif action == "delete":
        services.delete_session(args.id)
        result = {"deleted": args.id}
    else:  # show
        result = {"session": asdict(services.sessions.info(args.id)), "questions": services.session_history(args.id)}
    if args.json:
        _print_json(result)
    elif action == "list":
        for info in result:
            print(f"{info['id']:>5}  {info['name']:<40}  {info['questions']} questions, last used {info['updated_at']}")
    elif action == "show":
        print(services.export_session(args.id, "md"))
    elif action == "delete":
        print(f"deleted session {args.id}")
    else:
        print(f"session {result['id']}: {result['name']}")
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    from app.sample import build_sample

    services = _services(args)
    report = build_sample(services, limit=args.limit, progress=None if args.json else print)
    if args.json:
        _print_json(report)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from app.sample import build_sample

    services = _services(args)
    report = build_sample(services, progress=print)
    if services.default_reader() == "indexpool":
        print("answering with the IndexPool model: the first question encodes the library once (minutes on a small "
              "CPU); the index is saved, so later questions and `indexpool serve` reuse it")
    for question in SAMPLE_QUESTIONS:
        print(f"\n=== {question}")
        _print_answer(services.ask([report["collection"]], question, top_k=3).to_json())
    print(f"\nlibrary: {services.library.home}\nnext: indexpool serve   (then open http://127.0.0.1:7860)")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from app.ui import serve

    users = [pair for pairs in args.auth for pair in pairs]
    repeated = sorted({user for user, _ in users if [u for u, _ in users].count(user) > 1})
    if repeated:
        raise UserError(f"--auth names {', '.join(repeated)} more than once")
    serve(
        _services(args, args.generator),
        host=args.host,
        port=args.port,
        build_sample_if_empty=not args.no_sample,
        auth=users or None,
    )
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


def _delegate(module_name: str, prog: str):  # noqa: ANN202
    """A handler passing the remaining arguments to ``module.add_arguments`` / ``module.run`` (imported lazily,
    so that commands which do not need torch start fast)."""

    def handler(args: argparse.Namespace) -> int:
        import importlib

        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            raise UserError(f"'indexpool {prog}' is not available in this version ({error})") from error
        parser = argparse.ArgumentParser(prog=f"indexpool {prog}")
        module.add_arguments(parser)
        delegated = parser.parse_args(args.rest)
        delegated.home = args.home
        return module.run(delegated)

    return handler


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
    ingest.add_argument("--timeout", type=positive_float, default=Limits.timeout_s, help="seconds per file")
    ingest.add_argument("--max-file-mb", type=positive_float, default=Limits.max_file_bytes / 2**20)

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
    ask.add_argument("--top-k", type=positive_int, default=5, help="citations to return")
    ask.add_argument(
        "--reader",
        help="answering method: indexpool (the trained model; the default when its checkpoint is installed) or bm25",
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
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=positive_int, default=7860)
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
    for name, module_name, help_text in (
        ("bench", "model.indexpool.bench", "indexer benchmark: latency, memory and recall per method (see --help)"),
        ("eval", "model.evaluation.cli", "evaluate qa, summarize or niah against baselines (see --help)"),
        ("train", "model.train", "train the IndexPool model from a JSON config (see --help)"),
        (
            "summarize",
            "app.summarize",
            "summarize files, folders and .zip archives into a resumable JSONL with citations and ROUGE (see --help)",
        ),
    ):
        delegated = commands.add_parser(name, help=help_text, add_help=False)
        delegated.set_defaults(handler=_delegate(module_name, name), delegated=True)
    return parser


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
