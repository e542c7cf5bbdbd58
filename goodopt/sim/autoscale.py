"""Auto-scalers: how many nodes an elastic cluster should bill (see :mod:`goodopt.sim.elastic`).

An auto-scaler is consulted every ``every_s`` seconds of simulated time with
a :class:`ScaleState` and returns the number of nodes to bill; the allocation
policy then places jobs on the nodes that are provisioned. Three are shipped,
all for clusters of one node group (one GPU type):

``pollux``
    Pollux's utility band. The cluster *utility* of an allocation is each
    job's speedup over its GPU count (its fraction of ideal scaling) weighted
    by its share of the allocation's GPUs, i.e. ``sum_j speedup_j / G`` for
    the ``G`` GPUs of the nodes it uses. NSGA-II solves the round on the
    largest cluster for two objectives (fitness, nodes used); if the best
    allocation that fits the current size has a utility inside
    ``[min_utility, max_utility]`` (Pollux: [0.35, 0.65]) the size is kept,
    otherwise the front's allocation whose utility is nearest the band's
    centre (0.5) sets the new size.
``throughput``
    The throughput-only baseline of the cloud auto-scalers before Pollux:
    each job grows from one GPU, doubling while doubling gives at least
    ``min_gain`` (50%) more examples per second at a fixed per-GPU batch (its
    initial batch, as its agent's model predicts), up to the GPUs it may
    explore; the cluster is sized to fit the sum.
``exact``
    Size and allocation chosen together: for every size ``n`` allowed, the
    goodput MILP's optimum ``F_n`` on ``n`` nodes (the policy's objective with
    speedups over one GPU, one yardstick for every size), and the size
    maximising ``J * F_n - gpu_worth * G_n`` (``J`` active jobs, ``G_n`` GPUs). The cost
    term prices a GPU at ``gpu_worth`` units of speedup (its hourly price over
    the value of one job-speedup-hour); the default 0.5 is the centre of
    Pollux's utility band, so a GPU is kept when it adds at least half of an
    ideally scaling GPU.

Every auto-scaler returns a size within ``[min_nodes, all nodes]``; what it
would have wanted beyond the bounds is kept in ``last_stats['wanted']``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from goodopt import goodput as gp
from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import SimulationError, ValidationError
from goodopt.objective import Objective
from goodopt.solvers import solve
from goodopt.solvers.details import GeneticDetails
from goodopt.solvers.option_checks import MAX_POPULATION
from goodopt.validation import check_number, check_whole, suggest

from ..records import Record
from ..typed_options import TypedOptions
from .policies import goodput_problem
from .state import RoundState, SimJob

if TYPE_CHECKING:
    from goodopt.problem import AllocationProblem

    from .agent import JobAgent
    from .policies.policy import Policy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScaleState:
    """What an auto-scaler sees: the active jobs on the largest cluster and the nodes billed now."""

    time_s: float
    round_index: int
    cluster: Cluster  # the largest cluster allowed
    jobs: tuple[SimJob, ...]
    current: np.ndarray  # (J, N) on the largest cluster
    billed: int  # nodes provisioned or provisioning
    min_nodes: int
    objective: Objective  # the goodput objective of the allocation policy
    max_gpus: int | None = None  # the policy's cap on any job's GPUs

    @property
    def max_nodes(self) -> int:
        return self.cluster.n_nodes

    @property
    def gpus_per_node(self) -> int:
        return int(self.cluster.groups[0].gpus_per_node)

    def round_state(self, n_nodes: int) -> RoundState:
        """The round's allocation state on the first ``n_nodes`` nodes (jobs holding GPUs beyond them lose
        their whole allocation, as they would restart)."""
        g = self.cluster.groups[0]
        current = self.current[:, :n_nodes].copy()
        current[self.current[:, n_nodes:].sum(axis=1) > 0] = 0
        cluster = self.cluster if n_nodes == self.max_nodes else \
            Cluster((NodeGroup(g.gpu_type, g.gpus_per_node, n_nodes, g.prefix),))
        return RoundState(self.time_s, self.round_index, cluster, self.jobs, current, None)


@dataclass(frozen=True, kw_only=True)
class AutoscalerOptions(TypedOptions):
    """``every_s``: simulated seconds between two consultations of the auto-scaler."""

    every_s: float = 300.0

    prefix: ClassVar[str] = "autoscale_options"

    def __post_init__(self) -> None:
        check_number(f"{self.prefix}.every_s", self.every_s, minimum=0, strict=True)


@dataclass(frozen=True, kw_only=True)
class PolluxScalerOptions(AutoscalerOptions):
    """Pollux's utility band ``[min_utility, max_utility]`` and its NSGA-II's ``pop_size`` and ``n_gen``."""

    min_utility: float = 0.35
    max_utility: float = 0.65
    pop_size: int = 50
    n_gen: int = 50

    def __post_init__(self) -> None:
        super().__post_init__()
        at = f"{self.prefix}."
        lo = check_number(at + "min_utility", self.min_utility, minimum=0, strict=True)
        check_number(at + "max_utility", self.max_utility, minimum=lo, strict=True)
        check_whole(at + "pop_size", self.pop_size, 2, MAX_POPULATION)
        check_whole(at + "n_gen", self.n_gen, 2)


@dataclass(frozen=True, kw_only=True)
class ThroughputScalerOptions(AutoscalerOptions):
    """``min_gain``: the throughput gain that doubles a job's GPUs."""

    min_gain: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number(f"{self.prefix}.min_gain", self.min_gain, minimum=0)


