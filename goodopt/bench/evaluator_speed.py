"""Evaluator benchmark: vectorised evaluation vs a per-job loop, in one process.

The baseline follows the structure of the Pollux artifact's evaluation: for
each job, count its nodes and GPUs over the population, call that job's
speedup function (memoised per (nodes, GPUs) pair, with ``np.unique`` over
the queried pairs), apply the re-allocation factor, then reduce. Both sides
read the same precomputed goodput tables, so the ratio measures evaluation
overhead, not table construction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..cluster import Cluster, NodeGroup
from ..fitness import power_mean
from ..generate import random_scenario
from ..problem import AllocationProblem
from ..records import Record

#: (nodes, GPUs per node, jobs) of the benchmark cases.
CASES = ((16, 4, 30), (16, 4, 60), (64, 8, 200), (256, 8, 800))
POP_SIZE = 100


class _JobSpeedupFunction:
    """Per-job memoised speedup function (the baseline's unit of work)."""

    def __init__(self, problem: AllocationProblem, j: int) -> None:
        self._table = problem.speedup_table[j, 0]
        self._k_max = problem.max_k
        self._memo: dict[tuple[int, int], float] = {}

    def __call__(self, n_nodes: np.ndarray, n_gpus: np.ndarray) -> np.ndarray:
        assert np.all(n_nodes <= n_gpus) and np.all((n_nodes > 0) == (n_gpus > 0))
        pairs = np.stack([n_nodes, n_gpus], axis=1)
        uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
        values = np.empty(len(uniq))
        for i, (nodes, gpus) in enumerate(uniq.tolist()):
            key = (nodes, gpus)
            if key not in self._memo:
                self._memo[key] = float(self._table[min(gpus, self._k_max), int(nodes > 1)]) if gpus <= self._k_max else 0.0
            values[i] = self._memo[key]
        return values[inverse.reshape(-1)]


def per_job_fitness(problem: AllocationProblem, fns: Sequence[_JobSpeedupFunction], pop: np.ndarray) -> Any:  # the fitness of one allocation, or of each of a population
    """Baseline: a Python loop over jobs. Shapes: (P, J, N) -> (P,)."""
    speedups = []
    for j, fn in enumerate(fns):
        alloc = pop[:, j, :]
        n_nodes = np.count_nonzero(alloc, axis=1)
        n_gpus = np.sum(alloc, axis=1)
        s = fn(n_nodes, n_gpus)
        changed = np.any(alloc != problem.current[j], axis=1)
        speedups.append(np.where(changed, s * problem.realloc[j], s))
    s = np.stack(speedups, axis=1)
    return power_mean(s + problem.eps, problem.p, problem.weights)


def _population(rng: np.random.Generator, problem: AllocationProblem, size: int) -> np.ndarray:
    """Random populations resembling GA members: each job on 0-2 nodes."""
    pop = np.zeros((size, problem.n_jobs, problem.n_nodes), dtype=np.int64)
    for _ in range(2):
        nodes = rng.integers(0, problem.n_nodes, size=(size, problem.n_jobs))
        gpus = rng.integers(0, 3, size=(size, problem.n_jobs))
        np.put_along_axis(pop, nodes[..., None], gpus[..., None], axis=2)
    return pop


def _time(fn: Callable[[], object], min_seconds: float = 0.3) -> float:
    fn()  # warm
    reps, start = 0, time.perf_counter()
    while True:
        fn()
        reps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / reps


def run(seed: int = 0, cases: Sequence[tuple[int, int, int]] = CASES,
        progress: Callable[[], None] | None = None) -> list[Record]:
    """Rows of the evaluator benchmark (one per case)."""
    rows = []
    for n_nodes, gpn, n_jobs in cases:
        cluster = Cluster((NodeGroup("t4", gpn, n_nodes),))
        t0 = time.perf_counter()
        problem = random_scenario(seed, cluster, n_jobs).problem()
        build_s = time.perf_counter() - t0
        ev = problem.evaluator()
        pop = _population(np.random.default_rng(seed), problem, POP_SIZE)
        fns = [_JobSpeedupFunction(problem, j) for j in range(problem.n_jobs)]
        np.testing.assert_allclose(per_job_fitness(problem, fns, pop), ev.fitness(pop), rtol=1e-9)
        t_vec = _time(lambda: ev.fitness(pop))
        t_full = _time(lambda: ev.evaluate(pop))
        t_loop = _time(lambda: per_job_fitness(problem, fns, pop))
        rows.append({
            "case": f"{n_nodes}x{gpn}, {n_jobs} jobs", "n_gpus": n_nodes * gpn, "n_jobs": n_jobs,
            "pop_size": POP_SIZE,
            "vectorised_evals_per_s": POP_SIZE / t_vec,
            "with_violation_evals_per_s": POP_SIZE / t_full,
            "per_job_loop_evals_per_s": POP_SIZE / t_loop,
            "speedup_ratio": t_loop / t_vec,
            "table_build_s": build_s,
        })
        if progress:
            progress()
    return rows
