"""Table rows that say which column each figure is in.

A PDF's text layer gives a financial statement as lines such as ``Total net sales 251,004 265,595 280,522`` under a
header line ``Year Ended December 31, 2017 2018 2019``. Read alone, the row does not say which figure is 2019's, so a
question about "net sales in 2019" can neither match it nor be answered by quoting it. Each such row is rewritten with
its column labels (``Total net sales (2017: 251,004; 2018: 265,595; 2019: 280,522)``), one row per line, and the row
is quoted whole when cited. A row is rewritten only when a header above it in the same table gives exactly as many
column labels as the row has figures; anything else is left as extracted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CELL = re.compile(r"\(?[-−]?[$€£]?\d[\d,]*(?:\.\d+)?%?\)?|[-—–]+|n/?[am]", re.IGNORECASE)
_CURRENCY = frozenset("$ € £ US$ %".split())
_YEAR = re.compile(r"(?:FY|fiscal)?'?(?:19|20)\d\d", re.IGNORECASE)
_SHORT_COLUMN = re.compile(r"Q[1-4]|[1-4]Q|H[12]|FY\d{2,4}", re.IGNORECASE)
_MONTH = re.compile(r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?|\d{1,2},?", re.IGNORECASE)
MAX_LABEL_WORDS = 12  # a row's label: "Net cash provided by (used in) operating activities"
MAX_GAP_WORDS = 6  # a line inside a table that is neither a row nor a header: "Operating expenses:"
MAX_GROUP_WORDS = 4  # one column label: "Three Months Ended", "Fourth Quarter"
MAX_CELL_WORDS = 6  # a header's cells printed a line each: "January 29,", "2023", "Three Months Ended"


@dataclass(frozen=True)
class Row:
    """A line read as a table row: its label and its figures (currency signs kept with them)."""

    label: str
    cells: list[str]


def parse_row(line: str) -> Row | None:
    """``line`` as a label followed by two or more figures and nothing else, or None."""
    tokens = line.split()
    cells: list[str] = []
    suffix = ""
    i = len(tokens)
    while i > 0:
        token = tokens[i - 1]
        if token == "%":
            suffix = token
        elif token in _CURRENCY and cells:
            cells[0] = token + cells[0]
        elif _CELL.fullmatch(token):
            cells.insert(0, token + suffix)
            suffix = ""
        else:
            break
        i -= 1
    label = " ".join(tokens[:i])
    if len(cells) < 2 or not label or len(tokens[:i]) > MAX_LABEL_WORDS or not any(c.isalpha() for c in label):
        return None
    return Row(label, cells)


def column_labels(line: str) -> list[str]:
    """The column labels that end a header line: years (with their month and day when given), quarter-like codes, or
    groups of words that end alike ("First Quarter … Fourth Quarter"); [] when the line ends otherwise."""
    tokens = line.split()
    if not tokens:
        return []
    years = [i for i, token in enumerate(tokens) if _YEAR.fullmatch(token.strip(",:"))]
    tail = tokens[years[0] :] if years else []
    if len(years) >= 2 and all(_YEAR.fullmatch(t.strip(",:")) or _MONTH.fullmatch(t) for t in tail):
        starts = [max(year - 2, 0) for year in years]
        dated = all(
            year - start == 2 and all(_MONTH.fullmatch(t) for t in tokens[start:year])
            for start, year in zip(starts, years, strict=True)
        ) and all(b - a == 3 for a, b in zip(years, years[1:], strict=False))
        if dated:  # "December 31, 2019 December 31, 2018"
            return [" ".join(tokens[start : year + 1]) for start, year in zip(starts, years, strict=True)]
        return [tokens[year].strip(",:") for year in years]
    short = 0
    while short < len(tokens) and _SHORT_COLUMN.fullmatch(tokens[-1 - short]):
        short += 1
    if short >= 2:
        return tokens[len(tokens) - short :]
    last = tokens[-1].lower()
    if not last.isalpha():  # groups end in a word ("Quarter", "Ended"), not in a figure: "100.0 % 100.0 %" is a row
        return []
    for width in range(2, MAX_GROUP_WORDS + 1):
        count = 0
        while (count + 1) * width <= len(tokens) and tokens[-1 - count * width].lower() == last:
            count += 1
        groups = [tokens[len(tokens) - (n + 1) * width : len(tokens) - n * width] for n in reversed(range(count))]
        if count >= 2 and all(not any(w.lower() == last for w in g[:-1]) for g in groups):
            return [" ".join(g) for g in groups]
    return []


def label_rows(lines: list[str]) -> tuple[list[str], set[int]]:
    """``lines`` (one page, in order) with each table row that has a header rewritten as ``label (column: figure;
    …)``, and the indices of the rewritten lines (each to stay a line of its own). A header may come a cell per
    line ("Year Ended", "January 29,", "2023", …, as a web page printed to PDF gives it), and under a line of column
    groups ("Three Months Ended Nine Months Ended"): each group's label then heads its share of the columns."""
    out = list(lines)
    rewritten: set[int] = set()
    labels: list[str] = []
    groups: list[str] = []  # the header line that a header given a cell per line below it subdivides
    run: list[str] = []  # the short lines since the last header line or row: a header's cells, a line each
    cells: list[str] = []  # the labels those lines gave so far (a later line may only add to them)
    gap = 0
    for i, line in enumerate(lines):
        header = column_labels(line)
        if header:
            labels = groups = header
            gap, run, cells = 0, [], []
            continue
        row = parse_row(line)
        if row is None and len(line.split()) <= MAX_CELL_WORDS:
            run.append(line)
            more = column_labels(" ".join(run))
            if len(more) > len(cells) and more[: len(cells)] == cells:  # not "2023 ASSETS:" from the line after
                cells = more
                labels, gap = _under(groups, cells), 0
                continue
        else:
            run, groups, cells = [], [], []
        if row is not None and labels and len(row.cells) == len(labels):
            pairs = "; ".join(f"{label}: {cell}" for label, cell in zip(labels, row.cells, strict=True))
            out[i] = f"{row.label} ({pairs})"
            rewritten.add(i)
            gap = 0
        elif row is None:
            gap += 1
            if len(line.split()) > MAX_GAP_WORDS or gap > 2:
                labels = []
    return out, rewritten


def _under(groups: list[str], columns: list[str]) -> list[str]:
    """``columns`` under their ``groups`` (an equal share each, in order), or as they are when they do not divide."""
    if not groups or len(columns) % len(groups):
        return columns
    share = len(columns) // len(groups)
    return [f"{groups[n // share]} {column}" for n, column in enumerate(columns)]
