r"""The configuration-level MILP of :mod:`goodopt.formulations.milp` as numpy arrays.

The same model, constraint for constraint ((0a)-(0e), (1), (R2)-(R4); (C1)
cuts are appended as rows), assembled with vectorised numpy into one sparse
matrix instead of pyomo expressions, so that a solver that takes arrays
(HiGHS through highspy) receives it without any per-solve compilation. At
2048 GPUs and 819 jobs building the pyomo model and compiling it to
standard form took seconds; these arrays take milliseconds.

Columns, in order::

    z_c      c = 0..C-1     binary, upper bound 0 where pruned (0d)
    u_j      J columns      idle indicator, continuous in [0, 1], upper 0 where the job must run (0e)
                            (finite p only)
    t        1 column       epigraph value (p = ±inf only)
    y_j      J columns      the job that attains the maximum (p = +inf only)
    n, b, v  per GPU type   node-pattern columns (``placement=True``;
                            :func:`goodopt.formulations.pattern_block.pattern_block`)

Rows are ``row_lower <= A x <= row_upper``; the objective is maximised.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import numpy as np

from goodopt.arrays import Array, ArrayIn
from goodopt.problem import AllocationProblem

from .configs import ConfigSet, type_layout
from .matrix import MatrixModel, Rows
from .pattern_block import PatternBlock, pattern_block
from .scaled_objective import ScaledObjective


def config_matrix(problem: AllocationProblem, configs: ConfigSet, objective: ScaledObjective | None, *,
                  placement: Iterable[int] = (), max_pattern_columns: int = 60_000) -> MatrixModel:
    """The configuration-level model as arrays (``objective`` for finite p, None for p = ±inf).

    ``placement`` (GPU type indices) adds, for those types, the node-pattern rows of
    :func:`goodopt.formulations.pattern_block.pattern_block` (interference
    avoidance only), which make every solution placeable; types whose
    patterns would exceed ``max_pattern_columns`` keep the aggregate rows only
    (listed in ``MatrixModel.aggregate_types``).
    """
    pr, cs = problem, configs
    J, C = pr.n_jobs, cs.n_configs
    rows = Rows()
    epigraph = not np.isfinite(pr.p)
    n_extra = (1 + (J if pr.p > 0 else 0)) if epigraph else J
    n = C + n_extra
    blocks: list[PatternBlock] = []
    aggregate: list[int] = []
    if placement and pr.interference_avoidance:
        for g in sorted(set(int(t) for t in placement) & set(np.unique(cs.gpu_type).tolist())):
            block = pattern_block(pr, cs, g, n, max_pattern_columns)
            if block is None:
                aggregate.append(g)
                continue
            blocks.append(block)
            n += block.n_columns
    cost = np.zeros(n)
    lower = np.zeros(n)
    upper = np.ones(n)
    integer = np.zeros(n, bool)
    integer[:C] = True
    if epigraph:
        _epigraph(pr, cs, rows, cost, lower, upper, integer)
    elif objective is not None:
        upper[:C] = np.where(objective.forbidden, 0.0, 1.0)  # (0d)
        cost[:C] = objective.coef
        cost[C:C + J] = objective.idle
        upper[C:C + J] = np.where(objective.must_run, 0.0, 1.0)  # (0e)
        # (0c) u_j + Σ_{c ∈ C_j} z_c = 1
        rows.add(np.concatenate([cs.job, np.arange(J)]), np.concatenate([np.arange(C), C + np.arange(J)]),
                 np.ones(C + J), np.ones(J), np.ones(J), "0c")
    if epigraph:
        # (1) Σ_{c ∈ C_j} z_c <= 1 (finite p: implied by (0c))
        counts = np.bincount(cs.job, minlength=J)
        several = counts[cs.job] > 1
        jobs = np.flatnonzero(counts > 1)
        local = np.searchsorted(jobs, cs.job[several])
        rows.add(local, np.flatnonzero(several), np.ones(several.sum()), np.full(len(jobs), -np.inf),
                 np.ones(len(jobs)), "1")
    _capacity_rows(pr, cs, rows)
    for block in blocks:
        cols = slice(block.col0, block.col0 + block.n_columns)
        upper[cols] = block.upper
        integer[cols] = True
        for args in block.rows:
            rows.add(*args)
    A, lo, hi = rows.matrix(n)
    return MatrixModel(cost=cost, lower=lower, upper=upper, integer=integer, A=A, row_lower=lo, row_upper=hi,
                       names=tuple(rows.names), n_configs=C, epigraph=epigraph,
                       pattern_types=tuple(b.gpu_type for b in blocks), aggregate_types=tuple(aggregate))


def _epigraph(pr: AllocationProblem, cs: ConfigSet, rows: Rows, cost: Array, lower: Array, upper: Array,
              integer: Array) -> None:
    """(0a) t <= eps + Σ S_c z_c  (p = -inf);  (0b) the same plus S_max (1 - y_j), Σ y = 1  (p = +inf)."""
    J, C = pr.n_jobs, cs.n_configs
    t = C
    s_max = float(cs.speedup.max(initial=0.0))
    cost[t] = 1.0
    lower[t], upper[t] = pr.eps, pr.eps + s_max
    integer[t] = False
    # t - Σ S_c z_c (+ S_max y_j) <= eps (+ S_max)
    r = np.concatenate([cs.job, np.arange(J)])
    c = np.concatenate([np.arange(C), np.full(J, t)])
    v = np.concatenate([-cs.speedup, np.ones(J)])
    hi = np.full(J, pr.eps)
    if pr.p > 0:
        y = C + 1 + np.arange(J)
        integer[y] = True
        r = np.concatenate([r, np.arange(J)])
        c = np.concatenate([c, y])
        v = np.concatenate([v, np.full(J, s_max)])
        hi = hi + s_max
        rows.add(np.zeros(J), y, np.ones(J), [1.0], [1.0], "0b")
    rows.add(r, c, v, np.full(J, -np.inf), hi, "0a" if pr.p < 0 else "0b")


def _capacity_rows(pr: AllocationProblem, cs: ConfigSet, rows: Rows) -> None:
    """(R2) GPUs per type, (R3) nodes of multi-node jobs per type, (R4) bin-packing cuts."""
    total, n_nodes, largest = type_layout(pr)
    G = pr.n_gpu_types
    C = cs.n_configs
    types = np.unique(cs.gpu_type)
    local = np.searchsorted(types, cs.gpu_type)
    rows.add(local, np.arange(C), cs.n_gpus.astype(float), np.full(len(types), -np.inf),
             total[types].astype(float), "R2")
    if pr.interference_avoidance:
        multi = np.flatnonzero(cs.multi)
        if len(multi):
            mt = np.unique(cs.gpu_type[multi])
            need = multi_node_need(pr, cs, multi, largest)
            rows.add(np.searchsorted(mt, cs.gpu_type[multi]), multi, need.astype(float),
                     np.full(len(mt), -np.inf), n_nodes[mt].astype(float), "R3")
    for g in range(G):
        caps = np.unique(pr.node_capacity[pr.node_type == g])
        single = np.flatnonzero((cs.gpu_type == g) & ~cs.multi)
        if len(caps) != 1 or not len(single):
            continue
        funcs = dual_feasible_functions(int(caps[0]))
        if not funcs:
            continue
        coef = np.stack(funcs)[:, np.minimum(cs.n_gpus[single], int(caps[0]))]  # (F, S): one row per function
        coef = coef[(coef > 0).any(axis=1)]  # functions that weigh none of these configurations add no row
        at, of = np.nonzero(coef > 0)  # row by row, each in the configurations' order
        rows.add(at, single[of], coef[at, of], np.full(len(coef), -np.inf), np.full(len(coef), float(n_nodes[g])),
                 "R4")


def dual_feasible_functions(capacity: int) -> list[Array]:
    """Dual-feasible functions ``f`` on GPU counts ``0..capacity`` with ``f(capacity) = 1`` (R4).

    Any set of counts that fits one node (sum <= capacity) has ``Σ f <= 1``:
    the "more than half" function and Fekete and Schepers' ``u^(λ)``,
    ``λ = 1..capacity-1``; duplicates and the plain ``k / capacity`` (already R2) dropped.
    Shapes: -> list of (capacity + 1,), read-only (shared between calls: every model of a run asks again).
    """
    return list(_dual_feasible_table(int(capacity)))


@lru_cache(maxsize=64)
def _dual_feasible_table(C: int) -> tuple[Array, ...]:
    k = np.arange(C + 1)
    out = [np.where(2 * k > C, 1.0, np.where(2 * k == C, 0.5, 0.0))]
    x = k / C
    for lam in range(1, C):
        y = (lam + 1) * x
        integral = np.isclose(y, np.round(y))
        out.append(np.where(integral, x, np.floor(y + 1e-12) / lam))
    unique: list[Array] = []
    for f in out:
        if np.allclose(f, x) or any(np.allclose(f, u) for u in unique):
            continue
        f.flags.writeable = False
        unique.append(f)
    return tuple(unique)


def multi_node_need(pr: AllocationProblem, cs: ConfigSet, idx: Array, largest: Array) -> Array:
    """Nodes that multi-node configurations ``idx`` occupy in (R3): at least ``max(2, ceil(k / largest node))``
    for a move, exactly the nodes of its current row for a keep configuration. Shapes: idx (M,) -> (M,)."""
    need = np.maximum(2, -(-cs.n_gpus[idx] // np.maximum(largest[cs.gpu_type[idx]], 1)))
    kept = cs.keep[idx]
    if kept.any():
        need[kept] = (pr.current[cs.job[idx[kept]]] > 0).sum(axis=1)
    return need


def no_good_row(config_indices: ArrayIn, n_columns: int) -> tuple[Array, Array, float, float]:
    """(C1) ``Σ_{c ∈ S} z_c <= |S| - 1`` as ``(columns, values, lower, upper)``."""
    idx = np.asarray(config_indices, np.int64)
    return idx, np.ones(len(idx)), -np.inf, float(len(idx) - 1)
