"""HiGHS itself: a fresh instance with goodopt's defaults, a run held to its time limit and interruptible, native
options checked, and how a run ended. Shared by the pyomo route (:mod:`.pyomo_route`) and the array route
(:mod:`.highs_arrays`)."""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from goodopt.arrays import ArrayIn
from goodopt.errors import ValidationError
from goodopt.records import RecordIn

from ..result import Termination
from .solver_watch import run_watched

log = logging.getLogger(__name__)


#: Largest coefficient magnitude handed to HiGHS; beyond it the model is refused (status ``numerical``).
MAX_COEFFICIENT = 1e12


def out_of_range(*arrays: tuple[str, Any]) -> str:  # Any: arrays of any dtype, checked here
    """A description of the first non-finite or huge coefficient, or ""."""
    for name, a in arrays:
        a = np.asarray(a, dtype=float)
        if a.size and not np.all(np.isfinite(a)):
            return f"{name} holds {int((~np.isfinite(a)).sum())} non-finite value(s)"
        if a.size and np.abs(a).max() > MAX_COEFFICIENT:
            return f"{name} holds a value of magnitude {np.abs(a).max():.3g} > {MAX_COEFFICIENT:.0e}"
    return ""


_BANNER_SHOWN = False


def run_highs(h: Any, time_limit_s: float | None = None) -> bool:  # h: a highspy.Highs (highspy ships no type stubs)
    """``h.run()`` on the calling thread, interruptible and held to its time limit; returns whether the watch
    stopped it.

    HiGHS checks its own ``time_limit`` only at certain points, and a root heuristic can run far past it. With
    ``time_limit_s`` the watch (:mod:`.solver_watch`) asks HiGHS, once the limit has passed by
    :func:`~.solver_watch.watchdog_grace_s`, to stop at its next interrupt check (every simplex, interior-point
    and branch-and-bound iteration); the run then reads as a time limit (:func:`read_highs` with
    ``stopped=True``). In the main thread Ctrl-C asks HiGHS to stop the same way and raises
    :class:`KeyboardInterrupt` once it has stopped; should HiGHS still run
    :data:`~.solver_watch.INTERRUPT_GRACE_S` later (a heuristic without interrupt checks), the action given to
    :func:`~.solver_watch.on_stuck_interrupt` runs (the CLI exits at once). Without a time limit outside the
    main thread (workers, which leave Ctrl-C to their parent) a plain ``run()``.

    HiGHS runs on the calling thread, not a helper one: there its memory came from another malloc arena, whose
    heaps glibc unmapped and faulted in again between the root heuristics' copies of the domain
    (five-types-2048's reduced-cost dive took 5.4 s, 1.5 s of it system time, against 3.8 s on this thread).
    """
    stop = StopOnRequest(h)

    def interruptible() -> None:
        try:
            _run(h)
        finally:
            stop.close()

    return run_watched(interruptible, stop.request, time_limit_s, unwatched=lambda: _run(h),
                       on_start=lambda watch: stop.subscribe() if watch.sigint_needs_python else None)[1]


class StopOnRequest:
    """HiGHS's interrupt check of one run, made a call into Python only once the run is asked to stop.

    highspy checks for an interrupt through a Python callback at every simplex, interior-point and branch-and-bound
    iteration while one is subscribed. Subscribed for a whole run, those calls cost much of what small LPs do: an
    aware finish-time-fairness run of Gavel's experiment in the main thread (27k LPs) made 5.4M of them, and took
    32.8 s of CPU with them against 26.0 s without, the same job table. So the callback is subscribed when the watch asks the run to stop (from its own thread:
    HiGHS reads the subscription at its next check), or from the start where Ctrl-C could reach the run only
    through the main thread's Python handler, which runs only inside such a callback
    (:attr:`~.solver_watch.Watch.sigint_needs_python`). After :meth:`close` (the run is over) a late request does
    nothing: the next run on the instance starts unsubscribed.
    """

    def __init__(self, h: Any) -> None:  # h: a highspy.Highs (highspy ships no type stubs)
        self.h = h
        # re-entrant: Ctrl-C's handler (the watch's, in the main thread) may run inside close() or subscribe()
        self._lock = threading.RLock()
        self._closed = False

    def subscribe(self) -> None:
        with self._lock:
            if not self._closed:
                self.h.HandleUserInterrupt = True

    def request(self) -> None:
        """Ask the run to stop at its next interrupt check."""
        with self._lock:
            if not self._closed:
                self.h.cancelSolve()
                self.h.HandleUserInterrupt = True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.h.HandleUserInterrupt = False


def _run(h: Any) -> None:
    """``h.run()``; run again after a reset when HiGHS refused to start because this thread's pool was sized
    for another ``threads`` value (it sizes a thread's pool at its first run and then ends any run asking
    another size with status "error" and model status "not set": in a sweep worker with mixed ``threads``
    options, every later solve)."""
    import highspy

    if h.run() == highspy.HighsStatus.kError and h.getModelStatus() == highspy.HighsModelStatus.kNotset:
        log.debug("HiGHS refused to start on its thread pool's size; resetting the pool")
        type(h).resetGlobalScheduler(True)
        h.run()


