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
the workload's ``batch_size`` (rounded to whole per-GPU batches, never above
the application's maximum) and place new allocations as Pollux's simulator
did: smallest jobs first, each taking GPUs from the node with the most free
GPUs (``placement="packed"``: largest first, one node if it fits; on a
heterogeneous cluster on the first GPU type with room, i.e.
heterogeneity-agnostic); a job whose GPU count is unchanged keeps its
placement. Tiresias serves its second queue in order of demotion.

``gavel`` runs one of Gavel's time-fraction policies
(:mod:`goodopt.solvers.gavel`) on the jobs' true throughputs at their
requested GPU count and fixed batch (an oracle, as in Gavel's simulator), and
realises the fractions with the round mechanism of :mod:`goodopt.solvers.rounds`
every ``round_s`` seconds (Gavel's 6-minute rounds by default): between its
rounds allocations stand, and arriving jobs wait for the next round.

On heterogeneous clusters ``pollux`` is heterogeneity-unaware (its jobs' agents
pool every type into one model, as Sia's baseline); the other goodput policies
see one model per type, bootstrapped by one-GPU profiling of every type.
"""

from __future__ import annotations

import dataclasses
import heapq
import logging

import numpy as np

from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import SimulationError, ValidationError
from goodopt.formulations.placement import place_packed
from goodopt.plugins import POLICY_GROUP, PluginRegistry
from goodopt.scenario import PRESETS, Job, Objective, Scenario
from goodopt.solvers import solve
from goodopt.solvers.rounds import RoundMechanism, current_types, place_round

from .truth import packed_placement

log = logging.getLogger(__name__)

#: Tiresias' attained-service threshold between its two queues (GPU-seconds).
TIRESIAS_THRESHOLD_GPU_S = 16 * 3600.0


class Policy:
    """Base class: see the module docstring."""

    name = "policy"
    adaptive_batch = True
    needs_oracle = False
    #: Whether the policy tells GPU types apart (heterogeneous clusters only).
    hetero_aware = True
    #: Whether the policy plans on whatever nodes are provisioned each round (elastic clusters).
    elastic = False

    def __init__(self):
        self.last_stats: dict = {}
        self.rng = None
        self.cluster = None

    def reset(self, cluster, rng: np.random.Generator) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        self.cluster, self.rng = cluster, rng
        self.last_stats = {}

    def allocate(self, state) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        raise NotImplementedError

    def resize(self, cluster) -> None:
        """The provisioned nodes of an elastic cluster changed: plan on ``cluster`` from this round on."""
        self.cluster = cluster

    def check_workload(self, workload, cluster, fixed_gpus=None) -> None:
        """Refuse (:class:`ValidationError`) a job of ``workload`` this policy can never run on ``cluster``
        (``fixed_gpus``: application -> the GPUs the engine fixes it to); called before the first round, and
        by dry runs."""

    def describe(self) -> dict:
        """The policy's name and options, for run metadata."""
        return {"name": self.name}


# ----------------------------------------------------------- goodput-aware
def goodput_problem(state, objective: Objective, max_gpus: int | None = None):
    """The round's allocation problem as the job agents report it (each job at most ``max_gpus`` GPUs if
    given, besides its agent's limit).

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
                        max_gpus=_cap(job.agent.gpu_limit(), max_gpus), phi=job.agent.phi or 1e12))
    if objective.restart_delays_s:  # per-application delays, keyed by the job names used as profile keys
        objective = dataclasses.replace(objective, restart_delays_s={
            job.name: objective.restart_delay_of(job.application) for job in state.jobs})
    problem = Scenario(cluster=cl, jobs=tuple(jobs), profiles=profiles, objective=objective).problem()
    idle = state.current.sum(axis=1) == 0
    return dataclasses.replace(problem, realloc=np.where(idle, 1.0, problem.realloc))


def _cap(limit, max_gpus):
    return limit if max_gpus is None else max_gpus if limit is None else min(limit, max_gpus)


class VirtualNodes:
    """A cluster seen as nodes of at most ``size`` GPUs: each node of ``k * size`` GPUs is ``k`` virtual nodes.

    Sia's simulator runs its Pollux baseline this way (4-GPU virtual nodes on
    its 8-GPU machines): the policy plans on the virtual nodes, so two of them
    on one machine count as two nodes in its model, while the job runs on the
    machine. ``physical[v]`` is the machine of virtual node ``v``.
    """

    def __init__(self, cluster, size: int):
        groups, physical, first = [], [], 0
        for g in cluster.groups:
            if g.gpus_per_node % size and g.gpus_per_node > size:
                raise ValidationError("virtual_node_gpus", f"{size} does not divide the {g.gpus_per_node} GPUs of "
                                      f"the {g.gpu_type} nodes", "use a divisor of every node's GPU count")
            k = max(g.gpus_per_node // size, 1)
            groups.append(NodeGroup(g.gpu_type, min(g.gpus_per_node, size), g.n_nodes * k, g.prefix))
            physical += [first + i for i in range(g.n_nodes) for _ in range(k)]
            first += g.n_nodes
        self.cluster = Cluster(tuple(groups))
        self.physical = np.array(physical, dtype=np.int64)
        self.size = size

    def to_virtual(self, current) -> np.ndarray:
        """Each job's GPUs on a machine filled into its virtual nodes in order. Shapes: (J, N) -> (J, V)."""
        cap = self.cluster.node_capacity
        out = np.zeros((current.shape[0], len(self.physical)), dtype=np.int64)
        for j, n in zip(*np.nonzero(current)):
            left = int(current[j, n])
            for v in np.flatnonzero(self.physical == n):
                take = min(left, int(cap[v] - out[:, v].sum()))
                out[j, v], left = take, left - take
        return out

    def to_physical(self, x) -> np.ndarray:
        """GPUs per machine. Shapes: (J, V) -> (J, N)."""
        x = np.asarray(x)
        out = np.zeros((x.shape[0], int(self.physical.max()) + 1), dtype=np.int64)
        np.add.at(out.T, self.physical, x.T)
        return out


class GoodputPolicy(Policy):
    """Solve the goodput problem each round with one :func:`goodopt.solve` method.

    ``max_gpus`` caps every job's GPUs; ``virtual_node_gpus`` plans on nodes of
    at most that many GPUs (:class:`VirtualNodes`). Sia's simulator runs its
    Pollux baseline with 16 and 4.
    """

    method = "greedy"
    elastic = True

    def __init__(self, *, p: float | None = None, base: str | None = None, interference_avoidance: bool = True,
                 restart_delay_s: float = 30.0, preset: str = "pollux", idle_penalty: float | None = None,
                 max_gpus: int | None = None, virtual_node_gpus: int | None = None, options: dict | None = None):
        """``preset="sia"`` starts from Sia's objective (:meth:`Objective.sia`); ``p``, ``base`` and
        ``idle_penalty`` override the preset's values."""
        super().__init__()
        for name, value in (("max_gpus", max_gpus), ("virtual_node_gpus", virtual_node_gpus)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValidationError(name, f"must be a whole number >= 1 or None, got {value!r}")
        self.max_gpus, self.virtual_node_gpus = max_gpus, virtual_node_gpus
        self._virtual = None
        if preset not in PRESETS:
            raise ValidationError("preset", f"unknown objective preset {preset!r}", f"choose one of {list(PRESETS)}")
        start = Objective.sia() if preset == "sia" else Objective()
        changes = {"interference_avoidance": interference_avoidance, "restart_delay_s": restart_delay_s}
        for name, value in (("p", p), ("base", base), ("idle_penalty", idle_penalty)):
            if value is not None:
                changes[name] = value
        self.objective = dataclasses.replace(start, **changes)
        self.preset = preset
        self.options = dict(options or {})

    def describe(self) -> dict:
        """The policy's name and options, for run metadata."""
        return {"name": self.name, "method": self.method, "preset": self.preset, "p": self.objective.p,
                "base": self.objective.base, "idle_penalty": self.objective.idle_penalty,
                "interference_avoidance": self.objective.interference_avoidance, "max_gpus": self.max_gpus,
                "virtual_node_gpus": self.virtual_node_gpus, "options": self.options}

    def reset(self, cluster, rng) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        self._virtual = None if self.virtual_node_gpus is None else VirtualNodes(cluster, self.virtual_node_gpus)

    def resize(self, cluster) -> None:
        """Plan on ``cluster`` (an elastic cluster's provisioned nodes) from this round on."""
        super().resize(cluster)
        self._virtual = None if self.virtual_node_gpus is None else VirtualNodes(cluster, self.virtual_node_gpus)

    def _options(self, state, problem) -> dict:
        return dict(self.options)

    def allocate(self, state) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        vn = self._virtual
        if vn is not None:
            state = dataclasses.replace(state, cluster=vn.cluster, current=vn.to_virtual(state.current))
        problem = goodput_problem(state, self.objective, self.max_gpus)
        res = solve(problem, self.method, self._options(state, problem))
        if not res.has_solution or not res.feasible:
            raise SimulationError(f"round {state.round_index} (t={state.time_s:g}s): {self.name} returned no "
                                  f"feasible allocation: status {res.status}, {res.message}, bound {res.bound}, "
                                  f"gap {res.gap}")
        self.last_stats = {"fitness": res.fitness, "status": str(res.status), "gap": res.gap,
                           "solve_s": res.stats.total_s}
        self._after(state, problem, res)
        return res.x if vn is None else vn.to_physical(res.x)

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
    hetero_aware = False  # Pollux treats every GPU as the same type

    def __init__(self, *, pop_size: int = 100, n_gen: int = 100, engine: str = "numpy",
                 stall_generations: int | None | str = "auto", **kw):
        super().__init__(**kw)
        # Pollux's GA starts from the current allocation and the last round's population, not from greedy
        self.options.update(pop_size=pop_size, n_gen=n_gen, engine=engine, warm_start=None)
        if stall_generations == "auto":
            stall_generations = 20 if engine == "numpy" else None
        if stall_generations is not None:
            self.options["stall_generations"] = stall_generations
        self._prev_names: tuple[str, ...] = ()
        self._prev_pop = None

    def reset(self, cluster, rng) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        self._prev_names, self._prev_pop = (), None

    def _options(self, state, problem) -> dict:
        opts = dict(self.options)
        opts["seed"] = int(self.rng.integers(2**31 - 1))
        if self._prev_pop is not None:
            pos = {n: i for i, n in enumerate(self._prev_names)}
            P = self._prev_pop.shape[0]
            init = np.zeros((P, state.n_jobs, problem.n_nodes), dtype=np.int64)
            n = min(problem.n_nodes, self._prev_pop.shape[2])  # an elastic cluster's nodes come and go last
            for j, job in enumerate(state.jobs):
                if job.name in pos:
                    init[:, j, :n] = self._prev_pop[:, pos[job.name], :n]
            opts["initial_population"] = init
        return opts

    def _after(self, state, problem, res) -> None:
        self._prev_names = tuple(job.name for job in state.jobs)
        self._prev_pop = res.extra.get("final_population")


class MilpPolicy(GoodputPolicy):
    """The exact MILP each round, warm-started from the previous round's allocation.

    The previous allocation (every kept job where it is) is a candidate next
    to the solver's own greedy start; a round that stops at ``time_limit_s``
    reports its status and gap in ``last_stats``.
    """

    name = "milp"
    method = "milp"

    def __init__(self, *, time_limit_s: float | None = 10.0, mip_rel_gap: float = 1e-4,
                 node_limit: int | None = None, **kw):
        """``node_limit`` (branch-and-bound nodes per MILP) is the deterministic budget; with
        ``time_limit_s=None`` a run's allocations do not depend on the machine's speed."""
        super().__init__(**kw)
        self.options.update(time_limit_s=time_limit_s, mip_rel_gap=mip_rel_gap)
        if node_limit is not None:
            self.options["node_limit"] = node_limit

    def _options(self, state, problem) -> dict:
        opts = dict(self.options)
        if problem.current.any() and problem.evaluator().violation(problem.current) == 0:
            opts.setdefault("warm_start", problem.current)
        return opts


class SiaPolicy(MilpPolicy):
    """The exact MILP with Sia's objective: p = -0.5, min-config normalisation, idle penalty 1.1,
    per-application restart delays (:meth:`goodopt.scenario.Objective.sia`)."""

    name = "sia"

    def __init__(self, *, preset: str = "sia", **kw):
        super().__init__(preset=preset, **kw)


class GreedyPolicy(GoodputPolicy):
    name = "greedy"
    method = "greedy"


class EqualSharePolicy(GoodputPolicy):
    """Every active job an equal GPU count (within its limit), batch adapted by its agent."""

    name = "equal-share"
    method = "equal-share"


# -------------------------------------------------------------- fixed size
class FixedSizePolicy(Policy):
    """Shared machinery: fixed batch, placements kept when sizes are unchanged, new ones placed by ``placement``.

    ``placement="most-free"`` (default, as Pollux's simulator placed its baselines): jobs in ascending size
    order, each taking GPUs from the node with the most free GPUs first; ``"packed"``: largest jobs first,
    each on one node if it fits (best fit), else on the fewest nodes.
    """

    adaptive_batch = False
    #: Whether a job that does not fit at its size may run on fewer GPUs.
    shrink_to_fit = False

    hetero_aware = False

    def __init__(self, *, placement: str = "most-free"):
        super().__init__()
        if placement not in PLACEMENTS:
            raise ValidationError("placement", f"unknown placement {placement!r}",
                                  f"choose one of {', '.join(PLACEMENTS)}")
        self.placement = placement

    def describe(self) -> dict:
        """The policy's name and options, for run metadata."""
        return {"name": self.name, "placement": self.placement}

    def reset(self, cluster, rng) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        types = cluster.gpu_type_names
        self._node_type = np.array([types.index(t) for t in cluster.node_gpu_types], dtype=np.int64)

    def check_workload(self, workload, cluster, fixed_gpus=None) -> None:
        """A fixed-size policy never runs a job asking for more GPUs than the cluster has."""
        fixed = fixed_gpus or {}
        for job in workload.jobs:
            k = fixed.get(job.application) or job.num_replicas
            if k > cluster.n_gpus:
                raise ValidationError(f"{job.where}.num_replicas", f"requests {k} GPUs but the cluster has "
                                      f"{cluster.n_gpus}", "use a larger cluster, a goodput policy, or edit the "
                                      "workload")

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
        most_free = self.placement == "most-free"
        order = [j for j in np.argsort(sizes if most_free else -sizes, kind="stable") if sizes[j] > 0 and not keep[j]]
        for j in order:
            job = state.jobs[j]
            k = int(sizes[j])
            lowest = k if (job.fixed_gpus or not self.shrink_to_fit) else 1
            for kk in range(k, lowest - 1, -1):
                row = None
                for g in range(len(self.cluster.gpu_type_names)):  # first type with room (agnostic)
                    row = place_most_free(self._node_type, free, g, kk) if most_free else \
                        place_packed(self._node_type, free, blocked, g, kk)
                    if row is not None:
                        break
                if row is not None:
                    alloc[j] = row
                    free -= row
                    break
        return alloc


#: Placements of the fixed-size policies (see :class:`FixedSizePolicy`).
PLACEMENTS = ("most-free", "packed")


def place_most_free(node_type, free, g, k):
    """``k`` GPUs of type ``g`` taken one node at a time from the node with the most free GPUs; ``None`` if
    the type has fewer than ``k`` free. Nothing is modified. Shapes: (N,) arrays -> (N,) or None."""
    nodes = np.flatnonzero(node_type == g)
    if free[nodes].sum() < k:
        return None
    row = np.zeros(len(free), dtype=np.int64)
    left = free.copy()
    while k > 0:
        n = nodes[np.argmax(left[nodes])]  # ties: the lowest-numbered node
        take = min(k, int(left[n]))
        row[n] += take
        left[n] -= take
        k -= take
    return row


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
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
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
            local, accum = app.fixed_config(job.batch_size, k,
                                            single_gpu_accumulation=state.config.single_gpu_accumulation)
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

    def __init__(self, *, threshold_gpu_s: float = TIRESIAS_THRESHOLD_GPU_S, placement: str = "most-free"):
        super().__init__(placement=placement)
        self.threshold_gpu_s = threshold_gpu_s
        self._demoted: dict[str, float] = {}

    def reset(self, cluster, rng) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        self._demoted = {}

    def describe(self) -> dict:
        """The policy's name and options, for run metadata."""
        return {**super().describe(), "threshold_gpu_s": self.threshold_gpu_s}

    def allocate(self, state) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        J = state.n_jobs
        queue = np.array([job.attained_gpu_s >= self.threshold_gpu_s for job in state.jobs], dtype=int)
        for j in np.flatnonzero(queue):
            self._demoted.setdefault(state.jobs[j].name, state.time_s)
        demoted = np.array([self._demoted.get(job.name, 0.0) for job in state.jobs])
        # the first queue in arrival order, the second in order of demotion (then arrival)
        order = np.lexsort((np.arange(J), demoted, queue))
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

    def __init__(self, *, placement: str = "most-free"):
        super().__init__(threshold_gpu_s=np.inf, placement=placement)

    def describe(self) -> dict:
        """The policy's name and options, for run metadata."""
        return {"name": self.name}

    def allocate(self, state) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        running = state.current.sum(axis=1) > 0
        order = np.concatenate([np.flatnonzero(running), np.flatnonzero(~running)])
        sizes = self._admit(state, order, backfill=False)
        return self._place_admitted(state, sizes)


# --------------------------------------------------------------------- Gavel
class GavelPolicy(Policy):
    """A Gavel policy on oracle throughputs, realised by the round mechanism (see the module docstring).

    ``policy`` is any of :data:`goodopt.solvers.gavel.POLICIES`; the time
    fractions are recomputed when the set of active jobs changes.
    """

    name = "gavel"
    adaptive_batch = False
    needs_oracle = True
    hetero_aware = True

    def __init__(self, *, policy: str = "max_min_fairness", round_s: float = 360.0, options: dict | None = None,
                 entities: dict | None = None):
        """``entities`` (name -> {weight, policy: fairness | fifo}) weighs the workload's ``entity`` column for
        ``policy="max_min_fairness_water_filling"``."""
        super().__init__()
        from goodopt.gavel import check_entities

        self.entities = check_entities(entities or {})
        from goodopt.gavel import PACKED, POLICY_NAMES

        if policy not in POLICY_NAMES:
            raise ValidationError("policy", f"unknown Gavel policy {policy!r}", f"choose one of {list(POLICY_NAMES)}")
        if policy in PACKED:
            raise ValidationError("policy", f"{policy!r} shares GPUs between job pairs, whose throughputs together "
                                  "only Gavel's job types have", f"simulate Gavel's jobs with a rigid sweep (kind: "
                                  f"rigid), or use {PACKED[policy]!r} here")
        if isinstance(round_s, bool) or not isinstance(round_s, (int, float)) or not 0 < round_s <= 1e6:
            raise ValidationError("round_s", f"must be a number of seconds in (0, 1e6], got {round_s!r}")
        from goodopt.solvers.gavel import check_policy_options

        check_policy_options(policy, options)
        self.policy, self.round_s, self.options = policy, float(round_s), dict(options or {})

    def check_workload(self, workload, cluster, fixed_gpus=None) -> None:
        """Gavel runs a job on one GPU type: a job asking for more GPUs than any type has never runs."""
        largest = max(cluster.gpus_of_type(t) for t in cluster.gpu_type_names)
        for job in workload.jobs:
            if (fixed_gpus or {}).get(job.application, job.num_replicas) > largest:
                raise ValidationError(f"{job.where}.num_replicas",
                                      f"requests {job.num_replicas} GPUs but no GPU type of the cluster has more "
                                      f"than {largest} (Gavel runs a job on one type)",
                                      "use a larger cluster, another policy, or edit the workload")

    def describe(self) -> dict:
        """The policy's name and options, for run metadata."""
        return {"name": self.name, "policy": self.policy, "round_s": self.round_s, "options": self.options,
                "entities": {name: dict(s) for name, s in self.entities}}

    def reset(self, cluster, rng) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        self.types = cluster.gpu_type_names
        self.node_type = np.array([self.types.index(t) for t in cluster.node_gpu_types], dtype=np.int64)
        self.capacity = np.array([cluster.gpus_of_type(t) for t in self.types], dtype=np.int64)
        self.mechanism = RoundMechanism(self.types)
        self._names: tuple[str, ...] = ()
        self._x = None
        self._next_round_s = -np.inf

    def matrix(self, state):
        """Jobs x types throughput (steps/s at the requested GPUs, fixed batch, packed). Shapes: (J, K)."""
        from goodopt.gavel import ThroughputMatrix, entity_fields

        J, K = state.n_jobs, len(self.types)
        thr = np.zeros((J, K))
        scale = np.array([job.fixed_gpus or job.num_replicas for job in state.jobs], dtype=np.int64)
        too_big = np.flatnonzero(scale > self.capacity.max())
        if len(too_big):
            job = state.jobs[too_big[0]]
            raise ValidationError(f"workload[{job.name}].num_replicas",
                                  f"requests {scale[too_big[0]]} GPUs but no GPU type has more than "
                                  f"{self.capacity.max()} (Gavel runs a job on one type)",
                                  "use a larger cluster or edit the workload")
        remaining = np.zeros(J)
        for j, job in enumerate(state.jobs):
            for k, t in enumerate(self.types):
                if scale[j] > self.capacity[k]:
                    continue
                app = state.truth.on(job.application, t) if len(self.types) > 1 else state.truth[job.application]
                local, accum = app.fixed_config(job.batch_size, scale[j],
                                                single_gpu_accumulation=state.config.single_gpu_accumulation)
                thr[j, k] = 1.0 / app.iteration_time(packed_placement(scale[j], self.cluster.max_gpus_per_node(t)),
                                                     local, accum)
            app0 = state.truth[job.application]
            remaining[j] = max(app0.remaining_steps(job.progress, job.epoch, job.batch_size), 1e-9)
        return ThroughputMatrix(job_names=tuple(job.name for job in state.jobs), type_names=self.types,
                                throughput=thr, scale_factor=scale, capacity=self.capacity,
                                remaining_steps=remaining,
                                elapsed_s=np.array([max(state.time_s - job.arrival_s, 0.0) for job in state.jobs]),
                                arrival_order=np.arange(J), **entity_fields(self.entities, state.jobs))

    def allocate(self, state) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        from goodopt.solvers.gavel import solve_gavel

        names = tuple(job.name for job in state.jobs)
        if state.time_s < self._next_round_s - 1e-9:
            self.last_stats = {}
            return state.current  # between Gavel rounds allocations stand (finished jobs are gone)
        self._next_round_s = state.time_s + self.round_s
        mx = self.matrix(state)
        if names != self._names or self._x is None:
            self.mechanism.forget(set(self.mechanism.rounds) - set(names))
            res = solve_gavel(mx, self.policy, self.options)
            self._x, self._names = res.x, names
            self.last_stats = {"lp_s": res.seconds, "objective": res.fun}
        assigned = self.mechanism.assign(names, self._x, mx.scale_factor, self.capacity,
                                         current_types(self.node_type, state.current))
        alloc, failed = place_round(self.node_type, self.cluster.node_capacity, assigned, mx.scale_factor,
                                    state.current)
        assigned[failed] = -1
        self.mechanism.record(names, assigned, self.round_s)
        self.last_stats["n_unplaced"] = len(failed)
        return alloc


#: Policy name -> class.
#: Every policy by name (plug-ins of the ``goodopt.policies`` entry points are added when it is first read).
POLICIES = PluginRegistry(POLICY_GROUP, lambda name, cls: register_policy(name, cls), {
    "pollux": PolluxPolicy,
    "milp": MilpPolicy,
    "sia": SiaPolicy,
    "greedy": GreedyPolicy,
    "equal-share": EqualSharePolicy,
    "optimus": OptimusPolicy,
    "tiresias": TiresiasPolicy,
    "fifo": FifoPolicy,
    "gavel": GavelPolicy,
})


def register_policy(name: str, cls) -> None:
    """Add a simulation policy class under ``name``: from then on ``simulate``, sweeps and the command line
    take it."""
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise ValidationError(f"policy {name!r}", "a plug-in policy must be a Policy subclass", "see docs/extending.md")
    if not isinstance(name, str) or not name or name in POLICIES:
        raise ValidationError(f"policy {name!r}", "the name is empty or taken", "choose another name")
    POLICIES[name] = cls


def policy_options(name: str) -> dict:
    """The keyword options of policy ``name`` and their defaults (its class and its bases)."""
    import inspect

    out = {}
    for klass in reversed(POLICIES[name].__mro__):
        if "__init__" in vars(klass):
            for p in inspect.signature(klass.__init__).parameters.values():
                if p.name != "self" and p.kind == p.KEYWORD_ONLY:
                    out[p.name] = None if p.default is p.empty else p.default
    return out


def make_policy(name: str, **options) -> Policy:
    """A policy by name with its keyword options (validated by the class)."""
    if isinstance(name, Policy):
        return name
    if name not in POLICIES:
        raise ValidationError("policy", f"unknown policy {name!r}", f"choose one of {', '.join(POLICIES)}")
    if "options" in options and options["options"] is not None and not isinstance(options["options"], dict):
        raise ValidationError(f"{name}.options", f"must map option -> value, got {options['options']!r}",
                              "see docs/options.md")
    try:
        policy = POLICIES[name](**options)
    except TypeError as exc:
        raise ValidationError("policy options", f"{name}: {exc}", "see the policy's docstring") from None
    method = getattr(policy, "method", None)
    if method is not None:  # a goodput policy: its solver options, checked as the solve will check them
        from goodopt.solvers.options import OPTIONS

        cls = OPTIONS[method]
        try:
            cls.build({**({"seed": 0} if cls.randomised else {}), **policy.options})
        except ValidationError as exc:
            raise ValidationError(f"{name}.{exc.field}", exc.problem, exc.fix) from None
    return policy
