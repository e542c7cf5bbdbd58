"""The two levels of ``milp``: the configuration relaxation, re-scaled until resolved and then placed
(:func:`config_level`), and the placement-level MILP (:func:`placement_level`) when that did not settle it."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from goodopt.arrays import Array
from goodopt.errors import SolverError
from goodopt.placement import place_configs

from ..config_model import ConfigModel
from ..heuristics import greedy
from ..mip_solvers.outcome import MilpOutcome
from ..result import CERTIFIED_GAP, MethodOutcome, Termination
from ..rounding import round_choice
from .certify import certify_epigraph
from .exact_placement import place_choice, placement_pairs
from .models import config_model, placement_model
from .pattern_rows import placement_cut_loop, placement_rows_loop
from .run import MAX_RESCALES, MilpRun, as_time_limit, model_route, pattern_rows_apply, remaining
from .verdict import finish

#: Job-node pairs from which ``lp_rounding: auto`` starts with the LP relaxation under every type's node-pattern
#: rows (on the shipped families from cluster-256 on its rounding is the certified optimum).
LP_FIRST_FROM_PAIRS = 2_000
#: Branch-and-bound nodes of the configuration MILP without pattern rows after that LP (:func:`lp_first`): past
#: them the configuration level goes on under every type's pattern rows (:func:`placement_rows_loop`'s
#: ``every_type``), re-solving the LP, its dives and a MILP under them. Once, on five-types-2048 seed 5 under its
#: own objective, that MILP took 7,320 nodes (74 s) for an optimum that placed on two of five types, hence a
#: budget. Measured with the reduced-cost dive and its probe (CPU s of the whole solve, one thread, the least of
#: two runs of each, the two budgets alternating in one process, the same optima): 300 nodes against 30, mixed-2048
#: under Sia's objective seeds 0-9 worst 2.47 against 4.82 (seed 7: the MILP closed in 81 nodes, 1.1 s, where 30
#: nodes left a gap of 2.2e-6 and the rows' round took 3.2 s; seed 6 2.47 against 3.74, 201 nodes), every other seed
#: within 0.15 s (mixed-2048 own seeds 0-9, five-types-512 both objectives seeds 0-4, five-types-2048 both
#: objectives seeds 0-9: 43.4 s against 43.0 s in all there, seed 5 own 3.68 against 3.66).
PLAIN_CONFIG_NODES = 300
#: After the LP certificate under every type's pattern rows, the configuration level starts under every type's
#: pattern rows at once (no MILP without them first) when the configurations left by reduced costs are at most
#: this many times those the reduced-cost dive held open under the same rows: that dive measured what such a
#: model costs at about that size. Measured (CPU s, all ten solves in one process, a 2-core Intel Xeon VM):
#: five-types-2048 own objective seeds 0-9 23.5 s in all (worst 4.47, seed 3) against 28.4 s (worst 4.92) with
#: the MILP without pattern rows first; seeds 5, 6, 7 (kept / open 1.06-2.0, where the dive did not certify)
#: 2.70 2.19 3.24 against 4.36 3.36 4.92, the same optima. mixed-2048 under Sia's objective, kept / open about
#: 3.0: there every type's rows cost 3-10 s against 1.3-1.9 s for the MILP without them and rows on one type
#: afterwards.
EVERY_TYPE_FIRST_RATIO = 2.5


def lp_first(run: MilpRun) -> bool:
    """Whether the exact method starts with the LP certificate under every type's pattern rows."""
    o, pr = run.opts, run.pr
    lp = getattr(o, "lp_rounding", "auto")
    if lp is False or o.formulation != "auto" or not pattern_rows_apply(run) or not np.isfinite(pr.p) \
            or run.cs.n_configs == 0:
        return False
    return lp is True or pr.n_jobs * pr.n_nodes >= LP_FIRST_FROM_PAIRS


def lp_route(run: MilpRun) -> str | None:
    """Which LP relaxation the exact method starts with: ``"patterns"`` (under every GPU type's node-pattern rows,
    :func:`lp_first`), ``"plain"`` (the configuration level's own, below that size with ``lp_rounding: auto``) or
    None (no LP first: ``lp_rounding`` true or false as the user set it, p = ±inf, another formulation or route).

    The plain LP is solved in milliseconds at 64 GPUs; its rounding, its dives
    and the configurations its duals drop made the configuration MILP that
    follows small: over sia-64, testbed-over, mixed-64 and testbed-under, seeds
    0-2, both objectives, 1.0 s of CPU in all against 2.3 s without it (sia-64
    under Sia's objective: 0.06-0.09 s against 0.16-0.20 s), the same
    certified optima.
    """
    if lp_first(run):
        return "patterns"
    o = run.opts
    if getattr(o, "lp_rounding", "auto") == "auto" and o.formulation == "auto" and model_route(o) == "arrays" \
            and np.isfinite(run.pr.p) and run.cs.n_configs > 0:
        return "plain"
    return None


