"""The GA's repair and refill as compiled loops (numba), one member at a time.

:func:`goodopt.solvers.ga_operators.repair` and :func:`~goodopt.solvers.ga_operators.refill` state the rules;
these kernels carry them out with scalar loops instead of some forty small whole-population array operations
per refill pass, which were the GA's cost on the simulator's problems (tens of jobs, tens of nodes, a
population of 100). They take the same random numbers in the same order as the rules' statement (the
repair's priorities ``u`` are one ``(P, J)`` block of uniform draws, drawn first; each refill pass draws one number
per candidate move, first placements before grows, each in (member, job, node) order), and they only add,
subtract, multiply, compare and look up (no sums of floats), so a seed gives the same allocations to the
last GPU on every machine; ``tests/ga_reference.py`` states the rules as whole-population array operations
and the tests hold the kernels to it draw for draw.

Arrays are those of :class:`goodopt.solvers.ga_operators.RepairData`; shapes: ``a`` (P, J, N) int64 (changed
in place), ``u`` (P, J) float64, counts (P, J) int64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from goodopt.arrays import Array

# cache=True: compiled once per machine into __pycache__, then loaded (about a second the first time)
_jit = njit(cache=True, nogil=True)


@_jit
def repair_rows(a: Array, rng: np.random.Generator, node_type: Array, node_capacity: Array,
                current: Array, onehot: Array, type_ok: Array, min_gpus: Array, table: Array, avoidance: bool,
                need_clip: Array, limit: Array, single_ok: Array, util_single: Array, util_kept: Array,
                has_kept: bool, gain_start: Array, start_gains: Array, max_passes: int) -> None:
    """Repair every member of ``a`` in place (negative cells to 0, majority type, GPU limit, node capacity in the
    order of the priorities ``u`` less 1 for rows still on their current allocation, one multi-node job per node,
    rows that cannot run emptied), then refill it. The priorities ``u`` (P, J) are the first uniform draws."""
    P, J, N = a.shape
    flat = a.reshape(-1)
    for i in range(flat.shape[0]):  # negative cells to 0
        if flat[i] < 0:
            flat[i] = 0
    u = rng.random((P, J))
    G = onehot.shape[1]
    K = table.shape[2] - 1
    k = np.zeros((P, J), np.int64)
    nodes = np.zeros((P, J), np.int64)
    key = np.empty(J)
    # work space of the steps below, reused member after member (allocated per member and job it was a fifth
    # of the repair's time on three GPU types: 100 members of 11 jobs)
    per_type, used, keeper = np.zeros(G, np.int64), np.zeros(N, np.int64), np.zeros(N, np.int64)
    order, multi, lowest = np.zeros(J, np.int64), np.zeros(J, np.bool_), np.zeros(N)
    for p in range(P):
        ap = a[p]
        if G > 1:
            _keep_majority_type(ap, node_type, type_ok, per_type)
        _cap_rows(ap, limit)
        for j in range(J):
            key[j] = u[p, j] - (1.0 if _same(ap[j], current[j]) else 0.0)
        _fit_nodes(ap, key, node_capacity, used, order)
        if avoidance:
            _one_multi_node_job(ap, key, multi, keeper, lowest)
        for j in range(J):
            kj, nj, gt = 0, 0, 0
            for n in range(N):
                if ap[j, n] > 0:
                    if kj == 0:
                        gt = node_type[n]  # the row's one type: its majority's, the others were emptied above
                    kj += ap[j, n]
                    nj += 1
            s = table[j, gt, min(kj, K), 1 if nj > 1 else 0]
            if kj > 0 and (kj < min_gpus[j] or s <= 0):
                a[p, j, :] = 0
                kj, nj = 0, 0
            k[p, j] = kj
            nodes[p, j] = nj
    refill_rows(a, k, nodes, rng, node_type, node_capacity, current, need_clip, limit, single_ok, util_single,
                util_kept, has_kept, gain_start, start_gains, max_passes)


@_jit
def _majority_type(row: Array, node_type: Array, per_type: Array) -> int:
    """The GPU type holding most of the row's GPUs (ties to the lower type; 0 for an empty row); ``per_type``
    (G,) is work space."""
    per_type[:] = 0
    for n in range(row.shape[0]):
        per_type[node_type[n]] += row[n]
    return int(np.argmax(per_type))


@_jit
def _keep_majority_type(a: Array, node_type: Array, type_ok: Array, per_type: Array) -> None:
    """Each job keeps only the nodes of its majority type, and nothing if its profile cannot use that type."""
    J, N = a.shape
    for j in range(J):
        gt = _majority_type(a[j], node_type, per_type)
        for n in range(N):
            if node_type[n] != gt or not type_ok[j, gt]:
                a[j, n] = 0


@_jit
def _cap_rows(a: Array, limit: Array) -> None:
    """At most ``limit[j]`` GPUs per job, its first nodes first."""
    J, N = a.shape
    for j in range(J):
        if a[j].sum() <= limit[j]:
            continue
        before = 0
        for n in range(N):
            r = a[j, n]
            a[j, n] = min(max(limit[j] - before, 0), r)
            before += r


@_jit
def _fit_nodes(a: Array, key: Array, node_capacity: Array, used: Array, on: Array) -> None:
    """On every over-full node the jobs keep their GPUs in ascending ``key`` order while they fit. Only the jobs on
    the node are ordered (a handful: an insertion sort, equal keys in job order) instead of every job of the
    member: the same GPUs as a sort of all of them (a job without GPUs there changes nothing), for a fifth less
    of a generation's breeding on Pollux's load-2.0 workloads. ``used`` (N,) and ``on`` (J,) are work space."""
    J, N = a.shape
    used[:] = 0
    for j in range(J):
        for n in range(N):
            used[n] += a[j, n]
    for n in range(N):
        if used[n] <= node_capacity[n]:
            continue
        m = 0
        for j in range(J):
            if a[j, n] > 0:
                i = m
                while i > 0 and key[on[i - 1]] > key[j]:
                    on[i] = on[i - 1]
                    i -= 1
                on[i] = j
                m += 1
        before = 0
        for i in range(m):
            j = on[i]
            r = a[j, n]
            a[j, n] = min(max(node_capacity[n] - before, 0), r)
            before += r


@_jit
def _one_multi_node_job(a: Array, key: Array, multi: Array, keeper: Array, best: Array) -> None:
    """On every node, of the jobs spread over several nodes (counted before any change) keep the one with the
    lowest ``key``; ``multi`` (J,), ``keeper`` and ``best`` (N,) are work space."""
    J, N = a.shape
    for j in range(J):
        used = 0
        for n in range(N):
            used += a[j, n] > 0
        multi[j] = used > 1
    if not multi.any():
        return
    keeper[:] = -1  # per node the multi-node job of lowest key (the first on ties)
    best[:] = np.inf
    for j in range(J):
        if multi[j]:
            for n in range(N):
                if a[j, n] > 0 and key[j] < best[n]:
                    keeper[n], best[n] = j, key[j]
    for j in range(J):
        if multi[j]:
            for n in range(N):
                if a[j, n] > 0 and j != keeper[n]:
                    a[j, n] = 0


@_jit
def refill_rows(a: Array, k: Array, nodes: Array, rng: np.random.Generator, node_type: Array,
                node_capacity: Array, current: Array, need_clip: Array, limit: Array, single_ok: Array,
                util_single: Array, util_kept: Array, has_kept: bool, gain_start: Array, start_gains: Array,
                max_passes: int) -> None:
    """Hand idle GPUs out in passes (the rules of :func:`goodopt.solvers.ga_operators.refill`); ``k`` and
    ``nodes`` are ``a``'s GPUs and nodes per job, kept up to date."""
    P, J, N = a.shape
    free = np.empty((P, N), np.int64)
    node_of = np.empty((P, J), np.int64)
    kept = np.zeros((P, J), np.bool_)
    for p in range(P):
        for n in range(N):
            free[p, n] = node_capacity[n]
        for j in range(J):
            top = 0  # the row's first largest node, as np.argmax
            for n in range(N):
                free[p, n] -= a[p, j, n]
                if a[p, j, n] > a[p, j, top]:
                    top = n
            node_of[p, j] = top
            if has_kept:
                kept[p, j] = _same(a[p, j], current[j])
    started = np.full((P, J), -1, np.int64)  # the pass in which an idle job started
    for rnd in range(max_passes):
        mp, mj, mn, gain, n_start = _moves(a, k, nodes, node_of, free, kept, node_type, need_clip, limit, single_ok,
                                          util_single, util_kept, has_kept, gain_start, start_gains)
        M = len(mp)
        if M == 0:
            break
        score = gain * (1 + 1e-9 * rng.random(M))
        for i in _picks(mp, mn, mj, score, free, N):
            p, j, n = mp[i], mj[i], mn[i]
            if i < n_start:  # a first placement: one node per pass
                if started[p, j] == rnd:
                    continue
                started[p, j] = rnd
                add = need_clip[j]
                nodes[p, j] = 1
                node_of[p, j] = n
            else:
                add = 1
            a[p, j, n] += add
            free[p, n] -= add
            k[p, j] += add
            if has_kept:
                kept[p, j] = _same(a[p, j], current[j])


