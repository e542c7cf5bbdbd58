"""How an exact solve ends: its status judged from the evaluator's re-score and the bound (:func:`judge`), the
result fields (:func:`finish`)."""

from __future__ import annotations

import logging

import numpy as np

from goodopt.arrays import Array

from ..mip_solvers.outcome import MilpOutcome
from ..result import CERTIFIED_GAP, MethodOutcome, Termination
from .run import MilpRun, stand_in

log = logging.getLogger(__name__)


SOLVER_CLAIMS = (Termination.OPTIMAL, Termination.GAP_LIMIT)


def judge(fitness: float, bound: float, claimed: Termination, proven: bool,
          mip_rel_gap: float) -> tuple[Termination, str]:
    """The status of an answer, from its re-scored fitness and bound — never from the solver's claim alone.

    ``claimed`` is the last solver status; ``proven`` whether the answer is
    the model's own optimum (else at most ``completed``). Returns
    ``(status, message or "")``: ``optimal`` when the fitness is within
    :data:`CERTIFIED_GAP` of the bound, ``gap_limit`` within ``mip_rel_gap``,
    ``numerical`` when the solver claimed either but the numbers disagree
    (including a bound below a feasible fitness).
    """
    tol = CERTIFIED_GAP * max(abs(bound), 1e-12) if np.isfinite(bound) else 0.0
    if np.isfinite(fitness) and np.isfinite(bound) and fitness > bound + tol:
        return Termination.NUMERICAL, (f"the bound {bound:.9g} lies below the re-scored fitness {fitness:.9g}: "
                                       "the solver's numbers are inconsistent")
    if claimed not in SOLVER_CLAIMS:
        return claimed, ""
    if not proven:
        return Termination.COMPLETED, ""
    if not (np.isfinite(fitness) and np.isfinite(bound)):
        return Termination.NUMERICAL, "the solver claimed optimality but no finite fitness bound resulted"
    gap = bound - fitness
    if gap <= tol:
        return Termination.OPTIMAL, ""
    if gap <= max(mip_rel_gap, CERTIFIED_GAP) * abs(bound):
        return Termination.GAP_LIMIT, ""
    return Termination.NUMERICAL, (f"the solver claimed optimality but the re-scored fitness {fitness:.9g} is "
                                   f"{gap / abs(bound):.3g} below the bound {bound:.9g}")


def finish(run: MilpRun, alloc: Array | None, out: MilpOutcome, proven: bool = True) -> MethodOutcome:
    """Result fields of the exact methods; the status is judged from the evaluator's fitness and the bound."""
    info = run.info
    fit_bound = run.fit_bound if np.isfinite(run.fit_bound) else float("nan")
    fitness = float(run.ev.fitness(alloc)) if alloc is not None else float("nan")
    status, why = judge(fitness, fit_bound, out.termination, proven, run.opts.mip_rel_gap)
    if status == Termination.NUMERICAL and fitness > fit_bound:
        fit_bound = float("nan")  # provably wrong: report no bound
    stages = info["stages"]
    message = f"{stages[-1]['model']} model: {out.raw_status}" if stages else out.raw_status
    if why:
        message = f"{message}; {why}"
        log.warning("milp: %s", why)
    return MethodOutcome(
        alloc=alloc, status=status, bound=fit_bound, objective=out.objective, objective_bound=out.bound,
        build_s=run.build_s + sum(s.get("compile_s", 0.0) for s in stages),
        solve_s=sum(s.get("solve_s", 0.0) for s in stages),
        nodes=sum(s.get("nodes") or 0 for s in stages), solver=out.solver, solver_version=out.solver_version,
        raw_status=out.raw_status, n_variables=out.n_variables, n_constraints=out.n_constraints,
        n_configs=info["n_configs"], extra=info, message=message,
    )


def nothing_left(run: MilpRun) -> bool:
    """No configuration at all, or every one pruned as worse than the incumbent (finite p)."""
    ob = run.objective
    return run.cs.n_configs == 0 or (ob is not None and bool(ob.forbidden.all()) and not ob.must_run.any())


def nothing_to_choose(run: MilpRun) -> MethodOutcome:
    """Nothing to choose: the empty allocation is the only one, or the incumbent is proven optimal.

    With no configuration the empty allocation is the only allocation; when
    every configuration was pruned, none belongs to an allocation better than
    the incumbent (each one's term alone exceeds its whole objective).
    """
    alloc: Array | None
    if run.cs.n_configs == 0:
        alloc = np.zeros((run.pr.n_jobs, run.pr.n_nodes), np.int64)
        run.info["proof"] = "no job has a feasible configuration; the empty allocation is the only allocation"
    else:
        alloc = run.best()[0]
        run.info["proof"] = "every configuration is worse on its own than the incumbent's whole objective"
    run.fit_bound = float(run.ev.fitness(alloc))
    run.record()
    return finish(run, alloc, stand_in(Termination.OPTIMAL, "nothing to choose"))
