"""The GA's repair and refill as whole-population array operations: the statement of their rules that the
compiled kernels (:mod:`goodopt.solvers.ga_kernels`) must match draw for draw and GPU for GPU."""

from __future__ import annotations

import numpy as np
from goodopt.solvers.ga_operators import RepairData

from goodopt.arrays import Array, ArrayIn


def repair(pop: ArrayIn, data: RepairData, rng: np.random.Generator) -> Array:
    """Make every member feasible, then hand idle GPUs out.

    In order: negatives to 0; each job keeps only the nodes of its majority
    GPU type (types its profile cannot use are dropped); at most
    ``min(max_gpus, K)`` GPUs per job; over-full nodes drop jobs' GPUs in a
    random order that keeps unchanged rows first; each node keeps at most one
    multi-node job (interference avoidance); rows below ``min_gpus`` or with
    no valid batch are emptied. Then :func:`refill` gives idle GPUs to the
    jobs whose objective term gains most.

    Shapes: pop (P, J, N) int -> (P, J, N) int64 (a new array).
    """
    d, pr = data, data.pr
    a = np.maximum(np.asarray(pop, dtype=np.int64), 0)
    P, J, N = a.shape
    if d.G > 1:
        per_type = a @ d.onehot
        gt = per_type.argmax(axis=2)
        ok = d.type_ok[np.arange(J)[None, :], gt]
        a *= ((pr.node_type[None, None, :] == gt[:, :, None]) & ok[:, :, None])
    # at most `limit` GPUs per job, its first nodes first (only rows over the limit change)
    pp, jj = np.nonzero(a.sum(axis=2) > d.limit[None, :])
    if len(pp):
        r = a[pp, jj]
        a[pp, jj] = np.clip(d.limit[jj, None] - (np.cumsum(r, axis=1) - r), 0, r)
    # node capacity: random priority, unchanged rows first (only over-full (member, node) columns change)
    unchanged = np.all(a == pr.current[None], axis=2)
    key = rng.random((P, J)) - unchanged
    om, on = np.nonzero(a.sum(axis=1) > pr.node_capacity[None, :])
    if len(om):
        col = a[om, :, on]  # (C, J)
        order = np.argsort(key[om], axis=1)
        col_sorted = np.take_along_axis(col, order, axis=1)
        room = pr.node_capacity[on][:, None] - (np.cumsum(col_sorted, axis=1) - col_sorted)
        np.put_along_axis(col, order, np.clip(room, 0, col_sorted), axis=1)
        a[om, :, on] = col
    used = a > 0
    if pr.interference_avoidance:
        _one_multi_node_job_per_node(a, used, key)
        used = a > 0
    k = a.sum(axis=2)
    nodes = used.sum(axis=2)
    gt = (a @ d.onehot).argmax(axis=2) if d.G > 1 else np.zeros_like(k)
    s = d.table[np.arange(J)[None, :], gt, np.minimum(k, d.K), (nodes > 1).astype(np.int64)]
    bad = (k > 0) & ((k < pr.min_gpus[None, :]) | (s <= 0))
    a[bad] = 0
    k[bad] = nodes[bad] = 0
    return refill(a, d, rng, counts=(k, nodes))


def _one_multi_node_job_per_node(a: Array, used: Array, key: Array) -> None:
    """On every node, of the jobs spread over several nodes keep the one with the lowest ``key``; the others
    lose their GPUs there (only members with a node shared by two such jobs change). Shapes: a, used (P, J, N),
    key (P, J); ``a`` is changed in place."""
    on = (used.sum(axis=2) > 1)[:, :, None] & used
    clash = np.flatnonzero((on.sum(axis=1) > 1).any(axis=1))
    if not len(clash):
        return
    on = on[clash]
    keeper = np.where(on, key[clash][:, :, None], np.inf).argmin(axis=1)  # (P', N)
    sub = a[clash]
    sub[on & (np.arange(a.shape[1])[None, :, None] != keeper[:, None, :])] = 0
    a[clash] = sub


