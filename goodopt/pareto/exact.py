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
import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..arrays import Array
from ..errors import ValidationError
from ..problem import AllocationProblem
from .criteria import Criterion, evaluate_criteria
from .front import Front, FrontPoint, nondominated_points

#: Level values above which a criterion's levels are searched as a continuum (to ``resolution``).
MAX_DISCRETE_LEVELS = 20_000
#: The share of a point's gap HiGHS may stop at (the rest absorbs the loosening of its bound).
SOLVER_GAP_SHARE = 0.1
#: Relative slack of a level row or filter (below HiGHS's feasibility tolerance of the scaled rows).
LEVEL_SLACK = 1e-9


@dataclass(frozen=True)
class ExactFrontOptions:
    """``mip_rel_gap``: each point's certified gap; ``max_points``: per bi-objective front (None: every point);
    ``cost_levels``: cost budgets with three criteria (None: every reachable cost); ``resolution``: the relative
    width below which an interval of a continuous level closes; ``time_limit_s``: per MILP."""

    mip_rel_gap: float = 1e-6
    max_points: int | None = 40
    cost_levels: int | None = 6
    resolution: float = 1e-4
    time_limit_s: float | None = None
    threads: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.mip_rel_gap < 1:
            raise ValidationError("mip_rel_gap", f"must be in [0, 1), got {self.mip_rel_gap!r}")
        for name in ("max_points", "cost_levels"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < 2):
                raise ValidationError(name, f"must be a whole number >= 2 or None, got {v!r}")
        if not 0 < self.resolution < 1:
            raise ValidationError("resolution", f"must be in (0, 1), got {self.resolution!r}")
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise ValidationError("time_limit_s", f"must be > 0 or None, got {self.time_limit_s!r}")


