"""The configuration level made to place: node-pattern rows for the GPU types whose optimum did not place
(:func:`placement_rows_loop`), or no-good cuts where patterns do not apply (:func:`placement_cut_loop`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import cast

import numpy as np

from goodopt.arrays import Array
from goodopt.placement import place_configs

from ..config_model import ArrayModel, ConfigModel
from ..mip_solvers.outcome import MilpOutcome
from ..result import Termination
from .certify import certify_epigraph, lp_certificate
from .exact_placement import place_choice
from .models import config_model
from .run import MilpRun


def placement_rows_loop(run: MilpRun, model: ConfigModel, out: MilpOutcome, *,
                        every_type: bool = False) -> tuple[MilpOutcome, Array | None]:
    """Add node-pattern rows for every GPU type whose optimum did not place, and re-solve.

    The configuration level is first solved with aggregate capacity rows only
    (fast, and usually placeable). A type proven unplaceable gets the exact
    placement rows of :func:`goodopt.formulations.pattern_block.pattern_block`,
    after which no choice on it is unplaceable: at most one re-solve per type,
    where no-good cuts found neighbouring unplaceable optima one at a time.
    ``every_type``: ``out`` stopped at its node budget without an optimum
    (:func:`~.levels.plain_budget_spent`), so every type gets its rows at once
    (its bound is kept: that model is a relaxation of the problem).
    Returns ``(outcome, allocation)``, ``(outcome, None)`` when undecided, or None.
    """
    pr, info = run.pr, run.info
    with_rows: set[int] = set(model.pattern_types)
    chosen: Array | None = None
    if every_type:
        run.tighten(out)
    for _ in range(pr.n_gpu_types + 1):
        if every_type:
            bad, every_type = set(range(pr.n_gpu_types)) - with_rows, False
            if not bad:
                return out, None
        else:
            if out.termination != Termination.OPTIMAL or not out.has_solution or run.expired():
                return out, None
            chosen = model.chosen()
            placed, unplaceable, undecided = place_choice(run, chosen)
            if placed is not None:
                info["proof"] = (f"configuration optimum placed exactly (node-pattern rows on "
                                 f"{sorted(pr.type_names[g] for g in with_rows) or 'no type'})")
                return out, placed
            bad = {int(run.cs.gpu_type[sub[0]]) for sub in unplaceable if len(sub)}
            if undecided or not bad or bad <= with_rows:
                return out, None
        with_rows |= bad
        start = run.best()[0]
        model = cast(ArrayModel, config_model(run, placement=sorted(with_rows)))  # the arrays route
        missing = set(with_rows) - set(model.mm.pattern_types)
        if missing:  # too many patterns for a type: fall back to no-good cuts there
            info["pattern_rows_skipped"] = sorted(pr.type_names[g] for g in missing)
            return placement_cut_loop(run, model, model.solve(warm_start=start, **run.solve_kwargs()))
        others = np.zeros(0, bool) if chosen is None else \
            (chosen >= 0) & ~np.isin(run.cs.gpu_type[np.maximum(chosen, 0)], sorted(bad))
        if run.objective is not None and chosen is not None and others.any():  # finite p, a job stays fixed elsewhere
            repaired = repair_on_types(run, model, out, chosen, bad)
            if repaired is not None:
                return repaired
            start = run.best()[0]
        names = ", ".join(pr.type_names[g] for g in sorted(with_rows))
        certified = lp_certificate(run, model, f"config + pattern rows ({names})")
        if certified is not None:
            return certified
        start = run.best()[0]
        out = run.stage(f"config + pattern rows ({names})", lambda: model.solve(warm_start=start, **run.solve_kwargs()))
        if pr.p in (np.inf, -np.inf) and out.termination == Termination.OPTIMAL:
            out = certify_epigraph(run, model, out)
    return out, None


def placement_cut_loop(run: MilpRun, model: ConfigModel, out: MilpOutcome) -> tuple[MilpOutcome, Array | None]:
    """Re-solve the configuration level with placement cuts (C1) until its optimum places.

    Returns ``(outcome, allocation)`` with the certified allocation, ``(outcome, None)``
    when the loop stopped without one (the caller continues with the last
    outcome), or ``None`` when nothing was tried.
    """
    pr, info = run.pr, run.info
    n_cuts = 0
    for _ in range(int(run.opts.placement_cuts)):
        if out.termination != Termination.OPTIMAL or not out.has_solution or run.expired():
            break
        chosen = model.chosen()
        placed, unplaceable, undecided = place_choice(run, chosen)
        info["placement_cuts"] = n_cuts
        if placed is not None:
            info["proof"] = f"configuration optimum placed exactly after {n_cuts} placement cut(s)"
            return out, placed
        if undecided or not unplaceable:
            return out, None  # undecided (time limit): leave it to the placement level
        for sub in unplaceable:
            model.exclude(sub)
            n_cuts += 1
        heuristic = place_configs(pr, run.cs, chosen)[0]
        start = heuristic if run.ev.violation(heuristic) == 0 else None
        out = run.stage(f"config + {n_cuts} cut(s)", lambda: model.solve(warm_start=start, **run.solve_kwargs()))
        if pr.p in (np.inf, -np.inf) and out.termination == Termination.OPTIMAL:
            out = certify_epigraph(run, model, out)
    info["placement_cuts"] = n_cuts
    return out, None


def repair_on_types(run: MilpRun, model: ArrayModel, first: MilpOutcome, chosen: Array,
                    types: Iterable[int]) -> tuple[MilpOutcome, Array] | None:
    """Re-choose only the jobs on the unplaced GPU ``types`` under their node-pattern rows, every other job
    fixed to ``first``'s choice (presolve stays off, as for every configuration model: with it on, mixed-2048
    under Sia's objective took 26 s here instead of 1.3 s).

    ``first`` solved a relaxation of this model, so its bound holds here: when the repaired choice reaches it
    (within the solver's gap), it is optimal and places by construction, and the full re-solve is skipped.
    Returns ``(outcome, allocation)`` then, else None (a placed repair stays as a candidate, the full re-solve's
    warm start). Finite p only.
    """
    names = ", ".join(run.pr.type_names[g] for g in sorted(types))
    model.fix_outside(chosen, types)
    try:
        out = run.stage(f"pattern rows ({names}), only their jobs re-chosen",
                        lambda: model.solve(**run.solve_kwargs()))
    finally:
        model.unfix()
    if out.termination != Termination.OPTIMAL or not out.has_solution:
        return None
    placed = place_choice(run, model.chosen())[0]
    if placed is None:
        return None
    run.add_candidate(placed, "pattern-row repair")
    if not (np.isfinite(first.bound) and out.objective >= first.bound - run.gaps["mip_abs_gap"]):
        return None
    run.info["proof"] = (f"the configuration optimum without pattern rows, its jobs on {names} re-chosen under "
                         "their node-pattern rows, reaches that optimum's bound and places")
    gap = (first.bound - out.objective) / max(abs(first.bound), 1e-300)
    return replace(out, bound=first.bound, mip_gap=max(gap, 0.0)), placed
