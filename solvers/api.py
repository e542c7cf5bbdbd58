"""``goodopt.solve``: one entry point for every allocation method.

Options are validated once here. Common names: ``time_limit_s``,
``mip_rel_gap``, ``threads``, ``seed``; method-specific ones are listed in
:data:`METHOD_OPTIONS` with their defaults. ``highs_options`` passes native
HiGHS options through; ``solver`` names another pyomo MILP solver.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from goodopt.errors import ValidationError
from goodopt.formulations.configs import enumerate_configs
from goodopt.gavel import POLICY_NAMES

from .result import SolveResult, SolverStats, Termination

log = logging.getLogger(__name__)

_COMMON = {"time_limit_s": None, "seed": None, "threads": None}
_MILP = {"mip_rel_gap": 1e-6, "solver": "highs", "highs_options": {}}

#: Options each method accepts, with their defaults.
METHOD_OPTIONS: dict[str, dict] = {
    "milp": {**_COMMON, **_MILP, "formulation": "auto", "symmetry": "order", "warm_start": None,
             "placement_check_s": 5.0, "max_placement_pairs": 100_000, "placement_cuts": 10,
             "model_route": "auto", "lp_rounding": False, "node_limit": None, "config_placement": "patterns"},
    "milp-pwl": {**_COMMON, **_MILP, "breakpoints": 8, "spacing": "adaptive"},
    "ga": {**_COMMON, "pop_size": 100, "n_gen": 100, "mutation_rate": None, "crossover_prob": 0.9,
           "warm_start": None, "initial_population": None, "engine": "pymoo",
           "stall_generations": None},
    "nsga2": {**_COMMON, "pop_size": 100, "n_gen": 100, "mutation_rate": None, "crossover_prob": 0.9,
              "warm_start": None, "initial_population": None},
    "greedy": {**_COMMON, "start": "empty"},
    "equal-share": dict(_COMMON),
    "brute-force": {**_COMMON, "max_allocations": 2_000_000},
    "gavel": {**_COMMON, "policy": "max_min_fairness", "n_gpus": "min_gpus", "policy_options": {}},
}
METHODS = tuple(METHOD_OPTIONS)
_CHOICES = {"formulation": ("auto", "placement", "config"), "symmetry": ("order", "none"),
            "spacing": ("adaptive", "uniform"), "start": ("empty", "current"),
            "engine": ("pymoo", "numpy"), "policy": POLICY_NAMES, "model_route": ("auto", "arrays", "pyomo"),
            "lp_rounding": (True, False), "config_placement": ("patterns", "cuts")}


def _check_options(method: str, options) -> dict:
    if method not in METHOD_OPTIONS:
        raise ValidationError("method", f"unknown method {method!r}", f"choose one of {', '.join(METHODS)}")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise ValidationError("options", f"must be a dict, got {type(options).__name__}")
    allowed = METHOD_OPTIONS[method]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValidationError(f"options.{unknown[0]}", f"not an option of method {method!r}",
                              f"valid options: {', '.join(sorted(allowed))}")
    opts = {**allowed, **options}
    t = opts["time_limit_s"]
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0 or not np.isfinite(t)):
        raise ValidationError("options.time_limit_s", f"must be a number > 0 seconds, got {t!r}",
                              "omit it for no limit")
    for name in ("seed", "threads", "pop_size", "n_gen", "max_allocations", "max_placement_pairs", "placement_cuts"):
        v = opts.get(name)
        if v is None and name in ("seed", "threads"):
            continue
        if name in opts and (isinstance(v, bool) or not isinstance(v, (int, np.integer))
                             or v < (0 if name == "seed" else 1)):
            raise ValidationError(f"options.{name}", f"must be a whole number >= {0 if name == 'seed' else 1}, "
                                  f"got {v!r}")
    nl = opts.get("node_limit")
    if nl is not None and (isinstance(nl, bool) or not isinstance(nl, (int, np.integer)) or nl < 1):
        raise ValidationError("options.node_limit", f"must be a whole number >= 1, got {nl!r}",
                              "omit it for no limit on branch-and-bound nodes")
    if opts.get("model_route") == "arrays" and opts.get("solver") != "highs":
        raise ValidationError("options.model_route", "the array route feeds HiGHS only",
                              "use model_route='pyomo' (or 'auto') with another solver")
    sg = opts.get("stall_generations")
    if sg is not None and (isinstance(sg, bool) or not isinstance(sg, (int, np.integer)) or sg < 1):
        raise ValidationError("options.stall_generations", f"must be a whole number >= 1, got {sg!r}",
                              "omit it to always run n_gen generations")
    if sg is not None and opts.get("engine") != "numpy":
        raise ValidationError("options.stall_generations", "is supported by the numpy engine only",
                              "add engine='numpy' or drop stall_generations")
    pc = opts.get("placement_check_s")
    if "placement_check_s" in opts and (isinstance(pc, bool) or not isinstance(pc, (int, float)) or not pc > 0):
        raise ValidationError("options.placement_check_s", f"must be a number > 0 seconds, got {pc!r}")
    if "breakpoints" in opts:
        b = opts["breakpoints"]
        if isinstance(b, (list, tuple)):
            if not b or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in b):
                raise ValidationError("options.breakpoints", f"a list must hold GPU counts >= 1, got {b!r}")
        elif isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 2:
            raise ValidationError("options.breakpoints", f"must be an integer >= 2 or a list of GPU counts, got {b!r}")
    if "mip_rel_gap" in opts:
        g = opts["mip_rel_gap"]
        if isinstance(g, bool) or not isinstance(g, (int, float)) or not 0 <= g < 1:
            raise ValidationError("options.mip_rel_gap", f"must be in [0, 1), got {g!r}")
    if "highs_options" in opts and not isinstance(opts["highs_options"], dict):
        raise ValidationError("options.highs_options", "must be a dict of native HiGHS options")
    for name, choices in _CHOICES.items():
        if name in opts and opts[name] not in choices:
            raise ValidationError(f"options.{name}", f"must be one of {choices}, got {opts[name]!r}")
    if method in ("ga", "nsga2"):
        if opts["seed"] is None:
            raise ValidationError("options.seed", f"method {method!r} is randomised and needs a seed",
                                  "pass options={'seed': 0} (same seed, same result)")
        r = opts["mutation_rate"]
        if r is not None and (isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 <= r <= 1):
            raise ValidationError("options.mutation_rate", f"must be in [0, 1], got {r!r}")
    return opts


#: Methods whose solution may be named as another method's warm start.
_WARM_BY_NAME = {"milp": ("greedy", "ga"), "ga": ("greedy", "milp"), "nsga2": ("greedy", "milp")}


def _warm_starts(problem, evaluator, spec, opts, method):
    """Allocations named by a ``warm_start`` option. Shapes: -> list of (J, N)."""
    if spec is None:
        return []
    specs = spec if isinstance(spec, list) else [spec]
    out = []
    for s in specs:
        if isinstance(s, str):
            names = _WARM_BY_NAME[method]
            if s not in names:
                raise ValidationError("options.warm_start", f"unknown warm start {s!r} for method {method!r}",
                                      f"use one of {names}, an allocation (J, N) or a list of them")
            sub = {"time_limit_s": opts["time_limit_s"]} if s == "milp" else {}
            if s == "ga":
                sub = {"seed": opts["seed"] if opts["seed"] is not None else 0}
            res = solve(problem, method=s, options=sub)
            if res.has_solution:
                out.append(res.x)
        else:
            a = problem.check_allocation(s)
            if a.ndim != 2:
                raise ValidationError("options.warm_start", f"an allocation must have shape (J, N), got {a.shape}")
            if evaluator.violation(a) != 0:
                raise ValidationError("options.warm_start", "the warm-start allocation is infeasible: "
                                      + "; ".join(evaluator.violations(a)[:3]), "repair it first")
            out.append(np.asarray(a, dtype=np.int64))
    return out


def solve(problem, method: str = "milp", options: dict | None = None) -> SolveResult:
    """Solve one allocation problem with ``method`` and re-score the answer.

    Methods: ``milp`` (exact, certified), ``milp-pwl``, ``ga``, ``nsga2``,
    ``greedy``, ``equal-share``, ``brute-force``, ``gavel`` (a Gavel policy's
    time fractions, realised for one round; the fractions are in
    ``extra["fractions"]``). See :data:`METHOD_OPTIONS`.
    The returned :class:`SolveResult` always carries the evaluator's fitness of
    the allocation, the termination status, and the bound and gap where the
    method gives one.
    """
    from goodopt.problem import AllocationProblem

    if not isinstance(problem, AllocationProblem):
        if hasattr(problem, "problem"):
            problem = problem.problem()
        else:
            raise ValidationError("problem", f"must be an AllocationProblem or a Scenario, got {type(problem).__name__}")
    opts = _check_options(method, options)
    t_start = time.perf_counter()
    ev = problem.evaluator()
    if method == "milp":
        from .exact import solve_milp

        starts = _warm_starts(problem, ev, opts["warm_start"], opts, method)
        opts["warm_start"] = max(starts, key=ev.fitness) if starts else None
        fields = solve_milp(problem, ev, opts, t_start)
    elif method == "milp-pwl":
        from .exact import solve_pwl

        fields = solve_pwl(problem, ev, opts, t_start)
    elif method == "gavel":
        fields = _solve_gavel_round(problem, opts)
    elif method in ("ga", "nsga2"):
        from .genetic import solve_ga

        seeds = _warm_starts(problem, ev, opts["warm_start"], opts, method)
        fields = solve_ga(problem, ev, opts, t_start, seeds=seeds, two_objectives=method == "nsga2")
    else:
        fields = _solve_simple(problem, ev, method, opts)
    return _result(problem, ev, method, opts, fields, t_start)


def _solve_gavel_round(problem, opts):
    """Gavel's time fractions at fixed GPU counts, realised for one round (fresh history)."""
    from goodopt.gavel import matrix_from_problem

    from .gavel import solve_gavel
    from .rounds import RoundMechanism, current_types, place_round

    t0 = time.perf_counter()
    n = opts["n_gpus"]
    if n == "min_gpus":
        k = problem.min_gpus
    elif n == "base":
        k = problem.base_gpus
    elif isinstance(n, int) and not isinstance(n, bool) and n >= 1:
        k = np.full(problem.n_jobs, n)
    else:
        raise ValidationError("options.n_gpus", f"must be 'min_gpus', 'base' or a whole number >= 1, got {n!r}")
    mx = matrix_from_problem(problem, k)
    po = dict(opts["policy_options"] or {})
    if opts["time_limit_s"] is not None:
        po.setdefault("time_limit_s", opts["time_limit_s"])
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    fr = solve_gavel(mx, opts["policy"], po)
    cur = problem.current
    assigned = RoundMechanism(problem.type_names).assign(problem.job_names, fr.x, mx.scale_factor, mx.capacity,
                                                         current_types(problem.node_type, cur))
    alloc, failed = place_round(problem.node_type, problem.node_capacity, assigned, mx.scale_factor, cur)
    extra = {"fractions": fr.to_dict(mx)["fractions"], "policy": fr.policy, "policy_objective": fr.fun,
             "lp_stages": fr.stages, "unplaced_jobs": [problem.job_names[j] for j in failed]}
    return dict(alloc=alloc, status=Termination.COMPLETED if fr.success else fr.status, bound=np.nan,
                objective=fr.fun, objective_bound=np.nan, build_s=build_s, solve_s=time.perf_counter() - t1,
                nodes=None, solver="gavel", solver_version="", raw_status=str(fr.status), n_variables=None,
                n_constraints=None, n_configs=None, extra=extra,
                message=f"{fr.policy}: {fr.message} = {fr.fun:.6g}")


