"""The ``milp-pwl`` method: the piecewise-linear model of :mod:`goodopt.formulations.pwl` on the same scaled
terms, its configurations placed and repaired, its bound loosened by the interpolation error."""

from __future__ import annotations

import time

import numpy as np
from goodopt.formulations import pwl as fp

from goodopt.evaluator import Evaluator
from goodopt.placement import place_configs
from goodopt.problem import AllocationProblem

from ..heuristics import greedy
from ..mip_solvers.outcome import MilpOutcome
from ..mip_solvers.pyomo_route import solve_model
from ..options import PwlOptions
from ..result import MethodOutcome
from .run import MilpRun, as_time_limit
from .verdict import finish, nothing_left, nothing_to_choose


def solve_pwl(problem: AllocationProblem, evaluator: Evaluator, opts: PwlOptions, t_start: float) -> MethodOutcome:
    """Run the piecewise-linear method. Returns result fields like :func:`goodopt.solvers.milp.method.solve_milp`.

    Never certifies: the decoded counts are placed and repaired heuristically.
    Its bound is the model's bound loosened by the total interpolation error
    and by HiGHS's gaps and pruning tolerance (at p = -inf too: no floor
    re-solve checks this model), valid for the allocation problem at every p.
    """
    run = MilpRun(problem, evaluator, opts, t_start)
    pr, cs, info = run.pr, run.cs, run.info
    # scales the objective; the answer only when the PWL model gives none (a time limit, say), so run to its end
    # whatever the limit: the floor of the answer
    run.add_candidate(greedy(pr, cs)[0], "greedy")
    run.scale_objective()
    t0 = time.perf_counter()
    classes = fp.pwl_classes(pr, cs, opts.breakpoints, opts.spacing, objective=run.objective)
    per_job = np.zeros(pr.n_jobs)
    for cl in classes:
        per_job[cl.job] = max(per_job[cl.job], cl.error)
    slack = float(per_job.max(initial=0.0)) if pr.p == -np.inf else float(per_job.sum())
    info.update({"n_classes": len(classes), "pwl_error_bound": float(per_job.max(initial=0.0)),
                 "pwl_error_bound_total": slack, "breakpoints": opts.breakpoints, "spacing": opts.spacing})
    if nothing_left(run):
        return nothing_to_choose(run)
    if run.expired():  # no time left to build the model (0.7 s at 2048 GPUs), let alone solve it
        info["stages"].append({"model": "pwl", "status": "skipped: time limit reached before building",
                               "compile_s": 0.0, "solve_s": 0.0, "nodes": None})
        return _incumbent(run, as_time_limit(None))
    model = fp.build_model(pr, cs, classes, objective=run.objective)
    run.build_s += time.perf_counter() - t0
    # one call for every solver: the route maps the node budget and tolerances to the solver's own
    out = run.stage("pwl", lambda: solve_model(model, solver=opts.solver, threads=opts.threads,
                                               highs_options=opts.highs_options,
                                               feasibility_tol=run.solver_feasibility,
                                               engine_options={"native": opts.solver_options},
                                               **run.solve_kwargs()))
    if not out.has_solution:
        return _incumbent(run, out)
    if np.isfinite(out.bound):  # valid for the true problem: the model's bound plus the interpolation error
        f = run.to_fitness(run.model_bound(out.bound, floor_checked=False) + slack)
        if np.isfinite(f):
            run.fit_bound = f
            run.record()
    chosen = fp.decode(model, pr, cs, classes)
    alloc, failed = place_configs(pr, cs, chosen)
    info["placement_failed_jobs"] = [pr.job_names[j] for j in failed]
    alloc, _, _ = greedy(pr, cs, start=alloc, deadline=run.deadline)
    return finish(run, alloc, out, proven=False)


def _incumbent(run: MilpRun, out: MilpOutcome) -> MethodOutcome:
    """The best candidate (greedy's) as the answer of a PWL solve whose model gave none, with that outcome's
    status (``extra["incumbent"]`` names it)."""
    best, source, _ = run.best()
    run.info["incumbent"] = source
    return finish(run, best, out, proven=False)