@dataclass(frozen=True, kw_only=True)
class ExactScalerOptions(AutoscalerOptions):
    """``gpu_worth`` (a GPU's price in units of speedup) and the MILP's ``node_limit`` and ``time_limit_s``."""

    gpu_worth: float = 0.5
    node_limit: int = 2000
    time_limit_s: float = 10.0

    def __post_init__(self) -> None:
        super().__post_init__()
        at = f"{self.prefix}."
        check_number(at + "gpu_worth", self.gpu_worth, minimum=0)
        check_number(at + "time_limit_s", self.time_limit_s, minimum=0, strict=True)
        check_whole(at + "node_limit", self.node_limit, 1)


class Autoscaler:
    """Base class: see the module docstring. An auto-scaler declares its options as a frozen
    :class:`AutoscalerOptions` subclass (``Options``), read as ``self.opts``."""

    name = "autoscaler"
    Options: ClassVar[type[AutoscalerOptions]] = AutoscalerOptions
    opts: AutoscalerOptions

    def __init__(self, **options: Any) -> None:  # Any: option values, checked by the options class
        self.opts = self.Options.build(options, owner=f"the {self.name} auto-scaler", listed_as=self.name)
        self.last_stats: dict[str, Any] = {}
        self.rng: np.random.Generator | None = None

    def reset(self, cluster: Cluster, rng: np.random.Generator) -> None:
        """Start a new run on the largest cluster ``cluster``."""
        check_one_group(cluster)
        self.rng, self.last_stats = rng, {}

    def target(self, state: ScaleState) -> int:
        """Nodes to bill from now on, within ``[state.min_nodes, state.max_nodes]``."""
        self.last_stats = {}
        wanted = self.wanted(state)
        self.last_stats["wanted"] = wanted
        return int(min(max(wanted, state.min_nodes), state.max_nodes))

    def wanted(self, state: ScaleState) -> int:
        raise NotImplementedError

    def describe(self) -> Record:
        return {"name": self.name, **self.opts.as_dict()}

    def generator(self) -> np.random.Generator:
        """The run's generator, given by :meth:`reset` (refused before it)."""
        if self.rng is None:
            raise SimulationError(f"the {self.name} auto-scaler was not reset: reset(cluster, rng) gives it the "
                                  "run's generator")
        return self.rng


