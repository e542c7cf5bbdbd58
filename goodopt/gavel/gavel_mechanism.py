"""Gavel's own round mechanism, as its simulator runs it (``mechanism: gavel`` of a rigid run).

It differs from :class:`~goodopt.gavel.round_mechanism.RoundMechanism` in four ways,
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

import math

import numpy as np
from numba import njit

from ..arrays import Array, ArrayIn

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
        prio = np.empty((len(ids), self.K))
        _priorities(self.share, self.credit, self.worker_s, ids, np.asarray(runnable, dtype=np.bool_), prio)
        return prio

    def assign(self, ids: ArrayIn, scale_factor: ArrayIn, capacity: ArrayIn, runnable: Array,
               type_order: ArrayIn) -> Array:
        """GPU type index per job for the next round (-1 = none; a queued job outside the allocation also
        gets its type here, its GPUs left idle: see :meth:`runs`). Each type in ``type_order`` takes its
        queue: the jobs not yet placed that can run on it, descending on (priority, deficit, fraction), ties
        in the order of ``ids``, placed first fit. One compiled call (:func:`_assign`; a stable merge sort, so
        the order is a stable sort's on the negated keys). Shapes: ids, scale_factor (J,), capacity (K,),
        runnable (J, K) -> (J,)."""
        ids = np.asarray(ids, dtype=np.int64)
        runnable = np.asarray(runnable, dtype=np.bool_)
        prio = self.priorities(ids, runnable)
        out = np.full(len(ids), -1, dtype=np.int64)
        _assign(self.share, self.deficit, ids, prio, runnable, np.asarray(scale_factor, dtype=np.int64),
                np.asarray(capacity, dtype=np.int64), np.asarray(type_order, dtype=np.int64), out)
        return out

    def round_types(self, ids: Array, scale_factor: Array, capacity: Array, rate: Array, type_order: Array) -> Array:
        """One round's types, as the simulator asks for them: :meth:`assign` with the jobs runnable where their
        speed ``rate`` is positive, then -1 for every job outside the current allocation (:meth:`runs`), in one
        compiled call. Shapes: ids, scale_factor (J,) int64, capacity, type_order (K,) int64, rate (J, K) ->
        (J,)."""
        out = np.full(len(ids), -1, dtype=np.int64)
        _round_types(self.share, self.credit, self.worker_s, self.deficit, self.allocated, ids, rate, scale_factor,
                     capacity, type_order, out)
        return out

    def runs(self, ids: ArrayIn) -> Array:
        """Which jobs may be given GPUs: those in the current allocation. Shapes: ids (J,) -> (J,) bool."""
        return self.allocated[np.asarray(ids, dtype=np.int64)]

    def record(self, ids: ArrayIn, types: ArrayIn, seconds: ArrayIn) -> None:
        """Credit each job of ``ids`` (distinct) that ran its ``seconds`` on its type (and the type's total,
        added in the order given). Shapes: ids, types (n,) int, seconds (n,)."""
        ids, types = np.asarray(ids, dtype=np.int64), np.asarray(types, dtype=np.int64)
        _record(self.credit, self.worker_s, ids, types, np.asarray(seconds, dtype=float))


_jit = njit(cache=True, nogil=True, error_model="numpy")  # x / 0 as numpy gives it (guarded anyway)


@_jit
def _priorities(share: Array, credit: Array, worker_s: Array, ids: Array, runnable: Array, out: Array) -> None:
    """``X_jk / (t_jk / W_k)`` (``X_jk * FIRST_PRIORITY`` while ``W_k`` is 0); 0 where ``X_jk`` is 0 or the job
    cannot run on the type. Shapes: ids (J,), runnable, out (J, K)."""
    for i in range(len(ids)):
        for k in range(share.shape[1]):
            x = share[ids[i], k]
            part = credit[ids[i], k] / worker_s[k] if worker_s[k] > 0 else 0.0
            p = x / part if part > 0 else x * FIRST_PRIORITY
            out[i, k] = p if x > 0 and runnable[i, k] else 0.0


@_jit
def _round_types(share: Array, credit: Array, worker_s: Array, deficit: Array, allocated: Array, ids: Array,
                 rate: Array, size: Array, capacity: Array, type_order: Array, out: Array) -> None:
    """:meth:`GavelRounds.round_types` into ``out`` (all -1 on entry)."""
    runnable = rate > 0
    prio = np.empty(rate.shape)
    _priorities(share, credit, worker_s, ids, runnable, prio)
    _assign(share, deficit, ids, prio, runnable, size, capacity, type_order, out)
    for i in range(len(ids)):
        if not allocated[ids[i]]:
            out[i] = -1


@_jit
def _record(credit: Array, worker_s: Array, ids: Array, types: Array, seconds: Array) -> None:
    """:meth:`GavelRounds.record`: each job's seconds to its credit, and to its type's total in the order given."""
    for i in range(len(ids)):
        credit[ids[i], types[i]] += seconds[i]
        worker_s[types[i]] += seconds[i]


@_jit
def _assign(share: Array, deficit: Array, ids: Array, prio: Array, runnable: Array, size: Array, capacity: Array,
            type_order: Array, out: Array) -> None:
    """Each type of ``type_order`` takes its queue first fit (:meth:`GavelRounds.assign`); writes ``out``."""
    J = len(ids)
    queue = np.empty(J, np.int64)
    spare = np.empty(J, np.int64)
    for k in type_order:
        n = 0
        for i in range(J):
            if runnable[i, k] and out[i] < 0:
                queue[n] = i
                n += 1
        _merge_sort(queue, spare, n, prio[:, k], deficit, share, ids, k)
        free = capacity[k]
        taken = 0
        while taken < n and size[queue[taken]] <= free:  # the longest prefix that fits
            free -= size[queue[taken]]
            out[queue[taken]] = k
            taken += 1
        for q in range(taken + 1, n):  # past the first job that did not fit: the next ones that do
            if free <= 0:
                break
            if size[queue[q]] <= free:
                free -= size[queue[q]]
                out[queue[q]] = k


@_jit
def _before(a: int, b: int, p: Array, deficit: Array, share: Array, ids: Array, k: int) -> bool:
    """Whether job ``a`` comes strictly before ``b``: higher priority, then deficit, then fraction (a NaN key
    last and equal to another NaN, as numpy sorts the negated keys)."""
    for x, y in ((p[a], p[b]), (deficit[ids[a], k], deficit[ids[b], k]), (share[ids[a], k], share[ids[b], k])):
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        return not math.isnan(x) and (math.isnan(y) or x > y)
    return False


@_jit
def _merge_sort(queue: Array, spare: Array, n: int, p: Array, deficit: Array, share: Array, ids: Array,
                k: int) -> None:
    """Sort ``queue[:n]`` stably by :func:`_before` (bottom-up merges; ``spare`` is scratch of the same size)."""
    width, swapped = 1, False
    src, dst = queue, spare
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, o = lo, mid, lo
            while i < mid and j < hi:
                if _before(src[j], src[i], p, deficit, share, ids, k):  # the right one only when strictly first
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i, o = i + 1, o + 1
            while j < hi:
                dst[o] = src[j]
                j, o = j + 1, o + 1
        src, dst = dst, src
        width, swapped = 2 * width, not swapped
    if swapped:  # the sorted run ended in the scratch array
        queue[:n] = spare[:n]
