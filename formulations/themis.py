r"""Themis's round (NSDI'20): finish-time fairness, the fairness filter and the allocation auction, for rigid jobs.

Data of one round: active jobs ``j`` asking for ``k_j`` GPUs, in the system for ``e_j`` seconds, with ``r_j``
seconds of work left at ``k_j`` GPUs and ``s_j`` seconds of work in all at ``k_j`` GPUs; a cluster of ``C``
GPUs shared by ``J`` jobs; a lease of ``L`` seconds (at least a round); the fairness knob ``f`` in ``[0, 1)``.
Jobs running on a lease that has not ended keep their GPUs; the others bid for the ``G`` GPUs those leases
leave free.

Finish-time fairness (Themis's ``rho``): the job's finish time in the shared cluster over its finish time
alone on an equal ``1/J`` share of it. Alone on its share the job runs at ``min(1, C / (J k_j))`` of its
speed at ``k_j`` GPUs, so::

    (1)  T^id_j  = s_j / min(1, C / (J k_j))                          (finish time on an equal share)
    (2)  rho_j   = (e_j + r_j) / T^id_j                               (if it runs from now on)
    (3)  rho^0_j = (e_j + L + r_j) / T^id_j                           (if it waits one lease)

The filter: of the ``P`` jobs holding no lease, only the ``ceil((1 - f) P)`` of largest ``rho_j`` (at least
one; ties to the earlier arrival) bid for the free GPUs; ``f = 0`` lets every one bid. Each bidder ``j`` values
a lease by how much it lowers its ``rho``, and the arbiter picks the bids that maximise the product of those values (Nash social
welfare; the partial-allocation auction's objective), a 0/1 knapsack in the logs::

    (4)  maximise   sum_{j in V} x_j log(rho^0_j / rho_j)
    (5)  s.t.       sum_{j in V} k_j x_j <= G                         (the GPUs offered)
    (6)             x_j in {0, 1}

where ``V`` are the bidders; winners get a lease of ``L``. The weights are whole numbers of GPUs, so
:func:`auction` solves (4)-(6) exactly by dynamic programming over the GPUs (``O(|V| G)``); ties go to the
earlier job. GPUs no winner takes are handed to the other jobs in decreasing ``rho`` as they fit (Themis
gives leftovers to the jobs outside the filter: work conservation), on the same lease.

Left out: the auction's hidden payments (the partial-allocation mechanism withholds a share of each winner's
GPUs so that bidding truthfully pays); bids here are computed from the true remaining work, so no job can
misreport and nothing would be withheld for it.
"""

from __future__ import annotations

import math

import numpy as np

from goodopt.arrays import Array, ArrayIn


def isolated_time(total_s: ArrayIn, gpus: ArrayIn, n_gpus: int, n_jobs: int) -> Array:
    """(1): each job's finish time alone on an equal share of the cluster. Shapes: total_s, gpus (J,) -> (J,)."""
    share = np.minimum(1.0, n_gpus / (n_jobs * np.asarray(gpus, dtype=float)))
    return np.asarray(total_s, dtype=float) / share


def finish_time_fairness(elapsed_s: ArrayIn, remaining_s: ArrayIn, isolated_s: ArrayIn) -> Array:
    """(2), or (3) with ``elapsed_s`` one lease later: shared finish time over isolated finish time."""
    return (np.asarray(elapsed_s, float) + np.asarray(remaining_s, float)) / np.asarray(isolated_s, float)


def bidders(rho: ArrayIn, fairness_knob: float) -> Array:
    """The filter: indices of the ``ceil((1 - f) J)`` jobs of largest ``rho`` (ties to the lower index),
    in that order. Shapes: rho (J,) -> (B,)."""
    rho = np.asarray(rho, dtype=float)
    n = max(1, math.ceil((1.0 - fairness_knob) * len(rho) - 1e-9)) if len(rho) else 0
    return np.lexsort((np.arange(len(rho)), -rho))[:n]


def auction(values: ArrayIn, sizes: ArrayIn, capacity: int) -> Array:
    """(4)-(6) solved exactly: the 0/1 choice of largest total ``values`` whose ``sizes`` fit in ``capacity``.

    Only positive values are worth taking; among equal totals the choice of earlier items is kept (items are
    considered in order and a later one replaces a plan only when it is strictly better).
    Shapes: values (B,) floats, sizes (B,) whole numbers >= 1 -> (B,) booleans."""
    values = np.asarray(values, dtype=float)
    sizes = np.asarray(sizes, dtype=np.int64)
    B, G = len(values), int(capacity)
    best = np.zeros((B + 1, G + 1))
    for i in range(B):
        best[i + 1] = best[i]
        k = int(sizes[i])
        if values[i] > 0 and k <= G:
            take = best[i, : G + 1 - k] + values[i]
            better = take > best[i, k:] * (1 + 1e-12) + 1e-15
            best[i + 1, k:] = np.where(better, take, best[i, k:])
    chosen = np.zeros(B, dtype=bool)
    g = G
    for i in range(B - 1, -1, -1):  # walk back: an item is in the plan where it changed the best value
        if best[i + 1, g] != best[i, g]:
            chosen[i] = True
            g -= int(sizes[i])
    return chosen
