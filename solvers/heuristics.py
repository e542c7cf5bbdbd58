"""Constructive baselines: marginal-gain greedy and equal share.

Both work on the job configurations of :mod:`goodopt.formulations.configs`
and place them with the same rules as everything else (one GPU type per job,
single-node best fit, multi-node on nodes no other multi-node job uses when
interference avoidance is on).

**Greedy** repeatedly applies the configuration change with the largest gain
of the objective per extra GPU, ``(u(S_new) - u(S_old)) / max(k_new - k_old,
1/2)``, where ``u(S) = ± w h(S + eps)`` is the job's term of the p-norm
objective oriented so that larger is better (for ``p = ±inf`` the ranking
uses ``p = ±8``). Gains are compared in logs
(:func:`goodopt.formulations.scaled_objective.log_gain`), so at any p (an idle
job's ``eps^p`` overflows at p = -200) starting a job ranks above refining
one exactly when the objective says so. A change is applied only if the new configuration can be
placed in the free capacity plus the job's own GPUs; a change that cannot be
placed is not retried. It stops when no change gains.

**Equal share** gives every job, in job order, the largest configuration not
above ``floor(total GPUs / n_jobs)`` (at least one GPU) that it can be placed
with, preferring its current placement and single-node configurations.
"""

from __future__ import annotations

import time

import numpy as np
from goodopt.formulations.configs import ConfigSet, match_configs
from goodopt.formulations.scaled_objective import log_gain, log_terms

from goodopt.arrays import Array, ArrayIn
from goodopt.placement import move_job
from goodopt.problem import AllocationProblem

_MAX_TRIES_PER_STEP = 64
#: Greedy steps between two looks at the clock when a deadline is given.
_STEPS_PER_CLOCK_CHECK = 16


class _State:
    """Allocation under construction with incremental free capacity."""

    def __init__(self, problem: AllocationProblem, configs: ConfigSet, alloc: ArrayIn | None = None,
                 chosen: ArrayIn | None = None) -> None:
        self.pr, self.cs = problem, configs
        J, N = problem.n_jobs, problem.n_nodes
        self.alloc = np.zeros((J, N), np.int64) if alloc is None else np.array(alloc, dtype=np.int64)
        self.chosen = np.full(J, -1, np.int64) if chosen is None else np.array(chosen, dtype=np.int64)
        self.free = problem.node_capacity - self.alloc.sum(axis=0)
        multi = (self.alloc > 0).sum(axis=1) > 1
        self.multi_count = (self.alloc[multi] > 0).sum(axis=0)

    def try_set(self, j: int, c: int) -> bool:
        """Move job j to config c if it can be placed; return success."""
        moved = move_job(self.pr, self.cs, j, c, self.alloc[j], self.free, self.multi_count)
        if moved is None:
            return False
        self.alloc[j], self.free, self.multi_count = moved
        self.chosen[j] = c
        return True


def greedy(problem: AllocationProblem, configs: ConfigSet, *, start: ArrayIn | None = None,
           start_chosen: ArrayIn | None = None, deadline: float | None = None) -> tuple[Array, Array, int]:
    """Marginal-gain greedy from ``start`` (default: nothing allocated).

    ``deadline`` (a ``time.perf_counter()`` value): stop there, with the
    allocation built so far (feasible after every step). Returns ``(alloc,
    chosen, n_steps)``. Shapes: start (J, N) -> (J, N), (J,).
    """
    pr, cs = problem, configs
    st = _State(pr, cs, start, start_chosen)
    if start is not None and start_chosen is None:
        st.chosen = match_configs(pr, cs, st.alloc)
    rank = _Ranking(pr, cs, st.chosen)
    steps = 0
    while True:
        cand = rank.candidates(st.free)
        if not len(cand):
            break
        moved = False
        for c in cand[_top_stable(-rank.ratio[cand], _MAX_TRIES_PER_STEP)]:
            if st.try_set(int(cs.job[c]), int(c)):
                moved = True
                rank.moved(int(c))
                break
            rank.unplaceable(int(c))
        steps += 1
        if not moved and len(cand) <= _MAX_TRIES_PER_STEP:
            break
        if deadline is not None and steps % _STEPS_PER_CLOCK_CHECK == 0 and time.perf_counter() >= deadline:
            break
    return st.alloc, st.chosen, steps


