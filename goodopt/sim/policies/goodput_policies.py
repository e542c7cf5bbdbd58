"""Goodput-aware policies: an allocation problem from what the job agents report, solved each round
(``pollux``: the GA; ``milp``, ``sia``: the exact method; ``greedy``; ``equal-share``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import SimulationError, ValidationError
from goodopt.fitness import realloc_factor
from goodopt.objective import PRESETS, Objective
from goodopt.problem import AllocationProblem, JobColumns
from goodopt.solvers import solve
from goodopt.solvers.details import GeneticDetails

from ...records import Record
from .policy import Policy, SimPolicyOptions

if TYPE_CHECKING:
    from goodopt.solvers.result import SolveResult

    from ..state import RoundState


# ----------------------------------------------------------- goodput-aware
def goodput_problem(state: RoundState, objective: Objective, max_gpus: int | None = None) -> AllocationProblem:
    """The round's allocation problem as the job agents report it (each job at most ``max_gpus`` GPUs if
    given, besides its agent's limit), built straight from the simulation's state. Each job is its own
    application (its agent's profile); a job holding nothing pays no re-allocation factor.

    Shapes: -> AllocationProblem with J = state.n_jobs, N = cluster nodes.
    """
    cl, jobs = state.cluster, state.jobs
    names = tuple(job.name for job in jobs)
    realloc = np.array([float(realloc_factor(max(state.time_s - job.arrival_s, 0.0), job.n_restarts,
                                             objective.restart_delay_of(job.application))) for job in jobs])
    columns = JobColumns(
        names=names,
        applications=names,
        profiles=tuple(job.agent.profile(job.name) for job in jobs),
        current=state.current.copy(),
        realloc=np.where(state.current.sum(axis=1) == 0, 1.0, realloc),
        weights=np.ones(len(jobs)),
        min_gpus=np.array([job.fixed_gpus or 1 for job in jobs], dtype=np.int64),
        max_gpus=np.array([min(_cap(job.agent.gpu_limit(), max_gpus) or cl.n_gpus, cl.n_gpus) for job in jobs],
                          dtype=np.int64),
        phi=np.array([job.agent.phi or 1e12 for job in jobs], dtype=float),
        entities=("",) * len(jobs),
    )
    return AllocationProblem.from_jobs(cl, objective, columns)


def _cap(limit: int | None, max_gpus: int | None) -> int | None:
    return limit if max_gpus is None else max_gpus if limit is None else min(limit, max_gpus)


class VirtualNodes:
    """A cluster seen as nodes of at most ``size`` GPUs: each node of ``k * size`` GPUs is ``k`` virtual nodes.

    Sia's simulator runs its Pollux baseline this way (4-GPU virtual nodes on
    its 8-GPU machines): the policy plans on the virtual nodes, so two of them
    on one machine count as two nodes in its model, while the job runs on the
    machine. ``physical[v]`` is the machine of virtual node ``v``.
    """

    def __init__(self, cluster: Cluster, size: int) -> None:
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

    def to_virtual(self, current: np.ndarray) -> np.ndarray:
        """Each job's GPUs on a machine filled into its virtual nodes in order. Shapes: (J, N) -> (J, V)."""
        cap = self.cluster.node_capacity
        out = np.zeros((current.shape[0], len(self.physical)), dtype=np.int64)
        for j, n in zip(*np.nonzero(current)):
            left = int(current[j, n])
            for v in np.flatnonzero(self.physical == n):
                take = min(left, int(cap[v] - out[:, v].sum()))
                out[j, v], left = take, left - take
        return out

    def to_physical(self, x: Any) -> np.ndarray:  # x: an allocation array-like (J, virtual nodes)
        """GPUs per machine. Shapes: (J, V) -> (J, N)."""
        x = np.asarray(x)
        out = np.zeros((x.shape[0], int(self.physical.max()) + 1), dtype=np.int64)
        np.add.at(out.T, self.physical, x.T)
        return out


