"""Segmentation: sentences with exact spans, headings, sections and the abstract."""

from __future__ import annotations

from ingest.segment import MAX_SENTENCE_CHARS, heading_title, segment, split_sentences, turn_speakers


def _sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text, 0, len(text))]


def test_abbreviations_decimals_initials_and_urls_do_not_end_sentences() -> None:
    text = (
        "Models, e.g. BERT, work well (Smith et al. 2020) as Fig. 3 and Eq. 2 show. "
        "Dr. Jones measured 3.14 units, i.e. Pi. J. R. R. Tolkien wrote it. "
        "See https://example.com/a.b.html for details. Is it done? Yes! \u201cQuoted.\u201d Then more."
    )
    assert _sentences(text) == [
        "Models, e.g. BERT, work well (Smith et al. 2020) as Fig. 3 and Eq. 2 show.",
        "Dr. Jones measured 3.14 units, i.e. Pi.",
        "J. R. R. Tolkien wrote it.",
        "See https://example.com/a.b.html for details.",
        "Is it done?",
        "Yes!",
        "\u201cQuoted.\u201d",
        "Then more.",
    ]


def test_a_patent_figure_reference_does_not_end_a_sentence() -> None:
    text = "[0021] FIG. 2 is a perspective view of the container. FIGS. 3 and 4 show the lid."
    assert _sentences(text) == [
        "[0021] FIG. 2 is a perspective view of the container.",
        "FIGS. 3 and 4 show the lid.",
    ]


def test_a_stop_without_a_space_ends_a_sentence_and_a_report_number_does_not() -> None:
    """A transcript's "recorded.It will …" is two sentences (they were glued into runs of up to 1,000 characters);
    "H.Rept. 115-239" and "No. 5" are one, as abbreviations before a number."""
    text = "This call is being recorded.It will be posted. See the report (H.Rept. 115-239) and No. 5 here."
    assert _sentences(text) == [
        "This call is being recorded.",
        "It will be posted.",
        "See the report (H.Rept. 115-239) and No. 5 here.",
    ]
    glued = "Sales were $90.6 million in 2010.In terms of costs, margins fell 3%.Still, we grew.However, see 4.I. Late."
    assert _sentences(glued) == [
        "Sales were $90.6 million in 2010.",
        "In terms of costs, margins fell 3%.",
        "Still, we grew.",
        "However, see 4.I.",
        "Late.",
    ]
    dated = "Pete will be our CFO on November 11.Statements about the future are risky. See 1.Introduction."
    assert _sentences(dated) == [
        "Pete will be our CFO on November 11.",
        "Statements about the future are risky.",
        "See 1.Introduction.",  # one digit: a section's number
    ]
    acronym = "Of that, 28% was for the retinoid.SG&A expense was $20.8 million. See os.SEEK_SET here."
    assert _sentences(acronym) == [
        "Of that, 28% was for the retinoid.",
        "SG&A expense was $20.8 million.",
        "See os.SEEK_SET here.",  # code: a constant after a module's name
    ]
    article = "Costs were $10.7 million.A few other costs rose 3%.A big part. Use re.A is fine."
    assert _sentences(article) == [
        "Costs were $10.7 million.",
        "A few other costs rose 3%.",
        "A big part.",
        "Use re.A is fine.",  # code: a flag after a module's name
    ]


def test_a_tokenized_text_ends_a_sentence_before_a_spaced_opening_quote() -> None:
    """NLTK's Gutenberg copies write every mark apart ("… to be two people .\n` But it 's no use now , ' …"): Alice
    in Wonderland was 527 sentences (many cut at the length limit) of its 1,632 lines."""
    text = "She was fond of being two people .\n` But it 's no use now , ' thought Alice .\n' Soon her eye fell."
    assert _sentences(text) == [
        "She was fond of being two people .",
        "` But it 's no use now , ' thought Alice .",
        "' Soon her eye fell.",
    ]


def test_a_footnote_mark_after_a_full_stop_ends_the_sentence() -> None:
    text = "It changed AI-assisted writing.1 The models write well.2 As a result, we use them in version 3.1 Then."
    assert _sentences(text) == [
        "It changed AI-assisted writing.1",
        "The models write well.2",
        "As a result, we use them in version 3.1 Then.",  # a version number is no footnote
    ]


def test_lowercase_continuation_and_list_numbers_are_not_boundaries() -> None:
    assert _sentences("It costs 5 vs. 6 dollars. and so on") == ["It costs 5 vs. 6 dollars. and so on"]
    assert _sentences("1. First item here.") == ["1. First item here."]


