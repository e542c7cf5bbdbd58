"""The Pollux allocation problem for pymoo (0.6): one or two objectives.

Decision: the (J, N) allocation matrix, flattened to J * N integer variables
with bounds ``0 <= x_jn <= cap_n``. Objectives (minimised by pymoo):

* single-objective: ``-F_p(S + eps)``, the negated p-norm fitness;
* two-objective (Pollux's autoscaling variant, NSGA-II): ``-F_p`` and the
  number of nodes in use.

One inequality constraint ``G = violation <= 0`` (the evaluator's total
violation). With :class:`~goodopt.solvers.ga_operators.AllocationRepair`
every evaluated member is feasible, so G stays 0; it is kept so that a run
without repair remains correct.
"""

from __future__ import annotations

import numpy as np
from pymoo.core.problem import Problem

from goodopt.arrays import Array
from goodopt.evaluator import Evaluator
from goodopt.problem import AllocationProblem


class AllocationGAProblem(Problem):  # type: ignore[misc]  # pymoo publishes no types
    """Vectorised pymoo problem over a population of allocations."""

    def __init__(self, problem: AllocationProblem, evaluator: Evaluator | None = None, *,
                 two_objectives: bool = False) -> None:
        self.alloc_problem = problem
        self.evaluator = evaluator if evaluator is not None else problem.evaluator()
        self.two_objectives = two_objectives
        J, N = problem.n_jobs, problem.n_nodes
        super().__init__(n_var=J * N, n_obj=2 if two_objectives else 1, n_ieq_constr=1,
                         xl=np.zeros(J * N), xu=np.tile(problem.node_capacity, J).astype(float), vtype=int)

    def _evaluate(self, x: Array, out: dict[str, Array], *args: object, **kwargs: object) -> None:
        """Shapes: x (P, J * N) -> F (P, n_obj), G (P, 1)."""
        pr = self.alloc_problem
        pop = np.asarray(x).reshape(len(x), pr.n_jobs, pr.n_nodes).astype(np.int64, copy=False)
        res = self.evaluator.evaluate(pop)
        if self.two_objectives:
            nodes_used = (pop.sum(axis=1) > 0).sum(axis=1)
            out["F"] = np.column_stack([-res.fitness, nodes_used])
        else:
            out["F"] = -res.fitness[:, None]
        out["G"] = res.violation[:, None]
