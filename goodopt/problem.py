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
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from . import goodput as gp
from .errors import ScenarioError, ShapeError
from .evaluator import Evaluator
from .fitness import realloc_factor
from .profiles import ThroughputProfile
from .validation import MAX_WHOLE

_TABLE_CHUNK = 2_000_000  # elements per vectorised block when building tables


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
    app_pairs: Mapping = field(default_factory=dict)

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

    @property
    def idle(self) -> float:
        """What a job holding no GPUs enters the power mean with (``eps`` unless penalised)."""
        return self.eps if self.idle_value is None else float(self.idle_value)

    def shifted(self, speedup: Any) -> np.ndarray:
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

    def allocation_to_mapping(self, alloc: Any) -> dict[str, dict[str, int]]:
        """``{job: {node: gpus}}`` with only non-zero entries. Shapes: (J, N) ->."""
        alloc = self.check_allocation(alloc)
        return {
            job: {self.node_names[n]: int(alloc[j, n]) for n in np.flatnonzero(alloc[j])}
            for j, job in enumerate(self.job_names)
        }

    def check_allocation(self, pop: Any) -> np.ndarray:
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
    def from_scenario(cls, scenario) -> AllocationProblem:
        """Validate a :class:`~goodopt.scenario.Scenario` and build its arrays and speedup tables."""
        cl, obj, jobs = scenario.cluster, scenario.objective, scenario.jobs
        type_names = cl.gpu_type_names
        node_type = np.array([type_names.index(t) for t in cl.node_gpu_types], dtype=np.int64)
        n_jobs = len(jobs)
        current = np.zeros((n_jobs, cl.n_nodes), dtype=np.int64)
        nidx = {n: i for i, n in enumerate(cl.node_names)}
        for j, job in enumerate(jobs):
            for node, gpus in job.allocation.items():
                current[j, nidx[node]] = gpus
        type_totals = np.array([cl.gpus_of_type(t) for t in type_names])
        max_gpus = np.array([min(job.max_gpus or cl.n_gpus, cl.n_gpus) for job in jobs], dtype=np.int64)
        min_gpus = np.array([job.min_gpus for job in jobs], dtype=np.int64)
        profiles = [scenario.profiles[job.application] for job in jobs]
        phi = np.array([job.phi if job.phi is not None else float(prof.phi_at(job.epoch))
                        for job, prof in zip(jobs, profiles)])

        # Table extent: no job can use more GPUs than its max, the largest type, or its batch limits allow.
        useful = np.array([prof.max_gpus if isinstance(prof, ThroughputProfile)
                           else prof.max_batch_size // min(g.min_local_bsz for g in prof.gpu_types.values())
                           for prof in profiles])
        k_max = int(max(1, min(type_totals.max(), np.minimum(max_gpus, useful).max())))
        tables = _goodput_tables(profiles, type_names, phi, k_max, obj.n_batch_candidates)
        good, local, accum = tables
        kk = np.arange(k_max + 1)
        # A job may not exceed its own max_gpus or its type's total.
        over = (kk[None, None, :] > max_gpus[:, None, None]) | (kk[None, None, :] > type_totals[None, :, None])
        good = np.where(over[..., None], 0.0, good)

        base_gpus, base_type, base_goodput = _base(scenario, good, type_names, min_gpus, max_gpus, type_totals)
        speedup = good / base_goodput[:, None, None, None]
        return cls(
            job_names=tuple(job.name for job in jobs),
            node_names=cl.node_names,
            type_names=type_names,
            node_type=node_type,
            node_capacity=cl.node_capacity.copy(),
            current=current,
            realloc=np.array([float(realloc_factor(job.age_s, job.n_reallocs, obj.restart_delay_of(job.application)))
                              for job in jobs]),
            weights=np.array([job.weight for job in jobs], dtype=float),
            min_gpus=min_gpus,
            max_gpus=max_gpus,
            goodput_table=good,
            speedup_table=speedup,
            local_bsz_table=np.where(good > 0, local, 0),
            accum_steps_table=np.where(good > 0, accum, 0),
            base_goodput=base_goodput,
            base_gpus=base_gpus,
            base_type=base_type,
            p=obj.p,
            eps=obj.eps,
            interference_avoidance=obj.interference_avoidance,
            applications=tuple(job.application for job in jobs),
            entities=tuple(job.entity for job in jobs),
            idle_value=obj.idle_value(),
            app_pairs=_app_pairs(scenario.profiles, {job.application for job in jobs}, type_names),
        )


