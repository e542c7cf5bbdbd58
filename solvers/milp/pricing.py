r"""The LP relaxation of the configuration level by column generation: HiGHS sees a core of the configurations,
numpy prices the rest.

The configuration level is a multiple-choice knapsack: each job takes at most
one configuration, and the jobs are coupled by few rows per GPU type (GPUs,
nodes, bin-packing cuts; node-pattern rows where they are added). An LP optimum
uses about one configuration per job, yet HiGHS's simplex works over every
column: at five-types-2048 81k configurations took 1.0-1.5 s of CPU under every
type's pattern rows, and 0.75 s for the aggregate rows alone. Here the LP is
solved over a core and every other configuration is priced from the core LP's
row duals ``y`` (reduced cost ``d = cost - Aᵀy``, one vectorised pass):

1. *aggregate phase*: the model without pattern rows (rows (0c), (R2)-(R4))
   over each job's most valuable configuration; each round adds, per job, the
   configuration of largest positive reduced cost, until none is left;
2. *whole phase*: the model as built (pattern rows included) over that core and
   every configuration whose Lagrangian bound ``L_c`` in the aggregate phase's
   last duals lies within :data:`CORE_BAND` ``W`` of the bound (``W`` the jobs'
   weight sum), each round adding every configuration of positive reduced cost
   (HiGHS warm from its basis), until none is left.

When no held configuration has a reduced cost above :data:`PRICE_TOL`, the core
LP's optimum is the whole LP's. The bound reported is not the core LP's value
but the whole model's Lagrangian bound for the last duals
(:func:`~goodopt.solvers.milp.reduce.lagrangian_bounds`), valid for any
multipliers: a configuration held with a reduced cost within the tolerance, or
rounds cut short by :data:`MAX_ROUNDS` or the time limit, can make it weaker,
never wrong. The column values are the whole model's (held configurations at
0) and the duals its rows', so the dives and the reduced-cost fixing that
follow read them as the whole LP's. The aggregate phase's per-configuration
bounds ``L_c`` are valid for the model too (its rows relax the model's), and
the reduced-cost steps take the lesser of the two: the LP is degenerate, and
its duals from a core are not those of the whole LP, so either bound may be the
tighter (mixed-2048 seed 2, Sia's objective: the reduced-cost dive opened 2,332
configurations instead of 2,774, the solve 3.1 s of CPU instead of 9.1 s).

Measured on one core of a shared 2-core Xeon (CPU s, the same LP value): the
relaxation of five-types-2048 (81k configurations) 0.41-0.53 s against
1.4-1.8 s for the whole LP; mixed-2048 0.32-0.69 s against 0.8-1.3 s. The
whole exact solve, own objective, one process per seed: five-types-2048 seeds
0-9 66.3 s in all (worst 21.9 s) before, 52.0 s (worst 10.0 s) with this module
and :data:`~goodopt.solvers.milp.levels.PLAIN_CONFIG_NODES` at 30; mixed-2048
seeds 0-4 11.8 s -> 7.9 s. ``make bench`` records each stage's time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from goodopt.formulations.config_matrix import config_matrix
from goodopt.formulations.matrix import MatrixModel

from goodopt.arrays import Array

from ..config_model import ArrayModel
from ..mip_solvers.highs_arrays import HighsSession
from ..mip_solvers.outcome import MilpOutcome
from ..result import Termination
from .reduce import tighter_bounds
from .run import MilpRun, config_highs_options

#: Reduced cost (model units) above which a held configuration enters the core: HiGHS's dual feasibility
#: tolerance.
PRICE_TOL = 1e-7
#: Configurations whose Lagrangian bound in the aggregate phase lies within this share of the weight sum below
#: that phase's bound join the whole phase's first core.
CORE_BAND = 1e-5
#: Configurations from which the LP is solved by column generation: below, HiGHS solves the whole LP in
#: milliseconds (sia-64's 1.7k configurations, cluster-256's 2.9k).
GENERATE_FROM_CONFIGS = 10_000
#: LP solves per phase; past them the phase stops with the bound of its last duals.
MAX_ROUNDS = 40


@dataclass(frozen=True)
class _Phase:
    """The end of one phase: the core LP's outcome, every column's value and every row's dual in the phase's
    model (None when the LP gave none), the core (bool per configuration) and the LP solves."""

    out: MilpOutcome
    x: Array | None
    y: Array | None
    core: Array
    rounds: int


def generates(run: MilpRun, mm: MatrixModel) -> bool:
    """Whether ``mm``'s LP relaxation is solved by column generation: HiGHS, a finite p (the ``u_j`` columns
    make every job's choice optional), and at least :data:`GENERATE_FROM_CONFIGS` configurations."""
    return (run.opts.solver == "highs" and not mm.epigraph and run.objective is not None
            and mm.n_configs >= GENERATE_FROM_CONFIGS)


