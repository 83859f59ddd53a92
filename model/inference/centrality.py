"""LexRank's centrality over a sparse graph: the walk of :meth:`model.inference.summarizers.LexRank.centrality` for
a long document's sentences, whose (S, S) similarity a dense array would not hold (the summary policy's ``lexrank``
feature). Equal to LexRank's dense walk up to rounding (test); the LexRank baseline keeps its dense walk, whose
near-ties it breaks its own way."""

from __future__ import annotations

import numpy as np
from scipy import sparse

THRESHOLD = 0.1  # LexRank's: cosines under it are no edge
DAMPING = 0.85  # LexRank's: the walk follows an edge with this probability, else jumps uniformly


def sparse_centrality(graph: sparse.csr_matrix, damping: float = DAMPING) -> np.ndarray:
    """Stationary distribution of the damped random walk over ``graph`` (S, S), its entries under the threshold
    already dropped (no self-loops; a sentence similar to no other jumps uniformly) (S,)."""
    n = graph.shape[0]
    graph = sparse.csr_matrix(graph, dtype=np.float64)
    graph.setdiag(0.0)
    graph.eliminate_zeros()
    rows = np.asarray(graph.sum(axis=1)).ravel()  # (S,)
    isolated = rows <= 0
    transition = sparse.diags(np.divide(1.0, rows, out=np.zeros(n), where=~isolated)) @ graph  # rows sum to 1
    scores = np.full(n, 1.0 / n)
    for _ in range(200):
        walked = transition.T @ scores + scores[isolated].sum() / n  # an isolated sentence jumps uniformly
        updated = (1 - damping) / n + damping * walked
        if np.abs(updated - scores).sum() < 1e-8:
            return updated
        scores = updated
    return scores