def refill(a: Array, data: RepairData, rng: np.random.Generator, counts: tuple[Array, Array] | None = None) -> Array:
    """Hand idle GPUs to jobs, node by node, in passes.

    In each pass every node with idle GPUs gives, to one of the jobs with the
    largest gain of its objective term (the r-th node with idle GPUs takes its
    r-th best candidate), either a first placement of ``max(min_gpus,
    1)`` GPUs (a job holding nothing; each such job starts on one node per
    pass) or one more GPU (a job running on this node only). Gains count the
    re-allocation factor, including its cost to a job that would leave its
    current allocation. Feasible members stay feasible. Only members with
    idle GPUs are touched.

    The candidate moves of a pass are few (a handful per member), so they are
    listed as index arrays rather than as a (members, J, N) table of gains;
    per-job totals (GPUs, nodes, the node of a single-node job) are kept up to
    date instead of recounted.

    ``counts`` are ``a``'s GPUs and nodes per job where the caller has them (they are then updated in place).

    Shapes: a (P, J, N) int64, counts two (P, J) int64 -> a (modified in place and returned).
    """
    d, pr = data, data.pr
    free_all = pr.node_capacity[None, :] - a.sum(axis=1)  # (P, N)
    # (P, J) GPUs and nodes per job
    k_all, nodes_all = (a.sum(axis=2), (a > 0).sum(axis=2)) if counts is None else counts
    node_all = a.argmax(axis=2)  # (P, J) the node of a single-node job
    # rows still on their current allocation (not restarted), kept up to date below
    kept_all = None if d.util_kept is None else np.all(a == pr.current[None], axis=2)  # (P, J)
    for _ in range(d.max_passes):
        members = np.flatnonzero((free_all > 0).any(axis=1))
        if not len(members):
            break
        free, k = free_all[members], k_all[members]
        kept = None if kept_all is None else kept_all[members]
        mp, mj, mn, gain = _pass_moves(free, k, nodes_all[members], node_all[members], kept, d)
        # tie-breaking noise, one draw per candidate move (the moves come in a fixed order, so a seed still
        # gives one answer)
        score = gain * (1 + 1e-9 * rng.random(len(gain)))
        # the r-th node with idle GPUs takes its r-th best candidate, so nodes of one type spread
        # over different idle jobs instead of all picking the same one
        pn, nn, jn = _rth_best(mp, mj, mn, score, np.cumsum(free > 0, axis=1) - 1, d.N)
        if not len(pn):
            break
        idle = k[pn, jn] == 0
        keep = _one_start_per_idle_job(pn, jn, nn, idle, d.J)
        pn, jn, nn, idle = pn[keep], jn[keep], nn[keep], idle[keep]
        add = np.where(idle, d.need_clip[jn], 1)
        p_all = members[pn]
        a[p_all, jn, nn] += add  # one pick per (member, node): no repeated index
        free_all[p_all, nn] -= add
        k_all[p_all, jn] += add
        nodes_all[p_all[idle], jn[idle]] = 1
        node_all[p_all[idle], jn[idle]] = nn[idle]
        if kept_all is not None:
            kept_all[p_all, jn] = np.all(a[p_all, jn] == pr.current[jn], axis=1)
    return a


def _pass_moves(free: Array, k: Array, nodes: Array, node_of: Array, kept: Array | None,
                d: RepairData) -> tuple[Array, Array, Array, Array]:
    """The candidate moves of one refill pass and their gains (all > 0): a first placement of an idle job with
    its minimum GPUs, or one more GPU for a job running on that node only. ``kept`` (members, J) marks rows
    still on their current allocation (None when every re-allocation factor is 1).
    Shapes: free (P, N), k, nodes, node_of (P, J) -> member, job, node, gain, each (moves,)."""
    pr, rows = d.pr, np.arange(d.J)[None, :]
    # first placement of an idle job on a node with room for its minimum (static gains per job and node)
    ip, ij = np.nonzero(k == 0)
    ok = (free[ip] >= d.need_clip[ij][:, None]) & d.start_gains[ij]  # (idle, N)
    si, sn = np.nonzero(ok)
    sp, sj = ip[si], ij[si]
    # grow a single-node job on its node by one GPU
    t = pr.node_type[node_of]
    kc = np.minimum(k, d.K)
    kn = np.minimum(k + 1, d.K)
    grow = ((nodes == 1) & (k < d.limit[None, :]) & d.single_ok[rows, t, kn]
            & (np.take_along_axis(free, node_of, axis=1) >= 1))
    gp, gj = np.nonzero(grow)
    tg, kcg, kng = t[gp, gj], kc[gp, gj], kn[gp, gj]
    base = d.util_single[gj, tg, kcg]
    if kept is not None and d.util_kept is not None:
        base = np.where(kept[gp, gj], d.util_kept[gj, tg, kcg], base)
    gg = d.util_single[gj, tg, kng] - base
    up = (gg > 0) & np.isfinite(gg)
    gp, gj, gg = gp[up], gj[up], gg[up]
    return (np.concatenate([sp, gp]), np.concatenate([sj, gj]), np.concatenate([sn, node_of[gp, gj]]),
            np.concatenate([d.gain_start[sj, sn], gg]))