class PolluxAutoscaler(Autoscaler):
    """Pollux's utility band over the NSGA-II front (see the module docstring)."""

    name = "pollux"
    Options = PolluxScalerOptions
    opts: PolluxScalerOptions

    def wanted(self, state: ScaleState) -> int:
        if not state.jobs:
            return state.min_nodes

        problem = goodput_problem(state.round_state(state.max_nodes), state.objective, state.max_gpus)
        res = solve(problem, "nsga2", {"pop_size": self.opts.pop_size, "n_gen": self.opts.n_gen,
                                       "seed": int(self.generator().integers(2**31 - 1))})
        front = res.details(GeneticDetails).pareto_allocations
        if front is None or not len(front):
            return state.billed
        ev = problem.evaluator().evaluate(front)
        nodes = (front.sum(axis=1) > 0).sum(axis=1)
        ok = (ev.violation == 0) & (nodes > 0)
        if not ok.any():
            return state.billed
        nodes = nodes[ok]
        utility = one_gpu_speedups(problem, front[ok], state).sum(axis=1) / (nodes * state.gpus_per_node)
        size, here = utility_band_size(nodes, ev.fitness[ok], utility, state.billed,
                                       (float(self.opts.min_utility), float(self.opts.max_utility)))
        if here is not None:
            self.last_stats["utility"] = here
        return size


def one_gpu_speedups(problem: AllocationProblem, allocations: np.ndarray, state: ScaleState) -> np.ndarray:
    """Each job's goodput over its goodput on one GPU, without re-allocation factors: the ideal-scaling
    yardstick of Pollux's utility. Shapes: allocations (P, J, N) -> (P, J)."""
    one = goodput_problem(state.round_state(problem.n_nodes), dataclasses.replace(state.objective, base="one-gpu"),
                          state.max_gpus)
    one = dataclasses.replace(one, realloc=np.ones_like(one.realloc))
    return one.evaluator().speedups(allocations)


def utility_band_size(nodes: np.ndarray, fitness: np.ndarray, utility: np.ndarray, billed: int,
                      band: tuple[float, float]) -> tuple[int, float | None]:
    """Pollux's rule on a front of allocations: ``billed`` when the fittest allocation on at most ``billed``
    nodes has a utility in ``band``, else the node count of the allocation whose utility is nearest the band's
    centre (fewer nodes on ties); with the utility at the current size (None if no allocation fits it).

    Shapes: nodes, fitness, utility (P,) for the P allocations of the front.
    """
    lo, hi = band
    nodes, fitness, utility = (np.asarray(a) for a in (nodes, fitness, utility))
    fits = np.flatnonzero(nodes <= billed)
    here = None
    if len(fits):
        here = float(utility[fits[np.argmax(fitness[fits])]])
        if lo <= here <= hi:
            return int(billed), here
    best = np.lexsort((nodes, np.abs(utility - (lo + hi) / 2)))[0]
    return int(nodes[best]), here


