"""Solving a :class:`~goodopt.formulations.config_matrix.MatrixModel` with HiGHS directly.

The arrays go to HiGHS through highspy's ``passModel`` with no modelling
layer in between; the HiGHS instance is kept so that cuts (rows) can be added
and the model re-solved warm. Outcomes are the same :class:`MilpOutcome` as
the pyomo route's (:mod:`goodopt.solvers.backend`), objective and bound in the
model's own (maximised) units.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from goodopt.formulations.matrix import MatrixModel

from goodopt.arrays import Array, ArrayIn

from .highs_run import apply_highs_options, lp_iterations, new_highs, out_of_range, pass_arrays, read_highs, run_highs
from .outcome import MilpOutcome
from .result import Termination


@dataclass(frozen=True)
class Pricing:
    """How an LP relaxation solved by :meth:`HighsSession.solve_priced` went: columns held at their lower bound
    at first, how many of them the duals released, and the LP solves it took."""

    held: int
    released: int
    rounds: int


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

    def set_bounds(self, columns: ArrayIn, lower: ArrayIn, upper: ArrayIn) -> None:
        """New bounds for ``columns`` (until set again)."""
        idx = np.asarray(columns, np.int32)
        self.h.changeColsBounds(len(idx), idx, np.asarray(lower, float), np.asarray(upper, float))

    def solve(self, *, time_limit_s: float | None = None, mip_rel_gap: float | None = None,
              mip_abs_gap: float | None = None, warm_start: Any = None, relax: bool = False,
              node_limit: int | None = None) -> tuple[MilpOutcome, Array | None]:
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
        h.setOptionValue("time_limit", float(time_limit_s) if time_limit_s is not None else hs.kHighsInf)
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
        solve_s = time.perf_counter() - t1
        out, x = self._outcome(bool(integer), solve_s, setup, stopped)
        if relax:
            sol = h.getSolution()
            self.lp_row_dual = np.asarray(sol.row_dual, float) if x is not None and sol.dual_valid else None
        return out, x

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

    def solve_priced(self, hold: Array, price: Callable[[Array], Array], *, time_limit_s: float | None = None,
                     max_rounds: int = 4) -> tuple[MilpOutcome, Array | None, Pricing]:
        """The LP relaxation with the columns ``hold`` held at their lower bounds until the duals say they pay.

        After each LP, ``price`` (the row duals -> a flag per column) names
        the columns worth releasing (positive reduced cost); they are released
        and the LP re-solved warm from its basis. When none is named, the LP's
        optimum is the whole model's; after ``max_rounds`` rounds every column
        still held is released. Every bound is restored before returning, so
        the model is unchanged. Returns the last LP's outcome (times and
        iterations summed over the rounds), its column values and the
        :class:`Pricing` record. Shapes: hold (n_columns,) bool.
        """
        model = self.model
        held = np.flatnonzero(np.asarray(hold, bool) & (model.upper > model.lower))
        n_held, rounds = held.size, 0
        deadline = None if time_limit_s is None else time.perf_counter() + time_limit_s
        solve_s, iterations = 0.0, 0
        self._set_upper(held, model.lower[held])
        self._relax()  # once for every round, and left so (see integral)
        try:
            while True:
                left = None if deadline is None else max(deadline - time.perf_counter(), 0.0)
                out, x = self.solve(time_limit_s=left, relax=True)
                rounds += 1
                solve_s += out.solve_s
                iterations += out.lp_iterations or 0
                if out.termination != Termination.OPTIMAL or self.lp_row_dual is None or held.size == 0:
                    break
                enter = np.asarray(price(self.lp_row_dual), bool)[held]
                if not enter.any():
                    break
                if rounds >= max_rounds:
                    enter[:] = True
                self._set_upper(held[enter], model.upper[held[enter]])
                held = held[~enter]
        finally:
            self._set_upper(held, model.upper[held])
        out = replace(out, solve_s=solve_s, lp_iterations=iterations)
        return out, x, Pricing(held=n_held, released=n_held - held.size, rounds=rounds)

    def _set_upper(self, columns: Array, upper: Array) -> None:
        """New upper bounds for ``columns`` (their lower bounds as the model has them)."""
        if columns.size:
            cols = np.asarray(columns, np.int32)
            self.h.changeColsBounds(cols.size, cols, self.model.lower[columns], np.asarray(upper, float))

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
            x = np.where(model.integer, np.round(x), x)
        return MilpOutcome(termination=term, has_solution=has_solution, objective=objective, bound=bound,
                           mip_gap=gap, nodes=nodes, solve_s=solve_s, compile_s=setup_s, raw_status=raw,
                           solver="highs", solver_version=self.version, n_variables=model.n_columns,
                           n_constraints=self.n_rows, lp_iterations=lp_iterations(h)), x

