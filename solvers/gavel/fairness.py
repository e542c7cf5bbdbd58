"""The iterative policies: finish-time fairness (scaled-floor LPs, a secant search) and hierarchical
max-min fairness (water filling)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from goodopt.formulations import gavel as fg

from goodopt.arrays import Array
from goodopt.gavel.throughput_matrix import ThroughputMatrix

from ..mip_solvers.highs_arrays import HighsSession
from ..mip_solvers.outcome import MilpOutcome
from ..result import Termination
from .one_type import binding_level
from .policy_options import FinishTimeOptions, WaterFillingOptions
from .runner import PolicyAnswer, Runner, Solved, need, require, solution


def finish_time_fairness(mx: ThroughputMatrix, run: Runner, eq: Array, opts: FinishTimeOptions) -> PolicyAnswer:
    """min max_j rho_j by the scaled-floor LPs (8), each of which bounds the optimum from both sides; the next
    ``r`` is the secant root of ``tau(r) = 1`` through the last two LPs, or the bracket's middle when that
    falls outside it or the bracket shrank less than half.

    With the arrays backend the search's LPs are one HiGHS instance re-solved warm by the dual simplex (``r``
    changes only the epigraph column, :class:`_FtfSearch`), and the answer is the LP at the best ``r`` solved
    once more by ``lp_method`` (an interior point of its optimal face with ``ipm``, as Gavel's solver gives).

    On one GPU type without pairs (an agnostic policy's pooled type) the optimum has a closed form
    (:func:`_one_type_optimum`): no search, one LP at the optimum for the fractions (none where the GPUs bind
    there, :mod:`.one_type`), none when the equal share is already within ``rel_tol`` of it."""
    R = need(mx, "remaining_steps", "finish_time_fairness")
    a = need(mx, "elapsed_s", "finish_time_fairness")
    D = a + R / eq if mx.isolated_s is None else mx.isolated_s
    best = (mx.equal_share(), np.zeros((0 if mx.pairs is None else len(mx.pairs), mx.n_types)))
    hi = _ftf_rho(mx, *best, a, R, D)  # the equal share is feasible
    sel = np.flatnonzero(R > 0)
    exact = _one_type_optimum(mx, sel, a, R, D) if len(sel) else None
    if exact is not None:  # the equal share within the tolerance of the optimum needs no LP
        return (*best, hi, Termination.OPTIMAL) if hi - exact <= opts.rel_tol * hi else \
            _ftf_at(mx, run, sel, exact, a, R, D, best, hi)
    return _ftf_search(mx, run, sel, (a, R, D), best, hi, opts)


def _ftf_search(mx: ThroughputMatrix, run: Runner, sel: Array, ard: tuple[Array, Array, Array],
                best: tuple[Array, Array], hi: float, opts: FinishTimeOptions) -> PolicyAnswer:
    """The secant search of :func:`finish_time_fairness` from the equal share ``best`` (``max_j rho_j = hi``);
    ``ard``: the jobs' elapsed times, remaining steps and isolated finish times."""
    a, R, D = ard
    lo = float(np.max(a / D))
    # one HiGHS instance re-solved warm; another solver gets each LP whole
    search = _FtfSearch(mx, sel, run, R[sel]) if run.backend == "arrays" and run.solver == "highs" and len(sel) \
        else None
    status, r = Termination.OPTIMAL, hi
    seen: list[tuple[float, float]] = []
    best_r: float | None = None
    while len(sel) and hi - lo > opts.rel_tol * hi:
        if len(run.stages) >= opts.max_lps:
            status = Termination.ITERATION_LIMIT
            break
        gap = hi - lo
        slack = r * D[sel] - a[sel]
        if search is None:
            model, out = run.solve(f"ftf r={r:.6g}", objective="max_min", coef=_ftf_coef(mx, sel, slack, R), rows=sel)
        else:
            model, out = search.solve(f"ftf r={r:.6g}", slack)
        if out.termination == Termination.TIME_LIMIT:
            status = Termination.TIME_LIMIT
            break
        require(out, "finish_time_fairness", f"ftf r={r:.6g}")
        tau = float(out.objective)
        if not tau > 0:  # no job can progress at all: the equal share is as good as any
            break
        # any X feasible at r' lifts every floor by f_j(r') / f_j(r) (f_j(r) = R_j / (r D_j - a_j)), and at
        # least one of those lifts is at most tau
        lo = max(lo, float(np.min((a[sel] + slack / tau) / D[sel])))
        if tau <= 1.0:  # no X lifts every floor: r cannot be beaten
            lo = max(lo, r)
        x, y = solution(model, mx)
        rho = _ftf_rho(mx, x, y, a, R, D)
        if rho < hi:
            hi, best, best_r = rho, (x, y), r
        seen = [*seen[-1:], (r, tau)]
        r = _ftf_next(seen, lo, hi, shrank=hi - lo <= 0.5 * gap)
    if search is not None and best_r is not None and run.highs_options and status == Termination.OPTIMAL:
        slack = best_r * D[sel] - a[sel]
        model, out = run.solve(f"ftf r={best_r:.6g} ({run.lp_method})", objective="max_min",
                               coef=_ftf_coef(mx, sel, slack, R), rows=sel)
        require(out, "finish_time_fairness", f"ftf r={best_r:.6g} ({run.lp_method})")
        best = solution(model, mx)
        hi = _ftf_rho(mx, *best, a, R, D)
    return best[0], best[1], hi, status


def _one_type_optimum(mx: ThroughputMatrix, sel: Array, a: Array, R: Array, D: Array) -> float | None:
    """min_X max_j rho_j on one GPU type without pairs (a heterogeneity-agnostic policy's pooled type), in
    closed form; None where a job of ``sel`` cannot run there (the search decides those).

    On one type, ``rho_j <= r`` asks job ``j`` for the time fraction ``n_j(r) = R_j / (thr_j (r D_j - a_j))``;
    ``r`` is feasible iff every ``n_j(r) <= 1`` (``r >= r_A = max_j (a_j + R_j / thr_j) / D_j``) and the
    GPUs suffice, ``f(r) = sum_j g_j n_j(r) <= C``. ``f`` is convex and decreasing, so Newton's method from
    ``r_A`` rises to the root of ``f = C`` without passing it; the optimum is ``r_A`` or that root."""
    if mx.n_types != 1 or mx.pairs is not None:
        return None
    thr, g, C = mx.throughput[sel, 0], mx.scale_factor[sel].astype(float), float(mx.capacity[0])
    if not (np.all(thr > 0) and np.all(g <= C)):
        return None
    a, R, D = a[sel], R[sel], D[sel]
    r = float(np.max((a + R / thr) / D))
    for _ in range(200):
        slack = r * D - a
        excess = float(np.sum(g * R / (thr * slack))) - C
        if excess <= 0:
            break
        step = excess / float(np.sum(g * R * D / (thr * slack * slack)))
        if not r + step > r:
            break
        r += step
    return r


def _ftf_at(mx: ThroughputMatrix, run: Runner, sel: Array, r: float, a: Array, R: Array, D: Array,
            best: tuple[Array, Array], hi: float) -> PolicyAnswer:
    """The scaled-floor LP (8) at the optimum ``r``: in closed form where the GPUs bind (:mod:`.one_type`),
    else solved once (by ``lp_method``); its fractions if they beat ``best`` (``max_j rho_j = hi``)."""
    coef = _ftf_coef(mx, sel, r * D[sel] - a[sel], R)
    exact = binding_level(coef[:, 0], mx.scale_factor, float(mx.capacity[0]), rows=sel)
    if exact is not None:
        x, y = exact[0][:, None], best[1]
    else:
        model, out = run.solve(f"ftf r={r:.6g} (closed form)", objective="max_min", coef=coef, rows=sel)
        require(out, "finish_time_fairness", f"ftf r={r:.6g} (closed form)")
        x, y = solution(model, mx)
    rho = _ftf_rho(mx, x, y, a, R, D)
    return (x, y, rho, Termination.OPTIMAL) if rho < hi else (*best, hi, Termination.OPTIMAL)


def _ftf_coef(mx: ThroughputMatrix, sel: Array, slack: Array, R: Array) -> Array:
    """The max-min coefficients of the scaled-floor LP at ``r`` (``slack = r D - a`` of the jobs ``sel``)."""
    coef = np.zeros_like(mx.throughput)
    coef[sel] = mx.throughput[sel] * (slack / R[sel])[:, None]
    return coef


#: HiGHS's options in the search's instance: devex pricing in the dual simplex. HiGHS otherwise chooses steepest
#: edge here and computes its weights anew at every warm re-solve that pivots (0.55 ms against 0.23 ms a re-solve
#: on a 331-row search LP, the same number of pivots). Measured on the reproduction's Gavel tasks
#: (heterogeneity-aware, 5,000 jobs, one process, CPU s): at 6 jobs/h 39.1 against 45.2, at 3 jobs/h 57.0 against
#: 63.2. The LPs' optima are the same; which vertex of a degenerate optimum the search sees is not, hence its best
#: ``r`` and the interior answer there: those runs' average JCT moved by +3.0% and +2.5%.
SEARCH_HIGHS_OPTIONS = {"simplex_dual_edge_weight_strategy": 1}


class _FtfSearch:
    """The scaled-floor LPs of one allocation in one HiGHS instance, re-solved warm by the dual simplex.

    Row ``j`` of the epigraph, ``t <= thr_j * slack_j / R_j``, is kept divided by ``slack_j / R_j``, so that
    ``r`` changes only the epigraph column ``t``: its coefficient in row ``j`` is ``R_j / slack_j``. The LP and
    its optimum ``t`` are the same; the last basis stays valid and the next solve starts from it.
    """

    def __init__(self, mx: ThroughputMatrix, sel: Array, run: Runner, remaining: Array) -> None:
        self.run = run
        self.arrays = fg.build_arrays(mx, objective="max_min", coef=mx.throughput, rows=sel)
        self.session = HighsSession(self.arrays.model, highs_options=SEARCH_HIGHS_OPTIONS)
        m = self.arrays.model
        self.t_col = m.n_columns - 1
        self.rows = np.arange(m.n_rows - len(sel), m.n_rows, dtype=np.int32)
        self.remaining = remaining

    def solve(self, name: str, slack: Array) -> tuple[Solved, MilpOutcome]:
        h = self.session.h
        for row, value in zip(self.rows.tolist(), (self.remaining / slack).tolist()):
            h.changeCoeff(row, self.t_col, value)
        out, values = self.session.solve(time_limit_s=self.run.remaining())
        self.run.record(name, out)
        return Solved(self.arrays, values), out


def _ftf_next(seen: list[tuple[float, float]], lo: float, hi: float, shrank: bool) -> float:
    """The next ``r``: the secant root of ``tau(r) = 1`` if it lies inside the bracket and the last LP halved
    it, else the bracket's middle (the first LP, at the upper end, always shrinks the bracket)."""
    mid = 0.5 * (lo + hi)
    if len(seen) < 2:
        return hi if shrank else mid
    (r0, t0), (r1, t1) = seen
    if not shrank or t1 == t0:
        return mid
    r = r1 + (1.0 - t1) * (r1 - r0) / (t1 - t0)
    return r if lo < r < hi else mid


def _ftf_rho(mx: ThroughputMatrix, x: Array, y: Array | None, a: Array, R: Array, D: Array) -> float:
    """``max_j rho_j`` of fractions ``(x, y)``."""
    thr = mx.effective_throughput(x, y)
    with np.errstate(divide="ignore"):
        rem = np.where(R > 0, R / np.maximum(thr, 1e-300), 0.0)
    return float(np.max((a + rem) / D))


def water_filling(mx: ThroughputMatrix, run: Runner, eq: Array, opts: WaterFillingOptions) -> PolicyAnswer:
    """Hierarchical weighted max-min fairness (10): freeze bottlenecks level by level."""
    J = mx.n_jobs
    ent, w_ent, policies = np.arange(J), mx.weights, ("fairness",) * J
    if mx.entities is not None and mx.entity_weights is not None and mx.entity_policies is not None:
        ent, w_ent, policies = mx.entities, mx.entity_weights, mx.entity_policies
    T = mx.throughput
    level = np.full(J, np.nan)  # frozen throughputs
    status, t_star, tol = Termination.OPTIMAL, 0.0, opts.tolerance
    while np.isnan(level).any():
        if len(run.stages) >= opts.max_lps:
            status = Termination.ITERATION_LIMIT
            break
        w = _entity_weights(ent, w_ent, policies, mx.weights, np.isnan(level), mx.arrival_order)
        rows = np.flatnonzero(w > 0)
        coef = T / (eq[:, None] * np.where(w > 0, w, 1.0)[:, None])
        floor = np.nan_to_num(level, nan=0.0) * (1 - tol)
        model, out = run.solve("level", objective="max_min", coef=coef, floor=floor, rows=rows)
        require(out, "max_min_fairness_water_filling", "level")
        t_star = float(out.objective)
        stuck = [j for j in rows.tolist() if _bottleneck(mx, run, j, rows, coef, t_star, floor, eq, w[j], tol)]
        for j in stuck or rows:  # numerical ties: freeze the whole level rather than loop
            level[j] = t_star * w[j] * eq[j]
    floor = np.nan_to_num(level, nan=0.0) * (1 - tol)
    model, out = run.solve("fill", objective="max_sum", coef=T / eq[:, None], floor=floor)
    require(out, "max_min_fairness_water_filling", "fill")
    x, y = solution(model, mx)
    return x, y, t_star, status


def _bottleneck(mx: ThroughputMatrix, run: Runner, j: int, rows: Array, coef: Array, t_star: float, floor: Array,
                eq: Array, w_j: float, tol: float) -> bool:
    """Whether job ``j`` cannot rise above its level ``t* w_j`` (in ``thr / thr^eq``) while the other weighted
    jobs stay at ``t*`` (one LP)."""
    only = np.zeros_like(coef)
    only[j] = mx.throughput[j] / eq[j]
    model, out = run.solve(f"bottleneck {mx.job_names[j]}", objective="max_sum", coef=(only, coef),
                           t_min=t_star * (1 - tol), floor=floor, rows=rows)
    require(out, "max_min_fairness_water_filling", "bottleneck")
    return float(out.objective) <= t_star * w_j * (1 + 1e3 * tol)


def _entity_weights(ent: Array, w_ent: Array, policies: Sequence[str], job_w: Array, open_: Array,
                    order: Array) -> Array:
    """Each open job's share of its entity's weight (0 for frozen jobs and FIFO jobs still waiting)."""
    w = np.zeros(len(ent))
    for e in np.unique(ent[open_]):
        members = np.flatnonzero((ent == e) & open_)
        if policies[e] == "fifo":
            first = members[np.argmin(order[members])]
            w[first] = w_ent[e]
        else:
            w[members] = w_ent[e] * job_w[members] / job_w[members].sum()
    return w
