"""The ``milp`` method: the stages of :mod:`goodopt.solvers.milp` in order, with a second opinion when the
answer is judged ``numerical``."""

from __future__ import annotations

import logging
from typing import cast

import numpy as np
from goodopt.formulations.scaled_objective import reference_fitness

from goodopt.evaluator import Evaluator
from goodopt.problem import AllocationProblem

from ..config_model import ArrayModel
from ..heuristics import canonicalize, greedy
from ..options import MilpOptions
from ..result import MethodOutcome, Termination
from .certify import lp_certificate
from .export import write_for_run
from .levels import config_level, lp_route, placement_level
from .models import config_model
from .reduce import drop_configs, lp_config_bounds
from .reference import solve_reference
from .run import EPIGRAPH_MIP_FEASIBILITY, SCALED_MIP_FEASIBILITY, MilpRun, expired
from .verdict import finish, nothing_left, nothing_to_choose

log = logging.getLogger(__name__)


def _mip_tolerance(problem: AllocationProblem, opts: MilpOptions) -> MilpOptions:
    """Options with a MIP feasibility tolerance tighter than HiGHS's default 1e-6, unless the user sets one.

    HiGHS prunes nodes within that tolerance of the incumbent, so its bound
    may lie below the optimum by it (:meth:`MilpRun.pruning_tolerance` adds
    it back). At the default 1e-6, HiGHS 1.16 let the epigraph variable
    exceed the smallest speedup by 1e-6 (tiny_problem seed 259, p = -inf:
    t = 0.9107305 for a re-scored 0.9107295), so the certified bound sat
    1.2e-6 above an optimum that brute force confirms; at 1e-9 the same model
    is certified. For finite p the model's units resolve a fitness gap of
    about ``1e-7 W`` (:mod:`goodopt.formulations.scaled_objective`): at 1e-6 a
    one-job round could not be certified within 1e-6 once the tolerance is
    added back; at 1e-7 it is.
    """
    if opts.solver != "highs" or "mip_feasibility_tolerance" in opts.highs_options:
        return opts
    tol = SCALED_MIP_FEASIBILITY if np.isfinite(problem.p) else EPIGRAPH_MIP_FEASIBILITY
    return opts.replace(highs_options={"mip_feasibility_tolerance": tol, **opts.highs_options})


def solve_milp(problem: AllocationProblem, evaluator: Evaluator, opts: MilpOptions, t_start: float) -> MethodOutcome:
    """Run the exact method; a ``numerical`` verdict gets a second opinion with HiGHS's presolve on.

    HiGHS 1.15 with presolve off (this method's default for configuration
    models) returned a max-min optimum below a known allocation and then
    called a floor under that allocation infeasible (hetero-tiny seed 319,
    p = -inf); with presolve on it solved the same model correctly. The
    second run is judged like the first, and its answer is kept only if it
    is not ``numerical`` itself.
    """
    opts = _mip_tolerance(problem, opts)
    out = _solve_milp(problem, evaluator, opts, t_start)
    if (out.status == Termination.NUMERICAL and opts.solver == "highs"
            and "presolve" not in opts.highs_options and not _expired_from(opts, t_start)):
        log.warning("milp: %s; solving again with HiGHS's presolve on", out.message)
        again = _solve_milp(problem, evaluator,
                            opts.replace(highs_options={**opts.highs_options, "presolve": "on"}), t_start)
        if again.status != Termination.NUMERICAL:
            again.extra["second_opinion"] = f"first run: {out.message}"
            return again
    return out


def _expired_from(opts: MilpOptions, t_start: float) -> bool:
    return expired(None if opts.time_limit_s is None else t_start + opts.time_limit_s)


def _solve_milp(problem: AllocationProblem, evaluator: Evaluator, opts: MilpOptions,
                t_start: float) -> MethodOutcome:
    run = MilpRun(problem, evaluator, opts, t_start)
    out = _stages(run)
    if opts.write_model:
        write_for_run(run, out)
    return restricted(out) if opts.configs != "all" else out


def restricted(out: MethodOutcome) -> MethodOutcome:
    """The outcome of a solve over a restricted configuration set, as an answer to the whole problem: its
    bound and status hold for the restricted problem only, so they move to ``extra`` (``restricted_status``,
    ``restricted_bound``) and the answer is ``completed`` with no bound on the whole problem."""
    from dataclasses import replace

    extra = {**out.extra, "restricted_status": str(out.status), "restricted_bound": out.bound}
    status = Termination.COMPLETED if out.status in (Termination.OPTIMAL, Termination.GAP_LIMIT) else out.status
    return replace(out, status=status, bound=float("nan"), objective_bound=float("nan"), extra=extra,
                   message=f"over Sia's configuration set: {out.message}")


def _stages(run: MilpRun) -> MethodOutcome:
    problem, opts = run.pr, run.opts
    if opts.formulation == "reference":
        return solve_reference(run)
    if getattr(opts, "warm_start", None) is not None:
        run.add_candidate(canonicalize(problem, run.cs, opts.warm_start)[0], "user")
    route = lp_route(run)
    reference = _safe_reference(run) if route is not None else None
    bounds = None
    if reference is not None:  # greedy (1-3 s at 2048 GPUs) only when the LP gives no candidate
        run.scale_objective(reference)
        every_type = route == "patterns"
        lp_model = config_model(run, placement=range(problem.n_gpu_types) if every_type else ())
        with run.leaving_time_for_a_start():
            certified = lp_certificate(run, lp_model, "config + pattern rows (every type)" if every_type
                                       else "config", open_all=not every_type)
        if certified is not None:
            return finish(run, certified[1], certified[0])
        bounds = lp_config_bounds(run, cast(ArrayModel, lp_model))
    # greedy only without a candidate, or without the LP's (whose dives beat it on every family) while time is left.
    # Without any candidate it runs to its end whatever the time limit (0.75 s at 2048 GPUs), as the floor of the
    # answer; otherwise it stops at the deadline with what it has built
    if run.best()[0] is None:
        run.add_candidate(greedy(problem, run.cs)[0], "greedy")
    elif bounds is None and not run.expired():
        run.add_candidate(greedy(problem, run.cs, deadline=run.deadline)[0], "greedy")
    drop_configs(run, bounds)
    run.scale_objective()
    if nothing_left(run):
        return nothing_to_choose(run)
    if opts.formulation in ("auto", "config"):
        fields = config_level(run)
        if fields is not None:
            return fields
    return placement_level(run)


def _safe_reference(run: MilpRun) -> float | None:
    """The objective's reference before greedy's start (the user's start, else every job at its best: an upper
    bound for p <= 0), or None when it is not a finite positive fitness (an idle value of 0, say)."""
    with np.errstate(all="ignore"):
        r = reference_fitness(run.pr, run.cs, run.best()[2] if run.candidates else None)
    return float(r) if np.isfinite(r) and r > 0 else None