class ThroughputAutoscaler(Autoscaler):
    """Each job sized by throughput alone, the cluster sized to fit (see the module docstring)."""

    name = "throughput"
    Options = ThroughputScalerOptions
    opts: ThroughputScalerOptions

    def job_gpus(self, job: SimJob, gpus_per_node: int, cap: int) -> int:
        """GPUs the throughput rule gives ``job``: double while throughput grows by ``min_gain``."""
        if job.fixed_gpus is not None:
            return int(job.fixed_gpus)
        agent = cast("JobAgent", job.agent)  # an elastic cluster has one GPU type (check_one_group): one-type agents
        app, params = agent.app, agent.refit()
        local = min(app.init_batch_size, app.max_local_bsz)
        limit = min(cap, agent.gpu_limit(), max(app.max_batch_size // max(local, 1), 1))
        k = 1
        while 2 * k <= limit:
            now, more = (gp.throughput(params, local, 0, kk, kk > gpus_per_node) for kk in (k, 2 * k))
            if not more >= (1 + self.opts.min_gain) * now:
                break
            k *= 2
        return k

    def wanted(self, state: ScaleState) -> int:
        gpn = state.gpus_per_node
        cap = state.cluster.n_gpus if state.max_gpus is None else min(state.cluster.n_gpus, state.max_gpus)
        total = sum(self.job_gpus(job, gpn, cap) for job in state.jobs)
        self.last_stats["gpus_wanted"] = total
        return math.ceil(total / gpn)


class ExactAutoscaler(Autoscaler):
    """The goodput MILP at every allowed size, the best fitness net of the GPUs' cost (see the module docstring)."""

    name = "exact"
    Options = ExactScalerOptions
    opts: ExactScalerOptions

    def value(self, state: ScaleState, n: int) -> float:
        """``J * F_n - gpu_worth * G_n`` at ``n`` nodes (-inf when the MILP finds no feasible allocation).

        Speedups are over one GPU here, whatever the policy's base: a fair share shrinks with the cluster, so
        fitness over fair shares would not compare sizes on one yardstick."""
        objective = dataclasses.replace(state.objective, base="one-gpu")
        problem = goodput_problem(state.round_state(n), objective, state.max_gpus)
        res = solve(problem, "milp", {"time_limit_s": float(self.opts.time_limit_s),
                                      "node_limit": int(self.opts.node_limit)})
        if not res.has_solution or not res.feasible:
            log.warning("exact auto-scaler: no allocation on %d nodes (%s)", n, res.status)
            return -math.inf
        if res.gap is not None and res.gap > 1e-3:
            log.info("exact auto-scaler: %d nodes solved to gap %.3g (%s)", n, res.gap, res.status)
        return len(state.jobs) * float(res.fitness) - self.opts.gpu_worth * n * state.gpus_per_node

    def wanted(self, state: ScaleState) -> int:
        if not state.jobs:
            return state.min_nodes
        sizes = range(max(state.min_nodes, 1), state.max_nodes + 1)
        values = [self.value(state, n) for n in sizes]
        best = int(np.argmax(values))  # the first maximum: fewer nodes on ties
        self.last_stats["value"] = float(values[best])
        return sizes[best]


#: Auto-scalers by name.
AUTOSCALERS = {cls.name: cls for cls in (PolluxAutoscaler, ThroughputAutoscaler, ExactAutoscaler)}


def check_one_group(cluster: Cluster, where: str = "autoscale") -> None:
    """The auto-scalers size one node group (one GPU type)."""
    if len(cluster.groups) != 1:
        raise ValidationError(where, f"auto-scaling sizes one node group; the cluster has {len(cluster.groups)} "
                              f"({cluster.describe()})", "simulate an elastic cluster of one GPU type")


def check_elastic(policy: Policy, autoscale: str, where: str = "autoscale") -> None:
    """An auto-scaler needs a policy that plans on whatever nodes are provisioned (the goodput policies)."""
    if autoscale != "none" and not getattr(policy, "elastic", False):
        raise ValidationError(where, f"the {policy.name!r} policy plans on a fixed cluster, which auto-scaling "
                              f"({autoscale}) does not give it",
                              "auto-scale with a goodput policy: pollux, milp, sia, greedy or equal-share")


def make_autoscaler(name: str, **options: Any) -> Autoscaler:  # Any: option values, checked by the auto-scaler
    """An auto-scaler by name with its options (unknown names and options are errors)."""
    if name not in AUTOSCALERS:
        raise ValidationError("autoscale", f"unknown auto-scaler {name!r}",
                              f"{suggest(name, AUTOSCALERS)}choose one of {', '.join(AUTOSCALERS)} (or none)")
    return AUTOSCALERS[name](**options)
