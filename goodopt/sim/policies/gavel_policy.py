"""``gavel``: one of Gavel's time-fraction policies on the jobs' true throughputs, realised by the round
mechanism every ``round_s`` seconds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from goodopt.errors import ValidationError
from goodopt.gavel import PACKED, POLICY_NAMES, ThroughputMatrix, check_entities, entity_fields
from goodopt.gavel.round_mechanism import RoundMechanism, current_types, place_round
from goodopt.placement import packed_placement
from goodopt.solvers.gavel import check_policy_options, solve_gavel
from goodopt.validation import suggest

from ...records import Record
from .policy import Policy, SimPolicyOptions

if TYPE_CHECKING:
    from goodopt.cluster import Cluster

    from ..state import RoundState
    from ..workload import Workload


# --------------------------------------------------------------------- Gavel
@dataclass(frozen=True, kw_only=True)
class GavelPolicyOptions(SimPolicyOptions):
    """``policy`` (one of :data:`goodopt.gavel.POLICY_NAMES` but the space-sharing ones), ``round_s``, the
    policy's LP ``options`` and ``entities`` (name -> {weight, policy: fairness | fifo}), which weigh the
    workload's ``entity`` column for ``policy="max_min_fairness_water_filling"``."""

    policy: str = "max_min_fairness"
    round_s: float = 360.0
    options: Mapping[str, Any] = field(default_factory=dict)
    entities: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        at, policy = f"{self.prefix}.", self.policy
        if policy not in POLICY_NAMES:
            raise ValidationError(at + "policy", f"unknown Gavel policy {policy!r}",
                                  f"{suggest(str(policy), POLICY_NAMES)}choose one of {list(POLICY_NAMES)}")
        if policy in PACKED:
            raise ValidationError(at + "policy", f"{policy!r} shares GPUs between job pairs, whose throughputs "
                                  "together only Gavel's job types have", f"simulate Gavel's jobs with a rigid sweep "
                                  f"(kind: rigid), or use {PACKED[policy]!r} here")
        round_s = self.round_s
        if isinstance(round_s, bool) or not isinstance(round_s, (int, float)) or not 0 < round_s <= 1e6:
            raise ValidationError(at + "round_s", f"must be a number of seconds in (0, 1e6], got {round_s!r}")
        check_entities(dict(self.entities))
        check_policy_options(policy, dict(self.options))


class GavelPolicy(Policy):
    """A Gavel policy on oracle throughputs, realised by the round mechanism (see the module docstring).

    ``policy`` is any of :data:`goodopt.solvers.gavel.POLICIES`; the time
    fractions are recomputed when the set of active jobs changes.
    """

    name = "gavel"
    Options = GavelPolicyOptions
    opts: GavelPolicyOptions
    adaptive_batch = False
    needs_oracle = True
    hetero_aware = True

    def __init__(self, **options: Any) -> None:  # Any: option values, checked by the options class
        super().__init__(**options)
        self.entities = check_entities(dict(self.opts.entities))

    def check_workload(self, workload: Workload, cluster: Cluster,
                       fixed_gpus: dict[str, int] | None = None) -> None:
        """Gavel runs a job on one GPU type: a job asking for more GPUs than any type has never runs."""
        largest = max(cluster.gpus_of_type(t) for t in cluster.gpu_type_names)
        for job in workload.jobs:
            if (fixed_gpus or {}).get(job.application, job.num_replicas) > largest:
                raise ValidationError(f"{job.where}.num_replicas",
                                      f"requests {job.num_replicas} GPUs but no GPU type of the cluster has more "
                                      f"than {largest} (Gavel runs a job on one type)",
                                      "use a larger cluster, another policy, or edit the workload")

    def describe(self) -> Record:
        """The policy's name and options, for run metadata."""
        return {"name": self.name, "policy": self.opts.policy, "round_s": self.opts.round_s,
                "options": dict(self.opts.options), "entities": {name: dict(s) for name, s in self.entities}}

    def reset(self, cluster: Cluster, rng: np.random.Generator) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        self.types = cluster.gpu_type_names
        self.node_type = np.array([self.types.index(t) for t in cluster.node_gpu_types], dtype=np.int64)
        self.capacity = np.array([cluster.gpus_of_type(t) for t in self.types], dtype=np.int64)
        self.mechanism = RoundMechanism(self.types)
        self._names: tuple[str, ...] = ()
        self._x: np.ndarray | None = None
        self._next_round_s = -np.inf

    def matrix(self, state: RoundState) -> ThroughputMatrix:
        """Jobs x types throughput (steps/s at the requested GPUs, fixed batch, packed). Shapes: (J, K)."""
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
                app = state.oracle.on(job.application, t) if len(self.types) > 1 else state.oracle[job.application]
                local, accum = app.fixed_config(job.batch_size, scale[j],
                                                single_gpu_accumulation=state.settings.single_gpu_accumulation)
                thr[j, k] = 1.0 / app.iteration_time(packed_placement(scale[j], self.cluster.max_gpus_per_node(t)),
                                                     local, accum)
            app0 = state.oracle[job.application]
            remaining[j] = max(app0.remaining_steps(job.progress, job.epoch, job.batch_size), 1e-9)
        return ThroughputMatrix(job_names=tuple(job.name for job in state.jobs), type_names=self.types,
                                throughput=thr, scale_factor=scale, capacity=self.capacity,
                                remaining_steps=remaining,
                                elapsed_s=np.array([max(state.time_s - job.arrival_s, 0.0) for job in state.jobs]),
                                arrival_order=np.arange(J), **entity_fields(self.entities, state.jobs))

    def allocate(self, state: RoundState) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        names = tuple(job.name for job in state.jobs)
        if state.time_s < self._next_round_s - 1e-9:
            self.last_stats = {}
            return state.current  # between Gavel rounds allocations stand (finished jobs are gone)
        self._next_round_s = state.time_s + self.opts.round_s
        mx = self.matrix(state)
        if names != self._names or self._x is None:
            self.mechanism.forget(set(self.mechanism.rounds) - set(names))
            res = solve_gavel(mx, self.opts.policy, dict(self.opts.options))
            self._x, self._names = res.x, names
            self.last_stats = {"lp_s": res.seconds, "objective": res.fun}
        assigned = self.mechanism.assign(names, self._x, mx.scale_factor, self.capacity,
                                         current_types(self.node_type, state.current))
        alloc, failed = place_round(self.node_type, self.cluster.node_capacity, assigned, mx.scale_factor,
                                    state.current)
        assigned[failed] = -1
        self.mechanism.record(names, assigned, self.opts.round_s)
        self.last_stats["n_unplaced"] = len(failed)
        return alloc