def priced_relaxation(run: MilpRun, model: ArrayModel, **kw: Any) -> MilpOutcome:  # Any: the relaxation's keyword options, passed on
    """``model``'s LP relaxation by column generation where :func:`generates` says so (else solved whole).

    Records ``lp_pricing`` (each phase's core size and LP solves) in the run's
    info and loads the whole model's column values and row duals into
    ``model``; the outcome's bound is the whole model's Lagrangian bound for
    the last duals, its objective the core LP's value.
    """
    mm = model.mm
    if not generates(run, mm):
        return model.solve(relax=True, **kw)
    limit = kw.get("time_limit_s")
    deadline = None if limit is None else time.perf_counter() + limit
    t0 = time.perf_counter()
    plain = config_matrix(run.pr, run.cs, model.objective)
    first = _generate(run, plain, _first_core(run, plain), deadline, best_per_job=True)
    t_first = time.perf_counter() - t0
    core, plain_bounds = first.core, None
    if first.y is not None:
        _, total, value = tighter_bounds(plain, first.y)
        if np.isfinite(total):
            core = core | (value >= total - CORE_BAND * float(run.pr.weights.sum()))
            plain_bounds = value  # the aggregate rows relax the model: their L_c bound it as well
    whole = _generate(run, mm, core, deadline, best_per_job=False)
    if whole.x is None and whole.out.termination != Termination.TIME_LIMIT:
        # a core too small to be feasible (every job must run, say): the whole LP decides
        return model.solve(relax=True, **kw)
    run.info["lp_pricing"] = {"configs": mm.n_configs, "aggregate_core": int(first.core.sum()),
                              "aggregate_lp_solves": first.rounds, "first_core": int(core.sum()),
                              "core": int(whole.core.sum()), "lp_solves": whole.rounds,
                              "aggregate_s": t_first, "whole_s": time.perf_counter() - t0 - t_first}
    out = replace(whole.out, solve_s=time.perf_counter() - t0, lp_iterations=(first.out.lp_iterations or 0)
                  + (whole.out.lp_iterations or 0), n_variables=mm.n_columns, n_constraints=mm.n_rows)
    if whole.x is None or whole.y is None:
        return out
    model.load_relaxation(whole.x, whole.y, plain_bounds)
    bound = tighter_bounds(mm, whole.y)[1]
    return replace(out, bound=bound) if np.isfinite(bound) else out


def _first_core(run: MilpRun, mm: MatrixModel) -> Array:
    """Per job and GPU type, the most valuable configuration and the most valuable per GPU (and every
    configuration a bound keeps above 0). Shapes: -> (C,) bool.

    Against each job's most valuable configuration alone, on five-types-2048 seeds 4 and 5 (own objective):
    the aggregate phase in 10 and 6 LP solves instead of 14 and 15, 0.53 and 0.41 s of CPU for the whole
    relaxation against 0.54 and 0.58 s (the whole LP: 1.4-1.8 s)."""
    cs = run.cs
    C = cs.n_configs
    value = mm.cost[:C]
    key = cs.job * (int(cs.gpu_type.max(initial=0)) + 1) + cs.gpu_type
    core = mm.lower[:C] > 0
    for score in (value, value / np.maximum(cs.n_gpus, 1)):
        order = np.lexsort((-score, key))
        _, first = np.unique(key[order], return_index=True)
        core[order[first]] = True
    return core


def _generate(run: MilpRun, mm: MatrixModel, core: Array, deadline: float | None, *,
              best_per_job: bool) -> _Phase:
    """Column generation on ``mm`` from ``core`` (configurations; every other column is always in)."""
    C = mm.n_configs
    core = core.copy()
    cols = np.concatenate([np.flatnonzero(core), np.arange(C, mm.n_columns)])
    session = HighsSession(_columns(mm, cols), threads=run.opts.threads, highs_options=config_highs_options(run.opts))
    rounds, iterations = 0, 0
    while True:
        left = None if deadline is None else max(deadline - time.perf_counter(), 1e-3)
        out, x = session.solve(relax=True, time_limit_s=left)
        rounds += 1
        iterations += out.lp_iterations or 0
        y = session.lp_row_dual
        if out.termination != Termination.OPTIMAL or x is None or y is None:
            return _Phase(replace(out, lp_iterations=iterations), None, None, core, rounds)
        signed = tighter_bounds(mm, y)[0]
        reduced = (mm.cost - mm.A.rmatvec(signed))[:C]
        enter = ~core & (reduced > PRICE_TOL)
        if best_per_job and enter.any():
            enter = _best_of_each_job(run, enter, reduced)
        expired = deadline is not None and time.perf_counter() >= deadline
        if not enter.any() or rounds >= MAX_ROUNDS or expired:
            full = np.zeros(mm.n_columns)
            full[cols] = x
            return _Phase(replace(out, lp_iterations=iterations), full, signed, core, rounds)
        new = np.flatnonzero(enter)
        session.add_columns(_columns(mm, new))
        cols = np.concatenate([cols, new])
        core[new] = True


def _best_of_each_job(run: MilpRun, enter: Array, reduced: Array) -> Array:
    """Of the configurations ``enter``, each job's one of largest reduced cost. Shapes: (C,) -> (C,) bool."""
    idx = np.flatnonzero(enter)
    job = run.cs.job[idx]
    order = np.lexsort((-reduced[idx], job))
    _, first = np.unique(job[order], return_index=True)
    out = np.zeros_like(enter)
    out[idx[order[first]]] = True
    return out


def _columns(mm: MatrixModel, cols: Array) -> MatrixModel:
    """The model over the columns ``cols`` alone (in that order), its rows as they are."""
    return replace(mm, cost=mm.cost[cols], lower=mm.lower[cols], upper=mm.upper[cols], integer=mm.integer[cols],
                   A=mm.A.columns(cols), n_configs=0, pattern_types=(), aggregate_types=())
