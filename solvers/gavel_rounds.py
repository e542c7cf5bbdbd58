"""Gavel's own round mechanism, as its simulator runs it (``mechanism: gavel`` of a rigid run).

It differs from :class:`~goodopt.solvers.rounds.RoundMechanism` in four ways,
each read from Gavel's scheduler:

* **time credits since the last reset.** ``t_jk`` counts the seconds job ``j``
  ran on type ``k`` since the allocation was last recomputed, and ``W_k`` the
  seconds all jobs ran on ``k``. A reset sets every ``t_jk`` to half a round
  (and ``W_k`` to their sum); a job that arrives gets half a round on every
  type too, without adding to ``W_k``;
* **priority** ``X_jk / (t_jk / W_k)`` (``X_jk * 1e9`` while ``W_k = 0``; 0
  where ``X_jk = 0`` or the job is not in the current allocation);
* **one queue per type, types in turn**: each type's jobs are sorted by
  (priority, deficit, fraction) from the highest, ties in arrival order, and
  the types' queues are taken one after the other (fastest type first for a
  heterogeneity-aware policy, in a shuffled order each round for an agnostic
  one). A job is taken where it is not yet placed and its GPUs are free, also
  at priority 0 (which makes the mechanism work-conserving);
* **the allocation is recomputed only at a reset**, when the set of jobs
  changed and ``reset_interval_s`` (Gavel: 1,920 s) passed since the last
  one. A job that arrived since is not in the allocation: it may be queued
  but is given no GPUs until the next reset (its GPUs idle that round).

The **deficit** (what a job should have received minus what it did, summed
over resets) only breaks ties, as in Gavel.
"""

from __future__ import annotations

import numpy as np

from goodopt.arrays import Array, ArrayIn

#: Gavel's default minimum time between two allocation resets (``minimum_time_between_allocation_resets``).
GAVEL_RESET_INTERVAL_S = 1920.0
#: Gavel's priority of a job on a type no job has run on since the reset ("not inf, so 2 x it is larger").
FIRST_PRIORITY = 1e9


