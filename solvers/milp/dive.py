"""Dives from the LP relaxation: small MILPs (HiGHS's presolve on but for the smallest, a node budget) over part
of the model, under the same rows, each adding a candidate.

* :func:`lp_dive`: every job whose LP choice is integral keeps it; the MILP
  chooses for the few jobs the LP split. On five-types-2048 the LP relaxation
  under every type's node-pattern rows splits 7 of 819 jobs; its plain
  rounding reached 0.9936 of the optimum, the dive 0.9997 in 0.3 s. It bounds
  nothing (fixing jobs is a restriction).
* :func:`reduced_cost_dive`: every configuration whose bound ``L_c``
  (:mod:`~goodopt.solvers.milp.reduce`) lies within :data:`DIVE_GAP_SHARE` of
  the gap between the LP bound and the best candidate stays open, in a model
  of the open ones alone; from the plain LP (no pattern rows, below 2,000
  job-node pairs) every configuration whose ``L_c`` reaches the best
  candidate stays open (``open_all``; that candidate first filled by greedy when the set
  would hold more than :data:`FILL_FROM_OPEN`). Its dual bound covers the allocations of open
  configurations; every other allocation is bounded by a closed
  configuration's ``L_c``, so the larger of the two bounds every allocation,
  and the dive can end the solve. Jobs the LP did not split may move too, which the optimum
  often needs: on five-types-2048 under Sia's objective the LP dive stayed
  5.7e-4 below the optimum, and this dive found the optimum itself (about
  5.6k of 81k configurations open).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from goodopt.formulations.configs import ConfigSet, choice_from_values
from goodopt.formulations.scaled_objective import ScaledObjective, reference_fitness, scaled_objective

from goodopt.arrays import Array

from ..config_model import ArrayModel
from ..heuristics import greedy
from ..mip_solvers.highs_run import accepts_option
from ..mip_solvers.outcome import MilpOutcome
from ..mip_solvers.session import new_session
from ..result import Termination
from .exact_placement import place_choice
from .models import solver_kwargs
from .reduce import ConfigBounds, configs_from
from .run import MilpRun, config_highs_options, dive_probe, reaches_bound, without_restart

#: Branch-and-bound nodes of a dive's MILP: a deterministic budget.
DIVE_NODE_LIMIT = 200
#: Branch-and-bound nodes of the dive's probe (:func:`~goodopt.solvers.milp.run.dive_probe`): its root and a couple of
#: nodes (SCIP's own count, its restarts included, may pass it by a few). Measured with SCIP as the probe under HiGHS
#: (one thread, CPU s of the whole solve, the least of two runs of each, the variants alternating in one process, the
#: same optima to 2e-6; in all and the worst seed). Three nodes against the root alone: Sia's five-types-2048 seeds 0-4
#: 7.66 against 10.38 (seed 1 3.03 against 5.61: at its root SCIP comes within 1.6e-5 of the optimum, its fourth node
#: closes the core HiGHS needs ~100 nodes for), five-types-2048 own seeds 0-9 26.91 against 24.01 (worst 4.43 against
#: 4.01, seed 3: where three nodes do not close, 0.3-1.3 s more on top of HiGHS's dive; seeds 6 and 7 close), mixed-2048
#: both objectives, five-types-512 both and cluster-2048 own within 0.06 s a seed; 51.0 against 50.7 s in all. Ten nodes
#: closed no more than three (five-types-2048 own seeds 0-9, Sia's seed 1); SCIP's stall-node limit (1-3 nodes without a
#: better answer, ten at most) closed no more, no sooner. The root alone against ``dive_probe: none`` (the same
#: measurement, the run before): mixed-2048 own 6.51 against 8.07 (worst 0.91 against 1.33: SCIP's root closed seeds 6-9
#: in 0.2-0.3 s where HiGHS's root took 0.4-0.7 s), Sia's five-types-2048 10.87 against 14.54, Sia's five-types-512 1.74
#: against 2.04; five-types-2048 own 25.03 against 19.72, five-types-512 own 3.31 against 2.67, Sia's mixed-2048 4.44
#: against 4.42. Handing the probe's answer to HiGHS as its start moves HiGHS's search (five-types-2048 own with three
#: nodes: seed 3 3.07 s against 4.65, seeds 0, 5 and 9 4.53, 4.31 and 7.54 against 3.06, 3.46 and 3.53), so HiGHS starts
#: where it would have.
#: From the plain LP (``open_all``, below 2,000 job-node pairs) there is no probe: over sia-64, mixed-64,
#: testbed-over, testbed-under and hetero-16 seeds 0-9, both objectives, it cost 2.01 s against 1.63 s.
PROBE_NODE_LIMIT = 3
#: SCIP's parameters in the probe: SCIP 10's own "fast" separation (``setSeparating(FAST)``), written out so that a
#: SCIP release that changes that preset does not change the probe: fewer aggregation and zero-half rounds at the
#: root, cuts only at nodes whose bound is the global one, no multi-commodity-flow cuts. Measured (CPU s of the whole
#: solve, one thread, one run of each, with and without alternating in one process, the same optima): five-types-2048
#: own objective seeds 0-9 23.1 against 25.4 (worst 3.36 against 3.65), Sia's 13.0 against 14.6 (seed 1 1.27 against
#: 2.98: the probe closes its core at the fourth node in half the time), mixed-2048 own 5.34 against 5.50, Sia's
#: 11.33 against 11.24 (seeds 6 and 7, least of three: 2.23 / 2.26 against 2.24 / 2.25), five-types-512 and
#: cluster-2048 (both objectives) and five-types-2048 seeds 10-14 within 4%. SCIP's fast heuristics on top:
#: five-types-2048 own 22.5 against 25.9, but mixed-2048 own seed 9 1.70 against 0.61; fast presolving: Sia's
#: five-types-2048 seed 1 5.62 against 3.14. Not taken.
PROBE_SCIP_OPTIONS = {
    "constraints/and/sepafreq": 0,
    "separating/aggregation/maxaggrsroot": 3,
    "separating/aggregation/maxroundsroot": 5,
    "separating/aggregation/maxsepacutsroot": 200,
    "separating/aggregation/maxtriesroot": 100,
    "separating/gomory/maxroundsroot": 20,
    "separating/maxbounddist": 0.0,
    "separating/mcf/freq": -1,
    "separating/zerohalf/maxroundsroot": 5,
    "separating/zerohalf/maxsepacutsroot": 200,
}
#: The fewest open configurations a core is probed with: a smaller core's root costs HiGHS little, and the
#: probe's own would come on top. Sia's policy on its 64-GPU cluster (Philly workload 1, 890 rounds): 42 dives
#: under pattern rows, cores of 19-71 configurations, 21 probed without this floor: 10.9 s of CPU against
#: 10.0 s, the same average JCT. The cores measured above hold 2.2-9.3k.
PROBE_MIN_OPEN = 1000
#: LP values within this of 0 or 1 count as integral.
INTEGRAL_TOL = 1e-7
#: Share of the gap (LP bound - best candidate) within which a configuration's bound keeps it open.
DIVE_GAP_SHARE = 0.1
#: Open configurations above which the dive over every configuration whose bound reaches the best candidate
#: (``open_all``) first fills that candidate by greedy (the GPUs the LP dive left idle, given to the jobs that gain
#: most from them, :func:`goodopt.solvers.heuristics.greedy`) and opens the set again for the better candidate:
#: its size follows the candidate's distance to the LP bound, and the MILP's cost its size. On sia-64 seed 19
#: under Sia's objective the LP dive ended 1.8% below the LP bound and opened 785 of 1,794 configurations: a dive
#: of 0.32 s (one node, HiGHS's root cuts); greedy from it reached 0.8% below in 0.6 ms, and the solve took 0.05 s.
#: Below a few hundred configurations the dive's MILP costs milliseconds, and the fill would only move which of
#: equal answers is found (in Sia's policy on its 64-GPU cluster few rounds open more; in the full reproduction
#: its Sia Table 3 rows moved within their bands, Philly's average JCT 0.5982 h to 0.5983). Measured (CPU s of the
#: whole solve, least of two runs, the two versions side by side in separate processes; the same optima to the
#: last digit): sia-64 seeds 0-129 under Sia's objective 5.43 s in all against 6.35 (worst seed 0.32 against
#: 0.41; seeds 19, 48 and 123 0.05-0.14 against 0.26-0.35), under its own 8.04 against 8.48 (worst 0.61 against
#: 0.63), mixed-64 seeds 0-49 both objectives 2.99 against 3.02. Filling before every dive (the large families'
#: too) cost more than it gave: mixed-2048 under Sia's objective seeds 0-9 15.4 s against 12.4.
FILL_FROM_OPEN = 300
#: HiGHS's feasibility jump (a search for a first feasible point), off in a dive over every configuration
#: whose bound reaches the best candidate (``open_all``, from the plain LP below 2,000 job-node pairs), unless
#: the user's ``highs_options`` set it: such a dive starts from that candidate, often already optimal. Over
#: sia-64, testbed-over, mixed-64, testbed-under and hetero-16 (both objectives, min of three runs a solve,
#: one process): seeds 0-9 2.49 s of CPU in all against 2.63 s, seeds 10-19 2.70 s against 3.25 s (sia-64 1.57
#: against 2.03), seeds 20-29 2.77 s against 2.71 s (mixed-64 1.12 against 1.01, sia-64 1.26 against 1.29);
#: 7.95 s against 8.59 s over the 150 solves, the same optima. Under pattern rows it stays on: there it cost
#: more than it saved (18 dives at 512-2048 GPUs, 40.5 s against 39.3 s).
FEASIBILITY_JUMP = "mip_heuristic_run_feasibility_jump"
#: Open configurations from which a dive over every configuration whose bound reaches the best candidate
#: (``open_all``) runs HiGHS's presolve; below it the dive keeps the configuration models' options
#: (:func:`~goodopt.solvers.milp.run.config_highs_options`: presolve off unless the user's ``highs_options`` say
#: otherwise). Each such dive solved both ways on the same core (one thread, CPU s, the same optima to the
#: solver's gap), by the core's size: in Sia's policy on its 64-GPU cluster (Helios workload 9, 667 dives) below
#: 150 configurations 1.65 s without presolve against 4.06 with it (50-100: 0.54 against 2.64, over 10 ms a dive
#: with presolve where 3 without), 150-200 0.41 against 0.35, 200-1,000 1.09 against 0.82; over sia-64, mixed-64,
#: testbed-over, testbed-under and hetero-16 seeds 0-19, both objectives (79 dives), below 150 0.12 against 0.16,
#: 150-200 0.21 against 0.33 (but on sia-64 one of 197 configurations, Sia's objective seed 4, 55 ms against 9),
#: 200-500 1.72 against 0.77. Whole runs: Sia's policy on Helios workload 9 14.3 s against 18.8, on Philly
#: workload 4 11.0 against 17.3 (their average JCTs moved by +1.0% and -0.6%: another of equal optima); sia-64
#: under Sia's objective seeds 0-19 (least of two, alternating) 0.46 against 0.51, the other four families within
#: 0.01 s, the same optima. Presolve off in every such dive: Sia's testbed-over seeds 0-9 0.60 s against 0.12.
PRESOLVE_MIN_OPEN = 150


def lp_dive(run: MilpRun, model: ArrayModel) -> float:
    """Keep the dive's allocation as the candidate ``lp-dive``; returns its fitness (-inf when there is none).

    Finite p only (the model's ``u_j`` columns), after ``model`` solved its LP
    relaxation. Nothing to do when the LP split no job.
    """
    x, mm, cs, n_jobs = model.lp_values, model.mm, run.cs, run.pr.n_jobs
    if x is None or run.objective is None or run.expired():
        return -np.inf
    n_configs = cs.n_configs
    z = x[:n_configs]
    split = np.unique(cs.job[(z > INTEGRAL_TOL) & (z < 1 - INTEGRAL_TOL)])
    if split.size == 0:
        return -np.inf
    lower, upper = mm.lower.copy(), mm.upper.copy()
    keep = ~np.isin(cs.job, split)
    lower[:n_configs][keep] = upper[:n_configs][keep] = np.round(z[keep])
    settled = np.ones(n_jobs, bool)
    settled[split] = False
    u = slice(n_configs, n_configs + n_jobs)
    lower[u][settled] = upper[u][settled] = np.round(x[u][settled])
    return _dive(run, model, lower, upper, f"LP dive ({split.size} split jobs)", "lp-dive")


def reduced_cost_dive(run: MilpRun, model: ArrayModel, bounds: ConfigBounds | None, *,
                      open_all: bool = False) -> float:
    """Keep the dive's allocation as the candidate ``reduced-cost dive``; returns its fitness (-inf when there
    is none).

    The open configurations form a model of their own (the same node-pattern
    rows, built for them alone, so it is small), warm from the best
    candidate, whose configurations stay open. Finite p, after ``model``
    solved its LP relaxation and ``bounds`` were read from it. Under pattern
    rows (not ``open_all``) the probe
    (:func:`~goodopt.solvers.milp.run.dive_probe`) solves that core first
    on a budget of :data:`PROBE_NODE_LIMIT` nodes. If that ends the solve, or
    solves the core to the dive's gap with an answer that places (the chosen
    solver's would be worth no more), the dive is over; else the chosen
    solver solves the same core from the same start, as without the probe.

    ``open_all`` opens every configuration whose ``L_c`` reaches the best
    candidate (the set the configuration MILP would keep, see
    :func:`~goodopt.solvers.milp.reduce.drop_configs`), so the dive's optimum
    is that MILP's and, when it places, ends the solve without it. For the
    plain LP at 64 GPUs that set holds a few hundred configurations: over
    sia-64, mixed-64, testbed-over, testbed-under and hetero-16, seeds 0-9,
    both objectives (100 solves), 3.08 s of CPU in all against 3.77 s with a
    tenth of the gap (sia-64 1.25 s against 1.90 s; the rest within 7%), and
    21.0k LP iterations against 24.5k, the same optima. Under every type's
    pattern rows it holds thousands at 512 GPUs and more (1.4-5.4k on
    five-types-512): a tenth of the gap there.
    """
    best, _, f_inc = run.best()
    cs = run.cs
    if bounds is None or best is None or not (np.isfinite(f_inc) and f_inc > 0) or run.expired() \
            or len(bounds.value) != cs.n_configs or run.objective is None:
        return -np.inf
    open_ = _open_set(run, bounds, open_all, best, f_inc)
    if open_all and int(open_.sum()) > FILL_FROM_OPEN:  # see FILL_FROM_OPEN
        filled = greedy(run.pr, cs, start=best, deadline=run.deadline)[0]
        f_filled = run.add_candidate(filled, "greedy fill")
        if f_filled > f_inc:
            best, f_inc = filled, f_filled
            open_ = _open_set(run, bounds, open_all, best, f_inc)
    sub_cs = cs.subset(open_)
    # scaled to the best candidate, so that the dive's gap resolves the fitness near it
    core = _Core(open_, np.flatnonzero(open_), sub_cs,
                 scaled_objective(run.pr, sub_cs, reference_fitness(run.pr, sub_cs, f_inc), f_inc), bounds)
    if len(model.mm.pattern_types) == run.pr.n_gpu_types:
        run.dive_open = int(core.index.size)
    found = -np.inf
    probe = None if open_all or core.index.size < PROBE_MIN_OPEN else dive_probe(run.opts)  # see PROBE_NODE_LIMIT
    if probe is not None:
        found, solved = _solve_core(run, model, core, best, probe, open_all)
        if (solved and np.isfinite(found)) or reaches_bound(run):
            return found
    return max(found, _solve_core(run, model, core, best, None, open_all)[0])


def _open_set(run: MilpRun, bounds: ConfigBounds, open_all: bool, best: Array, f_inc: float) -> Array:
    """The configurations the dive opens for the candidate ``best`` (fitness ``f_inc``): every one whose ``L_c``
    reaches it with ``open_all``, else those within :data:`DIVE_GAP_SHARE` of the gap below the LP bound; the
    candidate's own always. Shapes: best (J, N) -> (C,) bool."""
    value = bounds.objective.value(f_inc)
    threshold = (value - run.gaps["mip_abs_gap"] - run.pruning_tolerance if open_all
                 else bounds.lp_bound - DIVE_GAP_SHARE * (bounds.lp_bound - value))
    return configs_from(run, bounds, threshold, best)


