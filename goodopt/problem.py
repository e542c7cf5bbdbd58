"""The allocation problem as validated arrays, with per-job speedup tables.

For job ``j``, GPU type ``g``, GPU count ``k`` and ``multi`` (more than one
node), the tables hold the best goodput over candidate batch sizes and the
speedup ``S = goodput / base goodput``. The base is the job's fair share
(``ceil(total GPUs / n_jobs)`` GPUs, clamped to the job's ``[min_gpus,
max_gpus]`` and to the largest count at which it has a valid batch, on the
fewest nodes of the base GPU type that hold them), one GPU, or (Sia's
``min-config``) the job's smallest positive goodput on any type. ``S(0) = 0``.
A job's base GPU type is the objective's ``base_gpu_type`` (default: the
cluster's most numerous type) when its profile covers that type, otherwise
the first cluster type its profile covers.

A job cannot use GPU types its profile does not cover (speedup 0 there), nor
GPU counts at which no candidate batch is valid (speedup 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from .arrays import ArrayIn
from .cluster import Cluster
from .errors import ScenarioError, ShapeError, ValidationError
from .evaluator import Evaluator
from .fitness import realloc_factor
from .objective import Objective
from .profiles import ThroughputProfile
from .speedup_tables import app_pairs, base_configs, goodput_tables
from .validation import MAX_WHOLE


@dataclass(frozen=True, eq=False)
class AllocationProblem:
    """One scheduling round: jobs x nodes, with everything the evaluator needs.

    Arrays (J jobs, N nodes, G GPU types, K = largest GPU count in a table):

    * ``node_capacity`` (N,), ``node_type`` (N,) index into ``type_names``;
    * ``current`` (J, N) current allocation; ``realloc`` (J,) re-allocation factors;
    * ``weights``, ``min_gpus``, ``max_gpus`` (J,);
    * ``goodput_table``, ``speedup_table``, ``local_bsz_table``,
      ``accum_steps_table`` (J, G, K + 1, 2) indexed ``[j, g, k, multi]``;
    * ``base_goodput`` (J,), ``base_gpus`` (J,), ``base_type`` (J,).
    """

    job_names: tuple[str, ...]
    node_names: tuple[str, ...]
    type_names: tuple[str, ...]
    node_type: np.ndarray
    node_capacity: np.ndarray
    current: np.ndarray
    realloc: np.ndarray
    weights: np.ndarray
    min_gpus: np.ndarray
    max_gpus: np.ndarray
    goodput_table: np.ndarray
    speedup_table: np.ndarray
    local_bsz_table: np.ndarray
    accum_steps_table: np.ndarray
    base_goodput: np.ndarray
    base_gpus: np.ndarray
    base_type: np.ndarray
    p: float = -1.0
    eps: float = 1e-3
    interference_avoidance: bool = True
    applications: tuple[str, ...] = field(default=())
    #: Each job's entity (user or group; "" = none), for Gavel's hierarchical policies.
    entities: tuple[str, ...] = field(default=())
    #: Value an idle job (no GPUs) enters the power mean with; None = ``eps``
    #: (see :attr:`goodopt.scenario.Objective.idle_penalty`).
    idle_value: float | None = None
    #: Space sharing of throughput-only applications, as measured: ``(app_a, app_b)`` -> (G, 2) each member's
    #: steps/s together on one GPU of each type over its own steps/s alone there (0 where not measured).
    app_pairs: Mapping[tuple[str, str], np.ndarray] = field(default_factory=dict)

    # ----------------------------------------------------------- properties
    @property
    def n_jobs(self) -> int:
        return len(self.job_names)

    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def n_gpu_types(self) -> int:
        return len(self.type_names)

    @property
    def n_gpus(self) -> int:
        return int(self.node_capacity.sum())

    @cached_property
    def gpu_types(self) -> tuple[str, ...]:
        """GPU type name of each node. Shapes: (N,)."""
        return tuple(self.type_names[t] for t in self.node_type)

    def permuted(self, jobs: Any, nodes: Any) -> AllocationProblem:  # Any: index arrays (array-likes)
        """The same problem with its jobs in the order ``jobs`` and its nodes in the order ``nodes`` (each a
        permutation of ``range(J)``, ``range(N)``): an allocation ``x`` of this problem is
        ``x[jobs][:, nodes]`` there, with the same fitness. Shapes: jobs (J,), nodes (N,)."""
        j, n = np.asarray(jobs, np.int64), np.asarray(nodes, np.int64)
        if sorted(j.tolist()) != list(range(self.n_jobs)) or sorted(n.tolist()) != list(range(self.n_nodes)):
            raise ValidationError("permutation", "jobs and nodes must be permutations of the job and node indices")
        by_job = ("realloc", "weights", "min_gpus", "max_gpus", "goodput_table", "speedup_table", "local_bsz_table",
                  "accum_steps_table", "base_goodput", "base_gpus", "base_type")
        changes: dict[str, Any] = {f: getattr(self, f)[j] for f in by_job}
        changes.update(job_names=tuple(self.job_names[i] for i in j), node_names=tuple(self.node_names[i] for i in n),
                       node_type=self.node_type[n], node_capacity=self.node_capacity[n], current=self.current[j][:, n])
        for f in ("applications", "entities"):
            if getattr(self, f):
                changes[f] = tuple(getattr(self, f)[i] for i in j)
        return replace(self, **changes)

    @property
    def idle(self) -> float:
        """What a job holding no GPUs enters the power mean with (``eps`` unless penalised)."""
        return self.eps if self.idle_value is None else float(self.idle_value)

    def shifted(self, speedup: ArrayIn) -> np.ndarray:
        """Power-mean argument of speedups: ``S + eps`` when ``S > 0``, else :attr:`idle`.

        Shapes: (...) -> (...).
        """
        s = np.asarray(speedup, dtype=float)
        if self.idle_value is None:
            return s + self.eps
        return np.where(s > 0, s + self.eps, self.idle)

    @property
    def max_k(self) -> int:
        """Largest GPU count covered by the tables."""
        return self.speedup_table.shape[2] - 1

    def evaluator(self) -> Evaluator:
        """The vectorised evaluator of this problem."""
        return Evaluator(self)

    # --------------------------------------------------------- conversions
    def allocation_from_mapping(self, mapping: Mapping[str, Mapping[str, int]]) -> np.ndarray:
        """Dense (J, N) allocation from ``{job: {node: gpus}}`` (missing = 0)."""
        a = np.zeros((self.n_jobs, self.n_nodes), dtype=np.int64)
        jidx = {n: i for i, n in enumerate(self.job_names)}
        nidx = {n: i for i, n in enumerate(self.node_names)}
        if not isinstance(mapping, dict):
            raise ScenarioError("allocation", "must map job name -> {node name: GPUs}")
        for job, row in mapping.items():
            if job not in jidx:
                raise ScenarioError(f"allocation.{job}", "unknown job", f"jobs are {list(self.job_names)[:5]}...")
            if not isinstance(row, dict):
                raise ScenarioError(f"allocation.{job}", "must map node name -> GPUs")
            for node, gpus in row.items():
                if node not in nidx:
                    raise ScenarioError(f"allocation.{job}.{node}", "unknown node",
                                        f"nodes are named like {self.node_names[0]!r}")
                if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= MAX_WHOLE:
                    raise ScenarioError(f"allocation.{job}.{node}", f"must be a whole number >= 0, got {gpus!r}",
                                        "an allocation over a node's capacity is reported as infeasible")
                a[jidx[job], nidx[node]] = gpus
        return a

    def allocation_to_mapping(self, alloc: ArrayIn) -> dict[str, dict[str, int]]:
        """``{job: {node: gpus}}`` with only non-zero entries. Shapes: (J, N) ->."""
        alloc = self.check_allocation(alloc)
        return {
            job: {self.node_names[n]: int(alloc[j, n]) for n in np.flatnonzero(alloc[j])}
            for j, job in enumerate(self.job_names)
        }

    def check_allocation(self, pop: ArrayIn) -> np.ndarray:
        """Coerce an allocation (J, N) or population (P, J, N) to int64, or raise.

        Shapes: (J, N) or (P, J, N) -> same.
        """
        a = np.asarray(pop)
        if a.ndim not in (2, 3) or a.shape[-2:] != (self.n_jobs, self.n_nodes):
            raise ShapeError(
                f"allocation must have shape (J, N) = ({self.n_jobs}, {self.n_nodes}) or (P, J, N), got {a.shape}"
            )
        if a.dtype.kind in "iu":
            return a  # any integer dtype is used as is (no copy in the hot path)
        if a.dtype.kind == "b" or a.dtype.kind not in "f":
            raise ShapeError(f"allocation must hold whole numbers of GPUs, got dtype {a.dtype}")
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise ShapeError("allocation must hold whole numbers of GPUs (found fractions or NaN)")
        return a.astype(np.int64)

    # ----------------------------------------------------------- building
    @classmethod
    def from_scenario(cls, scenario: Any) -> AllocationProblem:  # scenario: a Scenario (the scenario module imports this one)
        """Validate a :class:`~goodopt.scenario.Scenario` and build its arrays and speedup tables (typed ``Any``:
        the scenario module builds its problems through this one, and an import back would close a circle)."""
        cl, obj, jobs = scenario.cluster, scenario.objective, scenario.jobs
        current = np.zeros((len(jobs), cl.n_nodes), dtype=np.int64)
        nidx = {n: i for i, n in enumerate(cl.node_names)}
        for j, job in enumerate(jobs):
            for node, gpus in job.allocation.items():
                current[j, nidx[node]] = gpus
        profiles = tuple(scenario.profiles[job.application] for job in jobs)
        columns = JobColumns(
            names=tuple(job.name for job in jobs),
            applications=tuple(job.application for job in jobs),
            profiles=profiles,
            current=current,
            realloc=np.array([float(realloc_factor(job.age_s, job.n_reallocs, obj.restart_delay_of(job.application)))
                              for job in jobs]),
            weights=np.array([job.weight for job in jobs], dtype=float),
            min_gpus=np.array([job.min_gpus for job in jobs], dtype=np.int64),
            max_gpus=np.array([min(job.max_gpus or cl.n_gpus, cl.n_gpus) for job in jobs], dtype=np.int64),
            phi=np.array([job.phi if job.phi is not None else float(prof.phi_at(job.epoch))
                          for job, prof in zip(jobs, profiles)]),
            entities=tuple(job.entity for job in jobs),
        )
        return cls.from_jobs(cl, obj, columns)

    @classmethod
    def from_jobs(cls, cluster: Cluster, objective: Objective, jobs: JobColumns) -> AllocationProblem:
        """The arrays and speedup tables of ``jobs`` (already checked, as columns) on ``cluster``.

        :meth:`from_scenario` reads a scenario's jobs into columns and calls this; the simulator builds the
        columns of a round straight from its state.
        """
        cl, obj = cluster, objective
        type_names = cl.gpu_type_names
        type_totals = np.array([cl.gpus_of_type(t) for t in type_names])
        max_gpus, profiles = jobs.max_gpus, jobs.profiles
        # Table extent: no job can use more GPUs than its max, the largest type, or its batch limits allow.
        useful = np.array([prof.max_gpus if isinstance(prof, ThroughputProfile)
                           else prof.max_batch_size // min(g.min_local_bsz for g in prof.gpu_types.values())
                           for prof in profiles])
        k_max = int(max(1, min(type_totals.max(), np.minimum(max_gpus, useful).max())))
        good, local, accum = goodput_tables(profiles, type_names, jobs.phi, k_max, obj.n_batch_candidates,
                                            k_caps=type_totals.tolist(),
                                            node_caps=[cl.max_gpus_per_node(t) for t in type_names])
        kk = np.arange(k_max + 1)
        # A job may not exceed its own max_gpus or its type's total.
        over = (kk[None, None, :] > max_gpus[:, None, None]) | (kk[None, None, :] > type_totals[None, :, None])
        good = np.where(over[..., None], 0.0, good)
        base_gpus, base_type, base_goodput = base_configs(obj, cl, jobs.names, profiles, good, jobs.min_gpus,
                                                          max_gpus, type_totals)
        return cls(
            job_names=jobs.names,
            node_names=cl.node_names,
            type_names=type_names,
            node_type=np.array([type_names.index(t) for t in cl.node_gpu_types], dtype=np.int64),
            node_capacity=cl.node_capacity.copy(),
            current=jobs.current,
            realloc=jobs.realloc,
            weights=jobs.weights,
            min_gpus=jobs.min_gpus,
            max_gpus=max_gpus,
            goodput_table=good,
            speedup_table=good / base_goodput[:, None, None, None],
            local_bsz_table=np.where(good > 0, local, 0),
            accum_steps_table=np.where(good > 0, accum, 0),
            base_goodput=base_goodput,
            base_gpus=base_gpus,
            base_type=base_type,
            p=obj.p,
            eps=obj.eps,
            interference_avoidance=obj.interference_avoidance,
            applications=jobs.applications,
            entities=jobs.entities,
            idle_value=obj.idle_value(),
            app_pairs=app_pairs(dict(zip(jobs.applications, profiles)), type_names),
        )


@dataclass(frozen=True, eq=False)
class JobColumns:
    """A round's jobs as columns, what :meth:`AllocationProblem.from_jobs` reads (checked by its caller).

    ``profiles`` holds each job's profile; ``max_gpus`` is already capped at the cluster's GPUs; ``realloc`` is
    each job's re-allocation factor and ``phi`` its gradient noise scale. Shapes: (J,) each, ``current`` (J, N).
    """

    names: tuple[str, ...]
    applications: tuple[str, ...]
    profiles: tuple[Any, ...]
    current: np.ndarray
    realloc: np.ndarray
    weights: np.ndarray
    min_gpus: np.ndarray
    max_gpus: np.ndarray
    phi: np.ndarray
    entities: tuple[str, ...]


def pinned_jobs(problem: AllocationProblem) -> list[int]:
    """Jobs whose re-allocation factor is 0 (``age_s <= n_reallocs * restart_delay_s``, e.g. the default
    ``age_s: 0``): any change to their allocation scores speedup 0, so they keep what they hold."""
    return [int(j) for j in np.flatnonzero(problem.realloc <= 0)]
