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
from dataclasses import replace
import time

import numpy as np
import pyomo.environ as pyo

from goodopt.formulations import milp as fm
from goodopt.formulations import pwl as fp
from goodopt.formulations.configs import enumerate_configs, fitness_from_sum
from goodopt.formulations.placement import place_configs

from .backend import solve_model
from .heuristics import canonicalize, greedy
from .result import CERTIFIED_GAP, Termination

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


def _check_kwargs(opts, deadline):
    """Solver arguments of a placement check: the time left, capped at ``placement_check_s``."""
    kw = _backend_kwargs(opts, deadline)
    kw["time_limit_s"] = min(kw["time_limit_s"] or np.inf, opts["placement_check_s"])
    return kw


def _config_highs_options(opts):
    """Native options for configuration-level models: presolve off unless the user says otherwise.

    Measured on the families: HiGHS's presolve made these models 10-20x slower
    (e.g. 0.38 s -> 0.02 s at 16 x 4 GPUs, 96 jobs) and never helped.
    """
    if opts["solver"] != "highs":
        return opts["highs_options"]
    return {"presolve": "off", **opts["highs_options"]}


def _expired(deadline, reserve=0.0):
    return deadline is not None and time.perf_counter() + reserve >= deadline


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
    warm = opts.get("warm_start")
    if warm is not None:
        candidates.append((canonicalize(problem, cs, warm)[0], "user"))

    def best_candidate():
        fits = [evaluator.fitness(a) if evaluator.violation(a) == 0 else -np.inf for a, _ in candidates]
        i = int(np.argmax(fits)) if fits else -1
        return (candidates[i][0], candidates[i][1], fits[i]) if fits and np.isfinite(fits[i]) else (None, None, -np.inf)

    out = None
    if formulation in ("auto", "config"):
        cfg_kw = _backend_kwargs(opts, deadline)
        cfg_kw["highs_options"] = _config_highs_options(opts)
        t0 = time.perf_counter()
        model = fm.build_model(problem, cs, level="config")
        build_s += time.perf_counter() - t0
        if opts["solver"] == "highs":
            # LP rounding: a strong incumbent for the configuration model
            lp = solve_model(model, relax=True, **cfg_kw)
            info["stages"].append(_stage("config-lp", lp))
            if lp.has_solution:
                alloc, _ = place_configs(problem, cs, fm.rounded_choice(model, cs, problem.n_jobs))
                candidates.append((greedy(problem, cs, start=alloc)[0], "lp-rounding"))
        start_alloc, _, _ = best_candidate()
        start = fm.warm_start_values(model, problem, cs, start_alloc) if start_alloc is not None else None
        cfg_kw["time_limit_s"] = _remaining(deadline)
        out = solve_model(model, warm_start=start, **cfg_kw)
        info["stages"].append(_stage("config", out))
        if hasattr(model, "t") and out.termination == Termination.OPTIMAL:
            out = _certify_epigraph(model, out, cfg_kw, deadline, info)
        if formulation == "auto" and opts["placement_cuts"] > 0:
            result = _placement_cut_loop(problem, cs, model, out, evaluator, opts, deadline, cfg_kw, info)
            if result is not None:
                out, placed = result
                if placed is not None:
                    return _finish(problem, placed, out, build_s, info,
                                   min(fit_bound, objective_to_fitness(problem, out.bound))
                                   if np.isfinite(out.bound) else fit_bound)
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
            small = _placement_pairs(problem, cs) <= opts["max_placement_pairs"]
            info["placement_pairs"] = _placement_pairs(problem, cs)
            if (failed and out.termination == Termination.OPTIMAL and formulation == "auto" and small
                    and not _expired(deadline)):
                # the heuristic could not place it: ask the placement model with z fixed
                t0 = time.perf_counter()
                check = fm.build_model(problem, cs, level="placement", symmetry=opts["symmetry"],
                                       fixed_choice=chosen)
                build_s += time.perf_counter() - t0
                chk = solve_model(check, **_check_kwargs(opts, deadline))
                info["stages"].append(_stage("placement-check", chk))
                if chk.has_solution:
                    placed = fm.placement_allocation(check, problem)
                    if evaluator.violation(placed) == 0:
                        info["proof"] = "configuration relaxation optimum placed by the placement model"
                        return _finish(problem, placed, out, build_s, info, fit_bound)
            candidates.append((greedy(problem, cs, start=alloc)[0], "relaxation+repair"))
        too_big = formulation == "auto" and _placement_pairs(problem, cs) > opts["max_placement_pairs"]
        if formulation == "config" or _expired(deadline) or too_big:
            if too_big:
                info["skipped"] = ("placement-level model skipped: "
                                   f"{_placement_pairs(problem, cs)} job-node pairs > max_placement_pairs")
            alloc, source, _ = best_candidate()
            info["incumbent"] = source
            if _expired(deadline) and formulation != "config":
                out = _as_time_limit(out)
            return _finish(problem, alloc, out, build_s, info, fit_bound,
                           proven=out.termination == Termination.OPTIMAL and formulation == "auto"
                           and not too_big and not info.get("placement_failed_jobs"))
    # placement level
    candidates.append((greedy(problem, cs)[0], "greedy"))
    start_alloc, source, start_fit = best_candidate()
    t0 = time.perf_counter()
    model = fm.build_model(problem, cs, level="placement", symmetry=opts["symmetry"])
    start = fm.warm_start_values(model, problem, cs, start_alloc) if start_alloc is not None else None
    build_s += time.perf_counter() - t0
    info["warm_start"] = source
    if _expired(deadline):
        info["stages"].append({"model": "placement", "status": "skipped: time limit reached before solving",
                               "compile_s": 0.0, "solve_s": 0.0, "nodes": None})
        return _finish(problem, start_alloc, _as_time_limit(out), build_s, info, fit_bound, proven=False)
    pout = solve_model(model, warm_start=start, **_backend_kwargs(opts, deadline))
    info["stages"].append(_stage("placement", pout))
    if hasattr(model, "t") and pout.termination == Termination.OPTIMAL:
        pout = _certify_epigraph(model, pout, _backend_kwargs(opts, deadline), deadline, info)
    if np.isfinite(pout.bound):
        fit_bound = min(fit_bound, objective_to_fitness(problem, pout.bound))
    if pout.has_solution:
        alloc = fm.placement_allocation(model, problem)
        if evaluator.violation(alloc) == 0 and evaluator.fitness(alloc) >= start_fit:
            return _finish(problem, alloc, pout, build_s, info, fit_bound)
    # the solver returned nothing better: report the best candidate with the solver's status
    return _finish(problem, start_alloc, pout, build_s, info, fit_bound,
                   proven=pout.termination == Termination.OPTIMAL)


