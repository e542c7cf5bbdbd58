"""The simulation engine: time, arrivals, restarts, progress and invariants.

The engine knows nothing of how allocations are chosen; a policy (see
:mod:`goodopt.sim.policies`) receives a :class:`RoundState` every round and
returns an allocation. Each round of ``interval_s`` seconds:

1. jobs whose arrival time has passed join the active set; on an elastic
   cluster (``autoscale``) requested nodes whose provisioning delay has passed
   join, and the auto-scaler, when due, sets the nodes billed
   (:mod:`goodopt.sim.elastic`, :mod:`goodopt.sim.autoscale`): a job on a
   removed node loses its GPUs and restarts wherever the policy puts it;
2. the policy returns a (J, N) allocation of the active jobs on the
   provisioned nodes; it is checked (whole GPUs, no node over capacity, one
   GPU type per job);
3. every job whose allocation changed pays ``restart_delay_s`` of no progress
   (its application's entry of ``restart_delays_s`` if given; also when it
   starts for the first time); each job picks its batch — the
   job agent's goodput-optimal one for adaptive policies, the workload's
   fixed batch otherwise (ncf always keeps 32768 on one GPU); a fixed batch
   above the initial one on one GPU takes two micro-batches
   (``single_gpu_accumulation``, Pollux's simulator);
4. every job with GPUs advances through the rest of the round: per optimiser
   step it gains ``scale * E`` progress (see :mod:`goodopt.sim.truth`), at
   the true iteration time of its placement, slowed by ``(1 - slowdown)`` if
   it spans nodes that host another multi-node job and interference is on,
   and divided by its application's calibration slowdown (``slowdowns``, Sia's
   simulator; the job's agent observes the unslowed times);
   crossing an epoch boundary updates its gradient statistics, and adaptive
   jobs re-pick their batch; a job completes when it finishes its target epoch
   (its completion time is exact within the round);
5. the agent of every job that ran records what it observed.

On a heterogeneous cluster every job runs on one GPU type at a time (checked)
with that type's ground truth; its agent keeps a model per type
(:class:`~goodopt.sim.agent.HeteroAgent`), pooled into one when the policy is
heterogeneity-unaware (``policy.hetero_aware`` false), and is profiled on one
GPU of every type when it arrives if the policy is aware.

Invariants checked each round (a :class:`~goodopt.errors.SimulationError`
names the round and job): no node over capacity, one GPU type per job, no
progress without GPUs, time moves forward; at the end every job has completed
(or the run stops at ``max_time_s`` with the unfinished jobs named).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from goodopt.cluster import Cluster
from goodopt.errors import SimulationError, ValidationError

from .agent import HeteroAgent, JobAgent
from .allocation_check import ask_policy, check_allocation
from .autoscale import ScaleState, make_autoscaler
from .config import SimConfig, check_elastic_setup, check_per_app_settings, fixed_gpus
from .elastic import NodePool, PoolView
from .job_steps import advance_job
from .state import RoundState, SimJob

if TYPE_CHECKING:
    from .autoscale import Autoscaler
    from .elastic import PoolView
    from .policies.goodput_policies import GoodputPolicy
    from .policies.policy import Policy
    from .truth import AppTruth, Truth
    from .workload import Workload

log = logging.getLogger(__name__)


class Engine:
    """Runs one workload under one policy (use :func:`goodopt.sim.simulate`)."""

    def __init__(self, workload: Workload, cluster: Cluster, policy: Policy, truth: Truth, config: SimConfig,
                 rng: np.random.Generator) -> None:
        self.workload, self.cluster, self.policy, self.truth, self.config = workload, cluster, policy, truth, config
        self.rng = rng
        self.types = cluster.gpu_type_names
        self.hetero = len(self.types) > 1
        self.node_type = np.array([self.types.index(t) for t in cluster.node_gpu_types])
        missing = [t for t in self.types if t not in truth.gpu_types] if self.hetero else []
        if missing:
            raise ValidationError("truth", f"no ground truth for GPU types {missing}",
                                  f"build it for all of {list(self.types)} (trace_truth / model_truth gpu_types=)")
        self.aware = policy.hetero_aware
        fixed = dict(config.fixed_apps)
        self.jobs: list[SimJob] = []
        for i, wj in enumerate(workload.jobs):
            app = truth[wj.application]
            batch, gpus = fixed.get(wj.application, (None, None))
            agent: JobAgent | HeteroAgent
            if self.hetero:
                agent = HeteroAgent({t: truth.on(wj.application, t) for t in self.types}, pooled=not self.aware,
                                    fixed_batch=batch, max_gpus=gpus, optimism=config.agent_optimism,
                                    fit=config.agent_fit, single_gpu_accumulation=config.single_gpu_accumulation)
            else:
                agent = JobAgent(app, config.gpu_type, fixed_batch=batch, max_gpus=gpus,
                                 optimism=config.agent_optimism, fit=config.agent_fit,
                                 single_gpu_accumulation=config.single_gpu_accumulation)
            self.jobs.append(SimJob(i, wj.name, wj.application, float(wj.arrival_s), wj.num_replicas,
                                    batch or wj.batch_size, agent, fixed_gpus=gpus,
                                    row=np.zeros(cluster.n_nodes, dtype=np.int64), entity=wj.entity))
        self.rounds: list[dict[str, Any]] = []
        self.alloc_log: list[tuple[Any, ...]] = []
        #: USD per GPU-second of each node.
        self.node_price_s = np.array([config.price_of(t) for t in cluster.node_gpu_types]) / 3600.0
        self.scaler = self._autoscaler(policy, config, cluster)
        check_per_app_settings(workload, config)
        policy.check_workload(workload, cluster, fixed_gpus(config))
        self.pool = NodePool(cluster, self.node_price_s, elastic=self.scaler is not None,
                             min_nodes=config.min_nodes, provision_delay_s=config.provision_delay_s)
        self._next_scale_s = 0.0
        self.policy_s = 0.0
        self.engine_s = 0.0

    @staticmethod
    def _autoscaler(policy: Policy, config: SimConfig, cluster: Cluster) -> Autoscaler | None:
        if config.autoscale == "none":
            return None

        check_elastic_setup(policy, config, cluster)
        return make_autoscaler(config.autoscale, **dict(config.autoscale_options))

    # ----------------------------------------------------------------- loop
    def run(self, progress: Callable[[float, int, int], None] | None = None, until_s: float | None = None) -> Engine:
        """Run rounds until every job has completed (a :class:`SimulationError` at ``max_time_s`` names the
        unfinished ones), or with ``until_s`` until the simulated time first reaches it (jobs may then be
        unfinished); ``progress(time_s, n_done, n_jobs)`` is called after each round."""
        self.start()
        while until_s is None or self.t < until_s:
            r = self.r
            if not self.step():
                break
            if progress is not None and self.r > r:
                progress(self.t, self.n_done, len(self.jobs))
        if until_s is not None:
            return self
        missing = [j.name for j in self.jobs if j.completion_s is None]
        if missing:
            raise SimulationError(f"jobs never completed: {missing[:5]}")
        return self

    def start(self) -> None:
        """Time 0: every job waits for its arrival; the policy (and the auto-scaler) start afresh."""
        self._pending: list[SimJob] = list(self.jobs)
        self._active: list[SimJob] = []
        self.t, self.r, self.n_done = 0.0, 0, 0
        self._view: PoolView | None = None
        self.policy.reset(self.pool.view().cluster or self.cluster, self.rng)
        if self.scaler is not None:
            self.scaler.reset(self.cluster, self.rng)

    def step(self) -> bool:
        """One round at the current time, or a jump to the next arrival when no job is active; False once every
        job has completed (nothing was done)."""
        if not (self._pending or self._active):
            return False
        cfg, t = self.config, self.t
        if t > cfg.max_time_s:
            left = [j.name for j in self._pending + self._active][:5]
            raise SimulationError(f"simulated time exceeded max_time_s={cfg.max_time_s:g}; unfinished jobs "
                                  f"include {left} (a policy may be starving them)")
        e0 = time.perf_counter()
        self._admit(t)
        scale = self._scale(self._active, t, self.r)
        cost_per_h = self.pool.record(t)
        if not self._active:
            self.t = self._next_look(t)
            return True
        if self.pool.view() is not self._view:
            self._view = self.pool.view()
            if self._view.cluster is not None and self._view.cluster is not self.policy.cluster:
                self.policy.resize(self._view.cluster)
        e1 = time.perf_counter()
        alloc = self._allocate(self._active, self._view, t, self.r)
        e2 = time.perf_counter()
        finished = self._apply_and_advance(self._active, alloc, t)
        self._record_round(alloc, finished, cost_per_h, scale, e2 - e1)
        self._active = [j for j in self._active if j.completion_s is None]
        self.n_done += len(finished)
        t_next = t + cfg.interval_s
        if not t_next > t:
            raise SimulationError(f"round {self.r}: time did not move forward ({t} -> {t_next})")
        self.t, self.r = t_next, self.r + 1
        self.policy_s += e2 - e1
        self.engine_s += (time.perf_counter() - e0) - (e2 - e1)
        return True

    def _admit(self, t: float) -> None:
        """Jobs that have arrived by ``t`` become active (on a heterogeneous cluster, aware policies' agents
        first profile every type)."""
        while self._pending and self._pending[0].arrival_s <= t:
            job = self._pending.pop(0)
            if self.hetero and self.aware and self.policy.adaptive_batch:
                apps = {ty: self.truth.on(job.application, ty) for ty in self.types}
                app0 = apps[self.types[0]]
                cast(HeteroAgent, job.agent).bootstrap(apps, app0.phi(app0.init_batch_size, 0))
            self._active.append(job)

    def _next_look(self, t: float) -> float:
        """With no job active: the next arrival's round, or the auto-scaler's next look at the idle cluster."""
        cfg = self.config
        t_next = max(t + cfg.interval_s, np.floor(self._pending[0].arrival_s / cfg.interval_s) * cfg.interval_s)
        if self.scaler is not None:
            tick = np.ceil(self._next_scale_s / cfg.interval_s) * cfg.interval_s
            t_next = min(t_next, max(t + cfg.interval_s, tick))
        return t_next

    def _record_round(self, alloc: np.ndarray, finished: list[SimJob], cost_per_h: float, scale: dict[str, Any],
                      policy_s: float) -> None:
        """The round log's row (one per round)."""
        active, t = self._active, self.t
        gpus, gpus_up, billed = alloc.sum(), self.pool.gpus_up(), self.pool.billed
        stats = self.policy.last_stats or {}
        self.rounds.append({
            "round": self.r, "time_s": t, "n_active": len(active), "n_running": int((alloc.sum(axis=1) > 0).sum()),
            "n_queued": int((alloc.sum(axis=1) == 0).sum()), "gpus_allocated": int(gpus),
            "utilisation": float(gpus / gpus_up) if gpus_up else 0.0, "n_completed": len(finished),
            "nodes_up": int(self.pool.up.sum()), "nodes_billed": int(billed.sum()),
            "gpus_billed": int(self.pool.capacity[billed].sum()),
            "cost_per_h": cost_per_h, **scale,
            "policy_s": policy_s, **{f"policy_{k}": v for k, v in stats.items()},
        })
        log.debug("round %d at %.0f s: %d active, %d GPUs allocated, %d finished, policy %.3f s", self.r, t,
                  len(active), int(gpus), len(finished), policy_s)

    def _scale(self, active: list[SimJob], t: float, r: int) -> dict[str, Any]:
        """Provisioned nodes join; the auto-scaler (when due) resizes the pool; jobs on removed nodes stop."""
        self.pool.join(t)
        if self.scaler is None or t < self._next_scale_s:
            return {}

        self._next_scale_s = t + float(self.scaler.opts.every_s)
        current = np.stack([j.row for j in active]) if active else np.zeros((0, self.cluster.n_nodes), np.int64)
        # an auto-scaler runs only beside a policy that plans on any cluster: check_elastic admits the goodput
        # policies alone, and each has an objective
        planner = cast("GoodputPolicy", self.policy)
        state = ScaleState(t, r, self.cluster, tuple(active), current, int(self.pool.billed.sum()),
                           self.config.min_nodes, planner.objective, planner.max_gpus)
        e0 = time.perf_counter()
        target = self.scaler.target(state)
        removed = self.pool.resize(0, target, t)
        for job in active:
            if job.row[removed].any():  # its node is gone: it restarts wherever the policy puts it next
                job.row = np.zeros_like(job.row)
                job.gpu_type, job.restart_left_s = None, 0.0
        log.debug("t=%.0f s: auto-scaler %s bills %d nodes (%d removed)", t, self.scaler.name, target, len(removed))
        return {"target_nodes": target, "autoscale_s": time.perf_counter() - e0,
                **{f"autoscale_{k}": v for k, v in self.scaler.last_stats.items()}}

    def _allocate(self, active: list[SimJob], view: PoolView, t: float, r: int) -> np.ndarray:
        """The policy's checked allocation of the active jobs on the provisioned nodes, on the full cluster."""
        current = np.stack([j.row for j in active])
        if view.cluster is None:  # nothing provisioned: every job waits
            return np.zeros_like(current)
        state = RoundState(t, r, view.cluster, tuple(active), current[:, view.index], self.config,
                           self.truth if self.policy.needs_oracle else None)
        alloc = check_allocation(ask_policy(self.policy, state), state, self.node_type[view.index],
                                 self.types if self.hetero else None, self.policy.name)
        return view.to_full(alloc, self.cluster.n_nodes) if view.cluster is not self.cluster else alloc

    # ------------------------------------------------------------ progress
    def _apply_and_advance(self, active: list[SimJob], alloc: np.ndarray, t: float) -> list[SimJob]:
        cfg = self.config
        adaptive = self.policy.adaptive_batch
        # multi-node jobs per node, for interference
        multi = (alloc > 0).sum(axis=1) > 1
        shared = (alloc[multi] > 0).sum(axis=0) > 1 if multi.any() else np.zeros(alloc.shape[1], bool)
        finished: list[SimJob] = []
        for j, job in enumerate(active):
            row = alloc[j]
            if not np.array_equal(row, job.row):
                job.row = row.copy()
                job.gpu_type = self.types[int(self.node_type[np.flatnonzero(row)[0]])] if row.any() else None
                if row.any():
                    job.restart_left_s = cfg.restart_delay_of(job.application)
                    if job.n_starts:
                        job.n_restarts += 1
                    else:
                        job.start_s = t
                    job.n_starts += 1
                    job.local_bsz, job.accum_steps = self._batch(job, adaptive)
                else:
                    job.restart_left_s = 0.0
            if not row.any():
                if self.config.log_allocations:
                    self.alloc_log.append((t, job.name, 0, 0, 0, 0, 0, job.progress, job.epoch))
                continue
            slow = 1.0
            if cfg.interference_slowdown and multi[j] and np.any(shared & (row > 0)):
                slow = 1.0 - cfg.interference_slowdown
            before = job.progress
            advance_job(job, job_truth(self.truth, job, self.hetero), t, cfg.interval_s, slow,
                        self.config.slowdown_of(job.application), adaptive, hetero=self.hetero)
            if job.progress < before:
                raise SimulationError(f"job {job.name}: progress went backwards at t={t:g}s")
            held = cfg.interval_s if job.completion_s is None else job.completion_s - t
            job.attained_gpu_s += job.n_gpus * held
            job.cost += float((row * self.node_price_s).sum()) * held
            if self.config.log_allocations:
                self.alloc_log.append((t, job.name, job.n_gpus, len(job.placement), job.local_bsz,
                                       job.accum_steps, job.local_bsz * job.n_gpus * (job.accum_steps + 1),
                                       job.progress, job.epoch))
            if job.completion_s is not None:
                finished.append(job)
                job.row = np.zeros_like(job.row)
        return finished

    def _batch(self, job: SimJob, adaptive: bool) -> tuple[int, int]:
        app = job_truth(self.truth, job, self.hetero)
        if adaptive or job.agent.fixed_batch is not None:
            return job.agent.choose(job.placement, gpu_type=job.gpu_type) if self.hetero \
                else job.agent.choose(job.placement)
        return app.fixed_config(job.batch_size, job.n_gpus, single_gpu_accumulation=self.config.single_gpu_accumulation)


def job_truth(truth: Truth, job: SimJob, hetero: bool) -> AppTruth:
    """The job's ground truth on the GPU type it holds."""
    if not hetero:
        return truth[job.application]
    if job.gpu_type is None:
        raise SimulationError(f"job {job.name} holds no GPUs, so it runs on no GPU type")
    return truth.on(job.application, job.gpu_type)
