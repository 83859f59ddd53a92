"""What every extractive summarizer does with its ranking of a document's sentences: take it until the budget.

A summarizer (:mod:`model.inference.summarizers`) ranks a document's sentences best first, lazily; :func:`take`
takes one ranking until the budget, :func:`take_across` several in turn (a collection summary).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence

from model.inference.passages import DocumentText


def take(document: DocumentText, order: Iterable[int], budget_words: int) -> list[int]:
    """Sentences of ``order`` (a repeated text once) until they hold ``budget_words`` words, in reading order."""
    return [i for _, i in take_across([document], [iter(order)], budget_words)]


def take_across(
    documents: Sequence[DocumentText],
    orders: Sequence[Iterator[int]],
    budget_words: int,
    skip: Collection[str] = frozenset(),
) -> list[tuple[int, int]]:
    """(document, sentence) pairs taken from the ``orders`` in turn (one sentence of each per round, an exhausted
    order left out, a text already taken or in ``skip`` skipped) until they hold ``budget_words`` words; sorted."""
    chosen, seen, held = [], set(skip), 0
    active = list(range(len(documents)))
    while active and held < budget_words:
        for d in list(active):
            if held >= budget_words:
                break
            for i in orders[d]:
                text = " ".join(documents[d].sentence_text(i).split())
                if text not in seen:
                    chosen.append((d, i))
                    seen.add(text)
                    held += len(text.split())
                    break
            else:
                active.remove(d)
    return sorted(chosen)


class Ranking:
    """What every summarizer does with its ranking: take it until the budget."""

    def ranked(self, document: DocumentText, budget_words: int) -> Iterator[int]:
        raise NotImplementedError

    def choose(self, document: DocumentText, budget_words: int) -> list[int]:
        return take(document, self.ranked(document, budget_words), budget_words)