class _Ranking:
    """Greedy's view of every configuration, kept up to date one job at a time.

    Per configuration: its job's current log term and GPU count, the log gain
    per extra GPU of moving there, the GPUs the move needs beyond the job's own
    of that type, and whether it gains and was not found unplaceable. A move
    changes one job's entries only, so only that job's slice is recomputed; a
    step then passes over the configurations a few times (mixed-2048: 58k of
    them, greedy 3.2 s -> 1.5 s of CPU against recomputing every entry each step,
    the same steps and answer).
    """

    def __init__(self, pr: AllocationProblem, cs: ConfigSet, chosen: Array) -> None:
        self.pr, self.cs = pr, cs
        self.lt_cfg, lt_idle = log_terms(pr, cs)
        self.w_cfg = pr.weights[cs.job]
        cur = chosen[cs.job]
        has = cur >= 0
        self.lt_cur = np.where(has, self.lt_cfg[np.maximum(cur, 0)], lt_idle[cs.job])
        self.k_cur = np.where(has, cs.n_gpus[np.maximum(cur, 0)], 0)
        self.type_cur = np.where(has, cs.gpu_type[np.maximum(cur, 0)], -1)
        self.dead = np.zeros(cs.n_configs, bool)
        self.ratio = np.zeros(cs.n_configs)
        self.need = np.zeros(cs.n_configs, np.int64)
        self.alive = np.zeros(cs.n_configs, bool)
        self._refresh(slice(None))
        # which free GPUs bound a configuration's need: its type's in all (2g + 1: spread over nodes, or a
        # keep), or the most on one node of its type (2g: a single-node move; never more than the type's in all)
        self.limit_of = 2 * cs.gpu_type + (cs.multi | cs.keep)

    def _refresh(self, sl: slice) -> None:
        """Recompute the entries of ``sl`` from the current log terms, GPU counts and types."""
        cs = self.cs
        self.ratio[sl] = _log_ratio(self.pr, cs, self.lt_cur, self.lt_cfg, self.w_cfg, self.k_cur, sl)
        self.need[sl] = cs.n_gpus[sl] - np.where(self.type_cur[sl] == cs.gpu_type[sl], self.k_cur[sl], 0)
        self.alive[sl] = (self.lt_cfg[sl] - self.lt_cur[sl] > 1e-12) & ~self.dead[sl]

    def candidates(self, free: Array) -> Array:
        """The configurations that gain and pass the aggregate capacity filter: a move needs k GPUs of its type
        (one node's worth if single-node) among the ``free`` ones plus the job's own GPUs of that type.
        Shapes: free (N,) -> (n,) ascending."""
        pr, G = self.pr, self.pr.n_gpu_types
        free_tot = np.bincount(pr.node_type, weights=free, minlength=G)
        free_max = np.zeros(G)
        np.maximum.at(free_max, pr.node_type, free)
        limit = np.column_stack([free_max, free_tot]).ravel()
        return np.flatnonzero(self.alive & (self.need <= limit[self.limit_of]))

    def moved(self, c: int) -> None:
        """Its job now runs configuration ``c``."""
        cs = self.cs
        sl = cs.of_job(int(cs.job[c]))
        self.lt_cur[sl], self.k_cur[sl], self.type_cur[sl] = self.lt_cfg[c], cs.n_gpus[c], cs.gpu_type[c]
        self._refresh(sl)

    def unplaceable(self, c: int) -> None:
        """Configuration ``c`` could not be placed: it is not tried again."""
        self.dead[c], self.alive[c] = True, False


