"""A matrix model whose MIPs another solver solves, inside goodopt's staged exact method.

:class:`EngineSession` is a :class:`~goodopt.solvers.mip_solvers.highs_arrays.HighsSession` (the same rows added, the same
bounds moved, so that LP relaxations, their duals and a written model are HiGHS's) whose every MIP solve hands
the model as it stands -- bounds and added rows included -- to the chosen solver. LP stages (the LP first, its
duals for reduced-cost fixing, rounding) stay on HiGHS for every solver: they bound and guide, and the answer
and bound the method reports come from the MIPs and the evaluator's re-score.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from goodopt.formulations.matrix import CscArrays, MatrixModel

from goodopt.arrays import Array, ArrayIn
from goodopt.records import RecordIn

from . import adapter
from .base import Limits
from .highs_arrays import HighsSession
from .outcome import MilpOutcome


class EngineSession(HighsSession):
    """The model in HiGHS for its LPs, its MIPs on ``solver`` (see the module's docstring)."""

    def __init__(self, model: MatrixModel, *, solver: str, threads: int | None = None,
                 highs_options: Mapping[str, Any] | None = None, solver_options: Mapping[str, Any] | None = None,
                 feasibility_tol: float | None = None) -> None:
        super().__init__(model, threads=threads, highs_options=highs_options)
        self.solver, self.adapter = solver, adapter(solver)
        self.threads, self.solver_options, self.feasibility_tol = threads, dict(solver_options or {}), feasibility_tol
        self.lower, self.upper = model.lower.astype(float).copy(), model.upper.astype(float).copy()
        self._rows: list[tuple[Array, Array, float, float]] = []

    def set_bounds(self, columns: ArrayIn, lower: ArrayIn, upper: ArrayIn) -> None:
        super().set_bounds(columns, lower, upper)
        idx = np.asarray(columns, np.int64)
        self.lower[idx], self.upper[idx] = np.asarray(lower, float), np.asarray(upper, float)

    def add_row(self, columns: ArrayIn, values: ArrayIn, lower: float, upper: float) -> None:
        super().add_row(columns, values, lower, upper)
        self._rows.append((np.asarray(columns, np.int64), np.asarray(values, float), float(lower), float(upper)))

    def current(self) -> MatrixModel:
        """The model as it stands: its bounds now and every row added."""
        m = self.model
        if not self._rows:
            return replace(m, lower=self.lower.copy(), upper=self.upper.copy())
        A = m.A
        col = np.repeat(np.arange(A.shape[1]), np.diff(A.indptr))
        rows, cols, vals = [A.indices], [col], [A.data]
        for k, (c, v, _, _) in enumerate(self._rows):
            rows.append(np.full(len(c), A.shape[0] + k))
            cols.append(c)
            vals.append(v)
        shape = (A.shape[0] + len(self._rows), A.shape[1])
        matrix = CscArrays.from_triplets(np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), shape)
        extra_lo = np.array([r[2] for r in self._rows])
        extra_hi = np.array([r[3] for r in self._rows])
        return replace(m, lower=self.lower.copy(), upper=self.upper.copy(), A=matrix,
                       row_lower=np.concatenate([m.row_lower, extra_lo]),
                       row_upper=np.concatenate([m.row_upper, extra_hi]),
                       names=m.names + ("cut",) * len(self._rows))

    def solve(self, *, time_limit_s: float | None = None, mip_rel_gap: float | None = None,
              mip_abs_gap: float | None = None, warm_start: Any = None, relax: bool = False,
              node_limit: int | None = None) -> tuple[MilpOutcome, Array | None]:  # Any: warm_start, a start of the solver's kind
        if relax or not self.model.integer.any():
            return super().solve(time_limit_s=time_limit_s, mip_rel_gap=mip_rel_gap, mip_abs_gap=mip_abs_gap,
                                 warm_start=warm_start, relax=relax, node_limit=node_limit)
        limits = Limits(time_limit_s=time_limit_s, node_limit=node_limit, mip_rel_gap=mip_rel_gap,
                        mip_abs_gap=mip_abs_gap, feasibility_tol=self.feasibility_tol, threads=self.threads,
                        native=self.solver_options)
        t0 = time.perf_counter()
        model = self.current()
        out, x = self.adapter.solve(model, limits, warm_start)
        return replace(out, compile_s=time.perf_counter() - t0 - out.solve_s), x  # the model's assembly included


def new_session(model: MatrixModel, *, solver: str = "highs", threads: int | None = None,
                highs_options: RecordIn | None = None, solver_options: RecordIn | None = None,
                feasibility_tol: float | None = None) -> HighsSession:
    """The session a stage solves ``model`` in: HiGHS's own, or an :class:`EngineSession` for another solver."""
    if solver == "highs":
        return HighsSession(model, threads=threads, highs_options=highs_options)
    return EngineSession(model, solver=solver, threads=threads, highs_options=highs_options,
                         solver_options=solver_options, feasibility_tol=feasibility_tol)