class GavelRounds:
    """Credits, deficits and the allocation of the jobs present, as arrays indexed by job id.

    Jobs are named by distinct non-negative integer ids (a rigid run's trace indices); every per-job quantity
    is a row of a (ids, K) array, so a round costs a few array operations however many jobs are queued.
    """

    def __init__(self, n_types: int, round_s: float, reset_interval_s: float = GAVEL_RESET_INTERVAL_S):
        self.K, self.round_s, self.interval = int(n_types), float(round_s), float(reset_interval_s)
        self.credit = np.zeros((0, self.K))  # t_jk
        self.deficit = np.zeros((0, self.K))
        self.share = np.zeros((0, self.K))  # X_jk of the current allocation (0 outside it)
        self.present = np.zeros(0, dtype=bool)  # the job is in the system
        self.allocated = np.zeros(0, dtype=bool)  # the job is in the current allocation
        self.worker_s = np.zeros(self.K)  # W_k
        self.last_reset = 0.0
        self.changed = False

    def _grow(self, n: int) -> None:
        """Room for ids below ``n`` (capacity doubled as needed)."""
        have = len(self.present)
        if n <= have:
            return
        m = max(n, 2 * have, 64)
        for name in ("credit", "deficit", "share"):
            setattr(self, name, np.vstack([getattr(self, name), np.zeros((m - have, self.K))]))
        self.present = np.concatenate([self.present, np.zeros(m - have, dtype=bool)])
        self.allocated = np.concatenate([self.allocated, np.zeros(m - have, dtype=bool)])

    def sync(self, ids: ArrayIn) -> None:
        """Add jobs that arrived (half a round of credit on every type) and drop jobs that left."""
        ids = np.asarray(ids, dtype=np.int64)
        self._grow(int(ids.max(initial=-1)) + 1)
        listed = np.zeros(len(self.present), dtype=bool)
        listed[ids] = True
        gone = self.present & ~listed
        new = listed & ~self.present
        if gone.any() or new.any():
            self.changed = True
        self.present[gone] = False
        self.credit[new] = self.round_s / 2
        self.deficit[new] = 0.0
        self.present[new] = True

    def due(self, t: float) -> bool:
        """Whether the allocation is recomputed now: the jobs changed and the interval passed (or no reset
        happened after time 0 yet)."""
        return self.changed and (self.last_reset == 0 or t - self.last_reset >= self.interval)

    def reset(self, t: float, ids: ArrayIn, allocation: ArrayIn) -> None:
        """Settle the deficits of the period that ends, restart every credit at half a round and take the new
        allocation: row ``i`` of ``allocation`` holds the fractions of job ``ids[i]``. Shapes: ids (n,),
        allocation (n, K)."""
        ids = np.asarray(ids, dtype=np.int64)
        self._grow(int(ids.max(initial=-1)) + 1)
        elapsed = t - self.last_reset
        rows = np.flatnonzero(self.present)
        owed = self.share[rows] * elapsed  # 0 outside the allocation
        self.deficit[rows] += owed - (self.credit[rows] - self.round_s / 2)
        self.credit[rows] = self.round_s / 2
        self.worker_s = np.full(self.K, len(rows) * self.round_s / 2)
        self.share[:] = 0.0
        self.allocated[:] = False
        self.share[ids] = np.asarray(allocation, dtype=float).reshape(len(ids), self.K)
        self.allocated[ids] = True
        self.last_reset, self.changed = t, False

    def priorities(self, ids: ArrayIn, runnable: Array) -> Array:
        """Each job's priority per type. Shapes: ids (J,), runnable (J, K) -> (J, K)."""
        ids = np.asarray(ids, dtype=np.int64)
        x = self.share[ids]
        t = self.credit[ids]
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(self.worker_s > 0, t / np.where(self.worker_s > 0, self.worker_s, 1.0), 0.0)
            p = np.where(share > 0, x / np.where(share > 0, share, 1.0), x * FIRST_PRIORITY)
        return np.where((x > 0) & runnable, p, 0.0)

    def assign(self, ids: ArrayIn, scale_factor: ArrayIn, capacity: ArrayIn, runnable: Array,
               type_order: ArrayIn) -> Array:
        """GPU type index per job for the next round (-1 = none; a queued job outside the allocation also
        gets its type here, its GPUs left idle: see :meth:`runs`). Shapes: ids, scale_factor (J,), capacity
        (K,), runnable (J, K) -> (J,)."""
        ids = np.asarray(ids, dtype=np.int64)
        prio = self.priorities(ids, runnable)
        x, deficit = self.share[ids], self.deficit[ids]
        s = np.asarray(scale_factor, dtype=np.int64)
        free = np.asarray(capacity, dtype=np.int64).copy()
        out = np.full(len(ids), -1, dtype=np.int64)
        for k in np.asarray(type_order).tolist():
            # descending on (priority, deficit, fraction), ties in arrival order: a stable sort on the negated keys
            queue = np.lexsort((-x[:, k], -deficit[:, k], -prio[:, k]))
            queue = queue[runnable[queue, k] & (out[queue] < 0)]
            out[_first_fit(queue, s, int(free[k]))] = k
        return out

    def runs(self, ids: ArrayIn) -> Array:
        """Which jobs may be given GPUs: those in the current allocation. Shapes: ids (J,) -> (J,) bool."""
        return self.allocated[np.asarray(ids, dtype=np.int64)]

    def record(self, ids: ArrayIn, types: ArrayIn, seconds: ArrayIn) -> None:
        """Credit each job of ``ids`` (distinct) that ran its ``seconds`` on its type (and the type's total,
        added in the order given). Shapes: ids, types (n,) int, seconds (n,)."""
        ids, types = np.asarray(ids, dtype=np.int64), np.asarray(types, dtype=np.int64)
        seconds = np.asarray(seconds, dtype=float)
        self.credit[ids, types] += seconds
        np.add.at(self.worker_s, types, seconds)


def _first_fit(queue: Array, size: Array, free: int) -> Array:
    """The jobs of ``queue`` (in order) that are placed when each takes its ``size`` GPUs if they still fit in
    ``free``. Shapes: queue (n,), size (J,) -> (m,) ids from ``queue``."""
    need = size[queue]
    taken = np.searchsorted(np.cumsum(need), free, side="right")  # the longest prefix that fits
    picked = [queue[:taken]]
    free -= int(need[:taken].sum())
    rest = taken + 1
    while free > 0 and rest < len(queue):  # past the first job that did not fit: the next ones that do
        fits = np.flatnonzero(need[rest:] <= free)
        if not len(fits):
            break
        i = rest + int(fits[0])
        picked.append(queue[i:i + 1])
        free -= int(need[i])
        rest = i + 1
    return np.concatenate(picked)
