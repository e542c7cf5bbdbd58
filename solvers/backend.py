"""Running a pyomo MILP on a solver and reporting exactly how it ended.

pyomo is imported on first use (about 0.15 s), so the array route of
:mod:`goodopt.solvers.highs_arrays`, which shares :class:`MilpOutcome`, never
pays for it. ``solver="highs"`` (the default) compiles the pyomo model to matrix form with
pyomo's standard-form compiler and hands it to HiGHS (highspy). That path
supports warm starts, native HiGHS options, and reports the node count, the
dual bound and the raw model status. Any other name is looked up with
``pyomo.environ.SolverFactory`` (e.g. ``"appsi_highs"``, ``"cbc"``,
``"gurobi"``) and must be installed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from goodopt.arrays import Array
from goodopt.errors import SolverError, ValidationError

from .highs_run import apply_highs_options, lp_iterations, new_highs, out_of_range, pass_arrays, read_highs, run_highs
from .result import CERTIFIED_GAP, Termination

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class MilpOutcome:
    """How one MILP solve ended (objective in the model's own sense and units); built by keyword."""

    termination: Termination
    has_solution: bool
    objective: float
    bound: float
    mip_gap: float
    nodes: int | None
    solve_s: float
    compile_s: float
    raw_status: str
    solver: str
    solver_version: str
    n_variables: int
    n_constraints: int
    #: Simplex, interior-point and crossover iterations of the run as the solver counts them (for HiGHS, the
    #: LPs of a MIP's search too): a measure of its work that the machine's load does not move (the same
    #: solver on the same model counts the same); None when the solver gives none.
    lp_iterations: int | None = None

    @classmethod
    def without_solve(cls, termination: Termination, raw_status: str, *, solver: str = "none", solver_version: str = "",
                      compile_s: float = 0.0, n_variables: int = 0, n_constraints: int = 0) -> MilpOutcome:
        """An outcome where no model was solved (refused, skipped, or settled without a solver)."""
        nan = float("nan")
        return cls(termination=termination, has_solution=False, objective=nan, bound=nan, mip_gap=float("inf"),
                   nodes=None, solve_s=0.0, compile_s=compile_s, raw_status=raw_status, solver=solver,
                   solver_version=solver_version, n_variables=n_variables, n_constraints=n_constraints)


def solve_model(model: Any, *, solver: str = "highs", time_limit_s: float | None = None,
                mip_rel_gap: float | None = None, mip_abs_gap: float | None = None, threads: int | None = None,
                highs_options: Mapping[str, Any] | None = None, warm_start: Any = None,
                relax: bool = False) -> MilpOutcome:
    """Solve ``model`` and load the solution into its variables (when one exists).

    ``relax`` solves the LP relaxation (HiGHS only). ``mip_abs_gap`` is an
    absolute gap in the objective's units (HiGHS: ``mip_abs_gap``).
    """
    gaps = {"mip_rel_gap": mip_rel_gap, "mip_abs_gap": mip_abs_gap}
    if solver == "highs":
        return _solve_highs(model, time_limit_s, gaps, threads, highs_options or {}, warm_start, relax)
    if relax:
        raise ValidationError("solver", "LP relaxations are solved with HiGHS only", "use solver='highs'")
    return _solve_factory(model, solver, time_limit_s, gaps, threads, highs_options or {}, warm_start)


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


def _solve_factory(model: Any, name: str, time_limit_s: float | None, gaps: dict[str, float | None],
                   threads: int | None, options: Mapping[str, Any], warm_start: Any) -> MilpOutcome:
    import pyomo.environ as pyo
    from pyomo.opt import SolverStatus
    from pyomo.opt import TerminationCondition as TC

    try:
        opt = pyo.SolverFactory(name)
        available = opt is not None and opt.available(exception_flag=False)
    except Exception as exc:  # pyomo raises various errors for unknown plugins
        raise SolverError(f"solver {name!r} could not be created: {exc}") from exc
    if not available:
        raise ValidationError("solver", f"MILP solver {name!r} is not installed or not known to pyomo",
                              "use solver='highs' (bundled) or install the solver")
    if warm_start:
        for var, val in warm_start.items():
            var.set_value(val, skip_validation=True)
    opts = dict(options)
    if time_limit_s is not None:
        opts.setdefault("time_limit", time_limit_s)
    for key, value in gaps.items():
        if value is not None:
            opts.setdefault(key, value)
    if threads is not None:
        opts.setdefault("threads", threads)
    t1 = time.perf_counter()
    kwargs = {"options": opts, "load_solutions": False}
    if warm_start and getattr(opt, "warm_start_capable", lambda: False)():
        kwargs["warmstart"] = True
    res = opt.solve(model, **kwargs)
    solve_s = time.perf_counter() - t1
    tc = res.solver.termination_condition
    has_solution = len(res.solution) > 0 and tc not in (TC.infeasible, TC.infeasibleOrUnbounded)
    if has_solution:
        model.solutions.load_from(res)
    sense = _objective_sense(model)
    obj = next(model.component_data_objects(pyo.Objective, active=True))
    objective = float(pyo.value(obj)) if has_solution else float("nan")
    bnd = res.problem.lower_bound if sense == 1 else res.problem.upper_bound
    bound = float(bnd) if bnd is not None and np.isfinite(float(bnd)) else float("nan")
    gap = abs(objective - bound) / max(abs(objective), 1e-12) if has_solution and np.isfinite(bound) else float("inf")
    if tc == TC.optimal:
        term = Termination.OPTIMAL if not np.isfinite(gap) or gap <= CERTIFIED_GAP else Termination.GAP_LIMIT
        if not np.isfinite(bound):
            bound, gap = objective, 0.0
    elif tc == TC.maxTimeLimit:
        term = Termination.TIME_LIMIT
    elif tc in (TC.infeasible, TC.infeasibleOrUnbounded):
        term = Termination.INFEASIBLE
    elif tc == TC.unbounded:
        term = Termination.UNBOUNDED
    elif res.solver.status == SolverStatus.ok:
        term = Termination.ITERATION_LIMIT
    else:
        term = Termination.ERROR
    return MilpOutcome(termination=term, has_solution=has_solution, objective=objective, bound=bound, mip_gap=gap,
                       nodes=None, solve_s=solve_s, compile_s=0.0, raw_status=str(tc), solver=name,
                       solver_version=str(getattr(opt, "version", lambda: "")() or ""),
                       n_variables=model.nvariables(), n_constraints=model.nconstraints())