def _one_start_per_idle_job(pn: Array, jn: Array, nn: Array, idle: Array, J: int) -> Array:
    """Which picks to keep: an idle job starts on one node per pass, its first picked node (``pn``, ``jn``,
    ``nn`` run in (member, node) order); every pick of a running job is kept. Shapes: (picks,) -> (picks,)."""
    key = (pn * J + jn)[idle]
    first = np.ones(len(key), dtype=bool)
    if len(key):
        order = np.lexsort((nn[idle], key))
        dup = np.zeros(len(key), dtype=bool)
        dup[order[1:]] = key[order[1:]] == key[order[:-1]]
        first = ~dup
    keep = np.ones(len(pn), dtype=bool)
    keep[np.flatnonzero(idle)] = first
    return keep


def _rth_best(pp: Array, jj: Array, nn: Array, score: Array, rank: Array, N: int) -> tuple[Array, Array, Array]:
    """Per (member, node) with candidates, the job with the ``rank % n``-th highest score among its ``n``
    candidates (ties to the lower job index). Returns the picks as member, node and job arrays, in (member,
    node) order. Shapes: pp, jj, nn, score (moves,), rank (P, N) -> three (picks,) arrays."""
    group = pp * N + nn
    order = np.lexsort((jj, -score, group))  # by (member, node), then best first
    n_cand = np.bincount(group, minlength=rank.size)
    start = np.cumsum(n_cand) - n_cand
    has = np.flatnonzero(n_cand)
    pick = start[has] + rank.reshape(-1)[has] % n_cand[has]
    pn, nn_pick = np.divmod(has, N)
    return pn, nn_pick, jj[order[pick]]


def mutate(pop: Array, data: RepairData, rng: np.random.Generator, rate: float) -> Array:
    """Row-wise mutation as whole-population array operations (what ``ga_operators.mutate`` must match): each
    row is hit with probability ``rate``; a hit row is reset to the current allocation, has each entry zeroed
    with probability 1/2, or grows by 1 to a node's capacity on a random node. Shapes: (P, J, N) -> (P, J, N)."""
    pr = data.pr
    a = pop.copy()
    P, J, N = a.shape
    hp, hj = np.nonzero(rng.random((P, J)) < rate)
    op = rng.integers(0, 3, size=len(hp))
    rp, rj = hp[op == 0], hj[op == 0]
    a[rp, rj] = pr.current[rj]
    zp, zj = hp[op == 1], hj[op == 1]
    a[zp, zj] *= rng.random((len(zp), N)) >= 0.5
    gp, gj = hp[op == 2], hj[op == 2]
    node = rng.integers(0, N, size=len(gp))
    a[gp, gj, node] += rng.integers(1, pr.node_capacity[node] + 1)
    return a


def offspring(pop: Array, fit: Array, data: RepairData, rng: np.random.Generator, crossover_prob: float,
              rate: float) -> Array:
    """One generation's children before repair as whole-population array operations: binary tournaments (the
    fitter wins, the first on ties), row crossover of the winners' pairs, then :func:`mutate`. Shapes: pop
    (P, J, N), fit (P,) -> (P, J, N)."""
    P = len(pop)
    n_pairs = (P + 1) // 2
    cand = rng.integers(0, P, size=(2, 2 * n_pairs))
    parents = np.where(fit[cand[0]] >= fit[cand[1]], cand[0], cand[1]).reshape(2, n_pairs)
    A, B = pop[parents[0]], pop[parents[1]]
    mask = (rng.random(A.shape[:2]) < 0.5)[:, :, None]
    c1, c2 = np.where(mask, A, B), np.where(mask, B, A)
    cross = (rng.random(n_pairs) < crossover_prob)[:, None, None]
    kids = np.concatenate([np.where(cross, c1, A), np.where(cross, c2, B)])[:P]
    return mutate(kids, data, rng, rate)
