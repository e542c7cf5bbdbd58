"""The vectorised fitness evaluator (the hot path of every solver).

A population ``pop`` of shape (P, J, N) holds P candidate allocations, each
the GPUs of every job on every node. For all members the evaluator computes
per-job GPU counts, node counts and GPU type, looks the speedup up in the
problem's table, applies re-allocation factors to changed rows and measures
each constraint's violation, in one compiled pass
(:mod:`goodopt.allocation_counts`, integer arithmetic and look-ups: the same
numbers as the whole-array statements in ``tests/evaluator_reference.py``),
then reduces every member's speedups with the power mean as one array
operation (what a search ranks by, at p = -1 and 1, as one more compiled
pass that adds in numpy's order: :mod:`goodopt.mean_kernels`).

Speedups of infeasible rows are still defined (a row spanning types is scored
on its majority type with its total count; counts beyond the table score 0);
:meth:`Evaluator.violation` measures infeasibility separately so solvers can
treat it as a constraint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .allocation_counts import counted
from .arrays import Array, ArrayIn, ArrayOut
from .fitness import _power_mean_last
from .mean_kernels import ranked_power_mean


@dataclass(frozen=True)
class Evaluation:
    """Everything the evaluator computes for a population.

    Shapes: fitness (P,), speedups (P, J), violation (P,), n_gpus (P, J),
    n_nodes (P, J), gpu_type (P, J).
    """

    fitness: np.ndarray
    speedups: np.ndarray
    violation: np.ndarray
    n_gpus: np.ndarray
    n_nodes: np.ndarray
    gpu_type: np.ndarray


class Evaluator:
    """Vectorised speedup, fitness and constraint-violation evaluation."""

    #: Names of the terms of :meth:`violation_terms`, in order.
    TERMS = ("node_capacity", "negative", "mixed_gpu_types", "min_gpus", "max_gpus", "interference")

    def __init__(self, problem: Any) -> None:  # an AllocationProblem (which imports this module)
        self.problem = problem
        pr = problem
        self._K = pr.max_k
        self._G = pr.n_gpu_types
        self._table = np.ascontiguousarray(pr.speedup_table).reshape(-1)
        # Flat index of [j, g, k, multi] = ((j * G + g) * (K + 1) + k) * 2 + multi
        self._current = pr.current
        self._realloc = pr.realloc
        self._weights = pr.weights
        self._uniform = bool(np.all(pr.weights == pr.weights[0]))
        self._ones: dict[tuple[int, ...], Array] = {}
        self._capacity = pr.node_capacity
        self._compiled_mean = pr.p in (-1.0, 1.0)  # see goodopt.mean_kernels
        self._mean_weights = np.ascontiguousarray(pr.weights, dtype=float)  # its weights, made once
        self.n_evaluations = 0

    # ------------------------------------------------------------ internals
    def _coerce(self, pop: Any) -> tuple[Array, bool]:
        a = self.problem.check_allocation(pop)
        return (a[None], True) if a.ndim == 2 else (a, False)

    def _counted(self, pop: Array) -> tuple[Array, Array, Array, Array, Array]:
        """``(k, nodes, gtype, speedups, terms)``: per member and job the GPUs, nodes, majority type and speedup
        (re-allocation factor applied), per member each term of :attr:`TERMS`. Shapes: (P, J, N) -> (P, J) x 4,
        (P, 6)."""
        pr = self.problem
        return counted(pop, pr.node_type, self._G, self._capacity, self._current, self._table, self._K,
                       self._realloc, pr.min_gpus, pr.max_gpus, bool(pr.interference_avoidance))

    def _fitness(self, s: Array) -> Array:
        v = self.problem.shifted(s)
        w = self._ones.get(v.shape) if self._uniform else np.broadcast_to(self._weights, v.shape)
        if w is None:  # uniform weights: one read-only array of ones per population shape (the GA asks for few)
            w = self._ones[v.shape] = np.broadcast_to(1.0, v.shape)
        return _power_mean_last(v, self.problem.p, w)

    # ------------------------------------------------------------ public API
    def evaluate(self, pop: ArrayIn) -> Evaluation:
        """Fitness, speedups and violation in one pass.

        Shapes: pop (P, J, N) or (J, N) -> :class:`Evaluation` with leading P
        (P = 1 for a single allocation).
        """
        pop, _ = self._coerce(pop)
        k, nodes, gtype, s, terms = self._counted(pop)
        self.n_evaluations += len(pop)
        return Evaluation(self._fitness(s), s, terms.sum(axis=1).astype(float), k, nodes, gtype)

    def ranked_fitness(self, pop: ArrayIn) -> Array:
        """What a search ranks members by: the fitness, ``-inf`` where the member breaks a rule (the
        :meth:`evaluate` fields ``where(violation == 0, fitness, -inf)``, without the rest).

        Shapes: (P, J, N) -> (P,).
        """
        pop, _ = self._coerce(pop)
        s, terms = self._counted(pop)[3:]
        self.n_evaluations += len(pop)
        if self._compiled_mean and s.shape[1]:  # the same numbers in one compiled pass (goodopt.mean_kernels)
            pr = self.problem
            return ranked_power_mean(s, terms, pr.p, pr.eps, pr.idle, pr.idle_value is not None, self._mean_weights,
                                     self._uniform)
        return np.where(terms.sum(axis=1) == 0, self._fitness(s), -np.inf)

    def speedups(self, pop: ArrayIn) -> np.ndarray:
        """Per-job speedups (re-allocation factors applied).

        Shapes: (P, J, N) -> (P, J); (J, N) -> (J,).
        """
        a, single = self._coerce(pop)
        s = self._counted(a)[3]
        return s[0] if single else s

    def fitness(self, pop: ArrayIn) -> ArrayOut:
        """Power-mean fitness ``F_p(S + eps)`` with the problem's weights.

        Shapes: (P, J, N) -> (P,); (J, N) -> float.
        """
        a, single = self._coerce(pop)
        f = self._fitness(self._counted(a)[3])
        self.n_evaluations += len(a)
        return float(f[0]) if single else f

    def violation(self, pop: ArrayIn) -> ArrayOut:
        """Total constraint violation (0 = feasible), in GPUs / jobs over the limits.

        Shapes: (P, J, N) -> (P,); (J, N) -> float.
        """
        a, single = self._coerce(pop)
        v = self._counted(a)[4].sum(axis=1).astype(float)
        return float(v[0]) if single else v

    def violation_terms(self, pop: ArrayIn) -> dict[str, np.ndarray]:
        """Each constraint's violation. Shapes: (P, J, N) or (J, N) -> {name: (P,)}."""
        a, _ = self._coerce(pop)
        terms = self._counted(a)[4]
        return {name: terms[:, i].copy() for i, name in enumerate(self.TERMS)}

    def violations(self, alloc: ArrayIn) -> list[str]:
        """Human-readable list of the constraints one allocation breaks. Shapes: (J, N) ->."""
        pr = self.problem
        a = pr.check_allocation(alloc)
        if a.ndim != 2:
            raise ValueError("violations() takes one allocation of shape (J, N)")
        if self.violation(a) == 0:  # each line below names a positive term of the vectorised violation
            return []
        out = []
        used = a.sum(axis=0)
        for n in np.flatnonzero(used > pr.node_capacity):
            out.append(f"node {pr.node_names[n]}: {used[n]} GPUs allocated, capacity {pr.node_capacity[n]}")
        for j, n in zip(*np.nonzero(a < 0)):
            out.append(f"job {pr.job_names[j]}: negative GPUs ({a[j, n]}) on node {pr.node_names[n]}")
        k = a.sum(axis=1)
        nodes = (a > 0).sum(axis=1)
        for j in range(pr.n_jobs):
            types = sorted({pr.gpu_types[n] for n in np.flatnonzero(a[j] > 0)})
            if len(types) > 1:
                out.append(f"job {pr.job_names[j]}: spans GPU types {types}")
            if 0 < k[j] < pr.min_gpus[j]:
                out.append(f"job {pr.job_names[j]}: {k[j]} GPUs, below its min_gpus {pr.min_gpus[j]}")
            if k[j] > pr.max_gpus[j]:
                out.append(f"job {pr.job_names[j]}: {k[j]} GPUs, above its max_gpus {pr.max_gpus[j]}")
        if pr.interference_avoidance:
            multi = nodes > 1
            for node in range(pr.n_nodes):
                sharing = [pr.job_names[j] for j in np.flatnonzero(multi & (a[:, node] > 0))]
                if len(sharing) > 1:
                    out.append(f"node {pr.node_names[node]}: multi-node jobs {sharing} share it (interference)")
        return out
