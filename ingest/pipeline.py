"""Parse input items into documents: format readers, cleaning and segmentation.

``parse_items_isolated`` runs the items in worker processes with a time and a memory cap, so a damaged file can
neither hang nor crash the caller; ``parse_item`` is the same work in the calling process.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from multiprocessing.connection import Connection, wait
from pathlib import Path, PurePath
from typing import NamedTuple

from ingest.clean import clean_pdf_pages, normalize_text
from ingest.document import IngestError, Page, ParsedDocument, Section, Sentence
from ingest.htmltext import html_blocks
from ingest.paperxml import read_paper_xml
from ingest.pdf import generic_title, page_ranges, read_pdf, registrant_title
from ingest.segment import CAPTION, NEVER_LAST, SPEAKER, heading_title, section_name, segment
from ingest.sources import InputItem, Limits, item_chunks, item_hash, size_text
from ingest.textfile import decode_text, stream_text

OUT_OF_MEMORY = "ran out of memory"
WALL_FACTOR = 4  # a worker is killed after this many times the CPU-time cap in wall time (stuck, not computing)


def cpu_timeout_reason(timeout_s: float) -> str:
    return f"timed out after {timeout_s:g} s of CPU time (raise the cap with --timeout SECONDS)"


PART_CHARS = 4 << 20  # a text file longer than this many characters is ingested as parts of about this size
_TITLE_CHARS = 200
_TITLE_WORDS = 20  # a longer first line of a text file is a paragraph, not its title
_PARAGRAPH_BREAK = "\n\n"
_NO_WORD = re.compile(r"[A-Za-z0-9+/=]{41,}")  # a run of Latin letters and digits too long for a word (base64 too)
MIN_CHECKED_CHARS = 1_000  # shorter text is not checked for words
_MEASURE = re.compile(r"(?<![\w.])(?:\d+\.\d+|\d{2,})(?![\w.])")  # 88.857, 2016: three or more make a table row
_NOT_A_TITLE = re.compile(
    r"(?i)^(?:proceedings|arxiv|published|accepted|preprint|copyright|journal|vol\.|content from this work)"
    r"|^(?:table|figure|fig\.) ?\d+[.:]"  # a caption
    r"|\u00a9|\bconference\b|https?://|@|creative ?commons|under the terms of|^licensed under"
)


# ----------------------------------------------------------------------------------------------- one item


def parse_item(item: InputItem, password: str | None = None) -> list[ParsedDocument | IngestError]:
    """Parse one file (or archive member) in this process: the results of :func:`iter_parse`."""
    return list(iter_parse(item, password))


def iter_parse(item: InputItem, password: str | None = None) -> Iterator[ParsedDocument | IngestError]:
    """The documents of one file (or archive member) as each is ready: one for most files, one per record of a
    JSONL file, one per part of a text file over ``PART_CHARS``. Never raises: a problem is an IngestError (after
    the parts already yielded, when it comes late)."""
    try:
        yield from _parse(item, password)
    except IngestError as error:
        yield error
    except MemoryError:
        yield IngestError(item.source, OUT_OF_MEMORY)
    except OSError as error:
        yield IngestError(item.source, f"cannot read file: {error.strerror or error}")
    except Exception as error:  # a bug or an input nobody foresaw: report it for this file, keep the batch going
        yield IngestError(item.source, f"unexpected error while parsing: {type(error).__name__}: {error}")


def _parse(item: InputItem, password: str | None) -> Iterator[ParsedDocument | IngestError]:
    if item.kind in ("txt", "md"):
        yield from _parse_plain(item)
    elif item.kind == "jsonl":
        yield from _parse_jsonl(item)
    elif item.kind in ("pdf", "html", "xml"):
        data = b"".join(item_chunks(item))
        if not data:
            raise IngestError(item.source, "empty file")
        content_hash = hashlib.sha256(data).hexdigest()
        if item.kind == "pdf":
            yield _parse_pdf(item.source, data, content_hash, password)
        elif item.kind == "html":
            yield _parse_html(item.source, data, content_hash)
        else:
            yield _parse_paper_xml(item.source, data, content_hash)
    else:
        yield IngestError(item.source, f"unsupported kind '{item.kind}'")


def parse_text(source: str, title: str, kind: str, text: str, content_hash: str) -> ParsedDocument:
    """A document from text already in memory (pydoc pages, JSONL records); the text is normalized first."""
    text = normalize_text(text)
    return _document(
        source, title or _first_line(text) or _stem(source), kind, text, content_hash, markdown=kind == "md"
    )


def _parse_plain(item: InputItem) -> Iterator[ParsedDocument]:
    """A text or markdown file as one document, or, over ``PART_CHARS``, as parts ("file.txt#part 2") of about that
    size cut at blank lines, read and segmented one at a time so that memory follows the part, not the file."""
    pieces, warnings = stream_text(lambda: item_chunks(item), item.source)
    parts = _text_parts(pieces, PART_CHARS)
    first, second = next(parts, None), next(parts, None)
    markdown = item.kind == "md"
    if second is None:
        text = normalize_text(first or "")
        if not text:
            raise IngestError(item.source, "empty file" if first is None else "no text (only whitespace)")
        _check_words(item.source, text)
        title = _first_line(text) or _stem(item.source)
        yield _document(item.source, title, item.kind, text, item_hash(item), markdown=markdown, warnings=warnings)
        return
    title = ""
    for number, part in enumerate(itertools.chain([first, second], parts), start=1):
        text = normalize_text(part or "")
        if not text:
            continue
        _check_words(f"{item.source}#part {number}", text)
        title = title or _first_line(text) or _stem(item.source)
        part_hash = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        source = f"{item.source}#part {number}"
        yield _document(
            source, f"{title} (part {number})", item.kind, text, part_hash, markdown=markdown, warnings=warnings
        )


def _check_words(source: str, text: str) -> None:
    """Refuse text most of which is runs of Latin letters and digits too long to be words (random or encoded data:
    indexing 3 MB of it would take many minutes and find nothing). Scripts written without spaces are not Latin."""
    runs = sum(len(run) for run in _NO_WORD.findall(text))
    if len(text) >= MIN_CHECKED_CHARS and runs >= 0.5 * len(text):
        raise IngestError(
            source, f"not text in words: {runs / len(text):.0%} of it is runs of letters without a space (data?)"
        )


def _text_parts(pieces: Iterable[str], size: int) -> Iterator[str]:
    """The text of ``pieces`` in parts of at most ``size`` characters, each cut after a blank line in its second
    half where there is one (else after a line, else after a space)."""
    buffer = ""
    for piece in pieces:
        buffer += piece
        while len(buffer) > size:
            cut = _cut(buffer, size)
            yield buffer[:cut]
            buffer = buffer[cut:]
    if buffer:
        yield buffer


def _cut(text: str, size: int) -> int:
    low = size // 2
    blank = max(text.rfind("\n\n", low, size), text.rfind("\n\r\n", low, size))
    for found in (blank, text.rfind("\n", low, size), text.rfind(" ", low, size)):
        if found >= 0:
            return found + 1
    return size


def _parse_html(source: str, data: bytes, content_hash: str) -> ParsedDocument:
    raw, warnings = decode_text(data, source)
    title, blocks = html_blocks(raw)
    parts: list[str] = []
    headings: list[tuple[int, int]] = []
    offset = 0
    for block, is_heading in blocks:
        block = normalize_text(block)
        if not block:
            continue
        if parts:
            offset += len(_PARAGRAPH_BREAK)
        if is_heading:
            headings.append((offset, offset + len(block)))
        parts.append(block)
        offset += len(block)
    text = _PARAGRAPH_BREAK.join(parts)
    if not text:
        raise IngestError(source, "no text in the HTML page")
    first_heading = text[headings[0][0] : headings[0][1]] if headings else None
    title = normalize_text(title) or first_heading or _first_line(text) or _stem(source)
    return _document(source, title, "html", text, content_hash, heading_spans=headings, warnings=warnings)


def _parse_pdf(source: str, data: bytes, content_hash: str, password: str | None) -> ParsedDocument:
    raw = read_pdf(data, source, password)
    cleaned = clean_pdf_pages(raw.pages)
    joints: list[str] = []  # what joins each page to the next
    for i in range(1, len(cleaned)):
        cleaned[i - 1], joint = _page_joint(cleaned[i - 1], cleaned[i])
        joints.append(joint)
    pages: list[Page] = []
    offset = 0
    for number, page_text in enumerate(cleaned, start=1):
        if number > 1:
            offset += len(joints[number - 2])
        textless = not any(map(str.isalnum, page_text))
        pages.append(Page(number, offset, offset + len(page_text), needs_ocr=textless and number not in raw.blank))
        offset += len(page_text)
    if all(not any(map(str.isalnum, page_text)) for page_text in cleaned):
        # Storing an empty document would look like success; the user needs to know the file was not read.
        count = f"any of its {len(pages)} pages" if len(pages) > 1 else "its only page"
        if raw.unreadable:
            raise IngestError(source, f"no readable text on {count}: the text layer is glyph names, not words")
        if len(raw.blank) == len(pages):
            raise IngestError(source, f"no text on {count}: blank")
        raise IngestError(source, f"no extractable text on {count} (scanned?): needs OCR")
    scanned = [page.number for page in pages if page.needs_ocr and page.number not in raw.unreadable]
    warnings = raw.warnings
    if scanned:
        verb = "have" if len(scanned) > 1 else "has"
        warnings.append(f"{page_ranges(scanned)} {verb} no extractable text (scanned?): needs OCR")
    text = "".join(itertools.chain.from_iterable(zip(cleaned, [*joints, ""], strict=True)))
    registrant = next((t for t in map(registrant_title, raw.pages[:2]) if t), None)  # a filing's cover page
    title = registrant or raw.title or _pdf_title(raw.pages) or _stem(source)
    return _document(source, title, "pdf", text, content_hash, pages=pages, warnings=warnings)


_FOOTNOTE = re.compile(r"^\d{1,2}(?:https?:|[A-Z])")  # "4https://…", "20Used to determine …"


def _page_joint(page: str, following: str) -> tuple[str, str]:
    """``page`` and what joins it to the ``following`` page's text: a paragraph break, or — when the page stops
    mid-sentence (its last line ends on a letter, a digit or a comma and is no footnote or arXiv stamp) and the next
    page goes on in lower case, or the page stops on a comma or a word that cannot end a sentence ("… to replenish
    the" + "DRF.", "On May 18, 2017," + "President …") and the next page starts no heading — a space, so the
    sentence stays whole; a word hyphenated across the page break loses its hyphen ("cor-" + "pus")."""
    lines = page.rstrip().rsplit("\n", 1)
    last = lines[-1].strip()
    if not last or _FOOTNOTE.match(last) or "arXiv:" in last:
        return page, _PARAGRAPH_BREAK
    if not following[:1].islower() and not _goes_on(last, following):
        return page, _PARAGRAPH_BREAK
    if re.search(r"[a-z]-$", last):
        return page.rstrip()[:-1], ""
    if last[-1].isalnum() or last[-1] == ",":
        return page.rstrip(), " "
    return page, _PARAGRAPH_BREAK


def _goes_on(last: str, following: str) -> bool:
    """Whether a page whose ``last`` line stops on a comma or a function word ("the", "of", "and" …) goes on in the
    ``following`` page's first line, which is neither a heading nor a caption."""
    word = last.rsplit(maxsplit=1)[-1]
    first = following.split("\n", 1)[0].strip()
    ends_open = word.endswith(",") or word.lower() in NEVER_LAST
    return ends_open and bool(first) and heading_title(first) is None and not CAPTION.match(first)


def _parse_paper_xml(source: str, data: bytes, content_hash: str) -> ParsedDocument:
    """A sentence-XML paper (``ingest.paperxml``): the title, then each block as its heading line (when it has one)
    and one sentence per line, blocks separated by a blank line; the file's sentences are kept as they are."""
    title, blocks = read_paper_xml(data, source)
    parts = [title] if title else []  # joined by blank lines
    sentences = [Sentence(0, len(title), None, None, 0)] if title else []
    sections: list[Section] = []
    end = len(title)  # of the text so far
    for paragraph, block in enumerate(blocks, start=1):
        start = end + len(_PARAGRAPH_BREAK) if parts else 0
        block_text = "\n".join([block.title, *block.sentences] if block.title else block.sentences)
        line = start + (len(block.title) + 1 if block.title else 0)
        for sentence in block.sentences:
            sentences.append(Sentence(line, line + len(sentence), None, len(sections), paragraph))
            line += len(sentence) + 1
        end = start + len(block_text)
        sections.append(Section(block.title, block.kind, start, end))
        parts.append(block_text)
    text = _PARAGRAPH_BREAK.join(parts)
    return ParsedDocument(
        source, _clip(title or _stem(source)), "xml", content_hash, text, sections=sections, sentences=sentences
    )


def _parse_jsonl(item: InputItem) -> Iterator[ParsedDocument | IngestError]:
    pieces, warnings = stream_text(lambda: item_chunks(item), item.source)
    seen: set[str] = set()
    records = 0
    for number, line in enumerate(_lines(pieces), start=1):
        if not line.strip():
            continue
        records += 1
        where = f"{item.source}#line {number}"
        try:
            record = json.loads(line, strict=False)
        except json.JSONDecodeError as error:
            yield IngestError(where, f"invalid JSON: {error.msg} (column {error.colno})")
            continue
        if not isinstance(record, dict):
            yield IngestError(where, "not a JSON object")
            continue
        doc_id, text, title = record.get("id"), record.get("text"), record.get("title")
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or not str(doc_id).strip():
            yield IngestError(where, 'missing or empty "id"')
        elif not isinstance(text, str) or not text.strip():
            yield IngestError(where, 'missing or empty "text"')
        elif str(doc_id) in seen:
            yield IngestError(where, f"duplicate id {doc_id!r}")
        else:
            seen.add(str(doc_id))
            line_hash = hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()
            title = title.strip() if isinstance(title, str) else ""
            document = parse_text(f"{item.source}#{doc_id}", title, "jsonl", text, line_hash)
            document.warnings.extend(warnings)
            yield document if document.text else IngestError(where, "no text once cleaned")
    if not records:
        yield IngestError(item.source, "no records in the JSONL file")


def _lines(pieces: Iterable[str]) -> Iterator[str]:
    """The lines of the text in ``pieces``, without their line breaks."""
    rest: list[str] = []  # the line being read, in pieces
    for piece in pieces:
        *lines, tail = piece.split("\n")
        if lines:
            lines[0] = "".join([*rest, lines[0]])
            rest = []
            yield from lines
        rest.append(tail)
    yield "".join(rest)


def _document(
    source: str,
    title: str,
    kind: str,
    text: str,
    content_hash: str,
    *,
    pages: list[Page] | None = None,
    markdown: bool = False,
    heading_spans: list[tuple[int, int]] | None = None,
    warnings: list[str] | None = None,
) -> ParsedDocument:
    """Segment cleaned ``text`` into a ParsedDocument."""
    page_starts = [page.start for page in pages] if pages else None
    seg = segment(text, markdown=markdown, heading_spans=heading_spans, page_starts=page_starts)
    return ParsedDocument(
        source=source,
        title=_clip(title),
        kind=kind,
        content_hash=content_hash,
        text=text,
        pages=pages or [],
        sections=seg.sections,
        sentences=seg.sentences,
        warnings=list(warnings or []),
    )


def _first_line(text: str) -> str:
    """The text's first line when it reads as a title (at most ``_TITLE_WORDS`` words, not a sentence): "" when the
    text opens with a paragraph, whose words would otherwise name the document and stand in every passage's bag, or
    with a transcript's turns ("Project Manager: So" then "Marketing: Okay ."; ``ingest.segment.SPEAKER``)."""
    lines = [line.strip().lstrip("#").strip() for line in text.split("\n", 20)[:20]]
    lines = [line for line in lines if line and section_name(line) != "abstract"]
    if not lines or len(lines[0].split()) > _TITLE_WORDS or lines[0].endswith((".", "!", "?", ",", ";")):
        return ""
    return "" if len(lines) > 1 and SPEAKER.match(lines[0]) and SPEAKER.match(lines[1]) else lines[0]


def _pdf_title(pages: list[str]) -> str:
    """The first line of the first page with text that is not a venue line, a URL, an address, a heading any
    document could have ("Table of Contents") or a line of a table (a page that opens with a table has no title
    line), with the line after it when the title runs on (:func:`_runs_on`)."""
    for page in pages:
        lines = [normalize_text(line) for line in page.split("\n", 17)[:17]]
        for i, line in enumerate(lines[:10]):
            rows = [len(_MEASURE.findall(row)) >= 3 for row in lines[i : i + 7]]
            in_table = rows[0] or sum(rows) >= 3
            if not generic_title(line) and not _NOT_A_TITLE.search(line) and not in_table:
                if _runs_on(line, lines[i + 1] if i + 1 < len(lines) else ""):
                    line = f"{line} {lines[i + 1]}"
                return line if len(line) <= _TITLE_CHARS else ""
        if page:
            break
    return ""


_TITLE_SMALL_WORDS = frozenset("a an and at by for from in into of on or the to via with".split())
_TITLE_WORD = re.compile(r"[A-Z][\w'’-]*:?|[a-z]+")


def _runs_on(title: str, line: str) -> bool:
    """Whether a title's second line is ``line``: three or more words, capitalised but for small words (of, and,
    with ...), with no comma, digit or symbol (author lines have them), and either a small word among them or a
    first line that stops on one (or on a colon) — a name alone ("Joseph Chee Chang") is an author."""
    words = line.split()
    if len(words) < 3 or generic_title(line) or not all(_TITLE_WORD.fullmatch(w) for w in words):
        return False
    if any(w[0].islower() and w not in _TITLE_SMALL_WORDS for w in words):
        return False
    last = title.split()[-1].lower() if title.split() else ""
    return any(w in _TITLE_SMALL_WORDS for w in words) or last in _TITLE_SMALL_WORDS or last.endswith((":", ","))


def _stem(source: str) -> str:
    """The file name without its suffix ("notes" of "a.zip!notes.txt"), with a JSONL record's id after it."""
    path, _, record = source.rsplit("!", 1)[-1].partition("#")
    return " ".join(filter(None, [PurePath(path).stem, record])) or source


def _clip(title: str) -> str:
    title = " ".join(title.split())
    if len(title) <= _TITLE_CHARS:
        return title
    return title[:_TITLE_CHARS].rsplit(" ", 1)[0] + "\u2026"


# --------------------------------------------------------------------------------------- worker processes


class _Worker:
    """A ``python -m ingest.worker`` process that parses the items it is sent, one at a time.

    A fresh interpreter (not a fork) is safe to start from a threaded server and never re-imports the caller's
    main module; it is reused for the next item unless it timed out, crashed or ran out of memory.
    """

    def __init__(self, memory_bytes: int, timeout_s: float) -> None:
        child_in, parent_out = os.pipe()
        parent_in, child_out = os.pipe()
        root = str(Path(__file__).resolve().parents[1])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "ingest.worker", *map(str, (child_in, child_out, memory_bytes, timeout_s))],
                pass_fds=(child_in, child_out),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except BaseException:
            for fd in (parent_in, parent_out):
                os.close(fd)
            raise
        finally:
            os.close(child_in)
            os.close(child_out)
        self.requests = Connection(parent_out, readable=False)
        self.results = Connection(parent_in, writable=False)
        self.memory_bytes, self.timeout_s = memory_bytes, timeout_s
        self.item: InputItem | None = None
        self.started = self.deadline = 0.0

    def submit(self, item: InputItem, password: str | None) -> None:
        self.item = item
        self.started = time.monotonic()
        self.deadline = self.started + WALL_FACTOR * self.timeout_s + 10
        self.requests.send((item, password))

    def collect(self) -> tuple[list[ParsedDocument | IngestError], bool, bool]:
        """The results the current item sent now, whether they are its last, and whether this worker can take
        another item."""
        assert self.item is not None
        try:
            packed, done = self.results.recv()
        except (EOFError, OSError):  # the worker died before it could answer
            try:
                code = self.process.wait(5)
            except subprocess.TimeoutExpired:
                code = None
            return [IngestError(self.item.source, _crash_reason(code, self.memory_bytes))], True, False
        except Exception as error:  # a result that cannot be unpickled
            reason = f"the parsing worker sent an unreadable result: {error}"
            return [IngestError(self.item.source, reason)], True, False
        results = [IngestError(*r) if isinstance(r, tuple) else r for r in packed]
        healthy = not any(isinstance(r, IngestError) and r.reason.startswith(OUT_OF_MEMORY) for r in results)
        self.deadline = time.monotonic() + WALL_FACTOR * self.timeout_s + 10  # the next part's
        return results, done, healthy

    def stop(self) -> None:
        """End the worker: politely (end of input) when idle, at once when it is busy or stuck."""
        self.requests.close()
        if self.item is not None:
            self.process.kill()
        try:
            self.process.wait(2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.results.close()


class Parsed(NamedTuple):
    """Results of one item as they arrive from its worker: most items send all at once, a large text file a part
    at a time; ``done`` marks an item's last."""

    item: InputItem
    results: list[ParsedDocument | IngestError]
    seconds: float  # since the item's previous results (or its start)
    done: bool


def parse_items_isolated(
    items: Iterable[InputItem], password: str | None, limits: Limits, workers: int = 1
) -> Iterator[Parsed]:
    """Parse items in worker processes, at most ``workers`` at once, yielding results as they arrive.

    Each result gets ``limits.timeout_s`` seconds of CPU time (a worker that sends nothing for ``WALL_FACTOR``
    times that in wall time is killed) and its worker an address space of ``limits.memory_bytes``; timeouts,
    memory exhaustion and crashes come back as IngestErrors, never as exceptions.
    """
    pending = iter(items)
    idle: list[_Worker] = []
    busy: list[_Worker] = []
    try:
        while True:
            while len(busy) < max(1, workers) and (item := next(pending, None)) is not None:
                worker = idle.pop() if idle else None
                if worker is not None and worker.process.poll() is not None:  # it died while idle
                    worker.stop()
                    worker = None
                try:
                    worker = worker or _Worker(limits.memory_bytes, limits.timeout_s)
                    worker.submit(item, password)
                except OSError as error:  # cannot start a process, or the worker died while idle
                    if worker is not None:
                        worker.stop()
                    yield Parsed(
                        item, [IngestError(item.source, f"could not start a parsing worker: {error}")], 0, True
                    )
                    continue
                busy.append(worker)
            if not busy:
                return
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready = wait([w.results for w in busy], timeout)
            now = time.monotonic()
            for worker in list(busy):
                item = worker.item
                assert item is not None
                if worker.results in ready:
                    results, done, healthy = worker.collect()
                elif now >= worker.deadline:
                    wall = WALL_FACTOR * limits.timeout_s + 10
                    reason = f"timed out: no result after {wall:g} s (raise the cap with --timeout SECONDS)"
                    results, done, healthy = [IngestError(item.source, reason)], True, False
                else:
                    continue
                seconds = time.monotonic() - worker.started
                worker.started = time.monotonic()
                if done or not healthy:
                    busy.remove(worker)
                    if healthy:
                        worker.item = None
                        idle.append(worker)
                    else:
                        worker.stop()
                yield Parsed(item, results, seconds, done or not healthy)
    finally:
        for worker in busy + idle:
            worker.stop()


def _crash_reason(code: int | None, memory_bytes: int) -> str:
    if code == -signal.SIGABRT:  # what a native library (sentencepiece, zlib) does when an allocation fails
        return f"{OUT_OF_MEMORY} (a native library aborted; the cap is {size_text(memory_bytes)})"
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the parser crashed ({name}); the file is probably damaged"
    return f"the parsing worker ended without a result (exit code {code})"
