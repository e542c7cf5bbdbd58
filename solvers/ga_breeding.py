"""One generation's offspring of the numpy GA engine as compiled loops (numba): the generation's random draws,
binary tournaments and row crossover in one pass, the mutations, and the survivors gathered from parents and
children.

The random numbers are drawn inside the loops with numba's generator methods, which give numpy's numbers for
the same generator state, in the order the whole-array statements drew them
(:func:`goodopt.solvers.ga_operators.row_crossover`, :func:`~goodopt.solvers.ga_operators.mutate`), and these
loops only copy, compare and add integers, so a seed gives the same generations as those statements, to the
last GPU; ``tests/test_ga_operators.py`` holds them to it (``tests/ga_reference.py`` states them). What they
save is the dozen whole-population copies (fancy indexing, ``np.where``, concatenation) and the handful of
numpy draws each generation made, which cost more than the work on the simulator's problems (tens of jobs and
nodes, a population of 100).

Shapes: populations (P, J, N) int64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from goodopt.arrays import Array
from goodopt.kernel_cache import depends_on

from . import ga_kernels
from .ga_kernels import repair_rows

# children_rows compiles ga_kernels' repair in: its cache goes stale with that file too (goodopt.kernel_cache)
depends_on(__file__, ga_kernels.__file__)
_jit = njit(cache=True, nogil=True)


@_jit
def breed(pop: Array, fit: Array, cand: Array, mask_u: Array, cross_u: Array, prob: float, n_kids: int) -> Array:
    """The children of ``M`` pairs of tournament winners: ``cand`` (2, 2M) are the tournaments (the fitter of
    each column wins, the first on ties), winners ``0..M-1`` pair with ``M..2M-1``. A pair crosses when
    ``cross_u < prob``: child 0 takes each job's row from the first parent where ``mask_u < 0.5``, else from
    the second, child 1 the other; a pair that does not cross is copied. Children ``0..M-1`` are the pairs'
    first, ``M..2M-1`` their second; the first ``n_kids`` are returned. Shapes: fit (P,), mask_u (M, J),
    cross_u (M,) -> (n_kids, J, N)."""
    M = cross_u.shape[0]
    J, N = pop.shape[1], pop.shape[2]
    win = np.empty(2 * M, np.int64)
    for i in range(2 * M):
        a, b = cand[0, i], cand[1, i]
        win[i] = a if fit[a] >= fit[b] else b
    kids = np.empty((n_kids, J, N), pop.dtype)
    for i in range(M):
        crossed = cross_u[i] < prob
        for c in range(2):
            row = c * M + i
            if row >= n_kids:
                continue
            for j in range(J):
                from_first = ((mask_u[i, j] < 0.5) == (c == 0)) if crossed else c == 0
                src = win[i] if from_first else win[M + i]
                for n in range(N):
                    kids[row, j, n] = pop[src, j, n]
    return kids


@_jit
def offspring_rows(pop: Array, fit: Array, rng: np.random.Generator, prob: float, rate: float, capacity: Array,
                   current: Array) -> Array:
    """One generation's children before repair: the tournaments' draws (``2 * ceil(P / 2)`` pairs of members),
    the crossover's (one uniform per pair and job, then one per pair), :func:`breed`, then :func:`mutate_rows`.
    Shapes: pop (P, J, N), fit (P,), capacity (N,), current (J, N) -> (P, J, N)."""
    P, J = pop.shape[0], pop.shape[1]
    n_pairs = (P + 1) // 2
    cand = rng.integers(0, P, size=(2, 2 * n_pairs))
    mask_u = rng.random((n_pairs, J))
    cross_u = rng.random(n_pairs)
    kids = breed(pop, fit, cand, mask_u, cross_u, prob, P)
    mutate_rows(kids, rng, rate, capacity, current)
    return kids


@_jit
def children_rows(pop: Array, fit: Array, rng: np.random.Generator, prob: float, rate: float, node_type: Array,
                  node_capacity: Array, current: Array, onehot: Array, type_ok: Array, min_gpus: Array,
                  table: Array, avoidance: bool, need_clip: Array, limit: Array, single_ok: Array,
                  util_single: Array, util_kept: Array, has_kept: bool, gain_start: Array, start_gains: Array,
                  max_passes: int) -> Array:
    """One generation's children, repaired: :func:`offspring_rows`, then
    :func:`goodopt.solvers.ga_kernels.repair_rows` (the arguments after ``rate`` are the repair's), in one call.
    Shapes: pop (P, J, N), fit (P,) -> (P, J, N)."""
    kids = offspring_rows(pop, fit, rng, prob, rate, node_capacity, current)
    repair_rows(kids, rng, node_type, node_capacity, current, onehot, type_ok, min_gpus, table, avoidance,
                need_clip, limit, single_ok, util_single, util_kept, has_kept, gain_start, start_gains, max_passes)
    return kids


@_jit
def mutate_rows(a: Array, rng: np.random.Generator, rate: float, capacity: Array, current: Array) -> None:
    """Mutate ``a`` in place, drawing as :func:`goodopt.solvers.ga_operators.mutate` states: which rows are hit
    (one uniform per row, below ``rate``), each hit's operation (0 reset, 1 zero entries, 2 grow), one uniform per
    entry of each row to zero, then per row to grow its node and the GPUs it gains (1 to the node's capacity);
    numba's generator methods give numpy's numbers for the same state. Shapes: a (P, J, N), capacity (N,),
    current (J, N)."""
    P, J, N = a.shape
    hit = rng.random((P, J)) < rate
    H = 0
    for p in range(P):
        for j in range(J):
            H += hit[p, j]
    hp = np.empty(H, np.int64)
    hj = np.empty(H, np.int64)
    h = 0
    for p in range(P):
        for j in range(J):
            if hit[p, j]:
                hp[h], hj[h] = p, j
                h += 1
    op = rng.integers(0, 3, size=H)
    n_zero, n_grow = 0, 0
    for h in range(H):
        n_zero += op[h] == 1
        n_grow += op[h] == 2
    zero_u = rng.random((n_zero, N))
    node = rng.integers(0, N, size=n_grow)
    add = np.empty(n_grow, np.int64)
    for g in range(n_grow):
        add[g] = rng.integers(1, capacity[node[g]] + 1)
    apply_mutations(a, hp, hj, op, zero_u, node, add, current)


@_jit
def apply_mutations(a: Array, hp: Array, hj: Array, op: Array, zero_u: Array, node: Array, add: Array,
                    current: Array) -> None:
    """Mutate the hit rows ``(hp[h], hj[h])`` of ``a`` in place by their operation ``op[h]``: 0 resets the row to
    ``current``, 1 zeroes each entry whose draw (the next row of ``zero_u``) is below 1/2, 2 adds ``add`` GPUs
    on node ``node`` (the next of each). Shapes: hp, hj, op (H,), zero_u (H1, N), node, add (H2,),
    current (J, N)."""
    N = a.shape[2]
    z, g = 0, 0
    for h in range(hp.shape[0]):
        p, j = hp[h], hj[h]
        if op[h] == 0:
            for n in range(N):
                a[p, j, n] = current[j, n]
        elif op[h] == 1:
            for n in range(N):
                if zero_u[z, n] < 0.5:
                    a[p, j, n] = 0
            z += 1
        else:
            a[p, j, node[g]] += add[g]
            g += 1


@_jit
def gather(pop: Array, kids: Array, rows: Array) -> Array:
    """Members ``rows`` of the parents followed by the children (row ``i >= P`` is child ``i - P``).
    Shapes: pop (P, J, N), kids (C, J, N), rows (R,) -> (R, J, N)."""
    P = pop.shape[0]
    out = np.empty((rows.shape[0], pop.shape[1], pop.shape[2]), pop.dtype)
    for r in range(rows.shape[0]):
        i = rows[r]
        out[r] = pop[i] if i < P else kids[i - P]
    return out
