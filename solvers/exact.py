"""The ``milp`` and ``milp-pwl`` methods.

``milp`` (``formulation="auto"``, the default) first solves the
configuration-level relaxation (aggregate capacity per GPU type), then places
its configurations onto nodes. If the placement succeeds, the relaxation's
optimum is attained by a feasible allocation and is therefore proven optimal
for the placement problem. If not, the placement-level model is solved,
warm-started from the better of the repaired relaxation solution and greedy,
with the relaxation's bound kept as a bound. ``formulation="placement"``
solves the placement-level model directly; ``formulation="config"`` stops after
the relaxation and its (repaired) placement, reporting the gap to its bound.

``milp-pwl`` solves the piecewise-linear model of
:mod:`goodopt.formulations.pwl`, places and repairs its configurations, and
re-scores the allocation with the evaluator. Its bound adds the total
interpolation error to the model's bound, so it is valid for the true
problem.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from goodopt.formulations import milp as fm
from goodopt.formulations import pwl as fp
from goodopt.formulations.configs import enumerate_configs, fitness_from_sum
from goodopt.formulations.placement import place_configs

from .backend import solve_model
from .heuristics import canonicalize, greedy
from .result import Termination

log = logging.getLogger(__name__)


def objective_to_fitness(problem, value: float) -> float:
    """Fitness corresponding to a model objective value (or bound)."""
    if not np.isfinite(value):
        return float("nan")
    if not np.isfinite(problem.p):
        return float(value)
    return fitness_from_sum(value, float(problem.weights.sum()), problem.p)


def _remaining(deadline):
    return None if deadline is None else max(deadline - time.perf_counter(), 1e-3)


def _backend_kwargs(opts, deadline):
    return dict(solver=opts["solver"], time_limit_s=_remaining(deadline), mip_rel_gap=opts["mip_rel_gap"],
                threads=opts["threads"], highs_options=opts["highs_options"])


def solve_milp(problem, evaluator, opts, t_start):
    """Run the exact method. Returns a dict of result fields for :func:`goodopt.solvers.api.solve`."""
    deadline = None if opts["time_limit_s"] is None else t_start + opts["time_limit_s"]
    t0 = time.perf_counter()
    cs = enumerate_configs(problem)
    build_s = time.perf_counter() - t0
    info = {"n_configs": cs.n_configs, "stages": []}
    formulation = opts["formulation"]
    fit_bound = np.inf
    candidates = []  # (alloc, source)
    last = None
    if formulation in ("auto", "config"):
        t0 = time.perf_counter()
        model = fm.build_model(problem, cs, level="config")
        build_s += time.perf_counter() - t0
        out = solve_model(model, **_backend_kwargs(opts, deadline))
        last = out
        info["stages"].append(_stage("config", out))
        if out.termination == Termination.INFEASIBLE:
            return _finish(problem, None, out, build_s, info, np.nan)
        if np.isfinite(out.bound):
            fit_bound = min(fit_bound, objective_to_fitness(problem, out.bound))
        if out.has_solution:
            chosen = fm.chosen_configs(model, cs, problem.n_jobs)
            alloc, failed = place_configs(problem, cs, chosen)
            info["placement_failed_jobs"] = [problem.job_names[j] for j in failed]
            if not failed and out.termination == Termination.OPTIMAL:
                info["proof"] = "configuration relaxation optimum placed exactly"
                return _finish(problem, alloc, out, build_s, info, fit_bound)
            if failed and out.termination == Termination.OPTIMAL and formulation == "auto":
                # the heuristic could not place it: ask the placement model with z fixed
                t0 = time.perf_counter()
                check = fm.build_model(problem, cs, level="placement", symmetry=opts["symmetry"],
                                       fixed_choice=chosen)
                build_s += time.perf_counter() - t0
                kw = _backend_kwargs(opts, deadline)
                kw["time_limit_s"] = min(kw["time_limit_s"] or np.inf, opts["placement_check_s"])
                chk = solve_model(check, **kw)
                info["stages"].append(_stage("placement-check", chk))
                if chk.has_solution:
                    placed = fm.placement_allocation(check, problem)
                    if evaluator.violation(placed) == 0:
                        info["proof"] = "configuration relaxation optimum placed by the placement model"
                        info["stages"][-1]["status"] = str(out.termination)
                        return _finish(problem, placed, out, build_s, info, fit_bound)
            repaired, _, _ = greedy(problem, cs, start=alloc)
            candidates.append((repaired, "relaxation+repair"))
            if formulation == "config":
                return _finish(problem, repaired, out, build_s, info, fit_bound, proven=False)
        elif formulation == "config":
            return _finish(problem, None, out, build_s, info, fit_bound)
    # placement level
    warm = opts.get("warm_start")
    if warm is not None:
        candidates.append((canonicalize(problem, cs, warm)[0], "user"))
    g_alloc, _, _ = greedy(problem, cs)
    candidates.append((g_alloc, "greedy"))
    fits = [evaluator.fitness(a) if evaluator.violation(a) == 0 else -np.inf for a, _ in candidates]
    best = int(np.argmax(fits))
    t0 = time.perf_counter()
    model = fm.build_model(problem, cs, level="placement", symmetry=opts["symmetry"])
    start = fm.warm_start_values(model, problem, cs, candidates[best][0])
    build_s += time.perf_counter() - t0
    info["warm_start"] = candidates[best][1]
    out = solve_model(model, warm_start=start, **_backend_kwargs(opts, deadline))
    info["stages"].append(_stage("placement", out))
    if np.isfinite(out.bound):
        fit_bound = min(fit_bound, objective_to_fitness(problem, out.bound))
    if out.has_solution:
        alloc = fm.placement_allocation(model, problem)
        if evaluator.violation(alloc) == 0 and evaluator.fitness(alloc) >= fits[best]:
            return _finish(problem, alloc, out, build_s, info, fit_bound)
    # the solver returned nothing better: report the best candidate with the solver's status
    alloc = candidates[best][0] if np.isfinite(fits[best]) else None
    return _finish(problem, alloc, out, build_s, info, fit_bound,
                   proven=out.termination == Termination.OPTIMAL)


def _stage(name, out):
    return {"model": name, "status": str(out.termination), "raw_status": out.raw_status,
            "objective": out.objective, "bound": out.bound, "mip_gap": out.mip_gap, "nodes": out.nodes,
            "solve_s": out.solve_s, "compile_s": out.compile_s, "n_variables": out.n_variables,
            "n_constraints": out.n_constraints}


def _finish(problem, alloc, out, build_s, info, fit_bound, proven=True):
    status = out.termination
    if not proven and status in (Termination.OPTIMAL, Termination.GAP_LIMIT):
        status = Termination.COMPLETED
    stages = info["stages"]
    return dict(
        alloc=alloc, status=status, bound=fit_bound, objective=out.objective, objective_bound=out.bound,
        build_s=build_s + sum(s["compile_s"] for s in stages), solve_s=sum(s["solve_s"] for s in stages),
        nodes=sum(s["nodes"] or 0 for s in stages), solver=out.solver, solver_version=out.solver_version,
        raw_status=out.raw_status, n_variables=out.n_variables, n_constraints=out.n_constraints,
        n_configs=info["n_configs"], extra=info,
        message=f"{stages[-1]['model']}-level model: {out.raw_status}",
    )


def solve_pwl(problem, evaluator, opts, t_start):
    """Run the piecewise-linear method. Returns result fields like :func:`solve_milp`."""
    deadline = None if opts["time_limit_s"] is None else t_start + opts["time_limit_s"]
    t0 = time.perf_counter()
    cs = enumerate_configs(problem)
    classes = fp.pwl_classes(problem, cs, opts["breakpoints"], opts["spacing"])
    model = fp.build_model(problem, cs, classes)
    build_s = time.perf_counter() - t0
    out = solve_model(model, **_backend_kwargs(opts, deadline))
    per_job = np.zeros(problem.n_jobs)
    for cl in classes:
        per_job[cl.job] = max(per_job[cl.job], cl.error)
    total_err = float(per_job.sum())
    info = {"n_configs": cs.n_configs, "n_classes": len(classes), "stages": [_stage("pwl", out)],
            "pwl_error_bound": float(per_job.max(initial=0.0)), "pwl_error_bound_total": total_err,
            "breakpoints": opts["breakpoints"], "spacing": opts["spacing"]}
    if problem.p == -np.inf:
        info["pwl_error_bound_total"] = info["pwl_error_bound"]  # a min moves by at most the largest error
    if not out.has_solution:
        return _finish(problem, None, out, build_s, info, np.nan)
    # valid bound for the true problem: the model's bound loosened by the interpolation error
    sense_min = problem.p < 0 and np.isfinite(problem.p)
    slack = info["pwl_error_bound_total"]
    true_bound = out.bound - slack if sense_min else out.bound + slack
    fit_bound = objective_to_fitness(problem, true_bound) if not (sense_min and true_bound <= 0) else np.inf
    chosen = fp.decode(model, problem, cs, classes)
    alloc, failed = place_configs(problem, cs, chosen)
    info["placement_failed_jobs"] = [problem.job_names[j] for j in failed]
    alloc, _, _ = greedy(problem, cs, start=alloc)
    return _finish(problem, alloc, out, build_s, info, fit_bound, proven=False)
