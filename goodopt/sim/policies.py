"""Scheduling policies for the simulator, apart from the engine.

A policy has a ``name``, ``adaptive_batch`` (jobs pick their own goodput-
optimal batch via their agent, else they keep the workload's batch),
``needs_oracle`` (it may read the ground truth, Optimus+Oracle only),
``reset(cluster, rng)`` and ``allocate(state) -> (J, N)``; ``last_stats``
holds per-round numbers that go to the round log.

Goodput-aware policies (``pollux``, ``milp``, ``greedy``, ``equal-share``)
build an :class:`~goodopt.problem.AllocationProblem` from what the job agents
report (fitted throughput, observed ``phi``, exploration limits) and solve it
with :func:`goodopt.solve`. Jobs that hold no GPUs pay no re-allocation factor
(starting a queued job loses none of its history); running jobs pay
Pollux's ``(T - R delta) / (T + delta)`` when their allocation changes.

Fixed-size policies (``optimus``, ``tiresias``, ``fifo``) run each job with
the workload's ``batch_size`` and place it packed (one node if it fits, else
the freest nodes); a job whose GPU count is unchanged keeps its placement.
"""

from __future__ import annotations

import dataclasses
import heapq
import logging

import numpy as np

from goodopt.errors import SimulationError, ValidationError
from goodopt.formulations.placement import place_packed
from goodopt.scenario import Job, Objective, Scenario
from goodopt.solvers import solve

from .truth import packed_placement

log = logging.getLogger(__name__)

#: Tiresias' attained-service threshold between its two queues (GPU-seconds).
TIRESIAS_THRESHOLD_GPU_S = 16 * 3600.0


class Policy:
    """Base class: see the module docstring."""

    name = "policy"
    adaptive_batch = True
    needs_oracle = False

    def __init__(self):
        self.last_stats: dict = {}
        self.rng = None
        self.cluster = None

    def reset(self, cluster, rng: np.random.Generator) -> None:
        self.cluster, self.rng = cluster, rng
        self.last_stats = {}

    def allocate(self, state) -> np.ndarray:
        raise NotImplementedError

    def describe(self) -> dict:
        return {"name": self.name}


# ----------------------------------------------------------- goodput-aware
def goodput_problem(state, objective: Objective):
    """The round's allocation problem as the job agents report it.

    Shapes: -> AllocationProblem with J = state.n_jobs, N = cluster nodes.
    """
    cl = state.cluster
    profiles, jobs = {}, []
    for j, job in enumerate(state.jobs):
        profiles[job.name] = job.agent.profile(job.name)
        row = state.current[j]
        alloc = {cl.node_names[n]: int(row[n]) for n in np.flatnonzero(row)}
        jobs.append(Job(name=job.name, application=job.name, age_s=max(state.time_s - job.arrival_s, 0.0),
                        n_reallocs=job.n_restarts, allocation=alloc, min_gpus=job.fixed_gpus or 1,
                        max_gpus=job.agent.gpu_limit(), phi=job.agent.phi or 1e12))
    problem = Scenario(cluster=cl, jobs=tuple(jobs), profiles=profiles, objective=objective).problem()
    idle = state.current.sum(axis=1) == 0
    return dataclasses.replace(problem, realloc=np.where(idle, 1.0, problem.realloc))


class GoodputPolicy(Policy):
    """Solve the goodput problem each round with one :func:`goodopt.solve` method."""

    method = "greedy"

    def __init__(self, *, p: float = -1.0, base: str = "fair-share", interference_avoidance: bool = True,
                 restart_delay_s: float = 30.0, options: dict | None = None):
        super().__init__()
        self.objective = Objective(p=p, base=base, interference_avoidance=interference_avoidance,
                                   restart_delay_s=restart_delay_s)
        self.options = dict(options or {})

    def describe(self) -> dict:
        return {"name": self.name, "method": self.method, "p": self.objective.p, "base": self.objective.base,
                "interference_avoidance": self.objective.interference_avoidance, "options": self.options}

    def _options(self, state, problem) -> dict:
        return dict(self.options)

    def allocate(self, state) -> np.ndarray:
        problem = goodput_problem(state, self.objective)
        res = solve(problem, self.method, self._options(state, problem))
        if not res.has_solution or not res.feasible:
            raise SimulationError(f"round {state.round_index} (t={state.time_s:g}s): {self.name} returned no "
                                  f"feasible allocation: status {res.status}, {res.message}, bound {res.bound}, "
                                  f"gap {res.gap}")
        self.last_stats = {"fitness": res.fitness, "status": str(res.status), "gap": res.gap,
                           "solve_s": res.stats.total_s}
        self._after(state, problem, res)
        return res.x

    def _after(self, state, problem, res) -> None:
        pass


