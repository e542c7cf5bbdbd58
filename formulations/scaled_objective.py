r"""The finite-p goodput objective in units that stay in floating-point range.

The fitness ``F = (Σ_j w_j t_j^p / W)^(1/p)`` (``t_j = S_j + eps``, or the idle
value ``e0`` for a job without GPUs; ``W = Σ_j w_j``; geometric mean at
``p = 0``) is optimised through the per-job terms ``w_j t_j^p``. Taken as they
are, those terms leave double precision quickly: an idle job's ``eps^p`` is
``1e30`` at ``p = -10, eps = 1e-3`` and overflows at ``p = -300``, and next to
it every running job's term is rounding noise, so a solver "proves" optima
that are not. The models therefore use, for a *reference fitness* ``r > 0``,
the Box-Cox terms of ``t / r``::

    a(t) = w_j * bc_p(t / r),   bc_p(x) = (x^p - 1) / p    (p != 0),   log x   (p = 0)
         = w_j * expm1(p * (log t - log r)) / p

and maximise ``V = Σ_j a(t_j)`` for every sign of ``p`` (``bc_p`` increases in
``x``). Since ``Σ_j w_j t_j^p = r^p (W + p V)``, the fitness of a model value
(or bound) ``V`` is exactly

    F(V) = r * (1 + p V / W)^(1/p)      (p != 0),      r * exp(V / W)   (p = 0),

computed in log space. Three facts make this safe at every finite ``p``:

1. *Range.* With ``r`` near the optimum, a term far below ``r^p`` (a good
   speedup at ``p < 0``, a poor one at ``p > 0``) saturates at ``±w_j / p``
   instead of underflowing, and what it loses is below double precision of
   the objective; terms far above are removed by (2) (``p < 0``) or bounded
   by the choice of ``r`` (``p > 0``: ``r`` is at least the fitness of the
   single best term, so ``a <= W / p``).
2. *Pruning* (``p < 0``). Given an incumbent with fitness ``F_inc``, an option
   whose own term exceeds the incumbent's whole sum, ``w_j t^p > W F_inc^p``,
   belongs to no allocation at least as good: configurations with such a
   term are forbidden (``z_c = 0``) and jobs whose idle term is such must run.
   The test is made in logs with a relative margin, so it never removes a
   solution within rounding of the incumbent.
3. *Resolution.* An absolute error ``δ`` of the model value changes
   ``log F`` by ``δ / (W (F / r)^p)``: with ``r`` within a few per cent of the
   optimum a solver gap of ``1e-7 W`` is a fitness gap of about ``1e-7``.
   When ``r`` is far off, the caller re-solves with ``r`` set to the better
   incumbent (:func:`reference_fitness`); the certificate is the fitness gap
   computed with ``F(V)`` from the solver's bound, never the solver's status.

This module is the models' one home for what ``p`` means (the evaluator's own
power mean is :mod:`goodopt.fitness`): besides the scaled terms above, the
plain transform ``h`` with its inverse and sense (:func:`objective_transform`),
the fitness of a plain sum (:func:`fitness_from_sum`), and the per-job term
heuristics rank moves by (:func:`rank_utility`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from goodopt.arrays import Array
from goodopt.errors import ValidationError
from goodopt.fitness import TINY_P
from goodopt.problem import AllocationProblem

from .configs import ConfigSet

#: Relative margin (in the log of a term) before an option is pruned as worse than the incumbent.
PRUNE_MARGIN = 1e-9


@dataclass(frozen=True, eq=False)
class ScaledObjective:
    """Coefficients of ``maximise Σ_c coef_c z_c + Σ_j idle_j u_j`` (finite p) and how to read them.

    ``forbidden`` configurations must stay unchosen and ``must_run`` jobs must
    choose a configuration (both from pruning against an incumbent; all False
    without one). Shapes: coef, forbidden (C,); idle, must_run (J,).
    """

    p: float
    reference: float
    weight_sum: float
    coef: Array
    idle: Array
    forbidden: Array
    must_run: Array

    def fitness(self, value: float) -> float:
        """The fitness ``F(V)`` of a model value or bound ``V`` (see :func:`fitness_of_value`)."""
        return fitness_of_value(value, self.p, self.weight_sum, self.reference)

    def value(self, fitness: float) -> float:
        """The model value ``V`` of a fitness ``F > 0``: ``W bc_p(F / r)``, the inverse of :meth:`fitness`."""
        return self.weight_sum * float(box_cox(self.p, np.log(fitness / self.reference)))

    def subset(self, mask: Array) -> ScaledObjective:
        """The objective over the configurations where ``mask`` holds (:meth:`ConfigSet.subset`). Shapes: (C,)."""
        mask = np.asarray(mask, bool)
        return replace(self, coef=self.coef[mask], forbidden=self.forbidden[mask])


def fitness_of_value(value: float, p: float, weight_sum: float, reference: float) -> float:
    """``F(V) = r (1 + p V / W)^(1/p)`` (``r exp(V / W)`` at p = 0) in logs; NaN if ``V`` is not finite.

    A value beyond what any allocation can reach (``1 + p V / W <= 0``) gives
    ``+inf`` for p < 0 (a bound with no information) and 0 for p > 0.
    """
    v = float(value)
    if not np.isfinite(v):
        return float("nan")
    if p == 0:
        log_f = np.log(reference) + v / weight_sum
    elif abs(p) < TINY_P:  # (1/p) log1p(p y) = y - p y^2 / 2 + O(p^2): p y underflows otherwise
        y = v / weight_sum
        log_f = np.log(reference) + y - 0.5 * p * y * y
    else:
        x = p * v / weight_sum
        if x <= -1.0:
            return float("inf") if p < 0 else 0.0
        log_f = np.log(reference) + np.log1p(x) / p
    with np.errstate(over="ignore"):
        return float(np.exp(log_f))


def log_terms(problem: AllocationProblem, configs: ConfigSet) -> tuple[Array, Array]:
    """``log t`` of every configuration and of every job's idle value. Shapes: -> (C,), (J,)."""
    with np.errstate(divide="ignore"):
        log_t = np.log(problem.shifted(configs.speedup))
    return log_t, np.full(problem.n_jobs, np.log(problem.idle))


