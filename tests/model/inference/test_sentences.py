"""What a sentence is (``model.inference.sentences``): whole or a fragment, and whether it quotes a figure."""

from __future__ import annotations

import pytest

from model.inference.sentences import FIGURE, WHOLE, sentence_kind, sentence_kinds


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("As of December 31, 2020, we had approximately 3,950 full-time employees.", WHOLE | FIGURE),
        ("Total net sales (2018: 265,595; 2019: 280,522)", WHOLE | FIGURE),
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
        ("Table 2", FIGURE),
        ("", 0),
    ],
)
def test_the_kind_of_a_sentence(text: str, kind: int) -> None:
    assert sentence_kind(text) == kind


def test_kinds_are_one_small_integer_per_sentence() -> None:
    kinds = sentence_kinds(["We had 3,950 employees in all.", "Blowhole"])
    assert kinds.dtype.itemsize == 1 and kinds.tolist() == [WHOLE | FIGURE, 0]