class PolluxPolicy(GoodputPolicy):
    """Pollux: the GA with population 100, up to 100 generations, seeded by last round's population.

    ``engine="numpy"`` (default) runs the GA's whole-population loop, ``"pymoo"``
    the same operators in pymoo's loop (slower; see :mod:`goodopt.solvers.genetic`).
    ``stall_generations`` (default 20 with the numpy engine) ends a round's
    search after that many generations without a better allocation; ``None``
    always runs all ``n_gen`` generations (about 3.5x slower).
    """

    name = "pollux"
    method = "ga"

    def __init__(self, *, pop_size: int = 100, n_gen: int = 100, engine: str = "numpy",
                 stall_generations: int | None | str = "auto", **kw):
        super().__init__(**kw)
        self.options.update(pop_size=pop_size, n_gen=n_gen, engine=engine)
        if stall_generations == "auto":
            stall_generations = 20 if engine == "numpy" else None
        if stall_generations is not None:
            self.options["stall_generations"] = stall_generations
        self._prev_names: tuple[str, ...] = ()
        self._prev_pop = None

    def reset(self, cluster, rng) -> None:
        super().reset(cluster, rng)
        self._prev_names, self._prev_pop = (), None

    def _options(self, state, problem) -> dict:
        opts = dict(self.options)
        opts["seed"] = int(self.rng.integers(2**31 - 1))
        if self._prev_pop is not None:
            pos = {n: i for i, n in enumerate(self._prev_names)}
            P = self._prev_pop.shape[0]
            init = np.zeros((P, state.n_jobs, problem.n_nodes), dtype=np.int64)
            for j, job in enumerate(state.jobs):
                if job.name in pos:
                    init[:, j] = self._prev_pop[:, pos[job.name]]
            opts["initial_population"] = init
        return opts

    def _after(self, state, problem, res) -> None:
        self._prev_names = tuple(job.name for job in state.jobs)
        self._prev_pop = res.extra.get("final_population")


class MilpPolicy(GoodputPolicy):
    """The exact MILP each round (greedy warm start; a time limit gives a stated gap)."""

    name = "milp"
    method = "milp"

    def __init__(self, *, time_limit_s: float = 10.0, mip_rel_gap: float = 1e-4, **kw):
        super().__init__(**kw)
        self.options.update(time_limit_s=time_limit_s, mip_rel_gap=mip_rel_gap, warm_start="greedy")


class GreedyPolicy(GoodputPolicy):
    name = "greedy"
    method = "greedy"


class EqualSharePolicy(GoodputPolicy):
    """Every active job an equal GPU count (within its limit), batch adapted by its agent."""

    name = "equal-share"
    method = "equal-share"


# -------------------------------------------------------------- fixed size
class FixedSizePolicy(Policy):
    """Shared machinery: fixed batch, packed placement, placements kept when sizes are unchanged."""

    adaptive_batch = False
    #: Whether a job that does not fit at its size may run on fewer GPUs.
    shrink_to_fit = False

    def reset(self, cluster, rng) -> None:
        super().reset(cluster, rng)
        self._node_type = np.zeros(cluster.n_nodes, dtype=np.int64)  # the simulator's clusters are homogeneous

    def _requested(self, job) -> int:
        k = job.fixed_gpus or job.num_replicas
        if k > self.cluster.n_gpus:
            raise ValidationError(f"workload[{job.name}].num_replicas",
                                  f"requests {k} GPUs but the cluster has {self.cluster.n_gpus}",
                                  "use a larger cluster or edit the workload")
        return k

    def _place(self, state, sizes) -> np.ndarray:
        """Rows for target GPU counts ``sizes`` (J,): unchanged jobs keep their rows, others packed.

        A job that cannot be placed at its size gets the largest smaller size that fits
        (fixed-GPU jobs get nothing). Shapes: sizes (J,) -> (J, N).
        """
        cap = self.cluster.node_capacity
        alloc = np.zeros_like(state.current)
        keep = (state.current.sum(axis=1) == sizes) & (sizes > 0)
        alloc[keep] = state.current[keep]
        free = cap - alloc.sum(axis=0)
        blocked = np.zeros(len(cap), dtype=bool)
        order = [j for j in np.argsort(-sizes, kind="stable") if sizes[j] > 0 and not keep[j]]
        for j in order:
            job = state.jobs[j]
            k = int(sizes[j])
            lowest = k if (job.fixed_gpus or not self.shrink_to_fit) else 1
            for kk in range(k, lowest - 1, -1):
                row = place_packed(self._node_type, free, blocked, 0, kk)
                if row is not None:
                    alloc[j] = row
                    free -= row
                    break
        return alloc


