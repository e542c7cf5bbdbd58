"""One solve function per policy (:data:`POLICY_SOLVERS`) and :func:`solve_gavel`, which runs one."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from goodopt.arrays import Array
from goodopt.errors import ValidationError
from goodopt.gavel import PACKED
from goodopt.gavel.throughput_matrix import ThroughputMatrix
from goodopt.records import Record, RecordIn

from ..result import Termination
from .fairness import finish_time_fairness, water_filling
from .one_type import binding_level
from .policy_options import (
    POLICIES,
    FifoOptions,
    MaxMinOptions,
    MinCostOptions,
    PolicyOptions,
    ThroughputOptions,
    check_policy_options,
)
from .runner import PolicyAnswer, Runner, for_policy, need, require, solution


@dataclass
class FractionResult:
    """Time fractions and how they were found.

    ``x`` (J, K); ``pair_x`` (P, K) the time job pairs share GPUs (packed
    policies; P = 0 otherwise); ``throughput`` (J,) = ``sum_k x_jk T_jk`` plus
    the pair terms; ``normalised`` (J,) = throughput / equal-share throughput.
    """

    policy: str
    x: Array
    status: Termination
    fun: float
    message: str = ""
    throughput: Array | None = None
    normalised: Array | None = None
    n_lps: int = 0
    seconds: float = 0.0
    stages: list[dict[str, Any]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    pair_x: Array | None = None

    @property
    def success(self) -> bool:
        return self.status in (Termination.OPTIMAL, Termination.COMPLETED)

    def to_dict(self, matrix: ThroughputMatrix | None = None) -> Record:
        """JSON-ready fractions (job -> type -> fraction), throughputs and status."""
        out: dict[str, Any] = {
            "policy": self.policy, "status": str(self.status), "fun": float(self.fun), "message": self.message,
            "n_lps": self.n_lps, "seconds": self.seconds, "stages": self.stages, "options": self.options}
        if matrix is not None and self.normalised is not None:
            out["fractions"] = {j: {t: float(v) for t, v in zip(matrix.type_names, row) if v > 1e-9}
                                for j, row in zip(matrix.job_names, self.x)}
            out["normalised_throughput"] = {j: float(v) for j, v in zip(matrix.job_names, self.normalised)}
        return out


def solve_gavel(matrix: ThroughputMatrix, policy: str = "max_min_fairness",
                options: RecordIn | PolicyOptions | None = None) -> FractionResult:
    """Time fractions of one Gavel policy. Shapes: matrix (J, K) -> result.x (J, K), result.pair_x (P, K).

    A packed policy (:data:`~goodopt.gavel.PACKED`) needs the matrix's job
    pairs; the others ignore them. Each policy is one function of
    :data:`POLICY_SOLVERS`, by its base name.
    """
    opts = check_policy_options(policy, options)
    t0 = time.perf_counter()
    mx = for_policy(matrix, policy)
    run = Runner(mx, opts.time_limit_s, opts.backend, opts.lp_method, opts.solver)
    eq = mx.equal_share_throughput()
    x, y, fun, status = POLICY_SOLVERS[PACKED.get(policy, policy)](mx, run, eq, opts)
    if y is None:
        y = np.zeros((0 if mx.pairs is None else len(mx.pairs), mx.n_types))
    thr = mx.effective_throughput(x, y)
    return FractionResult(policy=policy, x=x, status=status, fun=fun, message=POLICIES[policy], throughput=thr,
                          normalised=thr / eq, n_lps=len(run.stages), seconds=time.perf_counter() - t0,
                          stages=run.stages, options=opts.as_dict(), pair_x=y)


def _fifo(mx: ThroughputMatrix, run: Runner, eq: Array, opts: FifoOptions) -> PolicyAnswer:
    x = fifo_fractions(mx, aware=opts.aware)
    return x, None, float((x.sum(axis=1) > 0).sum()), Termination.COMPLETED


def _max_min_fairness(mx: ThroughputMatrix, run: Runner, eq: Array, opts: MaxMinOptions, *,
                      agnostic: bool = False) -> PolicyAnswer:
    """Weighted max-min fairness of normalised throughput (aware) or of time fractions (agnostic), then, with
    ``second_stage``, the most total gain that keeps every job within ``tolerance`` of that level."""
    T, w = mx.throughput, mx.weights[:, None]
    if not agnostic:
        coef, gain = T / (w * eq[:, None]), T / eq[:, None]
    else:
        f = min(1.0, mx.capacity.sum() / float(mx.scale_factor.sum()))
        coef = np.where(mx.runnable, 1.0, 0.0) / (w * f)
        gain = np.where(mx.runnable, 1.0, 0.0)
    if opts.scale_by_size:  # Gavel's code: a job on s GPUs needs 1/s of the time for the same level
        coef = coef * mx.scale_factor[:, None]
    exact = binding_level(coef[:, 0], mx.scale_factor, float(mx.capacity[0])) \
        if mx.n_types == 1 and mx.pairs is None and not opts.second_stage else None
    if exact is not None:  # one type, its GPUs binding: the optimal face is one point (.one_type)
        return exact[0][:, None], None, exact[1], Termination.OPTIMAL
    model, out = run.solve("max-min", objective="max_min", coef=coef)
    require(out, "max_min_fairness", "max-min")
    (x, y), fun = solution(model, mx), float(out.objective)
    if opts.second_stage:
        model2, out2 = run.solve("fill", objective="max_sum", coef=(gain, coef), t_min=fun * (1.0 - opts.tolerance))
        require(out2, "max_min_fairness", "fill")
        x, y = solution(model2, mx)
    return x, y, fun, Termination.OPTIMAL


def _max_total_throughput(mx: ThroughputMatrix, run: Runner, eq: Array, opts: ThroughputOptions) -> PolicyAnswer:
    T = mx.throughput
    scale = T.max(axis=1, keepdims=True) if opts.normalise else 1.0
    model, out = run.solve("max-sum", objective="max_sum", coef=T / scale)
    require(out, "max_total_throughput", "max-sum")
    return (*solution(model, mx), float(out.objective), Termination.OPTIMAL)


def _min_cost(mx: ThroughputMatrix, run: Runner, eq: Array, opts: MinCostOptions) -> PolicyAnswer:
    floor = float(opts.floor)
    if not 0 <= floor:
        raise ValidationError("options.floor", f"must be >= 0, got {floor}", "1.0 = equal-share throughput")
    model, out = run.solve("min-cost", objective="min_cost", floor=floor * eq)
    require(out, "min_cost", "min-cost", hint="lower the floor (<= 1 is always feasible)")
    return (*solution(model, mx), float(out.objective), Termination.OPTIMAL)


def _min_makespan(mx: ThroughputMatrix, run: Runner, eq: Array, opts: PolicyOptions) -> PolicyAnswer:
    R = need(mx, "remaining_steps", "min_makespan")
    if np.any(R <= 0):
        raise ValidationError("remaining_steps", "must be > 0 for min_makespan", "drop finished jobs")
    model, out = run.solve("makespan", objective="max_min", coef=mx.throughput / R[:, None])
    require(out, "min_makespan", "makespan")
    return (*solution(model, mx), 1.0 / float(out.objective), Termination.OPTIMAL)


def fifo_fractions(matrix: ThroughputMatrix, *, aware: bool = True) -> Array:
    """FIFO: in arrival order each job takes its whole time on one type with room for it.

    Heterogeneity-aware picks the fastest such type, agnostic the first (in
    type order). Jobs that find no room get nothing. Shapes: -> (J, K).
    """
    mx = matrix
    free = mx.capacity.astype(np.int64).copy()
    x = np.zeros((mx.n_jobs, mx.n_types))
    for j in np.argsort(mx.arrival_order, kind="stable"):
        ok = mx.runnable[j] & (free >= mx.scale_factor[j])
        if not ok.any():
            continue
        k = int(np.argmax(np.where(ok, mx.throughput[j], -1.0))) if aware else int(np.argmax(ok))
        x[j, k] = 1.0
        free[k] -= mx.scale_factor[j]
    return x


#: Each policy's solve function by base name (a packed policy runs its base's): ``(matrix, runner, equal-share
#: throughputs, options) -> (x, pair_x or None, fun, status)``.
POLICY_SOLVERS: dict[str, Callable[[ThroughputMatrix, Runner, Array, Any], PolicyAnswer]] = {
    "max_min_fairness": _max_min_fairness,
    "max_min_fairness_agnostic": lambda mx, run, eq, opts: _max_min_fairness(mx, run, eq, opts, agnostic=True),
    "max_total_throughput": _max_total_throughput,
    "min_cost": _min_cost,
    "finish_time_fairness": finish_time_fairness,
    "min_makespan": _min_makespan,
    "fifo": _fifo,
    "max_min_fairness_water_filling": water_filling,
}
if set(POLICY_SOLVERS) | set(PACKED) != set(POLICIES):  # pragma: no cover - one list of names, kept in step
    raise ImportError("goodopt.solvers.gavel.POLICY_SOLVERS does not cover every policy")
