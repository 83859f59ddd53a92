"""The IndexPool summarizer: the model's salience head and sentence embeddings, combined by the summary policy
(:mod:`model.inference.summary_policy`); see :mod:`model.inference.summarizers` for what every summarizer does."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from model.inference.passages import DocumentText
from model.inference.ranking import Ranking
from model.inference.summary_policy import SummaryPolicy, policy_for, rank
from model.network.checkpoint import Model, load_model
from model.network.net import char_to_token_spans, encode_spans


class IndexPoolSummarizer(Ranking):
    """Summaries by the salience head, the sentence embeddings and a summary policy."""

    name = "indexpool"

    def __init__(self, model: Model, policy: SummaryPolicy | None = None) -> None:
        self.model = model
        self.policy = policy or SummaryPolicy()

    @torch.no_grad()
    def sentence_scores(self, document: DocumentText) -> tuple[np.ndarray, np.ndarray]:
        """Salience logits (S,) and unit embeddings (S, e) of the document's sentences: what the policy reads."""
        net = self.model.net
        if not len(document.sentences):
            return np.zeros(0), np.zeros((0, 0))
        ids, starts, _ = self.model.tokenizer.encode_offsets(document.text)
        means = encode_spans(net, ids, char_to_token_spans(starts, document.sentences))  # (S, d)
        return net.salience_scores(means).numpy(), net.evidence.embed_spans(means).numpy()

    def ranked(self, document: DocumentText, budget_words: int) -> Iterator[int]:
        salience, emb = self.sentence_scores(document)
        return rank(self.policy, document, salience, emb, budget_words, self.model.weights.redundancy)


def load(summary_policy: str = "") -> IndexPoolSummarizer:
    """The checkpoint's summarizer with its policy (``summary_policy``: "default" or a JSON path overrides it);
    ``CheckpointMissing`` without a checkpoint."""
    model = load_model()
    return IndexPoolSummarizer(model, policy_for(model.path, model.weights_id, summary_policy))
