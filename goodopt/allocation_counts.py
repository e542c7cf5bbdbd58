"""What the evaluator reads off a population, in one compiled pass (numba): per member and job the GPUs, nodes,
majority GPU type and speedup, and per member each constraint's violation.

:class:`goodopt.evaluator.Evaluator` states the rules; this pass carries them out with scalar loops instead of
some twenty whole-population array operations, which were most of an evaluation's cost at the simulator's
scale (a population of 100, tens of jobs and nodes). Everything here is integer arithmetic, table look-ups and
one multiplication per job (the re-allocation factor), so the results equal the array statements' to the last
bit; the power mean over jobs stays with numpy in the evaluator.

Shapes: pop (P, J, N) int64; node_type, capacity (N,); current (J, N); table (J * G * (K + 1) * 2,) flat,
indexed ``((j * G + g) * (K + 1) + k) * 2 + multi``; realloc, min_gpus, max_gpus (J,). Outputs: k, nodes,
gtype (P, J) int64, speedup (P, J) float64, terms (P, 6) int64 (in the order of
:attr:`goodopt.evaluator.Evaluator.TERMS`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .arrays import Array

#: Columns of ``terms``.
OVER, NEGATIVE, MIXED, UNDER, ABOVE, INTERFERENCE = range(6)


@njit(cache=True, nogil=True)
def count_population(pop: Array, node_type: Array, n_types: int, capacity: Array, current: Array, table: Array,
                     max_k: int, realloc: Array, min_gpus: Array, max_gpus: Array, avoidance: bool, k: Array,
                     nodes: Array, gtype: Array, speedup: Array, terms: Array) -> None:
    """Fill ``k``, ``nodes``, ``gtype``, ``speedup`` and ``terms`` for every member of ``pop``."""
    P, J, N = pop.shape
    per_type = np.zeros(n_types, np.int64)
    on_node = np.zeros(N, np.int64)
    multi_on = np.zeros(N, np.int64)
    for p in range(P):
        for t in range(6):
            terms[p, t] = 0
        on_node[:] = 0
        multi_on[:] = 0
        for j in range(J):
            _count_job(pop[p, j], node_type, per_type, on_node, n_types, k, nodes, gtype, terms, p, j)
            kj = k[p, j]
            s = table[((j * n_types + gtype[p, j]) * (max_k + 1) + min(kj, max_k)) * 2 + (1 if nodes[p, j] > 1 else 0)]
            if kj > max_k:
                s = 0.0
            for n in range(N):
                if pop[p, j, n] != current[j, n]:
                    s = s * realloc[j]
                    break
            speedup[p, j] = s
            if kj > 0 and min_gpus[j] > kj:
                terms[p, UNDER] += min_gpus[j] - kj
            if kj > max_gpus[j]:
                terms[p, ABOVE] += kj - max_gpus[j]
            if avoidance and nodes[p, j] > 1:
                for n in range(N):
                    if pop[p, j, n] > 0:
                        multi_on[n] += 1
        for n in range(N):
            if on_node[n] > capacity[n]:
                terms[p, OVER] += on_node[n] - capacity[n]
            if multi_on[n] > 1:
                terms[p, INTERFERENCE] += multi_on[n] - 1


@njit(cache=True, nogil=True)
def _count_job(row: Array, node_type: Array, per_type: Array, on_node: Array, n_types: int, k: Array,
               nodes: Array, gtype: Array, terms: Array, p: int, j: int) -> None:
    """One job's GPUs, nodes, majority type (ties to the lower type), negative and mixed-type GPUs; its GPUs
    added to ``on_node``."""
    per_type[:] = 0
    kj, nj = 0, 0
    for n in range(row.shape[0]):
        x = row[n]
        kj += x
        per_type[node_type[n]] += x
        on_node[n] += x
        if x > 0:
            nj += 1
        elif x < 0:
            terms[p, NEGATIVE] -= x
    best = 0
    for t in range(1, n_types):
        if per_type[t] > per_type[best]:
            best = t
    k[p, j], nodes[p, j], gtype[p, j] = kj, nj, best
    if n_types > 1:
        terms[p, MIXED] += kj - per_type[best]


def counted(pop: Array, node_type: Array, n_types: int, capacity: Array, current: Array, table: Array,
            max_k: int, realloc: Array, min_gpus: Array, max_gpus: Array,
            avoidance: bool) -> tuple[Array, Array, Array, Array, Array]:
    """``(k, nodes, gtype, speedup, terms)`` of ``pop`` (module docstring), in new arrays."""
    pop = np.ascontiguousarray(pop, dtype=np.int64)
    P, J = pop.shape[:2]
    k, nodes, gtype = np.empty((P, J), np.int64), np.empty((P, J), np.int64), np.empty((P, J), np.int64)
    speedup, terms = np.empty((P, J)), np.empty((P, 6), np.int64)
    count_population(pop, node_type, n_types, capacity, current, table, max_k, realloc, min_gpus, max_gpus,
                     avoidance, k, nodes, gtype, speedup, terms)
    return k, nodes, gtype, speedup, terms
