"""``formulation="reference"``: the documented exact model, built once and handed whole to the chosen solver.

The model is the configuration level with every GPU type's node-pattern rows (interference avoidance, where
those rows make every solution placeable), or else the placement level (job x node). Its objective is scaled to
greedy's allocation, which depends on the problem alone, with the configurations that cannot beat it on their
own fixed to 0 (:func:`goodopt.formulations.scaled_objective.scaled_objective`; without a finite reference the terms
of an extreme p overflow), so every solver receives the same arrays; greedy's allocation is no start, and no
LP stage, dive or cut runs first. The solver's answer is placed
(an exact check per GPU type on the same solver) and judged like every other answer (:func:`~.verdict.judge`).
Two steps may solve again on the same solver, each recorded as a stage: at p = +-inf the floor re-solve that
proves the epigraph optimum (:func:`~.certify.certify_epigraph`), and a re-scaling when the model's units did
not resolve the fitness gap (:func:`~.levels.unresolved`).
"""

from __future__ import annotations

import numpy as np

from ..config_model import ArrayModel, ConfigModel, PyomoModel
from ..heuristics import greedy
from ..result import MethodOutcome, Termination
from .certify import certify_epigraph
from .exact_placement import place_choice
from .levels import unresolved
from .models import config_model, placement_model
from .run import MAX_RESCALES, MilpRun, pattern_rows_apply
from .verdict import finish, nothing_left, nothing_to_choose


def reference_model(run: MilpRun) -> tuple[ConfigModel, str]:
    """The reference model of ``run`` and its name: the configuration level under every type's node-pattern
    rows where they apply to every type, else the placement level."""
    if pattern_rows_apply(run):
        model = config_model(run, placement=range(run.pr.n_gpu_types), staged=False)
        if isinstance(model, ArrayModel) and not model.mm.aggregate_types:
            return model, "reference: config + pattern rows (every type)"
    return placement_model(run), "reference: placement level"


def solve_reference(run: MilpRun) -> MethodOutcome:
    """Solve the reference model once (see the module's docstring)."""
    pr = run.pr
    run.add_candidate(greedy(pr, run.cs)[0], "greedy")  # the same for every solver; only scales and prunes
    run.scale_objective()
    if nothing_left(run):
        return nothing_to_choose(run)
    alloc = None
    for attempt in range(MAX_RESCALES + 1):
        model, name = reference_model(run)
        out = run.stage(name if attempt == 0 else f"{name} rescaled x{attempt}",
                        lambda: model.solve(**run.solve_kwargs()))
        if pr.p in (np.inf, -np.inf) and out.termination == Termination.OPTIMAL:
            out = certify_epigraph(run, model, out)
        run.tighten(out)
        alloc = _allocation(run, model) if out.has_solution else None
        found = run.add_candidate(alloc, "reference")
        reference = unresolved(run, out, lambda: alloc)
        if reference is None or run.expired() or attempt == MAX_RESCALES:
            break
        run.scale_objective(reference)
    run.info["rescales"] = attempt
    if alloc is None or found < run.best()[2]:  # the solver found nothing better: greedy's, with its status
        run.info["incumbent"] = run.best()[1]
        return finish(run, run.best()[0], out)
    return finish(run, alloc, out)


def _allocation(run: MilpRun, model: ConfigModel) -> np.ndarray | None:
    """The allocation of the solved model: read off (placement level) or placed exactly (configuration level)."""
    if isinstance(model, PyomoModel):
        return model.allocation()
    return place_choice(run, model.chosen())[0]
