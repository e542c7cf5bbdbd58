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
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from goodopt.cluster import Cluster
from goodopt.errors import SimulationError, ValidationError
from goodopt.fitting import OPTIMISM
from goodopt.validation import check_number, check_whole

from .agent import AGENT_FITS, HeteroAgent, JobAgent
from .elastic import NodePool
from .state import RoundState

log = logging.getLogger(__name__)

#: Applications whose batch and GPU count the Pollux runs kept fixed: app -> (batch, GPUs).
FIXED_APPS = {"ncf": (32768, 1)}


#: Most rounds a simulation may take (max_time_s / interval_s).
MAX_ROUNDS = 10_000_000
#: Sia's simulator: checkpoint-restore seconds charged per re-allocation, per application (others: the flat
#: ``restart_delay_s``), from the Sia artifact's simulator.
SIA_SIM_RESTART_DELAYS_S = {"cifar10": 50.0, "deepspeech2": 25.0, "bert": 120.0, "yolov3": 80.0, "imagenet": 250.0}
#: Sia's simulator: each job's true goodput is divided by a calibration slowdown (its jobs observe unslowed
#: times), from the Sia artifact's simulator.
SIA_SIM_SLOWDOWNS = {"cifar10": 1.8, "ncf": 1.5, "bert": 1.2, "deepspeech2": 1.2, "imagenet": 1.2, "yolov3": 1.2}


def _per_app(name: str, value, minimum: float) -> tuple:
    """A per-application setting (mapping or pairs) as sorted ``(app, number)`` pairs, each checked."""
    pairs = value.items() if isinstance(value, Mapping) else value
    try:
        pairs = [(str(app), v) for app, v in pairs]
    except (TypeError, ValueError):
        raise ValidationError(name, f"must map application -> number, got {value!r}", "e.g. {cifar10: 50}") \
            from None
    return tuple(sorted((app, check_number(f"{name}.{app}", v, minimum=minimum)) for app, v in pairs))


