"""Every method's outcome judged by goodopt, built-in or plug-in: the allocation checked, the status and the
bound re-judged from the evaluator's re-score (:func:`verdict`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from goodopt.arrays import Array
from goodopt.evaluator import Evaluator
from goodopt.problem import AllocationProblem
from goodopt.validation import MAX_WHOLE

from .milp.verdict import SOLVER_CLAIMS, judge
from .options import MethodOptions
from .result import CERTIFIED_GAP, MethodOutcome, Termination


@dataclass(frozen=True)
class Verdict:
    """goodopt's judgement of a method's outcome: the allocation as whole GPU counts (zeros without one), its
    re-scored fitness (NaN without one) and violated constraints, why the method stopped and the bound, as the
    numbers support them (``why``: what was overruled, or "")."""

    x: Array
    has_solution: bool
    status: Termination
    bound: float
    message: str
    why: str
    fitness: float = float("nan")
    violations: tuple[str, ...] = ()


def verdict(problem: AllocationProblem, ev: Evaluator, opts: MethodOptions, f: MethodOutcome) -> Verdict:
    """Judge an outcome as :func:`goodopt.solvers.milp.verdict.judge` judges the exact method's, whoever made it.

    A status that is not a :class:`Termination` is an error; an allocation not of shape (jobs, nodes) or not
    of whole GPU counts >= 0 is refused (never truncated); an allocation that breaks the problem's constraints
    is ``infeasible`` with no bound; a bound below the re-scored fitness is dropped, and ``optimal`` or
    ``gap_limit`` stands only with a valid bound within the gap (else ``numerical``).
    """
    zeros = np.zeros((problem.n_jobs, problem.n_nodes), np.int64)
    status, why = _status(f.status)
    if f.alloc is None:
        if status in SOLVER_CLAIMS:  # an optimum, or a gap, of what? Nothing came back to prove it
            status, why = Termination.NUMERICAL, f"the method claimed {status} but returned no allocation"
        return Verdict(zeros, False, status, _finite(f.bound), _message(f, status, why, False), why)
    x, refused = _whole_allocation(f.alloc, zeros.shape)
    if refused:
        why = f"returned allocation refused: {refused}"
        return Verdict(zeros, False, Termination.ERROR, float("nan"), why, why)
    violations = tuple(ev.violations(x))
    fitness = float(ev.fitness(x))
    if violations:
        why = f"returned allocation is infeasible: {violations[0]}"
        return Verdict(x, True, Termination.INFEASIBLE, float("nan"), why, why, fitness, violations)
    bound = _finite(f.bound)
    judged, overruled = judge(fitness, bound, status, True, getattr(opts, "mip_rel_gap", CERTIFIED_GAP))
    if judged == Termination.NUMERICAL and np.isfinite(bound) and fitness > bound:
        bound = float("nan")  # provably wrong: no bound is reported
    why = "; ".join(w for w in (why, overruled) if w)
    return Verdict(x, True, judged, bound, _message(f, judged, why, True), why, fitness)


def _status(claimed: Any) -> tuple[Termination, str]:
    if isinstance(claimed, Termination):
        return claimed, ""
    try:
        return Termination(claimed), ""
    except ValueError:
        return Termination.ERROR, f"the method returned an unknown status {claimed!r}"


def _finite(bound: Any) -> float:
    try:
        b = float(bound)
    except (TypeError, ValueError):
        return float("nan")
    return b if np.isfinite(b) else float("nan")


def _whole_allocation(alloc: Any, shape: tuple[int, int]) -> tuple[Array, str]:
    """``alloc`` as whole GPU counts of ``shape``, or zeros and why it was refused."""
    try:
        a = np.asarray(alloc, dtype=float)
    except (TypeError, ValueError):
        return np.zeros(shape, np.int64), "it is not an array of numbers"
    if a.shape != shape:
        return np.zeros(shape, np.int64), f"shape {a.shape}, the problem's is {shape} (jobs x nodes)"
    if not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(a != np.round(a)) or np.any(a > MAX_WHOLE):
        return np.zeros(shape, np.int64), "GPU counts must be whole numbers >= 0"
    return a.astype(np.int64), ""


def _message(f: MethodOutcome, status: Termination, why: str, has: bool) -> str:
    message = str(f.message) if f.message else str(status)
    if not has:
        message = f"no allocation returned ({status}); {message}"
    return f"{message}; {why}" if why and why not in message else message
