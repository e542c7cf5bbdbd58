"""Where a job's GPUs go: every node packer of the package, in one place.

Node packers (one job's row from the free GPUs per node; none of them
modifies its inputs):

* :func:`place_one` — ``k`` GPUs of one type on one node (best fit) or, as a
  multi-node job, on the freest nodes no other multi-node job uses;
* :func:`place_packed` — on one node if any fits, else on the fewest nodes;
* :func:`place_packed_on` — the same on nodes of one type, given only their free GPUs;
* :func:`place_most_free` — one GPU group at a time from the node with the most free GPUs
  (the fixed-size baselines' placement);
* :func:`packed_placement` — the shape of a packed job on full nodes, e.g. 6 on 4-GPU nodes -> (4, 2).

Configurations onto nodes: given one configuration per job (or none),
:func:`place_configs` builds a (J, N) allocation that realises exactly those
configurations, or reports failure. Keep configurations take their current
rows; multi-node jobs then take whole-node-first sets of nodes no other
multi-node job uses (when interference avoidance is on), largest first;
single-node jobs are packed best-fit decreasing (``singles_first``: those
before the multi-node ones, which then take what is left). It is a heuristic: a failure
does not prove that no placement exists (the placement-level MILP decides
that). :func:`move_job` moves one job to another configuration in place of its row.
"""

from __future__ import annotations

import bisect

import numpy as np

from goodopt.arrays import Array, ArrayIn
from goodopt.formulations.configs import ConfigSet
from goodopt.problem import AllocationProblem


def place_configs(problem: AllocationProblem, configs: ConfigSet, chosen: Array, *,
                  base: Array | None = None, singles_first: bool = False) -> tuple[Array, list[int]]:
    """Allocation realising ``chosen[j]`` (index into ``configs`` or -1) for every job.

    ``base`` (J, N), if given, is an allocation of jobs whose ``chosen`` is -2:
    those rows are copied unchanged and their GPUs are unavailable.
    ``singles_first``: the single-node moves are packed before the multi-node
    ones, which then take what is left (a second try where the usual order
    fails: a multi-node job on the freest nodes can leave no node for a large
    single-node one).

    Returns ``(alloc, failed)`` where ``failed`` lists the jobs that could not
    be placed (their rows are 0). Shapes: chosen (J,) -> (J, N), list.
    """
    pr = problem
    J, N = pr.n_jobs, pr.n_nodes
    alloc = np.zeros((J, N), dtype=np.int64)
    chosen = np.asarray(chosen)
    if base is not None:
        fixed = chosen == -2
        alloc[fixed] = base[fixed]
    free = pr.node_capacity - alloc.sum(axis=0)
    blocked = _multi_nodes(alloc) if pr.interference_avoidance else np.zeros(N, bool)
    failed = []
    active = np.flatnonzero(chosen >= 0)
    c = chosen[active]
    keep = configs.keep[c]
    # 1. keep configurations (their rows are mutually consistent when the current allocation is)
    for j in active[keep]:
        row = pr.current[j]
        if np.any(row > free) or (pr.interference_avoidance and (row > 0).sum() > 1 and np.any(blocked[row > 0])):
            failed.append(int(j))
            continue
        alloc[j] = row
        free -= row
        if (row > 0).sum() > 1 and pr.interference_avoidance:
            blocked |= row > 0
    # 2. multi-node, then 3. single-node moves, largest first (or the single-node ones first)
    moves = active[~keep]
    cm = chosen[moves]
    order = np.lexsort((-configs.n_gpus[cm], ~configs.multi[cm]))
    moves, cm = moves[order], cm[order]
    n_multi = int(configs.multi[cm].sum())
    if singles_first:
        failed += _place_singles(pr, configs, alloc, free, blocked, moves[n_multi:], cm[n_multi:])
        free = pr.node_capacity - alloc.sum(axis=0)
    for j, ci in zip(moves[:n_multi], cm[:n_multi]):
        row = place_one(pr.node_type, free, blocked, int(configs.gpu_type[ci]), int(configs.n_gpus[ci]), True)
        if row is None:
            failed.append(int(j))
            continue
        alloc[j] = row
        free -= row
        if pr.interference_avoidance:
            blocked |= row > 0
    if not singles_first:
        failed += _place_singles(pr, configs, alloc, free, blocked, moves[n_multi:], cm[n_multi:])
    return alloc, failed


def _place_singles(pr: AllocationProblem, configs: ConfigSet, alloc: Array, free: Array, blocked: Array,
                   jobs: Array, chosen: Array) -> list[int]:
    """Pack single-node moves (largest first) best fit into ``free``, writing ``alloc`` in place; returns the
    jobs that did not fit. ``free`` is not changed."""
    failed = []
    fit = _BestFit(pr.node_type, free, blocked)
    for j, g, k in zip(jobs.tolist(), configs.gpu_type[chosen].tolist(), configs.n_gpus[chosen].tolist()):
        n = fit.take(g, k)
        if n is None:
            failed.append(j)
        else:
            alloc[j, n] = k
    return failed