#: Threads a HiGHS instance uses unless the ``threads`` option says otherwise. HiGHS's parallel parts rarely pay
#: on these models, and its idle pool threads spin: on 2 cores, a Gavel run's LP rounds took 39% less CPU on one
#: thread, and a Sia run's ILP rounds 19% less, with the same answers; in a sweep every worker paid it.
DEFAULT_THREADS = 1


def new_highs() -> Any:  # Any: a highspy.Highs (highspy ships no type stubs)
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


@functools.lru_cache(maxsize=64)
def accepts_option(name: str, value: Any) -> bool:  # Any: a user's value, checked here
    """Whether this HiGHS takes the native option ``name`` set to ``value``: goodopt sets some of its own only
    where it does (they are newer than the oldest highspy this project allows)."""
    import highspy

    return bool(new_highs().setOptionValue(name, value) == highspy.HighsStatus.kOk)


def read_model_file(path: str | Path) -> tuple[Any, int] | None:  # Any: a highspy.Highs (no type stubs)
    """A HiGHS instance holding the model file at ``path`` (.mps or .lp) and its sense (1: maximise, -1:
    minimise), or None when HiGHS cannot read it."""
    import highspy

    h = new_highs()
    if h.readModel(str(path)) != highspy.HighsStatus.kOk:
        return None
    return h, 1 if h.getObjectiveSense()[1] == highspy.ObjSense.kMaximize else -1


def apply_highs_options(h: Any, options: RecordIn | None) -> None:  # h: a highspy.Highs (highspy ships no type stubs)
    """Set HiGHS's native ``options`` (name -> value) on ``h``; a value HiGHS rejects is an error naming it."""
    import highspy

    for key, value in (options or {}).items():
        if h.setOptionValue(str(key), value) != highspy.HighsStatus.kOk:
            raise ValidationError(f"highs_options.{key}", f"HiGHS rejected the value {value!r}",
                                  "see the HiGHS option list (e.g. presolve='off', mip_heuristic_effort=0.1)")


def read_highs(h: Any, integer: bool, sense: int = 1,
               stopped: bool = False) -> tuple[Termination, bool, float, float, float, int | None, str]:  # h: a highspy.Highs (highspy ships no type stubs)
    """How a HiGHS run ended: ``(termination, has_solution, objective, bound, gap, nodes, raw status)``.

    ``sense`` (+1 or -1) turns HiGHS's objective into the model's own sense;
    ``bound`` is the MIP dual bound (the LP optimum for LPs), NaN when unknown.
    ``stopped``: :func:`run_highs`'s watch stopped the run, so an interrupt is a time limit.
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


def pass_arrays(h: Any, *, cost: ArrayIn, lower: ArrayIn, upper: ArrayIn, row_lower: ArrayIn, row_upper: ArrayIn, indptr: ArrayIn,
                indices: ArrayIn, data: Any, integer: ArrayIn, maximise: bool, offset: float = 0.0) -> None:  # h: a highspy.Highs (no type stubs); data: the model's arrays
    """Hand a model to HiGHS as numpy arrays in one ``passModel`` call: ``row_lower <= A x <= row_upper`` with
    ``A`` column-wise (``indptr``, ``indices``, ``data``), ``integer`` a flag per column.

    At five-types-2048's LP (103k columns, 468k nonzeros) this takes 9 ms; filling a ``HighsLp`` field by field
    took 78 ms, highspy converting each array element by element. The model HiGHS holds is the same. (highspy
    1.8, the oldest this project allows, has this form of ``passModel`` too.)
    """
    import highspy  # its infinity is the float one (numpy's inf passes as is)

    def f64(a: Any) -> Any:  # Any: an array-like, returned as HiGHS takes it
        return np.ascontiguousarray(a, np.float64)

    def i32(a: Any) -> Any:  # Any: an array-like, returned as HiGHS takes it
        return np.ascontiguousarray(a, np.int32)

    sense = highspy.ObjSense.kMaximize if maximise else highspy.ObjSense.kMinimize
    h.passModel(len(cost), len(row_lower), len(data), int(highspy.MatrixFormat.kColwise), int(sense), float(offset),
                f64(cost), f64(lower), f64(upper), f64(row_lower), f64(row_upper), i32(indptr), i32(indices),
                f64(data), i32(integer))


def lp_iterations(h: Any) -> int:  # h: a highspy.Highs (highspy ships no type stubs)
    """Simplex, interior-point and crossover iterations of HiGHS's last run (for a MIP, of every LP it solved;
    HiGHS reports -1 for a kind it did not run)."""
    info = h.getInfo()
    return sum(max(int(getattr(info, k, 0)), 0)
               for k in ("simplex_iteration_count", "ipm_iteration_count", "crossover_iteration_count"))


def _highs_termination(highspy: Any, status: Any, gap: float) -> Termination:
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
