"""Seeded generation of random scenarios (clusters, job mixes, current allocations).

All randomness comes from a ``numpy.random.Generator`` built from the seed, so
the same seed gives the same scenario.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .cluster import Cluster, NodeGroup
from .errors import ValidationError
from .placement import place_one
from .profiles import shipped_profile
from .records import RecordIn
from .scenario import Job, Objective, Scenario

#: Application mix of the Pollux evaluation workloads (jobs per 160, workload 6).
POLLUX_MIX = {"cifar10": 67, "ncf": 54, "deepspeech2": 16, "bert": 15, "yolov3": 5, "imagenet": 3}
#: GPU counts users request, with Philly-like frequencies.
_REQUEST_GPUS = np.array([1, 2, 4, 8, 16])
_REQUEST_P = np.array([0.45, 0.2, 0.2, 0.1, 0.05])


def _rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        raise ValidationError("seed", "a seed is required", "pass an int or a numpy Generator")
    return np.random.default_rng(seed)


def _place_running(node_type: np.ndarray, free: np.ndarray, g: int, k: int,
                   multi_used: np.ndarray) -> np.ndarray | None:
    """A running job's packed row: ``k`` GPUs of type ``g`` on one node (best fit, ties to the lowest-numbered
    node), else on the freest nodes no other multi-node job uses; ``None`` if impossible. ``free`` and
    ``multi_used`` are updated on success. Shapes: (N,) arrays -> row (N,) or None."""
    row = place_one(node_type, free, np.zeros(len(free), dtype=bool), g, k, False)
    if row is None and k > 1:
        row = place_one(node_type, free, multi_used, g, k, True)
        if row is not None:
            multi_used |= row > 0
    if row is not None:
        free -= row
    return row


def random_scenario(seed: int | np.random.Generator, cluster: Cluster, n_jobs: int, *,
                    mix: Mapping[str, float] | None = None, running_fraction: float = 0.6,
                    objective: Objective | None = None, max_gpus: int | None = None,
                    name: str = "random", profiles: RecordIn | None = None) -> Scenario:
    """A random scheduling round on ``cluster`` with ``n_jobs`` jobs.

    Applications are drawn from ``mix`` (default: the Pollux workload mix),
    ages up to 8 h, re-allocation counts ~ Poisson(age / 1 h), training
    progress uniform in the first 90% of the target epochs. About
    ``running_fraction`` of the jobs hold a packed current allocation of a
    Philly-like requested size where it fits; the rest are queued.
    """
    if n_jobs < 1:
        raise ValidationError("n_jobs", f"must be >= 1, got {n_jobs}")
    rng = _rng(seed)
    weight_of = dict(mix or POLLUX_MIX)
    apps = sorted(weight_of)
    weights = np.array([weight_of[a] for a in apps], dtype=float)
    profiles = dict(profiles or {a: shipped_profile(a) for a in apps})
    app_idx = rng.choice(len(apps), size=n_jobs, p=weights / weights.sum())
    ages = rng.uniform(0, 8 * 3600, size=n_jobs).round(0)
    reallocs = rng.poisson(ages / 3600.0)
    progress = rng.uniform(0, 0.9, size=n_jobs)
    running = rng.random(n_jobs) < running_fraction
    requests = rng.choice(_REQUEST_GPUS, size=n_jobs, p=_REQUEST_P)
    types = cluster.gpu_type_names
    job_types = rng.choice(len(types), size=n_jobs)
    free = cluster.node_capacity.copy()
    multi_used = np.zeros(cluster.n_nodes, dtype=bool)
    node_type = np.array([types.index(t) for t in cluster.node_gpu_types])
    jobs = []
    for j in range(n_jobs):
        app = apps[app_idx[j]]
        prof = profiles[app]
        gpu_type = types[job_types[j]]
        alloc = {}
        if running[j] and gpu_type in prof.gpu_types:
            k = int(min(requests[j], max_gpus or requests[j]))
            row = _place_running(node_type, free, job_types[j], k, multi_used)
            if row is not None:
                alloc = {cluster.node_names[n]: int(row[n]) for n in np.flatnonzero(row)}
        jobs.append(Job(
            name=f"{app}-{j}", application=app, age_s=float(ages[j]),
            n_reallocs=int(reallocs[j]) if alloc else int(min(reallocs[j], 1)),
            allocation=alloc, max_gpus=max_gpus,
            epoch=round(float(progress[j] * prof.target_epochs), 2),
        ))
    return Scenario(cluster=cluster, jobs=tuple(jobs), profiles=profiles,
                    objective=objective or Objective(), name=name)


def testbed_cluster(n_nodes: int = 16, gpus_per_node: int = 4, gpu_type: str = "t4") -> Cluster:
    """The Pollux testbed: 16 nodes x 4 T4 by default."""
    return Cluster((NodeGroup(gpu_type, gpus_per_node, n_nodes),))