@_jit
def _same(x: Array, y: Array) -> bool:
    for i in range(x.shape[0]):
        if x[i] != y[i]:
            return False
    return True


@_jit
def _moves(a: Array, k: Array, nodes: Array, node_of: Array, free: Array, kept: Array, node_type: Array,
           need_clip: Array, limit: Array, single_ok: Array, util_single: Array, util_kept: Array, has_kept: bool,
           gain_start: Array, start_gains: Array) -> tuple[Array, Array, Array, Array, int]:
    """The candidate moves of one pass, first placements (member, job, node order) then one-more-GPU grows
    (member, job order), with their gains (all > 0); also how many are first placements."""
    P, J, N = a.shape
    K = util_single.shape[2] - 1
    grow = np.full((P, J), -1.0)  # the gain of one more GPU where a job may grow and gains
    active = np.zeros(P, np.bool_)  # members with idle GPUs
    n_first, n_grow = 0, 0
    for p in range(P):  # counted first, exactly, so that the arrays are allocated once at their size
        for n in range(N):
            if free[p, n] > 0:
                active[p] = True
                break
        if not active[p]:
            continue
        for j in range(J):
            if k[p, j] == 0:  # an idle job: its first placements
                for n in range(N):
                    n_first += free[p, n] >= need_clip[j] and start_gains[j, n]
                continue
            n = node_of[p, j]
            t = node_type[n]
            kn = min(k[p, j] + 1, K)
            if nodes[p, j] != 1 or k[p, j] >= limit[j] or not single_ok[j, t, kn] or free[p, n] < 1:
                continue
            kc = min(k[p, j], K)
            base = util_kept[j, t, kc] if has_kept and kept[p, j] else util_single[j, t, kc]
            gg = util_single[j, t, kn] - base
            if np.isfinite(gg) and gg > 0:
                grow[p, j] = gg
                n_grow += 1
    M = n_first + n_grow
    mp = np.empty(M, np.int64)
    mj = np.empty(M, np.int64)
    mn = np.empty(M, np.int64)
    gain = np.empty(M, np.float64)
    s = 0
    for p in range(P):  # first placements in (member, job, node) order
        if active[p]:
            for j in range(J):
                if k[p, j] == 0:
                    for n in range(N):
                        if free[p, n] >= need_clip[j] and start_gains[j, n]:
                            mp[s], mj[s], mn[s], gain[s] = p, j, n, gain_start[j, n]
                            s += 1
    n_start = s
    for p in range(P):  # then the grows in (member, job) order
        if active[p]:
            for j in range(J):
                if grow[p, j] > 0:
                    mp[s], mj[s], mn[s], gain[s] = p, j, node_of[p, j], grow[p, j]
                    s += 1
    return mp[:s], mj[:s], mn[:s], gain[:s], n_start


