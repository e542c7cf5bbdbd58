"""Conversions between goodopt's allocation problems and Gavel's matrices and scenarios."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..cluster import Cluster, NodeGroup
from ..errors import ValidationError
from ..records import Record
from ..scenario import Job, Scenario
from .published import GAVEL_CLUSTER, GAVEL_PRICES_PER_GPU_H, GavelThroughputs
from .rigid_jobs import gavel_jobs
from .throughput_matrix import ThroughputMatrix, useful_pairs

if TYPE_CHECKING:
    from ..problem import AllocationProblem


def pairs_from_problem(problem: AllocationProblem, matrix: ThroughputMatrix) -> Record:  # replace() kwargs
    """The ``pairs`` and ``pair_throughput`` of ``matrix`` (built from ``problem``): one-GPU jobs whose
    applications were measured sharing a GPU (:attr:`~goodopt.problem.AllocationProblem.app_pairs`), where
    sharing beats taking turns; the measured relative speeds times each member's throughput alone.
    Shapes: -> pairs (P, 2), pair_throughput (P, K, 2)."""
    apps = sorted({a for pair in problem.app_pairs for a in pair})
    if not apps:
        raise ValidationError("pairs", "the scenario's applications have no measured pair throughputs (space "
                              "sharing)", "use throughput-only profiles with pairs (e.g. the gavel-default "
                              "scenario), or the policy without _packed")
    index = {a: i for i, a in enumerate(apps)}
    K = matrix.n_types
    rel = np.zeros((len(apps), len(apps), K, 2))
    for (a, b), r in problem.app_pairs.items():
        rel[index[a], index[b]] = r
        if not rel[index[b], index[a]].any():
            rel[index[b], index[a]] = r[:, ::-1]
    ones = np.flatnonzero((matrix.scale_factor == 1) & np.isin(problem.applications, apps))
    i, j = np.triu_indices(len(ones), k=1)
    i, j = ones[i], ones[j]
    app = np.array([index.get(a, 0) for a in problem.applications])
    alone = np.stack([matrix.throughput[i], matrix.throughput[j]], axis=2)  # (P, K, 2)
    both = rel[app[i], app[j]] * alone
    both[~useful_pairs(alone, both)] = 0.0
    keep = both.any(axis=(1, 2))
    return {"pairs": np.stack([i[keep], j[keep]], axis=1).astype(np.int64), "pair_throughput": both[keep]}


# -------------------------------------------------------------- from a problem
def matrix_from_problem(problem: AllocationProblem, n_gpus: np.ndarray | None = None, *,
                        price_per_gpu_h: Sequence[float] | np.ndarray | None = None) -> ThroughputMatrix:
    """Throughput matrix of an allocation problem, each job at ``n_gpus`` GPUs.

    ``n_gpus`` (J,) defaults to each job's ``min_gpus``; the throughput on a
    type is the goodput-table entry for that count on the fewest nodes of the
    type (0 where the job cannot run). Shapes: n_gpus (J,) -> matrix (J, G).
    """
    pr = problem
    k = np.asarray(pr.min_gpus if n_gpus is None else n_gpus, dtype=np.int64)
    if k.shape != (pr.n_jobs,) or np.any(k < 1):
        raise ValidationError("n_gpus", f"must be {pr.n_jobs} GPU counts >= 1")
    cap = np.bincount(pr.node_type, weights=pr.node_capacity, minlength=pr.n_gpu_types).astype(np.int64)
    largest = np.array([pr.node_capacity[pr.node_type == g].max() for g in range(pr.n_gpu_types)])
    kc = np.minimum(k, pr.max_k)
    multi = (k[:, None] > largest[None, :]).astype(int)
    t = pr.goodput_table[np.arange(pr.n_jobs)[:, None], np.arange(pr.n_gpu_types)[None, :], kc[:, None], multi]
    t = np.where(k[:, None] > pr.max_k, 0.0, t)
    prices = (np.array([GAVEL_PRICES_PER_GPU_H.get(name, 1.0) for name in pr.type_names])
              if price_per_gpu_h is None else price_per_gpu_h)  # per GPU type, in the problem's type order
    return ThroughputMatrix(job_names=pr.job_names, type_names=pr.type_names, throughput=t, scale_factor=k,
                            capacity=cap, weights=pr.weights, price_per_gpu_h=np.asarray(prices, dtype=float))


def gavel_scenario(throughputs: GavelThroughputs, seed: int = 0, n_jobs: int = 60, *,
                   cluster_groups: Sequence[tuple[str, int, int]] = GAVEL_CLUSTER, max_age_s: float = 7200.0) -> Scenario:
    """A scheduling round on Gavel's default cluster with :func:`gavel_jobs` (all waiting, rigid sizes).

    Returns the :class:`~goodopt.scenario.Scenario`; its profiles are the file's job types.
    """
    profiles = throughputs.profiles()
    rng = np.random.default_rng(seed + 1)
    jobs, used = [], {}
    for name, slug, s in gavel_jobs(throughputs, seed, n_jobs):
        jobs.append(Job(name=name, application=slug, age_s=float(np.round(rng.uniform(0, max_age_s))),
                        n_reallocs=0, min_gpus=s, max_gpus=s))
        used[slug] = profiles[slug]
    cluster = Cluster(tuple(NodeGroup(t, g, n) for t, g, n in cluster_groups))
    desc = (f"Gavel's default cluster (36 V100 + 36 P100 + 36 K80 as 9 servers of 4 each), {n_jobs} rigid "
            f"throughput-only jobs drawn like Gavel's generator (seed {seed})")
    return Scenario(cluster=cluster, jobs=tuple(jobs), profiles=used, name="gavel-default", description=desc)
