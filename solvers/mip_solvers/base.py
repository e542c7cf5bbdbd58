"""What every MILP solver of :mod:`goodopt.solvers.mip_solvers` receives and hands back.

A solver gets one :class:`~goodopt.formulations.matrix.MatrixModel` (maximise ``cost x`` subject to
``row_lower <= A x <= row_upper``, ``lower <= x <= upper``, ``integer`` columns whole) and one
:class:`Limits`, and returns a :class:`~goodopt.solvers.mip_solvers.outcome.MilpOutcome` with the column values of its best
solution (None without one), objective and bound in the model's own (maximised) units.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from goodopt.formulations.matrix import MatrixModel

from goodopt.arrays import Array
from goodopt.records import RecordIn

from ..result import Termination
from .outcome import MilpOutcome


@dataclass(frozen=True, kw_only=True)
class Limits:
    """When a solver may stop and how exactly it must solve, mapped to each solver's own parameters.

    ``mip_rel_gap`` and ``mip_abs_gap`` are the gaps it may stop at (None: the solver's default);
    ``feasibility_tol`` its primal feasibility and integrality tolerance (None: its default);
    ``time_limit_s`` the seconds it may take (the caller's whole deadline already taken off);
    ``node_limit`` branch-and-bound nodes; ``threads`` (None: one); ``log`` the solver's own log;
    ``native`` the solver's own parameters, passed unchanged after goodopt's.
    """

    time_limit_s: float | None = None
    node_limit: int | None = None
    mip_rel_gap: float | None = None
    mip_abs_gap: float | None = None
    feasibility_tol: float | None = None
    threads: int | None = None
    log: bool = False
    native: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n_threads(self) -> int:
        return 1 if self.threads is None else int(self.threads)


#: A start for a MIP: every column's value, or ``(columns, values)`` for some of them.
Start = Array | tuple[Array, Array] | None


def start_pairs(start: Start, n: int) -> tuple[Array, Array] | None:
    """``(columns, values)`` of a start, whichever form it came in (None: no start)."""
    if start is None:
        return None
    if isinstance(start, tuple):
        cols, vals = start
        return np.asarray(cols, np.int64), np.asarray(vals, float)
    return np.arange(n), np.asarray(start, float)


def row_arrays(model: MatrixModel) -> tuple[Array, Array, Array]:
    """The constraint matrix row by row: ``(indptr, columns, values)`` (compressed-row form)."""
    A = model.A
    m, n = A.shape
    col = np.repeat(np.arange(n), np.diff(A.indptr))
    order = np.argsort(A.indices, kind="stable")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(A.indices, minlength=m))]).astype(np.int64)
    return indptr, col[order], A.data[order]


def finite(v: float) -> float | None:
    """``v``, or None where it is infinite (no bound)."""
    return float(v) if np.isfinite(v) else None


def outcome(*, termination: Termination, x: Array | None, model: MatrixModel, bound: float, nodes: int | None,
            solve_s: float, compile_s: float, raw: str, solver: str, version: str,
            lp_iterations: int | None = None, objective: float | None = None) -> MilpOutcome:
    """A solver's outcome: the objective is the model's ``cost @ x`` unless given; the gap is HiGHS's,
    ``|bound - objective| / max(|objective|, 1)``'s relative form (``inf`` without a solution or a bound)."""
    has = x is not None
    obj = (float(model.cost @ x) if objective is None else float(objective)) if x is not None else float("nan")
    bnd = float(bound) if np.isfinite(bound) else float("nan")
    gap = abs(bnd - obj) / max(abs(obj), 1e-10) if has and np.isfinite(bnd) else float("inf")
    return MilpOutcome(termination=termination, has_solution=has, objective=obj, bound=bnd, mip_gap=gap,
                       nodes=nodes, solve_s=solve_s, compile_s=compile_s, raw_status=raw, solver=solver,
                       solver_version=version, n_variables=model.n_columns, n_constraints=model.n_rows,
                       lp_iterations=lp_iterations)


def refused(model: MatrixModel, solver: str, version: str, why: str, *, compile_s: float = 0.0) -> MilpOutcome:
    """An outcome where the solver could not take the model (a licence limit, a kind of column it lacks)."""
    return MilpOutcome.without_solve(Termination.ERROR, f"{solver}: {why}", solver=solver, solver_version=version,
                                     compile_s=compile_s, n_variables=model.n_columns, n_constraints=model.n_rows)


class Clock:
    """Seconds since it was made, split into building the model and solving it."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.t1: float | None = None

    def built(self) -> None:
        self.t1 = time.perf_counter()

    @property
    def compile_s(self) -> float:
        return (self.t1 or time.perf_counter()) - self.t0

    @property
    def solve_s(self) -> float:
        return time.perf_counter() - (self.t1 or self.t0)


def apply_native(setter: Callable[[str, Any], Any], native: RecordIn, solver: str) -> None:  # Any: a solver's own option setter and values
    """Set the solver's own parameters; a name or value it rejects is an error naming it."""
    from goodopt.errors import ValidationError

    for key, value in native.items():
        try:
            setter(str(key), value)
        except Exception as exc:  # each solver raises its own kind
            raise ValidationError(f"options.solver_options.{key}", f"{solver} rejected {key}={value!r}: {exc}",
                                  f"see {solver}'s parameter list for its name, type and range") from exc
