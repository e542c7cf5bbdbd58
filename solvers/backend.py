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
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from goodopt.errors import SolverError, ValidationError

from .result import CERTIFIED_GAP, Termination

log = logging.getLogger(__name__)


@dataclass
class MilpOutcome:
    """How one MILP solve ended (objective in the model's own sense and units)."""

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


def solve_model(model, *, solver: str = "highs", time_limit_s=None, mip_rel_gap=None, mip_abs_gap=None,
                threads=None, highs_options=None, warm_start=None, relax: bool = False) -> MilpOutcome:
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


#: Largest coefficient magnitude handed to HiGHS; beyond it the model is refused (status ``numerical``).
MAX_COEFFICIENT = 1e12


def _out_of_range(*arrays) -> str:
    """A description of the first non-finite or huge coefficient, or ""."""
    for name, a in arrays:
        a = np.asarray(a, dtype=float)
        if a.size and not np.all(np.isfinite(a)):
            return f"{name} holds {int((~np.isfinite(a)).sum())} non-finite value(s)"
        if a.size and np.abs(a).max() > MAX_COEFFICIENT:
            return f"{name} holds a value of magnitude {np.abs(a).max():.3g} > {MAX_COEFFICIENT:.0e}"
    return ""


_BANNER_SHOWN = False


def run_highs(h, time_limit_s: float | None = None) -> bool:
    """``h.run()``, interruptible and held to its time limit; returns whether the watchdog stopped it.

    HiGHS checks its own ``time_limit`` only at certain points, and a root heuristic can run far past it. With
    ``time_limit_s`` HiGHS runs in a helper thread while this one waits and, once the limit has passed by
    :func:`watchdog_grace_s`, asks HiGHS to stop at its next interrupt check (every simplex, interior-point
    and branch-and-bound iteration); the run then reads as a time limit (:func:`read_highs` with
    ``stopped=True``). In the main thread Ctrl-C asks HiGHS to stop the same way and raises
    :class:`KeyboardInterrupt` once it has stopped. Without a time limit outside the main thread (workers,
    which leave Ctrl-C to their parent) a plain ``run()``."""
    main = threading.current_thread() is threading.main_thread() \
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if not main and time_limit_s is None:
        _run(h)
        return False
    h.HandleUserInterrupt = True
    done, box = threading.Event(), {}

    def target():
        try:
            _run(h)
        except BaseException as exc:  # noqa: BLE001 -- handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    t0 = time.perf_counter()
    cutoff = None if time_limit_s is None else t0 + float(time_limit_s) + watchdog_grace_s(time_limit_s)
    stopped = False
    threading.Thread(target=target, name=SOLVER_THREAD, daemon=True).start()
    try:
        while not done.wait(0.1):
            if cutoff is not None and not stopped and time.perf_counter() >= cutoff:
                log.warning("HiGHS ran %.1f s past its %.3g s time limit; asking it to stop",
                            time.perf_counter() - t0 - float(time_limit_s), float(time_limit_s))
                h.cancelSolve()
                stopped = True
    except KeyboardInterrupt:
        h.cancelSolve()
        done.wait(INTERRUPT_GRACE_S)
        raise
    finally:
        if done.is_set():  # never change callbacks under a running solver
            h.HandleUserInterrupt = False
    if "error" in box:
        raise box["error"]
    return stopped


def _run(h) -> None:
    """``h.run()``; run again after a reset when HiGHS refused to start because this thread's pool was sized
    for another ``threads`` value (it sizes a thread's pool at its first run and then ends any run asking
    another size with status "error" and model status "not set": in a sweep worker with mixed ``threads``
    options, every later solve)."""
    import highspy

    if h.run() == highspy.HighsStatus.kError and h.getModelStatus() == highspy.HighsModelStatus.kNotset:
        log.debug("HiGHS refused to start on its thread pool's size; resetting the pool")
        type(h).resetGlobalScheduler(True)
        h.run()


def watchdog_grace_s(time_limit_s: float) -> float:
    """How long past its time limit HiGHS may run before the watchdog stops it: 1 s plus 5% of the limit."""
    return 1.0 + 0.05 * float(time_limit_s)


#: Name of the helper thread HiGHS runs in (the CLI exits at once, not through interpreter teardown, if one
#: is still running after Ctrl-C).
SOLVER_THREAD = "goodopt-highs"

#: Seconds HiGHS is given to stop after Ctrl-C before the interrupt is raised anyway.
INTERRUPT_GRACE_S = 2.0


#: Threads a HiGHS instance uses unless the ``threads`` option says otherwise. HiGHS's parallel parts rarely pay
#: on these models, and its idle pool threads spin: on 2 cores, a Gavel run's LP rounds took 39% less CPU on one
#: thread, and a Sia run's ILP rounds 19% less, with the same answers; in a sweep every worker paid it.
DEFAULT_THREADS = 1