def box_cox(p: float, log_x: Array) -> Array:
    """``bc_p(x)`` from ``log x``: ``expm1(p log x) / p``, ``log x`` at ``p = 0``. Shapes: (...) -> (...)."""
    log_x = np.asarray(log_x, dtype=float)
    if p == 0:
        return log_x
    if abs(p) < TINY_P:  # expm1(p L) / p = L + p L^2 / 2 + O(p^2): p L underflows otherwise
        return log_x + 0.5 * p * log_x * log_x
    with np.errstate(over="ignore"):
        return np.expm1(p * log_x) / p


def reference_fitness(problem: AllocationProblem, configs: ConfigSet, incumbent_fitness: float | None = None) -> float:
    """A reference ``r`` for :func:`scaled_objective`: the incumbent's fitness, made safe.

    For ``p > 0`` it is at least the fitness of the allocation running only
    the single best configuration (feasible on its own), so no coefficient
    exceeds ``W / p``. Without an incumbent: that value for ``p > 0``, and for
    ``p <= 0`` the fitness with every job at its best option (an upper bound).
    """
    pr, cs = problem, configs
    p, w = pr.p, pr.weights
    W = float(w.sum())
    log_t, log_idle = log_terms(pr, cs)
    best = log_idle.copy()
    if cs.n_configs:
        np.maximum.at(best, cs.job, log_t)
    if p > 0:
        # log of the largest single term, w_j t^p, against log(W r^p)
        single = np.log(w[cs.job]) + p * log_t if cs.n_configs else np.log(w) + p * log_idle
        log_r = (float(np.max(single, initial=-np.inf)) - np.log(W)) / p if p >= TINY_P else np.nan
        # at tiny p every term is about w_j (1 + p log t): any r keeps coefficients near log(t / r)
        candidates = [log_r if np.isfinite(log_r) else float(np.sum(w * best) / W)]
    elif p == 0:
        candidates = [float(np.sum(w * best) / W)]
    else:
        candidates = [float(best.min())]  # a fitness no allocation beats by much at p << 0
    if incumbent_fitness is not None and np.isfinite(incumbent_fitness) and incumbent_fitness > 0:
        if p > 0:
            candidates.append(float(np.log(incumbent_fitness)))
            return float(np.exp(max(candidates)))
        return float(incumbent_fitness)
    return float(np.exp(candidates[0]))


