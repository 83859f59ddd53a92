"""What a sentence is, read from its text when its document is indexed: a whole sentence or a fragment (a lead-in ending
with a colon is one: what answers is the list after it), whether it quotes a figure, whether it asks a question, whether
it gives a date (a year, a day of a month), whether it only says where something is shown ("… are given in Table 8."),
and what its figures count. The answer path cites whole sentences first (a heading, numbered and ended by a stop or not,
is none), those that say what is shown before those that say where, a sentence quoting a figure for "How many …" and one
giving a date for "When …", and first of all one whose figure counts what the question asks about; for a sentence that
asks (a meeting's "Has HEFCW done any assessment …?", an FAQ's "What are the eligibility requirements?") it cites the
answer after it.

A word is a run of letters or digits that is not part of a web address ("github.com/allenai/papermage" is none),
not a citation mark and not the speaker of a transcript's turn ("Marketing: Okay ." is a fragment); a figure is a
number standing alone ("3,950", "$280,522", "12.5%"), never a citation mark ("[44]", "[3, 7–9]") nor a footnote
mark stuck to a word ("networks20", "papermage1"); a year alone ("In 2026, …") gives a date and quotes no figure.

    kinds = sentence_kinds(["We had 3,950 employees.", "§ github.com/allenai/papermage1"])
    kinds & WHOLE, kinds & FIGURE                                  # → [1, 0], [2, 0]
    counted_text("a corpus of 81.1M English-language academic papers, 380.5M citation links")
    # → "of corpus English-language academic papers, citation links"
    counted_word("How many papers does S2ORC contain?")             # → "papers"

What a figure counts: the words after it up to ``COUNT_AFTER`` ("9,280 expert-authored summaries", "five annotators")
and the words before it up to ``COUNT_BEFORE`` (a label: "Employees 3,950"; not past "of": "summaries of 416 words"
counts words), never past the end of its phrase (a word ending in , ; : . ) ! ?); a table row's figures count its label
("Total net sales (2019: 280,522)"). A year counts nothing ("In 2012, …", "the 2012 Employee Stock Purchase Plan")
unless a lower-case word follows it ("2000 participants"), nor does the number of a part of the document ("Note 16 -
Employee Retirement Plans"). Number words count as figures here ("eight layers"), "one" aside ("one of the …").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ingest.segment import SPEAKER

MIN_WORDS = 4  # a whole sentence has at least this many words
MAX_HEADING_WORDS = 10  # a line in title case of at most this many words is a heading (``_is_heading``)
WHOLE, FIGURE, QUESTION, DATE, POINTER = 1, 2, 4, 8, 16  # the bits of a sentence's kind
COUNT_AFTER, COUNT_BEFORE = 4, 2  # words after and before a figure that it counts or labels

_ADDRESS = re.compile(r"\S*(?:https?://|www\.|\w\.(?:com|org|net|edu|gov|io)\b|\w/\w)\S*", re.IGNORECASE)
_CITATION = re.compile(r"\[\s*\d+(?:\s*[,;\u2013-]\s*\d+)*\s*\]")  # [44], [3, 7–9]
_WORD = re.compile(r"[^\W_]+")
_FIGURE = re.compile(r"(?<!\w)\d")  # a number's first digit, not stuck to a word before it
_FIGURE_TOKEN = re.compile(r"[(\[$€£]*\d")  # a whitespace token that is a figure
_ASKS = re.compile(r"\?[\s\"'”’)\]]*$")  # the sentence ends with a question mark
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_YEAR_ALONE = re.compile(r"(?<![\w.,])(?:1[5-9]\d\d|20\d\d)(?![\w.,]\d)")  # 1982; not 1,982 nor 2019.5
_DATE = re.compile(rf"{_YEAR_ALONE.pattern}|{_MONTH} \d{{1,2}}\b|\b\d{{1,2}} {_MONTH}")  # 1982, April 17
_YEAR = re.compile(r"\(?(?:19|20)\d\d\)?[,;:.]?")  # a year standing as a token: "2012", "(2023)", "2023,"
# A sentence that says where something is shown rather than what it is: "Numbers of PDFs removed by these filters
# are given in Table 8." (``POINTER``, when it quotes no figure but the part's number)
_POINTS = re.compile(
    r"\b(?:is|are|was|were|be)\s+(?:\w+ly\s+)?(?:given|shown|reported|listed|presented|summari[sz]ed|provided|described"
    r"|detailed|illustrated|displayed|depicted|plotted|included)\s+in\s+(?:the\s+)?(?:tables?|tab\.|figures?|fig\."
    r"|appendix|section|sec\.)",
    re.IGNORECASE,
)
_PART_NUMBER = re.compile(
    r"\b(?:tables?|tab\.|figures?|fig\.|appendix|section|sec\.)\s*[A-Z]?\d+(?:\.\d+)*", re.IGNORECASE
)
# A table row as ingest writes it (``ingest.tables``): "Total net sales (2018: 265,595; 2019: 280,522)".
_ROW = re.compile(r"(.+?) \((?:[^;:()]+: [^;]+; )*[^;:()]+: [^;]+\)")
# A figure after one of these numbers a part of the document, and counts nothing ("Note 16", "Item 7", "Table 1").
_REFERENCE = frozenset("note item part section exhibit table figure fig chapter appendix schedule article page".split())
_NUMBER_WORDS = frozenset(
    "two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty hundred hundreds thousand"
    " thousands million millions billion billions dozen dozens".split()
)
_PHRASE_END = (",", ";", ":", ".", ")", "!", "?")
# A figure after one of these counts what follows it, not the words before ("summaries of 416 words", "a total of
# 4,539 instances"; a label stands right before its figure: "Employees 3,950")
_BEFORE_A_COUNT = frozenset(
    "of than by to with from at in for per about over under nearly almost approximately".split()
)
# "How many X …", "the number of X", "the total X", "how much X": what the question counts (``counted_word``)
# A statement's amount that a question asks for ("What was NVIDIA's net income in fiscal 2023?", "What were the total
# revenues for …"): the line item, then a preposition, a verb or the question's end
AMOUNT = (
    r"(?:(?:net|total|gross|operating|consolidated|research and development)\s+)*"
    r"(?:income|revenues?|sales|profits?|earnings|expenses?)\b"
    r"(?=\s+(?:in|for|of|during|at|on|from|over|was|were|and)\b|\s*[?.,]|\s*$)"
)
WHAT_WAS = r"what (?:is|was|were|are) (?:the |\S+['\u2019]s )?"  # "What was the …", "What were Apple's …"
_COUNT_CUE = re.compile(
    rf"\b(?:how many|how much|number of|amount of|total)\s+|\b{WHAT_WAS}(?={AMOUNT})", re.IGNORECASE
)
_JOINING = frozenset("and or but nor".split())
_NOT_COUNTED = frozenset(
    "a an the are is was were be been do does did have has had can could will would should in of for on at to by from"
    " with as per during over under among between there that which who whose this these those it its their they we"
    " you he she i".split()
)


def sentence_kind(text: str) -> int:
    """The kind bits of one sentence's text."""
    plain = _CITATION.sub(" ", _ADDRESS.sub(" ", SPEAKER.sub("", text, count=1)))  # a speaker's name says nothing
    words = _WORD.findall(plain)
    whole = len(words) >= MIN_WORDS and not text.rstrip().endswith(":") and not _is_heading(text, words)
    kind = WHOLE if whole else 0
    kind |= FIGURE if _FIGURE.search(_YEAR_ALONE.sub(" ", plain)) else 0  # a year alone quotes no amount
    if _POINTS.search(plain) and not _FIGURE.search(_PART_NUMBER.sub(" ", _YEAR_ALONE.sub(" ", plain))):
        kind |= POINTER
    return kind | (QUESTION if _ASKS.search(text) else 0) | (DATE if _DATE.search(plain) else 0)


