"""L-BFGS-B on scipy's own kernel, driven without the per-call wrapper of :func:`scipy.optimize.minimize`.

A job agent's fit (:mod:`goodopt.agent_fit`) is a bounded minimisation in at
most seven variables that takes about 85 evaluations; a Pollux simulation
makes thousands of them. Through :func:`scipy.optimize.minimize` more than half
of each evaluation's time was scipy's bookkeeping around the objective
(``ScalarFunction``'s copies, ``array_equal`` checks and wrappers: about 5 of
25 s of CPU in the Pollux Fig. 8 reference run), not the objective or the
algorithm. :func:`minimize_lbfgsb` runs the same algorithm -- scipy's own
L-BFGS-B routine ``setulb``, called in the loop scipy's ``_minimize_lbfgsb``
runs, with the same arguments, stopping tests and evaluation count -- so its
iterates and answer are scipy's to the last bit; only the wrapper is gone.

The kernel is scipy's private module. Before the first use in a process
:func:`kernel_agrees` solves a small bounded problem both ways and compares
every bit of the answers; where they differ or the kernel cannot be called
(another scipy), :func:`minimize_lbfgsb` hands every problem to
:func:`scipy.optimize.minimize` instead: the answers are then scipy's by
construction.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize

from .arrays import Array

log = logging.getLogger(__name__)

#: An objective returning its value and gradient at ``x``. Shapes: (n,) -> (float, (n,)).
ValueAndGradient = Callable[[Array], tuple[float, Array]]

#: ``setulb``'s task codes as scipy's driver reads them: evaluate f and g; a new iterate.
_TASK_FG, _TASK_NEW_X, _TASK_CONVERGED, _TASK_STOP = 3, 1, 4, 5
#: The stop reasons the driver sets itself (scipy's codes): iteration and evaluation limits.
_STOP_MAXITER, _STOP_MAXFUN = 504, 502


@dataclass(frozen=True)
class LbfgsbResult:
    """The answer of one minimisation: as :class:`scipy.optimize.OptimizeResult` names these fields.

    ``success`` is true when the routine met its tolerance (not an iteration or evaluation limit).
    Shapes: x (n,).
    """

    x: Array
    fun: float
    nit: int
    nfev: int
    success: bool
    message: str


def minimize_lbfgsb(fun: ValueAndGradient, x0: Array, lower: Array, upper: Array, *, maxiter: int = 15000,
                    ftol: float = 2.2204460492503131e-09, gtol: float = 1e-5, maxcor: int = 10, maxls: int = 20,
                    maxfun: int = 15000) -> LbfgsbResult:
    """Minimise ``fun`` within ``lower <= x <= upper`` from ``x0``: what ``minimize(fun, x0, jac=True,
    method="L-BFGS-B", bounds=..., options=...)`` returns, with these options (scipy's defaults). Shapes: x0,
    lower, upper (n,)."""
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    if not kernel_agrees():
        return _through_minimize(fun, x0, lower, upper, maxiter, ftol, gtol, maxcor, maxls, maxfun)
    return _drive(fun, x0, lower, upper, maxiter, ftol, gtol, maxcor, maxls, maxfun)


def _through_minimize(fun: ValueAndGradient, x0: Array, lower: Array, upper: Array, maxiter: int, ftol: float,
                      gtol: float, maxcor: int, maxls: int, maxfun: int) -> LbfgsbResult:
    res = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=list(zip(lower, upper)),
                   options={"maxiter": maxiter, "ftol": ftol, "gtol": gtol, "maxcor": maxcor, "maxls": maxls,
                            "maxfun": maxfun})
    return LbfgsbResult(x=np.asarray(res.x), fun=float(res.fun), nit=int(res.nit), nfev=int(res.nfev),
                        success=bool(res.success), message=str(res.message))


def _bounds(lower: Array, upper: Array) -> tuple[Array, Array, Array]:
    """``setulb``'s bound arrays: the finite bounds (0 where infinite) and each variable's kind (0 free, 1
    lower only, 2 both, 3 upper only). Shapes: (n,), (n,) -> (n,), (n,), (n,) int32."""
    has_lo, has_up = np.isfinite(lower), np.isfinite(upper)
    kind = np.where(has_lo, np.where(has_up, 2, 1), np.where(has_up, 3, 0)).astype(np.int32)
    return np.where(has_lo, lower, 0.0), np.where(has_up, upper, 0.0), kind


def _drive(fun: ValueAndGradient, x0: Array, lower: Array, upper: Array, maxiter: int, ftol: float, gtol: float,
           maxcor: int, maxls: int, maxfun: int) -> LbfgsbResult:
    """scipy's ``_minimize_lbfgsb`` loop around ``setulb``, the objective called directly."""
    from scipy.optimize import _lbfgsb

    x = np.array(np.clip(np.asarray(x0, dtype=float).ravel(), lower, upper), dtype=np.float64)
    n, m = x.size, maxcor
    low, up, kind = _bounds(lower, upper)
    f, g = fun(x.copy())  # scipy evaluates at the start first, and counts it
    g = np.array(g, dtype=np.float64)  # scipy copies the gradient before each call; one copy per evaluation is
    nfev, at = 1, x.tolist()  # the same (setulb reads the copy it is given, whatever it did to the last one)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m, np.float64)
    iwa = np.zeros(3 * n, np.int32)
    task, ln_task, lsave = np.zeros(2, np.int32), np.zeros(2, np.int32), np.zeros(4, np.int32)
    isave, dsave = np.zeros(44, np.int32), np.zeros(29, np.float64)
    factr, nit = ftol / np.finfo(float).eps, 0
    while True:
        _lbfgsb.setulb(m, x, low, up, kind, f, g, factr, gtol, wa, iwa, task, lsave, isave, dsave, maxls,
                       ln_task)
        if task[0] == _TASK_FG:
            # np.array_equal's test: the lists compare element by element as floats (NaN unequal, -0.0 == 0.0)
            if x.tolist() != at:
                f, g = fun(x.copy())
                g = np.array(g, dtype=np.float64)
                nfev, at = nfev + 1, x.tolist()
        elif task[0] == _TASK_NEW_X:
            nit += 1
            if nit >= maxiter:
                task[0], task[1] = _TASK_STOP, _STOP_MAXITER
            elif nfev > maxfun:
                task[0], task[1] = _TASK_STOP, _STOP_MAXFUN
        else:
            break
    converged = task[0] == _TASK_CONVERGED
    return LbfgsbResult(x=x, fun=float(f), nit=nit, nfev=nfev, success=bool(converged),
                        message="converged" if converged else f"stopped (task {int(task[0])}.{int(task[1])})")


def _check_problem(x: Array) -> tuple[float, Array]:
    """A bounded, curved test objective (a shifted Rosenbrock valley). Shapes: (3,) -> (float, (3,))."""
    a, b = x[1] - x[0] ** 2, x[2] - x[1] ** 2
    f = (1 - x[0]) ** 2 + 100 * a * a + (1 - x[1]) ** 2 + 100 * b * b
    g = np.array([-2 * (1 - x[0]) - 400 * x[0] * a, 200 * a - 2 * (1 - x[1]) - 400 * x[1] * b, 200 * b])
    return float(f), g


@functools.cache
def kernel_agrees() -> bool:
    """Whether this process's scipy kernel, driven here, gives :func:`scipy.optimize.minimize`'s answer to the
    last bit on a bounded test problem (one bound active); False when it cannot be called."""
    lower, upper, x0 = np.array([-2.0, -2.0, 0.5]), np.array([2.0, 2.0, 0.9]), np.array([-1.2, 1.0, 0.6])
    opts: dict[str, Any] = dict(maxiter=2000, ftol=1e-12, gtol=1e-9, maxcor=10, maxls=20, maxfun=15000)
    try:
        mine = _drive(_check_problem, x0, lower, upper, **opts)
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        log.info("L-BFGS-B: scipy's kernel cannot be driven here (%s); scipy.optimize.minimize is used", exc)
        return False
    ref = _through_minimize(_check_problem, x0, lower, upper, **opts)
    same = (mine.x.tobytes() == np.asarray(ref.x, dtype=np.float64).tobytes() and mine.fun == ref.fun
            and mine.nit == ref.nit and mine.nfev == ref.nfev)
    if not same:
        log.info("L-BFGS-B: the driven kernel differs from scipy.optimize.minimize here; minimize is used")
    return same
