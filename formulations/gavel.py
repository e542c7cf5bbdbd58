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
is linear, ``thr_j(X) >= f_j(r) = R_j / (r D_j - a_j)``, and the LP that
lifts every such floor as far as it can::

    (8)  τ(r) = maximise t   s.t.  t <= thr_j(X) / f_j(r)   ∀ j with R_j > 0,  (1), (2)

bounds the optimum ``r*`` from both sides: its ``X`` reaches
``max_j ρ_j(X) <= r`` when ``τ >= 1``, and since any ``X`` feasible at
``r'`` lifts floor ``j`` by ``f_j(r') / f_j(r)``, one of which is at most
``τ``, ``r* >= min_j (a_j + (r D_j - a_j) / τ) / D_j`` (and ``r* >= r`` when
``τ <= 1``). ``r`` starts at ``X^eq``'s value (at most 1) and moves to the
root of ``τ(r) = 1`` by secant steps, safeguarded by bisection of the bracket,
until it is within the relative tolerance; the bracket also starts from
``r* >= max_j a_j / D_j``.

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

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from goodopt.arrays import Array, ArrayIn
from goodopt.errors import ValidationError
from goodopt.gavel.throughput_matrix import ThroughputMatrix
from goodopt.lazy_import import LazyModule

from .matrix import CscArrays, MatrixModel

if TYPE_CHECKING:
    import pyomo.environ as pyo
else:  # imported at the first model built (goodopt.lazy_import): the array route never needs it
    pyo = LazyModule("pyomo.environ")

OBJECTIVES = ("max_min", "max_sum", "min_cost", "feasibility")
#: A pair column: (pair, type, (member a, member b), (T^pair_a / T_a, T^pair_b / T_b)).
PairColumn = tuple[int, int, tuple[int, int], tuple[float, float]]