class _BestFit:
    """:func:`place_one`'s choice for single-node jobs, one job after another, while ``blocked`` stays as it is
    (no multi-node job is placed meanwhile): per GPU type and free count, the nodes in its order of preference
    (hosting a multi-node job first, then by index).

    The same nodes as :func:`place_one` for every job, without a pass over every node per job: placing
    cluster-2048's optimum (819 jobs, 256 nodes) took 17 ms with one such pass per job, 3 ms this way.
    """

    def __init__(self, node_type: Array, free: Array, blocked: Array) -> None:
        self.top: dict[int, int] = {}
        self.bins: dict[tuple[int, int], list[tuple[bool, int]]] = {}
        for n, (g, f, b) in enumerate(zip(node_type.tolist(), free.tolist(), blocked.tolist())):
            self.bins.setdefault((g, f), []).append((not b, n))  # by node within each (g, f): sorted below
            self.top[g] = max(self.top.get(g, 0), f)
        for nodes in self.bins.values():
            nodes.sort()

    def take(self, g: int, k: int) -> int | None:
        """The node that takes ``k`` GPUs of type ``g`` (the one with the fewest free GPUs that fit), or None."""
        for f in range(k, self.top.get(g, -1) + 1):
            nodes = self.bins.get((g, f))
            if nodes:
                key = nodes.pop(0)
                bisect.insort(self.bins.setdefault((g, f - k), []), key)
                return key[1]
        return None


def move_job(problem: AllocationProblem, configs: ConfigSet, j: int, c: int, old: Array, free: Array,
             multi_count: Array) -> tuple[Array, Array, Array] | None:
    """Job ``j`` moved from its row ``old`` to configuration ``c`` (-1: no GPUs), placed in ``free`` plus its own
    GPUs; ``multi_count`` counts the multi-node jobs on each node. Returns ``(row, free, multi_count)`` after
    the move, or None when ``c`` does not fit. Shapes: old, free, multi_count (N,) -> (N,) x 3."""
    pr, cs = problem, configs
    old = np.asarray(old, dtype=np.int64)
    used = old > 0
    free = free + old
    mc = multi_count - (used if used.sum() > 1 else 0)
    if c < 0:
        return np.zeros_like(old), free, mc
    if cs.keep[c]:
        row = pr.current[j]
        multi = (row > 0).sum() > 1
        if np.any(row > free) or (multi and pr.interference_avoidance and np.any((mc > 0)[row > 0])):
            return None
    else:
        multi = bool(cs.multi[c])
        blocked = (mc > 0) if pr.interference_avoidance else np.zeros(pr.n_nodes, bool)
        row = place_one(pr.node_type, free, blocked, int(cs.gpu_type[c]), int(cs.n_gpus[c]), multi)
        if row is None:
            return None
    return row, free - row, mc + ((row > 0) if multi else 0)


def _multi_nodes(alloc: Array) -> Array:
    multi = (alloc > 0).sum(axis=1) > 1
    return (alloc[multi] > 0).any(axis=0)


def place_one(node_type: Array, free: Array, blocked: Array, g: int, k: int, multi: bool) -> Array | None:
    """One job's row: k GPUs of type g on one node (best fit) or on >= 2 nodes.

    Multi-node rows avoid ``blocked`` nodes and take the freest nodes first.

    Shapes: node_type (N,), free (N,), blocked (N,) bool -> (N,) or None.
    """
    of_type = node_type == g
    row = np.zeros(len(node_type), dtype=np.int64)
    if not multi:
        fits = np.flatnonzero(of_type & (free >= k))
        if not len(fits):
            return None
        # best fit; among equals prefer nodes already hosting a multi-node job
        n = fits[np.lexsort((~blocked[fits], free[fits]))[0]]
        row[n] = k
        return row
    cand = np.flatnonzero(of_type & ~blocked & (free > 0))
    if len(cand) < 2 or free[cand].sum() < k:
        return None
    cand = cand[np.argsort(-free[cand], kind="stable")]
    take = np.minimum(free[cand], np.maximum(k - (np.cumsum(free[cand]) - free[cand]), 0))
    used = take > 0
    if used.sum() < 2:
        # the whole job fits one node; split it over the two freest nodes
        take[:] = 0
        take[0], take[1] = k - 1, 1
    row[cand] = take
    return row


def place_packed(node_type: Array, free: Array, blocked: Array, g: int, k: int) -> Array | None:
    """``k`` GPUs of type ``g`` on one node if any fits (best fit), else on the fewest nodes.

    Returns the row or ``None``; nothing is modified. Shapes: (N,) arrays -> (N,) or None.
    """
    row = place_one(node_type, free, blocked, g, k, False)
    if row is None and k > 1:
        row = place_one(node_type, free, blocked, g, k, True)
    return row


def place_packed_on(free: ArrayIn, n_gpus: int) -> Array | None:
    """GPUs per node for ``n_gpus`` on nodes (of one type) with ``free`` GPUs, packed (None if they do not fit).

    Shapes: free (M,) -> (M,).
    """
    free = np.asarray(free, dtype=np.int64)
    if free.sum() < n_gpus:
        return None
    return place_packed(np.zeros(len(free), dtype=np.int64), free, np.zeros(len(free), dtype=bool), 0, n_gpus)


def place_most_free(node_type: Array, free: Array, g: int, k: int) -> Array | None:
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


def packed_placement(n_gpus: int, gpus_per_node: int) -> tuple[int, ...]:
    """GPUs per node of ``n_gpus`` packed onto full nodes first, e.g. 6 on 4-GPU nodes -> (4, 2)."""
    full, rest = divmod(int(n_gpus), int(gpus_per_node))
    return tuple([gpus_per_node] * full + ([rest] if rest else []))