def _certify_epigraph(model, pout, solve_kw, deadline, info, max_rounds: int = 5):
    """Re-check an "optimal" epigraph (p = +-inf) solution by asking for a strictly better one.

    HiGHS 1.15 returned a sub-optimal point as optimal (bound = incumbent) on
    small two-type max-min models, with and without a warm start (e.g. 1.0359
    against the brute-force 1.0409; regression examples in
    ``tests/test_solvers.py``). Each round raises the lower bound of ``t`` just
    above the claimed optimum and solves again without a warm start: an
    infeasible answer confirms the claim (to the certification gap), a
    solution replaces it.
    """
    for _ in range(max_rounds):
        if _expired(deadline):
            return _as_time_limit(pout)
        claimed = _epigraph_value(model)
        keep = [(v, v.value) for v in model.component_data_objects(pyo.Var)]
        old_lb = model.t.lb
        # ask for a solution better by more than the certification gap (solver tolerances are ~1e-7)
        model.t.setlb(claimed + max(CERTIFIED_GAP * abs(claimed), 1e-9))
        chk = solve_model(model, **{**solve_kw, "time_limit_s": _remaining(deadline)})
        model.t.setlb(old_lb)
        info["stages"].append(_stage("epigraph-certify", chk))
        if chk.has_solution and _epigraph_value(model) > claimed * (1 + 1e-9) + 1e-12:
            log.warning("the MILP solver's optimum %.9g was improved to %.9g by re-solving",
                        claimed, _epigraph_value(model))
            info["certify_improved"] = info.get("certify_improved", 0) + 1
            pout = replace(chk, objective=_epigraph_value(model))
            continue
        for v, val in keep:  # restore the certified solution
            v.set_value(val, skip_validation=True)
        if chk.termination == Termination.INFEASIBLE or chk.has_solution:
            return pout  # no solution better by more than the gap (beyond solver tolerances)
        return replace(pout, termination=Termination.TIME_LIMIT if chk.termination == Termination.TIME_LIMIT
                       else Termination.GAP_LIMIT)
    return pout


def _epigraph_value(model) -> float:
    """The true epigraph value of the loaded solution: the smallest right-hand side of (0a)/(0b).

    ``t`` itself may exceed it by the solver's feasibility tolerance.
    """
    t = float(model.t.value)
    worst = max(float(pyo.value(c.body)) - float(c.upper) for c in model.epigraph.values())
    return t - worst


