"""Cleaning: characters, hyphenation, running headers and footers, page numbers, reflow."""

from __future__ import annotations

from ingest.clean import clean_pdf_pages, normalize_text


def test_normalize_ligatures_nfc_controls_and_whitespace() -> None:
    raw = "\ufb01nd the \ufb02ow, e\u0301t\u00e9 \x00bell\x07\r\nnext\u00a0line   end  \n\n\n\nlast\t \u200bword"
    assert normalize_text(raw) == "find the flow, \u00e9t\u00e9 bell\nnext line end\n\nlast word"


def test_an_ampersand_escaped_between_words_is_one() -> None:
    """Call transcripts exported from HTML write "R&amp;D" and "SG&amp;A", which a question's "SG&A" did not match;
    an escape shown as code or standing between spaces stays."""
    assert normalize_text('R&amp;D and SG&amp;A; escape("&amp;") is a &amp; b') == (
        'R&D and SG&A; escape("&amp;") is a &amp; b'
    )


def test_normalize_keeps_indentation() -> None:
    assert normalize_text("def f():\n    return  1\n") == "def f():\n    return 1"


def test_hyphenation_joined_across_lines_but_real_hyphens_kept() -> None:
    page = (
        "This is a long line of running text giving an exam-\nple of a word split across two lines,\n"
        "and a state-\nof-the-art model that uses self-\nattention, GPT-\n3 and Transformer-\nXL as well as\n"
        "machine-readable data and machine-\nreadable text in the same long paragraph of text."
    )
    [text] = clean_pdf_pages([page])
    assert "example of a word" in text
    assert "state-of-the-art" in text
    assert "self-attention" in text
    assert "GPT-3" in text and "Transformer-XL" in text
    assert "machine-readable text" in text  # the document itself spells it with a hyphen


WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()


def _paper_page(n: int) -> str:
    header = "Journal of Examples, Vol. 12" if n % 2 else "A. Author and B. Author"
    body = "\n".join(
        f"Line {i} about {WORDS[(n * 3 + i) % len(WORDS)]} and {WORDS[(n + i) % len(WORDS)]} "
        "in the body text of this page runs across a full line"
        for i in range(8)
    )
    return f"{header}\n{body}\nProceedings page {100 + n}\n{n}"


def test_repeated_headers_footers_and_page_numbers_dropped() -> None:
    pages = clean_pdf_pages([_paper_page(n) for n in range(1, 7)])
    for text in pages:
        assert "Journal of Examples" not in text and "A. Author" not in text
        assert "Proceedings page" not in text
        assert text.startswith("Line 0 about") and text.endswith("runs across a full line")


def test_reflow_joins_lines_into_paragraphs_and_breaks_at_headings() -> None:
    page = (
        "1 Introduction\n"
        "Academic papers are an increasingly important textual\n"
        "domain for natural language processing research, and\n"
        "they are long documents with many sections in them.\n"
        "A short last line.\n"
        "Next paragraph starts here and it continues on with\n"
        "the next line of the page.\n"
        "2 Method\n"
        "We do things."
    )
    [text] = clean_pdf_pages([page])
    assert text.split("\n\n") == [
        "1 Introduction",
        "Academic papers are an increasingly important textual domain for natural language processing research, "
        "and they are long documents with many sections in them. A short last line.",
        "Next paragraph starts here and it continues on with the next line of the page.",
        "2 Method",
        "We do things.",
    ]


def test_spacing_accents_from_pdf_fonts_are_composed() -> None:
    [text] = clean_pdf_pages(["Saier and F\u00a8arber (2019) and Andr\u00b4e"])
    assert text == "Saier and F\u00e4rber (2019) and Andr\u00e9"


def test_accents_that_pdfium_sets_apart_go_to_their_word_or_away() -> None:
    """pdfium's text of the S2ORC paper: "Saier and Farber \u00a8 (2019)" (the walk's answer quoted it so), "Perez
    P \u00b4 erez": an accent after its word leaves the word bare, one after a capital joins the rest of the word."""
    page = "Saier and Farber \u00a8 (2019), P \u00b4 erez and An \u00b4 alia by Farber. 2019. \u00a8 Bibliometric"
    [text] = clean_pdf_pages([page])
    assert text == "Saier and Farber (2019), P\u00e9rez and An\u00e1lia by Farber. 2019. Bibliometric"
    [kept] = clean_pdf_pages(["Farber \u00a8 and don\u00b4t"])  # a long word is not joined to the next one
    assert kept == "Farber and don\u00b4t"


def test_a_page_made_only_of_a_repeated_line_keeps_it() -> None:
    # e.g. the shared sample habibi-rotated.pdf: the same single line on each of its 4 pages
    pages = ["حَبيبي habibi حَبيبي"] * 4
    assert all("habibi" in page for page in clean_pdf_pages(pages))