def _is_heading(text: str, words: list[str]) -> bool:
    """A line in title case, not ended as a sentence is: "Revenue by Reportable Segments", "President and Chief
    Executive Officer" (a filing's heading and a signature's title say what follows, not the answer) — or a
    numbered one that is, a paragraph's run-in heading split from it: "6.1.4 Remembering Papers from the Past
    (D2,D3)." (a subsection's number, then title case but for short joining words)."""
    long = [w for w in words if len(w) >= 4 and w.isalpha()]
    ended = text.rstrip()[-1:] in ".!?;\"'”’)]"
    if ended and _SUBSECTION.match(text):
        long = [w for w in long if w not in _TITLE_JOINING]
        return len(words) <= MAX_HEADING_WORDS + 3 and len(long) >= 1 and all(w[0].isupper() for w in long)
    return not ended and len(words) <= MAX_HEADING_WORDS and len(long) >= 2 and all(w[0].isupper() for w in long)


_SUBSECTION = re.compile(r"\d{1,2}(?:\.\d{1,2}){1,3}\.? +[A-Z]")  # "6.1.4 Remembering …"; not "2.1 million …"
_TITLE_JOINING = frozenset("from with into onto over upon than that this about after under between through".split())


def sentence_kinds(texts: Sequence[str]) -> np.ndarray:
    """(S,) int8 the kind bits of each sentence."""
    return np.array([sentence_kind(t) for t in texts], dtype=np.int8)


