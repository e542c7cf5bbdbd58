"""The vectorised fitness evaluator (the hot path of every solver).

A population ``pop`` of shape (P, J, N) holds P candidate allocations, each
the GPUs of every job on every node. For all members at once the evaluator
computes per-job GPU counts, node counts and GPU type, looks the speedup up in
the problem's table, applies re-allocation factors to changed rows, and
reduces with the power mean. There is no Python loop over members or jobs.

Speedups of infeasible rows are still defined (a row spanning types is scored
on its majority type with its total count; counts beyond the table score 0);
:meth:`Evaluator.violation` measures infeasibility separately so solvers can
treat it as a constraint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .arrays import Array
from .fitness import _power_mean_last


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
        self._job_offset = (np.arange(pr.n_jobs) * self._G * (self._K + 1) * 2)[None, :]
        self._type_stride = (self._K + 1) * 2
        self._onehot = (pr.node_type[:, None] == np.arange(self._G)[None, :]).astype(np.int64)
        self._current = pr.current
        self._realloc = pr.realloc
        self._weights = pr.weights
        self._uniform = bool(np.all(pr.weights == pr.weights[0]))
        self._capacity = pr.node_capacity
        self.n_evaluations = 0

    # ------------------------------------------------------------ internals
    def _coerce(self, pop: Any) -> tuple[Array, bool]:
        a = self.problem.check_allocation(pop)
        return (a[None], True) if a.ndim == 2 else (a, False)

    def _counts(self, pop: Array) -> tuple[Array, Array, Array, Array, Array | None]:
        # einsum reduces the short node axis about twice as fast as ndarray.sum here.
        k = np.einsum("pjn->pj", pop, dtype=np.int64)
        used = pop > 0
        nodes = np.einsum("pjn->pj", used, dtype=np.int64)
        if self._G == 1:
            gtype = np.zeros_like(k)
            per_type = None
        else:
            per_type = pop @ self._onehot  # (P, J, G)
            gtype = per_type.argmax(axis=2)
        return k, used, nodes, gtype, per_type

    def _speedups(self, pop: Array, k: Array, nodes: Array, gtype: Array) -> Array:
        kc = np.minimum(k, self._K)
        idx = self._job_offset + gtype * self._type_stride + kc * 2 + (nodes > 1)
        s = self._table[idx]
        if np.any(k > self._K):
            s = np.where(k > self._K, 0.0, s)
        changed = np.einsum("pjn->pj", pop != self._current, dtype=np.int64) > 0
        return np.where(changed, s * self._realloc, s)

    def _fitness(self, s: Array) -> Array:
        v = self.problem.shifted(s)
        w = 1.0 if self._uniform else self._weights
        return _power_mean_last(v, self.problem.p, np.broadcast_to(w, v.shape))

    def _violation_terms(self, pop: Array, k: Array, used: Array, nodes: Array,
                         per_type: Array | None) -> dict[str, Array]:
        pr = self.problem
        over = np.maximum(pop.sum(axis=1) - self._capacity, 0).sum(axis=1)
        neg = np.maximum(-pop, 0).sum(axis=(1, 2))
        mixed = (k - per_type.max(axis=2)).sum(axis=1) if per_type is not None else np.zeros(len(pop), np.int64)
        running = k > 0
        under = np.where(running, np.maximum(pr.min_gpus - k, 0), 0).sum(axis=1)
        above = np.maximum(k - pr.max_gpus, 0).sum(axis=1)
        if pr.interference_avoidance:
            multi = (nodes > 1)[:, :, None] & used
            interf = np.maximum(multi.sum(axis=1) - 1, 0).sum(axis=1)
        else:
            interf = np.zeros(len(pop), np.int64)
        return dict(zip(self.TERMS, (over, neg, mixed, under, above, interf)))

    # ------------------------------------------------------------ public API
    def evaluate(self, pop: Any) -> Evaluation:
        """Fitness, speedups and violation in one pass.

        Shapes: pop (P, J, N) or (J, N) -> :class:`Evaluation` with leading P
        (P = 1 for a single allocation).
        """
        pop, _ = self._coerce(pop)
        k, used, nodes, gtype, per_type = self._counts(pop)
        s = self._speedups(pop, k, nodes, gtype)
        terms = self._violation_terms(pop, k, used, nodes, per_type)
        self.n_evaluations += len(pop)
        return Evaluation(self._fitness(s), s, np.asarray(sum(terms.values()), dtype=float), k, nodes, gtype)

    def speedups(self, pop: Any) -> np.ndarray:
        """Per-job speedups (re-allocation factors applied).

        Shapes: (P, J, N) -> (P, J); (J, N) -> (J,).
        """
        a, single = self._coerce(pop)
        k, _, nodes, gtype, _ = self._counts(a)
        s = self._speedups(a, k, nodes, gtype)
        return s[0] if single else s

    def fitness(self, pop: Any) -> Any:
        """Power-mean fitness ``F_p(S + eps)`` with the problem's weights.

        Shapes: (P, J, N) -> (P,); (J, N) -> float.
        """
        a, single = self._coerce(pop)
        k, _, nodes, gtype, _ = self._counts(a)
        f = self._fitness(self._speedups(a, k, nodes, gtype))
        self.n_evaluations += len(a)
        return float(f[0]) if single else f

    def violation(self, pop: Any) -> Any:
        """Total constraint violation (0 = feasible), in GPUs / jobs over the limits.

        Shapes: (P, J, N) -> (P,); (J, N) -> float.
        """
        terms = self.violation_terms(pop)
        v = np.asarray(sum(terms.values()), dtype=float)
        return float(v[0]) if np.ndim(pop) == 2 else v

    def violation_terms(self, pop: Any) -> dict[str, np.ndarray]:
        """Each constraint's violation. Shapes: (P, J, N) or (J, N) -> {name: (P,)}."""
        a, _ = self._coerce(pop)
        k, used, nodes, _, per_type = self._counts(a)
        return self._violation_terms(a, k, used, nodes, per_type)

    def violations(self, alloc: Any) -> list[str]:
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
