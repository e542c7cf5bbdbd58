r"""Reduced-cost fixing: configurations that no allocation as good as the incumbent can use are taken out of
the configuration set before the configuration MILP is built.

For any row multipliers ``y`` and every ``x`` within its column bounds whose
row activities lie within the row bounds (``d = cost - Aᵀy``)::

    cost·x = d·x + y·(A x) <= Σ_i max(y_i l_i, y_i u_i) + Σ_k max(d_k lo_k, d_k up_k) =: L

and, for a binary column ``z_c`` set to 1, ``cost·x <= L - max(d_c lo_c, d_c up_c) + d_c =: L_c``. With
``y`` the LP relaxation's duals, ``L`` is its optimum; the bound holds for any ``y``, so the LP's tolerances
cannot make it wrong, only weaker. The LP is that of the configuration level under every GPU type's
node-pattern rows, a relaxation of the placement problem, so ``L_c`` bounds every allocation that uses
configuration ``c``. When ``L_c`` lies below the incumbent's value by more than the solver's gap, ``c``
belongs to no allocation as good as the incumbent, and every later model is built without it. The answer's
bound stays valid: what was taken out is worth at most ``max L_c`` over the dropped configurations, below
the incumbent (:attr:`goodopt.solvers.milp.run.MilpRun.dropped_bound`).

Removed, not fixed at 0: with presolve off (this method's default, see
:func:`~goodopt.solvers.milp.run.config_highs_options`) HiGHS carries fixed
columns through its whole search. On five-types-2048 under Sia's objective the
configuration MILP took 79 s with 78k of its 81k columns fixed at 0, and 4.4 s
with the same columns removed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from goodopt.formulations.configs import match_configs
from goodopt.formulations.matrix import MatrixModel
from goodopt.formulations.scaled_objective import ScaledObjective

from goodopt.arrays import Array

from ..config_model import ArrayModel
from .run import MilpRun

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class ConfigBounds:
    """Per configuration, a bound ``L_c`` (model units of ``objective``) on every solution that chooses it.

    ``lp_bound`` is ``L``, the bound on every solution. Shapes: value (C,).
    """

    value: Array
    lp_bound: float
    objective: ScaledObjective


def lagrangian_bounds(mm: MatrixModel, y: Array) -> tuple[float, Array]:
    """``(L, L_c)`` for the multipliers ``y``: the bound on every solution, and on those with column ``c`` at 1
    for each of the first ``mm.n_configs`` columns (``L`` is +inf when ``y`` meets an unbounded row or column).
    Shapes: y (m,) -> (n_configs,)."""
    d = mm.cost - mm.A.rmatvec(y)
    with np.errstate(invalid="ignore"):
        rows = np.where(y > 0, y * mm.row_upper, np.where(y < 0, y * mm.row_lower, 0.0))
        cols = np.where(d > 0, d * mm.upper, np.where(d < 0, d * mm.lower, 0.0))
    total = float(rows.sum() + cols.sum())
    if not np.isfinite(total):
        return np.inf, np.full(mm.n_configs, np.inf)
    C = mm.n_configs
    return total, total - cols[:C] + d[:C]


def lp_config_bounds(run: MilpRun, model: ArrayModel) -> ConfigBounds | None:
    """The bounds ``L_c`` from ``model``'s last LP relaxation (its duals), each the lesser of that and the
    bound a relaxation gave where the model holds one (:attr:`goodopt.solvers.config_model.ArrayModel.relaxation_bounds`); None when there
    are none (no duals, rows added since, or an epigraph model)."""
    mm, y = model.mm, model.session.lp_row_dual
    if y is None or run.objective is None or model.session.n_rows != mm.n_rows or len(y) != mm.n_rows:
        return None
    _, total, value = tighter_bounds(mm, y)
    if not np.isfinite(total):
        return None
    other = model.relaxation_bounds  # a relaxation's bounds hold for this model too: the lesser of the two
    if other is not None and len(other) == len(value):
        value = np.minimum(value, other)
    return ConfigBounds(value=value, lp_bound=total, objective=run.objective)


def tighter_bounds(mm: MatrixModel, y: Array) -> tuple[Array, float, Array]:
    """``(multipliers, L, L_c)`` of :func:`lagrangian_bounds` for ``y`` or ``-y`` (HiGHS's sign convention for a
    maximisation's duals aside): the orientation whose signs fit the rows (:func:`sign_misfit`), then the
    tighter bound where both fit alike. Its multipliers of a forbidden sign are set to 0
    (:func:`feasible_multipliers`). Any multipliers give a valid bound. Shapes: y (m,) -> (m,), float,
    (n_configs,)."""
    y = np.asarray(y, dtype=float)
    misfit, misfit_neg = sign_misfit(mm, y), sign_misfit(mm, -y)
    if misfit != misfit_neg:  # the signs decide: one Lagrangian pass
        z = feasible_multipliers(mm, -y if misfit_neg < misfit else y)
        return (z, *lagrangian_bounds(mm, z))
    pos, neg = feasible_multipliers(mm, y), feasible_multipliers(mm, -y)
    (total, value), (total_neg, value_neg) = lagrangian_bounds(mm, pos), lagrangian_bounds(mm, neg)
    return (neg, total_neg, value_neg) if total_neg < total else (pos, total, value)


def sign_misfit(mm: MatrixModel, y: Array) -> float:
    """How much of ``y`` has a sign its row's infinite side forbids (a row without an upper limit takes
    ``y <= 0``, one without a lower limit ``y >= 0``): the sum of those multipliers' magnitudes. The duals of
    an LP solver in the right orientation misfit by rounding residue at most; in the wrong one by whole duals.
    Shapes: y (m,) -> float."""
    no_upper, no_lower = ~np.isfinite(mm.row_upper), ~np.isfinite(mm.row_lower)
    return float(np.abs(y[(no_upper & (y > 0)) | (no_lower & (y < 0))]).sum())


def feasible_multipliers(mm: MatrixModel, y: Array) -> Array:
    """``y`` with each multiplier of the sign a row's infinite side forbids set to 0. Where an LP solver's dual
    carries a residue such as 1e-14 of the wrong sign (seen on a row of the five-types-512 model of seed 3,
    Sia's objective, from duals of a column-generated LP), that residue would otherwise meet the infinite side
    and make the bound +inf. Shapes: y (m,) -> (m,)."""
    y = np.asarray(y, dtype=float)
    no_upper, no_lower = ~np.isfinite(mm.row_upper), ~np.isfinite(mm.row_lower)
    return np.where((no_upper & (y > 0)) | (no_lower & (y < 0)), 0.0, y)


def signed_duals(mm: MatrixModel, y: Array) -> Array:
    """``y`` or ``-y`` as :func:`tighter_bounds` chooses. Shapes: y (m,) -> (m,)."""
    return tighter_bounds(mm, y)[0]


def configs_from(run: MilpRun, bounds: ConfigBounds, threshold: float, best: Array) -> Array:
    """Which configurations have ``L_c >= threshold`` (model units of ``bounds``), those of the allocation
    ``best`` always among them. Shapes: best (J, N) -> (C,) bool."""
    kept = bounds.value >= threshold
    used = match_configs(run.pr, run.cs, best)
    kept[used[used >= 0]] = True
    return kept


def drop_configs(run: MilpRun, bounds: ConfigBounds | None) -> int:
    """Take every configuration whose bound lies below the best candidate out of ``run.cs``; returns how many.

    The candidate's own configurations always stay. Call it before the
    objective is (re-)scaled: the scaled objective's arrays follow ``run.cs``.
    """
    best, _, f_inc = run.best()
    if bounds is None or best is None or not (np.isfinite(f_inc) and f_inc > 0) \
            or len(bounds.value) != run.cs.n_configs:
        return 0
    ob = bounds.objective
    # below the candidate (in the LP's units) by more than the solver's gap and pruning tolerance
    drop = ~configs_from(run, bounds, ob.value(f_inc) - run.gaps["mip_abs_gap"] - run.pruning_tolerance, best)
    n = int(drop.sum())
    if n == 0 or n == run.cs.n_configs:
        return 0
    run.dropped_bound = max(run.dropped_bound, ob.fitness(float(bounds.value[drop].max())))
    run.cs = run.cs.subset(~drop)
    run.info["reduced_cost_fixing"] = {"dropped_configs": n, "kept_configs": run.cs.n_configs,
                                       "bound_of_dropped": run.dropped_bound, "incumbent": f_inc}
    log.info("milp: %d of %d configurations dropped by reduced costs (they bound below %.9g)", n,
             n + run.cs.n_configs, f_inc)
    return n
