"""Text cleaning: character normalization for every source; header/footer removal and reflow for PDF pages."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter

from ingest.segment import CAPTION, NEVER_LAST, heading_title
from ingest.tables import label_rows

_LIGATURES = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
        "\u0132": "IJ",
        "\u0133": "ij",
        "\u00ad": "",
    }
)
_NEWLINES = re.compile(r"\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
# Controls, zero-width characters, and lone surrogates (from JSON escapes or broken PDF fonts; not storable as UTF-8).
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\u200b-\u200d\u2060\ufeff\ufffe\uffff\ud800-\udfff]")
_SPACES = re.compile(r"[\t\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_INNER_SPACES = re.compile(r"(?<=\S) {2,}")
_TRAILING_SPACES = re.compile(r" +$", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n{3,}")
# PDF fonts often draw accents as separate spacing characters before the letter: "F¨arber" → "Färber".
_ACCENTS = "\u00a8\u00b4\u02dc\u02c6\u02c7\u02da\u02d8"
_SPACING_ACCENT = re.compile(f"([{_ACCENTS}])([A-Za-z])")
# pdfium sets an accent apart: "P \u00b4 erez" (a capital and the rest of the word: "P\u00e9rez"),
# "Farber \u00a8 (2019)" (after its word: the letter it belonged to goes bare)
_SPACED_ACCENT = re.compile(f"(?<![A-Za-z])([A-Z][a-z]?) ([{_ACCENTS}]) (?=[a-z])")
_LOOSE_ACCENT = re.compile(f"(?:^|(?<=\\s))[{_ACCENTS}](?:[ \t]+|(?=[\\s,.;:)]|$))", re.MULTILINE)
_COMBINING = {
    "\u00a8": "\u0308",
    "\u00b4": "\u0301",
    "\u02dc": "\u0303",
    "\u02c6": "\u0302",
    "\u02c7": "\u030c",
    "\u02da": "\u030a",
    "\u02d8": "\u0306",
}
_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(
    r"(?:page\s+)?[-\u2013\u2014(\[]?\s*(?:\d{1,4}|(?=[ivx])x{0,3}(?:ix|iv|v?i{0,3}))"
    r"\s*[-\u2013\u2014)\]]?(?:\s*(?:of|/)\s*\d{1,4})?",
    re.IGNORECASE,
)
_BULLET = re.compile(r"[\u2022\u25e6\u25aa\u2023\u25cf\u25a0\u2013*-]\s")
_SENTENCE_END = re.compile(r"[.!?:][\"'\u201d\u2019)\]]*$")
_HYPHENATED = re.compile(r"(\S*\w)-$")
_MID_SENTENCE = re.compile(r"[\w,;-]$")
_OPEN_END = re.compile(r"[a-z][,-]?$")
_LOWER_WORD = re.compile(r"[a-z]+\b(?!:)")  # a word in lower case, no web address
# A footnote's first line, its number glued to its first word or web address ("20Used to …", "5CLM models …",
# "4https://…"; not "3D", "5G" or "2nd")
_GLUED_MARK = re.compile(r"\d{1,2}(?:https?://|[A-Z](?:[a-z]+|[A-Z]+)\b)")
_GLUED_MARK_NUMBER = re.compile(r"^\d{1,2}")
_URL_TAIL = re.compile(r"(?:https?://|www\.)\S*$")
# Prefixes that keep their hyphen across a line break: "self-\nattention" → "self-attention".
_HYPHEN_PREFIXES = {"self", "non", "cross", "well", "semi", "state", "end", "fine", "real", "zero", "few", "post"}
_PUNCTUATION = ".,;:!?()[]{}\"'\u201c\u201d\u2018\u2019"
_ESCAPED_AMPERSAND = re.compile(r"(?<=\w)&amp;(?=\w)")
_EDGE_LINES = 3  # lines at the top and bottom of a page that may be running headers or footers


def normalize_text(text: str) -> str:
    """Unicode NFC, ligatures expanded, control characters dropped, whitespace tidied, at most one blank line, and
    an ampersand left escaped between two words by an export from HTML ("R&amp;D", "SG&amp;A") written as one."""
    text = _ESCAPED_AMPERSAND.sub("&", _NEWLINES.sub("\n", text))
    text = _CONTROL.sub("", text.translate(_LIGATURES))
    text = unicodedata.normalize("NFC", _SPACES.sub(" ", text))
    text = _TRAILING_SPACES.sub("", _INNER_SPACES.sub(" ", text))
    return _BLANK_LINES.sub("\n\n", text).strip()


# A footnote's number glued to its first word at the start of a paragraph or after a sentence the reflow joined it
# to: "8The papers included in S2ORC …", "… baseline. 6Reducing extractiveness …" (not "3D", "5G", "2nd")
_FOOTNOTE_MARK = re.compile(r"(?:^|(?<=\n\n)|(?<=[.!?] ))\d{1,2}(?=[A-Z][a-z]+\b)|(?:^|(?<=\n\n))\d{1,2}(?=https?://)")
# A footnote's mark glued between a comma and the next word: "We introduce S2ORC,1a large corpus" → "S2ORC, a large"
_MARK_AFTER_COMMA = re.compile(r"(?<=[A-Za-z]),\d{1,2}(?=[a-z]+\b)")


def clean_pdf_pages(pages: list[str]) -> list[str]:
    """Clean the raw text of each PDF page and reflow its lines into paragraphs separated by blank lines; a table row
    under a header of column labels gets its labels (``ingest.tables``) and stays a paragraph of its own; a
    footnote's number glued to its first word is dropped ("8The papers …" → "The papers …"), and a footnote mark
    glued after a comma ("S2ORC,1a large corpus" → "S2ORC, a large corpus"); footnotes and captions that the text
    layer puts inside a sentence are taken out of it (``_footnotes``, ``_captions_aside``)."""
    lines = [_page_lines(page) for page in pages]
    repeated = _repeated_edge_lines(lines)
    vocabulary = {word.strip(_PUNCTUATION).lower() for page in lines for line in page for word in line.split()}
    reflowed = [_reflow_page(_drop_edges(page, repeated), vocabulary) for page in lines]
    return _captions_aside([_MARK_AFTER_COMMA.sub(", ", _FOOTNOTE_MARK.sub("", page)) for page in reflowed], vocabulary)


def _captions_aside(pages: list[str], vocabulary: set[str]) -> list[str]:
    """Pages whose figure and table captions no longer cut a sentence: when a paragraph stops mid-sentence, then
    come captions, then a paragraph in lower case — on the same page, or at the top of the next — the sentence is
    put back together and the captions follow it."""
    out: list[str] = []
    open_end = False  # the page before stops mid-sentence
    for page in pages:
        paragraphs = page.split("\n\n") if page else []
        k = -1
        while (k := k + 1) < len(paragraphs):
            if not (CAPTION.match(paragraphs[k]) and (open_end if k == 0 else _stops_mid_sentence(paragraphs[k - 1]))):
                continue
            m = k
            while m < len(paragraphs) and CAPTION.match(paragraphs[m]):
                m += 1
            if m == len(paragraphs):
                continue
            captions, rest = paragraphs[k:m], paragraphs[m]
            if not _LOWER_WORD.match(rest):
                continue
            if k == 0:  # the page before ends the sentence's first half: the page joint puts it together
                paragraphs[k : m + 1] = [rest, *captions]
                continue
            head = paragraphs[k - 1]
            hyphen = _HYPHENATED.search(head)
            if hyphen is not None and not _keep_hyphen(hyphen.group(1), rest, vocabulary):
                joined = head[:-1] + rest
            else:
                joined = head + ("" if hyphen else " ") + rest
            paragraphs[k - 1 : m + 1] = [joined, *captions]
        page = "\n\n".join(paragraphs)
        out.append(page)
        open_end = bool(paragraphs) and _stops_mid_sentence(paragraphs[-1])
    return out


def _stops_mid_sentence(paragraph: str) -> bool:
    """A paragraph of running text (no heading, no table row) whose last line stops on a word or a comma."""
    return (
        _OPEN_END.search(paragraph) is not None
        and len(paragraph.split()) >= 8
        and heading_title(paragraph.rsplit("\n", 1)[-1].strip()) is None
    )


def _reflow_page(lines: list[str], vocabulary: set[str]) -> str:
    """A page's lines as paragraphs. Footnotes that interrupt a sentence (``_footnotes``) are taken out of it and put
    after the page's first paragraph: neither the sentence the page goes on with from the page before nor the one it
    ends with is cut."""
    body, notes = _footnotes(lines)
    text = _reflow(*label_rows(body), vocabulary)
    if not notes:
        return text
    paragraphs = text.split("\n\n", 1)
    notes_text = [_reflow(note, set(), vocabulary) for note in notes]
    return "\n\n".join([paragraphs[0], *notes_text, *paragraphs[1:]])


def _footnotes(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """The page's ``lines`` without the footnotes that interrupt a sentence, and those footnotes (a list of lines
    each).

    A footnote block starts at a line opening with a glued mark ("12The S2ORC data format …", "4https://…") right
    after a line that stops mid-sentence; it goes on over wrapped lines (a hyphen, a web address split over two
    lines, a full-width line without a full stop) and over the next marked footnotes. It is taken out when the
    interrupted sentence goes on in lower case after it, or when it ends the page."""
    if len(lines) < 3:
        return lines, []
    full = 0.9 * sorted(len(line) for line in lines)[len(lines) // 2]  # a footnote's smaller font fills a line
    body: list[str] = []
    notes: list[list[str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not (body and _MID_SENTENCE.search(body[-1]) and _footnote_start(line)):
            body.append(line)
            i += 1
            continue
        block = [[line]]
        j = i + 1
        while j < len(lines):
            last, following = block[-1][-1], lines[j]
            if _footnote_start(following):
                block.append([following])
            elif _SENTENCE_END.search(last) and not last.endswith(":"):
                break
            elif last.endswith("-") or len(last) >= full or (_URL_TAIL.search(last) and " " not in following):
                block[-1].append(following)
            else:
                break
            j += 1
        if j < len(lines) and not lines[j][:1].islower():
            body.append(line)  # no sentence resumes after it: leave the lines as they are
            i += 1
            continue
        notes.extend([_GLUED_MARK_NUMBER.sub("", note[0], count=1), *note[1:]] for note in block)
        i = j
    return body, notes


def _footnote_start(line: str) -> bool:
    """A footnote's first line: its number glued to a web address or to the first of three or more words."""
    return _GLUED_MARK.match(line) is not None and ("://" in line or len(line.split()) >= 3)


