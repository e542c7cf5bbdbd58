"""The configuration model of one problem at ``p = 1`` under levels of the other criteria (the model of
:mod:`goodopt.pareto.exact`, where it is written out), each answer placed, re-scored and judged."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..arrays import Array
from ..errors import ValidationError
from ..problem import AllocationProblem
from .criteria import Criterion, evaluate_criteria
from .front import FrontPoint

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
    width below which an interval of a continuous level closes; ``time_limit_s``: per MILP (wall clock: the front
    then depends on the machine's speed and load); ``node_limit``: branch-and-bound nodes per MILP (a budget that
    gives the same front on every machine)."""

    mip_rel_gap: float = 1e-6
    max_points: int | None = 40
    cost_levels: int | None = 6
    resolution: float = 1e-4
    time_limit_s: float | None = None
    threads: int = 1
    node_limit: int | None = None

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
        n = self.node_limit
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValidationError("node_limit", f"must be a whole number >= 1 or None, got {n!r}")


class LevelModel:
    """The configuration model of one problem at ``p = 1``, solved under levels of the other criteria."""

    def __init__(self, problem: AllocationProblem, criteria: tuple[Criterion, ...], opts: ExactFrontOptions) -> None:
        from ..formulations.config_matrix import config_matrix
        from ..formulations.scaled_objective import reference_fitness, scaled_objective
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
        self.t = t = problem.shifted(cs.speedup)  # (C,)
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
        self.problem_evaluator = problem.evaluator()  # the re-score of every point
        self.solves = 0
        self.unproven = 0  # feasibility solves stopped without an answer (see feasible)
        self._columns: dict[int, Array] = {}  # the model's column values of each point found (warm starts)

    def levels_of(self, kind: str) -> Array | None:
        """The values criterion ``kind`` can take, as "goodness" (fairness as is, cost negated), ascending; None
        when they are too many (searched as a continuum)."""
        pr, crit = self.problem, self.criterion(kind)
        if kind == "fairness" and crit.p == -math.inf:
            return np.unique(np.append(self.t, pr.idle))
        if kind == "cost":
            totals = [int(pr.node_capacity[pr.node_type == g].sum()) for g in range(pr.n_gpu_types)]
            if math.prod(t + 1 for t in totals) > MAX_DISCRETE_LEVELS:
                return None
            grids = np.meshgrid(*[np.arange(t + 1) * p for t, p in zip(totals, crit.prices)], indexing="ij")
            return np.unique(-np.round(sum(g.ravel() for g in grids), 9))
        return None

    def criterion(self, kind: str) -> Criterion:
        """The criterion of ``kind``."""
        return next(c for c in self.criteria if c.kind == kind)

    def solve(self, levels: dict[str, float], start: FrontPoint | None = None) -> FrontPoint | None:
        """The best efficiency under ``levels`` (criterion kind -> goodness level); None when none is feasible.
        ``start``: a point this model found that meets the levels (HiGHS's warm start)."""
        from ..formulations.configs import choice_from_values
        from ..solvers.milp.exact_placement import place_choice
        from ..solvers.result import Termination

        run, mm, pr = self.run, self.mm, self.problem
        C, J = mm.n_configs, pr.n_jobs
        session = self._session(levels)
        warm = self._columns.get(id(start)) if start is not None else None
        out, x = session.solve(time_limit_s=self.opts.time_limit_s, node_limit=self.opts.node_limit, warm_start=warm,
                               mip_rel_gap=SOLVER_GAP_SHARE * self.gap, mip_abs_gap=0.0)
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
        values, feasible = evaluate_criteria(pr, self.criteria, alloc[None], self.problem_evaluator)
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
        from ..solvers.milp.run import SCALED_MIP_FEASIBILITY
        from ..solvers.mip_solvers.highs_arrays import HighsSession

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
        stopped by the time or node limit before finding one counts as no (the front's far end is then not proven)."""
        out, x = self._session(levels, objective=False).solve(time_limit_s=self.opts.time_limit_s,
                                                              node_limit=self.opts.node_limit)
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
        crit = self.criterion(kind)
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
