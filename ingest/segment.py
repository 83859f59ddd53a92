"""Segmentation of cleaned text into sections, paragraphs and sentences, all as exact character spans.

Paragraphs are blocks separated by blank lines. A paragraph whose first line looks like a heading (numbered,
ALL CAPS, markdown ``#``, a well-known section name, or an HTML heading passed in as a span) starts a section;
headings are not sentences. A paragraph opening with "Abstract—", "Keywords:" and the like starts a section too,
and its sentences begin after that label.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ingest.document import Section, Sentence

MAX_SENTENCE_CHARS = 1000

_KNOWN_HEADINGS = {
    "abstract",
    "introduction",
    "background",
    "related work",
    "related works",
    "prior work",
    "method",
    "methods",
    "methodology",
    "approach",
    "experiments",
    "experimental setup",
    "results",
    "discussion",
    "conclusion",
    "conclusions",
    "conclusion and future work",
    "conclusions and future work",
    "future work",
    "limitations",
    "references",
    "bibliography",
    "acknowledgments",
    "acknowledgements",
    "acknowledgment",
    "acknowledgement",
    "appendix",
    "appendices",
    "ethics statement",
    "ethical considerations",
    "broader impact",
    "keywords",
    "summary",
    "literature cited",
    "works cited",
    "supplementary material",
}
# A line ending in one of these words runs on: "1 The model is trained with" is a wrapped sentence, not a heading.
_CONTINUATIONS = {
    "a",
    "an",
    "the",
    "of",
    "and",
    "or",
    "to",
    "in",
    "on",
    "for",
    "with",
    "by",
    "at",
    "from",
    "that",
    "is",
    "are",
    "was",
    "were",
    "as",
    "we",
}
_REFERENCES = {"references", "bibliography", "reference", "literature cited", "works cited"}
_NUMBERING = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){0,3}\.?|[IVX]{1,5}\.|[A-H]\.\d{1,2}(?:\.\d{1,2})*\.?)\s+")
_NUMBERED = re.compile(_NUMBERING.pattern + r"[A-Z][^\n]{0,90}$")
# An appendix after the references, lettered without a stop: "A Background & Terminology", "B PDF filters" (a
# reference entry's first line names its authors and ends with a stop or a comma)
_APPENDIX = re.compile(r"^[A-H] [A-Z][^\s,.;:]*(?: [^\s,.;:]+){0,7}$")
# A sentence end inside a numbered line: a run-in heading, its paragraph going on after it ("6.1.6 Continued Usage
# in the Wild. Finally, we also"), not a heading line of its own.
_RUN_IN = re.compile(r"[^\W\d_]{3,}\. [A-Z][a-z]")
_MARKDOWN = re.compile(r"^#{1,6}\s+(.*?)[\s#]*$")
_INLINE = re.compile(
    r"(?:(abstract|keywords|key words|index terms|ccs concepts|additional key words and phrases)"
    r"\s*[.:\u2014\u2013-]\s*(?=\S)|(ABSTRACT)\s+(?=[A-Z]))",
    re.IGNORECASE,
)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
# The speaker of a transcript's turn: "Project Manager: " of "Project Manager: So", "Sian Gwenllian AM: " of "Sian
# Gwenllian AM: Has HEFCW …" (up to five capitalised words and a colon)
SPEAKER = re.compile(r"^[A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,4}:\s")
_TURN = re.compile(SPEAKER.pattern, re.MULTILINE)  # a label at any line's start
# A label on a line of its own, the turn on the lines after it: an earnings call's "Jerry Turin - Chief Financial
# Officer Speaking." (not a contract's "Franchisee:" or "EXHIBITS:" line before its clauses)
_HEADED_TURN = re.compile(
    r"^(?P<label>[A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,4}(?: - [^\n]{1,80}?)?) Speaking\.[ \t]*$", re.M
)
# A caption's first words: "Figure 4: …", "Table 2. Usage …" (not "Fig. 2.a where …", nor "Fig. 2." ending a sentence)
CAPTION = re.compile(r"(?:Figure|Fig\.|Table|Tab\.|Algorithm|Listing) ?[A-Z]?\d+(?::|\.(?= [A-Z]))")
# A sentence ends at . ! ? … before a capital or digit, also after an opening quote and a space (a tokenized text's
# "… now . ` But it 's …"), where a footnote mark glued to a word's full stop, "writing.1 The", stays with its
# sentence; at a full stop after a lower-case word before a lower-case word ("documents. papermage offers", a name
# written in lower case: ``_LOWER_START``), at a line break before a list item, or at a line break before a speaker
# label ("Project Manager: ...", a transcript's next turn).
# Words that open a sentence glued to the one before ("… being recorded.It will be …", "… $90.6 million in 2010.In
# terms of …"), where a capitalised word after a full stop is more often code ("threading.Timer", "csv.DictReader")
# and after a number a clause's number ("Section 4.I."); an acronym with "&" ("SG&A", "R&D") opens one after a word
_OPENERS = (
    "It The This That These Those There They We Our I In As At On For And But So Now Thank Thanks Yes No Okay Please"
    " Let If When What How Also Finally First Next He She You Your My Good Turning Operator However Moving Currently"
    " Still Second Third Because With Well Overall Additionally Furthermore Moreover Then"
).split()
_BOUNDARY = re.compile(
    r"(?<=[a-z])[.!?]\d{1,2}(?=\s+[\"'\u201c\u2018(\[]?[A-Z])"
    r"|(?<=[a-z]{4})\.(?= +[a-z]{2})"
    r"|(?<=[a-z]{2})[.!?](?=(?:" + "|".join(_OPENERS) + r")\b)"  # no space: a transcript's "recorded.It will …"
    r"|(?<=[0-9%])[.!?](?=(?:" + "|".join(w for w in _OPENERS if len(w) > 1) + r")\b(?!\.))"  # "… in 2010.In terms of"
    r"|(?<=[0-9][0-9%])[.!?](?=[A-Z][a-z]{3,}\b)"  # "… on November 11.Statements about …": not "Section 4.I."
    r"|(?<=[a-z]{2})[.!?](?=[A-Z]{1,3}&[A-Z])"  # "… for the retinoid.SG&A expense …": code never writes "&"
    r"|(?<=on|[0-9]%)[.!?](?=A [a-z]{3})"  # "… $10.7 million.A few other …" (not code's "re.A is …")
    r"|[.!?\u2026]+[\"'\u201d\u2019)\]]*(?=\s+(?:[\"'\u201c\u2018(\[`]\s?)?[A-Z0-9])"
    r"|\n(?=[ \t]*(?:[-*\u2022\u25e6\u25aa\u2023]|\d{1,3}[.)])\s)"
    r"|\n(?=[ \t]*[A-Z][\w'\u2019.-]*(?:[ \t][A-Z0-9][\w'\u2019.-]*){0,3}:[ \t])"
)
_ABBREVIATIONS = {
    "e.g",
    "i.e",
    "E.g",
    "I.e",
    "al",
    "cf",
    "Cf",
    "vs",
    "viz",
    "resp",
    "approx",
    "Fig",
    "Figs",
    "fig",
    "figs",
    "FIG",  # patents: "FIG. 2 is a perspective view …"
    "FIGS",
    "Eq",
    "Eqs",
    "eq",
    "eqs",
    "Tab",
    "Sec",
    "Sect",
    "Secs",
    "Ch",
    "Chap",
    "Ref",
    "Refs",
    "No",
    "Nos",
    "Vol",
    "vol",
    "pp",
    "p",
    "ed",
    "eds",
    "Ed",
    "Eds",
    "Dr",
    "Mr",
    "Mrs",
    "Ms",
    "Prof",
    "Jr",
    "Sr",
    "St",
    "Inc",
    "Ltd",
    "Co",
    "Corp",
    "Dept",
    "Univ",
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Sept",
    "Oct",
    "Nov",
    "Dec",
    "Ph.D",
    "w.r.t",
    "a.k.a",
    "U.S",
    "U.K",
    "ca",
    "Nr",
    "Thm",
    "Lem",
    "Def",
    "Prop",
    "Alg",
}
# Abbreviations before a number: "H.Rept. 115-239", "No. 5", "Sec. 3", "Vol. 2", "pp. 12"
_BEFORE_NUMBER = frozenset("No Nos Vol Vols Sec Secs Rept Doc Pub Stat Art Ch Pt pp Nr".split())
# Words a sentence does not end on: a line or a page that stops on one goes on ("… to replenish the" + "DRF.")
NEVER_LAST = frozenset("the a an of to and or but in on at by for from with as than that which whose".split())
_LAST_WORD = re.compile(r"\S+$")
_CONJUNCTIONS = frozenset("and or but nor so then yet which while whereas as than etc".split())
# The word before a full stop that ends a sentence when the next begins in lower case: a plain word of four or more
# letters, no abbreviation ("misc.", "approx."), web address ("arxiv. org") or e-mail ("head@seas. upenn.edu")
_LOWER_START = re.compile(r"(?!(?:approx|resp|misc|incl|excl|cont|govt|vols|eqns|ibid)$)[a-z]{4,}")
# A figure in a table: 280,522 · (1,234) · -3.5 · 12% · $4.2 · 2019 (a column year)
_FIGURE = re.compile(r"[$€£(]?[-−]?\d[\d,]*(?:\.\d+)?%?\)?[,;]?|[-—–]")
_CURRENCY = frozenset("$ € £ US$".split())
_INITIALS = re.compile(r"[A-Za-z]|(?:[A-Za-z]\.)+[A-Za-z]")


@dataclass
class Segmentation:
    sections: list[Section]
    sentences: list[Sentence]


def heading_title(line: str, markdown: bool = False) -> str | None:
    """The heading text if ``line`` (one stripped line) looks like a section heading, else None."""
    if not line or len(line) > 100:
        return None
    if markdown:
        match = _MARKDOWN.match(line)
        return (match.group(1) or None) if match else None
    if section_name(line) in _KNOWN_HEADINGS and not line[0].islower():
        return line
    if line[-1] in ".,;:":
        return None
    words = line.split()
    if (
        _NUMBERED.match(line)
        and len(words) <= 12
        and len(line) <= 80
        and words[-1].lower() not in _CONTINUATIONS
        and not _RUN_IN.search(line)
    ):
        return line
    letters = sum(ch.isalpha() for ch in line)
    # ALL CAPS needs two words: a single one is more often an acronym in a table ("BERT") than a heading.
    if (
        letters >= 4
        and line.upper() == line
        and letters >= 0.6 * len(line.replace(" ", ""))
        and 2 <= len(words) <= 10
        and any(ch.isalpha() for ch in words[-1])
    ):
        return line
    return None


def _appendix_title(line: str, heads: list[tuple[int, str]]) -> str | None:
    """``line`` when it heads a lettered appendix after the references section (``_APPENDIX``; the references'
    own text is not the document's: ``section_kind``), else None."""
    if not heads or (section_kind(heads[-1][1]) != "references" and not _APPENDIX.match(heads[-1][1])):
        return None
    if _APPENDIX.match(line) and line.split()[-1].lower() not in _CONTINUATIONS:
        return line
    return None


def section_name(title: str) -> str:
    """A heading without its numbering, lower-cased: "2.1 Method:" → "method"."""
    return _NUMBERING.sub("", title.strip() + " ", count=1).strip().rstrip(":.").strip().lower()


def section_kind(title: str) -> str:
    name = section_name(title)
    if name == "abstract":
        return "abstract"
    return "references" if name in _REFERENCES else "body"


def segment(
    text: str,
    markdown: bool = False,
    heading_spans: list[tuple[int, int]] | None = None,
    page_starts: list[int] | None = None,
) -> Segmentation:
    """Split ``text`` into sections and sentences; sentences get page numbers from ``page_starts`` (1-based)."""
    known_headings = {start for start, _ in heading_spans or ()}
    heads: list[tuple[int, str]] = []  # (start, title) of each section
    sentence_spans: list[tuple[int, int, int]] = []  # (start, end, paragraph)
    paragraphs: list[tuple[int, int]] = []  # body paragraphs before the first heading (for the abstract guess)
    paragraph = 0
    for start, end in _paragraphs(text):
        body = start
        line_end = text.find("\n", start, end)
        first_line = text[start : end if line_end < 0 else line_end].strip()
        title = first_line if start in known_headings else None
        if title is None and heading_spans is None:
            title = heading_title(first_line, markdown) or _appendix_title(first_line, heads)
        if title is not None:
            heads.append((start, title))
            if line_end < 0:
                continue
            body = line_end + 1
        elif inline := _INLINE.match(text, start, end):
            heads.append((start, inline.group(1) or inline.group(2)))
            body = inline.end()
        if not heads:
            paragraphs.append((body, end))
        for s, e in split_sentences(text, body, end):
            sentence_spans.append((s, e, paragraph))
        paragraph += 1
    _guess_abstract(heads, paragraphs, text)
    sections = _sections(heads, text)
    section_starts = [s.start for s in sections]
    sentences = []
    for s, e, para in sentence_spans:
        section = bisect.bisect_right(section_starts, s) - 1
        page = bisect.bisect_right(page_starts, s) if page_starts else None
        sentences.append(Sentence(s, e, page, section if section >= 0 else None, para))
    return Segmentation(sections, sentences)


def split_sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans in ``text[start:end]``, trimmed of whitespace, none longer than MAX_SENTENCE_CHARS. Each line
    of a table (two or more lines in a row that are mostly figures: ``_table_row``) is a sentence of its own, so a
    citation quotes the row whole; its header line, a row of years or labels, stays in the same paragraph."""
    spans: list[tuple[int, int]] = []
    begin = start
    for row_start, row_end in _table_rows(text, start, end):
        spans.extend(_prose_sentences(text, begin, row_start))
        _add(spans, text, row_start, row_end)
        begin = row_end
    spans.extend(_prose_sentences(text, begin, end))
    return spans


def turn_speakers(text: str, positions: Sequence[int]) -> list[str]:
    """The speaker of the transcript turn that holds each of ``positions`` of ``text``: the label opening the line
    that holds it ("Industrial Designer" for "… 'Kay um my name is Gaurav ." in "Industrial Designer: and let the
    drawing stay . {vocalsound} 'Kay um my name is Gaurav ."), when ``text`` is a transcript — two lines or more
    open with a label, and half of its lines at least (not a lone "Note: …" line, nor a contract's "Source: …",
    "By: …" and "Title: …" lines among its clauses, a third of its lines at most in the L-Eval contracts; QMSum's
    meetings: 70 % or more) —; else "". An earnings call's turn runs from its "Name - Title Speaking." line (that
    line no one's) to the next label, all its lines that speaker's, and counted as labelled."""
    labels = {m.start(): m.group().rstrip().removesuffix(":") for m in _TURN.finditer(text)}
    headed = {m.start(): m.group("label") for m in _HEADED_TURN.finditer(text)}
    speaker, line_speakers, at, spoken, nonempty = "", {}, 0, 0, 0
    for line in text.split("\n"):  # a headed turn runs from its label's line to the next label
        speaker = headed.get(at, "" if at in labels else speaker)
        line_speakers[at] = labels.get(at) or ("" if at in headed else speaker)  # the label's line says nothing
        nonempty += bool(line.strip())
        spoken += bool(line.strip()) and bool(speaker or labels.get(at))
        at += len(line) + 1
    if len(labels | headed) < 2 or 2 * spoken < nonempty:
        return ["" for _ in positions]
    return [line_speakers[text.rfind("\n", 0, at) + 1] for at in positions]


def _table_row(line: str) -> bool:
    """Two or more figures (or years), figures and currency signs making at least 40 % of the line's tokens."""
    tokens = line.split()
    figures = sum(1 for t in tokens if _FIGURE.fullmatch(t))
    return figures >= 2 and figures + sum(t in _CURRENCY for t in tokens) >= 0.4 * len(tokens)


def _table_rows(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The lines of ``text[start:end]`` that are table rows, in runs of two or more."""
    lines, at = [], start
    for line in text[start:end].split("\n"):
        lines.append((at, at + len(line), _table_row(line)))
        at += len(line) + 1
    rows: list[tuple[int, int]] = []
    run: list[tuple[int, int]] = []
    for line_start, line_end, is_row in [*lines, (end, end, False)]:
        if is_row:
            run.append((line_start, line_end))
            continue
        if len(run) >= 2:
            rows.extend(run)
        run = []
    return rows


def _prose_sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    begin = start
    for match in _BOUNDARY.finditer(text, start, end):
        stop = match.end()
        if text[match.start()] == "." and _abbreviation(text, begin, match.start()):
            continue
        if text[stop : min(end, stop + 64)].lstrip(" ")[:1].islower() and not _lower_start(
            text, begin, match.start(), end
        ):
            continue
        if len(text[begin:stop].strip()) < 4:  # "1." or "a)" numbering, not a sentence
            continue
        _add(spans, text, begin, stop)
        begin = stop
    _add(spans, text, begin, end)
    return spans


def _add(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    chunk = text[start:end]
    stripped = chunk.strip()
    if not stripped:
        return
    start += len(chunk) - len(chunk.lstrip())
    end = start + len(stripped)
    while end - start > MAX_SENTENCE_CHARS:
        limit = start + MAX_SENTENCE_CHARS
        cut = max(text.rfind(" ", start, limit), text.rfind("\n", start, limit))
        cut = cut if cut > start + MAX_SENTENCE_CHARS // 2 else limit
        piece = text[start:cut].rstrip()
        spans.append((start, start + len(piece)))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        spans.append((start, end))


def _lower_start(text: str, begin: int, dot: int, end: int) -> bool:
    """Whether the full stop at ``dot``, followed by a word in lower case, ends a sentence: not before a conjunction
    ("dollars. and so on")."""
    match = _LAST_WORD.search(text, max(begin, dot - 40), dot)
    following = text[dot + 1 : min(end, dot + 20)].split(maxsplit=1)
    return (
        match is not None
        and _LOWER_START.fullmatch(match.group()) is not None
        and bool(following)
        and following[0].strip(",;:") not in _CONJUNCTIONS
    )


def _abbreviation(text: str, begin: int, dot: int) -> bool:
    match = _LAST_WORD.search(text, max(begin, dot - 40), dot)
    if match is None:
        return False
    word = match.group().lstrip("([\"'\u201c\u2018")
    if word.rsplit(".", 1)[-1] in _BEFORE_NUMBER and text[dot + 1 : dot + 8].lstrip()[:1].isdigit():
        return True
    return word in _ABBREVIATIONS or _INITIALS.fullmatch(word) is not None


def _paragraphs(text: str) -> list[tuple[int, int]]:
    spans = []
    start = 0
    for gap in _PARAGRAPH_BREAK.finditer(text):
        spans.append((start, gap.start()))
        start = gap.end()
    spans.append((start, len(text)))
    trimmed = []
    for s, e in spans:
        chunk = text[s:e]
        if chunk.strip():
            s += len(chunk) - len(chunk.lstrip())
            trimmed.append((s, s + len(chunk.strip())))
    return trimmed


def _guess_abstract(heads: list[tuple[int, str]], front: list[tuple[int, int]], text: str) -> None:
    """Papers without an "Abstract" label: the first long paragraph before "Introduction" is the abstract."""
    if any(section_kind(title) == "abstract" for _, title in heads):
        return
    if not any(section_name(title) == "introduction" for _, title in heads):
        return
    for start, end in front:
        if len(text[start:end].split()) >= 50:
            heads.insert(0, (start, "Abstract"))
            return


def _sections(heads: list[tuple[int, str]], text: str) -> list[Section]:
    starts = [start for start, _ in heads]
    if not heads or text[: heads[0][0]].strip():
        # Text before the first heading (title, authors, or a document without headings) is an untitled section.
        lead = len(text) - len(text.lstrip())
        heads = [(lead, ""), *heads]
        starts = [lead, *starts]
    sections = []
    for i, (start, title) in enumerate(heads):
        end = starts[i + 1] if i + 1 < len(heads) else len(text)
        end = start + len(text[start:end].rstrip())
        sections.append(Section(title, section_kind(title) if title else "body", start, end))
    return sections
