"""Gurobi (gurobipy), from goodopt's arrays through its matrix interface; optional, found at run time.

Parameters: ``TimeLimit``, ``NodeLimit``, ``MIPGap``, ``MIPGapAbs``, ``FeasibilityTol`` and ``IntFeasTol`` (the
feasibility tolerance, at least Gurobi's smallest 1e-9), ``Threads`` (1 unless ``threads`` says more), ``Seed`` 0.
Ctrl-C and the watch stop Gurobi through ``terminate``. Status: ``OPTIMAL`` -> optimal; ``TIME_LIMIT`` ->
time_limit; ``NODE_LIMIT``, ``ITERATION_LIMIT``, ``SOLUTION_LIMIT`` -> iteration_limit; ``INFEASIBLE`` ->
infeasible; ``UNBOUNDED``/``INF_OR_UNBD`` -> unbounded; ``INTERRUPTED`` after the watch's stop -> time_limit;
``NUMERIC``, ``SUBOPTIMAL`` and the rest -> error. A licence that limits the model's size (pip's gurobipy comes
with one: at most 2,000 variables and 2,000 constraints) makes a larger model an ``error`` outcome that says so.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from goodopt.formulations.matrix import MatrixModel

from goodopt.arrays import Array

from ..result import Termination
from .base import Clock, Limits, Start, apply_native, outcome, refused, start_pairs
from .outcome import MilpOutcome
from .solver_watch import run_watched

NAME = "gurobi"
#: goodopt's limits (:class:`~.base.Limits`) -> this solver's parameters.
PARAMETERS = {"time_limit_s": "TimeLimit", "node_limit": "NodeLimit", "mip_rel_gap": "MIPGap", "mip_abs_gap": "MIPGapAbs",
              "feasibility_tol": "FeasibilityTol/IntFeasTol", "threads": "Threads"}

#: Gurobi's error number for a model beyond its licence's size limit.
SIZE_LIMIT_ERROR = 10010

_STATUS = {2: Termination.OPTIMAL, 3: Termination.INFEASIBLE, 4: Termination.UNBOUNDED, 5: Termination.UNBOUNDED,
           7: Termination.ITERATION_LIMIT, 8: Termination.ITERATION_LIMIT, 9: Termination.TIME_LIMIT,
           10: Termination.ITERATION_LIMIT}


@functools.lru_cache(maxsize=1)
def version() -> str:
    import gurobipy

    return "Gurobi " + ".".join(str(v) for v in gurobipy.gurobi.version())


def _env(limits: Limits) -> Any:
    import gurobipy

    env = gurobipy.Env(empty=True)
    env.setParam("OutputFlag", 1 if limits.log else 0)
    env.start()
    return env


def _build(model: MatrixModel, limits: Limits, env: Any) -> tuple[Any, Any]:
    import gurobipy
    import scipy.sparse as sp

    m = gurobipy.Model(env=env)
    p: dict[str, float] = {"Threads": limits.n_threads, "Seed": 0}
    if limits.time_limit_s is not None:
        p["TimeLimit"] = float(limits.time_limit_s)
    if limits.node_limit is not None:
        p["NodeLimit"] = float(limits.node_limit)
    if limits.mip_rel_gap is not None:
        p["MIPGap"] = float(limits.mip_rel_gap)
    if limits.mip_abs_gap is not None:
        p["MIPGapAbs"] = float(limits.mip_abs_gap)
    if limits.feasibility_tol is not None:
        p["FeasibilityTol"] = p["IntFeasTol"] = max(float(limits.feasibility_tol), 1e-9)
    for key, value in p.items():
        m.setParam(key, value)
    apply_native(m.setParam, limits.native, "Gurobi")
    vtype = np.where(model.integer, gurobipy.GRB.INTEGER, gurobipy.GRB.CONTINUOUS)
    x = m.addMVar(model.n_columns, lb=model.lower, ub=model.upper, obj=model.cost, vtype=vtype)
    A = sp.csc_matrix((model.A.data, model.A.indices, model.A.indptr), shape=model.A.shape).tocsr()
    lo, hi = model.row_lower, model.row_upper
    eq = lo == hi
    for rows, sense, rhs in ((eq, "=", hi), (~eq & np.isfinite(hi), "<", hi), (~eq & np.isfinite(lo), ">", lo)):
        if rows.any():
            m.addMConstr(A[rows], x, sense, rhs[rows])
    m.ModelSense = gurobipy.GRB.MAXIMIZE
    return m, x


def solve(model: MatrixModel, limits: Limits, start: Start = None) -> tuple[MilpOutcome, Array | None]:
    import gurobipy

    clock = Clock()
    env = _env(limits)
    try:
        m, xv = _build(model, limits, env)
        pairs = start_pairs(start, model.n_columns)
        if pairs is not None:
            s = np.full(model.n_columns, gurobipy.GRB.UNDEFINED)
            s[pairs[0]] = pairs[1]
            xv.Start = s
        clock.built()
        try:
            _, stopped = run_watched(m.optimize, m.terminate, limits.time_limit_s, solver="Gurobi")
        except gurobipy.GurobiError as exc:
            if exc.errno == SIZE_LIMIT_ERROR:
                return refused(model, NAME, version(), f"restricted licence: the model has {model.n_columns:,} "
                               f"columns and {model.n_rows:,} rows, more than the licence allows ({exc})",
                               compile_s=clock.compile_s), None
            raise
        return _read(model, m, xv, stopped, clock)
    finally:
        env.dispose()


def _read(model: MatrixModel, m: Any, xv: Any, stopped: bool, clock: Clock) -> tuple[MilpOutcome, Array | None]:
    status = int(m.Status)
    term = _STATUS.get(status, Termination.TIME_LIMIT if stopped and status == 11 else Termination.ERROR)
    x = None
    if m.SolCount > 0 and term not in (Termination.INFEASIBLE, Termination.UNBOUNDED):
        x = np.asarray(xv.X, float)
        x = np.where(model.integer, np.round(x), x)
    bound = float("nan")
    if term != Termination.INFEASIBLE:
        try:
            bound = float(m.ObjBound) if m.IsMIP else (float(m.ObjVal) if status == 2 else float("nan"))
        except AttributeError:  # gurobipy raises it where the attribute is not available
            bound = float("nan")
    nodes = int(m.NodeCount) if m.IsMIP else None
    raw = {2: "OPTIMAL", 3: "INFEASIBLE", 4: "INF_OR_UNBD", 5: "UNBOUNDED", 7: "ITERATION_LIMIT", 8: "NODE_LIMIT",
           9: "TIME_LIMIT", 10: "SOLUTION_LIMIT", 11: "INTERRUPTED", 12: "NUMERIC", 13: "SUBOPTIMAL"}.get(status,
                                                                                                        str(status))
    return outcome(termination=term, x=x, model=model, bound=bound if abs(bound) < 1e99 else float("nan"),
                   nodes=nodes, solve_s=clock.solve_s, compile_s=clock.compile_s, raw=raw, solver=NAME,
                   version=version(), lp_iterations=int(m.IterCount)), x
