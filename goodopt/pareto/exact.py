r"""The exact front by the epsilon-constraint method on the configuration model, each point certified.

Every point maximises efficiency under levels of the other criteria
(:mod:`goodopt.pareto.criteria`), on the configuration level under every GPU
type's node-pattern rows (an exact model of placement,
:func:`goodopt.formulations.config_matrix.config_matrix`), objective at ``p = 1``::

    max  Σ_c w_j(c) t_c z_c + Σ_j w_j t_idle u_j                         (efficiency, x W)
    s.t. (0c), (R2)-(R4) and the node-pattern rows of every type
         z_c = 0 where t_c < f,  u_j = 0 where t_idle < f               (fairness >= f, p = -inf)
         Σ_c w_j(c) t_c^p z_c + Σ_j w_j t_idle^p u_j <= W f^p          (fairness >= f, p < 0; >= for p > 0)
         Σ_c price(c) k_c z_c <= B                                      (cost <= B)

A point is *certified* when HiGHS proves it optimal and its allocation, placed
and re-scored by the evaluator, meets its levels and lies within the gap of
the loosened bound; any other point is listed with the solver's status.

The levels (bi-objective, for the criterion beside efficiency) are chosen
adaptively: the two ends (the best efficiency; the best level any allocation
reaches), then, repeatedly in the open interval between the two neighbouring
points farthest apart (criteria scaled to the front's range), the level at
its middle. The optimum ``P`` at level ``f`` shows that no other
non-dominated point has its level in ``[f, level(P))``, so each probe either
adds a point or halves an interval; where the criterion takes finitely many
values (the worst job's ``t``, the cost of a few GPU types) the intervals
close exactly and, without a point limit, the front is complete: every
non-dominated point up to the gap. With three criteria the bi-objective front
(efficiency, fairness) is found under each of a set of cost budgets
(``cost_levels``; every reachable cost on small instances) and the union
filtered.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arrays import Array, ArrayIn
from ..errors import ValidationError
from ..problem import AllocationProblem
from .criteria import Criterion
from .front import Front, FrontPoint, nondominated_points
from .level_model import ExactFrontOptions, LevelModel, goodness

__all__ = ["ExactFrontOptions", "LevelModel", "biobjective_front", "exact_front"]


@dataclass(order=True)
class _Interval:
    """Levels ``(lo, hi)`` (exclusive) between two points of the front, where more points may lie."""

    priority: float
    lo: float
    hi: float
    left: Any  # FrontPoint
    right: Any


class _Levels:
    """The levels of one criterion between two goodness values: its finite values, or a continuum."""

    def __init__(self, values: Array | None, resolution: float) -> None:
        self.values, self.resolution = values, resolution

    def probe(self, lo: float, hi: float) -> float | None:
        """A level strictly inside ``(lo, hi)`` near its middle; None when the interval holds none."""
        if self.values is not None:
            inside = self.values[(self.values > lo + _tie(lo)) & (self.values < hi - _tie(hi))]
            return float(inside[(len(inside) - 1) // 2]) if len(inside) else None
        if hi - lo <= self.resolution * max(abs(lo), abs(hi), 1e-12):
            return None
        return 0.5 * (lo + hi)

    def highest(self, feasible: ArrayIn, lo: float, hi: float) -> float:
        """The largest level in ``[lo, hi]`` at which ``feasible(level)`` holds (it holds at ``lo``)."""
        if self.values is not None:
            v = self.values[(self.values >= lo - _tie(lo)) & (self.values <= hi + _tie(hi))]
            a, b = 0, len(v) - 1  # feasible at v[a]
            while a < b:
                k = (a + b + 1) // 2
                a, b = (k, b) if feasible(float(v[k])) else (a, k - 1)
            return float(v[a]) if len(v) else lo
        while hi - lo > self.resolution * max(abs(lo), abs(hi), 1e-12):
            m = 0.5 * (lo + hi)
            lo, hi = (m, hi) if feasible(m) else (lo, m)
        return lo


def _tie(x: float) -> float:
    return 1e-9 * max(abs(x), 1.0)


def biobjective_front(model: LevelModel, kind: str, fixed: dict[str, float], opts: ExactFrontOptions
                      ) -> list[FrontPoint]:
    """The front of efficiency and criterion ``kind`` under the ``fixed`` levels (adaptive, see the module)."""
    crits = model.criteria
    top = model.solve(dict(fixed))
    if top is None or not np.isfinite(top.values[0]):
        return [] if top is None else [top]
    levels = _Levels(model.levels_of(kind), opts.resolution)
    g_top = goodness(top, crits, kind)
    best = levels.highest(lambda lv: model.feasible({**fixed, kind: lv}), g_top, _ceiling(model, kind))
    bottom = model.solve({**fixed, kind: best}) if best > g_top + _tie(g_top) else None
    points = [top] + ([bottom] if bottom is not None and np.isfinite(bottom.values[0]) else [])
    if len(points) == 1:
        return points
    gaps = np.abs(np.subtract(top.values, points[1].values))
    span = np.where(gaps > 0, gaps, 1.0)
    open_: list[_Interval] = []

    def push(lo: float, hi: float, left: FrontPoint, right: FrontPoint) -> None:
        d = float(np.linalg.norm((np.subtract(left.values, right.values)) / span))
        heapq.heappush(open_, _Interval(-d, lo, hi, left, right))

    push(g_top, goodness(points[1], crits, kind), top, points[1])
    while open_ and (opts.max_points is None or len(points) < opts.max_points):
        iv = heapq.heappop(open_)
        level = levels.probe(iv.lo, iv.hi)
        if level is None:
            continue
        found = model.solve({**fixed, kind: level}, start=iv.right)  # the right point meets the level
        if found is None or not np.isfinite(found.values[0]):
            continue  # a solver that stopped without an answer: the interval stays unexplored
        g = goodness(found, crits, kind)
        if g >= iv.hi - _tie(iv.hi):  # nothing new from this level up to the right point
            push(iv.lo, level, iv.left, iv.right)
            continue
        points.append(found)
        push(iv.lo, level, iv.left, found)
        push(g, iv.hi, found, iv.right)
    return points


def _ceiling(model: LevelModel, kind: str) -> float:
    """The best goodness criterion ``kind`` can have: every job at its best ``t`` (fairness), nothing held (cost)."""
    if kind == "cost":
        return 0.0
    return float(max(model.t.max(initial=model.problem.idle), model.problem.idle))


def exact_front(problem: AllocationProblem, criteria: tuple[Criterion, ...],
                opts: ExactFrontOptions | None = None) -> Front:
    """The exact front of ``problem`` over ``criteria`` (efficiency first; see the module)."""
    opts = opts or ExactFrontOptions()
    t0 = time.process_time()
    model = LevelModel(problem, criteria, opts)
    kinds = [c.kind for c in criteria[1:]]
    points: list[FrontPoint] = []
    if len(kinds) == 1:
        points = biobjective_front(model, kinds[0], {}, opts)
    else:
        for budget in _budgets(model, opts):
            points += biobjective_front(model, "fairness", {"cost": budget}, opts)
    listed = [p for p in points if np.all(np.isfinite(p.values))]
    front = nondominated_points(listed, [c.maximise for c in criteria])
    unfinished = [p for p in points if not p.certified]
    return Front(criteria=criteria, points=front, method="exact", cpu_s=time.process_time() - t0, solves=model.solves,
                 info={"uncertified": len(unfinished), "configs": model.mm.n_configs,
                       "unproven_feasibility": model.unproven})


def _budgets(model: LevelModel, opts: ExactFrontOptions) -> list[float]:
    """Cost budgets (as goodness: minus the cost): every reachable cost, or ``cost_levels`` up to the cluster's."""
    pr, crit = model.problem, model.criterion("cost")
    full = float(np.dot(np.asarray(crit.prices)[pr.node_type], pr.node_capacity))
    values = model.levels_of("cost")
    if opts.cost_levels is None:
        if values is None:
            raise ValidationError("cost_levels", "the cluster has too many reachable costs to list",
                                  "give a number of cost budgets, e.g. 8")
        return [float(v) for v in values]
    return [-full * (i + 1) / opts.cost_levels for i in range(opts.cost_levels)]