@dataclass(frozen=True)
class _Core:
    """The reduced-cost dive's core: the open configurations (a mask over the run's, their indices and their own
    set), its objective, and the LP's bounds ``L_c`` it was opened by."""
    open_: Array
    index: Array
    configs: ConfigSet
    objective: ScaledObjective
    bounds: ConfigBounds


def _solve_core(run: MilpRun, model: ArrayModel, core: _Core, start: Array, probe: str | None,
                open_all: bool) -> tuple[float, bool]:
    """Solve the core from ``start`` on the chosen solver (``probe`` None, the dive's node budget) or on
    ``probe`` (its node budget, one thread); keep its bound and its placed answer. Returns the answer's fitness
    (-inf when there is none) and whether the solver solved the core to the dive's gap."""
    native = dict(config_highs_options(run.opts))
    if not (open_all and core.index.size < PRESOLVE_MIN_OPEN):  # see PRESOLVE_MIN_OPEN
        native["presolve"] = "on"
    if open_all and FEASIBILITY_JUMP not in run.opts.highs_options and accepts_option(FEASIBILITY_JUMP, False):
        native[FEASIBILITY_JUMP] = False  # see FEASIBILITY_JUMP
    kw, threads, limit = solver_kwargs(run), run.opts.threads, DIVE_NODE_LIMIT
    if probe is not None:
        kw, threads, limit = ({"solver": probe, "feasibility_tol": run.solver_feasibility,
                               "solver_options": PROBE_SCIP_OPTIONS if probe == "scip" else {}}, 1, PROBE_NODE_LIMIT)
    sub = ArrayModel(run.pr, core.configs, core.objective, threads=threads,
                     highs_options=without_restart(run.opts, native), placement=model.mm.pattern_types, **kw)
    out = sub.solve(warm_start=start, **{**run.solve_kwargs(), "node_limit": limit})
    run.last_model = sub  # the model solved last (write_model) when the dive ends the solve
    cs, index = run.cs, core.index
    name = f"reduced-cost dive ({index.size} of {cs.n_configs} configurations open)"
    run.stage(name if probe is None else f"{name}, {probe} probe", replace(out, compile_s=sub.build_s),
              core.objective)
    run.tighten_fitness(_open_bound(run, out, core.objective, core.bounds, ~core.open_))
    solved = out.termination == Termination.OPTIMAL
    if not out.has_solution:
        return -np.inf, solved
    chosen = sub.chosen()
    chosen = np.where(chosen >= 0, index[np.maximum(chosen, 0)], -1)
    return run.add_candidate(place_choice(run, chosen)[0], "reduced-cost dive"), solved


