"""The ``gavel`` method: one of Gavel's time-fraction policies on an allocation problem's jobs at fixed GPU
counts (:mod:`goodopt.solvers.gavel`), realised for one round by the round mechanism (fresh history)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

from goodopt.errors import ValidationError
from goodopt.gavel import PACKED, check_entities, entity_fields, matrix_from_problem, pairs_from_problem
from goodopt.gavel.round_mechanism import RoundMechanism, current_types, place_round
from goodopt.problem import AllocationProblem
from goodopt.validation import suggest

from ..options import GavelOptions
from ..result import MethodOutcome, Termination
from .policies import solve_gavel


def _entity_groups(problem: AllocationProblem, entities: Mapping[str, Any]) -> dict[str, Any]:
    """The matrix's entity fields: the jobs' ``entity`` names weighted by ``entities`` (an entity the option
    does not name has weight 1 and fairness inside); ``{}`` when no job names one."""
    named = problem.entities if problem.entities and any(problem.entities) else ()
    if not named:
        if entities:
            raise ValidationError("options.entities", "no job names its entity", "give jobs an entity field")
        return {}
    unnamed = [problem.job_names[j] for j, e in enumerate(named) if not e]
    if unnamed:
        raise ValidationError(f"jobs.{unnamed[0]}.entity", "is missing while other jobs name theirs",
                              "give every job an entity (hierarchical policies weigh entities, not jobs)")
    spec = {**{e: {} for e in named}, **dict(entities)}
    return entity_fields(check_entities(spec), [SimpleNamespace(entity=e) for e in named])


def _job_work(problem: AllocationProblem, opts: GavelOptions) -> dict[str, Any]:
    """The matrix's ``remaining_steps`` and ``elapsed_s`` from the options (job -> number), each job named."""
    out: dict[str, Any] = {}
    defaults: tuple[tuple[str, float | None], ...] = (("remaining_steps", None), ("elapsed_s", 0.0))
    for name, default in defaults:
        given = dict(getattr(opts, name) or {})
        unknown = sorted(set(given) - set(problem.job_names))
        if unknown:
            raise ValidationError(f"options.{name}.{unknown[0]}", "is not a job of the scenario",
                                  f"{suggest(unknown[0], problem.job_names)}name jobs of the scenario")
        if not given:
            continue
        missing = [j for j in problem.job_names if j not in given]
        if missing and default is None:
            raise ValidationError(f"options.{name}", f"gives no value for job {missing[0]!r}",
                                  "give every job of the scenario its remaining work")
        out[name] = np.array([float(given.get(j, 0.0 if default is None else default)) for j in problem.job_names])
    return out


def solve_gavel_round(problem: AllocationProblem, opts: GavelOptions) -> MethodOutcome:
    """Gavel's time fractions at fixed GPU counts, realised for one round (fresh history)."""
    t0 = time.perf_counter()
    n = opts.n_gpus
    k = {"min_gpus": problem.min_gpus, "base": problem.base_gpus}.get(n) if isinstance(n, str) else None
    if k is None:
        k = np.full(problem.n_jobs, n)
    mx = matrix_from_problem(problem, k)
    groups = _entity_groups(problem, getattr(opts, "entities", None) or {})
    if groups:
        mx = dataclasses.replace(mx, **groups)
    mx = dataclasses.replace(mx, **_job_work(problem, opts))
    if opts.policy in PACKED:
        mx = dataclasses.replace(mx, **pairs_from_problem(problem, mx))
    po = dict(opts.policy_options or {})
    if opts.time_limit_s is not None:
        po.setdefault("time_limit_s", opts.time_limit_s)
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    fr = solve_gavel(mx, opts.policy, po)
    cur = problem.current
    assigned = RoundMechanism(problem.type_names).assign(problem.job_names, fr.x, mx.scale_factor, mx.capacity,
                                                         current_types(problem.node_type, cur))
    alloc, failed = place_round(problem.node_type, problem.node_capacity, assigned, mx.scale_factor, cur)
    extra = {"fractions": fr.to_dict(mx)["fractions"], "policy": fr.policy, "policy_objective": fr.fun,
             "lp_stages": fr.stages, "unplaced_jobs": [problem.job_names[j] for j in failed]}
    # two jobs on one GPU is no allocation of this model: reported, not realised
    if mx.pairs is not None and fr.pair_x is not None:
        extra["pair_fractions"] = {f"{mx.job_names[a]}+{mx.job_names[b]}": {
            t: float(v) for t, v in zip(mx.type_names, row) if v > 1e-9}
            for (a, b), row in zip(mx.pairs, fr.pair_x) if row.sum() > 1e-9}
    return MethodOutcome(alloc=alloc, status=Termination.COMPLETED if fr.success else fr.status, bound=np.nan,
                objective=fr.fun, objective_bound=np.nan, build_s=build_s, solve_s=time.perf_counter() - t1,
                nodes=None, solver="gavel", solver_version="", raw_status=str(fr.status), n_variables=None,
                n_constraints=None, n_configs=None, extra=extra,
                message=f"{fr.policy}: {fr.message} = {fr.fun:.6g}")