class LevelModel:
    """The configuration model of one problem at ``p = 1``, solved under levels of the other criteria."""

    def __init__(self, problem: AllocationProblem, criteria: tuple[Criterion, ...], opts: ExactFrontOptions) -> None:
        from ..formulations.config_matrix import config_matrix
        from ..formulations.objective import reference_fitness, scaled_objective
        from ..solvers.milp.run import MilpRun
        from ..solvers.options import MilpOptions

        if not problem.interference_avoidance:
            raise ValidationError("problem.interference_avoidance", "the exact front needs node-pattern rows, "
                                  "which model placement with interference avoidance", "turn avoidance on")
        self.problem, self.criteria, self.opts = problem, criteria, opts
        linear = replace(problem, p=1.0)
        self.run = MilpRun(linear, linear.evaluator(), MilpOptions(formulation="reference", mip_rel_gap=opts.mip_rel_gap,
                                                                   threads=opts.threads), time.perf_counter())
        cs = self.run.cs
        self.run.objective = scaled_objective(linear, cs, reference_fitness(linear, cs, None), None)
        mm = config_matrix(linear, cs, self.run.objective, placement=range(problem.n_gpu_types))
        # the objective efficiency itself over its least possible value (every job at the least t or idle), so
        # that HiGHS's relative gap is efficiency's and its absolute tolerances lie far below 1e-7 of it
        t = problem.shifted(cs.speedup)
        self.weight_sum = float(problem.weights.sum())
        self.unit = self.weight_sum * float(min(t.min(initial=problem.idle), problem.idle))
        cost = mm.cost.copy()
        cost[:cs.n_configs] = problem.weights[cs.job] * t / self.unit
        cost[cs.n_configs:cs.n_configs + problem.n_jobs] = problem.weights * problem.idle / self.unit
        self.mm = replace(mm, cost=cost)
        if self.mm.aggregate_types:
            names = [problem.type_names[g] for g in self.mm.aggregate_types]
            raise ValidationError("problem", f"too many node patterns on {', '.join(names)} for the exact front",
                                  "use a smaller instance or fewer GPU types per node")
        self.t = problem.shifted(cs.speedup)  # (C,)
        self.solves = 0
        self.unproven = 0  # feasibility solves stopped without an answer (see feasible)
        self._columns: dict[int, Array] = {}  # the model's column values of each point found (warm starts)

    def levels_of(self, kind: str) -> Array | None:
        """The values criterion ``kind`` can take, as "goodness" (fairness as is, cost negated), ascending; None
        when they are too many (searched as a continuum)."""
        pr, crit = self.problem, self._criterion(kind)
        if kind == "fairness" and crit.p == -math.inf:
            return np.unique(np.append(self.t, pr.idle))
        if kind == "cost":
            totals = [int(pr.node_capacity[pr.node_type == g].sum()) for g in range(pr.n_gpu_types)]
            if math.prod(t + 1 for t in totals) > MAX_DISCRETE_LEVELS:
                return None
            grids = np.meshgrid(*[np.arange(t + 1) * p for t, p in zip(totals, crit.prices)], indexing="ij")
            return np.unique(-np.round(sum(g.ravel() for g in grids), 9))
        return None

    def _criterion(self, kind: str) -> Criterion:
        return next(c for c in self.criteria if c.kind == kind)

    def solve(self, levels: dict[str, float], start: FrontPoint | None = None) -> FrontPoint | None:
        """The best efficiency under ``levels`` (criterion kind -> goodness level); None when none is feasible.
        ``start``: a point this model found that meets the levels (HiGHS's warm start)."""
        from ..formulations.configs import choice_from_values
        from ..solvers.milp.placement import place_choice
        from ..solvers.result import Termination

        run, mm, pr = self.run, self.mm, self.problem
        C, J = mm.n_configs, pr.n_jobs
        session = self._session(levels)
        warm = self._columns.get(id(start)) if start is not None else None
        out, x = session.solve(time_limit_s=self.opts.time_limit_s, warm_start=warm, mip_rel_gap=SOLVER_GAP_SHARE * self.gap,
                               mip_abs_gap=0.0)
        self.solves += 1
        if out.termination == Termination.INFEASIBLE:
            return None
        if x is None:
            return FrontPoint(values=(math.nan,) * len(self.criteria), alloc=np.zeros((J, pr.n_nodes), np.int64),
                              status=str(out.termination), levels=tuple(levels.values()))
        alloc = place_choice(run, choice_from_values(run.cs, J, x[:C]))[0]
        bound = self._bound(out.bound)
        if alloc is None:
            return FrontPoint(values=(math.nan,) * len(self.criteria), alloc=np.zeros((J, pr.n_nodes), np.int64),
                              status="unplaced", levels=tuple(levels.values()), bound=bound)
        values, feasible = evaluate_criteria(pr, self.criteria, alloc[None])
        v = tuple(float(a) for a in values[0])
        status = str(out.termination)
        if out.termination == Termination.OPTIMAL:
            met = feasible[0] and all(self._meets(k, lv, v) for k, lv in levels.items())
            within = bound - v[0] <= self.gap * abs(bound)
            status = "optimal" if met and within else ("level not met" if not met else "gap not closed")
        point = FrontPoint(values=v, alloc=alloc, status=status, levels=tuple(levels.values()), bound=bound)
        self._columns[id(point)] = x
        return point

    def _session(self, levels: dict[str, float], *, objective: bool = True) -> Any:
        """HiGHS holding the model under ``levels`` (``objective=False``: every cost 0, a feasibility problem)."""
        from ..solvers.highs_arrays import HighsSession
        from ..solvers.milp.run import SCALED_MIP_FEASIBILITY

        upper = self.mm.upper.copy()
        rows: list[tuple[Array, Array, float, float]] = []
        for kind, level in levels.items():
            upper, row = self._level(kind, level, upper)
            if row is not None:
                rows.append(row)
        model = replace(self.mm, upper=upper, cost=self.mm.cost if objective else np.zeros_like(self.mm.cost))
        session = HighsSession(model, threads=self.opts.threads,
                               highs_options={"mip_feasibility_tolerance": SCALED_MIP_FEASIBILITY, "presolve": "off"})
        for cols, vals, lo, hi in rows:
            session.add_row(cols, vals, lo, hi)
        return session

    def feasible(self, levels: dict[str, float]) -> bool:
        """Whether some allocation meets ``levels`` (a feasibility MILP: it stops at the first one found). A solve
        stopped by the time limit before finding one counts as no (the front's far end is then not proven)."""
        out, x = self._session(levels, objective=False).solve(time_limit_s=self.opts.time_limit_s)
        self.solves += 1
        if x is None and str(out.termination) not in ("infeasible",):
            self.unproven += 1
        return x is not None

    @property
    def gap(self) -> float:
        return max(self.opts.mip_rel_gap, 1e-9)

    def _bound(self, model_bound: float) -> float:
        """Efficiency's bound from HiGHS's: loosened by the gap it may stop at and its feasibility tolerance."""
        from ..solvers.milp.run import SCALED_MIP_FEASIBILITY

        if not np.isfinite(model_bound):
            return math.inf
        return (model_bound * (1 + SOLVER_GAP_SHARE * self.gap) + SCALED_MIP_FEASIBILITY) * self.unit / self.weight_sum

    def _level(self, kind: str, level: float, upper: Array) -> tuple[Array, tuple[Array, Array, float, float] | None]:
        """Column bounds or one row making criterion ``kind`` reach goodness ``level``."""
        pr, cs, C = self.problem, self.run.cs, self.mm.n_configs
        J = pr.n_jobs
        crit = self._criterion(kind)
        floor = level - LEVEL_SLACK * max(abs(level), 1.0)
        if kind == "cost":
            per_config = np.asarray(crit.prices, float)[cs.gpu_type] * cs.n_gpus
            return upper, (np.arange(C), per_config, -math.inf, -floor)
        if crit.p == -math.inf:
            upper = upper.copy()
            upper[:C] = np.where(self.t < floor, 0.0, upper[:C])
            if pr.idle < floor:
                upper[C:C + J] = 0.0
            return upper, None
        return self._power_row(crit.p, max(floor, 1e-300), upper)

    def _power_row(self, p: float, f: float, upper: Array) -> tuple[Array, tuple[Array, Array, float, float]]:
        """The row ``Σ_j w_j (t_j / f)^p <= W`` (``>=`` for ``p > 0``; ``Σ_j w_j log(t_j / f) >= 0`` at ``p = 0``),
        scaled by ``f``. For ``p < 0`` a term above ``W`` alone rules its column out (a bound instead of a
        coefficient up to 1e150 at p = -50), and terms below 1e-12 of ``W`` are left out of the row (it is
        then looser, so the re-scored point's level is checked)."""
        pr, cs, C = self.problem, self.run.cs, self.mm.n_configs
        J, w = pr.n_jobs, pr.weights
        W = float(w.sum())
        t = np.concatenate([self.t, np.full(J, pr.idle)])
        weight = np.concatenate([w[cs.job], w])
        vals = weight * (np.log(t / f) if p == 0 else np.power(t / f, p))
        if p >= 0:
            return upper, (np.arange(C + J), vals, 0.0 if p == 0 else W, math.inf)
        upper = upper.copy()
        upper[:C + J] = np.where(vals > W * (1 + LEVEL_SLACK), 0.0, upper[:C + J])
        keep = (vals <= W * (1 + LEVEL_SLACK)) & (vals >= 1e-12 * W)
        return upper, (np.flatnonzero(keep), vals[keep], -math.inf, W)

    def _meets(self, kind: str, level: float, values: tuple[float, ...]) -> bool:
        i = [c.kind for c in self.criteria].index(kind)
        goodness = values[i] if self.criteria[i].maximise else -values[i]
        return bool(goodness >= level - 1e-6 * max(abs(level), 1.0))


def goodness(point: FrontPoint, criteria: tuple[Criterion, ...], kind: str) -> float:
    """A point's criterion ``kind`` as "goodness" (larger is better: cost negated)."""
    i = [c.kind for c in criteria].index(kind)
    return point.values[i] if criteria[i].maximise else -point.values[i]


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

    def highest(self, feasible: Any, lo: float, hi: float) -> float:
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
    pr, crit = model.problem, model._criterion("cost")
    full = float(np.dot(np.asarray(crit.prices)[pr.node_type], pr.node_capacity))
    values = model.levels_of("cost")
    if opts.cost_levels is None:
        if values is None:
            raise ValidationError("cost_levels", "the cluster has too many reachable costs to list",
                                  "give a number of cost budgets, e.g. 8")
        return [float(v) for v in values]
    return [-full * (i + 1) / opts.cost_levels for i in range(opts.cost_levels)]
