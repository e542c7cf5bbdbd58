"""The ``ga`` and ``nsga2`` methods (pymoo 0.6).

Pollux's settings are the defaults: population 100, 100 generations, the
problem's p and re-allocation factors, interference avoidance. The initial
population holds the current allocation, any warm starts (``warm_start``:
``"greedy"``, ``"milp"``, an allocation, or a list of them) and the
``initial_population`` of a previous round, then mutated copies, all repaired
to feasibility. All randomness comes from ``seed``.
"""

from __future__ import annotations

import logging
import time

import numpy as np
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.algorithms.soo.nonconvex.ga import GA
from pymoo.core.termination import TerminateIfAny
from pymoo.optimize import minimize
from pymoo.termination.max_gen import MaximumGenerationTermination
from pymoo.termination.max_time import TimeBasedTermination

from goodopt.formulations.ga import AllocationGAProblem
from goodopt.formulations.ga_operators import (AllocationMutation, AllocationRepair, AllocationSampling,
                                               RepairData, RowCrossover)

from .result import Termination

log = logging.getLogger(__name__)


def solve_ga(problem, evaluator, opts, t_start, *, seeds=(), two_objectives=False):
    """Run the GA. ``seeds`` are (J, N) allocations for the initial population."""
    t0 = time.perf_counter()
    data = RepairData(problem)
    seeds = list(seeds)
    if opts.get("initial_population") is not None:
        init = np.asarray(opts["initial_population"], dtype=np.int64)
        seeds.extend(init.reshape(-1, problem.n_jobs, problem.n_nodes))
    pop_size = opts["pop_size"]
    seeds = seeds[: max(pop_size - 1, 0)]
    gaprob = AllocationGAProblem(problem, evaluator, two_objectives=two_objectives)
    operators = dict(
        pop_size=pop_size,
        sampling=AllocationSampling(data, seeds),
        crossover=RowCrossover(data, prob=opts["crossover_prob"]),
        mutation=AllocationMutation(data, opts["mutation_rate"]),
        repair=AllocationRepair(data),
        eliminate_duplicates=False,
    )
    algorithm = NSGA2(**operators) if two_objectives else GA(**operators)
    limits = [MaximumGenerationTermination(opts["n_gen"])]
    if opts["time_limit_s"] is not None:
        remaining = max(opts["time_limit_s"] - (time.perf_counter() - t_start), 1e-3)
        limits.append(TimeBasedTermination(remaining))
    termination = TerminateIfAny(*limits)
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    res = minimize(gaprob, algorithm, termination, seed=opts["seed"], verbose=False, save_history=False)
    solve_s = time.perf_counter() - t1
    n_gen = res.algorithm.n_gen - 1  # pymoo counts the initial population as generation 1
    status = Termination.COMPLETED if n_gen >= opts["n_gen"] else Termination.TIME_LIMIT
    final = res.pop.get("X").reshape(-1, problem.n_jobs, problem.n_nodes).astype(np.int64)
    ev = evaluator.evaluate(final)
    fit = np.where(ev.violation == 0, ev.fitness, -np.inf)
    best = int(np.argmax(fit))
    alloc = final[best] if np.isfinite(fit[best]) else None
    extra = {"generations": int(n_gen), "evaluations": int(res.algorithm.evaluator.n_eval),
             "final_population": final}
    if two_objectives:
        front = res.X.reshape(-1, problem.n_jobs, problem.n_nodes).astype(np.int64)
        fe = evaluator.evaluate(front)
        nodes_used = (front.sum(axis=1) > 0).sum(axis=1)
        order = np.lexsort((-fe.fitness, nodes_used))
        extra["pareto"] = [{"nodes_used": int(nodes_used[i]), "fitness": float(fe.fitness[i])}
                           for i in order if fe.violation[i] == 0]
        extra["pareto_allocations"] = front[order]
    return dict(alloc=alloc, status=status, bound=np.nan, objective=np.nan, objective_bound=np.nan,
                build_s=build_s, solve_s=solve_s, nodes=None, solver="pymoo-" + ("nsga2" if two_objectives else "ga"),
                solver_version=_pymoo_version(), raw_status=f"{n_gen} generations", n_variables=gaprob.n_var,
                n_constraints=1, n_configs=None, extra=extra,
                message=f"{n_gen} generations of population {pop_size}")


def _pymoo_version() -> str:
    from importlib.metadata import version

    return version("pymoo")
