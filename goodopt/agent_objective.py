r"""The objective of a job agent's fit (:mod:`goodopt.agent_fit`) and its gradient, as one compiled loop (numba).

With the seven parameters ``p = (alpha_c, beta_c, alpha_n, beta_n, alpha_r, beta_r, g)`` and, per observation
``i``, the compute time ``A_i = xa_i0 alpha_c + xa_i1 beta_c`` and the sync time
``N_i = xn_i0 alpha_n + xn_i1 beta_n + xn_i2 alpha_r + xn_i3 beta_r + none_i``::

    s_i  = logaddexp(g log A_i, g log N_i) / g                   (log of the predicted step time)
    e1_i = log A_i - log_c_i,   e2_i = s_i - log_s_i
    r_k  = sqrt(Σ_i ek_i² / O + δ²)                              (δ = RMS_SMOOTHING)
    f    = r_1 + r_2 + w_g (g - 1)² + ω ((beta_n / alpha_n)² + (beta_r / alpha_r)²)

and its exact gradient. The arithmetic is fixed here, not left to the libraries: every sum runs over the
observations in their order, one term at a time, and exp, log and log1p are the C library's (numpy's
``logaddexp`` formula: ``x + log1p(exp(y - x))`` with ``x`` the larger). So the value does not depend on which
BLAS kernel or which of numpy's vector code paths a processor gets. One call costs about 2.5 us where the same
formula as some thirty whole-array numpy operations cost about 27 us; in a Pollux simulation the agents' fits
call it some 170,000 times.

Shapes: xa (O, 2), xn (O, 4), none, log_c, log_s (O,), p (7,), grad (7,) (written).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .arrays import Array

#: Weight of the pull of gamma towards 1.
GAMMA_WEIGHT = 1e-3
#: Smoothing of the RMS terms (log-time units).
RMS_SMOOTHING = 1e-3
_LOG2 = math.log(2.0)


@njit(cache=True, nogil=True)
def _log_add_exp(x: float, y: float) -> float:
    """``log(exp(x) + exp(y))`` as numpy's ``logaddexp`` computes it."""
    if x == y:
        return x + _LOG2
    d = x - y
    if d > 0:
        return x + math.log1p(math.exp(-d))
    if d <= 0:
        return y + math.log1p(math.exp(d))
    return d  # NaN


@njit(cache=True, nogil=True)
def objective_and_gradient(xa: Array, xn: Array, none: Array, log_c: Array, log_s: Array, optimism: float,
                           p: Array, grad: Array) -> float:
    """The objective at ``p``; its gradient written into ``grad`` (module docstring)."""
    n = xa.shape[0]
    g = p[6]
    a_times, nets, las, lns, log_steps = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    s1 = 0.0
    s2 = 0.0
    for i in range(n):  # the two sums of squares first: every gradient term needs both r's
        a_times[i] = xa[i, 0] * p[0] + xa[i, 1] * p[1]
        nets[i] = xn[i, 0] * p[2] + xn[i, 1] * p[3] + xn[i, 2] * p[4] + xn[i, 3] * p[5] + none[i]
        las[i], lns[i] = math.log(a_times[i]), math.log(nets[i])
        log_steps[i] = _log_add_exp(g * las[i], g * lns[i]) / g
        e1 = las[i] - log_c[i]
        e2 = log_steps[i] - log_s[i]
        s1 += e1 * e1
        s2 += e2 * e2
    r1 = math.sqrt(s1 / n + RMS_SMOOTHING * RMS_SMOOTHING)
    r2 = math.sqrt(s2 / n + RMS_SMOOTHING * RMS_SMOOTHING)
    for k in range(7):
        grad[k] = 0.0
    for i in range(n):
        a_time, net, la, ln, log_step = a_times[i], nets[i], las[i], lns[i], log_steps[i]
        w_a = math.exp(g * (la - log_step))  # A^g / (A^g + N^g)
        w_n = 1.0 - w_a
        c1 = (la - log_c[i]) / (n * r1)  # d r_1 / d e1_i
        c2 = (log_step - log_s[i]) / (n * r2)
        da = (c1 + c2 * w_a) / a_time
        dn = c2 * w_n / net
        grad[0] += xa[i, 0] * da
        grad[1] += xa[i, 1] * da
        for k in range(4):
            grad[2 + k] += xn[i, k] * dn
        grad[6] += c2 * ((w_a * la + w_n * ln) - log_step)
    grad[6] = grad[6] / g + 2 * GAMMA_WEIGHT * (g - 1)
    an, bn, ar, br = p[2], p[3], p[4], p[5]
    grad[2] -= 2 * optimism * bn * bn / an ** 3
    grad[3] += 2 * optimism * bn / (an * an)
    grad[4] -= 2 * optimism * br * br / ar ** 3
    grad[5] += 2 * optimism * br / (ar * ar)
    reg = GAMMA_WEIGHT * (g - 1) ** 2 + optimism * ((bn / an) ** 2 + (br / ar) ** 2)
    return r1 + r2 + reg


@njit(cache=True, nogil=True)
def reduced_objective_and_gradient(xa: Array, xn: Array, none: Array, log_c: Array, log_s: Array,
                                   optimism: float, x0: Array, free: Array, scale: Array, u: Array,
                                   reduced: Array) -> float:
    """The objective in the search's own variables: ``p = x0`` but ``p[free[i]] = u[i] scale[free[i]]``; the
    gradient with respect to ``u`` (``grad[free] * scale[free]``) written into ``reduced``. Shapes: x0, scale
    (7,), free (F,) int, u, reduced (F,)."""
    p = x0.copy()
    for i in range(free.shape[0]):
        p[free[i]] = u[i] * scale[free[i]]
    grad = np.empty(7)
    f = objective_and_gradient(xa, xn, none, log_c, log_s, optimism, p, grad)
    for i in range(free.shape[0]):
        reduced[i] = grad[free[i]] * scale[free[i]]
    return f
