"""Fixed-size baselines (``optimus``, ``tiresias``, ``fifo``): each job at the workload's batch, placed as
Pollux's simulator placed them."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from goodopt.errors import ValidationError
from goodopt.placement import packed_placement, place_most_free, place_packed
from goodopt.validation import check_number

from .policy import Policy, SimPolicyOptions

if TYPE_CHECKING:
    from goodopt.cluster import Cluster

    from ..state import RoundState, SimJob
    from ..workload import Workload

#: Tiresias' attained-service threshold between its two queues (GPU-seconds).
TIRESIAS_THRESHOLD_GPU_S = 16 * 3600.0
#: Placements of the fixed-size policies (see :class:`FixedSizePolicy`).
PLACEMENTS = ("most-free", "packed")


@dataclass(frozen=True, kw_only=True)
class FixedSizeOptions(SimPolicyOptions):
    """``placement`` of new allocations: ``most-free`` or ``packed`` (see :class:`FixedSizePolicy`)."""

    placement: str = "most-free"

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            raise ValidationError(f"{self.prefix}.placement", f"unknown placement {self.placement!r}",
                                  f"choose one of {', '.join(PLACEMENTS)}")


@dataclass(frozen=True, kw_only=True)
class TiresiasOptions(FixedSizeOptions):
    """Tiresias' ``threshold_gpu_s``: the attained GPU-seconds that demote a job to the second queue."""

    threshold_gpu_s: float = TIRESIAS_THRESHOLD_GPU_S

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number(f"{self.prefix}.threshold_gpu_s", self.threshold_gpu_s, minimum=0.0, error=ValidationError)


# -------------------------------------------------------------- fixed size
class FixedSizePolicy(Policy):
    """Shared machinery: fixed batch, placements kept when sizes are unchanged, new ones placed by ``placement``.

    ``placement="most-free"`` (default, as Pollux's simulator placed its baselines): jobs in ascending size
    order, each taking GPUs from the node with the most free GPUs first; ``"packed"``: largest jobs first,
    each on one node if it fits (best fit), else on the fewest nodes.
    """

    Options = FixedSizeOptions
    opts: FixedSizeOptions
    adaptive_batch = False
    #: Whether a job that does not fit at its size may run on fewer GPUs.
    shrink_to_fit = False

    hetero_aware = False

    def reset(self, cluster: Cluster, rng: np.random.Generator) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        types = cluster.gpu_type_names
        self._node_type = np.array([types.index(t) for t in cluster.node_gpu_types], dtype=np.int64)

    def check_workload(self, workload: Workload, cluster: Cluster,
                       fixed_gpus: dict[str, int] | None = None) -> None:
        """A fixed-size policy never runs a job asking for more GPUs than the cluster has."""
        fixed = fixed_gpus or {}
        for job in workload.jobs:
            k = fixed.get(job.application) or job.num_replicas
            if k > cluster.n_gpus:
                raise ValidationError(f"{job.where}.num_replicas", f"requests {k} GPUs but the cluster has "
                                      f"{cluster.n_gpus}", "use a larger cluster, a goodput policy, or edit the "
                                      "workload")

    def _requested(self, job: SimJob) -> int:
        k = job.fixed_gpus or job.num_replicas
        if k > self.cluster.n_gpus:
            raise ValidationError(f"workload[{job.name}].num_replicas",
                                  f"requests {k} GPUs but the cluster has {self.cluster.n_gpus}",
                                  "use a larger cluster or edit the workload")
        return k

    def _place(self, state: RoundState, sizes: np.ndarray) -> np.ndarray:
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
        most_free = self.opts.placement == "most-free"
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

    def _oracle_steps(self, state: RoundState, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per job, from the truth: seconds per step at its ``k`` GPUs packed onto the fewest nodes, steps left
        and steps in all at its batch. Shapes: k (J,) -> three (J,)."""
        per_node = int(self.cluster.node_capacity.max())
        step, left, total = (np.zeros(len(k)) for _ in range(3))
        for j, job in enumerate(state.jobs):
            app = state.oracle[job.application]
            local, accum = app.fixed_config(job.batch_size, int(k[j]),
                                            single_gpu_accumulation=state.settings.single_gpu_accumulation)
            step[j] = app.iteration_time(packed_placement(int(k[j]), per_node), local, accum)
            left[j] = app.remaining_steps(job.progress, job.epoch, job.batch_size)
            total[j] = app.remaining_steps(0.0, 0, job.batch_size)
        return step, left, total

    def _admit(self, state: RoundState, order: Any, backfill: bool) -> np.ndarray:
        """Requested sizes for the jobs in ``order`` while GPUs last (``backfill``: skip a job that does not fit
        rather than stop there). Shapes: order (J,) -> (J,)."""
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

    def _place_admitted(self, state: RoundState, sizes: np.ndarray) -> np.ndarray:
        alloc = self._place(state, sizes)
        self.last_stats = {"n_unplaced": int(((alloc.sum(axis=1) == 0) & (sizes > 0)).sum())}
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

    def allocate(self, state: RoundState) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        truth, cl = state.oracle, self.cluster
        J, total = state.n_jobs, cl.n_gpus
        per_node = int(cl.node_capacity.max())
        sizes = np.zeros(J, dtype=np.int64)
        steps_left = np.zeros(J)
        limit = np.zeros(J, dtype=np.int64)
        for j, job in enumerate(state.jobs):
            app = truth[job.application]
            steps_left[j] = app.remaining_steps(job.progress, job.epoch, job.batch_size)
            limit[j] = job.fixed_gpus or max(1, min(job.batch_size // app.min_local_bsz, total))

        def t_rem(j: int, k: int) -> float:
            job = state.jobs[j]
            app = truth[job.application]
            placement = packed_placement(k, per_node)
            local, accum = app.fixed_config(job.batch_size, k,
                                            single_gpu_accumulation=state.settings.single_gpu_accumulation)
            return steps_left[j] * app.iteration_time(placement, local, accum)

        free = total
        for j in range(J):  # one GPU each, in arrival order
            if free == 0:
                break
            sizes[j], free = 1, free - 1
        heap: list[tuple[float, int]] = []
        for j in np.flatnonzero((sizes > 0) & (sizes < limit)).tolist():
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

    Options = TiresiasOptions
    opts: TiresiasOptions

    def __init__(self, **options: Any) -> None:  # Any: option values, checked by the options class
        super().__init__(**options)
        self._demoted: dict[str, float] = {}

    def reset(self, cluster: Cluster, rng: np.random.Generator) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        self._demoted = {}

    def allocate(self, state: RoundState) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        J = state.n_jobs
        queue = np.array([job.attained_gpu_s >= self.opts.threshold_gpu_s for job in state.jobs], dtype=int)
        for j in np.flatnonzero(queue):
            self._demoted.setdefault(state.jobs[j].name, state.time_s)
        demoted = np.array([self._demoted.get(job.name, 0.0) for job in state.jobs])
        # the first queue in arrival order, the second in order of demotion (then arrival)
        order = np.lexsort((np.arange(J), demoted, queue))
        sizes = self._admit(state, order, backfill=True)
        return self._place_admitted(state, sizes)

class FifoPolicy(FixedSizePolicy):
    """First-come first-served, non-preemptive, no backfilling (head-of-line blocking)."""

    name = "fifo"

    def allocate(self, state: RoundState) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        running = state.current.sum(axis=1) > 0
        order = np.concatenate([np.flatnonzero(running), np.flatnonzero(~running)])
        sizes = self._admit(state, order, backfill=False)
        return self._place_admitted(state, sizes)
