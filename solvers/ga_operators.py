"""Genetic operators on allocation matrices, vectorised over the population.

Individuals are flat (J * N,) integer vectors of a (J, N) allocation. Every
operator receives pymoo's ``random_state`` (a ``numpy.random.Generator``
derived from the run's seed) and uses no other randomness.

* :class:`AllocationSampling` — a feasible start: the current allocation and
  any warm starts, then mutated copies of them, all repaired.
* :class:`RowCrossover` — two parents exchange whole job rows.
* :class:`AllocationMutation` — per job row: reset it to the current
  allocation, zero some of its entries, or grow it on a random node.
* :class:`AllocationRepair` — enforces the evaluator's rules (see
  :func:`repair`) and then refills GPUs left idle; both run as compiled
  loops (:mod:`goodopt.solvers.ga_kernels`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from goodopt.formulations.scaled_objective import rank_utility
from pymoo.core.crossover import Crossover
from pymoo.core.mutation import Mutation
from pymoo.core.repair import Repair
from pymoo.core.sampling import Sampling

from goodopt.arrays import Array, ArrayIn
from goodopt.problem import AllocationProblem

from .ga_breeding import mutate_rows
from .ga_kernels import refill_rows, repair_rows


class RepairData:
    """Arrays the repair needs, computed once per problem."""

    def __init__(self, problem: AllocationProblem) -> None:
        pr = problem
        self.pr = pr
        self.J, self.N, self.G, self.K = pr.n_jobs, pr.n_nodes, pr.n_gpu_types, pr.max_k
        self.onehot = (pr.node_type[:, None] == np.arange(self.G)[None, :]).astype(np.int64)
        self.limit = np.minimum(pr.max_gpus, self.K)  # (J,)
        self.need = np.maximum(pr.min_gpus, 1)  # (J,)
        self.table = pr.speedup_table  # (J, G, K+1, 2)
        self.type_ok = self.table.max(axis=(2, 3)) > 0  # (J, G)
        self.util_zero = rank_utility(pr, np.zeros(self.J), np.arange(self.J))  # (J,)
        # utility of every (j, g, k) single-node entry with the re-allocation factor (a changed row)
        s = self.table[..., 0] * pr.realloc[:, None, None]
        self.util_single = rank_utility(pr, s, np.arange(self.J)[:, None, None])  # (J, G, K+1)
        self.single_ok = self.table[..., 0] > 0
        # the same without the factor: a job still on its current allocation has not been restarted, so
        # growing it costs the re-allocation factor on all of its speedup (None when every factor is 1)
        self.util_kept = (None if np.all(pr.realloc == 1.0)
                          else rank_utility(pr, self.table[..., 0], np.arange(self.J)[:, None, None]))
        self.max_passes = int(pr.node_capacity.max(initial=0)) + 1
        self.need_clip = np.minimum(self.need, self.K)
        ntype = pr.node_type[None, :]
        jj = np.arange(self.J)[:, None]
        nc = self.need_clip[:, None]
        ok = self.single_ok[jj, ntype, nc] & (self.need <= self.K)[:, None]
        # gain of starting job j on node n with its minimum GPUs. Shapes: (J, N)
        self.gain_start = np.where(ok, self.util_single[jj, ntype, nc] - self.util_zero[:, None], -np.inf)
        self.start_gains = np.isfinite(self.gain_start) & (self.gain_start > 0)  # (J, N) starts worth making
        # the refill kernel's arguments after the cluster's (util_kept stands in for itself when it is None)
        self.refill_args = (self.need_clip, self.limit, self.single_ok, self.util_single,
                            self.util_single if self.util_kept is None else self.util_kept,
                            self.util_kept is not None, self.gain_start, self.start_gains, self.max_passes)
        # the repair kernel's arguments after the generator
        self.repair_args = (pr.node_type, pr.node_capacity, pr.current, self.onehot, self.type_ok, pr.min_gpus,
                            self.table, bool(pr.interference_avoidance), *self.refill_args)


def repair(pop: ArrayIn, data: RepairData, rng: np.random.Generator) -> Array:
    """Make every member feasible, then hand idle GPUs out.

    In order: negatives to 0; each job keeps only the nodes of its majority
    GPU type (types its profile cannot use are dropped); at most
    ``min(max_gpus, K)`` GPUs per job, its first nodes first; over-full nodes
    drop jobs' GPUs in a random order that keeps unchanged rows first (one
    uniform draw per member and job, less 1 for a row still on its current
    allocation, lowest first); each node keeps at most one multi-node job, the
    one first in that order (interference avoidance); rows below ``min_gpus``
    or with no valid batch are emptied. Then :func:`refill` gives idle GPUs
    to the jobs whose objective term gains most.

    Shapes: pop (P, J, N) int -> (P, J, N) int64 (a new array).
    """
    a = np.array(pop, dtype=np.int64)  # a new array; the kernel sets negative cells to 0
    repair_rows(a, rng, *data.repair_args)
    return a


def refill(a: Array, data: RepairData, rng: np.random.Generator) -> Array:
    """Hand idle GPUs to jobs, node by node, in passes.

    In each pass every node with idle GPUs gives, to one of the jobs with the
    largest gain of its objective term (the r-th node with idle GPUs takes its
    r-th best candidate), either a first placement of ``max(min_gpus,
    1)`` GPUs (a job holding nothing; each such job starts on one node per
    pass, its lowest picked node) or one more GPU (a job running on this node
    only). Gains count the re-allocation factor, including its cost to a job
    that would leave its current allocation; each candidate move's gain is
    multiplied by ``1 + 1e-9 u`` with one uniform draw ``u`` per move (first
    placements, then grows, each in (member, job, node) order) to break ties;
    equal scores go to the lower job. Feasible members stay feasible. At most
    ``max(node capacity) + 1`` passes.

    Shapes: a (P, J, N) int64 -> a (modified in place and returned).
    """
    pr = data.pr
    k, nodes = a.sum(axis=2), (a > 0).sum(axis=2)
    refill_rows(a, k, nodes, rng, pr.node_type, pr.node_capacity, pr.current, *data.refill_args)
    return a


class AllocationRepair(Repair):  # type: ignore[misc]  # pymoo publishes no types
    def __init__(self, data: RepairData) -> None:
        super().__init__()
        self.data = data

    def _do(self, problem: object, X: Array, random_state: Any = None, **kwargs: object) -> Array:
        d = self.data
        pop = np.asarray(X).reshape(len(X), d.J, d.N)
        return repair(pop, d, random_state).reshape(len(X), -1)


class AllocationSampling(Sampling):  # type: ignore[misc]  # pymoo publishes no types
    """Current allocation, warm starts, then mutated copies of them."""

    def __init__(self, data: RepairData, seeds: Iterable[ArrayIn] = (), mutation_rate: float = 0.3) -> None:
        super().__init__()
        self.data = data
        self.seeds = [np.asarray(s, dtype=np.int64) for s in seeds]
        self.mutation_rate = mutation_rate

    def _do(self, problem: object, n_samples: int, random_state: Any = None, **kwargs: object) -> Array:
        pop = initial_population(self.data, self.seeds, n_samples, random_state, self.mutation_rate)
        return pop.reshape(n_samples, -1)


def initial_population(data: RepairData, seeds: Iterable[ArrayIn], n_samples: int, rng: np.random.Generator,
                       mutation_rate: float = 0.3) -> Array:
    """The current allocation and ``seeds``, then mutated copies of them, all repaired.

    Shapes: seeds list of (J, N) -> (n_samples, J, N).
    """
    base = np.stack([data.pr.current] + [np.asarray(s, dtype=np.int64) for s in seeds])  # (S, J, N)
    idx = np.arange(n_samples) % len(base)
    pop = base[idx].copy()
    fresh = np.arange(n_samples) >= len(base)
    pop[fresh] = mutate(pop[fresh], data, rng, mutation_rate)
    return repair(pop, data, rng)


def mutate(pop: Array, data: RepairData, rng: np.random.Generator, rate: float) -> Array:
    """Row-wise mutation: each row is hit with probability ``rate``; a hit row is reset to the current
    allocation, has each entry zeroed with probability 1/2, or grows by 1 to a node's capacity on a random
    node (one of the three at random). Random numbers are drawn only for the rows hit: one uniform per row
    (hit when below ``rate``), one operation per hit row, one uniform per entry of each row to zero, then per
    row to grow its node and the GPUs it gains; a compiled loop draws and applies them
    (:func:`goodopt.solvers.ga_breeding.mutate_rows`). Shapes: (P, J, N) -> (P, J, N) (new array)."""
    a = np.array(pop, dtype=np.int64)
    mutate_rows(a, rng, rate, data.pr.node_capacity, data.pr.current)
    return a


class AllocationMutation(Mutation):  # type: ignore[misc]  # pymoo publishes no types
    def __init__(self, data: RepairData, rate: float | None = None) -> None:
        super().__init__()
        self.data = data
        self.rate = rate if rate is not None else min(1.0, 2.0 / max(data.J, 1))

    def _do(self, problem: object, X: Array, random_state: Any = None, **kwargs: object) -> Array:
        d = self.data
        pop = np.asarray(X).reshape(len(X), d.J, d.N).astype(np.int64)
        return mutate(pop, d, random_state, self.rate).reshape(len(X), -1)


class RowCrossover(Crossover):  # type: ignore[misc]  # pymoo publishes no types
    """Children take each job's whole row from one parent or the other."""

    def __init__(self, data: RepairData, prob: float = 0.9) -> None:
        super().__init__(2, 2, prob=prob)
        self.data = data

    def _do(self, problem: object, X: Array, random_state: Any = None, **kwargs: object) -> Array:
        d = self.data
        _, n_matings, _ = X.shape
        A = X[0].reshape(n_matings, d.J, d.N)
        B = X[1].reshape(n_matings, d.J, d.N)
        c1, c2 = row_crossover(A, B, random_state)
        return np.stack([c1, c2]).reshape(2, n_matings, -1)


def row_crossover(A: Array, B: Array, rng: np.random.Generator) -> tuple[Array, Array]:
    """Two children per pair of parents, each job's row from one parent or the other.

    Shapes: A, B (M, J, N) -> two (M, J, N).
    """
    mask = (rng.random(A.shape[:2]) < 0.5)[:, :, None]
    return np.where(mask, A, B), np.where(mask, B, A)
