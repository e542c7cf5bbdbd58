"""Running a pyomo MILP on a solver and reporting exactly how it ended.

pyomo is imported on first use (about 0.15 s), so the array route of
:mod:`goodopt.solvers.mip_solvers.highs_arrays`, which shares :class:`MilpOutcome`, never
pays for it. ``solver="highs"`` (the default) compiles the pyomo model to matrix form with
pyomo's standard-form compiler and hands it to HiGHS (highspy). That path
supports warm starts, native HiGHS options, and reports the node count, the
dual bound and the raw model status. Any other name is one of
:mod:`goodopt.solvers.mip_solvers` (``scip``, ``cbc``, ``cpsat``, ``gurobi``), handed the same compiled arrays.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from goodopt.arrays import Array
from goodopt.errors import ValidationError
from goodopt.records import RecordIn

from ..result import Termination
from .highs_run import apply_highs_options, lp_iterations, new_highs, out_of_range, pass_arrays, read_highs, run_highs
from .outcome import MilpOutcome

log = logging.getLogger(__name__)


def solve_model(model: Any, *, solver: str = "highs", time_limit_s: float | None = None,
                mip_rel_gap: float | None = None, mip_abs_gap: float | None = None, threads: int | None = None,
                highs_options: RecordIn | None = None, warm_start: Any = None,
                relax: bool = False, engine_options: RecordIn | None = None, feasibility_tol: float | None = None,
                node_limit: int | None = None) -> MilpOutcome:  # model: a pyomo model (pyomo ships no type stubs); warm_start: an allocation or None
    """Solve ``model`` and load the solution into its variables (when one exists).

    ``relax`` solves the LP relaxation (HiGHS only). ``mip_abs_gap`` is an
    absolute gap in the objective's units (HiGHS: ``mip_abs_gap``). ``node_limit``: branch-and-bound nodes on
    any solver (HiGHS: ``mip_max_nodes`` unless ``highs_options`` sets it).
    ``engine_options`` (another solver's run): ``native`` (its own parameters);
    ``feasibility_tol`` its feasibility tolerance (HiGHS's is in ``highs_options``).
    """
    gaps = {"mip_rel_gap": mip_rel_gap, "mip_abs_gap": mip_abs_gap}
    if solver == "highs":
        options = dict(highs_options or {})
        if node_limit is not None:
            options.setdefault("mip_max_nodes", int(node_limit))
        return _solve_highs(model, time_limit_s, gaps, threads, options, warm_start, relax)
    if relax:
        raise ValidationError("solver", "LP relaxations are solved with HiGHS only", "use solver='highs'")
    engine = {**(engine_options or {}), **({"node_limit": node_limit} if node_limit is not None else {})}
    return _solve_engine(model, solver, time_limit_s, gaps, threads, engine, warm_start, feasibility_tol)


def _objective_sense(model: Any) -> int:
    import pyomo.environ as pyo

    obj = next(model.component_data_objects(pyo.Objective, active=True))
    return 1 if obj.sense == pyo.minimize else -1


def _solve_highs(model: Any, time_limit_s: float | None, gaps: dict[str, float | None], threads: int | None,
                 options: Mapping[str, Any], warm_start: Any, relax: bool = False) -> MilpOutcome:
    import highspy
    from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

    t0 = time.perf_counter()
    sf = LinearStandardFormCompiler().write(model)  # min c x + offset, A x <= b
    sense = _objective_sense(model)
    cols = sf.columns
    n, m = len(cols), sf.A.shape[0]
    lower = np.array([-highspy.kHighsInf if v.lb is None else v.lb for v in cols], dtype=float)
    upper = np.array([highspy.kHighsInf if v.ub is None else v.ub for v in cols], dtype=float)
    integer = np.array([v.is_integer() or v.is_binary() for v in cols], dtype=bool)
    if relax:
        integer[:] = False
    A = sf.A.tocsc()
    cost = np.asarray(sf.c[[0], :].todense()).ravel() if n else np.zeros(0)
    bad = out_of_range(("objective", cost), ("matrix", A.data), ("right-hand side", sf.rhs))
    if bad:
        # HiGHS misreads (and has crashed on) such models: refuse instead of trusting its answer
        return MilpOutcome.without_solve(Termination.NUMERICAL, f"model refused: {bad}", solver="highs",
                                         compile_s=time.perf_counter() - t0, n_variables=n, n_constraints=m)
    h = new_highs()
    pass_arrays(h, cost=cost, lower=lower, upper=upper, row_lower=np.full(m, -np.inf), row_upper=sf.rhs,
                indptr=A.indptr, indices=A.indices, data=A.data, integer=integer, maximise=False,
                offset=float(sf.c_offset[0]) if len(sf.c_offset) else 0.0)
    _set_limits(h, time_limit_s, gaps, threads)
    apply_highs_options(h, options)
    if warm_start:
        _set_start(h, cols, lower, upper, warm_start)
    compile_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    stopped = run_highs(h, time_limit_s)
    solve_s = time.perf_counter() - t1
    term, has_solution, objective, bound, gap, nodes, raw = read_highs(h, bool(integer.any()), sense, stopped)
    if has_solution:
        values = h.getSolution().col_value
        for v, val in zip(cols, values):
            v.set_value(round(val) if (not relax and (v.is_integer() or v.is_binary())) else val,
                        skip_validation=True)
    version = f"{h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"
    return MilpOutcome(termination=term, has_solution=has_solution, objective=objective, bound=bound, mip_gap=gap,
                       nodes=nodes, solve_s=solve_s, compile_s=compile_s, raw_status=raw, solver="highs",
                       solver_version=version, n_variables=n, n_constraints=m, lp_iterations=lp_iterations(h))


def _set_limits(h: Any, time_limit_s: float | None, gaps: dict[str, float | None], threads: int | None) -> None:
    """The time limit, the gaps HiGHS may stop at and its threads (None: HiGHS's default)."""
    if time_limit_s is not None:
        h.setOptionValue("time_limit", float(time_limit_s))
    for key, value in gaps.items():
        if value is not None:
            h.setOptionValue(key, float(value))
    if threads is not None:
        h.setOptionValue("threads", int(threads))


def _set_start(h: Any, cols: list[Any], lower: Array, upper: Array, warm_start: Any) -> None:
    """Hand HiGHS a start: ``warm_start`` maps pyomo variables to values; the other columns start at 0 (within
    their bounds)."""
    import highspy

    pos = {id(v): i for i, v in enumerate(cols)}
    x0 = np.clip(np.zeros(len(cols)), lower, upper)
    for var, val in warm_start.items():
        i = pos.get(id(var))
        if i is not None:
            x0[i] = val
    sol = highspy.HighsSolution()
    sol.col_value = x0.tolist()
    sol.value_valid = True
    h.setSolution(sol)


def compile_model(model: Any) -> tuple[Any, list[Any], int, float]:  # Any: a pyomo model and its parts (pyomo ships no type stubs)
    """A pyomo model as a :class:`~goodopt.formulations.matrix.MatrixModel` to maximise: ``(matrix, columns,
    sense, offset)``, the objective ``sense * (cost x) + offset`` in the model's own sense (pyomo's standard-form
    compiler in its mixed form: each row keeps its sense; a ranged row comes as two)."""
    from goodopt.formulations.matrix import CscArrays, MatrixModel
    from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

    sf = LinearStandardFormCompiler().write(model, mixed_form=True)  # min c x + offset
    cols = sf.columns
    kind = np.array([r.bound_type for r in sf.rows], dtype=int)
    rhs = np.asarray(sf.rhs, float)
    A = sf.A.tocsc()
    n = len(cols)
    cost = -np.asarray(sf.c[[0], :].todense()).ravel() if n else np.zeros(0)  # maximise -c x
    matrix = MatrixModel(
        cost=cost, lower=np.array([-np.inf if v.lb is None else v.lb for v in cols], float),
        upper=np.array([np.inf if v.ub is None else v.ub for v in cols], float),
        integer=np.array([v.is_integer() or v.is_binary() for v in cols], bool),
        A=CscArrays(indptr=A.indptr.astype(np.int64), indices=A.indices.astype(np.int64), data=A.data.astype(float),
                    shape=A.shape),
        row_lower=np.where(kind >= 0, np.where(kind == 0, rhs, -np.inf), rhs) if len(kind) else np.zeros(0),
        row_upper=np.where(kind <= 0, np.where(kind == 0, rhs, np.inf), rhs) if len(kind) else np.zeros(0),
        names=row_families(model, sf.rows), n_configs=0, epigraph=False)
    offset = float(sf.c_offset[0]) if len(sf.c_offset) else 0.0
    return matrix, cols, _objective_sense(model), offset


def row_families(model: Any, rows: list[Any]) -> tuple[str, ...]:  # Any: a pyomo model and its rows (pyomo ships no type stubs)
    """The family of each compiled row (:mod:`goodopt.formulations.row_families`), or its component's name."""
    from goodopt.formulations.row_families import PYOMO_COMPONENTS

    epigraph = "0b" if hasattr(model, "y") else "0a"
    names = []
    for r in rows:
        comp = r.constraint.parent_component().local_name
        names.append(epigraph if comp == "epigraph" else PYOMO_COMPONENTS.get(comp, comp))
    return tuple(names)


def _solve_engine(model: Any, name: str, time_limit_s: float | None, gaps: dict[str, float | None],
                  threads: int | None, options: Mapping[str, Any], warm_start: Any,
                  feasibility_tol: float | None) -> MilpOutcome:
    """The model on one of :mod:`goodopt.solvers.mip_solvers` (not HiGHS), its solution loaded into its variables."""
    from . import Limits, adapter

    t0 = time.perf_counter()
    matrix, cols, sense, offset = compile_model(model)
    start = None
    if warm_start:
        pos = {id(v): i for i, v in enumerate(cols)}
        pairs = [(pos[id(v)], float(val)) for v, val in warm_start.items() if id(v) in pos]
        start = (np.array([i for i, _ in pairs], np.int64), np.array([v for _, v in pairs], float))
    limits = Limits(time_limit_s=time_limit_s, mip_rel_gap=gaps.get("mip_rel_gap"),
                    mip_abs_gap=gaps.get("mip_abs_gap"), node_limit=options.get("node_limit"), threads=threads,
                    feasibility_tol=feasibility_tol, native=options.get("native", {}))
    compile_s = time.perf_counter() - t0
    out, x = adapter(name).solve(matrix, limits, start)
    if x is not None:
        for v, val in zip(cols, x):
            v.set_value(round(val) if (v.is_integer() or v.is_binary()) else val, skip_validation=True)
    # the model's own sense: max(-c x) is -(min c x); HiGHS-style offsets are added back
    def to_model(val: float) -> float:
        return -val + offset if sense == 1 else val - offset

    return replace(out, objective=to_model(out.objective) if out.has_solution else out.objective,
                   bound=to_model(out.bound), compile_s=compile_s + out.compile_s)
