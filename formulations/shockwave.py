r"""Shockwave's round (NSDI'23): a plan over the next rounds maximising Nash social welfare of the jobs' progress,
kept within finish-time fairness, as one MILP (:func:`plan_model`), and the order of the planned rounds (a
second MILP, :func:`rank_model`). Both are arrays for HiGHS (:class:`~goodopt.formulations.matrix.MatrixModel`).

Data: jobs ``j`` asking for ``k_j`` GPUs, ``c_j`` of their ``S_j`` optimiser steps done, ``tau_j`` seconds per
step at ``k_j`` GPUs, so ``R_j = (S_j - c_j) tau_j`` seconds of work left; ``e_j`` seconds since arrival; a
window of ``W`` rounds of ``L`` seconds; ``C`` GPUs; each job's equal share ``q = min(1, C / J)`` of the
cluster; breakpoints ``0 = b_0 < b_1 < ... < b_B = 1`` of the progress fraction with ``l_i = log b_i`` (``l_0
= log`` of a small origin, as ``log 0`` is not a number); the makespan weight ``kappa``; the fairness bound
``rho_max``; and per job ``F_j``, the average of its finish-time estimates under an equal share so far
(:func:`fair_finish_time`).

Variables::

    x_jw in {0, 1}   job j runs in round w of the window       (w = 1..W)
    p_j  >= 0        steps job j makes in the window
    y_ji >= 0        weights of breakpoint i in job j's progress fraction
    m    >= 0        the most work any job has left after the window

The plan::

    (1)  sum_j k_j x_jw <= C                                    for all w   (GPUs of each round)
    (2)  tau_j p_j <= L sum_w x_jw                              for all j   (steps need rounds)
    (3)  sum_i b_i y_ji = (c_j + p_j) / S_j                      for all j   (progress fraction ...)
    (4)  sum_i y_ji = 1                                         for all j   (... as breakpoint weights)
    (5)  m >= R_j - tau_j p_j                                   for all j
    (6)  (e_j + W L) + (R_j - tau_j p_j) / q <= rho_max F_j      for all j   (finish-time fairness)

    maximise  sum_j pi_j sum_i l_i y_ji / (J W)  -  kappa m

with ``pi_j = 1``. ``sum_i l_i y_ji`` is the piecewise-linear interpolation of ``log`` of the progress
fraction; ``log`` is concave and every ``pi_j > 0``, so the maximum puts weight on two neighbouring
breakpoints only and no binaries are needed for it. When (6) cannot hold for every job, the plan is solved
again without (6) and with each job's welfare raised by its priority::

    rho_j = (e_j + R_j / q) / F_j,      pi_j = rho_j ** lam   if rho_j > rho_max (rho_j ** 100 if R_j < L),
                                        pi_j = 1              otherwise,

the priorities divided by the largest (a positive rescaling, so that the objective stays within the solver's
range). A plan fixes how many rounds ``n_j`` each job runs, not in which; the ranking (its own MILP) puts the
high-priority jobs first::

    (7)  sum_w z_jw = n_j                                       for all j
    (8)  sum_j k_j z_jw <= C                                    for all w
         minimise  sum_{j: n_j > 0} pi_j sum_w w z_jw / n_j  -  eps sum_{j running} z_j1,    z_jw in {0, 1}

where ``eps`` is a thousandth of the smallest ``pi_j / n_j``: among rankings of (nearly) equal worth, the jobs
running now keep running (every plan is symmetric in its rounds, so without it a job could be stopped and
restarted for nothing). The first round of the ranked plan runs; GPUs it leaves idle go to the other jobs, most work left first, as
they fit (work conservation). The plan is made again every round.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from goodopt.arrays import Array, ArrayIn

from .matrix import MatrixModel, Rows

#: Breakpoints of the progress fraction and the value standing in for log 0 (Shockwave's artifact settings).
LOG_BREAKPOINTS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
LOG_ORIGIN = 1e-6


@dataclass(frozen=True)
class PlanData:
    """One round's data (the module docstring's symbols). Shapes: every array (J,)."""

    gpus: Array  # k_j
    steps_done: Array  # c_j
    steps_total: Array  # S_j
    step_s: Array  # tau_j
    elapsed_s: Array  # e_j
    fair_finish_s: Array  # F_j
    n_gpus: int  # C
    rounds: int  # W
    round_s: float  # L
    kappa: float
    rho_max: float

    @property
    def n_jobs(self) -> int:
        return len(self.gpus)

    @property
    def remaining_s(self) -> Array:
        return (self.steps_total - self.steps_done) * self.step_s

    @property
    def share(self) -> float:
        return min(1.0, self.n_gpus / max(self.n_jobs, 1))


def fair_finish_time(elapsed_s: ArrayIn, remaining_s: ArrayIn, share: float) -> Array:
    """A job's finish-time estimate under an equal share (the terms ``F_j`` average): time in the system plus
    its work left at ``share`` of its speed. Shapes: (J,) -> (J,)."""
    return np.asarray(elapsed_s, float) + np.asarray(remaining_s, float) / share


def priorities(d: PlanData, lam: float) -> Array:
    """``pi_j`` of the relaxed plan, divided by the largest. Shapes: -> (J,)."""
    rho = fair_finish_time(d.elapsed_s, d.remaining_s, d.share) / d.fair_finish_s
    power = np.where(d.remaining_s < d.round_s, 100.0, lam)
    log_pi = np.where(rho > d.rho_max, power * np.log(np.maximum(rho, 1e-300)), 0.0)
    return np.exp(log_pi - log_pi.max())


def _row(rows: Rows, cols: ArrayIn, vals: ArrayIn, lo: float, hi: float, name: str) -> None:
    """One row: ``lo <= sum vals * x[cols] <= hi``."""
    cols = np.atleast_1d(cols)
    rows.add(np.zeros(len(cols), np.int64), cols, np.atleast_1d(np.asarray(vals, float)), [lo], [hi], name)


def _model(rows: Rows, cost: Array, upper: Array, integer: Array) -> MatrixModel:
    A, lo, hi = rows.matrix(len(cost))
    return MatrixModel(cost=cost, lower=np.zeros(len(cost)), upper=upper, integer=integer, A=A, row_lower=lo,
                       row_upper=hi, names=tuple(rows.names), n_configs=0, epigraph=False)


def plan_columns(d: PlanData) -> tuple[Array, Array, Array, int]:
    """Column indices: x (J, W), p (J,), y (J, B+1), and m."""
    J, W, B = d.n_jobs, d.rounds, len(LOG_BREAKPOINTS)
    x = np.arange(J * W).reshape(J, W)
    p = J * W + np.arange(J)
    y = J * W + J + np.arange(J * B).reshape(J, B)
    return x, p, y, J * W + J + J * B


def plan_model(d: PlanData, pi: ArrayIn | None = None, fairness: bool = True) -> MatrixModel:
    """(1)-(6) with the welfare weights ``pi`` (None: all 1); ``fairness=False`` leaves (6) out."""
    J, W, L = d.n_jobs, d.rounds, d.round_s
    x, p, y, m = plan_columns(d)
    b = np.array(LOG_BREAKPOINTS)
    logs = np.log(np.where(b > 0, b, LOG_ORIGIN))
    pi = np.ones(J) if pi is None else np.asarray(pi, float)
    rows, R = Rows(), d.remaining_s
    for w in range(W):
        _row(rows, x[:, w], d.gpus, -np.inf, d.n_gpus, "(1)")
    for j in range(J):
        tau = float(d.step_s[j])
        _row(rows, np.r_[p[j], x[j]], np.r_[tau, -L * np.ones(W)], -np.inf, 0.0, "(2)")
        _row(rows, np.r_[y[j], p[j]], np.r_[b, -1.0 / d.steps_total[j]], d.steps_done[j] / d.steps_total[j],
                 d.steps_done[j] / d.steps_total[j], "(3)")
        _row(rows, y[j], np.ones(len(b)), 1.0, 1.0, "(4)")
        _row(rows, np.r_[m, p[j]], [1.0, tau], R[j], np.inf, "(5)")
        if fairness:
            slack = d.rho_max * d.fair_finish_s[j] - d.elapsed_s[j] - W * L - R[j] / d.share
            _row(rows, p[j], -tau / d.share, -np.inf, slack, "(6)")
    n = m + 1
    cost = np.zeros(n)
    cost[y] = (pi[:, None] * logs[None, :]) / (J * W)
    cost[m] = -d.kappa
    upper = np.full(n, np.inf)
    upper[x.ravel()] = 1.0
    upper[p] = d.steps_total - d.steps_done
    upper[y.ravel()] = 1.0
    integer = np.zeros(n, dtype=bool)
    integer[x.ravel()] = True
    return _model(rows, cost, upper, integer)


def rank_model(gpus: ArrayIn, n_rounds: ArrayIn, pi: ArrayIn, n_gpus: int, rounds: int,
               running: ArrayIn | None = None) -> MatrixModel:
    """(7)-(8): columns z (J, W) row-major, maximising minus (8)'s objective; ``running`` (J,) booleans."""
    gpus, n_rounds, pi = np.asarray(gpus), np.asarray(n_rounds), np.asarray(pi, float)
    running = np.zeros(len(gpus), dtype=bool) if running is None else np.asarray(running, dtype=bool)
    J, W = len(gpus), rounds
    z = np.arange(J * W).reshape(J, W)
    rows = Rows()
    for j in range(J):
        _row(rows, z[j], np.ones(W), float(n_rounds[j]), float(n_rounds[j]), "(7)")
    for w in range(W):
        _row(rows, z[:, w], gpus, -np.inf, n_gpus, "(8)")
    weight = np.where(n_rounds > 0, pi / np.maximum(n_rounds, 1), 0.0)
    cost = -(weight[:, None] * np.arange(1, W + 1)[None, :])
    positive = weight[weight > 0]
    cost[:, 0] += np.where(running, 1e-3 * positive.min() if len(positive) else 0.0, 0.0)
    return _model(rows, cost.ravel(), np.ones(J * W), np.ones(J * W, dtype=bool))


def plan_value(d: PlanData, x: ArrayIn, pi: ArrayIn | None = None) -> tuple[float, Array]:
    """The best objective of (1)-(6) with the rounds ``x`` (J, W) fixed, and its steps ``p``: each job makes
    every step its rounds allow (more progress never lowers the objective). Shapes: x (J, W) -> (J,)."""
    x = np.asarray(x)
    J, W = d.n_jobs, d.rounds
    pi = np.ones(J) if pi is None else np.asarray(pi, float)
    p = np.minimum(d.round_s * x.sum(axis=1) / d.step_s, d.steps_total - d.steps_done)
    frac = (d.steps_done + p) / d.steps_total
    b = np.array(LOG_BREAKPOINTS)
    logs = np.log(np.where(b > 0, b, LOG_ORIGIN))
    welfare = float((pi * np.interp(frac, b, logs)).sum()) / (J * W)
    left = d.remaining_s - d.step_s * p
    return welfare - d.kappa * max(float(left.max()), 0.0), p
