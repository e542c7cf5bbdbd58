"""A running job's fit of its own throughput model, as Pollux's job agent makes it.

The agent fits all seven parameters ``(alpha_c, beta_c, alpha_n, beta_n,
alpha_r, beta_r, gamma)`` jointly to the configurations it has run (one
observation per (nodes, GPUs, per-GPU batch), the first one seen), from fixed
start values, with these semantics (Pollux, OSDI'21, §4.1 and its artifact's
job agent):

* start ``alpha = 0.1``, ``beta = 0.01`` (seconds, seconds per example or per
  GPU beyond two), ``gamma = 1.001``; bounds ``[1e-8, inf)`` and ``gamma`` in
  ``[1, 10]``;
* parameters the observations cannot identify are fixed:

  - one distinct per-GPU batch: ``alpha_c`` = half the mean observed compute
    time (``beta_c`` stays free, so it takes the other half);
  - no multi-node observation: ``alpha_n = beta_n = 1e-8``;
  - no single-node observation with more than one GPU: ``alpha_r = beta_r = 1e-8``;
  - no observation with more than two GPUs: ``beta_n = beta_r = 1e-8``;

* the objective is the RMS error of log compute time plus the RMS error of
  log step time (the step time predicted as ``(T_c^g + T_s^g)^(1/g)``), plus
  ``1e-3 (gamma - 1)^2`` and ``optimism * ((beta_n/alpha_n)^2 + (beta_r/alpha_r)^2)``
  (``optimism`` = 1e-2): a model that stays optimistic about more GPUs until
  observations contradict it;
* after the fit, without a multi-node observation, inter-node sync is made at
  least 10% dearer than intra-node: ``alpha_n = max(alpha_n, 1.1 alpha_r)``,
  ``beta_n = max(beta_n, 1.1 beta_r)``.

The sync term is the slowest link's ``alpha`` plus ``beta * max(GPUs - 2, 0)``
(:func:`goodopt.goodput.sync_time`). Where Pollux's RMS terms have a kink at an
exact fit, goodopt smooths them (``sqrt(mean(r^2) + delta^2)``,
:data:`RMS_SMOOTHING`), so the minimum is a smooth one, and minimises with
L-BFGS-B (scipy's, driven by :func:`goodopt.lbfgsb.minimize_lbfgsb`: the
answer of :func:`scipy.optimize.minimize` without its per-call wrapper) on the
exact (hand-derived) gradient, each parameter in units of
its observed magnitude (:func:`search_scale`), from Pollux's start values and
two further fixed starts (the problem is not convex), keeping the lowest
objective: the answer does not depend on floating-point detail or on where
the search starts (tested from several starts).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import numpy as np

from .agent_objective import (  # noqa: F401  (GAMMA_WEIGHT, RMS_SMOOTHING: read here too)
    GAMMA_WEIGHT,
    RMS_SMOOTHING,
    objective_and_gradient,
    reduced_objective_and_gradient,
)
from .arrays import Array, ArrayIn
from .errors import FitError
from .goodput import ThroughputParams
from .lbfgsb import minimize_lbfgsb

log = logging.getLogger(__name__)

#: Start values and bounds of the agent's fit, in the order alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, gamma.
START = np.array([1e-1, 1e-2, 1e-1, 1e-2, 1e-1, 1e-2, 1.0 + 1e-3])
LOWER = np.array([1e-8] * 6 + [1.0])
UPPER = np.array([np.inf] * 6 + [10.0])
#: Further starts (the objective is not convex: from one start L-BFGS-B may end in a worse local minimum, with
#: gamma near 2 and a retrogression slope at 0, say); the lowest objective wins, the first start on ties.
EXTRA_STARTS = (np.array([1e-2, 1e-4, 1e-2, 1e-3, 1e-2, 1e-3, 2.0]), np.array([1.0, 1e-3, 1.0, 1e-1, 1.0, 1e-1, 5.0]))
#: Upper end of the search for every alpha and beta (seconds): no step of a job takes longer.
MAX_SECONDS = 1e4


def search_scale(local_bsz: ArrayIn, compute_time: ArrayIn, step_time: ArrayIn) -> np.ndarray:
    """The unit of each parameter in the search: the mean observed compute time for ``alpha_c``, that per
    example for ``beta_c``, the mean step time for the sync parameters, 1 for ``gamma``.

    The minimiser is the same in any units; in these, one step size suits every parameter (the times span
    five decades from job to job), and a parameter the data drive to its lower bound reaches it in one
    projected step. (On a log scale, the former search space, the gradient of such a parameter shrinks with
    it, and L-BFGS-B crept towards the bound: 37% more evaluations over a Pollux run's fits, for the same
    objective values to 1e-9.) Shapes: three (O,) arrays -> (7,).
    """
    tc, ts = float(np.mean(compute_time)), float(np.mean(step_time))
    return np.array([tc, tc / float(np.mean(local_bsz)), ts, ts, ts, ts, 1.0])


def fixed_parameters(num_nodes: ArrayIn, num_replicas: ArrayIn, local_bsz: ArrayIn,
                     compute_time: ArrayIn) -> dict[int, float]:
    """The parameters the observations cannot identify, by index, with the values they are fixed to."""
    n, k, m = (np.asarray(a, dtype=float) for a in (num_nodes, num_replicas, local_bsz))
    fixed = {}
    if len(np.unique(m)) == 1:
        fixed[0] = float(np.mean(compute_time)) / 2
    if not np.any(n > 1):
        fixed[2] = fixed[3] = LOWER[2]
    if not np.any((n == 1) & (k > 1)):
        fixed[4] = fixed[5] = LOWER[4]
    if not np.any(k > 2):
        fixed[3] = fixed[5] = LOWER[3]
    return fixed


class _Objective:
    """The agent's objective and its exact gradient in the seven parameters
    (:func:`goodopt.agent_objective.objective_and_gradient`, which states the formula).

    ``xa`` selects the compute-time parameters per observation (``[1, m]``), ``xn`` the slowest link's sync
    parameters; ``none`` is the 1e-8 s of an observation on one GPU.
    """

    def __init__(self, n: Array, k: Array, m: Array, compute: Array, step: Array, optimism: float) -> None:
        inter, intra = n > 1, (n == 1) & (k > 1)
        extra = np.maximum(k - 2, 1e-8)
        self.xa = np.ascontiguousarray(np.stack([np.ones_like(m), m], axis=1), dtype=float)  # (O, 2)
        self.xn = np.ascontiguousarray(np.stack([inter, inter * extra, intra, intra * extra], axis=1),
                                       dtype=float)  # (O, 4)
        self.none = np.where(inter | intra, 0.0, 1e-8 * (1 + extra))
        self.log_c, self.log_s = np.log(compute), np.log(step)
        self.n_obs = len(m)
        self.optimism = float(optimism)

    def reduced(self, x0: Array, free: Array, scale: Array) -> Callable[[Array], tuple[float, Array]]:
        """The objective at ``x0`` with ``x0[free] = u * scale[free]``, as a function of ``u`` (float64) returning
        it and its gradient in ``u`` (:func:`goodopt.agent_objective.reduced_objective_and_gradient`, called
        directly: the searches call it some 140 times per start)."""
        data = (self.xa, self.xn, self.none, self.log_c, self.log_s, self.optimism, x0, free, scale)
        n_free = len(free)

        def at(u: Array) -> tuple[float, Array]:
            grad = np.empty(n_free)
            return reduced_objective_and_gradient(*data, u, grad), grad

        return at

    def __call__(self, p: ArrayIn) -> tuple[float, np.ndarray]:
        grad = np.empty(7)
        f = objective_and_gradient(self.xa, self.xn, self.none, self.log_c, self.log_s, self.optimism,
                                   np.asarray(p, dtype=float), grad)
        return f, grad


#: Fits remembered per process: jobs of one application that saw the same configurations ask for the same fit
#: (in a Pollux simulation more than half of the fits repeat one already made, and the runs of one sweep worker
#: share their jobs' first observations). Sized for a worker's whole share of a full reproduction (about
#: 11,000 fits asked, fewer distinct; an entry is a few kB).
FIT_CACHE_SIZE = 16384


def fit_agent(num_nodes: ArrayIn, num_replicas: ArrayIn, local_bsz: ArrayIn, step_time: ArrayIn,
              sync_time: ArrayIn, *, optimism: float = 1e-2, start: ArrayIn | None = None) -> ThroughputParams:
    """Throughput parameters from a job's own observations, by Pollux's agent semantics (module docstring).

    ``start`` (seven values in the order of :data:`START`) replaces the start values; the answer does not
    depend on it. The same observations give the same (remembered) answer. Shapes: five arrays (O,) ->
    ThroughputParams.
    """
    arrays = [np.asarray(a, dtype=float) for a in (num_nodes, num_replicas, local_bsz, step_time, sync_time)]
    if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1:
        raise FitError(f"the five observation arrays must be one-dimensional and of one length, got shapes "
                       f"{[a.shape for a in arrays]}")
    key = (len(arrays[0]), b"".join(a.tobytes() for a in arrays), float(optimism),
           None if start is None else tuple(float(v) for v in start))
    return _fit_remembered(key)


@functools.lru_cache(maxsize=FIT_CACHE_SIZE)
def _fit_remembered(key: tuple[int, bytes, float, tuple[float, ...] | None]) -> ThroughputParams:
    n_obs, data, optimism, start = key
    n, k, m, step, sync = np.frombuffer(data, dtype=float).reshape(5, n_obs)
    return _fit(n, k, m, step, sync, optimism, start)


def _fit(n: Array, k: Array, m: Array, step: Array, sync: Array, optimism: float,
         start: tuple[float, ...] | None) -> ThroughputParams:
    if len(step) == 0:
        raise FitError("no observations to fit")
    if not (np.all(np.isfinite(step)) and np.all(step > 0) and np.all(np.isfinite(sync)) and np.all(sync >= 0)):
        raise FitError("observed step times must be finite and > 0, sync times finite and >= 0")
    compute = np.maximum(step - np.minimum(sync, step), 1e-6 * step)
    fixed = fixed_parameters(n, k, m, compute)
    lower, upper = LOWER.copy(), UPPER.copy()
    x0 = np.array(START if start is None else start, dtype=float)
    for i, v in fixed.items():
        lower[i] = upper[i] = x0[i] = v
    free = lower < upper
    x0 = np.clip(x0, lower, upper)
    objective = _Objective(n, k, m, compute, step, optimism)
    scale = search_scale(m, compute, step)

    def to_x(u: Array) -> Array:
        x = x0.copy()
        x[free] = u * scale[free]
        return x

    reduced = objective.reduced(x0, np.flatnonzero(free), scale)  # objective(to_x(u)), its gradient in u

    if not free.any():
        x = x0
    else:
        lo = (lower / scale)[free]
        hi = (np.where(np.arange(7) < 6, MAX_SECONDS, upper) / scale)[free]
        best = None
        for s in (x0, *(np.where(free, np.clip(e, lower, upper), x0) for e in EXTRA_STARTS)):
            u0 = np.clip((s / scale)[free], lo, hi)
            res = minimize_lbfgsb(reduced, u0, lo, hi, maxiter=2000, ftol=1e-12, gtol=1e-9)
            log.debug("agent fit: %d iterations, %d evaluations, f %.9g, %s", res.nit, res.nfev, res.fun, res.message)
            if np.all(np.isfinite(res.x)) and np.isfinite(res.fun) and (best is None or res.fun < best.fun - 1e-9):
                best = res
        if best is None:
            raise FitError("the agent's fit found no finite optimum")
        x = to_x(best.x)
    ac, bc, an, bn, ar, br, g = (float(v) for v in x)
    if not np.any(n > 1):
        an, bn = max(an, 1.1 * ar), max(bn, 1.1 * br)
    return ThroughputParams(alpha_c=ac, beta_c=bc, alpha_r=ar, beta_r=br, alpha_n=an, beta_n=bn, gamma=g)
