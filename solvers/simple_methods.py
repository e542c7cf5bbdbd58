"""The methods without a model -- ``greedy``, ``equal-share`` and ``brute-force`` -- as the registry's runners
(:data:`goodopt.solvers.api.REGISTRY`): each takes its own options class and returns a :class:`MethodOutcome`."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from goodopt.formulations.configs import ConfigSet, enumerate_configs

from goodopt.arrays import Array
from goodopt.errors import ValidationError
from goodopt.evaluator import Evaluator
from goodopt.problem import AllocationProblem

from .exhaustive import brute_force
from .heuristics import equal_share, greedy
from .options import BruteForceOptions, EqualShareOptions, GreedyOptions
from .result import MethodOutcome, Termination


def run_greedy(problem: AllocationProblem, ev: Evaluator, opts: GreedyOptions, t_start: float) -> MethodOutcome:
    start = problem.current if opts.start == "current" else None
    if start is not None and ev.violation(start) != 0:
        raise ValidationError("options.start", "the current allocation is infeasible", "use start='empty'")
    cs, build_s, t1 = _configs(problem)
    alloc, _, steps = greedy(problem, cs, start=start)
    return _outcome("greedy", alloc, Termination.COMPLETED, np.nan, cs, build_s, t1, {"steps": steps})


def run_equal_share(problem: AllocationProblem, ev: Evaluator, opts: EqualShareOptions,
                    t_start: float) -> MethodOutcome:
    cs, build_s, t1 = _configs(problem)
    alloc, _ = equal_share(problem, cs)
    return _outcome("equal-share", alloc, Termination.COMPLETED, np.nan, cs, build_s, t1, {})


def run_brute_force(problem: AllocationProblem, ev: Evaluator, opts: BruteForceOptions,
                    t_start: float) -> MethodOutcome:
    t1 = time.perf_counter()
    alloc, fit, n = brute_force(problem, ev, max_allocations=opts.max_allocations)
    status = Termination.OPTIMAL if alloc is not None else Termination.INFEASIBLE
    return _outcome("brute-force", alloc, status, fit if alloc is not None else np.nan, None, 0.0, t1,
                    {"n_allocations": n})


def _configs(problem: AllocationProblem) -> tuple[ConfigSet, float, float]:
    """The problem's configurations, the seconds they took, and the clock at the end (the solve's start)."""
    t0 = time.perf_counter()
    cs = enumerate_configs(problem)
    t1 = time.perf_counter()
    return cs, t1 - t0, t1


def _outcome(method: str, alloc: Array | None, status: Termination, bound: float, cs: ConfigSet | None,
             build_s: float, t1: float, extra: dict[str, Any]) -> MethodOutcome:
    """A heuristic's or brute force's outcome (no model: no objective, nodes or model size)."""
    return MethodOutcome(alloc=alloc, status=status, bound=bound, objective=np.nan, objective_bound=np.nan,
                         build_s=build_s, solve_s=time.perf_counter() - t1, nodes=None, solver=method,
                         solver_version="", raw_status=str(status), n_variables=None, n_constraints=None,
                         n_configs=None if cs is None else cs.n_configs, extra=extra, message="")
