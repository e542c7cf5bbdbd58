"""Solving a :class:`~goodopt.formulations.config_matrix.MatrixModel` with HiGHS directly.

The arrays go to HiGHS through highspy's ``passModel`` with no modelling
layer in between; the HiGHS instance is kept so that cuts (rows) can be added
and the model re-solved warm. Outcomes are the same :class:`MilpOutcome` as
the pyomo route's (:mod:`goodopt.solvers.mip_solvers.pyomo_route`), objective and bound in the
model's own (maximised) units.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from goodopt.formulations.matrix import MatrixModel

from goodopt.arrays import Array, ArrayIn

from ..result import Termination
from .highs_run import apply_highs_options, lp_iterations, new_highs, out_of_range, pass_arrays, read_highs, run_highs
from .outcome import MilpOutcome

log = logging.getLogger(__name__)


#: Relative difference between the objective HiGHS reports for a MIP and the value of the solution it returns
#: (the unrounded columns', so only floating-point sums part them) beyond which the run is not taken at its word:
#: its status becomes ``numerical``, its bound is dropped, its value is its solution's, and a run from a start is
#: solved once more without it (:meth:`HighsSession.solve`). HiGHS 1.16, presolve on, from the start of the
#: reduced-cost dive on sia-64 seed 52 under Sia's objective (549 configurations open): "optimal" at 0.7405 with
#: its bound there too, returning the start, worth 0.0; without the start, or with presolve off, it found the
#: optimum 0.4671 (the configuration MILP's too). Its bound was above the optimum there; nothing makes it so.
MISREPORTED = 1e-6


class HighsSession:
    """One matrix model loaded into HiGHS; :meth:`solve` may be called again after :meth:`add_row`."""

    def __init__(self, model: MatrixModel, *, threads: int | None = None,
                 highs_options: Mapping[str, Any] | None = None) -> None:
        import highspy

        self._hs = highspy
        t0 = time.perf_counter()
        self.model = model
        self.bad = out_of_range(("objective", model.cost), ("matrix", model.A.data),
                                 ("row bounds", np.where(np.isfinite(model.row_upper), model.row_upper, 0.0)))
        h = new_highs()
        if threads is not None:
            h.setOptionValue("threads", int(threads))
        apply_highs_options(h, highs_options)
        if not self.bad:
            A = model.A
            pass_arrays(h, cost=model.cost, lower=model.lower, upper=model.upper, row_lower=model.row_lower,
                        row_upper=model.row_upper, indptr=A.indptr, indices=A.indices, data=A.data,
                        integer=np.zeros(model.n_columns, bool), maximise=True)
        self.h = h
        self.setup_s = time.perf_counter() - t0
        self.n_rows = model.n_rows
        #: Row duals of the last LP relaxation solved (None before one, or when HiGHS had none).
        self.lp_row_dual: Array | None = None
        # HiGHS holds the model without integrality until a MIP is solved or written (:meth:`integral`): a solve
        # that starts from the LP relaxation, and may end there, switches nothing (cluster-2048: two switches of
        # 33k columns, 3 ms a solve)
        self._relaxed = bool(model.integer.any())
        v = h.version() if hasattr(h, "version") else ""
        self.version = v if isinstance(v, str) else f"{h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"

    def add_row(self, columns: ArrayIn, values: ArrayIn, lower: float, upper: float) -> None:
        """Append one row ``lower <= Σ values * x[columns] <= upper``."""
        inf = self._hs.kHighsInf
        self.h.addRow(lower if np.isfinite(lower) else -inf, upper if np.isfinite(upper) else inf,
                      len(columns), np.asarray(columns, np.int32), np.asarray(values, float))
        self.n_rows += 1

    def add_columns(self, columns: MatrixModel) -> None:
        """Append the columns of ``columns`` (a model over the same rows: its costs, bounds, integrality and
        matrix; its rows' bounds are not read). The basis HiGHS holds stays, so the next LP starts from it."""
        m, A = self.model, columns.A
        self.h.addCols(columns.n_columns, np.asarray(columns.cost, float), np.asarray(columns.lower, float),
                       np.asarray(columns.upper, float), len(A.data), np.asarray(A.indptr[:-1], np.int32),
                       np.asarray(A.indices, np.int32), np.asarray(A.data, float))
        self.model = replace(m, cost=np.concatenate([m.cost, columns.cost]),
                             lower=np.concatenate([m.lower, columns.lower]),
                             upper=np.concatenate([m.upper, columns.upper]),
                             integer=np.concatenate([m.integer, columns.integer]), A=m.A.hstack(A))
        if not self._relaxed and columns.integer.any():  # HiGHS holds the integrality now: the new columns' too
            n, k = m.n_columns, columns.n_columns
            self.h.changeColsIntegrality(k, np.arange(n, n + k, dtype=np.int32), columns.integer.astype(np.uint8))
        elif columns.integer.any():
            self._relaxed = True

    def set_bounds(self, columns: ArrayIn, lower: ArrayIn, upper: ArrayIn) -> None:
        """New bounds for ``columns`` (until set again)."""
        idx = np.asarray(columns, np.int32)
        self.h.changeColsBounds(len(idx), idx, np.asarray(lower, float), np.asarray(upper, float))

    def solve(self, *, time_limit_s: float | None = None, mip_rel_gap: float | None = None,
              mip_abs_gap: float | None = None, warm_start: Any = None, relax: bool = False,
              node_limit: int | None = None) -> tuple[MilpOutcome, Array | None]:  # Any: warm_start, a start of the solver's kind
        """Solve; returns ``(MilpOutcome, x)`` with ``x`` the column values (None without a solution).

        ``relax`` solves the LP relaxation (integrality dropped until the next MIP solve).
        ``warm_start`` is every column's value, or ``(columns, values)`` for some of them.
        """
        hs, h, model = self._hs, self.h, self.model
        t0 = time.perf_counter()
        if self.bad:
            return MilpOutcome.without_solve(Termination.NUMERICAL, f"model refused: {self.bad}", solver="highs",
                                             solver_version=self.version, n_variables=model.n_columns,
                                             n_constraints=self.n_rows), None
        self._time_limit(time_limit_s)
        for key, value in (("mip_rel_gap", mip_rel_gap), ("mip_abs_gap", mip_abs_gap)):
            if value is not None:
                h.setOptionValue(key, float(value))
        if node_limit is not None:
            h.setOptionValue("mip_max_nodes", int(node_limit))
        integer = model.integer.any() and not relax
        if integer:
            self.integral()
        elif relax:
            self._relax()
        if warm_start is not None and integer:
            if isinstance(warm_start, tuple):  # (columns, values): HiGHS completes the rest by a sub-MIP
                cols, vals = warm_start
                vals = np.clip(np.asarray(vals, float), model.lower[cols], model.upper[cols])
                h.setSolution(len(cols), np.asarray(cols, np.int32), vals)
            else:
                sol = hs.HighsSolution()
                sol.col_value = np.clip(np.asarray(warm_start, float), model.lower, model.upper).tolist()
                sol.value_valid = True
                h.setSolution(sol)
        setup = time.perf_counter() - t0
        t1 = time.perf_counter()
        stopped = run_highs(h, time_limit_s)
        out, x = self._outcome(bool(integer), time.perf_counter() - t1, setup, stopped)
        if integer and warm_start is not None and out.termination == Termination.NUMERICAL and out.has_solution:
            # see MISREPORTED: once more without the start (clearSolver drops it), within what is left of the limit
            log.warning("HiGHS: %s; solving again without the start", out.raw_status)
            h.clearSolver()
            left = None if time_limit_s is None else max(float(time_limit_s) - (time.perf_counter() - t1), 1e-3)
            self._time_limit(left)
            stopped = run_highs(h, left)
            first, (out, x) = out, self._outcome(True, time.perf_counter() - t1, setup, stopped)
            out = replace(out, lp_iterations=(first.lp_iterations or 0) + (out.lp_iterations or 0),
                          nodes=None if out.nodes is None else out.nodes + (first.nodes or 0))  # both runs' work
        if relax:
            sol = h.getSolution()
            self.lp_row_dual = np.asarray(sol.row_dual, float) if x is not None and sol.dual_valid else None
        return out, x

    def _time_limit(self, seconds: float | None) -> None:
        """HiGHS's time limit for the next run (none: infinite)."""
        self.h.setOptionValue("time_limit", float(seconds) if seconds is not None else self._hs.kHighsInf)

    def integral(self) -> None:
        """Give HiGHS the model's integrality (before a MIP solve, or before writing the model out)."""
        if self._relaxed:
            self._set_integrality(self.model.integer.astype(np.uint8))
            self._relaxed = False

    def _relax(self) -> None:
        """Take the integrality from HiGHS's copy of the model (until :meth:`integral`)."""
        if not self._relaxed and self.model.integer.any():
            self._set_integrality(np.zeros(self.model.n_columns, np.uint8))
            self._relaxed = True

    def _set_integrality(self, kinds: Array) -> None:
        """Every column's integrality in one call: 0 continuous, 1 integer (HiGHS's own codes), as a uint8 array
        (100k columns: 7 ms, where a list of HighsVarType values took 40 ms to build and pass; highspy 1.8, the
        oldest this project allows, takes it too). Shapes: kinds (n_columns,)."""
        n = self.model.n_columns
        self.h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), kinds)

    def _outcome(self, integer: bool, solve_s: float, setup_s: float,
                 stopped: bool = False) -> tuple[MilpOutcome, Array | None]:
        h, model = self.h, self.model
        term, has_solution, objective, bound, gap, nodes, raw = read_highs(h, integer, stopped=stopped)
        x = np.asarray(h.getSolution().col_value, float) if has_solution else None
        if x is not None and integer:
            worth = float(model.cost @ x)
            if np.isfinite(objective) and abs(worth - objective) > MISREPORTED * max(1.0, abs(objective)):
                raw = f"{raw}, but at {objective!r} where its solution is worth {worth!r}"
                term, objective, bound, gap = Termination.NUMERICAL, worth, float("nan"), float("inf")
            x = np.where(model.integer, np.round(x), x)
        return MilpOutcome(termination=term, has_solution=has_solution, objective=objective, bound=bound,
                           mip_gap=gap, nodes=nodes, solve_s=solve_s, compile_s=setup_s, raw_status=raw,
                           solver="highs", solver_version=self.version, n_variables=model.n_columns,
                           n_constraints=self.n_rows, lp_iterations=lp_iterations(h)), x

