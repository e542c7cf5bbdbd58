"""How an exact solve ends: its status judged from the evaluator's re-score and the bound (:func:`judge`), the
result fields (:func:`finish`), and the model written out for other solvers."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from goodopt.arrays import Array
from goodopt.outputs import staged_file

from ..outcome import MilpOutcome
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
    if getattr(run.opts, "write_model", None):
        if run.last_model is not None:
            info["written_model"] = write_model(run.last_model, run.opts.write_model, stages)
        else:
            log.warning("milp: no model was solved, so nothing was written to %s", run.opts.write_model)
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


def write_model(model: Any, path: str | Path, stages: list[dict[str, Any]]) -> dict[str, Any]:
    """Write the model solved last to ``path`` (.mps or .lp, for any MILP solver), whole or not at all; returns
    what was written: the file, the stage that solved it and the objective value that stage found."""
    path = Path(path)
    # the solver names the format by the suffix: written under a plain name of that suffix in a staging folder
    # beside the output (a kill leaves debris the next write removes; any byte in the user's name is fine)
    with staged_file(path, "model" + path.suffix.lower()) as staged:
        if hasattr(model, "session"):
            model.session.integral()
            model.session.h.writeModel(str(staged))
        else:
            model.model.write(str(staged), io_options={"symbolic_solver_labels": True})
    last: dict[str, Any] = next((st for st in reversed(stages) if not st["model"].startswith("placement-check")), {})
    log.info("milp: wrote the %s model to %s", last.get("model", ""), path)
    return {"path": str(path), "stage": last.get("model"), "objective": last.get("objective"),
            "sense": "maximise"}


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
    return finish(run, alloc, stand_in(Termination.OPTIMAL, "nothing to choose"))
