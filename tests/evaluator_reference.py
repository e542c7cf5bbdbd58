"""What the evaluator reads off a population, as whole-population array operations: the statement that the
compiled pass (:mod:`goodopt.allocation_counts`) must match to the last bit."""

from __future__ import annotations

import numpy as np

from goodopt.arrays import Array
from goodopt.problem import AllocationProblem


def counts(pr: AllocationProblem, pop: Array) -> tuple[Array, Array, Array, Array, Array]:
    """``(k, nodes, gtype, speedups, terms)`` as :meth:`goodopt.evaluator.Evaluator._counted` returns them.
    Shapes: pop (P, J, N) -> (P, J) x 4, (P, 6)."""
    G, K = pr.n_gpu_types, pr.max_k
    k = pop.sum(axis=2)
    used = pop > 0
    nodes = used.sum(axis=2)
    onehot = (pr.node_type[:, None] == np.arange(G)[None, :]).astype(np.int64)
    per_type = pop @ onehot
    gtype = per_type.argmax(axis=2) if G > 1 else np.zeros_like(k)
    table = np.ascontiguousarray(pr.speedup_table).reshape(-1)
    idx = ((np.arange(pr.n_jobs)[None, :] * G + gtype) * (K + 1) + np.minimum(k, K)) * 2 + (nodes > 1)
    s = np.where(k > K, 0.0, table[idx])
    changed = (pop != pr.current[None]).any(axis=2)
    s = np.where(changed, s * pr.realloc[None, :], s)
    over = np.maximum(pop.sum(axis=1) - pr.node_capacity, 0).sum(axis=1)
    neg = np.maximum(-pop, 0).sum(axis=(1, 2))
    mixed = (k - per_type.max(axis=2)).sum(axis=1) if G > 1 else np.zeros(len(pop), np.int64)
    under = np.where(k > 0, np.maximum(pr.min_gpus - k, 0), 0).sum(axis=1)
    above = np.maximum(k - pr.max_gpus, 0).sum(axis=1)
    if pr.interference_avoidance:
        interf = np.maximum(((nodes > 1)[:, :, None] & used).sum(axis=1) - 1, 0).sum(axis=1)
    else:
        interf = np.zeros(len(pop), np.int64)
    return k, nodes, gtype, s, np.stack([over, neg, mixed, under, above, interf], axis=1)