def new_highs():
    """A HiGHS instance with its output off, on :data:`DEFAULT_THREADS` threads.

    HiGHS 1.16 prints a copyright banner on the C-level standard output when
    a process makes its first instance, before any option can be set; it
    would corrupt ``--json`` output. That first construction runs with file
    descriptor 1 pointed at the null device.
    """
    global _BANNER_SHOWN
    import highspy

    if _BANNER_SHOWN:
        h = highspy.Highs()
    else:
        _BANNER_SHOWN = True
        try:
            sys.stdout.flush()
            saved = os.dup(1)
        except (OSError, ValueError):  # no usable standard output: nothing to protect
            h = highspy.Highs()
        else:
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.close(devnull)
                h = highspy.Highs()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", DEFAULT_THREADS)
    return h


def _objective_sense(model) -> int:
    import pyomo.environ as pyo

    obj = next(model.component_data_objects(pyo.Objective, active=True))
    return 1 if obj.sense == pyo.minimize else -1


def _solve_highs(model, time_limit_s, gaps, threads, options, warm_start, relax=False):
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
    bad = _out_of_range(("objective", cost), ("matrix", A.data), ("right-hand side", sf.rhs))
    if bad:
        # HiGHS misreads (and has crashed on) such models: refuse instead of trusting its answer
        nan = float("nan")
        return MilpOutcome(Termination.NUMERICAL, False, nan, nan, float("inf"), None, 0.0,
                           time.perf_counter() - t0, f"model refused: {bad}", "highs", "", n, m)
    h = new_highs()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = cost
    lp.offset_ = float(sf.c_offset[0]) if len(sf.c_offset) else 0.0
    lp.col_lower_, lp.col_upper_ = lower, upper
    lp.row_lower_ = np.full(m, -highspy.kHighsInf)
    lp.row_upper_ = np.asarray(sf.rhs, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr
    lp.a_matrix_.index_ = A.indices
    lp.a_matrix_.value_ = A.data
    if integer.any():
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in integer]
    h.passModel(lp)
    if time_limit_s is not None:
        h.setOptionValue("time_limit", float(time_limit_s))
    for key, value in gaps.items():
        if value is not None:
            h.setOptionValue(key, float(value))
    if threads is not None:
        h.setOptionValue("threads", int(threads))
    for key, value in options.items():
        status = h.setOptionValue(str(key), value)
        if status != highspy.HighsStatus.kOk:
            raise ValidationError(f"highs_options.{key}", f"HiGHS rejected the value {value!r}",
                                  "see the HiGHS option list (e.g. presolve='off', mip_heuristic_effort=0.1)")
    if warm_start:
        pos = {id(v): i for i, v in enumerate(cols)}
        x0 = np.clip(np.zeros(n), lower, upper)
        for var, val in warm_start.items():
            i = pos.get(id(var))
            if i is not None:
                x0[i] = val
        sol = highspy.HighsSolution()
        sol.col_value = x0.tolist()
        sol.value_valid = True
        h.setSolution(sol)
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
    return MilpOutcome(term, has_solution, objective, bound, gap, nodes, solve_s, compile_s, raw, "highs",
                       version, n, m)


def read_highs(h, integer: bool, sense: int = 1, stopped: bool = False):
    """How a HiGHS run ended: ``(termination, has_solution, objective, bound, gap, nodes, raw status)``.

    ``sense`` (+1 or -1) turns HiGHS's objective into the model's own sense;
    ``bound`` is the MIP dual bound (the LP optimum for LPs), NaN when unknown.
    ``stopped``: :func:`run_highs`'s watchdog stopped the run, so an interrupt is a time limit.
    """
    import highspy

    status = h.getModelStatus()
    info = h.getInfo()
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    objective = sense * info.objective_function_value if has_solution else float("nan")
    nodes = int(info.mip_node_count) if integer and info.mip_node_count >= 0 else None
    if integer:
        bound = sense * info.mip_dual_bound
        gap = float(info.mip_gap) if has_solution else float("inf")
    else:
        optimal = status == highspy.HighsModelStatus.kOptimal
        bound = objective if optimal else float("nan")
        gap = 0.0 if optimal else float("inf")
    if not np.isfinite(bound):
        bound = float("nan")
    term = _highs_termination(highspy, status, gap)
    if stopped and status == highspy.HighsModelStatus.kInterrupt:
        term = Termination.TIME_LIMIT
    return (term, has_solution, float(objective), float(bound), gap, nodes,
            h.modelStatusToString(status))


def _highs_termination(highspy, status, gap) -> Termination:
    S = highspy.HighsModelStatus
    if status == S.kOptimal:
        return Termination.OPTIMAL  # HiGHS met the gaps it was given; callers judge the fitness gap
    if status == S.kTimeLimit:
        return Termination.TIME_LIMIT
    if status in (S.kIterationLimit, getattr(S, "kSolutionLimit", S.kIterationLimit)):
        return Termination.ITERATION_LIMIT
    if status == S.kInfeasible:
        return Termination.INFEASIBLE
    if status in (S.kUnbounded, S.kUnboundedOrInfeasible):
        return Termination.UNBOUNDED
    return Termination.ERROR


def _solve_factory(model, name, time_limit_s, gaps, threads, options, warm_start):
    import pyomo.environ as pyo
    from pyomo.opt import SolverStatus, TerminationCondition as TC

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
    return MilpOutcome(term, has_solution, objective, bound, gap, None, solve_s, 0.0, str(tc), name,
                       str(getattr(opt, "version", lambda: "")() or ""), model.nvariables(), model.nconstraints())
