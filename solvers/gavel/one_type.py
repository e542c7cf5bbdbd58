r"""The max-min LP on one GPU type when its GPUs bind: one optimal point, in closed form.

On one type without pairs the max-min LP of :mod:`goodopt.formulations.gavel` ((3), (5) and the
scaled-floor LP (8) at a fixed ``r``) reads, with ``c_j > 0`` job ``j``'s coefficient and ``s_j`` its GPUs::

    maximise t   s.t.  t <= c_j x_j  (j ∈ S),   Σ_j s_j x_j <= C,   0 <= x_j <= 1

(``S`` the jobs with an epigraph row). Its optimum is ``t* = min(C / Σ_{j∈S} s_j / c_j, min_{j∈S} c_j)``.
When the GPUs bind (``C / Σ s_j / c_j <= min c_j``) the optimal face is one point: every optimal ``x``
has ``s_j x_j >= s_j t* / c_j`` on ``S``, and these alone use all ``C`` GPUs, so ``x_j = t* / c_j`` on ``S``
and 0 elsewhere. An interior-point method converges to that point; here it is exact, so the answer does
not depend on the LP solver's tolerances (ties between jobs with equal coefficients stay exact ties).
Where the GPUs do not bind, the face holds more than one point and the LP solver's choice among them is
the policy's semantics: the callers solve the LP then.
"""

from __future__ import annotations

import numpy as np

from goodopt.arrays import Array, ArrayIn


def binding_level(coef: ArrayIn, sizes: ArrayIn, capacity: float, rows: ArrayIn | None = None) -> tuple[Array, float] | None:
    """``(x, t*)`` of the one-type max-min LP when its GPUs bind, else None (the LP decides).

    ``coef`` (J,) the jobs' coefficients ``c_j``, ``sizes`` (J,) their GPUs, ``rows`` the jobs with an
    epigraph row (default all). None also where a row's coefficient is not a positive finite number.
    Shapes: coef, sizes (J,) -> x (J,)."""
    c = np.asarray(coef, dtype=float)
    s = np.asarray(sizes, dtype=float)
    sel = np.arange(len(c)) if rows is None else np.asarray(rows, dtype=np.int64)
    if len(sel) == 0 or not np.all(np.isfinite(c[sel]) & (c[sel] > 0)) or not capacity > 0:
        return None
    level = float(capacity) / float(np.sum(s[sel] / c[sel]))
    if not level <= float(np.min(c[sel])):
        return None
    x = np.zeros(len(c))
    x[sel] = np.minimum(level / c[sel], 1.0)
    return x, level