def build_model(matrix: ThroughputMatrix, *, objective: str, coef: Array | tuple[Array, Array] | None = None, floor: ArrayIn | None = None,
                t_min: float | None = None, rows: ArrayIn | None = None) -> pyo.ConcreteModel:
    """One LP of the module docstring (with the pair columns (1'), (2') when ``matrix`` has pairs).

    * ``objective="max_min"``: maximise ``t`` with ``t <= Σ_k coef_jk X_jk``
      (3), (5), (8), (9);
    * ``"max_sum"``: maximise ``Σ_jk coef_jk X_jk`` (4), (6);
    * ``"min_cost"``: minimise ``Σ_jk c_k s_j X_jk`` (7);
    * ``"feasibility"``: a zero objective.

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
    shared: dict[int, list[tuple[int, int, float]]] = {j: [] for j in range(J)}  # job -> [(pair, type, ratio)]
    for p, k, members, ratios in cols:
        for j, r in zip(members, ratios):
            shared[j].append((p, k, r))

    def thr(j: int, c: Array) -> Any:  # job j's sum with per-type coefficients c[j, k]
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
    _set_objective(m, objective, mx, pairs, cols, sel, lambda j: thr(j, _coef(c_obj)))
    m._pairs = pairs
    m._cols = cols
    return m


def _coef(c: Array | None) -> Array:
    if c is None:
        raise ValidationError("coef", "this objective needs coefficients", "pass coef=...")
    return c


def _set_objective(m: pyo.ConcreteModel, objective: str, mx: ThroughputMatrix, pairs: list[tuple[int, int]],
                   cols: list[PairColumn], sel: Any, thr_obj: Callable[[int], Any]) -> None:
    """The objective of :func:`build_model` (and the epigraph rows of ``max_min``); ``thr_obj(j)`` is job
    ``j``'s sum with the objective's coefficients."""
    if objective == "max_min":
        m.t = pyo.Var()
        m.epigraph = pyo.Constraint(sel, rule=lambda m, j: m.t <= thr_obj(j))
        m.obj = pyo.Objective(expr=m.t, sense=pyo.maximize)
    elif objective == "max_sum":
        m.obj = pyo.Objective(expr=sum(thr_obj(j) for j in range(mx.n_jobs)), sense=pyo.maximize)
    elif objective == "min_cost":
        price = mx.price_per_gpu_h
        m.obj = pyo.Objective(expr=sum(float(price[k] * mx.scale_factor[j]) * m.X[j, k]
                                       for j, k in pairs)
                              + sum(float(price[k] * mx.scale_factor[mb[0]]) * m.Y[p, k]
                                    for p, k, mb, _ in cols), sense=pyo.minimize)
    else:
        m.obj = pyo.Objective(expr=0.0 * sum(m.X[j, k] for j, k in pairs[:1]), sense=pyo.minimize)


def _pair_columns(mx: ThroughputMatrix) -> list[PairColumn]:
    """``(pair, type, (j_a, j_b), (T^pair_a / T_a, T^pair_b / T_b))`` for every usable pair column."""
    pc = _pair_arrays(mx)
    return [(int(p), int(k), (int(a), int(b)), (float(ra), float(rb)))
            for p, k, a, b, ra, rb in zip(pc["p"], pc["k"], pc["a"], pc["b"], pc["ra"], pc["rb"])]


def fractions(model: pyo.ConcreteModel, matrix: ThroughputMatrix) -> Array:
    """The solved ``X`` as an array (0 outside the usable pairs). Shapes: -> (J, K)."""
    x = np.zeros((matrix.n_jobs, matrix.n_types))
    for (j, k) in model._pairs:
        v = model.X[j, k].value
        x[j, k] = 0.0 if v is None else min(max(float(v), 0.0), 1.0)
    return x


def pair_fractions(model: pyo.ConcreteModel, matrix: ThroughputMatrix) -> Array:
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
    x_index: Array
    y_index: Array
    sense: int

    def fractions(self, values: ArrayIn) -> tuple[Array, Array]:
        """``(X, Y)`` from the solved column values. Shapes: -> (J, K), (P, K)."""
        v = np.clip(np.asarray(values, dtype=float), 0.0, 1.0)
        x = np.where(self.x_index >= 0, v[np.maximum(self.x_index, 0)], 0.0)
        y = np.where(self.y_index >= 0, v[np.maximum(self.y_index, 0)], 0.0)
        return x, y


def build_arrays(matrix: ThroughputMatrix, *, objective: str, coef: Array | tuple[Array, Array] | None = None,
                 floor: ArrayIn | None = None, t_min: float | None = None,
                 rows: ArrayIn | None = None) -> GavelArrays:
    """:func:`build_model`'s LP as arrays, row for row: (1), (1'), (2), (2'), the floors, the ``t_min`` rows
    and the epigraph, in that order; columns ``X``, then ``Y``, then ``t`` for max-min objectives."""
    if objective not in OBJECTIVES:
        raise ValidationError("objective", f"must be one of {OBJECTIVES}, got {objective!r}")
    mx = matrix
    J = mx.n_jobs
    jj, kk, pc, x_index, y_index = _array_columns(mx)
    nx, ny = len(jj), len(pc["p"])
    ycol = nx + np.arange(ny)
    t_col = nx + ny if objective == "max_min" else None
    n_col = nx + ny + (t_col is not None)

    def thr_rows(c: ArrayIn, jobs: Array, first: int, sign: float = 1.0) -> list[tuple[Array, Array, Array]]:
        """Triplets of ``sign * thr_j`` with coefficients ``c`` for ``jobs`` on rows ``first, first + 1, ...``."""
        row_of = np.full(J, -1, dtype=np.int64)
        row_of[jobs] = first + np.arange(len(jobs))
        c = np.asarray(c, dtype=float)
        parts = [(row_of[jj], np.arange(nx), sign * c[jj, kk])]
        for m, r in (("a", "ra"), ("b", "rb")):
            parts.append((row_of[pc[m]], ycol, sign * c[pc[m], pc["k"]] * pc[r]))
        return [(rr[rr >= 0], cc[rr >= 0], vv[rr >= 0]) for rr, cc, vv in parts]

    blocks, lo, up = _time_and_capacity_rows(mx, jj, kk, pc, ycol)
    if floor is not None:
        fl = np.asarray(floor, dtype=float)
        jobs = np.flatnonzero(fl > 0)
        blocks += thr_rows(mx.throughput, jobs, len(lo))
        lo += list(fl[jobs])
        up += [np.inf] * len(jobs)
    c_obj, c_min = (coef if isinstance(coef, tuple) else (coef, None))
    sel = np.arange(J) if rows is None else np.asarray(rows, dtype=np.int64)
    if t_min is not None:
        if c_min is None:
            raise ValidationError("coef", "t_min needs coef = (objective coef, minimum coef)")
        blocks += thr_rows(c_min, sel, len(lo))
        lo += [float(t_min)] * len(sel)
        up += [np.inf] * len(sel)
    if objective == "max_min":  # t - thr_j <= 0
        first = len(lo)
        blocks += thr_rows(c_obj, sel, first, sign=-1.0)
        blocks.append((first + np.arange(len(sel)), np.full(len(sel), t_col), np.ones(len(sel))))
        lo += [-np.inf] * len(sel)
        up += [0.0] * len(sel)
    cost, sense = _array_cost(objective, mx, c_obj, jj, kk, pc, n_col, t_col)
    lower, upper = np.zeros(n_col), np.ones(n_col)
    if t_col is not None:
        lower[t_col], upper[t_col] = -np.inf, np.inf
    R, C, V = (np.concatenate([b[i] for b in blocks]) for i in range(3))
    A = CscArrays.from_triplets(R.astype(np.int64), C.astype(np.int64), V.astype(float), (len(lo), n_col))
    model = MatrixModel(cost=cost, lower=lower, upper=upper, integer=np.zeros(n_col, dtype=bool), A=A,
                        row_lower=np.array(lo, dtype=float), row_upper=np.array(up, dtype=float),
                        names=(f"gavel-{objective}",), n_configs=0, epigraph=t_col is not None)
    return GavelArrays(model, x_index, y_index, sense)


def _time_and_capacity_rows(mx: ThroughputMatrix, jj: Array, kk: Array, pc: dict[str, Array],
                            ycol: Array) -> tuple[list[tuple[Array, Array, Array]], list[float], list[float]]:
    """Rows (1), (1') (each job's time) and (2), (2') (each usable type's GPUs, a pair's once) of
    :func:`build_arrays`: ``(triplet blocks, row lower bounds, row upper bounds)``."""
    J, nx, ny = mx.n_jobs, len(jj), len(ycol)
    blocks: list[tuple[Array, Array, Array]] = [(jj, np.arange(nx), np.ones(nx)), (pc["a"], ycol, np.ones(ny)),
                                          (pc["b"], ycol, np.ones(ny))]
    lo, up = [-np.inf] * J, [1.0] * J
    types = np.unique(kk)
    row_k = np.full(mx.n_types, -1, dtype=np.int64)
    row_k[types] = J + np.arange(len(types))
    blocks += [(row_k[kk], np.arange(nx), mx.scale_factor[jj].astype(float)),
               (row_k[pc["k"]], ycol, mx.scale_factor[pc["a"]].astype(float))]
    lo += [-np.inf] * len(types)
    up += [float(mx.capacity[k]) for k in types]
    return blocks, lo, up


def _array_columns(mx: ThroughputMatrix) -> tuple[Array, Array, dict[str, Array], Array, Array]:
    """The columns of :func:`build_arrays`: ``X`` for every runnable (job, type), then ``Y`` for every usable
    pair column. Returns ``(jj, kk, pair arrays, x_index (J, K), y_index (P, K))`` (-1: no column)."""
    jj, kk = np.nonzero(mx.runnable)
    nx = len(jj)
    x_index = np.full((mx.n_jobs, mx.n_types), -1, dtype=np.int64)
    x_index[jj, kk] = np.arange(nx)
    pc = _pair_arrays(mx)
    y_index = np.full((0 if mx.pairs is None else len(mx.pairs), mx.n_types), -1, dtype=np.int64)
    y_index[pc["p"], pc["k"]] = nx + np.arange(len(pc["p"]))
    return jj, kk, pc, x_index, y_index


def _array_cost(objective: str, mx: ThroughputMatrix, c_obj: ArrayIn | None, jj: Array, kk: Array,
                pc: dict[str, Array], n_col: int, t_col: int | None) -> tuple[Array, int]:
    """``(cost, sense)`` of :func:`build_arrays`: the objective row over its columns (``X``, ``Y``, ``t``),
    maximised (``sense`` -1: a minimisation negated)."""
    cost = np.zeros(n_col)
    nx, ny = len(jj), len(pc["p"])
    if objective == "max_min":
        cost[t_col] = 1.0
    elif objective == "max_sum":
        c = np.asarray(c_obj, dtype=float)
        cost[:nx] = c[jj, kk]
        cost[nx:nx + ny] = c[pc["a"], pc["k"]] * pc["ra"] + c[pc["b"], pc["k"]] * pc["rb"]
    elif objective == "min_cost":
        price = mx.price_per_gpu_h
        cost[:nx] = -price[kk] * mx.scale_factor[jj]
        cost[nx:nx + ny] = -price[pc["k"]] * mx.scale_factor[pc["a"]]
        return cost, -1
    return cost, 1


def _pair_arrays(mx: ThroughputMatrix) -> dict[str, Array]:
    """The usable pair columns as arrays: pair ``p``, type ``k``, members ``a``, ``b`` and their throughput
    ratios together / alone ``ra``, ``rb``. Shapes: each (columns,)."""
    if mx.pairs is None or mx.pair_throughput is None or not len(mx.pairs):
        e = np.zeros(0, dtype=np.int64)
        return {"p": e, "k": e, "a": e, "b": e, "ra": np.zeros(0), "rb": np.zeros(0)}
    p, k = np.nonzero(mx.pair_runnable)
    a, b = mx.pairs[p, 0], mx.pairs[p, 1]
    return {"p": p, "k": k, "a": a, "b": b, "ra": mx.pair_throughput[p, k, 0] / mx.throughput[a, k],
            "rb": mx.pair_throughput[p, k, 1] / mx.throughput[b, k]}
