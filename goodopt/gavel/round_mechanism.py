"""Gavel's round-based mechanism: integral per-round allocations that realise time fractions.

Given time fractions ``X`` (J, K) from a policy, each round gives every job
either one GPU type (all of its ``s_j`` GPUs there) or nothing. Over rounds,
the fraction of time job ``j`` received on type ``k`` approaches ``X_jk``:

* **priority** ``X_jk / r_jk`` with ``r_jk`` the fraction of the job's rounds
  so far spent on type ``k`` (infinite while ``r_jk = 0 < X_jk``; 0 where
  ``X_jk = 0``);
* **greedy assignment**: (job, type) pairs in decreasing priority; a job
  takes a type when it is not yet placed and ``s_j`` GPUs of the type are
  free. Ties go to the job's current type (**lease continuation**: it keeps
  running where it is, without a restart), then to larger ``X_jk``, then to
  the earlier job;
* **placement**: :func:`place_round` keeps a job's nodes when it stays on the
  same type with the same GPU count, and packs the others onto the freest
  nodes of their type.

The mechanism is deterministic and knows nothing of the simulator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ..arrays import Array, ArrayIn
from ..errors import ValidationError
from ..placement import place_packed_on


class RoundMechanism:
    """Received time per (job, type) across rounds; jobs are keyed by name."""

    def __init__(self, type_names: Iterable[str]) -> None:
        self.type_names = tuple(type_names)
        self.received: dict[str, Array] = {}
        self.rounds: dict[str, float] = {}

    def fractions_received(self, names: Sequence[str]) -> Array:
        """``r_jk``: share of each job's recorded time spent on each type. Shapes: -> (J, K)."""
        K = len(self.type_names)
        out = np.zeros((len(names), K))
        for i, n in enumerate(names):
            total = self.rounds.get(n, 0.0)
            if total > 0:
                out[i] = self.received[n] / total
        return out

    def priorities(self, names: Sequence[str], x: ArrayIn) -> Array:
        """``X / r`` (inf where ``r = 0 < X``, 0 where ``X = 0``). Shapes: (J, K) -> (J, K)."""
        x = np.asarray(x, dtype=float)
        r = self.fractions_received(names)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(r > 0, x / np.where(r > 0, r, 1.0), np.inf)
        return np.where(x > 1e-12, p, 0.0)

    def assign(self, names: Sequence[str], x: ArrayIn, scale_factor: ArrayIn, capacity: ArrayIn,
               current_type: ArrayIn | None = None, members: Sequence[Sequence[int]] | None = None) -> Array:
        """GPU type index per job for the next round (-1 = none).

        With space sharing the "jobs" are units -- a job alone or a pair sharing
        GPUs -- and ``members`` lists each unit's job indices: a unit is taken
        only while none of its jobs is placed yet.

        Shapes: x (J, K), scale_factor (J,), capacity (K,), current_type (J,) -> (J,).
        """
        x = np.asarray(x, dtype=float)
        J, K = x.shape
        if K != len(self.type_names) or len(names) != J:
            raise ValidationError("x", f"must have shape (jobs, types) = ({len(names)}, {len(self.type_names)})")
        s = np.asarray(scale_factor, dtype=np.int64)
        free = np.asarray(capacity, dtype=np.int64).copy()
        cur = np.full(J, -1) if current_type is None else np.asarray(current_type)
        prio = self.priorities(names, x)
        jj, kk = np.nonzero(prio > 0)
        # sort: priority desc, current type first, X desc, job index asc
        order = np.lexsort((jj, -x[jj, kk], (cur[jj] != kk).astype(int), -prio[jj, kk]))
        out = np.full(J, -1, dtype=np.int64)
        placed: set[int] = set()
        for i in order:
            j, k = int(jj[i]), int(kk[i])
            jobs = (j,) if members is None else members[j]
            if out[j] < 0 and free[k] >= s[j] and placed.isdisjoint(jobs):
                out[j] = k
                free[k] -= s[j]
                placed.update(jobs)
        return out

    def record(self, names: Sequence[str], assigned: ArrayIn, seconds: float) -> None:
        """Add ``seconds`` to every job's time and to its assigned type's received time."""
        K = len(self.type_names)
        for n, k in zip(names, assigned):
            if n not in self.received:
                self.received[n] = np.zeros(K)
                self.rounds[n] = 0.0
            self.rounds[n] += float(seconds)
            if k >= 0:
                self.received[n][int(k)] += float(seconds)

    def forget(self, names: Iterable[str]) -> None:
        """Drop the history of jobs that left."""
        for n in names:
            self.received.pop(n, None)
            self.rounds.pop(n, None)


def current_types(node_type: Array, current: Array) -> Array:
    """GPU type index of each job's current row (-1 for jobs holding no GPUs).

    Shapes: node_type (N,), current (J, N) -> (J,).
    """
    current = np.asarray(current)
    out = np.full(len(current), -1, dtype=np.int64)
    running = current.sum(axis=1) > 0
    out[running] = np.asarray(node_type)[np.argmax(current[running] > 0, axis=1)]
    return out


def place_round(node_type: Array, node_capacity: Array, assigned: Array, scale_factor: Array,
                current: Array | None = None) -> tuple[Array, list[int]]:
    """Node rows for a round's type assignment, keeping unchanged jobs in place.

    Returns the (J, N) allocation and the jobs that did not fit (left without
    GPUs this round). Shapes: node_type, node_capacity (N,); assigned,
    scale_factor (J,); current (J, N).
    """
    node_type = np.asarray(node_type)
    cap = np.asarray(node_capacity, dtype=np.int64)
    J, N = len(assigned), len(cap)
    cur = np.zeros((J, N), dtype=np.int64) if current is None else np.asarray(current, dtype=np.int64)
    alloc = np.zeros((J, N), dtype=np.int64)
    free = cap.copy()
    movers = []
    for j in range(J):  # lease continuation: same type, same count -> same nodes
        k = assigned[j]
        if k < 0:
            continue
        row = cur[j]
        if row.sum() == scale_factor[j] and row.any() and np.all(node_type[row > 0] == k) and np.all(row <= free):
            alloc[j] = row
            free -= row
        else:
            movers.append(j)
    failed = []
    for j in sorted(movers, key=lambda j: -int(scale_factor[j])):  # large jobs first
        k = assigned[j]
        nodes = np.flatnonzero(node_type == k)
        sub = place_packed_on(free[nodes], int(scale_factor[j]))
        if sub is None:
            failed.append(j)
            continue
        alloc[j, nodes] = sub
        free[nodes] -= sub
    return alloc, failed