def config_level(run: MilpRun) -> MethodOutcome | None:
    """Configuration relaxation, re-scaled until resolved, then placed; None to go on to the placement level."""
    pr, cs, opts, info = run.pr, run.cs, run.opts, run.info
    model, out = solve_config_model(run)
    if out.termination == Termination.INFEASIBLE:
        return finish(run, None, out)
    result = None
    if opts.formulation == "auto" and pattern_rows_apply(run):
        result = placement_rows_loop(run, model, out, every_type=plain_budget_spent(run, out))
    elif opts.formulation == "auto" and opts.placement_cuts > 0:
        result = placement_cut_loop(run, model, out)
    if result is not None:
        out, placed = result
        if placed is not None:
            run.tighten(out)
            return finish(run, placed, out)
    run.tighten(out)
    if out.has_solution:
        chosen = model.chosen()
        alloc, failed = place_configs(pr, cs, chosen)
        info["placement_failed_jobs"] = [pr.job_names[j] for j in failed]
        if not failed and out.termination == Termination.OPTIMAL:
            info["proof"] = "configuration relaxation optimum placed exactly"
            return finish(run, alloc, out)
        if failed and out.termination == Termination.OPTIMAL and opts.formulation == "auto" and not run.expired():
            placed = place_choice(run, chosen)[0]
            if placed is not None:
                info["proof"] = "configuration relaxation optimum placed by an exact placement check"
                return finish(run, placed, out)
        run.add_candidate(greedy(pr, cs, start=alloc, deadline=run.deadline)[0], "relaxation+repair")
    pairs = placement_pairs(pr, cs) if opts.formulation == "auto" else 0
    too_big = pairs > opts.max_placement_pairs
    if opts.formulation == "config" or run.expired() or too_big:
        if too_big:
            info["skipped"] = f"placement-level model skipped: {pairs} job-node pairs > max_placement_pairs"
        best, source, _ = run.best()
        info["incumbent"] = source
        if run.expired() and opts.formulation != "config":
            out = as_time_limit(out)
        return finish(run, best, out, proven=False)
    return None


def solve_config_model(run: MilpRun) -> tuple[ConfigModel, MilpOutcome]:
    """The configuration MILP, warm from the best candidate; re-scaled while its answer is not resolved.

    With ``lp_rounding`` the LP relaxation is solved first and rounded into
    a candidate (and its bound kept); otherwise the MILP's own root is the
    only LP solved.
    """
    pr, cs = run.pr, run.cs
    out: MilpOutcome | None = None
    model: ConfigModel | None = None
    every_type = every_type_first(run)
    for attempt in range(MAX_RESCALES + 1):
        model = config_model(run, placement=range(pr.n_gpu_types) if every_type else ())
        kw = run.solve_kwargs()
        if lp_first(run) and not every_type:
            kw["node_limit"] = min(kw["node_limit"] or PLAIN_CONFIG_NODES, PLAIN_CONFIG_NODES)
        if getattr(run.opts, "lp_rounding", None) is True and attempt == 0 and (model_route(run.opts) == "arrays" or run.opts.solver == "highs"):
            lp = run.stage("config-lp", lambda: model.solve(relax=True, **kw))
            if lp.termination == Termination.OPTIMAL:
                run.tighten(lp)  # the LP relaxation bounds the configuration level, hence the problem
            if lp.has_solution:
                run.add_candidate(round_choice(pr, cs, model.chosen()), "lp-rounding")
        kw["time_limit_s"] = remaining(run.deadline)
        name = "config + pattern rows (every type)" if every_type else "config"
        out = run.stage(name if attempt == 0 else f"{name} rescaled x{attempt}",
                        lambda: model.solve(warm_start=run.best()[0], **kw))
        if run.pr.p in (np.inf, -np.inf) and out.termination == Termination.OPTIMAL:
            out = certify_epigraph(run, model, out)
        placed = functools.cache(functools.partial(_placed, run, model))  # placed once, when asked
        reference = unresolved(run, out, placed)
        if reference is None or run.expired() or attempt == MAX_RESCALES:
            break
        run.add_candidate(placed(), "rescaling")
        run.scale_objective(reference)
    run.info["rescales"] = attempt
    if model is None or out is None:  # MAX_RESCALES >= 0: the loop ran
        raise SolverError("the configuration model was not solved")
    return model, out


