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

from collections.abc import Mapping, Sequence

import numpy as np

from goodopt.arrays import Array, ArrayIn

#: Gavel's default minimum time between two allocation resets (``minimum_time_between_allocation_resets``).
GAVEL_RESET_INTERVAL_S = 1920.0
#: Gavel's priority of a job on a type no job has run on since the reset ("not inf, so 2 x it is larger").
FIRST_PRIORITY = 1e9


class GavelRounds:
    """Credits, deficits and the allocation of the jobs present; jobs are keyed by name, in arrival order."""

    def __init__(self, n_types: int, round_s: float, reset_interval_s: float = GAVEL_RESET_INTERVAL_S):
        self.K, self.round_s, self.interval = int(n_types), float(round_s), float(reset_interval_s)
        self.credit: dict[str, Array] = {}  # t_jk, insertion order = arrival order
        self.deficit: dict[str, Array] = {}
        self.worker_s = np.zeros(self.K)  # W_k
        self.allocation: dict[str, Array] = {}
        self.last_reset = 0.0
        self.changed = False

    def sync(self, names: Sequence[str]) -> None:
        """Add jobs that arrived (half a round of credit on every type) and drop jobs that left."""
        present = set(names)
        for gone in [n for n in self.credit if n not in present]:
            del self.credit[gone], self.deficit[gone]
            self.changed = True
        for n in names:
            if n not in self.credit:
                self.credit[n] = np.full(self.K, self.round_s / 2)
                self.deficit[n] = np.zeros(self.K)
                self.changed = True

    def due(self, t: float) -> bool:
        """Whether the allocation is recomputed now: the jobs changed and the interval passed (or no reset
        happened after time 0 yet)."""
        return self.changed and (self.last_reset == 0 or t - self.last_reset >= self.interval)

    def reset(self, t: float, allocation: Mapping[str, ArrayIn]) -> None:
        """Settle the deficits of the period that ends, restart every credit at half a round and take the new
        ``allocation`` (name -> (K,) fractions)."""
        elapsed = t - self.last_reset
        for n, c in self.credit.items():
            owed = self.allocation.get(n, np.zeros(self.K)) * elapsed
            self.deficit[n] += owed - (c - self.round_s / 2)
            c[:] = self.round_s / 2
        self.worker_s = np.full(self.K, len(self.credit) * self.round_s / 2)
        self.allocation = {n: np.asarray(x, dtype=float) for n, x in allocation.items()}
        self.last_reset, self.changed = t, False

    def priorities(self, names: Sequence[str], runnable: Array) -> Array:
        """Each job's priority per type. Shapes: runnable (J, K) -> (J, K)."""
        x = self.fractions(names)
        t = np.array([self.credit[n] for n in names]).reshape(len(names), self.K)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(self.worker_s > 0, t / np.where(self.worker_s > 0, self.worker_s, 1.0), 0.0)
            p = np.where(share > 0, x / np.where(share > 0, share, 1.0), x * FIRST_PRIORITY)
        return np.where((x > 0) & runnable, p, 0.0)

    def fractions(self, names: Sequence[str]) -> Array:
        """The allocation's rows (zeros for a job not in it). Shapes: -> (J, K)."""
        zero = np.zeros(self.K)
        return np.array([self.allocation.get(n, zero) for n in names]).reshape(len(names), self.K)

    def assign(self, names: Sequence[str], scale_factor: ArrayIn, capacity: ArrayIn, runnable: Array,
               type_order: ArrayIn) -> Array:
        """GPU type index per job for the next round (-1 = none; a queued job outside the allocation also
        gets its type here, its GPUs left idle: see :meth:`runs`). Shapes: scale_factor (J,), capacity (K,),
        runnable (J, K) -> (J,)."""
        J = len(names)
        prio = self.priorities(names, runnable)
        x = self.fractions(names)
        deficit = np.array([self.deficit[n] for n in names]).reshape(J, self.K)
        free = np.asarray(capacity, dtype=np.int64).tolist()
        s = np.asarray(scale_factor, dtype=np.int64).tolist()
        out = [-1] * J
        for k in np.asarray(type_order).tolist():
            can = runnable[:, k].tolist()
            # descending on (priority, deficit, fraction), ties in arrival order: a stable sort on the negated keys
            for j in np.lexsort((-x[:, k], -deficit[:, k], -prio[:, k])).tolist():
                if free[k] == 0:
                    break
                if out[j] < 0 and can[j] and s[j] <= free[k]:
                    out[j] = k
                    free[k] -= s[j]
        return np.array(out, dtype=np.int64)

    def runs(self, names: Sequence[str]) -> Array:
        """Which jobs may be given GPUs: those in the current allocation. Shapes: -> (J,) bool."""
        return np.array([n in self.allocation for n in names], dtype=bool)

    def record(self, names: Sequence[str], types: ArrayIn, seconds: ArrayIn) -> None:
        """Credit each job of ``names`` that ran its ``seconds`` on its type (and the type's total, added in
        the order given). Shapes: names (n,), types (n,) int, seconds (n,)."""
        for name, k, sec in zip(names, np.asarray(types).tolist(), np.asarray(seconds, dtype=float).tolist()):
            self.credit[name][k] += sec
        np.add.at(self.worker_s, np.asarray(types, dtype=np.int64), np.asarray(seconds, dtype=float))
