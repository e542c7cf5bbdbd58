"""Certificates that end a stage early: the epigraph re-check (p = +-inf) and the LP relaxation whose rounding
reaches its bound."""

from __future__ import annotations

import logging
from dataclasses import replace

from goodopt.arrays import Array

from ..config_model import ArrayModel, ConfigModel
from ..mip_solvers.outcome import MilpOutcome
from ..result import CERTIFIED_GAP, Termination
from ..rounding import round_choice
from .dive import lp_dive, reduced_cost_dive
from .exact_placement import place_choice
from .pricing import priced_relaxation
from .reduce import lp_config_bounds
from .run import MilpRun, as_time_limit, reaches_bound

log = logging.getLogger(__name__)


def certify_epigraph(run: MilpRun, model: ConfigModel, out: MilpOutcome, max_rounds: int = 5) -> MilpOutcome:
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
        if run.expired():
            return as_time_limit(out)
        claimed = model.epigraph_value()
        snap = model.snapshot()
        # ask for a solution better by more than the certification gap (solver tolerances are ~1e-7)
        model.set_floor(claimed + max(CERTIFIED_GAP * abs(claimed), 1e-9))
        # warm from the best known allocation: if it beats the claim, the solver cannot call the floor
        # infeasible (HiGHS 1.15 did so on a two-type max-min model, seed 319 of hetero-tiny)
        best_alloc, _, best_fit = run.best()
        start = best_alloc if best_fit > claimed * (1 + 1e-9) else None
        chk = run.stage("epigraph-certify", lambda: model.solve(warm_start=start, **run.solve_kwargs()))
        model.set_floor(None)
        if chk.has_solution and model.epigraph_value() > claimed * (1 + 1e-9) + 1e-12:
            log.warning("the MILP solver's optimum %.9g was improved to %.9g by re-solving",
                        claimed, model.epigraph_value())
            run.info["certify_improved"] = run.info.get("certify_improved", 0) + 1
            out = replace(chk, objective=model.epigraph_value())
            continue
        model.restore(snap)
        if chk.termination == Termination.INFEASIBLE or chk.has_solution:
            return out  # no solution better by more than the gap (beyond solver tolerances)
        return replace(out, termination=Termination.TIME_LIMIT if chk.termination == Termination.TIME_LIMIT
                       else Termination.GAP_LIMIT)
    return out


def lp_certificate(run: MilpRun, model: ConfigModel, name: str, *,
                   open_all: bool = False) -> tuple[MilpOutcome, Array | None] | None:
    """Solve ``model``'s LP relaxation, place its (rounded) choice exactly, or else round it into an allocation
    (:func:`round_choice`), and keep that as a candidate. The LP bounds the model, hence the problem: when the
    best candidate reaches that bound within the gap the MILP would stop at, it is certified without the MILP.
    Returns ``(outcome, allocation)`` then, else None (the bound is kept either way). ``open_all``: the
    reduced-cost dive's open set (:func:`reduced_cost_dive`)."""
    kw = run.solve_kwargs()
    lp = run.stage(f"{name}, LP relaxation", lambda: priced_relaxation(run, model, **kw)
                   if isinstance(model, ArrayModel) else model.solve(relax=True, **kw))
    if lp.termination != Termination.OPTIMAL or not lp.has_solution:
        return None
    run.tighten(lp)
    chosen = model.chosen()
    placed = place_choice(run, chosen)[0]  # an integral LP optimum places exactly under its pattern rows
    run.add_candidate(placed if placed is not None else round_choice(run.pr, run.cs, chosen), "lp-rounding")
    dived = False
    if not reaches_bound(run) and isinstance(model, ArrayModel):
        lp_dive(run, model)
        if not reaches_bound(run):
            reduced_cost_dive(run, model, lp_config_bounds(run, model), open_all=open_all)
            dived = True
    if not reaches_bound(run):
        return None
    alloc, source, _ = run.best()
    run.info["proof"] = _proof(source, name, dived)
    return replace(lp, objective=lp.bound), alloc


#: The candidates found from the LP relaxation, by source, in a proof's words (before "the LP relaxation").
_FROM_LP = {"lp-dive": "a dive from", "lp-rounding": "a rounding of",
            "greedy fill": "the best candidate of the dives, filled by greedy, from"}


def _proof(source: str | None, name: str, dived: bool) -> str:
    """How an LP certificate was reached: which candidate, and whose bound (the reduced-cost dive's, when it ran:
    its own MILP's over the open configurations, the LP's reduced costs elsewhere; else the LP's)."""
    rc_bound = "(its MILP's over the open configurations, the LP's reduced costs elsewhere)"
    if source == "reduced-cost dive":
        return f"the reduced-cost dive from the LP relaxation of the {name} model reaches its bound {rc_bound}"
    lp, from_lp = f"the LP relaxation of the {name} model", _FROM_LP.get(source or "")
    how = f"{from_lp} {lp}" if from_lp else f"the candidate {source!r}, found before {lp},"
    if dived:  # an earlier candidate, which the dive's bound certified (the dive found nothing better)
        return f"{how} reaches the bound of the reduced-cost dive that followed {rc_bound}"
    whose = "its" if from_lp else "that relaxation's"
    return f"{how} reaches {whose} bound"
