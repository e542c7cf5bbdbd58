"""The best of a job's scored batch candidates, as one compiled loop (numba): the hot path of every goodput
table.

:func:`goodopt.goodput.best_candidate` states the rule; this loop carries it out on ``(candidates, M)`` arrays
instead of a dozen small array operations per call (efficiency, mask, argmax, three gathers), which were most of
a table's cost in a simulation, where every job has its own fitted parameters and so its own small call. Per
column ``i`` and candidate ``c``, with exactly the operations of the array statement::

    e = 1                                          if phi_i is infinite
        (phi_i + m0_i) / (phi_i + total_ci)        otherwise
    g = x_ci * e  where valid_ci, else 0

then the first candidate of the largest ``g`` (the first NaN, if any: numpy's argmax); a column whose best is
not above 0 gets micro-batch and accumulation steps 0. So the answers equal the statement's to the last bit.

Shapes: micro, accum (C, M) int64, valid (C, M) bool, total (C, M) int64 or float64, x (C, M) float64; good
float64, local and steps int64.
"""

from __future__ import annotations

import math

from numba import njit

from .arrays import Array


@njit(cache=True, nogil=True, error_model="numpy")  # x / 0 is inf or NaN, as in numpy, not an exception
def _best(micro: Array, accum: Array, valid: Array, total: Array, x: Array, i: int, phi: float,
          m0: float) -> tuple[float, int, int]:
    """Column ``i``'s best goodput, micro-batch and accumulation steps under ``phi`` and ``m0``."""
    best, bv = 0, 0.0
    flat = math.isinf(phi)  # efficiency 1 at every batch
    for c in range(x.shape[0]):
        e = 1.0 if flat else (phi + m0) / (phi + total[c, i])
        g = x[c, i] * e if valid[c, i] else 0.0
        if c == 0 or g > bv or (math.isnan(g) and not math.isnan(bv)):
            best, bv = c, g
    if bv > 0:
        return bv, micro[best, i], accum[best, i]
    return bv, 0, 0


@njit(cache=True, nogil=True)
def choose_columns(micro: Array, accum: Array, valid: Array, total: Array, x: Array, phi: Array, m0: Array,
                   good: Array, local: Array, steps: Array) -> None:
    """Column ``i`` under ``phi[i]`` and ``m0[i]``. Shapes: scored (C, M), phi, m0 and the outputs (M,)."""
    for i in range(x.shape[1]):
        good[i], local[i], steps[i] = _best(micro, accum, valid, total, x, i, phi[i], m0[i])


@njit(cache=True, nogil=True)
def choose_table(micro: Array, accum: Array, valid: Array, total: Array, x: Array, phi: Array, m0: float,
                 good: Array, local: Array, steps: Array) -> None:
    """Every column under every ``phi[b]``. Shapes: scored (C, T), phi (B,), the outputs (B, T)."""
    for b in range(phi.shape[0]):
        for i in range(x.shape[1]):
            good[b, i], local[b, i], steps[b, i] = _best(micro, accum, valid, total, x, i, phi[b], m0)
