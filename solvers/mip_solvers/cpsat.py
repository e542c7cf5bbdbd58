r"""CP-SAT (OR-Tools), on an integer relaxation of goodopt's arrays whose rounding is added to the bound.

CP-SAT takes integer variables, integer coefficients and an integer objective only, so the model it solves, ``R``,
is built from the :class:`~goodopt.formulations.matrix.MatrixModel` so that every feasible point of the model maps
to a feasible point of ``R`` (``R`` is a relaxation) and ``R``'s bound, corrected, bounds the model:

1. a continuous column that some equality row with integral coefficients and right-hand side fixes to a whole
   number once the integer columns are whole (coefficient +-1 there: goodopt's idle indicators ``u_j = 1 - Σ z``)
   is made integer: it is whole at every feasible point;
2. any other continuous column ``t`` (the epigraph variable at p = +-inf) becomes ``T / K`` with ``T`` integer,
   ``K`` a power of two (about ``2^40 / max |bound|``), ``T`` in ``[floor(K lb), ceil(K ub)]``; a point maps to
   ``T = floor(K t)``, which keeps every row only where ``t`` pushes it one way (coefficient >= 0 in ``<=`` rows,
   <= 0 in ``>=`` rows, no equality): otherwise the model is refused (``milp-pwl``'s interpolation weights);
3. a row with non-integral coefficients is multiplied by a power of two ``P`` and its coefficients rounded toward
   the relaxation (down in ``<=`` rows, up in ``>=`` rows; an equality becomes both), which needs every column in
   it to be >= 0; its bounds are rounded inward, exactly, as its activity is whole;
4. the objective is multiplied by a power of two ``Q`` and rounded; the bound is ``R``'s bound divided by ``Q``,
   plus the most the rounding can hide over the columns' ranges, plus ``c_t / K`` per positive ``c_t``.

The answer's integer columns are then checked against the model's own rows, and its continuous columns found by
HiGHS with the integer ones fixed (one LP); a point that is not feasible is no solution (the bound stands).
Parameters: ``max_time_in_seconds``, ``relative_gap_limit``, ``absolute_gap_limit`` (times ``Q``),
``num_workers`` (1 unless ``threads`` says more), ``random_seed`` 0, ``linearization_level`` 2
(:data:`LINEARIZATION_LEVEL`), ``catch_sigint_signal`` false (Ctrl-C and
the watch call ``stop_search``). CP-SAT has no branch-and-bound nodes: ``node_limit`` caps its conflicts
(``max_number_of_conflicts``, as deterministic), and ``nodes`` reports its branches. Status: ``OPTIMAL`` ->
optimal; ``FEASIBLE``/``UNKNOWN`` -> iteration_limit when the conflict cap ended it, else time_limit;
``INFEASIBLE`` -> infeasible; ``MODEL_INVALID`` -> error with CP-SAT's reason.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from importlib.metadata import version as _dist_version
from typing import Any

import numpy as np
from goodopt.formulations.matrix import MatrixModel

from goodopt.arrays import Array

from ..result import Termination
from .base import Clock, Limits, Start, apply_native, outcome, refused, row_arrays, start_pairs
from .outcome import MilpOutcome
from .solver_watch import run_watched

NAME = "cpsat"
#: goodopt's limits (:class:`~.base.Limits`) -> this solver's parameters.
PARAMETERS = {"time_limit_s": "max_time_in_seconds", "node_limit": "max_number_of_conflicts",
              "mip_rel_gap": "relative_gap_limit", "mip_abs_gap": "absolute_gap_limit", "threads": "num_workers"}
#: Largest magnitude a row's or the objective's scaled activity may reach (CP-SAT works in 64-bit integers).
MAX_ACTIVITY = 2.0**52
#: CP-SAT's ``linearization_level`` unless ``solver_options`` sets one: 2 puts every constraint into its LP. At
#: its default 1, on one worker, CP-SAT's bound stayed at 4.39 against an optimum of 1.6228 on hetero-16 seed 0
#: (the reference model, 40 s, a million branches); at 2 it certified in 2.6 s, hetero-16 seed 1 in 0.07 s
#: against no certificate in 60 s, and sia-64 seeds 0-1 and testbed-over seed 0 in 1.9 / 2.3 / 1.8 CPU s
#: against 3.3 / 2.8 / 1.9 s.
LINEARIZATION_LEVEL = 2
#: Resolution of a scaled continuous column: ``K`` makes its largest bound about this many units.
COLUMN_UNITS = 2.0**40


@functools.lru_cache(maxsize=1)
def version() -> str:
    return f"CP-SAT (OR-Tools {_dist_version('ortools')})"


@dataclass(frozen=True)
class Relaxation:
    """``R`` as integer data: columns' bounds, rows' coefficients and bounds, objective, and the corrections."""

    lower: Array
    upper: Array
    scale: Array  # per column: 1, or K for a scaled continuous column (x = X / K)
    rows: list[tuple[Array, Array, float | None, float | None]]
    cost: Array
    q: float
    slack: float  # what the rounding can hide, added to R's bound / q


def _pow2(x: float) -> float:
    return float(2.0 ** np.floor(np.log2(x))) if x > 0 and np.isfinite(x) else 1.0


def _implied_integer(model: MatrixModel, indptr: Array, cols: Array, vals: Array) -> Array:
    """Continuous columns that an all-integral equality row makes whole (step 1). Shapes: -> (n,) bool."""
    out = np.zeros(model.n_columns, bool)
    for i in np.flatnonzero((model.row_lower == model.row_upper) & (model.row_upper == np.round(model.row_upper))):
        c, v = cols[indptr[i]:indptr[i + 1]], vals[indptr[i]:indptr[i + 1]]
        cont = ~model.integer[c]
        if cont.sum() == 1 and abs(v[cont][0]) == 1 and np.all(v == np.round(v)):
            out[c[cont][0]] = True
    return out


def relax(model: MatrixModel) -> Relaxation | str:
    """``R`` (steps 1-4), or why the model cannot be relaxed so."""
    if not (np.all(np.isfinite(model.lower)) and np.all(np.isfinite(model.upper))):
        return "every column needs finite bounds"
    indptr, cols, vals = row_arrays(model)
    whole = model.integer | _implied_integer(model, indptr, cols, vals)
    span = np.maximum(np.abs(model.lower), np.abs(model.upper))
    scale = np.where(whole, 1.0, [_pow2(COLUMN_UNITS / max(s, 1e-300)) for s in span])
    lower = np.where(whole, np.ceil(model.lower - 1e-9), np.floor(model.lower * scale))
    upper = np.where(whole, np.floor(model.upper + 1e-9), np.ceil(model.upper * scale))
    rows = []
    for i in range(model.n_rows):
        made = _row(model, i, cols[indptr[i]:indptr[i + 1]], vals[indptr[i]:indptr[i + 1]], whole, scale, span)
        if isinstance(made, str):
            return made
        rows += made
    c = model.cost / scale
    q = _pow2(MAX_ACTIVITY / max(float(np.abs(c) @ np.maximum(np.abs(lower), np.abs(upper))), 1e-300))
    cost = np.round(c * q)
    delta = c - cost / q  # the objective's rounding, per (scaled) column
    slack = float(np.maximum(delta * lower, delta * upper).sum()) + float((model.cost[~whole].clip(0) / scale[~whole]).sum())
    return Relaxation(lower, upper, scale, rows, cost, q, slack)


def _row(model: MatrixModel, i: int, c: Array, v: Array, whole: Array, scale: Array,
         span: Array) -> list[tuple[Array, Array, float | None, float | None]] | str:
    """Row ``i`` of ``R`` (one or two rows; step 3), or why it cannot be made."""
    lo, hi = float(model.row_lower[i]), float(model.row_upper[i])
    a = v / scale[c]
    scaled = ~whole[c]
    if scaled.any() and (lo == hi or (np.isfinite(hi) and np.any(v[scaled] < 0))
                         or (np.isfinite(lo) and np.any(v[scaled] > 0))):
        return (f"row {i} ({model.names[i] if i < len(model.names) else '?'}) holds a continuous column that "
                "could move it both ways")
    if np.all(a == np.round(a)):
        return [(c, a, np.ceil(lo - 1e-9) if np.isfinite(lo) else None,
                 np.floor(hi + 1e-9) if np.isfinite(hi) else None)]
    if np.any(model.lower[c] < 0):
        return f"row {i} has real coefficients on a column that may be negative"
    p = _pow2(MAX_ACTIVITY / max(float(np.abs(v) @ span[c]), 1e-300))
    out: list[tuple[Array, Array, float | None, float | None]] = []
    if np.isfinite(hi):
        out.append((c, np.floor(a * p), None, float(np.floor(hi * p))))
    if np.isfinite(lo):
        out.append((c, np.ceil(a * p), float(np.ceil(lo * p)), None))
    return out


def _build(r: Relaxation, limits: Limits, start: Start) -> tuple[Any, list[Any]]:
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    xs = [m.new_int_var(int(lo), int(hi), f"x{j}") for j, (lo, hi) in enumerate(zip(r.lower, r.upper))]
    big = cp_model.INT_MAX
    for c, a, lo, hi in r.rows:
        expr = cp_model.LinearExpr.weighted_sum([xs[j] for j in c.tolist()], [int(x) for x in a.tolist()])
        m.add_linear_constraint(expr, -big if lo is None else int(lo), big if hi is None else int(hi))
    nz = np.flatnonzero(r.cost)
    m.maximize(cp_model.LinearExpr.weighted_sum([xs[j] for j in nz.tolist()], [int(x) for x in r.cost[nz]]))
    pairs = start_pairs(start, len(xs))
    if pairs is not None:
        for j, val in zip(*pairs):
            hint = int(np.clip(np.round(val * r.scale[j]), r.lower[j], r.upper[j]))
            m.add_hint(xs[j], hint)
    return m, xs


def _solver(limits: Limits, q: float) -> Any:
    from ortools.sat.python import cp_model

    s = cp_model.CpSolver()
    p = s.parameters
    p.num_workers, p.random_seed, p.catch_sigint_signal = limits.n_threads, 0, False
    p.linearization_level = LINEARIZATION_LEVEL
    p.log_search_progress = limits.log
    if limits.time_limit_s is not None:
        p.max_time_in_seconds = float(limits.time_limit_s)
    if limits.node_limit is not None:
        p.max_number_of_conflicts = int(limits.node_limit)
    p.relative_gap_limit = float(limits.mip_rel_gap or 0.0)
    p.absolute_gap_limit = float(limits.mip_abs_gap or 0.0) * q
    apply_native(lambda k, v: setattr(p, k, v), limits.native, "CP-SAT")
    return s


def solve(model: MatrixModel, limits: Limits, start: Start = None) -> tuple[MilpOutcome, Array | None]:
    from ortools.sat.python import cp_model

    clock = Clock()
    r = relax(model)
    if isinstance(r, str):
        return refused(model, NAME, version(), r), None
    m, xs = _build(r, limits, start)
    s = _solver(limits, r.q)
    clock.built()
    status, stopped = run_watched(lambda: s.solve(m), s.stop_search, limits.time_limit_s, solver="CP-SAT")
    S = cp_model
    if status == S.MODEL_INVALID:
        return refused(model, NAME, version(), f"CP-SAT found the model invalid: {m.validate()}"), None
    capped = limits.node_limit is not None and s.num_conflicts >= limits.node_limit
    term = {S.OPTIMAL: Termination.OPTIMAL, S.INFEASIBLE: Termination.INFEASIBLE}.get(
        status, Termination.ITERATION_LIMIT if capped else Termination.TIME_LIMIT)
    if stopped:
        term = Termination.TIME_LIMIT if term != Termination.OPTIMAL else term
    x = _decode(model, r, [s.value(v) for v in xs]) if status in (S.OPTIMAL, S.FEASIBLE) else None
    bound = s.best_objective_bound / r.q + r.slack if term != Termination.INFEASIBLE else float("nan")
    raw = s.status_name(status)
    if x is None and status in (S.OPTIMAL, S.FEASIBLE):
        raw += " (of the integer relaxation, whose answer breaks the model's own rows: no solution)"
    return outcome(termination=term, x=x, model=model, bound=bound, nodes=int(s.num_branches),
                   solve_s=clock.solve_s, compile_s=clock.compile_s, raw=raw, solver=NAME, version=version()), x


def _decode(model: MatrixModel, r: Relaxation, values: list[int]) -> Array | None:
    """The model's point from ``R``'s: integer columns as found, continuous ones by HiGHS with those fixed; None
    when that point breaks one of the model's own rows."""
    from .highs_arrays import HighsSession

    x = np.asarray(values, float) / r.scale
    cont = ~model.integer
    if cont.any():
        lo, hi = np.where(cont, model.lower, x), np.where(cont, model.upper, x)
        sub, free, fixed = model.restricted(lo, hi)
        x = fixed.copy()
        if free.size:  # (HiGHS calls a model without columns "empty", not optimal)
            out, y = HighsSession(replace(sub, integer=np.zeros(len(free), bool))).solve(relax=True)
            if y is None or out.termination != Termination.OPTIMAL:
                return None
            x[free] = y
    act = model.A.matvec(x)
    tol = 1e-9 * max(1.0, float(np.abs(model.A.data).max(initial=0.0)))
    if np.any(act > model.row_upper + tol * (1 + np.abs(model.row_upper))) or \
            np.any(act < model.row_lower - tol * (1 + np.abs(model.row_lower))):
        return None
    return x