def test_a_name_in_lower_case_starts_a_sentence_but_no_abbreviation_or_web_address_does() -> None:
    assert _sentences("A toolkit for documents. papermage offers abstractions.") == [
        "A toolkit for documents.",
        "papermage offers abstractions.",
    ]
    assert _sentences("Lakes have misc. other bugs.") == ["Lakes have misc. other bugs."]
    assert _sentences("URL http://arxiv. org/abs/2104.02112.") == ["URL http://arxiv. org/abs/2104.02112."]


def test_long_sentences_are_cut_at_whitespace() -> None:
    text = " ".join(["word"] * 1000)
    spans = split_sentences(text, 0, len(text))
    assert len(spans) > 1
    assert all(e - s <= MAX_SENTENCE_CHARS for s, e in spans)
    assert all(text[s:e] == text[s:e].strip() and text[s:e].startswith("word") for s, e in spans)
    assert " ".join(text[s:e] for s, e in spans) == text


def test_heading_detection() -> None:
    for line in [
        "1 Introduction",
        "2.1 Method",
        "3.2.1 Data Sets",
        "IV. RESULTS",
        "ABSTRACT",
        "RELATED WORK",
        "References",
        "Acknowledgments",
        "Conclusion",
        "A.1 Extra Results",
        "CCS CONCEPTS",
        "4.2 Results vs. Baselines",
        "5 Experiments on U.S. Data",
    ]:
        assert heading_title(line) == line, line
    for line in [
        "The model was trained for",
        "2 epochs were enough.",
        "BERT",
        "2020 Conference on Empirical",
        "1 The model is trained with",
        "3 Results are shown in the table of",
        "Table 1: results",
        "we use the following,",
        "introduction",
        "6.1.6 Volunteered Continued Usage in the Wild. Finally, we also",  # a run-in heading
    ]:
        assert heading_title(line) is None, line
    assert heading_title("## Install it", markdown=True) == "Install it"
    assert heading_title("Not a heading", markdown=True) is None


PAPER = """A Paper Title

Ann Author, Some University

Abstract

We study things. The results are good.

1 Introduction

Things matter, e.g. here. We show it.

2 Method

We do it.

References

[1] A. Author. 2020. A paper. In Proc. of Things."""


def test_sections_kinds_and_sentences() -> None:
    seg = segment(PAPER)
    titles = [(s.title, s.kind) for s in seg.sections]
    assert titles == [
        ("", "body"),
        ("Abstract", "abstract"),
        ("1 Introduction", "body"),
        ("2 Method", "body"),
        ("References", "references"),
    ]
    abstract = seg.sections[1]
    assert PAPER[abstract.start : abstract.end] == "Abstract\n\nWe study things. The results are good."
    texts = [PAPER[s.start : s.end] for s in seg.sentences]
    assert "1 Introduction" not in texts  # headings are not sentences
    assert texts[2:4] == ["We study things.", "The results are good."]
    assert [s.section for s in seg.sentences[2:4]] == [1, 1]
    paragraphs = [s.paragraph for s in seg.sentences]
    assert paragraphs == sorted(paragraphs)


def test_inline_abstract_label_and_pages() -> None:
    text = "Title\n\nAbstract\u2014We propose a method. It works.\n\nI. INTRODUCTION\n\nIntro text here."
    page_starts = [0, text.index("I. INTRO")]
    seg = segment(text, page_starts=page_starts)
    abstract = next(s for s in seg.sections if s.kind == "abstract")
    assert text[abstract.start : abstract.end].startswith("Abstract\u2014We propose")
    first = next(s for s in seg.sentences if s.section == seg.sections.index(abstract))
    assert text[first.start : first.end] == "We propose a method."
    assert [s.page for s in seg.sentences] == [1, 1, 1, 2]


def test_unlabelled_abstract_is_the_long_paragraph_before_introduction() -> None:
    abstract = " ".join(["This paper studies a problem and shows a result."] * 8)
    text = f"Title of It\n\nAUTHOR NAME, Place\n\n{abstract}\n\nCCS Concepts: Things.\n\n1 INTRODUCTION\n\nBody."
    seg = segment(text)
    [section] = [s for s in seg.sections if s.kind == "abstract"]
    assert text[section.start : section.end] == abstract


def test_markdown_and_explicit_heading_spans() -> None:
    text = "# Guide\n\nSome text.\n\n## Usage\nRun it. Then stop."
    seg = segment(text, markdown=True)
    assert [s.title for s in seg.sections] == ["Guide", "Usage"]
    assert [text[s.start : s.end] for s in seg.sentences] == ["Some text.", "Run it.", "Then stop."]
    text = "Top\n\nINTRODUCTION TO IT\n\nBody."
    seg = segment(text, heading_spans=[(0, 3)])  # only the given spans are headings
    assert [s.title for s in seg.sections] == ["Top"]