@_jit
def _picks(mp: Array, mn: Array, mj: Array, score: Array, free: Array, N: int) -> Array:
    """Per (member, node) with candidates, in that order, the move with the ``r % n``-th highest score of its
    ``n`` candidates (ties to the lower job), where the node is the member's ``r``-th (from 0) with idle GPUs."""
    P = free.shape[0]
    count = np.zeros(P * N + 1, np.int64)
    for i in range(len(mp)):
        count[mp[i] * N + mn[i] + 1] += 1
    for g in range(P * N):
        count[g + 1] += count[g]  # count[g]: where group g's candidates start
    bucket = np.empty(len(mp), np.int64)
    fill = count[:-1].copy()
    for i in range(len(mp)):
        g = mp[i] * N + mn[i]
        bucket[fill[g]] = i
        fill[g] += 1
    out = np.empty(P * N, np.int64)
    n_out = 0
    for p in range(P):
        rank = -1
        for n in range(N):
            if free[p, n] > 0:
                rank += 1
            lo, hi = count[p * N + n], count[p * N + n + 1]
            if hi == lo:
                continue
            _sort_best_first(bucket, lo, hi, score, mj)
            out[n_out] = bucket[lo + rank % (hi - lo)]
            n_out += 1
    return out[:n_out]


@_jit
def _sort_best_first(bucket: Array, lo: int, hi: int, score: Array, mj: Array) -> None:
    """Insertion sort of ``bucket[lo:hi]`` (a handful of moves): highest score first, then the lower job."""
    for x in range(lo + 1, hi):
        c = bucket[x]
        y = x - 1
        while y >= lo and (score[bucket[y]] < score[c] or (score[bucket[y]] == score[c] and mj[bucket[y]] > mj[c])):
            bucket[y + 1] = bucket[y]
            y -= 1
        bucket[y + 1] = c


@_jit
def byte_cells(a: Array) -> tuple[Array, bool]:
    """Each member's cells as one byte each, row after row, and whether every cell lies in 0..255 (the bytes are
    meaningless when not). Shapes: a (P, J, N) integers -> (P, J * N) uint8, bool."""
    P, J, N = a.shape
    out = np.empty((P, J * N), np.uint8)
    for p in range(P):
        for j in range(J):
            for n in range(N):
                v = a[p, j, n]
                if v < 0 or v > 255:
                    return out, False
                out[p, j * N + n] = v
    return out, True
