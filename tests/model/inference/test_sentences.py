"""What a sentence is (``model.inference.sentences``): whole or a fragment, whether it quotes a figure, asks a
question or gives a date, and what its figures count."""

from __future__ import annotations

import pytest

from model.inference.lexical import word_ids
from model.inference.sentences import (
    DATE,
    FIGURE,
    POINTER,
    QUESTION,
    WHOLE,
    counted_text,
    counted_word,
    sentence_kind,
    sentence_kinds,
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("As of December 31, 2020, we had approximately 3,950 full-time employees.", WHOLE | FIGURE | DATE),
        ("Total net sales (2018: 265,595; 2019: 280,522)", WHOLE | FIGURE | DATE),
        ("Looking out to 2026, we expect a further increase in CapEx.", WHOLE | DATE),  # a year quotes no amount
        ("The Charter was signed into law on April 17 , 1982 .", WHOLE | FIGURE | DATE),
        ("On 5 May the board met again.", WHOLE | FIGURE | DATE),
        ("In 1,982 cases the rule held.", WHOLE | FIGURE),  # a count, not a year
        ("See section 2019.5 of the law.", WHOLE | FIGURE),
        ("May I ask you something about it?", WHOLE | QUESTION),  # a month's name alone is no date
        ("Revenue by Reportable Segments", 0),  # a heading in title case
        ("President and Chief Executive Officer", 0),  # a signature's title
        ("We report our results in two Segments: Compute and Graphics", WHOLE),  # lower-case words: a sentence
        ("Margins rose to 12.5% of revenue.", WHOLE | FIGURE),
        ("Revenue was $4.2 billion this year.", WHOLE | FIGURE),
        ("We also maintain employee networks.", WHOLE),
        ("This follows earlier work [44] on the same task.", WHOLE),  # a citation mark
        ("This follows earlier work [3, 7–9] on the same task.", WHOLE),
        ("Used to determine the PDF page number of each networks20 entry.", WHOLE),  # a footnote mark
        ("Net revenue in Q3 grew.", WHOLE),
        ("§ github.com/allenai/papermage1", 0),  # a footnote holding a web address
        ("See https://example.org/a/b for the code.", WHOLE),  # the words around an address count
        ("Blowhole", 0),
        ("Key differences in its pretraining corpus and those used here are:", 0),  # a lead-in: the list answers
        ("Table 2", FIGURE),
        ("Sian Gwenllian AM: Has HEFCW done any assessment of the effect?", WHOLE | QUESTION),
        ('He asked, "Where did the 12 boats go?"', WHOLE | FIGURE | QUESTION),
        ("Why?", QUESTION),
        ("Kirsty Williams AM: Okay .", 0),  # the speaker's name is no word of what is said
        ("Project Manager: We should aim at the young people .", WHOLE),
        ("Results: we found 12 errors.", WHOLE | FIGURE),
        ("Is it? We think so.", WHOLE),  # asks, then says: what it says is its end
        ("Numbers of PDFs removed by these filters are given in Table 8.", WHOLE | FIGURE | POINTER),
        ("Document lengths are reported in Table TABREF19.", WHOLE | POINTER),  # QASPER's placeholder
        ("Details on how CiteSee processes raw PDFs are described in Section 4.6.", WHOLE | FIGURE | POINTER),
        ("Results are shown in Table 3, where we reach 91.2 F1.", WHOLE | FIGURE),  # says what is shown too
        ("Table 3 shows that the model wins.", WHOLE | FIGURE),
        ("6.1.4 Remembering Papers from the Past (D2,D3).", FIGURE),  # a run-in heading split from its paragraph
        ("12.3 Governing Law.", FIGURE),  # a contract's clause heading
        ("2.1 million users joined the service.", WHOLE | FIGURE),
        ("4.2 We train the model for ten epochs.", WHOLE | FIGURE),
        ("", 0),
    ],
)
def test_the_kind_of_a_sentence(text: str, kind: int) -> None:
    assert sentence_kind(text) == kind


def test_kinds_are_one_small_integer_per_sentence() -> None:
    kinds = sentence_kinds(["We had 3,950 employees in all.", "Blowhole"])
    assert kinds.dtype.itemsize == 1 and kinds.tolist() == [WHOLE | FIGURE, 0]


@pytest.mark.parametrize(
    ("text", "counts", "not_counted"),
    [
        ("We introduce S2ORC, a corpus of 81.1M English-language academic papers spanning many fields.", "papers", ""),
        ("Multi-LexSum, a collection of 9,280 expert-authored summaries drawn from writing.", "summaries", "writing"),
        ("As of December 31, 2020, we had approximately 3,950 full-time employees, of whom most", "employees", ""),
        ("Total net sales (2018: 265,595; 2019: 280,522)", "sales", ""),  # a table row's label
        ("Employees 3,950", "employees", ""),
        (
            "Total net sales (Three Months Ended June 29, 2024: 85,777; Nine Months Ended June 29, 2024: 296,105)",
            "sales",
            "",
        ),
        ("Net cash provided by (used in) operating activities (2023: (1,200); 2024: 3,400)", "operating", ""),
        (
            "In 2012, our shareholders approved the NVIDIA Corporation 2012 Employee Stock Purchase Plan.",
            "",
            "employee",
        ),
        ("We recruited 2000 participants online.", "participants", ""),
        ("Note 16 - Employee Retirement Plans", "", "employee"),  # a note's number
        ("The model has eight layers.", "layers", ""),  # a number word
        ("One of the papers was late.", "", "papers"),  # "one" counts nothing
        ("This follows earlier work [44] on papers.", "", "papers"),  # a citation mark is no figure
        ("We collected papers, 213M of them.", "", "papers"),  # not across the end of a phrase
        ("We also maintain employee networks.", "", "employee"),
        ("PRIMERA produces the longest summaries of 416 words on average.", "words", "summaries"),  # not past "of"
        ("A benefit of $187 million for fiscal year 2023 and income tax expense.", "fiscal", "income"),  # "2023 and"
    ],
)
def test_what_the_figures_of_a_sentence_count(text: str, counts: str, not_counted: str) -> None:
    counted = set(word_ids(counted_text(text)))
    assert set(word_ids(counts)) <= counted, counted_text(text)
    assert not set(word_ids(not_counted)) & counted, counted_text(text)


@pytest.mark.parametrize(
    ("question", "word"),
    [
        ("How many papers does S2ORC contain?", "papers"),
        ("How many full-time employees does Borealis have?", "employees"),
        ("How many participants took part in the study?", "participants"),
        ("How many staff work there?", "staff"),
        ("What is the number of parameters of the model?", "parameters"),
        ("What was the total net revenue in 2019?", "revenue"),
        ("how many episodes in season 1 of the show", "episodes"),
        ("How much did they pay?", None),
        ("What does the paper propose?", None),
        ("What was NVIDIA's net income in fiscal 2023?", "income"),  # a statement's line item
        ("What were Oracle's total revenues?", "revenues"),
        ("What was the loss function used?", None),
        ("What is income inequality?", None),
        ("What were the consolidated revenue and the revenue growth for the segment?", "revenue"),  # not "and"
        ("What was Apple's research and development expense in 2024?", "expense"),
        ("What was the net income, and how much cash?", "income"),
    ],
)
def test_what_a_question_asks_the_count_of(question: str, word: str | None) -> None:
    assert counted_word(question) == word