class OptimusPolicy(FixedSizePolicy):
    """Optimus+Oracle: GPUs one at a time to the job whose oracle remaining time drops most.

    Every job first gets one GPU in arrival order; then each further GPU goes to
    the job with the largest decrease of ``remaining iterations x iteration
    time`` (true step times, fixed batch), up to ``batch_size / m_min`` GPUs.
    """

    name = "optimus"
    needs_oracle = True
    shrink_to_fit = True

    def allocate(self, state) -> np.ndarray:
        truth, cl = state.truth, self.cluster
        J, total = state.n_jobs, cl.n_gpus
        per_node = int(cl.node_capacity.max())
        sizes = np.zeros(J, dtype=np.int64)
        steps_left = np.zeros(J)
        limit = np.zeros(J, dtype=np.int64)
        for j, job in enumerate(state.jobs):
            app = truth[job.application]
            steps_left[j] = app.remaining_steps(job.progress, job.epoch, job.batch_size)
            limit[j] = job.fixed_gpus or max(1, min(job.batch_size // app.min_local_bsz, total))

        def t_rem(j, k):
            job = state.jobs[j]
            app = truth[job.application]
            placement = packed_placement(k, per_node)
            local, accum = app.fixed_config(job.batch_size, k)
            return steps_left[j] * app.iteration_time(placement, local, accum)

        free = total
        for j in range(J):  # one GPU each, in arrival order
            if free == 0:
                break
            sizes[j], free = 1, free - 1
        heap = []
        for j in np.flatnonzero((sizes > 0) & (sizes < limit)):
            heapq.heappush(heap, (-(t_rem(j, 1) - t_rem(j, 2)), int(j)))
        while free > 0 and heap:
            neg_gain, j = heapq.heappop(heap)
            if -neg_gain <= 0:
                break
            sizes[j] += 1
            free -= 1
            if sizes[j] < limit[j]:
                heapq.heappush(heap, (-(t_rem(j, sizes[j]) - t_rem(j, sizes[j] + 1)), j))
        self.last_stats = {"gpus_planned": int(sizes.sum())}
        return self._place(state, sizes)


class TiresiasPolicy(FixedSizePolicy):
    """Two-queue discretised least-attained-service (Tiresias).

    Jobs run with their requested GPUs and batch. A job moves to the low-priority
    queue once it has attained ``threshold_gpu_s`` GPU-seconds; within a queue
    jobs are served first-come first-served; lower-priority running jobs are
    preempted when a higher-priority job needs their GPUs; a job that does not
    fit is skipped so smaller ones behind it may run (work conserving).
    """

    name = "tiresias"
    shrink_to_fit = False

    def __init__(self, *, threshold_gpu_s: float = TIRESIAS_THRESHOLD_GPU_S):
        super().__init__()
        self.threshold_gpu_s = threshold_gpu_s

    def describe(self) -> dict:
        return {"name": self.name, "threshold_gpu_s": self.threshold_gpu_s}

    def allocate(self, state) -> np.ndarray:
        J = state.n_jobs
        queue = np.array([job.attained_gpu_s >= self.threshold_gpu_s for job in state.jobs], dtype=int)
        order = np.lexsort((np.arange(J), queue))  # queue, then arrival order
        sizes = self._admit(state, order, backfill=True)
        return self._place_admitted(state, sizes)

    def _admit(self, state, order, backfill):
        free = self.cluster.n_gpus
        sizes = np.zeros(state.n_jobs, dtype=np.int64)
        for j in order:
            k = self._requested(state.jobs[j])
            if k <= free:
                sizes[j] = k
                free -= k
            elif not backfill:
                break
        return sizes

    def _place_admitted(self, state, sizes):
        alloc = self._place(state, sizes)
        self.last_stats = {"n_unplaced": int(((alloc.sum(axis=1) == 0) & (sizes > 0)).sum())}
        return alloc


class FifoPolicy(TiresiasPolicy):
    """First-come first-served, non-preemptive, no backfilling (head-of-line blocking)."""

    name = "fifo"

    def __init__(self):
        super().__init__(threshold_gpu_s=np.inf)

    def describe(self) -> dict:
        return {"name": self.name}

    def allocate(self, state) -> np.ndarray:
        running = state.current.sum(axis=1) > 0
        order = np.concatenate([np.flatnonzero(running), np.flatnonzero(~running)])
        sizes = self._admit(state, order, backfill=False)
        return self._place_admitted(state, sizes)


#: Policy name -> class.
POLICIES = {
    "pollux": PolluxPolicy,
    "milp": MilpPolicy,
    "greedy": GreedyPolicy,
    "equal-share": EqualSharePolicy,
    "optimus": OptimusPolicy,
    "tiresias": TiresiasPolicy,
    "fifo": FifoPolicy,
}


def make_policy(name: str, **options) -> Policy:
    """A policy by name with its keyword options (validated by the class)."""
    if isinstance(name, Policy):
        return name
    if name not in POLICIES:
        raise ValidationError("policy", f"unknown policy {name!r}", f"choose one of {', '.join(POLICIES)}")
    try:
        return POLICIES[name](**options)
    except TypeError as exc:
        raise ValidationError("policy options", f"{name}: {exc}", "see the policy's docstring") from None