def _is_figure(token: str) -> bool:
    return bool(_FIGURE_TOKEN.match(token)) or token.lower().strip("(),;:.") in _NUMBER_WORDS


def counted_text(text: str) -> str:
    """The words that the figures of one sentence's text count or label, as text (empty when it quotes none)."""
    row = _ROW.fullmatch(text.strip())
    if row is not None:  # a table row: its figures are of its label, whatever its columns say
        return row.group(1)
    tokens = _CITATION.sub(" ", _ADDRESS.sub(" ", text)).split()
    counted = []
    for i, token in enumerate(tokens):
        if not _is_figure(token):
            continue
        if i and tokens[i - 1].lower().rstrip(".") in _REFERENCE:  # "Note 16 - Employee Retirement Plans"
            continue
        if _YEAR.fullmatch(token):  # "In 2012, …", "the 2012 Employee Stock Purchase Plan": no count
            after = tokens[i + 1] if i + 1 < len(tokens) else ""
            if after[:1].islower() and after not in _NOT_COUNTED | _JOINING:  # "2000 participants"; not "2023 and …"
                counted.extend(tokens[i + 1 : i + 1 + COUNT_AFTER])
            continue
        for j in range(i - 1, max(i - 1 - COUNT_BEFORE, -1), -1):
            if tokens[j].endswith(_PHRASE_END) or _is_figure(tokens[j]) or tokens[j].lower() in _BEFORE_A_COUNT:
                break
            counted.append(tokens[j])
        if token.endswith(_PHRASE_END):
            continue
        for j in range(i + 1, min(i + 1 + COUNT_AFTER, len(tokens))):
            if _is_figure(tokens[j]):
                break
            counted.append(tokens[j])
            if tokens[j].endswith(_PHRASE_END):
                break
    return " ".join(counted)


def counted_word(question: str) -> str | None:
    """The word a question asks the count or amount of, or None: after "how many", the first plural word before the
    verb ("How many participants took part …" → "participants", "How many full-time employees does …" →
    "employees") or else the first ("How many staff work …" → "staff"); after the other cues, the last word before
    the verb or preposition ("the total net revenue in …" → "revenue", "What was NVIDIA's net income in …" →
    "income"); "and" and "or" are passed over ("research and development expense"), a comma ends the words."""
    cue = _COUNT_CUE.search(question)
    if cue is None:
        return None
    words = []
    clause = re.split(r"[,;?]", question[cue.end() :], maxsplit=1)[0]
    for word in re.findall(r"[^\W_]+(?:-[^\W_]+)*", clause):
        if word.lower() in _JOINING:  # "research and development expense", "the revenue and the …"
            continue
        if word.lower() in _NOT_COUNTED:
            break
        words.append(word)
    if not words:
        return None
    if cue.group().lower().startswith("how many"):
        return next((w for w in words if w.endswith("s") and not w.endswith("ss")), words[0])
    return words[-1]