def _page_lines(page: str) -> list[str]:
    page = _SPACING_ACCENT.sub(_compose_accent, _SPACED_ACCENT.sub(r"\1\2", page))
    page = _LOOSE_ACCENT.sub("", page)
    return [line.strip() for line in normalize_text(page).split("\n") if line.strip()]


def _compose_accent(match: re.Match[str]) -> str:
    composed = unicodedata.normalize("NFC", match.group(2) + _COMBINING[match.group(1)])
    return composed if len(composed) == 1 else match.group(0)  # "don\u00b4t" is an apostrophe, not an accent


def _key(line: str) -> str:
    return " ".join(_DIGITS.sub("#", line.lower()).split())


def _repeated_edge_lines(pages: list[list[str]]) -> set[str]:
    """Normalized lines found at the top or bottom of many pages: running headers, footers, page numbers."""
    with_text = [page for page in pages if page]
    if len(with_text) < 3:
        return set()
    counts: Counter[str] = Counter()
    for page in with_text:
        counts.update({_key(line) for line in page[:_EDGE_LINES] + page[-_EDGE_LINES:] if len(line) < 150})
    threshold = max(3, math.ceil(0.4 * len(with_text)))
    return {key for key, count in counts.items() if count >= threshold}


def _drop_edges(page: list[str], repeated: set[str]) -> list[str]:
    kept = []
    for i, line in enumerate(page):
        edge = i < _EDGE_LINES or i >= len(page) - _EDGE_LINES
        if edge and (_key(line) in repeated or (i < 2 or i >= len(page) - 2) and _PAGE_NUMBER.fullmatch(line)):
            continue
        kept.append(line)
    if not any(ch.isalnum() for line in kept for ch in line) and sum(len(line.split()) for line in page) >= 3:
        return page  # a page made only of a repeated line of real words keeps it (a lone label such as
        # "Background" on image-only pages still goes, and the page is flagged as needing OCR)
    return kept