def _solve_simple(problem, ev, method, opts):
    from .exhaustive import brute_force
    from .heuristics import equal_share, greedy

    t0 = time.perf_counter()
    cs = enumerate_configs(problem) if method != "brute-force" else None
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    extra = {}
    bound = np.nan
    if method == "greedy":
        start = problem.current if opts["start"] == "current" else None
        if start is not None and ev.violation(start) != 0:
            raise ValidationError("options.start", "the current allocation is infeasible",
                                  "use start='empty'")
        alloc, _, steps = greedy(problem, cs, start=start)
        extra["steps"] = steps
        status = Termination.COMPLETED
    elif method == "equal-share":
        alloc, _ = equal_share(problem, cs)
        status = Termination.COMPLETED
    else:
        alloc, fit, n = brute_force(problem, ev, max_allocations=opts["max_allocations"])
        extra["n_allocations"] = n
        status = Termination.OPTIMAL if alloc is not None else Termination.INFEASIBLE
        bound = fit if alloc is not None else np.nan
    return dict(alloc=alloc, status=status, bound=bound, objective=np.nan, objective_bound=np.nan,
                build_s=build_s, solve_s=time.perf_counter() - t1, nodes=None, solver=method,
                solver_version="", raw_status=str(status), n_variables=None, n_constraints=None,
                n_configs=None if cs is None else cs.n_configs, extra=extra, message="")


