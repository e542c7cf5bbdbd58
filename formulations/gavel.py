r"""Gavel's heterogeneity-aware policies as linear programs over time fractions (pyomo).

Data (:class:`goodopt.gavel.ThroughputMatrix`): jobs ``j`` with scale factor
``s_j`` (GPUs), weight ``w_j``, throughput ``T_jk`` (steps/s on type ``k``),
remaining steps ``R_j`` and elapsed time ``a_j``; GPU types ``k`` with
``n_k`` GPUs and price ``c_k`` per GPU-hour. ``U`` are the usable pairs
(``T_jk > 0`` and ``s_j <= n_k``).

Variables::

    X_jk ∈ [0, 1]   fraction of time job j runs on type k      ((j, k) ∈ U; 0 elsewhere)
    t    free       epigraph variable of max-min objectives

Effective throughput ``thr_j(X) = Σ_k T_jk X_jk``. Every policy keeps::

    (1)  Σ_k X_jk <= 1                      ∀ j      (a job runs on one type at a time)
    (2)  Σ_j s_j X_jk <= n_k                ∀ k      (a type's GPUs, weighted by job size)

The reference allocation ``X^eq`` (:meth:`ThroughputMatrix.equal_share`)
gives each job its fair fraction ``f = min(1, N / Σ_j s_j)`` of time,
spread over its usable types in proportion to their size; ``thr^eq_j =
thr_j(X^eq) > 0``. The policies (each an LP or a sequence of LPs):

**max-min fairness, heterogeneity-aware** (Gavel's LAS)::

    (3)  maximise t   s.t.  t <= thr_j(X) / (w_j thr^eq_j)     ∀ j,  (1), (2)
    (4)  then, with t >= (1 - δ) t*:  maximise Σ_j thr_j(X) / thr^eq_j

Stage (4) hands capacity the bottleneck jobs cannot use to the others.

**max-min fairness, heterogeneity-agnostic** — time instead of throughput::

    (5)  maximise t   s.t.  t <= Σ_k X_jk / (w_j f)            ∀ j,  (1), (2);  then (4) on time

**maximise total throughput**, normalised (default: each job's throughput as
a multiple of its throughput alone on its best type) or raw::

    (6)  maximise Σ_j thr_j(X) / max_k T_jk        s.t. (1), (2)

**minimise cost** subject to a throughput floor ``ℓ`` (default 1: every job
at least as fast as under the equal share, which is always feasible)::

    (7)  minimise Σ_{j,k} c_k s_j X_jk   s.t.  thr_j(X) >= ℓ thr^eq_j  ∀ j, (1), (2)

**finish-time fairness** (Themis' ``ρ``): with ``D_j = a_j + R_j / thr^eq_j``
the finish time under the equal share, ``ρ_j(X) = (a_j + R_j / thr_j(X)) /
D_j``; minimise ``max_j ρ_j``. For a fixed ``r`` the condition ``ρ_j <= r``
is linear, ``thr_j(X) >= R_j / (r D_j - a_j)``, so ``r`` is found by
bisection over feasibility LPs::

    (8)  find X  s.t.  thr_j(X) >= R_j / (r D_j - a_j)   ∀ j,  (1), (2)

``r`` lies in ``[max_j a_j / D_j, 1]`` (``X^eq`` reaches 1).

**minimise makespan** — the last job's finish time ``max_j R_j / thr_j(X)``::

    (9)  maximise t   s.t.  t <= thr_j(X) / R_j   ∀ j,  (1), (2);   makespan = 1 / t*

**Space sharing** (Gavel's packed policies): a matrix may also hold job
pairs ``q = (a, b)`` of equal scale factor that can share the same GPUs, with
their throughputs together ``T^pair_{qk} = (T_a, T_b)`` (``P`` the usable
(pair, type) columns: both > 0, ``s <= n_k``). A variable ``Y_qk ∈ [0, 1]``
is the time the pair runs together on type ``k``; the job constraints and
the capacity become::

    (1') Σ_k X_jk + Σ_{q ∋ j, k} Y_qk <= 1          ∀ j
    (2') Σ_j s_j X_jk + Σ_q s_q Y_qk <= n_k          ∀ k      (a pair holds its s GPUs once)

and ``thr_j(X, Y) = Σ_k T_jk X_jk + Σ_{q ∋ j, k} T^pair_{qk, j} Y_qk`` in
every policy above (the equal share stays the singletons'; costs count a
pair's GPUs once). The pairs offered are the caller's
(:func:`goodopt.gavel.useful_pairs` drops the ones time sharing dominates).

**Hierarchical max-min fairness by water filling** (Gavel's
``max_min_fairness_water_filling``): jobs belong to entities ``e`` (users,
groups) with weights ``W_e``; inside an entity its weight goes to its jobs
by the entity's policy -- ``fairness``: shared in proportion to the jobs'
own weights, ``fifo``: all to its earliest job not yet frozen. With ``F`` the
frozen jobs (levels ``ℓ_j`` fixed) and ``A`` the jobs holding weight ``w_j``::

    (10) maximise t  s.t.  thr_j(X) / thr^eq_j >= t w_j  ∀ j ∈ A,
                           thr_j(X) >= ℓ_j               ∀ j ∈ F,   (1), (2)

A job of ``A`` is a bottleneck when, with every other job of ``A`` held at
``t* w``, its own ``thr_j / thr^eq_j`` cannot exceed ``t* w_j`` (one LP per
job); bottlenecks are frozen at ``ℓ_j = t* w_j thr^eq_j``, the weights are
handed on inside their entities, and (10) is solved again until every job is
frozen. A last LP with every level as a floor maximises ``Σ_j thr_j /
thr^eq_j``. The result is the weighted max-min fair allocation across
entities: no entity's share can grow without shrinking one that is no
larger relative to its weight.

FIFO is not an LP; :func:`goodopt.solvers.gavel.fifo_fractions` gives it.

This module only builds models -- :func:`build_model` (pyomo, the reference)
and :func:`build_arrays` (the same rows as arrays for HiGHS directly, about
5x faster to hand over); both are pure functions of their inputs.
:mod:`goodopt.solvers.gavel` solves them and sequences the stages.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from goodopt.errors import ValidationError

from .matrix import CscArrays, MatrixModel

OBJECTIVES = ("max_min", "max_sum", "min_cost", "feasibility")


def build_model(matrix, *, objective: str, coef=None, floor=None, t_min=None, rows=None) -> pyo.ConcreteModel:
    """One LP of the module docstring (with the pair columns (1'), (2') when ``matrix`` has pairs).

    * ``objective="max_min"``: maximise ``t`` with ``t <= Σ_k coef_jk X_jk``
      (3), (5), (9);
    * ``"max_sum"``: maximise ``Σ_jk coef_jk X_jk`` (4), (6);
    * ``"min_cost"``: minimise ``Σ_jk c_k s_j X_jk`` (7);
    * ``"feasibility"``: a zero objective (8).

    ``floor`` (J,) adds ``thr_j(X) >= floor_j`` (7), (8); ``t_min`` with
    ``coef_min`` semantics adds ``Σ_k coef_jk X_jk >= t_min`` (4) — in that
    case ``coef`` is a pair ``(objective coef, minimum coef)``. A pair column
    enters job ``j``'s sums with ``coef_jk`` scaled by ``T^pair / T_jk``.
    ``rows`` (job indices; default all) limits the epigraph and ``t_min`` rows
    to those jobs (water filling (10)).

    Shapes: coef (J, K); floor (J,).
    """
    if objective not in OBJECTIVES:
        raise ValidationError("objective", f"must be one of {OBJECTIVES}, got {objective!r}")
    mx = matrix
    J, K = mx.n_jobs, mx.n_types
    use = mx.runnable
    pairs = [(j, k) for j in range(J) for k in range(K) if use[j, k]]
    by_job = {j: [k for k in range(K) if use[j, k]] for j in range(J)}
    by_type = {k: [j for j in range(J) if use[j, k]] for k in range(K)}
    cols = _pair_columns(mx)
    m = pyo.ConcreteModel(name=f"gavel-{objective}")
    m.X = pyo.Var(pairs, bounds=(0.0, 1.0))
    m.Y = pyo.Var([(p, k) for p, k, _, _ in cols], bounds=(0.0, 1.0))
    shared = {j: [] for j in range(J)}  # job -> [(pair, type, throughput ratio to alone)]
    for p, k, members, ratios in cols:
        for j, r in zip(members, ratios):
            shared[j].append((p, k, r))

    def thr(j, c):  # job j's sum with per-type coefficients c[j, k]
        return sum(float(c[j, k]) * m.X[j, k] for k in by_job[j]) + \
            sum(float(c[j, k] * r) * m.Y[p, k] for p, k, r in shared[j])

    m.one_type = pyo.Constraint(range(J), rule=lambda m, j: sum(m.X[j, k] for k in by_job[j])
                                + sum(m.Y[p, k] for p, k, _ in shared[j]) <= 1)  # (1), (1')
    m.capacity = pyo.Constraint(range(K), rule=lambda m, k: (
        sum(int(mx.scale_factor[j]) * m.X[j, k] for j in by_type[k])
        + sum(int(mx.scale_factor[mb[0]]) * m.Y[p, kk] for p, kk, mb, _ in cols if kk == k) <= int(mx.capacity[k]))
        if by_type[k] else pyo.Constraint.Skip)  # (2), (2')
    if floor is not None:
        fl = np.asarray(floor, dtype=float)
        m.floor = pyo.Constraint(range(J), rule=lambda m, j: (thr(j, mx.throughput) >= float(fl[j]))
                                 if fl[j] > 0 else pyo.Constraint.Skip)
    c_obj, c_min = (coef if isinstance(coef, tuple) else (coef, None))
    sel = list(range(J)) if rows is None else [int(j) for j in rows]
    if t_min is not None:
        if c_min is None:
            raise ValidationError("coef", "t_min needs coef = (objective coef, minimum coef)")
        m.keep_min = pyo.Constraint(sel, rule=lambda m, j: thr(j, c_min) >= float(t_min))
    if objective == "max_min":
        m.t = pyo.Var()
        m.epigraph = pyo.Constraint(sel, rule=lambda m, j: m.t <= thr(j, c_obj))
        m.obj = pyo.Objective(expr=m.t, sense=pyo.maximize)
    elif objective == "max_sum":
        m.obj = pyo.Objective(expr=sum(thr(j, c_obj) for j in range(J)), sense=pyo.maximize)
    elif objective == "min_cost":
        m.obj = pyo.Objective(expr=sum(float(mx.price_per_gpu_h[k] * mx.scale_factor[j]) * m.X[j, k]
                                       for j, k in pairs)
                              + sum(float(mx.price_per_gpu_h[k] * mx.scale_factor[mb[0]]) * m.Y[p, k]
                                    for p, k, mb, _ in cols), sense=pyo.minimize)
    else:
        m.obj = pyo.Objective(expr=0.0 * sum(m.X[j, k] for j, k in pairs[:1]), sense=pyo.minimize)
    m._pairs = pairs
    m._cols = cols
    return m


def _pair_columns(mx) -> list:
    """``(pair, type, (j_a, j_b), (T^pair_a / T_a, T^pair_b / T_b))`` for every usable pair column."""
    if mx.pairs is None:
        return []
    ok = mx.pair_runnable
    cols = []
    for p, (a, b) in enumerate(mx.pairs):
        for k in np.flatnonzero(ok[p]):
            ta, tb = mx.pair_throughput[p, k]
            cols.append((p, int(k), (int(a), int(b)),
                         (float(ta / mx.throughput[a, k]), float(tb / mx.throughput[b, k]))))
    return cols


def fractions(model, matrix) -> np.ndarray:
    """The solved ``X`` as an array (0 outside the usable pairs). Shapes: -> (J, K)."""
    x = np.zeros((matrix.n_jobs, matrix.n_types))
    for (j, k) in model._pairs:
        v = model.X[j, k].value
        x[j, k] = 0.0 if v is None else min(max(float(v), 0.0), 1.0)
    return x


def pair_fractions(model, matrix) -> np.ndarray:
    """The solved ``Y`` (time fractions of the job pairs sharing GPUs). Shapes: -> (P, K), P = 0 without pairs."""
    y = np.zeros((0 if matrix.pairs is None else len(matrix.pairs), matrix.n_types))
    for p, k, _, _ in model._cols:
        v = model.Y[p, k].value
        y[p, k] = 0.0 if v is None else min(max(float(v), 0.0), 1.0)
    return y


# ---------------------------------------------------------------- the same LPs as arrays
@dataclass(frozen=True, eq=False)
class GavelArrays:
    """One LP of :func:`build_model` as a :class:`~goodopt.formulations.matrix.MatrixModel` (maximised; a
    minimisation's cost is negated), with where each variable sits: ``x_index`` (J, K) and ``y_index``
    (P, K) column numbers (-1 where the variable does not exist)."""

    model: MatrixModel
    x_index: np.ndarray
    y_index: np.ndarray
    sense: int

    def fractions(self, values) -> tuple[np.ndarray, np.ndarray]:
        """``(X, Y)`` from the solved column values. Shapes: -> (J, K), (P, K)."""
        v = np.clip(np.asarray(values, dtype=float), 0.0, 1.0)
        x = np.where(self.x_index >= 0, v[np.maximum(self.x_index, 0)], 0.0)
        y = np.where(self.y_index >= 0, v[np.maximum(self.y_index, 0)], 0.0) if self.y_index.size \
            else np.zeros(self.y_index.shape)
        return x, y


def build_arrays(matrix, *, objective: str, coef=None, floor=None, t_min=None, rows=None) -> GavelArrays:
    """:func:`build_model`'s LP as arrays, row for row: (1), (1'), (2), (2'), the floors, the ``t_min`` rows
    and the epigraph, in that order; columns ``X``, then ``Y``, then ``t`` for max-min objectives."""
    if objective not in OBJECTIVES:
        raise ValidationError("objective", f"must be one of {OBJECTIVES}, got {objective!r}")
    mx = matrix
    J, K = mx.n_jobs, mx.n_types
    x_index = np.full((J, K), -1, dtype=np.int64)
    jj, kk = np.nonzero(mx.runnable)
    x_index[jj, kk] = np.arange(len(jj))
    cols = _pair_columns(mx)
    y_index = np.full((0 if mx.pairs is None else len(mx.pairs), K), -1, dtype=np.int64)
    for n, (p, k, _, _) in enumerate(cols):
        y_index[p, k] = len(jj) + n
    n_var = len(jj) + len(cols)
    t_col = n_var if objective == "max_min" else None
    n_col = n_var + (t_col is not None)
    R, C, V, lo, up = [], [], [], [], []

    def add(row_cols, row_vals, lower, upper):
        R.append(np.full(len(row_cols), len(lo)))
        C.append(np.asarray(row_cols, dtype=np.int64))
        V.append(np.asarray(row_vals, dtype=float))
        lo.append(lower)
        up.append(upper)

    members = [[] for _ in range(J)]  # job -> [(column, ratio to alone, type)]
    for n, (p, k, pair, ratios) in enumerate(cols):
        for j, r in zip(pair, ratios):
            members[j].append((len(jj) + n, r, k))

    def thr_row(j, c):  # job j's sum with coefficients c[j, k] (pair columns scaled by their ratio)
        ks = np.flatnonzero(x_index[j] >= 0)
        return (list(x_index[j, ks]) + [col for col, _, _ in members[j]],
                list(c[j, ks]) + [c[j, k] * r for _, r, k in members[j]])

    for j in range(J):  # (1), (1')
        ks = np.flatnonzero(x_index[j] >= 0)
        add(list(x_index[j, ks]) + [col for col, _, _ in members[j]], [1.0] * (len(ks) + len(members[j])),
            -np.inf, 1.0)
    for k in range(K):  # (2), (2')
        js = np.flatnonzero(x_index[:, k] >= 0)
        if len(js):
            pc = [(len(jj) + n, mx.scale_factor[pair[0]]) for n, (p, kk_, pair, _) in enumerate(cols) if kk_ == k]
            add(list(x_index[js, k]) + [c for c, _ in pc], list(mx.scale_factor[js]) + [s for _, s in pc],
                -np.inf, float(mx.capacity[k]))
    if floor is not None:
        for j, f in enumerate(np.asarray(floor, dtype=float)):
            if f > 0:
                add(*thr_row(j, mx.throughput), float(f), np.inf)
    c_obj, c_min = (coef if isinstance(coef, tuple) else (coef, None))
    sel = range(J) if rows is None else [int(j) for j in rows]
    if t_min is not None:
        if c_min is None:
            raise ValidationError("coef", "t_min needs coef = (objective coef, minimum coef)")
        for j in sel:
            add(*thr_row(j, c_min), float(t_min), np.inf)
    cost = np.zeros(n_col)
    sense = 1
    if objective == "max_min":
        for j in sel:  # t - thr_j <= 0
            c, v = thr_row(j, c_obj)
            add(c + [t_col], [-x for x in v] + [1.0], -np.inf, 0.0)
        cost[t_col] = 1.0
    elif objective == "max_sum":
        for j in range(J):
            c, v = thr_row(j, c_obj)
            np.add.at(cost, np.asarray(c, dtype=np.int64), np.asarray(v, dtype=float))
    elif objective == "min_cost":
        sense = -1
        cost[x_index[jj, kk]] = -mx.price_per_gpu_h[kk] * mx.scale_factor[jj]
        for n, (p, k, pair, _) in enumerate(cols):
            cost[len(jj) + n] = -mx.price_per_gpu_h[k] * mx.scale_factor[pair[0]]
    lower = np.zeros(n_col)
    upper = np.ones(n_col)
    if t_col is not None:
        lower[t_col], upper[t_col] = -np.inf, np.inf
    A = CscArrays.from_triplets(np.concatenate(R) if R else np.zeros(0, np.int64),
                                np.concatenate(C) if C else np.zeros(0, np.int64),
                                np.concatenate(V) if V else np.zeros(0), (len(lo), n_col))
    model = MatrixModel(cost=cost, lower=lower, upper=upper, integer=np.zeros(n_col, dtype=bool), A=A,
                        row_lower=np.array(lo, dtype=float), row_upper=np.array(up, dtype=float),
                        names=(f"gavel-{objective}",), n_configs=0, epigraph=t_col is not None)
    return GavelArrays(model, x_index, y_index, sense)