@dataclass(frozen=True, kw_only=True)
class GoodputOptions(SimPolicyOptions):
    """The goodput policies' options: the objective (``preset``, then ``p``, ``base``, ``idle_penalty`` over
    it; ``interference_avoidance``, ``restart_delay_s``), ``max_gpus`` per job, ``virtual_node_gpus`` (plan
    on nodes of at most that many GPUs) and the method's own ``options``."""

    p: float | None = None
    base: str | None = None
    interference_avoidance: bool = True
    restart_delay_s: float = 30.0
    preset: str = "pollux"
    idle_penalty: float | None = None
    max_gpus: int | None = None
    virtual_node_gpus: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    infinite_ok: ClassVar[tuple[str, ...]] = ("p",)

    def __post_init__(self) -> None:
        for name in ("max_gpus", "virtual_node_gpus"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValidationError(f"{self.prefix}.{name}", f"must be a whole number >= 1 or None, got {value!r}")
        if self.preset not in PRESETS:
            raise ValidationError(f"{self.prefix}.preset", f"unknown objective preset {self.preset!r}",
                                  f"choose one of {list(PRESETS)}")


@dataclass(frozen=True, kw_only=True)
class PolluxPolicyOptions(GoodputOptions):
    """Pollux's GA each round: ``pop_size``, ``n_gen``, ``engine`` and ``stall_generations`` (``auto``: 20
    with the numpy engine, else none), checked as the ``ga`` method checks them."""

    pop_size: int = 100
    n_gen: int = 100
    engine: str = "numpy"
    stall_generations: int | str | None = "auto"


@dataclass(frozen=True, kw_only=True)
class MilpPolicyOptions(GoodputOptions):
    """The exact method each round: ``time_limit_s`` (wall clock), ``mip_rel_gap``, ``node_limit`` (the
    deterministic budget)."""

    time_limit_s: float | None = 10.0
    mip_rel_gap: float = 1e-4
    node_limit: int | None = None


@dataclass(frozen=True, kw_only=True)
class SiaPolicyOptions(MilpPolicyOptions):
    """The ``milp`` policy's options from Sia's objective preset."""

    preset: str = "sia"


class GoodputPolicy(Policy):
    """Solve the goodput problem each round with one :func:`goodopt.solve` method.

    ``max_gpus`` caps every job's GPUs; ``virtual_node_gpus`` plans on nodes of
    at most that many GPUs (:class:`VirtualNodes`). Sia's simulator runs its
    Pollux baseline with 16 and 4.
    """

    method = "greedy"
    Options: ClassVar[type[SimPolicyOptions]] = GoodputOptions
    opts: GoodputOptions
    elastic = True

    def __init__(self, **options: Any) -> None:  # Any: option values, checked by the options class
        super().__init__(**options)
        o = self.opts
        self.max_gpus = o.max_gpus
        self._virtual: VirtualNodes | None = None
        start = Objective.sia() if o.preset == "sia" else Objective()
        changes: dict[str, Any] = {"interference_avoidance": o.interference_avoidance,
                                   "restart_delay_s": o.restart_delay_s}
        for name in ("p", "base", "idle_penalty"):
            if getattr(o, name) is not None:
                changes[name] = getattr(o, name)
        self.objective = dataclasses.replace(start, **changes)
        #: The method's options for :func:`goodopt.solve` (the policy's own added by the subclasses).
        self.options = dict(o.options)

    def describe(self) -> Record:
        """The policy's name and options, for run metadata."""
        return {"name": self.name, "method": self.method, "preset": self.opts.preset, "p": self.objective.p,
                "base": self.objective.base, "idle_penalty": self.objective.idle_penalty,
                "interference_avoidance": self.objective.interference_avoidance, "max_gpus": self.max_gpus,
                "virtual_node_gpus": self.opts.virtual_node_gpus, "options": self.options}

    def reset(self, cluster: Cluster, rng: np.random.Generator) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        self._plan_on(cluster)

    def resize(self, cluster: Cluster) -> None:
        """Plan on ``cluster`` (an elastic cluster's provisioned nodes) from this round on."""
        super().resize(cluster)
        self._plan_on(cluster)

    def _plan_on(self, cluster: Cluster) -> None:
        """Plan on ``cluster``'s nodes, or on virtual nodes of ``virtual_node_gpus`` GPUs cut from them."""
        size = self.opts.virtual_node_gpus
        self._virtual = None if size is None else VirtualNodes(cluster, size)

    def _options(self, state: RoundState, problem: AllocationProblem) -> dict[str, Any]:
        return dict(self.options)

    def allocate(self, state: RoundState) -> np.ndarray:
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

    def _after(self, state: RoundState, problem: AllocationProblem, res: SolveResult) -> None:
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
    Options = PolluxPolicyOptions
    opts: PolluxPolicyOptions
    hetero_aware = False  # Pollux treats every GPU as the same type

    def __init__(self, **options: Any) -> None:  # Any: option values, checked by the options class
        super().__init__(**options)
        o = self.opts
        # Pollux's GA starts from the current allocation and the last round's population, not from greedy
        self.options.update(pop_size=o.pop_size, n_gen=o.n_gen, engine=o.engine, warm_start=None)
        stall = (20 if o.engine == "numpy" else None) if o.stall_generations == "auto" else o.stall_generations
        if stall is not None:
            self.options["stall_generations"] = stall
        self._prev_names: tuple[str, ...] = ()
        self._prev_pop = None

    def reset(self, cluster: Cluster, rng: np.random.Generator) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        self._prev_names, self._prev_pop = (), None

    def _options(self, state: RoundState, problem: AllocationProblem) -> dict[str, Any]:
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

    def _after(self, state: RoundState, problem: AllocationProblem, res: SolveResult) -> None:
        self._prev_names = tuple(job.name for job in state.jobs)
        self._prev_pop = res.details(GeneticDetails).final_population


class MilpPolicy(GoodputPolicy):
    """The exact MILP each round, warm-started from the previous round's allocation.

    The previous allocation (every kept job where it is) is a candidate next
    to the solver's own greedy start; a round that stops at ``time_limit_s``
    reports its status and gap in ``last_stats``.
    """

    name = "milp"
    method = "milp"
    Options = MilpPolicyOptions
    opts: MilpPolicyOptions

    def __init__(self, **options: Any) -> None:  # Any: option values, checked by the options class
        super().__init__(**options)
        o = self.opts
        self.options.update(time_limit_s=o.time_limit_s, mip_rel_gap=o.mip_rel_gap)
        if o.node_limit is not None:
            self.options["node_limit"] = o.node_limit

    def _options(self, state: RoundState, problem: AllocationProblem) -> dict[str, Any]:
        opts = dict(self.options)
        if problem.current.any() and problem.evaluator().violation(problem.current) == 0:
            opts.setdefault("warm_start", problem.current)
        return opts


class SiaPolicy(MilpPolicy):
    """The exact MILP with Sia's objective: p = -0.5, min-config normalisation, idle penalty 1.1,
    per-application restart delays (:meth:`goodopt.scenario.Objective.sia`)."""

    name = "sia"
    Options = SiaPolicyOptions


class GreedyPolicy(GoodputPolicy):
    name = "greedy"
    method = "greedy"


class EqualSharePolicy(GoodputPolicy):
    """Every active job an equal GPU count (within its limit), batch adapted by its agent."""

    name = "equal-share"
    method = "equal-share"
