"""SCIP (through PySCIPOpt), from goodopt's arrays.

Parameters: ``limits/time``, ``limits/nodes``, ``limits/gap``, ``limits/absgap``, ``numerics/feastol`` (SCIP's
feasibility and integrality tolerance alike), ``randomization/randomseedshift`` 0. SCIP solves on one thread
(``threads`` above 1 is refused by the option check). Ctrl-C: SCIP is asked to stop (``interruptSolve``) and the
run raises :class:`KeyboardInterrupt`. Status: ``optimal`` -> optimal; ``gaplimit`` -> optimal (the caller judges
the gap it was given); ``timelimit`` -> time_limit; ``nodelimit``/``totalnodelimit``/``stallnodelimit`` ->
iteration_limit; ``infeasible`` -> infeasible; ``unbounded``/``inforunbd`` -> unbounded; ``userinterrupt`` after a
watch's stop -> time_limit; anything else -> error.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from goodopt.formulations.matrix import MatrixModel

from goodopt.arrays import Array

from ..result import Termination
from .base import Clock, Limits, Start, apply_native, finite, outcome, row_arrays, start_pairs
from .outcome import MilpOutcome
from .solver_watch import run_watched

NAME = "scip"
#: goodopt's limits (:class:`~.base.Limits`) -> this solver's parameters.
PARAMETERS = {"time_limit_s": "limits/time", "node_limit": "limits/nodes", "mip_rel_gap": "limits/gap",
              "mip_abs_gap": "limits/absgap", "feasibility_tol": "numerics/feastol"}

_STATUS = {"optimal": Termination.OPTIMAL, "gaplimit": Termination.OPTIMAL, "timelimit": Termination.TIME_LIMIT,
           "nodelimit": Termination.ITERATION_LIMIT, "totalnodelimit": Termination.ITERATION_LIMIT,
           "stallnodelimit": Termination.ITERATION_LIMIT, "infeasible": Termination.INFEASIBLE,
           "unbounded": Termination.UNBOUNDED, "inforunbd": Termination.UNBOUNDED}


@functools.lru_cache(maxsize=1)
def version() -> str:
    import pyscipopt

    return f"SCIP {pyscipopt.Model().version()} (PySCIPOpt {pyscipopt.__version__})"


def _build(model: MatrixModel, limits: Limits) -> tuple[Any, list[Any]]:
    import pyscipopt

    m = pyscipopt.Model()
    m.hideOutput(not limits.log)
    m.setParam("randomization/randomseedshift", 0)
    m.setParam("misc/catchctrlc", False)  # Ctrl-C reaches Python, which asks SCIP to stop
    if limits.time_limit_s is not None:
        m.setParam("limits/time", float(limits.time_limit_s))
    if limits.node_limit is not None:
        m.setParam("limits/nodes", int(limits.node_limit))
    if limits.mip_rel_gap is not None:
        m.setParam("limits/gap", float(limits.mip_rel_gap))
    if limits.mip_abs_gap is not None:
        m.setParam("limits/absgap", float(limits.mip_abs_gap))
    if limits.feasibility_tol is not None:
        m.setParam("numerics/feastol", float(limits.feasibility_tol))
    apply_native(m.setParam, limits.native, "SCIP")
    kinds = ["I" if i else "C" for i in model.integer.tolist()]
    xs = [m.addVar(name=f"x{i}", vtype=k, lb=finite(lo), ub=finite(hi), obj=c)
          for i, (k, lo, hi, c) in enumerate(zip(kinds, model.lower.tolist(), model.upper.tolist(),
                                                 model.cost.tolist()))]
    indptr, cols, vals = row_arrays(model)
    cols_l, vals_l = cols.tolist(), vals.tolist()
    for i, (lo, hi) in enumerate(zip(model.row_lower.tolist(), model.row_upper.tolist())):
        a, b = int(indptr[i]), int(indptr[i + 1])
        expr = pyscipopt.quicksum(v * xs[j] for j, v in zip(cols_l[a:b], vals_l[a:b]))
        m.addCons(pyscipopt.scip.ExprCons(expr, lhs=finite(lo), rhs=finite(hi)), name=f"r{i}")
    m.setMaximize()
    return m, xs


def _start(m: Any, xs: list[Any], start: Start) -> None:
    pairs = start_pairs(start, len(xs))
    if pairs is None:
        return
    cols, vals = pairs
    sol = m.createPartialSol() if len(cols) < len(xs) else m.createSol()
    for j, v in zip(cols.tolist(), vals.tolist()):
        m.setSolVal(sol, xs[j], v)
    m.addSol(sol, free=True)  # checked by SCIP when its solve starts


def _interrupt(m: Any) -> None:
    """Ask SCIP to stop at its next check (SCIP refuses outside a solve, when the run has just ended)."""
    try:
        m.interruptSolve()
    except Exception:  # noqa: BLE001 - a call at the wrong stage; nothing to stop
        pass


def solve(model: MatrixModel, limits: Limits, start: Start = None) -> tuple[MilpOutcome, Array | None]:
    clock = Clock()
    m, xs = _build(model, limits)
    _start(m, xs, start)
    clock.built()
    # optimizeNogil leaves the interpreter to the watch, which asks SCIP to stop past the time limit or on Ctrl-C
    _, stopped = run_watched(m.optimizeNogil, lambda: _interrupt(m), limits.time_limit_s, solver="SCIP")
    raw = str(m.getStatus())
    term = _STATUS.get(raw, Termination.TIME_LIMIT if stopped and raw == "userinterrupt" else Termination.ERROR)
    x = None
    if m.getNSols() > 0 and term not in (Termination.INFEASIBLE, Termination.UNBOUNDED):
        best = m.getBestSol()
        x = np.array([m.getSolVal(best, v) for v in xs], float)
        x = np.where(model.integer, np.round(x), x)
    bound = float(m.getDualbound()) if term != Termination.INFEASIBLE else float("nan")
    return outcome(termination=term, x=x, model=model, bound=bound if abs(bound) < 1e19 else float("nan"),
                   nodes=int(m.getNTotalNodes()), solve_s=clock.solve_s, compile_s=clock.compile_s, raw=raw,
                   solver=NAME, version=version(), lp_iterations=int(m.getNLPIterations())), x