def _reflow(lines: list[str], rows: set[int], vocabulary: set[str]) -> str:
    """Join lines into paragraphs: undo hyphenation, break at headings, bullets, captions, short final lines and
    around the table rows ``rows`` (line indices)."""
    if not lines:
        return ""
    lengths = sorted(len(line) for line in lines)
    typical = lengths[int(0.8 * (len(lengths) - 1))]
    headings = [heading_title(line) is not None for line in lines]
    out = [lines[0]]
    for i in range(1, len(lines)):
        prev, line = lines[i - 1], lines[i]
        if headings[i - 1] or headings[i] or _BULLET.match(line) or CAPTION.match(line) or i in rows or i - 1 in rows:
            separator = "\n\n"
        elif prev.endswith(("/", "_")) and _URL_TAIL.search(prev) and " " not in line:
            separator = ""  # a web address wrapped over two lines
        elif (hyphen := _HYPHENATED.search(prev)) is not None:
            if not _keep_hyphen(hyphen.group(1), line, vocabulary):
                out[-1] = out[-1][:-1]
            separator = ""
        elif prev.rsplit(maxsplit=1)[-1].lower() in NEVER_LAST:
            separator = " "  # a short line that stops on "and" goes on: "… Administration: Background and" + "Issues"
        elif len(prev) < 0.6 * typical or (len(prev) < 0.85 * typical and _SENTENCE_END.search(prev)):
            separator = "\n\n"
        else:
            separator = " "
        out += [separator, line]
    return "".join(out)


def _keep_hyphen(prefix: str, line: str, vocabulary: set[str]) -> bool:
    """Whether "prefix-" at a line end followed by ``line`` is a real hyphen rather than a word split.

    The document's own words decide when they can ("machine-readable" seen elsewhere keeps the hyphen,
    "example" seen elsewhere joins "exam-"); otherwise compounds and a few prefixes keep it.
    """
    following = line.split(" ", 1)[0]
    if not following[:1].islower():
        return True  # "GPT-\n3", "Transformer-\nXL"
    if "-" in following or "-" in prefix:
        return True  # "state-\nof-the-art"
    head, tail = prefix.strip(_PUNCTUATION).lower(), following.strip(_PUNCTUATION).lower()
    if f"{head}-{tail}" in vocabulary:
        return True
    if f"{head}{tail}" in vocabulary:
        return False
    return head in _HYPHEN_PREFIXES or (len(head) > 4 and head.endswith("ly"))