def _result(problem, ev, method, opts, f, t_start) -> SolveResult:
    alloc = f["alloc"]
    has = alloc is not None
    x = np.asarray(alloc, dtype=np.int64) if has else np.zeros((problem.n_jobs, problem.n_nodes), np.int64)
    n_before = ev.n_evaluations
    fitness = ev.fitness(x) if has else float("nan")
    speedups = ev.speedups(x) if has else None
    violations = ev.violations(x) if has else []
    stats = SolverStats(
        build_s=f["build_s"], solve_s=f["solve_s"], total_s=time.perf_counter() - t_start,
        n_evaluations=n_before, nodes=f["nodes"], solver=f["solver"], solver_version=f["solver_version"],
        raw_status=f["raw_status"], n_variables=f["n_variables"], n_constraints=f["n_constraints"],
        n_configs=f["n_configs"],
    )
    bound = f["bound"]
    if has and np.isfinite(bound) and fitness > bound * (1 + 1e-6) + 1e-9:
        log.warning("%s: re-scored fitness %.9g exceeds the reported bound %.9g", method, fitness, bound)
    status = f["status"]
    message = f["message"] or str(status)
    if not has:
        message = f"no allocation returned ({status}); {message}"
    if violations:
        message = f"returned allocation is infeasible: {violations[0]}"
    res = SolveResult(
        method=method, x=x, fitness=fitness, status=status, has_solution=has, message=message, bound=bound,
        objective=f["objective"], objective_bound=f["objective_bound"], feasible=not violations,
        violations=violations, speedups=speedups, stats=stats,
        options={k: v for k, v in opts.items() if not isinstance(v, np.ndarray)}, seed=opts.get("seed"),
        extra=f["extra"],
    )
    log.info("%s", res)
    return res
