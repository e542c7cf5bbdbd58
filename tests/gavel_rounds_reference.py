"""Gavel's round assignment as whole-array operations: the statement that the compiled assignment of
:class:`goodopt.gavel.gavel_mechanism.GavelRounds` must match job for job."""

from __future__ import annotations

import numpy as np

from goodopt.arrays import Array

FIRST_PRIORITY = 1e9


def priorities(share: Array, credit: Array, worker_s: Array, ids: Array, runnable: Array) -> Array:
    x, t = share[ids], credit[ids]
    with np.errstate(divide="ignore", invalid="ignore"):
        part = np.where(worker_s > 0, t / np.where(worker_s > 0, worker_s, 1.0), 0.0)
        p = np.where(part > 0, x / np.where(part > 0, part, 1.0), x * FIRST_PRIORITY)
    return np.where((x > 0) & runnable, p, 0.0)


def assign(share: Array, deficit: Array, prio: Array, ids: Array, size: Array, capacity: Array, runnable: Array,
           type_order: Array) -> Array:
    x, d = share[ids], deficit[ids]
    free = capacity.astype(np.int64).copy()
    out = np.full(len(ids), -1, dtype=np.int64)
    for k in type_order.tolist():
        queue = np.lexsort((-x[:, k], -d[:, k], -prio[:, k]))  # a stable sort on the negated keys
        queue = queue[runnable[queue, k] & (out[queue] < 0)]
        out[first_fit(queue, size, int(free[k]))] = k
    return out


def first_fit(queue: Array, size: Array, free: int) -> Array:
    need = size[queue]
    taken = np.searchsorted(np.cumsum(need), free, side="right")  # the longest prefix that fits
    picked = [queue[:taken]]
    free -= int(need[:taken].sum())
    rest = taken + 1
    while free > 0 and rest < len(queue):
        fits = np.flatnonzero(need[rest:] <= free)
        if not len(fits):
            break
        i = rest + int(fits[0])
        picked.append(queue[i:i + 1])
        free -= int(need[i])
        rest = i + 1
    return np.concatenate(picked)
