"""Heuristic fronts: pymoo's NSGA-II, NSGA-III and MOEA/D over allocations, with the GA's operators and repair
(:mod:`goodopt.solvers.ga_operators`), every member scored by the one evaluator (:mod:`.criteria`)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from pymoo.core.problem import Problem

from ..arrays import Array
from ..errors import ValidationError
from ..problem import AllocationProblem
from .criteria import Criterion, evaluate_criteria
from .front import Front, FrontPoint, nondominated_points

#: The heuristic methods of a front.
ALGORITHMS = ("nsga2", "nsga3", "moead")


@dataclass(frozen=True)
class HeuristicFrontOptions:
    """``pop_size`` and ``n_gen`` of the run; ``seed`` its randomness; ``partitions``: of the Das-Dennis reference
    directions (NSGA-III, MOEA/D); ``neighbours``: MOEA/D's."""

    pop_size: int = 100
    n_gen: int = 100
    seed: int = 0
    partitions: int = 12
    neighbours: int = 15

    def __post_init__(self) -> None:
        for name in ("pop_size", "n_gen", "partitions", "neighbours"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValidationError(name, f"must be a whole number >= 1, got {v!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValidationError("seed", f"must be a whole number >= 0, got {self.seed!r}")


class CriteriaProblem(Problem):  # type: ignore[misc]  # pymoo publishes no types (its imports are untyped)
    """Allocations as J * N integers; objectives the criteria (maximised ones negated), one constraint: the
    evaluator's violation (0 after repair). ``constrained=False`` (MOEA/D, which takes no constraints): an
    infeasible member's objectives are +inf instead (none is, after repair)."""

    def __init__(self, problem: AllocationProblem, criteria: tuple[Criterion, ...], constrained: bool = True) -> None:
        self.alloc_problem, self.criteria, self.constrained = problem, criteria, constrained
        self.evaluator = problem.evaluator()  # built once: every generation is scored by it
        self.sign = np.array([-1.0 if c.maximise else 1.0 for c in criteria])
        J, N = problem.n_jobs, problem.n_nodes
        super().__init__(n_var=J * N, n_obj=len(criteria), n_ieq_constr=1 if constrained else 0, xl=np.zeros(J * N),
                         xu=np.tile(problem.node_capacity, J).astype(float), vtype=int)

    def _evaluate(self, x: Array, out: dict[str, Array], *args: object, **kwargs: object) -> None:
        pr = self.alloc_problem
        pop = np.asarray(x).reshape(len(x), pr.n_jobs, pr.n_nodes).astype(np.int64, copy=False)
        values, feasible = evaluate_criteria(pr, self.criteria, pop, self.evaluator)
        if self.constrained:
            out["F"] = values * self.sign
            out["G"] = np.where(feasible, 0.0, 1.0)[:, None]
        else:
            out["F"] = np.where(feasible[:, None], values * self.sign, np.inf)


def heuristic_front(problem: AllocationProblem, criteria: tuple[Criterion, ...], algorithm: str,
                    opts: HeuristicFrontOptions | None = None, seeds: Iterable[Array] = ()) -> Front:
    """The non-dominated feasible members of ``algorithm``'s last population (warm from ``seeds``)."""
    from pymoo.optimize import minimize

    opts = opts or HeuristicFrontOptions()
    if algorithm not in ALGORITHMS:
        raise ValidationError("methods", f"unknown front method {algorithm!r}", f"use exact or {', '.join(ALGORITHMS)}")
    t0 = time.process_time()
    mop = CriteriaProblem(problem, criteria, constrained=algorithm != "moead")
    res = minimize(mop, _algorithm(problem, algorithm, len(criteria), opts, list(seeds)), ("n_gen", opts.n_gen),
                   seed=opts.seed, verbose=False, save_history=False)
    final = np.asarray(res.pop.get("X")).reshape(-1, problem.n_jobs, problem.n_nodes).astype(np.int64)
    values, feasible = evaluate_criteria(problem, criteria, final, mop.evaluator)
    points = [FrontPoint(tuple(float(a) for a in values[i]), final[i], "heuristic") for i in np.flatnonzero(feasible)]
    front = nondominated_points(points, [c.maximise for c in criteria])
    return Front(criteria=criteria, points=front, method=algorithm, seed=opts.seed, cpu_s=time.process_time() - t0,
                 solves=int(res.algorithm.evaluator.n_eval))


def _algorithm(problem: AllocationProblem, name: str, n_obj: int, opts: HeuristicFrontOptions,
               seeds: list[Array]) -> object:
    from pymoo.algorithms.moo.moead import MOEAD
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.algorithms.moo.nsga3 import NSGA3
    from pymoo.util.ref_dirs import get_reference_directions

    from ..solvers.ga_operators import (
        AllocationMutation,
        AllocationRepair,
        AllocationSampling,
        RepairData,
        RowCrossover,
    )

    data = RepairData(problem)
    operators = dict(sampling=AllocationSampling(data, seeds[: max(opts.pop_size - 1, 0)]),
                     crossover=RowCrossover(data), mutation=AllocationMutation(data), repair=AllocationRepair(data))
    if name == "nsga2":
        return NSGA2(pop_size=opts.pop_size, eliminate_duplicates=False, **operators)
    ref_dirs = get_reference_directions("das-dennis", n_obj, n_partitions=opts.partitions)
    if name == "nsga3":
        return NSGA3(ref_dirs=ref_dirs, pop_size=max(opts.pop_size, len(ref_dirs)), eliminate_duplicates=False,
                     **operators)
    return MOEAD(ref_dirs=ref_dirs, n_neighbors=min(opts.neighbours, len(ref_dirs)), **operators)
