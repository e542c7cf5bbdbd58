r"""Piecewise-linearised goodput MILP over GPU counts (configuration level).

For every job ``j`` and *class* ``q = (g, m)`` (GPU type, multi-node flag)
with move configurations, the job's objective term as a function of its GPU
count ``n`` is the step function ``f_q(n) = u(max{S_c : c ∈ q, k_c <= n})``
(``u(S) = w_j bc_p((S + eps) / r)``, the scaled Box-Cox term of the exact
MILP, :mod:`goodopt.formulations.scaled_objective`; ``S + eps`` for p = -inf). It is replaced by
its linear interpolation through breakpoints ``b_0 = k_min < ... < b_K =
k_max`` (user-chosen count, uniform or adaptive spacing). HiGHS has no SOS
constraints, so the interpolation uses the lambda form with segment binaries.

Variables::

    d_q ∈ {0, 1}              class q is used
    l_qi >= 0                 weight of breakpoint i
    s_qr ∈ {0, 1}             segment r = 1..K is active
    n_q ∈ Z>=0                GPU count of the job in class q
    o_q ∈ Z>=0                nodes of a multi-node class (interference avoidance)
    z_j ∈ {0, 1}              job j keeps its current placement

Objective: maximise ``Σ_j u_j^0 + Σ_q Σ_i (f_q(b_i) - u_j^0) l_qi
+ Σ_j (u(S_keep_j) - u_j^0) z_j`` with ``u_j^0 = u(idle)`` (``e0`` the idle
value, see the exact MILP); p = -inf: maximise ``t`` with
``t <= eps + Σ_{q ∈ j} Σ_i S_q(b_i) l_qi + S_keep_j z_j``. Options pruned
against an incumbent (the exact MILP's (0d)/(0e)) are left out: classes
start above their pruned counts, and (1) holds with equality for jobs that
must run.

Constraints::

    (1)  Σ_{q ∈ j} d_q + z_j <= 1                        ∀ j
    (2)  Σ_i l_qi = d_q,  Σ_r s_qr = d_q                 ∀ q
    (3)  l_q0 <= s_q1,  l_qi <= s_qi + s_q(i+1),  l_qK <= s_qK   ∀ q
    (4)  n_q = Σ_i b_i l_qi                              ∀ q
    (5)  Σ_{q: g_q = g} n_q + Σ_{j: keep type g} k_keep_j z_j <= Σ_{n: g(n) = g} cap_n   ∀ g
    (6)  o_q >= 2 d_q,  cap_g^max o_q >= n_q,  Σ_{q multi, g_q = g} o_q
         + Σ_{j keep multi on g} nodes_keep_j z_j <= |{n: g(n) = g}|   ∀ g   (interference avoidance)

At an integer count ``n`` between breakpoints the model's value is the
interpolation, not ``f_q(n)``; :attr:`PwlClass.error` is the largest deviation
over all integer counts. Summed over jobs (the largest one at p = -inf) it
bounds how far the model's objective can lie from the count-level problem's
true objective, so the model's bound plus that sum is a valid bound of the
allocation problem. It does **not** bound the loss of the returned
allocation: the counts are decoded to the best configuration of the class
with ``k_c <= n_q``, placed on nodes (which can fail: the count level has no
node packing) and repaired, and only then re-scored exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from goodopt.arrays import Array, ArrayIn
from goodopt.errors import ValidationError
from goodopt.lazy_import import LazyModule
from goodopt.problem import AllocationProblem

from .configs import ConfigSet, type_layout
from .milp import constraint
from .scaled_objective import ScaledObjective, box_cox, reference_fitness, scaled_objective

if TYPE_CHECKING:
    import pyomo.environ as pyo
else:  # imported at the first model built (goodopt.lazy_import): the array route never needs it
    pyo = LazyModule("pyomo.environ")

SPACINGS = ("adaptive", "uniform")


@dataclass(frozen=True, eq=False)
class PwlClass:
    """One job's configurations of one (type, multi) class and their breakpoints.

    Shapes: ``configs`` (F,) frontier config indices sorted by count;
    ``breaks`` (B,) GPU counts; ``values`` (B,) objective term at them;
    ``speedups`` (B,) speedup at them.
    """

    job: int
    gpu_type: int
    multi: bool
    configs: Array
    breaks: Array
    values: Array
    speedups: Array
    error: float  # max |interpolation - f| over integer counts in [b_0, b_K], objective units


def term(problem: AllocationProblem, speedup: ArrayIn, job: ArrayIn,
         objective: ScaledObjective | None = None) -> Array:
    """Objective term ``u(S)`` in the model's own units. Shapes: (C,), (C,) -> (C,).

    Finite p: the scaled term ``w_j bc_p((S + eps) / r)`` of ``objective``
    (default: :func:`default_objective`); p = -inf: ``S + eps``.
    """
    if problem.p == -np.inf:
        return np.asarray(speedup, dtype=float) + problem.eps
    if objective is None:
        raise ValidationError("objective", "a finite p needs the scaled objective", "pass objective=...")
    with np.errstate(divide="ignore"):
        log_t = np.log(problem.shifted(np.asarray(speedup, dtype=float)))
    return problem.weights[job] * box_cox(problem.p, log_t - np.log(objective.reference))


def default_objective(problem: AllocationProblem, cs: ConfigSet) -> ScaledObjective | None:
    """The scaled objective without an incumbent (None for p = -inf)."""
    return scaled_objective(problem, cs, reference_fitness(problem, cs)) if np.isfinite(problem.p) else None


def step_function(problem: AllocationProblem, cs: ConfigSet, idx: Array,
                  objective: ScaledObjective | None = None) -> tuple[Array, Array, Array]:
    """``f`` and ``S`` at every integer count of a class. Shapes: idx (F,) -> counts, f, S (R,)."""
    if objective is None:
        objective = default_objective(problem, cs)
    k = cs.n_gpus[idx]
    counts = np.arange(k.min(), k.max() + 1)
    pos = np.searchsorted(k, counts, side="right") - 1
    s = np.maximum.accumulate(cs.speedup[idx])[pos]
    return counts, term(problem, s, np.full(len(s), cs.job[idx[0]]), objective), s


def _interp_error(counts: Array, f: Array, breaks: Array) -> float:
    return float(np.max(np.abs(np.interp(counts, breaks, f[breaks - counts[0]]) - f))) if len(counts) else 0.0


def choose_breakpoints(counts: Array, f: Array, n_breakpoints: int | Sequence[int], spacing: str) -> Array:
    """Breakpoints (GPU counts) for one class. Shapes: counts, f (R,) -> (B,).

    ``n_breakpoints`` is a count, or a sequence of GPU counts chosen by the
    user (those inside the class's range are used, with its two ends).
    """
    lo, hi = int(counts[0]), int(counts[-1])
    if not isinstance(n_breakpoints, int | np.integer):
        user = np.asarray(n_breakpoints, dtype=np.int64)
        return np.union1d([lo, hi], user[(user > lo) & (user < hi)])
    if hi - lo + 1 <= n_breakpoints:
        return counts.copy()
    if spacing == "uniform":
        return np.unique(np.round(np.linspace(lo, hi, n_breakpoints)).astype(np.int64))
    breaks = np.array([lo, hi])
    while len(breaks) < n_breakpoints:
        dev = np.abs(np.interp(counts, breaks, f[breaks - lo]) - f)
        i = int(np.argmax(dev))
        if dev[i] <= 0:
            break
        # a jump is best captured by the points on both of its sides
        new = {int(counts[i])}
        if i > 0 and len(breaks) + 1 < n_breakpoints:
            new.add(int(counts[i - 1]))
        breaks = np.union1d(breaks, list(new))
    return breaks


def pwl_classes(problem: AllocationProblem, cs: ConfigSet, n_breakpoints: int | Sequence[int] = 8, spacing: str = "adaptive",
                objective: ScaledObjective | None = None) -> list[PwlClass]:
    """The classes of every job with breakpoints and interpolation errors (objective units).

    Configurations that ``objective`` forbids (pruned against an incumbent)
    are left out of their class, which then starts at the next count.
    """
    if objective is None:
        objective = default_objective(problem, cs)
    if isinstance(n_breakpoints, list | tuple | np.ndarray):
        pts = np.asarray(n_breakpoints)
        if pts.ndim != 1 or not len(pts) or pts.dtype.kind not in "iu" or np.any(pts < 1):
            raise ValidationError("breakpoints", f"a list of breakpoints must hold GPU counts >= 1, got {n_breakpoints!r}")
    elif isinstance(n_breakpoints, bool) or not isinstance(n_breakpoints, (int, np.integer)) or n_breakpoints < 2:
        raise ValidationError("breakpoints", f"must be an integer >= 2 or a list of GPU counts, got {n_breakpoints!r}")
    if spacing not in SPACINGS:
        raise ValidationError("spacing", f"must be one of {SPACINGS}, got {spacing!r}")
    out = []
    allowed = ~cs.keep if objective is None else ~cs.keep & ~objective.forbidden
    moves = np.flatnonzero(allowed)
    key = np.stack([cs.job[moves], cs.gpu_type[moves], cs.multi[moves].astype(np.int64)], axis=1)
    uniq, inverse = np.unique(key, axis=0, return_inverse=True) if len(moves) else (np.zeros((0, 3)), [])
    for q, (j, g, m) in enumerate(uniq):
        idx = moves[inverse == q]
        idx = idx[np.argsort(cs.n_gpus[idx], kind="stable")]
        counts, f, s = step_function(problem, cs, idx, objective)
        breaks = choose_breakpoints(counts, f, n_breakpoints, spacing)
        pos = breaks - counts[0]
        out.append(PwlClass(int(j), int(g), bool(m), idx, breaks, f[pos], s[pos], _interp_error(counts, f, breaks)))
    return out


def build_model(problem: AllocationProblem, cs: ConfigSet, classes: list[PwlClass],
                objective: ScaledObjective | None = None) -> pyo.ConcreteModel:
    """The piecewise-linear MILP of the module docstring (a pure function).

    ``objective`` must be the one ``classes`` were built with (default: :func:`default_objective`).
    """
    pr = problem
    if objective is None:
        objective = default_objective(pr, cs)
    if pr.p == np.inf:
        raise ValidationError("p", "the piecewise-linear model supports p < +inf", "use method='milp' for p = +inf")
    J, G = pr.n_jobs, pr.n_gpu_types
    total, n_nodes, largest = type_layout(pr)
    m = pyo.ConcreteModel(name="goodput-pwl")
    Q = range(len(classes))
    m.d = pyo.Var(Q, domain=pyo.Binary)
    lam_idx = [(q, i) for q in Q for i in range(len(classes[q].breaks))]
    seg_idx = [(q, r) for q in Q for r in range(1, len(classes[q].breaks))]
    m.lam = pyo.Var(lam_idx, bounds=(0, 1))
    m.seg = pyo.Var(seg_idx, domain=pyo.Binary)
    m.n = pyo.Var(Q, domain=pyo.NonNegativeIntegers, bounds=lambda m, q: (0, int(classes[q].breaks[-1])))
    keep_jobs = np.flatnonzero(cs.keep_of_job >= 0).tolist()
    m.keep = pyo.Var(keep_jobs, domain=pyo.Binary)
    classes_of: list[list[int]] = [[] for _ in range(J)]
    for q, cl in enumerate(classes):
        classes_of[cl.job].append(q)
    must_run = np.zeros(J, bool) if objective is None else objective.must_run.copy()
    keep_ok = {j for j in keep_jobs if objective is None or not objective.forbidden[cs.keep_of_job[j]]}
    for j in keep_jobs:
        if j not in keep_ok:
            m.keep[j].fix(0)
    options = [len(classes_of[j]) + (j in keep_ok) for j in range(J)]
    must_run &= np.array(options, dtype=np.int64) > 0
    m.one = pyo.Constraint(
        [j for j in range(J) if options[j] > 1 or must_run[j] and options[j] > 0],
        rule=lambda m, j: (sum(m.d[q] for q in classes_of[j]) + (m.keep[j] if j in keep_ok else 0)
                           == 1 if must_run[j] else
                           sum(m.d[q] for q in classes_of[j]) + (m.keep[j] if j in keep_ok else 0) <= 1))  # (1)
    _segment_rows(m, classes, lam_idx)  # (2), (3), (4)
    keep_k = {j: int(cs.n_gpus[cs.keep_of_job[j]]) for j in keep_jobs}
    keep_g = {j: int(cs.gpu_type[cs.keep_of_job[j]]) for j in keep_jobs}
    m.capacity = pyo.Constraint(range(G), rule=lambda m, g: constraint(sum(m.n[q] for q in Q if classes[q].gpu_type == g)
                                + sum(keep_k[j] * m.keep[j] for j in keep_jobs if keep_g[j] == g)
                                <= int(total[g])))  # (5)
    if pr.interference_avoidance:
        _node_budget_rows(m, pr, classes, keep_jobs, keep_g, n_nodes, largest)  # (6)
    _set_objective(m, pr, cs, classes, classes_of, keep_jobs, keep_ok, objective)
    return m


def _segment_rows(m: pyo.ConcreteModel, classes: list[PwlClass], lam_idx: list[tuple[int, int]]) -> None:
    """(2) one segment per chosen class, (3) weights only on its segment's ends, (4) the GPU count they give."""
    Q = range(len(classes))
    m.lam_sum = pyo.Constraint(Q, rule=lambda m, q: sum(m.lam[q, i] for i in range(len(classes[q].breaks))) == m.d[q])
    m.seg_sum = pyo.Constraint(
        [q for q in Q if len(classes[q].breaks) > 1],
        rule=lambda m, q: sum(m.seg[q, r] for r in range(1, len(classes[q].breaks))) == m.d[q])  # (2)

    def adjacency(m: pyo.ConcreteModel, q: int, i: int) -> Any:  # Any: a pyomo set (pyomo ships no type stubs)
        B = len(classes[q].breaks)
        segs = [r for r in (i, i + 1) if 1 <= r <= B - 1]
        return m.lam[q, i] <= sum(m.seg[q, r] for r in segs)

    m.adjacent = pyo.Constraint([(q, i) for q, i in lam_idx if len(classes[q].breaks) > 1], rule=adjacency)  # (3)
    m.count = pyo.Constraint(Q, rule=lambda m, q: m.n[q] == sum(
        int(b) * m.lam[q, i] for i, b in enumerate(classes[q].breaks)))  # (4)


def _node_budget_rows(m: pyo.ConcreteModel, pr: AllocationProblem, classes: list[PwlClass], keep_jobs: list[int],
                      keep_g: dict[int, int], n_nodes: Array, largest: Array) -> None:
    """(6): multi-node classes take at least two nodes and no more than the type has, kept multi-node jobs
    counted with their nodes."""
    multi_q = [q for q in range(len(classes)) if classes[q].multi]
    m.o = pyo.Var(multi_q, domain=pyo.NonNegativeIntegers, bounds=lambda m, q: (0, int(n_nodes[classes[q].gpu_type])))
    m.o_min = pyo.Constraint(multi_q, rule=lambda m, q: m.o[q] >= 2 * m.d[q])
    m.o_cap = pyo.Constraint(multi_q, rule=lambda m, q: int(largest[classes[q].gpu_type]) * m.o[q] >= m.n[q])
    keep_nodes = {j: int((pr.current[j] > 0).sum()) for j in keep_jobs}
    m.node_budget = pyo.Constraint(
        range(pr.n_gpu_types), rule=lambda m, g: constraint(sum(m.o[q] for q in multi_q if classes[q].gpu_type == g)
        + sum(keep_nodes[j] * m.keep[j] for j in keep_jobs if keep_g[j] == g and keep_nodes[j] > 1)
        <= int(n_nodes[g])))


def _set_objective(m: pyo.ConcreteModel, pr: AllocationProblem, cs: ConfigSet, classes: list[PwlClass],
                   classes_of: list[list[int]], keep_jobs: list[int], keep_ok: set[int],
                   objective: ScaledObjective | None) -> None:
    """The objective: the epigraph of the smallest speedup (p = -inf), else the scaled terms' sum."""
    keep_s = {j: float(cs.speedup[cs.keep_of_job[j]]) for j in keep_jobs}
    if pr.p == -np.inf:
        m.t = pyo.Var(bounds=(pr.eps, None))
        m.epigraph = pyo.Constraint(range(pr.n_jobs), rule=lambda m, j: m.t <= pr.eps + sum(
            float(s) * m.lam[q, i] for q in classes_of[j] for i, s in enumerate(classes[q].speedups))
            + (keep_s[j] * m.keep[j] if j in keep_s else 0))
        m.obj = pyo.Objective(expr=m.t, sense=pyo.maximize)
        return
    if objective is None:
        raise ValidationError("objective", "a finite p needs the scaled objective", "pass objective=...")
    base = objective.idle
    expr = float(base.sum())
    expr += sum((float(v) - base[classes[q].job]) * m.lam[q, i]
                for q in range(len(classes)) for i, v in enumerate(classes[q].values))
    keep_term = {j: float(term(pr, [keep_s[j]], [j], objective)[0] - base[j]) for j in keep_ok}
    expr += sum(keep_term[j] * m.keep[j] for j in keep_ok)
    m.obj = pyo.Objective(expr=expr, sense=pyo.maximize)


def decode(model: pyo.ConcreteModel, problem: AllocationProblem, cs: ConfigSet, classes: list[PwlClass]) -> Array:
    """Config index per job (-1 = none): the best of the class at no more than its count."""
    chosen = np.full(problem.n_jobs, -1, np.int64)
    for j in model.keep:
        if (model.keep[j].value or 0) > 0.5:
            chosen[j] = cs.keep_of_job[j]
    for q, cl in enumerate(classes):
        if (model.d[q].value or 0) > 0.5:
            n = int(round(model.n[q].value or 0))
            ok = cl.configs[cs.n_gpus[cl.configs] <= n]
            if len(ok):
                chosen[cl.job] = ok[np.argmax(cs.speedup[ok])]
    return chosen