def scaled_objective(problem: AllocationProblem, configs: ConfigSet, reference: float,
                     incumbent_fitness: float | None = None) -> ScaledObjective:
    """Coefficients for reference ``reference``; pruning against ``incumbent_fitness`` when given (p < 0).

    Only for finite ``p``. See the module docstring for the units.
    """
    pr, cs = problem, configs
    p, w = pr.p, pr.weights
    W = float(w.sum())
    log_t, log_idle = log_terms(pr, cs)
    log_r = float(np.log(reference))
    coef = w[cs.job] * box_cox(p, log_t - log_r)
    idle = w * box_cox(p, log_idle - log_r)
    forbidden = np.zeros(cs.n_configs, bool)
    must_run = np.zeros(pr.n_jobs, bool)
    if p < 0 and incumbent_fitness is not None and np.isfinite(incumbent_fitness) and incumbent_fitness > 0:
        # log(w t^p) > log(W F_inc^p): a single term above the incumbent's whole sum
        limit = np.log(W) + p * np.log(incumbent_fitness)
        margin = PRUNE_MARGIN * max(1.0, abs(limit))
        forbidden = np.log(w[cs.job]) + p * log_t > limit + margin
        has_option = np.zeros(pr.n_jobs, bool)
        has_option[cs.job[~forbidden]] = True
        must_run = (np.log(w) + p * log_idle > limit + margin) & has_option
    coef = np.where(forbidden, 0.0, coef)
    idle = np.where(must_run, 0.0, idle)
    return ScaledObjective(p=float(p), reference=float(reference), weight_sum=W, coef=coef, idle=idle,
                           forbidden=forbidden, must_run=must_run)


def log_gain(problem: AllocationProblem, log_t_old: Array | float, log_t_new: Array | float,
             weight: Array | float) -> Array:
    """``log`` of the objective gain of moving a job from ``t_old`` to ``t_new`` (finite or ±inf p).

    The gain is ``w (t_new^p - t_old^p)`` for p > 0, ``w (t_old^p - t_new^p)``
    for p < 0 and ``w log(t_new / t_old)`` for p = 0, in logs without
    overflow: with ``d = log t_new - log t_old > 0`` it is ``log w + min(p log
    t_old, p log t_new) + log(expm1(|p| d))``. ``p = ±inf`` ranks as ``p = ∓8``
    as a heuristic; ``-inf`` where nothing is gained. Shapes: broadcast -> same.
    """
    p = problem.p if np.isfinite(problem.p) else float(np.sign(problem.p) * 8.0)
    if abs(p) < TINY_P:
        p = 0.0  # the gain is |p| times the p = 0 gain to first order: the same ranking
    a, b = np.broadcast_arrays(np.asarray(log_t_old, float), np.asarray(log_t_new, float))
    d = b - a
    up = d > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        dd = np.where(up, d, 1.0)
        if p == 0:
            out = np.log(weight) + np.log(dd)
        else:
            x = abs(p) * dd
            log_expm1 = np.where(x > 1.0, x + np.log(-np.expm1(-x)), np.log(np.expm1(np.minimum(x, 1.0))))
            out = np.log(weight) + np.minimum(p * a, p * b) + log_expm1
    return np.where(up, out, -np.inf)


# ------------------------------------------------------------ the plain transforms (a heuristic's view)
def objective_transform(p: float) -> tuple[Callable[[Any], Any], Callable[[Any], Any], str]:  # Any: the transform and its inverse work on scalars and arrays
    """``h`` with fitness ``F = M_h^{-1}(sum w h(S + eps) / sum w)`` and its sense.

    Returns ``(h, h_inverse, sense)`` where ``sense`` is ``"min"`` when the
    weighted sum of ``h`` is to be minimised (p < 0) and ``"max"`` otherwise.
    Only for finite ``p``.
    """
    if not np.isfinite(p):
        raise ValidationError("p", "objective_transform needs a finite p", "handle +-inf with an epigraph")
    if p == 0:
        return np.log, np.exp, "max"
    return (lambda t: np.power(t, p)), (lambda y: np.power(y, 1.0 / p)), ("min" if p < 0 else "max")


def rank_utility(problem: AllocationProblem, speedup: Array, job: Array | int) -> Array:
    """Per-job objective term, larger is better, for ranking moves by their gain (a heuristic's view).

    ``w_j bc_p(S + eps)`` (Box-Cox, increasing in ``S`` for every p, an affine
    image of ``± w_j h(S + eps)``, so differences rank like the objective's);
    ``p = ±inf`` is ranked as ``p = ±8``, and ``p log(S + eps)`` is clipped
    to ``[-700, 700]`` so that no term overflows at extreme p (terms beyond
    it rank as equal). Shapes: speedup, job (...) -> (...).
    """
    p = float(np.sign(problem.p) * 8.0) if not np.isfinite(problem.p) else float(problem.p)
    log_t = np.log(problem.shifted(speedup))
    if abs(p) < TINY_P:  # the p = 0 ranking (expm1(p log t) / p underflows)
        return problem.weights[job] * log_t
    return problem.weights[job] * np.expm1(np.clip(p * log_t, -700.0, 700.0)) / p


def fitness_from_sum(total: float, weight_sum: float, p: float) -> float:
    """Fitness ``F`` from the objective ``sum w h(S + eps)`` (finite ``p``)."""
    _, inv, _ = objective_transform(p)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return float(inv(total / weight_sum))