def test_table_rows_are_sentences_of_their_own() -> None:
    text = (
        "The table below shows net sales by category.\n2019 2018 2017\niPhone $ 142,381 $ 164,888 $ 139,337\n"
        "Total net sales $ 260,174 $ 265,595 $ 229,234\nNet sales decreased in 2019 compared to 2018. Revenue of"
        " 260,174 million in 2019,\ncompared with 265,595 million in 2018, fell by 2 percent."
    )
    sentences = [text[s.start : s.end] for s in segment(text).sentences]
    assert sentences == [
        "The table below shows net sales by category.",
        "2019 2018 2017",
        "iPhone $ 142,381 $ 164,888 $ 139,337",
        "Total net sales $ 260,174 $ 265,595 $ 229,234",
        "Net sales decreased in 2019 compared to 2018.",
        "Revenue of 260,174 million in 2019,\ncompared with 265,595 million in 2018, fell by 2 percent.",
    ]
    assert len({s.paragraph for s in segment(text).sentences}) == 1  # the header stays with its rows


def test_the_speaker_of_a_transcript_turn_is_its_line_s_label() -> None:
    """Each position's speaker: the label opening its line in a transcript (two labelled lines or more, half of its
    lines at least); a lone "Note: …" line names no one, nor do a contract's "By:" and "Title:" lines."""
    meeting = "Project Manager: Okay . Let us start .\nProfessor C: Right . 'Kay I am Gaurav .\nand more"
    starts = [0, meeting.index("Let"), meeting.index("Right"), meeting.index("'Kay"), meeting.index("and more")]
    assert turn_speakers(meeting, starts) == ["Project Manager", "Project Manager", "Professor C", "Professor C", ""]
    memo = "Note: the office closes early . The cafeteria serves soup ."
    assert turn_speakers(memo, [0, memo.index("The")]) == ["", ""]
    contract = "Source: ACME, 10-K\n1. The term is two years.\n2. Fees are due monthly.\nBy: Jane Roe\nTitle: CEO\n"
    contract += "\n".join(f"{n}. Clause {n} applies." for n in range(3, 9))  # labelled lines: 3 of 11
    assert turn_speakers(contract, [0, contract.index("By"), contract.index("Title")]) == ["", "", ""]


def test_an_earnings_call_s_turn_runs_from_its_speaking_line_to_the_next() -> None:
    """A call written as "Name - Title Speaking." lines, each turn on the lines after its label: the turn's every
    line is that speaker's, the call's opening (before any label) and the label's own line no one's; a contract's
    lone "Franchisee:" line opens no turn."""
    call = (
        "Good afternoon and welcome to the call.\nJim Fanucchi - Darrow Associates Speaking.\nThank you, operator.\n"
        "Jerry Turin - Chief Financial Officer Speaking.\nThanks Jim. Revenue rose.\nMargins held.\n"
    )
    at = [0, call.index("Jim"), call.index("Thank you"), call.index("Thanks Jim"), call.index("Margins")]
    turn = "Jerry Turin - Chief Financial Officer"
    assert turn_speakers(call, at) == ["", "", "Jim Fanucchi - Darrow Associates", turn, turn]
    contract = "Franchisee:\n" + "\n".join(f"{n}. Clause {n} applies." for n in range(1, 9)) + "\nATTEST:\nJane Roe"
    assert turn_speakers(contract, [contract.index("2."), contract.index("Jane")]) == ["", ""]


def test_a_lettered_appendix_after_the_references_is_the_paper_s_own_text() -> None:
    """S2ORC's appendix headings ("A Background & Terminology", "B PDF filters") follow its references without a
    stop; a line of the list that begins with an initial ("A Radford, J Wu, and R Child. 2019.") heads nothing."""
    text = (
        "1 Introduction\n\nWe parse papers.\n\nReferences\n\nA Radford, J Wu, and R Child. 2019. Language models.\n\n"
        "A Background & Terminology\n\nA span is a run of characters.\n\nB PDF filters\n\nWe drop long PDFs.\n"
    )
    seg = segment(text)
    assert [(s.title, s.kind) for s in seg.sections] == [
        ("1 Introduction", "body"),
        ("References", "references"),
        ("A Background & Terminology", "body"),
        ("B PDF filters", "body"),
    ]
    assert segment("1 Results\n\nGood.\n\nA Study of Things\n\nMore.").sections[-1].title == "1 Results"