def _placement_cut_loop(problem, cs, model, out, evaluator, opts, deadline, cfg_kw, info):
    """Re-solve the configuration level with placement cuts (C1) until its optimum places.

    Returns ``(outcome, allocation)`` with the certified allocation, ``(outcome, None)``
    when the loop stopped without one (the caller continues with the last
    outcome), or ``None`` when nothing was tried.
    """
    n_cuts = 0
    for _ in range(int(opts["placement_cuts"])):
        if out.termination != Termination.OPTIMAL or not out.has_solution or _expired(deadline):
            break
        chosen = fm.chosen_configs(model, cs, problem.n_jobs)
        alloc, failed = place_configs(problem, cs, chosen)
        if not failed:
            info["proof"] = f"configuration optimum placed exactly after {n_cuts} placement cut(s)"
            info["placement_cuts"] = n_cuts
            return out, alloc
        bad_types = sorted({int(cs.gpu_type[chosen[j]]) for j in failed if chosen[j] >= 0})
        unplaceable = []
        for g in bad_types:
            sub = np.where((chosen >= 0) & (cs.gpu_type[np.maximum(chosen, 0)] == g), chosen, -1)
            check = fm.build_model(problem, cs, level="placement", symmetry=opts["symmetry"], fixed_choice=sub)
            chk = solve_model(check, **_check_kwargs(opts, deadline))
            info["stages"].append(_stage(f"placement-check type {problem.type_names[g]}", chk))
            if chk.termination == Termination.INFEASIBLE:
                unplaceable.append(sub[sub >= 0])
            elif not chk.has_solution:
                info["placement_cuts"] = n_cuts
                return out, None  # undecided (time limit): leave it to the placement level
        if not unplaceable:
            # every type places on its own, so the whole choice places
            check = fm.build_model(problem, cs, level="placement", symmetry=opts["symmetry"], fixed_choice=chosen)
            chk = solve_model(check, **_backend_kwargs(opts, deadline))
            info["stages"].append(_stage("placement-check", chk))
            if chk.has_solution:
                placed = fm.placement_allocation(check, problem)
                if evaluator.violation(placed) == 0:
                    info["proof"] = f"configuration optimum placed by the placement model after {n_cuts} cut(s)"
                    info["placement_cuts"] = n_cuts
                    return out, placed
            info["placement_cuts"] = n_cuts
            return out, None
        for s in unplaceable:
            fm.exclude_choice(model, s)
            n_cuts += 1
        start = fm.warm_start_values(model, problem, cs, alloc) if evaluator.violation(alloc) == 0 else None
        out = solve_model(model, warm_start=start, **{**cfg_kw, "time_limit_s": _remaining(deadline)})
        info["stages"].append(_stage(f"config + {n_cuts} cut(s)", out))
        if hasattr(model, "t") and out.termination == Termination.OPTIMAL:
            out = _certify_epigraph(model, out, cfg_kw, deadline, info)
    info["placement_cuts"] = n_cuts
    return out, None


def _placement_pairs(problem, cs):
    """Number of (job, node) placement variables of the placement-level model."""
    nodes_per_type = np.bincount(problem.node_type, minlength=problem.n_gpu_types)
    pairs = 0
    for j in range(problem.n_jobs):
        types = np.unique(cs.gpu_type[cs.job_start[j]:cs.job_start[j + 1]])
        pairs += int(nodes_per_type[types].sum())
    return pairs


def _as_time_limit(out):
    """``out`` with the time-limit status; a stand-in outcome when no model was solved yet."""
    from dataclasses import replace

    from .backend import MilpOutcome

    if out is None:
        nan = float("nan")
        return MilpOutcome(Termination.TIME_LIMIT, False, nan, nan, float("inf"), None, 0.0, 0.0,
                           "time limit reached before solving", "none", "", 0, 0)
    return replace(out, termination=Termination.TIME_LIMIT)


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
    if not np.isfinite(fit_bound):
        fit_bound = float("nan")  # unknown
    return dict(
        alloc=alloc, status=status, bound=fit_bound, objective=out.objective, objective_bound=out.bound,
        build_s=build_s + sum(s.get("compile_s", 0.0) for s in stages),
        solve_s=sum(s.get("solve_s", 0.0) for s in stages),
        nodes=sum(s.get("nodes") or 0 for s in stages), solver=out.solver, solver_version=out.solver_version,
        raw_status=out.raw_status, n_variables=out.n_variables, n_constraints=out.n_constraints,
        n_configs=info["n_configs"], extra=info,
        message=f"{stages[-1]['model']} model: {out.raw_status}" if stages else out.raw_status,
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
    fit_bound = objective_to_fitness(problem, true_bound) if not (sense_min and true_bound <= 0) else np.nan
    chosen = fp.decode(model, problem, cs, classes)
    alloc, failed = place_configs(problem, cs, chosen)
    info["placement_failed_jobs"] = [problem.job_names[j] for j in failed]
    alloc, _, _ = greedy(problem, cs, start=alloc)
    return _finish(problem, alloc, out, build_s, info, fit_bound, proven=False)