def test_a_footnote_number_glued_to_its_first_word_is_dropped() -> None:
    body = "The corpus covers many fields of study and was built from the papers of several publishers and"
    page = "\n".join(
        [body, body, "archives.", "8The papers included in the corpus are a curated subset of a graph.", "3D"]
    )
    [cleaned] = clean_pdf_pages([page])
    assert "\n\nThe papers included in the corpus" in cleaned and "8The" not in cleaned, cleaned
    assert cleaned.endswith("3D")


def test_a_footnote_mark_joined_to_the_sentence_before_or_after_a_comma_is_dropped() -> None:
    """Footnotes the reflow joined to the paragraph above, and a mark between a comma and the next word; figures
    that merely start with a digit stay."""
    page = (
        "BigBird is a popular baseline. 6Reducing extractiveness is also a suggestion.\n\n"
        "We introduce S2ORC,1a large corpus of papers. The 3D scans and 5G links date from 2019. 2nd place went to"
        " them."
    )
    [cleaned] = clean_pdf_pages([page])
    assert "baseline. Reducing extractiveness" in cleaned and "S2ORC, a large corpus" in cleaned, cleaned
    assert "The 3D scans and 5G links date from 2019. 2nd place" in cleaned, cleaned


def test_footnotes_that_interrupt_a_sentence_are_taken_out_of_it() -> None:
    """A two-column page's text layer puts a column's footnotes between the halves of the sentence the next column
    goes on with (the shared S2ORC paper, p. 3); the sentence is put back together and the footnotes, wrapped web
    addresses joined, follow the page's first paragraph. A footnote after a finished sentence stays where it is."""
    line = "The pipeline parses each paper and links its citations to the entries of"
    page = "\n".join(
        [
            line,
            "the bibliography.",
            line,
            "a graph; in cases where metadata is incomplete, we use majority voting to select",
            "12The S2ORC data format is described at https://",
            "github.com/allenai/s2orc",
            "13Our evaluations suggest that the parser outperforms other tools for",
            "titles and author extraction.",
            "canonical metadata values for each of the papers in the corpus we release.",
            line,
            "the graph.",
            "14This footnote after a full stop stays.",
        ]
    )
    [cleaned] = clean_pdf_pages([page])
    paragraphs = cleaned.split("\n\n")
    assert "we use majority voting to select canonical metadata values for each" in cleaned, paragraphs
    assert paragraphs[1:3] == [
        "The S2ORC data format is described at https://github.com/allenai/s2orc",
        "Our evaluations suggest that the parser outperforms other tools for titles and author extraction.",
    ], paragraphs
    assert paragraphs[-1] == "This footnote after a full stop stays.", paragraphs


def test_a_caption_inside_a_sentence_follows_it() -> None:
    """A figure placed at the top of a column cuts the sentence that runs on into it (the shared CiteSee paper,
    pp. 5–6): the sentence is put back together, the caption follows; a caption after a finished sentence stays."""
    body = "One challenge here is that users might not remember their past interactions with papers even when"
    first = "\n".join([body, body, "the system augments them. To support this, the reader allows"])
    second = "\n".join(
        [
            "Figure 4: Overview of the visual augmentation types.",
            "users to click on a citation to see personalized contexts in a Paper Card, such as the last time the",
            "paper was opened. Together these features provide a personalized reading and exploration experience",
            "around citations for the many different readers that come to the tool with their own reading history",
            "and with their own library of papers, which the tool reads to decide which citations it highlights as",
            "explored, and which as unexplored but important for readers in the many areas that",
            "Table 2: Strategies and their effects.",
            "take part in the study that we ran in the lab with the people who took part in the interviews before.",
            "Table 3: Participants.",
            "The study ends here.",
        ]
    )
    cleaned = clean_pdf_pages([first, second, first])
    paragraphs = cleaned[1].split("\n\n")
    assert paragraphs[0].startswith("users to click on a citation"), paragraphs
    assert paragraphs[0].endswith(
        "many areas that take part in the study that we ran in the lab with the people who took part in the"
        " interviews before."
    ), paragraphs
    assert paragraphs[1:] == [
        "Figure 4: Overview of the visual augmentation types.",
        "Table 2: Strategies and their effects.",
        "Table 3: Participants.",
        "The study ends here.",
    ], paragraphs


def test_a_title_wrapped_after_a_function_word_stays_one_line() -> None:
    """A report's title printed over two lines ("… Background and" / "Issues") was two paragraphs, and so two
    "sentences" that LEAD quoted; a short line that stops on "and", "of", "the" … goes on."""
    body = "The agency is an entity within the department, and its mission is to provide leadership and support."
    page = "The U.S. Fire Administration: Background and\nIssues\nBackground\n" + "\n".join([body] * 6)
    [text] = clean_pdf_pages([page])
    assert text.split("\n\n")[:2] == ["The U.S. Fire Administration: Background and Issues", "Background"], text
