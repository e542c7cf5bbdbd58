r"""The LP relaxation of a one-type cluster under its node-pattern rows, by pricing: the multi-node moves are held
at 0 until the duals say one of them pays.

Few multi-node moves are part of such an LP optimum (at cluster-2048 seed 0,
11 of 16.9k), and without them the dual simplex's work is about halved.
Pricing keeps the LP exact: after each LP the reduced costs ``d = cost - Aᵀy``
of the held columns are read from its duals, those with ``d > PRICE_TOL``
(they could raise the objective) are released and the LP is re-solved warm.
When none is left, the LP's optimum is the whole model's. The bound kept is
not the held LP's objective but the Lagrangian bound of the whole model for
the LP's duals (:func:`~goodopt.solvers.milp.reduce.lagrangian_bounds`),
valid for any duals, so a column held with a reduced cost within the
tolerance cannot make it wrong.

Where :func:`prices` says so: one GPU type. Measured over seeds 0-4, both
objectives, one process: cluster-2048 took 3.03 s of CPU in all (0.20-0.37 s
a solve) against 5.57 s (0.41-0.68 s), its LP relaxation ending every solve;
cluster-256 0.68 s against 0.72 s. With several types the priced LP ends at
another optimal vertex than the whole LP's and the dives that follow it moved
by up to 2x either way (holding moves over two nodes' GPUs, seeds 0-4:
five-types-2048 80.8k LP iterations in all against 62.6k, mixed-2048 48.4k
against 55.8k, five-types-512 one solve 10x slower), so there the whole LP
is solved.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from goodopt.formulations.configs import ConfigSet
from goodopt.formulations.matrix import MatrixModel

from goodopt.arrays import Array
from goodopt.problem import AllocationProblem

from ..config_model import ArrayModel
from ..outcome import MilpOutcome
from ..result import Termination
from .reduce import tighter_bounds
from .run import MilpRun

#: Reduced cost (model units) above which a held column is released: HiGHS's dual feasibility tolerance.
PRICE_TOL = 1e-7


def held_configs(configs: ConfigSet) -> Array:
    """The configurations the priced LP starts without: the multi-node moves. Shapes: -> (C,) bool."""
    return configs.multi & ~configs.keep


def prices(problem: AllocationProblem, mm: MatrixModel) -> bool:
    """Whether the LP relaxation of ``mm`` is solved by pricing: one GPU type, under its node-pattern rows, and
    a finite p (the ``u_j`` columns)."""
    return problem.n_gpu_types == 1 and bool(mm.pattern_types) and not mm.epigraph


def priced_relaxation(run: MilpRun, model: ArrayModel, **kw: Any) -> MilpOutcome:
    """``model``'s LP relaxation, by pricing where :func:`prices` says so (else solved whole).

    Records ``lp_pricing`` (columns held, released, LP solves) in the run's
    info; the outcome's bound is the whole model's Lagrangian bound for the
    last LP's duals.
    """
    mm = model.mm
    hold = np.zeros(mm.n_columns, bool)
    if prices(run.pr, mm):
        hold[:mm.n_configs] = held_configs(run.cs)
    if not hold.any():
        return model.solve(relax=True, **kw)
    pricer = _Pricer(mm)
    out, pricing = model.solve_priced(hold, pricer, time_limit_s=kw.get("time_limit_s"))
    run.info["lp_pricing"] = {"held": pricing.held, "released": pricing.released, "lp_solves": pricing.rounds}
    y = model.session.lp_row_dual
    if out.termination != Termination.OPTIMAL or y is None:
        return out
    bound = pricer.bound(y)
    return replace(out, bound=bound) if np.isfinite(bound) else out


class _Pricer:
    """Row duals -> the columns whose reduced cost could raise the objective (every column when the duals bound
    nothing); keeps the whole model's Lagrangian bound for the last duals it priced."""

    def __init__(self, mm: MatrixModel) -> None:
        self.mm = mm
        self._last: tuple[Array, float] | None = None

    def bound(self, y: Array) -> float:
        """The whole model's Lagrangian bound for the row duals ``y`` (as signed by :func:`tighter_bounds`)."""
        if self._last is not None and self._last[0] is y:
            return self._last[1]
        return tighter_bounds(self.mm, y)[1]

    def __call__(self, y: Array) -> Array:
        mm = self.mm
        signed, total, _ = tighter_bounds(mm, y)
        self._last = (y, total)
        if not np.isfinite(total):
            return np.ones(mm.n_columns, bool)
        return (mm.cost - mm.A.rmatvec(signed)) > PRICE_TOL