def _log_ratio(pr: AllocationProblem, cs: ConfigSet, lt_cur: Array, lt_cfg: Array, w_cfg: Array, k_cur: Array,
               sl: slice) -> Array:
    """Log of the objective gain per extra GPU of moving to each configuration in ``sl``. Shapes: -> (len(sl),)."""
    gain = log_gain(pr, lt_cur[sl], lt_cfg[sl], w_cfg[sl])
    return gain - np.log(np.maximum(cs.n_gpus[sl] - k_cur[sl], 0.5))


def _top_stable(key: Array, n: int) -> Array:
    """Indices of the ``n`` smallest keys in stable order (ties by position). Shapes: (C,) -> (<= n,)."""
    if len(key) <= n:
        return np.argsort(key, kind="stable")
    cut = np.partition(key, n - 1)[n - 1]
    idx = np.flatnonzero(key <= cut)
    return idx[np.argsort(key[idx], kind="stable")][:n]


def equal_share(problem: AllocationProblem, configs: ConfigSet) -> tuple[Array, Array]:
    """Equal GPU count per job, packed. Returns ``(alloc, chosen)``."""
    pr, cs = problem, configs
    st = _State(pr, cs)
    share = max(1, pr.n_gpus // max(pr.n_jobs, 1))
    for j in range(pr.n_jobs):
        idx = np.arange(cs.job_start[j], cs.job_start[j + 1])
        idx = idx[cs.n_gpus[idx] <= share]
        if not len(idx):
            continue
        order = idx[np.lexsort((cs.multi[idx], ~cs.keep[idx], -cs.n_gpus[idx]))]
        for c in order:
            if st.try_set(j, int(c)):
                break
    return st.alloc, st.chosen


def canonicalize(problem: AllocationProblem, configs: ConfigSet, alloc: ArrayIn) -> tuple[Array, Array]:
    """Shrink each row to the best configuration of its class it dominates.

    A row whose (type, count, spread) was pruned as dominated gives up GPUs to
    become the frontier configuration with the best speedup at no more GPUs
    (never lowering the job's speedup); a row with no valid configuration at
    all is emptied. Feasible allocations stay feasible.

    Shapes: (J, N) -> (J, N), chosen (J,).
    """
    pr, cs = problem, configs
    a = np.array(alloc, dtype=np.int64)
    chosen = match_configs(pr, cs, a)
    k = a.sum(axis=1)
    nodes = (a > 0).sum(axis=1)
    onehot = (pr.node_type[:, None] == np.arange(pr.n_gpu_types)[None, :]).astype(np.int64)
    g = (a @ onehot).argmax(axis=1)
    for j in np.flatnonzero((chosen < 0) & (k > 0)):
        sl = np.arange(cs.job_start[j], cs.job_start[j + 1])
        multi = nodes[j] > 1
        ok = sl[(cs.gpu_type[sl] == g[j]) & (cs.n_gpus[sl] <= k[j]) & ~cs.keep[sl]
                & ((cs.multi[sl] == multi) | ~cs.multi[sl] & (nodes[j] == 1))]
        if not len(ok) or multi and not cs.multi[ok].any():
            a[j] = 0
            continue
        if multi:
            ok = ok[cs.multi[ok]]
        c = int(ok[np.argmax(cs.speedup[ok])])
        a[j] = _shrink(a[j], int(cs.n_gpus[c]), bool(cs.multi[c]))
        chosen[j] = c
    return a, chosen


def _shrink(row: Array, k: int, multi: bool) -> Array:
    """Remove GPUs from ``row`` down to ``k``, keeping >= 2 nodes when ``multi``."""
    row = row.copy()
    excess = int(row.sum()) - k
    for n in np.argsort(row, kind="stable"):  # smallest entries first
        if excess <= 0:
            break
        keep_min = 1 if (multi and (row > 0).sum() <= 2) else 0
        take = min(excess, row[n] - keep_min) if row[n] > 0 else 0
        row[n] -= take
        excess -= take
    return row