def _app_pairs(profiles: Mapping, apps: set, type_names) -> dict:
    """Measured space sharing between the throughput-only applications ``apps`` (see
    :attr:`AllocationProblem.app_pairs`); ``{}`` when none has pair throughputs."""
    out: dict = {}
    app_of = {getattr(profiles[a], "name", a): a for a in apps}  # pairs name the other profile
    for a in sorted(apps):
        prof = profiles[a]
        for k, gpu in enumerate(type_names):
            solo_a = prof.rates.get(gpu, {}).get((1, False), 0.0) if isinstance(prof, ThroughputProfile) else 0.0
            for other, (with_a, with_b) in (prof.pairs.get(gpu, {}).items() if solo_a > 0 else ()):
                b = app_of.get(other)
                solo_b = profiles[b].rates.get(gpu, {}).get((1, False), 0.0) if b is not None else 0.0
                if solo_b > 0:
                    rel = out.setdefault((a, b), np.zeros((len(type_names), 2)))
                    rel[k] = (with_a / solo_a, with_b / solo_b)
    return out


def _goodput_tables(profiles, type_names, phi, k_max, n_candidates):
    """Best goodput, micro-batch and accumulation steps per (job, type, k, multi).

    Vectorised over jobs, GPU counts, node spread and candidates, in blocks of
    jobs sharing an (application, GPU type) pair.

    Shapes: -> three arrays (J, G, k_max + 1, 2).
    """
    n_jobs, n_types = len(profiles), len(type_names)
    shape = (n_jobs, n_types, k_max + 1, 2)
    good = np.zeros(shape)
    local = np.zeros(shape, dtype=np.int64)
    accum = np.zeros(shape, dtype=np.int64)
    k = np.arange(k_max + 1)[None, :, None]
    multi = np.array([False, True])[None, None, :]
    groups: dict[int, list[int]] = {}  # jobs sharing one profile object
    for j, prof in enumerate(profiles):
        groups.setdefault(id(prof), []).append(j)
    for members in groups.values():
        prof = profiles[members[0]]
        if isinstance(prof, ThroughputProfile):  # measured rates at a fixed batch, efficiency 1
            for g, t in enumerate(type_names):
                good[members, g] = prof.rate_table(t, k_max)[None]
                local[members, g] = np.where(good[members, g] > 0, prof.batch_size, 0)
            continue
        for g, t in enumerate(type_names):
            if t not in prof.gpu_types:
                continue
            gprof = prof.gpu_types[t]
            params = {n: v for n, v in zip(gp.ThroughputParams.names(), gprof.params.as_array())}
            idx = np.asarray(members)
            per_job = (k_max + 1) * 2 * n_candidates
            step = max(1, _TABLE_CHUNK // per_job)
            for start in range(0, len(idx), step):
                block = idx[start:start + step]
                out = gp.best_config(
                    params, k, multi, phi[block][:, None, None], prof.init_batch_size,
                    prof.max_batch_size, gprof.min_local_bsz, gprof.max_local_bsz,
                    n_candidates=n_candidates,
                )
                good[block, g], local[block, g], accum[block, g] = out
    # One GPU is never multi-node; multi-node with a single node is impossible. Keep both
    # columns consistent at k <= 1 so look-ups of degenerate rows stay well defined.
    good[:, :, :2, 1] = good[:, :, :2, 0]
    local[:, :, :2, 1] = local[:, :, :2, 0]
    return good, local, accum


def _base(scenario, good, type_names, min_gpus, max_gpus, type_totals):
    """Base configuration and goodput per job. Shapes: -> (J,) x 3."""
    obj, cl = scenario.objective, scenario.cluster
    n_jobs = len(scenario.jobs)
    if obj.base == "min-config":
        return _base_min_config(scenario, good)
    preferred = obj.base_gpu_type or type_names[int(np.argmax(type_totals))]
    fair = -(-cl.n_gpus // n_jobs) if obj.base == "fair-share" else 1
    base_gpus = np.zeros(n_jobs, dtype=np.int64)
    base_type = np.zeros(n_jobs, dtype=np.int64)
    base_goodput = np.zeros(n_jobs)
    for j, job in enumerate(scenario.jobs):
        prof = scenario.profiles[job.application]
        order = [preferred] + [t for t in type_names if t != preferred]
        for t in order:
            g = type_names.index(t)
            if t not in prof.gpu_types:
                continue
            base = _base_on_type(good[j, g], fair, max(min_gpus[j], 1), min(max_gpus[j], type_totals[g]),
                                 cl.max_gpus_per_node(t))
            if base is None:
                continue
            base_gpus[j], base_goodput[j] = base
            base_type[j] = g
            break
        else:
            raise ScenarioError(
                f"jobs[{j}].application",
                f"job {job.name!r} has no valid configuration on any GPU type of the cluster",
                "check its min/max GPUs and the profile's batch limits",
            )
    return base_gpus, base_type, base_goodput


def _base_on_type(good, fair, lo, hi, node_size):
    """Base ``(k, goodput)`` of one job on one type, or None when it has no valid count there.

    ``k`` is the fair share clamped to ``[lo, hi]``, then walked down to the
    nearest count that has a goodput on its own fewest-node spread (up, if
    none lies below); a job measured only at other spreads (a throughput-only
    job with a rate for 3 GPUs over two nodes and none on one) is based on
    its smallest measured count. Shapes: good (K + 1, 2).
    """
    ks = np.arange(good.shape[0])
    fewest_multi = (-(-ks // max(node_size, 1)) > 1).astype(np.int64)
    on_fewest = good[ks, fewest_multi]
    valid = np.flatnonzero((ks >= 1) & (on_fewest > 0))
    if len(valid):
        k = int(np.clip(fair, lo, max(min(hi, int(valid.max())), lo)))
        below, above = valid[valid <= k], valid[valid > k]
        k = int(below[-1]) if len(below) else int(above[0])
        return k, float(on_fewest[k])
    any_spread = np.flatnonzero((ks >= 1) & (good.max(axis=1) > 0))
    if not len(any_spread):
        return None
    k = int(any_spread[0])
    return k, float(good[k, 0] if good[k, 0] > 0 else good[k, 1])


def _base_min_config(scenario, good):
    """Sia's normalisation: each job's smallest positive goodput over all types and counts.

    Shapes: good (J, G, K + 1, 2) -> (J,) x 3.
    """
    J, G, K1, _ = good.shape
    flat = np.where(good > 0, good, np.inf).reshape(J, -1)
    idx = flat.argmin(axis=1)
    value = flat[np.arange(J), idx]
    bad = np.flatnonzero(~np.isfinite(value))
    if len(bad):
        j = int(bad[0])
        raise ScenarioError(f"jobs[{j}].application",
                            f"job {scenario.jobs[j].name!r} has no valid configuration on any GPU type of the cluster",
                            "check its min/max GPUs and the profile's batch limits")
    g, k, _ = np.unravel_index(idx, (G, K1, 2))
    return k.astype(np.int64), g.astype(np.int64), value


def pinned_jobs(problem: AllocationProblem) -> list[int]:
    """Jobs whose re-allocation factor is 0 (``age_s <= n_reallocs * restart_delay_s``, e.g. the default
    ``age_s: 0``): any change to their allocation scores speedup 0, so they keep what they hold."""
    return [int(j) for j in np.flatnonzero(problem.realloc <= 0)]
