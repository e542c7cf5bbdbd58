"""``shockwave``: Shockwave's plan over the next rounds (NSDI'23) for jobs at their requested GPUs and batch.

Each round the policy plans the next ``window_rounds`` rounds as one MILP maximising the Nash social welfare of
the jobs' progress within finish-time fairness (relaxed, with priorities, where fairness cannot hold), orders
the planned rounds by a second MILP and runs the first; the models, numbered, are
:mod:`goodopt.formulations.shockwave`. Both are solved by HiGHS, whose answers are checked here before use
(a plan over capacity is never run). The jobs' work is read from the truth (an oracle; Shockwave predicts it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from goodopt.errors import ValidationError
from goodopt.formulations.shockwave import PlanData, fair_finish_time, plan_columns, plan_model, priorities, rank_model
from goodopt.validation import check_number, check_whole

from .fixed_size import FixedSizeOptions, FixedSizePolicy

if TYPE_CHECKING:
    from goodopt.cluster import Cluster
    from goodopt.formulations.matrix import MatrixModel

    from ..state import RoundState

log = logging.getLogger(__name__)

#: Weight of the previous finish-time estimates in ``F_j`` (the newest one has the rest).
MOMENTUM = 0.9


@dataclass(frozen=True, kw_only=True)
class ShockwaveOptions(FixedSizeOptions):
    """Shockwave's planning options (see :class:`ShockwavePolicy`); the defaults are its settings in Sia's
    artifact."""

    window_rounds: int = 5
    makespan_weight: float = 1e-9
    priority_power: float = 12.0
    rho_max: float = 1.0
    mip_rel_gap: float = 1e-3
    time_limit_s: float | None = 15.0
    node_limit: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        err, at = ValidationError, f"{self.prefix}."
        check_whole(at + "window_rounds", self.window_rounds, 1, 100, error=err)
        check_number(at + "makespan_weight", self.makespan_weight, minimum=0.0, error=err)
        check_number(at + "priority_power", self.priority_power, minimum=0.0, maximum=100.0, error=err)
        check_number(at + "rho_max", self.rho_max, minimum=0.0, strict=True, error=err)
        check_number(at + "mip_rel_gap", self.mip_rel_gap, minimum=0.0, maximum=1.0, error=err)
        if self.time_limit_s is not None:
            check_number(at + "time_limit_s", self.time_limit_s, minimum=0.0, strict=True, error=err)
        if self.node_limit is not None:
            check_whole(at + "node_limit", self.node_limit, 1, error=err)


class ShockwavePolicy(FixedSizePolicy):
    """Shockwave: plan ``window_rounds`` rounds ahead for welfare within finish-time fairness; run the first.

    The defaults are Shockwave's settings in Sia's artifact (5 rounds, kappa 1e-9, lam 12, rho_max 1, gap 1e-3,
    15 s per solve).

    Options: ``window_rounds`` (W), ``makespan_weight`` (kappa), ``priority_power`` (lam), ``rho_max``,
    ``mip_rel_gap``, ``time_limit_s`` (per MILP; wall clock) and ``node_limit`` (per MILP; the same plan on
    every machine). ``last_stats`` logs the plan's status, whether fairness was relaxed and the jobs planned.
    """

    name = "shockwave"
    Options = ShockwaveOptions
    opts: ShockwaveOptions
    needs_oracle = True

    def __init__(self, **options: Any) -> None:  # Any: option values, checked by the options class
        super().__init__(**options)
        self._estimates: dict[str, list[float]] = {}

    def reset(self, cluster: Cluster, rng: np.random.Generator) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        self._estimates = {}

    def allocate(self, state: RoundState) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        J, C = state.n_jobs, self.cluster.n_gpus
        if J == 0:
            return np.zeros_like(state.current)
        d = self._data(state)
        x, pi, status, relaxed = self._plan(d)
        first = self._first_round(d, x, pi, state.current.sum(axis=1) > 0)
        k = d.gpus.astype(np.int64)
        sizes = np.where(first, k, 0)
        free = C - int(sizes.sum())
        for j in np.lexsort((np.arange(J), -d.remaining_s)):  # work conservation: most work left first
            if sizes[j] == 0 and k[j] <= free:
                sizes[j], free = k[j], free - int(k[j])
        alloc = self._place_admitted(state, sizes)
        self.last_stats.update(status=status, relaxed=int(relaxed), n_planned=int(first.sum()))
        return alloc

    def _data(self, state: RoundState) -> PlanData:
        """This round's :class:`PlanData`, each job's finish-time estimate added to its history."""
        J, C = state.n_jobs, self.cluster.n_gpus
        k = np.array([self._requested(job) for job in state.jobs], dtype=float)
        step, left, total = self._oracle_steps(state, k)
        total = np.maximum(total, 1e-9)
        done = np.minimum(total - left, total)
        elapsed = np.array([state.time_s - job.arrival_s for job in state.jobs])
        now = fair_finish_time(elapsed, (total - done) * step, min(1.0, C / J))
        fair = np.empty(J)
        for j, job in enumerate(state.jobs):
            history = self._estimates.setdefault(job.name, [])
            history.append(float(now[j]))
            fair[j] = MOMENTUM * np.mean(history[:-1]) + (1 - MOMENTUM) * history[-1] if len(history) > 1 else now[j]
        o = self.opts
        return PlanData(k, np.maximum(done, 0.0), total, step, elapsed, np.maximum(fair, 1e-9), C,
                        o.window_rounds, float(state.settings.interval_s), o.makespan_weight, o.rho_max)

    def _plan(self, d: PlanData) -> tuple[np.ndarray, np.ndarray, str, bool]:
        """The rounds planned (J, W), the welfare weights, the solve's status, whether fairness was relaxed."""
        xcols = plan_columns(d)[0]
        x, status = self._solve(plan_model(d), xcols, d)
        if x is not None:
            return x, np.ones(d.n_jobs), status, False
        pi = priorities(d, self.opts.priority_power)
        x, status = self._solve(plan_model(d, pi, fairness=False), xcols, d)
        if x is None:
            log.warning("shockwave: no plan (%s); the round runs the jobs with most work left", status)
            return np.zeros(xcols.shape, dtype=np.int64), pi, status, True
        return x, pi, status, True

    def _first_round(self, d: PlanData, x: np.ndarray, pi: np.ndarray, running: np.ndarray) -> np.ndarray:
        """The jobs of the ranked plan's first round (the plan's own first round if the ranking finds none)."""
        n = x.sum(axis=1)
        if not n.any():
            return np.zeros(d.n_jobs, dtype=bool)
        z, _ = self._solve(rank_model(d.gpus, n, pi, d.n_gpus, d.rounds, running), np.arange(x.size).reshape(x.shape), d)
        return (z if z is not None else x)[:, 0] > 0

    def _solve(self, model: MatrixModel, xcols: np.ndarray, d: PlanData) -> tuple[np.ndarray | None, str]:
        """HiGHS on ``model``: the rounds (0/1, J x W) of its answer, or None; an answer over a round's GPUs is
        refused."""
        from goodopt.solvers.mip_solvers.highs_arrays import HighsSession

        o = self.opts
        out, sol = HighsSession(model, threads=1).solve(time_limit_s=o.time_limit_s, mip_rel_gap=o.mip_rel_gap,
                                                         node_limit=o.node_limit)
        status = str(out.termination)
        if sol is None:
            return None, status
        x = np.rint(sol[xcols]).astype(np.int64)
        if (x < 0).any() or (x > 1).any() or (d.gpus @ x > d.n_gpus).any():
            log.warning("shockwave: HiGHS's answer (%s) uses more GPUs than a round has; refused", status)
            return None, "refused"
        return x, status