def _open_bound(run: MilpRun, out: MilpOutcome, objective: ScaledObjective, bounds: ConfigBounds,
                closed: Array) -> float:
    """A fitness bound on every allocation from a dive over the open configurations: the larger of the dive's own
    dual bound (every allocation of open configurations only) and the ``closed`` configurations' ``L_c``; NaN
    when the dive's solve gives none. Shapes: closed (C,) bool."""
    if out.termination in (Termination.ERROR, Termination.NUMERICAL, Termination.INFEASIBLE) \
            or not np.isfinite(out.bound):
        return float("nan")
    own = objective.fitness(run.model_bound(out.bound))
    rest = bounds.objective.fitness(float(bounds.value[closed].max())) if closed.any() else -np.inf
    return max(own, rest)


def _dive(run: MilpRun, model: ArrayModel, lower: Array, upper: Array, name: str, source: str) -> float:
    """Solve ``model`` with its fixed columns (``lower == upper``) taken out; keep the placed answer."""
    mm, cs, n_jobs = model.mm, run.cs, run.pr.n_jobs
    sub, free, x_fixed = mm.restricted(lower, upper)
    # no start and no bound taken from it: HiGHS's restart may stay on (see without_restart)
    session = new_session(sub, threads=run.opts.threads, highs_options={**run.opts.highs_options, "presolve": "on"},
                          **solver_kwargs(run))
    out, y = session.solve(**{**run.solve_kwargs(), "node_limit": DIVE_NODE_LIMIT})
    offset = float(mm.cost @ x_fixed)
    # the dive's value in the model's units; it bounds only the restricted model, so no bound is recorded
    run.stage(name, replace(out, objective=out.objective + offset, bound=float("nan"), compile_s=session.setup_s))
    if y is None:
        return -np.inf
    full = x_fixed.copy()
    full[free] = y
    placed = place_choice(run, choice_from_values(cs, n_jobs, full[:cs.n_configs]))[0]
    return run.add_candidate(placed, source)
