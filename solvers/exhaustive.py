"""Brute force: score every allocation of a tiny instance.

Every node's GPUs are split among the jobs in every possible way (including
leaving GPUs idle); the Cartesian product over nodes is scored in blocks by
the vectorised evaluator and the best feasible allocation is returned. The
count is ``prod_n C(cap_n + J, J)``; instances above ``max_allocations`` are
refused before any work is done.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import comb, prod

import numpy as np

from goodopt.arrays import Array
from goodopt.errors import ValidationError
from goodopt.evaluator import Evaluator
from goodopt.problem import AllocationProblem

_BLOCK = 50_000


def count_allocations(problem: AllocationProblem) -> int:
    """Number of allocations brute force would enumerate."""
    J = problem.n_jobs
    return prod(comb(int(c) + J, J) for c in problem.node_capacity)


def _splits(cap: int, n_jobs: int) -> Array:
    """All ways to give at most ``cap`` GPUs of one node to ``n_jobs`` jobs. Shapes: -> (S, J)."""
    grids = np.indices((cap + 1,) * n_jobs).reshape(n_jobs, -1).T
    return grids[grids.sum(axis=1) <= cap]


def allocation_blocks(problem: AllocationProblem, *, max_allocations: int = 2_000_000) -> Iterator[Array]:
    """Every allocation of a tiny instance, feasible or not, in blocks of at most 50,000 (refused above
    ``max_allocations``). Shapes: -> (B, J, N) each."""
    total = count_allocations(problem)
    if total > max_allocations:
        raise ValidationError(
            "max_allocations",
            f"brute force would score {total:,} allocations, above the limit {max_allocations:,}",
            "use a smaller instance (e.g. <= 3 nodes x 4 GPUs, <= 4 jobs) or raise max_allocations",
        )
    J, N = problem.n_jobs, problem.n_nodes
    per_node = [_splits(int(c), J) for c in problem.node_capacity]
    sizes = [len(s) for s in per_node]
    for start in range(0, total, _BLOCK):
        flat = np.arange(start, min(start + _BLOCK, total))
        idx = np.unravel_index(flat, sizes)
        yield np.stack([per_node[n][idx[n]] for n in range(N)], axis=2)  # (B, J, N)


def brute_force(problem: AllocationProblem, evaluator: Evaluator, *,
                max_allocations: int = 2_000_000) -> tuple[Array | None, float, int]:
    """Best feasible allocation by enumeration; ``None`` if none is feasible.

    Returns ``(alloc or None, fitness, n_scored)``. Shapes: -> (J, N).
    """
    best_fit, best = -np.inf, None
    for pop in allocation_blocks(problem, max_allocations=max_allocations):
        res = evaluator.evaluate(pop)
        fit = np.where(res.violation == 0, res.fitness, -np.inf)
        i = int(np.argmax(fit))
        if fit[i] > best_fit:
            best_fit, best = float(fit[i]), pop[i].copy()
    return best, best_fit, count_allocations(problem)