@dataclass(frozen=True)
class SimConfig:
    """Engine settings (times in seconds)."""

    interval_s: float = 60.0
    restart_delay_s: float = 30.0
    #: Fraction of progress lost by a multi-node job sharing a node with another multi-node job.
    interference_slowdown: float = 0.0
    max_time_s: float = 60 * 86400.0
    fixed_apps: tuple = tuple(FIXED_APPS.items())
    gpu_type: str = "t4"
    log_allocations: bool = True
    #: Weight of the job agents' optimism regulariser (Pollux's 1e-2; 0 = plain least squares).
    agent_optimism: float = OPTIMISM
    #: How job agents fit their throughput model: "pollux" (Pollux's agent: all parameters jointly from fixed
    #: starts, :func:`goodopt.agent_fit.fit_agent`) or "goodopt" (constrained least squares on log times, then
    #: the optimism refinement, :func:`goodopt.fitting.fit_observed`).
    agent_fit: str = "pollux"
    #: Per-application restart seconds overriding ``restart_delay_s`` (e.g. :data:`SIA_SIM_RESTART_DELAYS_S`).
    restart_delays_s: tuple = ()
    #: Per-application calibration slowdowns >= 1 dividing the true goodput (e.g. :data:`SIA_SIM_SLOWDOWNS`).
    slowdowns: tuple = ()
    #: Pollux's simulator's rule for fixed-batch jobs (ncf under Pollux, every job under the baselines): one GPU
    #: running a total batch above the application's initial batch takes at least one accumulation step.
    single_gpu_accumulation: bool = True
    #: Price per GPU-hour of GPU types (USD), over :data:`goodopt.prices.PRICES_PER_GPU_H`.
    prices_per_gpu_h: tuple = ()
    #: Auto-scaler of an elastic cluster (:data:`goodopt.sim.autoscale.AUTOSCALERS`), or "none": a fixed cluster.
    autoscale: str = "none"
    #: Options of the auto-scaler (name -> number), e.g. ``{"every_s": 600}``.
    autoscale_options: tuple = ()
    #: Fewest nodes an elastic cluster keeps (the largest is the simulation's cluster); it starts with these.
    min_nodes: int = 1
    #: Seconds from requesting a node to its joining (billed meanwhile): cloud GPU instances boot in minutes.
    provision_delay_s: float = 180.0

    @classmethod
    def sia(cls, **changes) -> "SimConfig":
        """The settings of Sia's simulator: its per-application restart delays and calibration slowdowns."""
        return cls(**{"restart_delays_s": SIA_SIM_RESTART_DELAYS_S, "slowdowns": SIA_SIM_SLOWDOWNS, **changes})

    def restart_delay_of(self, app: str) -> float:
        return dict(self.restart_delays_s).get(app, self.restart_delay_s)

    def slowdown_of(self, app: str) -> float:
        return dict(self.slowdowns).get(app, 1.0)

    def price_of(self, gpu_type: str) -> float:
        """USD per GPU-hour of ``gpu_type`` (NaN without a published or given price)."""
        from goodopt.prices import price_per_gpu_h

        return price_per_gpu_h(gpu_type, self.prices_per_gpu_h)

    def __post_init__(self):
        object.__setattr__(self, "restart_delays_s", _per_app("restart_delays_s", self.restart_delays_s, 0.0))
        object.__setattr__(self, "slowdowns", _per_app("slowdowns", self.slowdowns, 1.0))
        object.__setattr__(self, "prices_per_gpu_h", _per_app("prices_per_gpu_h", self.prices_per_gpu_h, 0.0))
        check_number("interval_s", self.interval_s, minimum=0, strict=True)
        check_number("restart_delay_s", self.restart_delay_s, minimum=0)
        check_number("max_time_s", self.max_time_s, minimum=0, strict=True)
        check_number("agent_optimism", self.agent_optimism, minimum=0)
        if self.agent_fit not in AGENT_FITS:
            raise ValidationError("agent_fit", f"unknown fit {self.agent_fit!r}", f"choose {' or '.join(AGENT_FITS)}")
        check_number("provision_delay_s", self.provision_delay_s, minimum=0)
        object.__setattr__(self, "min_nodes", check_whole("min_nodes", self.min_nodes, 0))
        options = dict(self.autoscale_options.items() if isinstance(self.autoscale_options, Mapping)
                       else self.autoscale_options)
        object.__setattr__(self, "autoscale_options", tuple(sorted(options.items())))
        if self.autoscale != "none":
            from .autoscale import make_autoscaler

            make_autoscaler(self.autoscale, **options)  # names and options checked here, once
        if not isinstance(self.single_gpu_accumulation, bool):
            raise ValidationError("single_gpu_accumulation", f"must be true or false, got {self.single_gpu_accumulation!r}")
        if self.max_time_s / self.interval_s > MAX_ROUNDS:
            raise ValidationError("interval_s", f"{self.interval_s:g} s rounds over max_time_s = "
                                  f"{self.max_time_s:g} s would be more than {MAX_ROUNDS:.0e} rounds",
                                  f"use an interval >= {self.max_time_s / MAX_ROUNDS:g} s or a lower max_time_s")
        if not 0 <= self.interference_slowdown < 1:
            raise ValidationError("interference_slowdown", f"must lie in [0, 1), got {self.interference_slowdown}",
                                  "0.25 means a 25% slower job")


@dataclass(eq=False)
class SimJob:
    """A job's state in the simulation (mutable; owned by the engine)."""

    index: int
    name: str
    application: str
    arrival_s: float
    num_replicas: int
    batch_size: int
    agent: JobAgent
    fixed_gpus: int | None = None
    row: np.ndarray = field(default=None)
    local_bsz: int = 0
    accum_steps: int = 0
    progress: float = 0.0
    epoch: int = 0
    restart_left_s: float = 0.0
    n_starts: int = 0
    n_restarts: int = 0
    attained_gpu_s: float = 0.0
    cost: float = 0.0  # USD for the GPU-seconds it held
    start_s: float | None = None
    completion_s: float | None = None
    gpu_type: str | None = None  # type of the GPUs it holds (None when it holds none)
    entity: str = ""  # the user or group it belongs to (hierarchical policies)

    @property
    def n_gpus(self) -> int:
        return int(self.row.sum())

    @property
    def placement(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.row[self.row > 0])


def check_setup(workload, cluster: Cluster, policy, config: SimConfig) -> None:
    """Every check a run makes before its first round, without running it (dry runs call this too)."""
    check_elastic_setup(policy, config, cluster)
    policy.check_workload(workload, cluster, fixed_gpus(config))