def _placed(run: MilpRun, model: ConfigModel) -> Array:
    """The solved configuration model's choice placed on the nodes (jobs it cannot place left without GPUs)."""
    return place_configs(run.pr, run.cs, model.chosen())[0]


def every_type_first(run: MilpRun) -> bool:
    """Whether the configuration level starts under every GPU type's pattern rows (see
    :data:`EVERY_TYPE_FIRST_RATIO`)."""
    return lp_first(run) and 0 < run.dive_open and run.cs.n_configs <= EVERY_TYPE_FIRST_RATIO * run.dive_open


def plain_budget_spent(run: MilpRun, out: MilpOutcome) -> bool:
    """Whether the configuration MILP without pattern rows stopped at :data:`PLAIN_CONFIG_NODES` (a budget of its
    own, not the user's node limit, which ends the solve where it is)."""
    user = getattr(run.opts, "node_limit", None)
    return (lp_first(run) and out.termination == Termination.ITERATION_LIMIT
            and (user is None or user > PLAIN_CONFIG_NODES) and not run.expired())


def unresolved(run: MilpRun, out: MilpOutcome, answer: Callable[[], Array | None] | None = None) -> float | None:
    """A better reference fitness when the solver stopped "optimal" but the fitness gap is not closed.

    The model's units resolve fitness differences near the reference; a
    solution far from it (e.g. a first reference from a poor greedy at p << 0)
    leaves its neighbours indistinguishable, and one so far that its value
    reaches the units' limit has no finite fitness at all: then ``answer``
    (the solved model's allocation) is scored by the evaluator instead.
    Returns None when resolved.
    """
    ob = run.objective
    if ob is None or not out.has_solution or out.termination not in (Termination.OPTIMAL, Termination.GAP_LIMIT):
        return None
    f_obj, f_bound = ob.fitness(out.objective), ob.fitness(run.model_bound(out.bound))
    if not (np.isfinite(f_obj) and f_obj > 0):
        # at p < 0 the answer's value reached the units' limit (1 + p V / W <= 0: every option scored alike, as a
        # reference far below the optimum makes them): the answer's own fitness, by the evaluator, is the next
        # reference when it lies above this one
        alloc = answer() if answer is not None and ob.p < 0 else None
        if alloc is None or run.ev.violation(alloc) != 0:
            return None
        fit = float(run.ev.fitness(alloc))
        return fit if np.isfinite(fit) and np.log(fit / ob.reference) >= 1e-12 else None
    if np.isfinite(f_bound) and f_bound - f_obj <= 0.5 * max(run.opts.mip_rel_gap, CERTIFIED_GAP) * f_bound:
        return None
    if abs(np.log(f_obj / ob.reference)) < 1e-12:
        return None  # already at the solution's own scale: the gap is the solver's
    return max(f_obj, run.best()[2]) if ob.p < 0 else f_obj


def placement_level(run: MilpRun) -> MethodOutcome:
    """The placement-level MILP, warm-started from the best candidate; re-scaled while its answer is not
    resolved (as the configuration model, :func:`solve_config_model`)."""
    info = run.info
    info["warm_start"] = run.best()[1]
    for attempt in range(MAX_RESCALES + 1):
        model = placement_model(run)
        if run.expired():
            info["stages"].append({"model": "placement", "status": "skipped: time limit reached before solving",
                                   "compile_s": 0.0, "solve_s": 0.0, "nodes": None})
            return finish(run, run.best()[0], as_time_limit(None), proven=False)
        warm = run.best()[0]
        pout = run.stage("placement" if attempt == 0 else f"placement rescaled x{attempt}",
                         lambda: model.solve(warm_start=warm, **run.solve_kwargs()))
        if run.pr.p in (np.inf, -np.inf) and pout.termination == Termination.OPTIMAL:
            pout = certify_epigraph(run, model, pout)
        run.tighten(pout)
        alloc = model.allocation() if pout.has_solution else None
        found = run.add_candidate(alloc, "placement")
        reference = unresolved(run, pout, lambda: alloc)
        if reference is None or run.expired() or attempt == MAX_RESCALES:
            break
        run.scale_objective(reference)
    info["placement_rescales"] = attempt
    if alloc is not None and found >= run.best()[2]:
        return finish(run, alloc, pout)
    # the solver returned nothing better: report the best candidate with the solver's status
    return finish(run, run.best()[0], pout)
