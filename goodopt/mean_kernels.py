"""The evaluator's ranked fitness at p = -1 and p = 1 as one compiled pass (numba) that adds in numpy's order, so
each member's score equals the array statements' (:meth:`goodopt.evaluator.Evaluator.ranked_fitness`) to the last
bit.

numpy sums the last axis of an array pairwise: fewer than 8 values from left to right; up to 128 in eight
partial sums (value ``i`` into sum ``i mod 8``, whole blocks of eight) joined as
``((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))``, the rest added after them; more in two halves split at a
multiple of 8; the result added to 0. :func:`pairwise_sum` adds in that order. The rest of a power mean at
p = -1 (Pollux's) or 1 is one division or product per job and one division per member, which IEEE arithmetic
rounds alike everywhere; other p take logarithms and exponentials, whose last bit depends on the library, and stay
with numpy. At the simulator's scale (a few tens of new members of tens of jobs per generation) the half-dozen
small array operations of the statement cost more than their arithmetic. ``tests/test_evaluator.py`` holds the
pass to the statements on rows of 0 to 300 jobs of every magnitude, with and without weights and idle values.

Shapes: speedup (P, J) float64, terms (P, T) int64, weights (J,) -> (P,).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .arrays import Array

# error_model="numpy": a division by 0 gives inf (or nan) as numpy's does, not an exception
_jit = njit(cache=True, nogil=True, error_model="numpy")


@_jit
def pairwise_sum(x: Array) -> float:
    """The sum of ``x`` in numpy's pairwise order (module docstring). Shapes: (n,) -> float."""
    return 0.0 + _pairwise(x)


@_jit
def _pairwise(x: Array) -> float:
    n = x.shape[0]
    if n < 8:
        res = 0.0
        for i in range(n):
            res += x[i]
        return res
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
        i = 8
        while i < n - n % 8:
            r0 += x[i]
            r1 += x[i + 1]
            r2 += x[i + 2]
            r3 += x[i + 3]
            r4 += x[i + 4]
            r5 += x[i + 5]
            r6 += x[i + 6]
            r7 += x[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += x[i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return _pairwise(x[:half]) + _pairwise(x[half:])


@_jit
def ranked_power_mean(speedup: Array, terms: Array, p: float, eps: float, idle: float, penalised: bool,
                      weights: Array, uniform: bool) -> Array:
    """Per member the power mean at ``p`` (-1 or 1) of its jobs' ``speedup + eps`` (``idle`` for a job without
    speedup when ``penalised``), ``-inf`` where a term of ``terms`` is non-zero. ``weights`` are the jobs'
    (``uniform``: all equal, the mean's own weights then 1 each)."""
    P, J = speedup.shape
    out = np.empty(P)
    w = np.ones(J) if uniform else weights
    total = pairwise_sum(w)
    term = np.empty(J)
    for m in range(P):
        broken = 0
        for t in range(terms.shape[1]):
            broken += terms[m, t]
        if broken != 0:
            out[m] = -np.inf
            continue
        for j in range(J):
            s = speedup[m, j]
            v = idle if penalised and not s > 0 else s + eps
            term[j] = w[j] / v if p < 0 else w[j] * v
        mean = pairwise_sum(term)
        out[m] = total / mean if p < 0 else mean / total
    return out