def fixed_gpus(config: SimConfig) -> dict:
    """Application -> the GPU count the engine fixes its jobs to (only applications that fix one)."""
    return {app: gpus for app, (_, gpus) in dict(config.fixed_apps).items() if gpus}


def check_elastic_setup(policy, config: SimConfig, cluster: Cluster) -> None:
    """An elastic cluster needs one node group, ``min_nodes`` within it and a policy that plans on whatever
    is provisioned; a fixed cluster takes no ``min_nodes`` other than the default."""
    if config.autoscale == "none":
        return
    from .autoscale import check_elastic, check_one_group

    check_one_group(cluster)
    fewest = min(g.n_nodes for g in cluster.groups)
    if config.min_nodes > fewest:
        raise ValidationError("min_nodes", f"{config.min_nodes} is more than the cluster's {fewest} nodes "
                              f"({cluster.describe()}), the most an elastic cluster may grow to",
                              f"use at most {fewest}, or a larger cluster")
    check_elastic(policy, config.autoscale)


class Engine:
    """Runs one workload under one policy (use :func:`goodopt.sim.simulate`)."""

    def __init__(self, workload, cluster: Cluster, policy, truth, config: SimConfig, rng: np.random.Generator):
        self.workload, self.cluster, self.policy, self.truth, self.config = workload, cluster, policy, truth, config
        self.rng = rng
        self.types = cluster.gpu_type_names
        self.hetero = len(self.types) > 1
        self.node_type = np.array([self.types.index(t) for t in cluster.node_gpu_types])
        missing = [t for t in self.types if t not in truth.gpu_types] if self.hetero else []
        if missing:
            raise ValidationError("truth", f"no ground truth for GPU types {missing}",
                                  f"build it for all of {list(self.types)} (trace_truth / model_truth gpu_types=)")
        self.aware = getattr(policy, "hetero_aware", True)
        fixed = dict(config.fixed_apps)
        self.jobs = []
        for i, wj in enumerate(workload.jobs):
            app = truth[wj.application]
            batch, gpus = fixed.get(wj.application, (None, None))
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
        self.rounds: list[dict] = []
        self.alloc_log: list[tuple] = []
        #: USD per GPU-second of each node.
        self.node_price_s = np.array([config.price_of(t) for t in cluster.node_gpu_types]) / 3600.0
        self.scaler = self._autoscaler(policy, config, cluster)
        policy.check_workload(workload, cluster, fixed_gpus(config))
        self.pool = NodePool(cluster, self.node_price_s, elastic=self.scaler is not None,
                             min_nodes=config.min_nodes, provision_delay_s=config.provision_delay_s)
        self._next_scale_s = 0.0
        self.policy_s = 0.0
        self.engine_s = 0.0

    @staticmethod
    def _autoscaler(policy, config: SimConfig, cluster: Cluster):
        if config.autoscale == "none":
            return None
        from .autoscale import make_autoscaler

        check_elastic_setup(policy, config, cluster)
        return make_autoscaler(config.autoscale, **dict(config.autoscale_options))

    # ----------------------------------------------------------------- loop
    def run(self, progress=None):
        """Run rounds until every job has completed (a :class:`SimulationError` at ``max_time_s`` names the
        unfinished ones); ``progress(time_s, n_done, n_jobs)`` is called each round."""
        cfg = self.config
        pending = list(self.jobs)
        active: list[SimJob] = []
        t, r = 0.0, 0
        done = 0
        self.policy.reset(self.pool.view().cluster or self.cluster, self.rng)
        if self.scaler is not None:
            self.scaler.reset(self.cluster, self.rng)
        view = None
        while pending or active:
            if t > cfg.max_time_s:
                left = [j.name for j in pending + active][:5]
                raise SimulationError(f"simulated time exceeded max_time_s={cfg.max_time_s:g}; unfinished jobs "
                                      f"include {left} (a policy may be starving them)")
            e0 = time.perf_counter()
            while pending and pending[0].arrival_s <= t:
                job = pending.pop(0)
                if self.hetero and self.aware and self.policy.adaptive_batch:
                    apps = {ty: self.truth.on(job.application, ty) for ty in self.types}
                    app0 = apps[self.types[0]]
                    job.agent.bootstrap(apps, app0.phi(app0.init_batch_size, 0))
                active.append(job)
            scale = self._scale(active, t, r)
            cost_per_h = self.pool.record(t)
            if not active:  # skip to the next arrival, or to the auto-scaler's next look at the idle cluster
                t_next = max(t + cfg.interval_s, np.floor(pending[0].arrival_s / cfg.interval_s) * cfg.interval_s)
                if self.scaler is not None:
                    tick = np.ceil(self._next_scale_s / cfg.interval_s) * cfg.interval_s
                    t_next = min(t_next, max(t + cfg.interval_s, tick))
                t = t_next
                continue
            if self.pool.view() is not view:
                view = self.pool.view()
                if view.cluster is not None and view.cluster is not self.policy.cluster:
                    self.policy.resize(view.cluster)
            e1 = time.perf_counter()
            alloc = self._allocate(active, view, t, r)
            e2 = time.perf_counter()
            finished = self._apply_and_advance(active, alloc, t)
            gpus, gpus_up, billed = alloc.sum(), self.pool.gpus_up(), self.pool.billed
            stats = getattr(self.policy, "last_stats", {}) or {}
            self.rounds.append({
                "round": r, "time_s": t, "n_active": len(active), "n_running": int((alloc.sum(axis=1) > 0).sum()),
                "n_queued": int((alloc.sum(axis=1) == 0).sum()), "gpus_allocated": int(gpus),
                "utilisation": float(gpus / gpus_up) if gpus_up else 0.0, "n_completed": len(finished),
                "nodes_up": int(self.pool.up.sum()), "nodes_billed": int(billed.sum()),
                "gpus_billed": int(self.pool.capacity[billed].sum()),
                "cost_per_h": cost_per_h, **scale,
                "policy_s": e2 - e1, **{f"policy_{k}": v for k, v in stats.items()},
            })
            log.debug("round %d at %.0f s: %d active, %d GPUs allocated, %d finished, policy %.3f s", r, t,
                      len(active), int(gpus), len(finished), e2 - e1)
            active = [j for j in active if j.completion_s is None]
            done += len(finished)
            t_next = t + cfg.interval_s
            if not t_next > t:
                raise SimulationError(f"round {r}: time did not move forward ({t} -> {t_next})")
            t, r = t_next, r + 1
            self.policy_s += e2 - e1
            self.engine_s += (time.perf_counter() - e0) - (e2 - e1)
            if progress is not None:
                progress(t, done, len(self.jobs))
        missing = [j.name for j in self.jobs if j.completion_s is None]
        if missing:
            raise SimulationError(f"jobs never completed: {missing[:5]}")
        return self

    def _scale(self, active, t, r) -> dict:
        """Provisioned nodes join; the auto-scaler (when due) resizes the pool; jobs on removed nodes stop."""
        self.pool.join(t)
        if self.scaler is None or t < self._next_scale_s:
            return {}
        from .autoscale import ScaleState

        self._next_scale_s = t + self.scaler.every_s
        current = np.stack([j.row for j in active]) if active else np.zeros((0, self.cluster.n_nodes), np.int64)
        state = ScaleState(t, r, self.cluster, tuple(active), current, int(self.pool.billed.sum()),
                           self.config.min_nodes, self.policy.objective, getattr(self.policy, "max_gpus", None))
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

    def _allocate(self, active, view, t, r) -> np.ndarray:
        """The policy's checked allocation of the active jobs on the provisioned nodes, on the full cluster."""
        current = np.stack([j.row for j in active])
        if view.cluster is None:  # nothing provisioned: every job waits
            return np.zeros_like(current)
        state = RoundState(t, r, view.cluster, tuple(active), current[:, view.index], self.config,
                           self.truth if getattr(self.policy, "needs_oracle", False) else None)
        alloc = self._check(self.policy.allocate(state), state, self.node_type[view.index])
        return view.to_full(alloc, self.cluster.n_nodes) if view.cluster is not self.cluster else alloc

    # ------------------------------------------------------------ checking
    def _check(self, alloc, state: RoundState, node_type: np.ndarray) -> np.ndarray:
        a = np.asarray(alloc)
        J, N = state.n_jobs, state.cluster.n_nodes
        where = f"round {state.round_index} (t={state.time_s:g}s), policy {self.policy.name!r}"
        if a.shape != (J, N):
            raise SimulationError(f"{where}: allocation has shape {a.shape}, expected {(J, N)}")
        if a.dtype.kind not in "iu":
            if not np.all(a == np.round(a)):
                raise SimulationError(f"{where}: allocation holds fractional GPUs")
            a = a.astype(np.int64)
        if np.any(a < 0):
            raise SimulationError(f"{where}: negative GPU counts")
        over = np.flatnonzero(a.sum(axis=0) > state.cluster.node_capacity)
        if len(over):
            n = over[0]
            raise SimulationError(f"{where}: node {state.cluster.node_names[n]} over capacity "
                                  f"({a[:, n].sum()} > {state.cluster.node_capacity[n]})")
        if self.hetero:
            per_type = np.stack([(a[:, node_type == g]).sum(axis=1) for g in range(len(self.types))], axis=1)
            mixed = np.flatnonzero((per_type > 0).sum(axis=1) > 1)
            if len(mixed):
                j = mixed[0]
                raise SimulationError(f"{where}: job {state.jobs[j].name} spans GPU types "
                                      f"{[self.types[g] for g in np.flatnonzero(per_type[j])]}")
        for j, job in enumerate(state.jobs):
            if job.fixed_gpus is not None and a[j].sum() not in (0, job.fixed_gpus):
                raise SimulationError(f"{where}: job {job.name} must run on exactly {job.fixed_gpus} GPU(s), "
                                      f"got {a[j].sum()}")
        return a

    # ------------------------------------------------------------ progress
    def _apply_and_advance(self, active, alloc, t):
        cfg = self.config
        adaptive = getattr(self.policy, "adaptive_batch", True)
        # multi-node jobs per node, for interference
        multi = (alloc > 0).sum(axis=1) > 1
        shared = (alloc[multi] > 0).sum(axis=0) > 1 if multi.any() else np.zeros(alloc.shape[1], bool)
        finished = []
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
            self._advance(job, t, cfg.interval_s, slow, adaptive)
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

    def _truth(self, job):
        """The job's ground truth on the GPU type it holds."""
        return self.truth.on(job.application, job.gpu_type) if self.hetero else self.truth[job.application]

    def _batch(self, job, adaptive):
        app = self._truth(job)
        if adaptive or job.agent.fixed_batch is not None:
            return job.agent.choose(job.placement, gpu_type=job.gpu_type) if self.hetero \
                else job.agent.choose(job.placement)
        return app.fixed_config(job.batch_size, job.n_gpus, single_gpu_accumulation=self.config.single_gpu_accumulation)

    def _advance(self, job, t, seconds, slow, adaptive):
        """Run ``job`` for ``seconds`` from ``t`` on its allocation (no-op while restarting)."""
        app = self._truth(job)
        kind = {"gpu_type": job.gpu_type} if self.hetero else {}
        wait = min(job.restart_left_s, seconds)
        job.restart_left_s -= wait
        left = seconds - wait
        now = t + wait
        target = app.target_epochs
        placement = job.placement
        slowdown = self.config.slowdown_of(job.application)  # the truth is slowed; the job observes it unslowed
        observed = False
        while left > 1e-9:
            batch = job.local_bsz * job.n_gpus * (job.accum_steps + 1)
            step, sync = app.times(placement, job.local_bsz)
            t_iter = step + job.accum_steps * max(step - sync, 0.0)
            rate = app.gain(batch, job.epoch) / t_iter * slow / slowdown  # progress per second
            if not observed:
                job.agent.observe(placement, job.local_bsz, step, sync, app.phi(batch, job.epoch), **kind)
                observed = True
            boundary = app.epoch_end_progress[job.epoch]
            need = (boundary - job.progress) / rate
            if need > left:
                job.progress += rate * left
                now += left
                left = 0.0
            else:
                job.progress = float(boundary)
                job.epoch += 1
                now += need
                left -= need
                if job.epoch >= target:
                    job.completion_s = now
                    return
                job.agent.observe(placement, job.local_bsz, step, sync, app.phi(batch, job.epoch), **kind)
                if adaptive and job.agent.fixed_batch is None:
                    job.local_bsz, job.accum_steps = job.agent.choose(placement, refit=False, **kind)
