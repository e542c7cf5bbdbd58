"""Job configurations: the building blocks of every configuration-level model.

A *configuration* of job ``j`` is a triple (GPU type ``g``, GPU count ``k``,
``multi`` = spread over more than one node) together with its speedup. Two
kinds exist:

* a **move** configuration: any placement with that shape that differs from
  the job's current allocation; its speedup carries the re-allocation factor,
  ``S = table[j, g, k, multi] * realloc[j]``;
* the **keep** configuration of a running job: exactly its current placement,
  speedup ``table[j, g_cur, k_cur, multi_cur]`` without the factor.

A job with no configuration chosen holds no GPUs and has speedup 0; in the
fitness it contributes ``(0 + eps)^p`` (``log eps`` for ``p = 0``), the same
value the evaluator gives it.

Move configurations are pruned to each (job, type, multi) class's *frontier*:
a configuration is kept only when its speedup is strictly larger than that of
every smaller GPU count in the class (and > 0). The pruning is exact: any
placement of a dominated configuration can give up GPUs (staying on one node,
or on at least two nodes) to become the dominating one, which frees capacity
and never lowers the speedup. A move placement that happens to equal the
current one is scored by the evaluator at least as high (no factor), so
optimality is preserved as well.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from goodopt.arrays import Array
from goodopt.problem import AllocationProblem


@dataclass(frozen=True, eq=False)
class ConfigSet:
    """All candidate configurations of a problem, sorted by job.

    Shapes (C configurations): ``job``, ``gpu_type``, ``n_gpus`` (C,) int;
    ``multi``, ``keep`` (C,) bool; ``speedup`` (C,) float; ``job_start``
    (J + 1,) so that job ``j`` owns ``[job_start[j], job_start[j+1])``;
    ``keep_of_job`` (J,) index of the job's keep configuration or -1.
    """

    job: Array
    gpu_type: Array
    n_gpus: Array
    multi: Array
    keep: Array
    speedup: Array
    job_start: Array
    keep_of_job: Array

    @property
    def n_configs(self) -> int:
        return len(self.job)

    def of_job(self, j: int) -> slice:
        return slice(int(self.job_start[j]), int(self.job_start[j + 1]))

    def subset(self, mask: Array) -> ConfigSet:
        """The configurations where ``mask`` holds, in the same order (still sorted by job). Shapes: mask (C,)."""
        mask = np.asarray(mask, bool)
        job = self.job[mask]
        n_jobs = len(self.job_start) - 1
        keep = self.keep[mask]
        keep_of_job = np.full(n_jobs, -1, dtype=np.int64)
        keep_pos = np.flatnonzero(keep)
        keep_of_job[job[keep_pos]] = keep_pos
        return ConfigSet(job=job, gpu_type=self.gpu_type[mask], n_gpus=self.n_gpus[mask], multi=self.multi[mask],
                         keep=keep, speedup=self.speedup[mask], job_start=np.searchsorted(job, np.arange(n_jobs + 1)),
                         keep_of_job=keep_of_job)


def current_shape(problem: AllocationProblem) -> tuple[Array, Array, Array]:
    """GPU count, node count and majority type of every current row.

    Shapes: -> (J,), (J,), (J,).
    """
    cur = problem.current
    k = cur.sum(axis=1)
    nodes = (cur > 0).sum(axis=1)
    onehot = problem.node_type[:, None] == np.arange(problem.n_gpu_types)[None, :]
    gtype = (cur @ onehot.astype(np.int64)).argmax(axis=1)
    return k, nodes, gtype


def type_layout(problem: AllocationProblem) -> tuple[Array, Array, Array]:
    """Per GPU type: total GPUs, node count, largest node. Shapes: -> (G,) x 3."""
    G = problem.n_gpu_types
    total = np.bincount(problem.node_type, weights=problem.node_capacity, minlength=G).astype(np.int64)
    n_nodes = np.bincount(problem.node_type, minlength=G).astype(np.int64)
    largest = np.zeros(G, dtype=np.int64)
    np.maximum.at(largest, problem.node_type, problem.node_capacity)
    return total, n_nodes, largest


def enumerate_configs(problem: AllocationProblem, *, prune: bool = True) -> ConfigSet:
    """Every feasible-in-isolation configuration of every job.

    A move configuration (g, k, multi) is listed when ``min_gpus <= k <=
    max_gpus``, ``k`` fits the type (one node's capacity when single-node; at
    least 2 GPUs on at least 2 nodes of the type when multi-node) and its
    speedup is > 0. ``prune`` keeps each class's frontier only (exact, see the
    module docstring). The keep configuration is listed for every running job
    whose current row is feasible on its own.
    """
    pr = problem
    J, K = pr.n_jobs, pr.max_k
    j_idx, g_idx, k_idx, m_idx, move_s = _moves(pr, prune)

    # keep configurations
    k_cur, nodes_cur, g_cur = current_shape(pr)
    running = (k_cur > 0) & rows_feasible_alone(pr)
    keep_j = np.flatnonzero(running)
    m_cur = (nodes_cur > 1).astype(np.int64)
    kc = np.minimum(k_cur, K)
    keep_s = np.where(k_cur <= K, pr.speedup_table[np.arange(J), g_cur, kc, m_cur], 0.0)[keep_j]
    good_keep = keep_s > 0
    keep_j = keep_j[good_keep]
    keep_s = keep_s[good_keep]

    job = np.concatenate([j_idx, keep_j])
    order = np.lexsort((np.concatenate([np.zeros(len(j_idx)), np.ones(len(keep_j))]), job))
    job = job[order]
    cs = ConfigSet(
        job=job,
        gpu_type=np.concatenate([g_idx, g_cur[keep_j]])[order],
        n_gpus=np.concatenate([k_idx, k_cur[keep_j]])[order],
        multi=np.concatenate([m_idx.astype(bool), nodes_cur[keep_j] > 1])[order],
        keep=np.concatenate([np.zeros(len(j_idx), bool), np.ones(len(keep_j), bool)])[order],
        speedup=np.concatenate([move_s, keep_s])[order],
        job_start=np.searchsorted(job, np.arange(J + 1)),
        keep_of_job=np.full(J, -1, dtype=np.int64),
    )
    keep_pos = np.flatnonzero(cs.keep)
    cs.keep_of_job[cs.job[keep_pos]] = keep_pos
    return cs


def _moves(pr: AllocationProblem, prune: bool) -> tuple[Array, Array, Array, Array, Array]:
    """The move configurations of :func:`enumerate_configs` as ``(job, type, count, multi, speedup)``, in the
    order of a scan over (job, type, count, spread). Shapes: -> (M,) each."""
    K = pr.max_k
    total, n_nodes, largest = type_layout(pr)
    lo = np.maximum(pr.min_gpus, 1)[:, None, None]
    hi = np.minimum(pr.max_gpus, K)[:, None, None]
    parts = []
    # single-node moves fit one node, so their counts stop at the largest node (8 of cluster-2048's 1024)
    for m, top in ((0, int(min(K, largest.max(initial=0)))), (1, K)):
        k3 = np.arange(top + 1)[None, None, :]
        fits = ((k3 >= 2) & (n_nodes[None, :, None] >= 2) & (k3 <= total[None, :, None]) if m
                else k3 <= largest[None, :, None])
        s = pr.speedup_table[:, :, :top + 1, m] * pr.realloc[:, None, None]  # (J, G, top + 1)
        ok = (k3 >= lo) & (k3 <= hi) & fits & (s > 0)
        if prune:
            # frontier: strictly above the running max of all smaller counts in the class
            masked = np.where(ok, s, 0.0)
            prev = np.maximum.accumulate(masked, axis=2)
            prev = np.concatenate([np.zeros_like(prev[:, :, :1]), prev[:, :, :-1]], axis=2)
            ok &= masked > prev
        j, g, k = np.nonzero(ok)
        parts.append((j, g, k, np.full(len(j), m), s[j, g, k]))
    job, gpu_type, count, spread, speedup = (np.concatenate(x) for x in zip(*parts))
    by_class = np.lexsort((spread, count, gpu_type, job))
    return job[by_class], gpu_type[by_class], count[by_class], spread[by_class], speedup[by_class]


def rows_feasible_alone(problem: AllocationProblem) -> Array:
    """Whether each current row would be feasible if it were the only one (capacity, no negative
    entries, one GPU type, within min/max GPUs; interference needs a second job). Shapes: -> (J,)."""
    pr = problem
    cur = pr.current
    k = cur.sum(axis=1)
    onehot = (pr.node_type[:, None] == np.arange(pr.n_gpu_types)[None, :]).astype(np.int64)
    per_type = cur @ onehot
    ok: Array = ((k > 0) & np.all(cur <= pr.node_capacity[None, :], axis=1) & np.all(cur >= 0, axis=1)
          & (per_type.max(axis=1, initial=0) == k) & (k >= pr.min_gpus) & (k <= pr.max_gpus))
    return ok


def choice_from_values(configs: ConfigSet, n_jobs: int, z: Array) -> Array:
    """Config index chosen per job (-1 = none) from integral values ``z`` (C,). Shapes: -> (J,)."""
    chosen = np.full(n_jobs, -1, dtype=np.int64)
    on = np.flatnonzero(np.asarray(z) > 0.5)
    chosen[configs.job[on]] = on
    return chosen


def rounded_from_values(configs: ConfigSet, n_jobs: int, z: Array) -> Array:
    """Per job the configuration with the largest (LP) value in ``z`` (-1 if all are ~0). Shapes: -> (J,)."""
    z = np.asarray(z, dtype=float)
    chosen = np.full(n_jobs, -1, dtype=np.int64)
    order = np.lexsort((configs.n_gpus, -z))  # largest value first, fewer GPUs on ties
    jobs, first = np.unique(configs.job[order], return_index=True)
    top = order[first]
    ok = z[top] > 1e-6
    chosen[jobs[ok]] = top[ok]
    return chosen


def match_configs(problem: AllocationProblem, configs: ConfigSet, alloc: Array) -> Array:
    """Config index realised by each row of ``alloc`` (-1 when none matches). Shapes: (J, N) -> (J,)."""
    pr, cs = problem, configs
    alloc = np.asarray(alloc)
    k = alloc.sum(axis=1)
    nodes = (alloc > 0).sum(axis=1)
    onehot = (pr.node_type[:, None] == np.arange(pr.n_gpu_types)[None, :]).astype(np.int64)
    g = (alloc @ onehot).argmax(axis=1)
    out = np.full(pr.n_jobs, -1, np.int64)
    for j in np.flatnonzero(k > 0):
        if cs.keep_of_job[j] >= 0 and np.array_equal(alloc[j], pr.current[j]):
            out[j] = cs.keep_of_job[j]
            continue
        sl = np.arange(cs.job_start[j], cs.job_start[j + 1])
        hit = sl[(cs.gpu_type[sl] == g[j]) & (cs.n_gpus[sl] == k[j]) & (cs.multi[sl] == (nodes[j] > 1))
                 & ~cs.keep[sl]]
        if len(hit):
            out[j] = hit[0]
    return out


#: The largest GPU count of a configuration in Sia's configuration set (its artifact's tables: 1, 2, 4 GPUs
#: and 2-16 whole 4-GPU nodes; 1, 2, 4, 8 GPUs and 2-8 whole 8-GPU nodes: at most 64 GPUs).
SIA_MAX_GPUS = 64


def sia_configs(problem: AllocationProblem) -> ConfigSet:
    """The configurations Sia's ILP chooses from (Sia, SOSP'23): on one node, a power-of-two GPU count up to
    the node's; on several, whole nodes (``n * C`` GPUs on ``n >= 2`` nodes of ``C`` GPUs), at most
    :data:`SIA_MAX_GPUS`; within each job's limits as every configuration is. A running job's keep
    configuration stays (its current allocation). Taken from the unpruned set, so that no configuration of
    Sia's set is missing because a configuration outside it dominated it."""
    cs = enumerate_configs(problem, prune=False)
    caps = np.zeros(problem.n_gpu_types, np.int64)
    np.maximum.at(caps, problem.node_type, problem.node_capacity)
    k, cap = cs.n_gpus, caps[cs.gpu_type]
    power_of_two = (k & (k - 1)) == 0
    single = ~cs.multi & power_of_two & (k <= cap)
    whole = cs.multi & (k % cap == 0) & (k >= 2 * cap) & (k <= SIA_MAX_GPUS)
    return cs.subset(cs.keep | single | whole)
