"""Solving Gavel's time-fraction policies (the LPs of :mod:`goodopt.formulations.gavel`).

:func:`solve_gavel` runs one policy on a :class:`~goodopt.gavel.ThroughputMatrix`
and returns a :class:`FractionResult`: ``x`` (J, K) time fractions, ``status``
(why it stopped), ``fun`` (the policy's objective in its own units, see
:data:`POLICIES`), ``message``, the per-stage solver log, and derived
per-job throughputs. Infeasible or failed LPs raise
:class:`~goodopt.errors.SolverError` with their status; a time limit is
reported, never hidden.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from goodopt.errors import SolverError, ValidationError
from goodopt.formulations import gavel as fg
from goodopt.gavel import PACKED, POLICY_NAMES

from .backend import solve_model
from .highs_arrays import HighsSession
from .result import Termination

log = logging.getLogger(__name__)

#: Policy name -> meaning of ``fun``.
POLICIES = {
    "max_min_fairness": "min_j normalised throughput / w_j (het.-aware, Gavel's LAS)",
    "max_min_fairness_agnostic": "min_j time fraction / (w_j f) (heterogeneity-agnostic)",
    "max_total_throughput": "sum_j normalised throughput",
    "min_cost": "cost in $/h of the allocation (with a throughput floor)",
    "finish_time_fairness": "max_j rho_j (Themis' shared / equal-share finish time)",
    "min_makespan": "makespan in seconds",
    "fifo": "number of jobs running (arrival order, fastest free type first)",
    "max_min_fairness_packed": "max_min_fairness with job pairs sharing GPUs (space sharing)",
    "max_total_throughput_packed": "max_total_throughput with job pairs sharing GPUs (space sharing)",
    "finish_time_fairness_packed": "finish_time_fairness with job pairs sharing GPUs (space sharing)",
    "min_makespan_packed": "min_makespan with job pairs sharing GPUs (space sharing)",
    "max_min_fairness_water_filling": "the last frozen level t* (hierarchical max-min fairness across entities)",
}
if tuple(POLICIES) != POLICY_NAMES:  # pragma: no cover - one list of names, kept in step
    raise ImportError("goodopt.gavel.POLICY_NAMES and goodopt.solvers.gavel.POLICIES disagree")
#: Options per policy with their defaults.
POLICY_OPTIONS = {
    "max_min_fairness": {"second_stage": True, "tolerance": 1e-6, "scale_by_size": False},
    "max_min_fairness_agnostic": {"second_stage": True, "tolerance": 1e-6, "scale_by_size": False},
    "max_total_throughput": {"normalise": True},
    "min_cost": {"floor": 1.0},
    "finish_time_fairness": {"rel_tol": 1e-4, "max_lps": 60},
    "min_makespan": {},
    "fifo": {"aware": True},
}
POLICY_OPTIONS.update({packed: POLICY_OPTIONS[base] for packed, base in PACKED.items()})
POLICY_OPTIONS["max_min_fairness_water_filling"] = {"tolerance": 1e-6, "max_lps": 2000}


@dataclass
class FractionResult:
    """Time fractions and how they were found.

    ``x`` (J, K); ``pair_x`` (P, K) the time job pairs share GPUs (packed
    policies; P = 0 otherwise); ``throughput`` (J,) = ``sum_k x_jk T_jk`` plus
    the pair terms; ``normalised`` (J,) = throughput / equal-share throughput.
    """

    policy: str
    x: np.ndarray
    status: Termination
    fun: float
    message: str = ""
    throughput: np.ndarray | None = None
    normalised: np.ndarray | None = None
    n_lps: int = 0
    seconds: float = 0.0
    stages: list = field(default_factory=list)
    options: dict = field(default_factory=dict)
    pair_x: np.ndarray | None = None

    @property
    def success(self) -> bool:
        return self.status in (Termination.OPTIMAL, Termination.COMPLETED)

    def to_dict(self, matrix=None) -> dict:
        """JSON-ready fractions (job -> type -> fraction), throughputs and status."""
        out = {"policy": self.policy, "status": str(self.status), "fun": float(self.fun), "message": self.message,
               "n_lps": self.n_lps, "seconds": self.seconds, "stages": self.stages, "options": self.options}
        if matrix is not None:
            out["fractions"] = {j: {t: float(v) for t, v in zip(matrix.type_names, row) if v > 1e-9}
                                for j, row in zip(matrix.job_names, self.x)}
            out["normalised_throughput"] = {j: float(v) for j, v in zip(matrix.job_names, self.normalised)}
        return out


#: How each policy option is checked: bool, or ``(kind, lo, hi, open_low)`` for a number (``whole`` or not) in
#: ``[lo, hi]`` (``(lo, hi]`` when ``open_low``).
_OPTION_KINDS = {"second_stage": bool, "normalise": bool, "aware": bool, "scale_by_size": bool,
                 "tolerance": ("number", 0.0, 1.0, True), "rel_tol": ("number", 0.0, 1.0, True),
                 "floor": ("number", 0.0, 1e6, False), "max_lps": ("whole", 1, 1_000_000, False)}


def check_policy_options(policy, options) -> dict:
    """Every option of Gavel policy ``policy`` (defaults filled in), each checked by its kind; an error
    names the option (``options.NAME``) and what it takes."""
    if policy not in POLICY_OPTIONS:
        raise ValidationError("policy", f"unknown Gavel policy {policy!r}", f"choose one of {sorted(POLICIES)}")
    if options is not None and not isinstance(options, Mapping):
        raise ValidationError("options", f"must map option -> value, got {options!r}",
                              f"e.g. {{{', '.join(f'{k}: {v}' for k, v in POLICY_OPTIONS[policy].items())}}}")
    options = dict(options or {})
    common = {"time_limit_s": None, "backend": "arrays", "lp_method": "simplex"}
    unknown = sorted(set(options) - set(POLICY_OPTIONS[policy]) - set(common))
    if unknown:
        raise ValidationError(f"options.{unknown[0]}", f"not an option of policy {policy!r}",
                              f"valid options: {sorted(POLICY_OPTIONS[policy]) + sorted(common)}")
    opts = {**POLICY_OPTIONS[policy], **common, **options}
    for key, value in options.items():
        _check_kind(key, value)
    if opts["backend"] not in BACKENDS:
        raise ValidationError("options.backend", f"must be one of {BACKENDS}, got {opts['backend']!r}",
                              "arrays (HiGHS directly, the default) or pyomo (the reference model)")
    if opts["lp_method"] not in LP_METHODS:
        raise ValidationError("options.lp_method", f"must be one of {tuple(LP_METHODS)}, got {opts['lp_method']!r}",
                              "simplex (a vertex of the optimal face, the default) or ipm (an interior point of it, "
                              "as Gavel's interior-point solver returns)")
    t = opts["time_limit_s"]
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 1e6):
        raise ValidationError("options.time_limit_s", f"must be a number of seconds in (0, 1e6], got {t!r}",
                              "omit it for no limit")
    return opts


def _check_kind(key: str, value) -> None:
    kind = _OPTION_KINDS.get(key)
    if kind is bool and not isinstance(value, bool):
        raise ValidationError(f"options.{key}", f"must be true or false, got {value!r}")
    if not isinstance(kind, tuple):
        return
    what, lo, hi, open_low = kind
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and bool(np.isfinite(value)) \
        and (lo < value if open_low else lo <= value) and value <= hi \
        and (what != "whole" or float(value).is_integer())
    if not ok:
        raise ValidationError(f"options.{key}", f"must be a {'whole ' if what == 'whole' else ''}number in "
                              f"{'(' if open_low else '['}{lo:g}, {hi:g}], got {value!r}")


#: How HiGHS solves each LP: ``simplex`` ends at a vertex of the optimal face; ``ipm`` (interior point without
#: crossover) ends inside it, near its centre, the kind of answer Gavel's interior-point solver (ECOS) gives where
#: the optimum is not unique -- which matters to the round mechanism, which follows the fractions as given.
LP_METHODS = {"simplex": {}, "ipm": {"solver": "ipm", "run_crossover": "off", "presolve": "off"}}
#: How the LPs reach HiGHS: as arrays (:func:`~goodopt.formulations.gavel.build_arrays`) or through pyomo.
BACKENDS = ("arrays", "pyomo")


@dataclass(frozen=True)
class _Solved:
    """An arrays LP and its column values (None without a solution)."""

    arrays: object
    values: np.ndarray | None


class _Runner:
    """Solves LPs in sequence, keeping their log and the time budget."""

    def __init__(self, matrix, time_limit_s, backend="arrays", lp_method="simplex"):
        self.mx = matrix
        self.lp_method = lp_method
        self.highs_options = LP_METHODS[lp_method]
        self.deadline = None if time_limit_s is None else time.perf_counter() + float(time_limit_s)
        self.stages: list = []
        self.backend = backend

    def solve(self, name, **build):
        model, out = self._solve(self.highs_options, build)
        fallback = bool(self.highs_options) and out.termination not in (Termination.OPTIMAL, Termination.INFEASIBLE,
                                                                        Termination.TIME_LIMIT)
        if fallback:  # the interior point did not conclude (e.g. a feasibility LP): simplex settles it
            log.debug("LP %r: %s without crossover ended %s; solved again by simplex", name,
                      self.highs_options.get("solver"), out.termination)
            model, out = self._solve({}, build)
        self.record(name, out, **({"fallback": "simplex"} if fallback else {}))
        return model, out

    def record(self, name, out, **extra) -> None:
        """Log one solved LP."""
        self.stages.append({"lp": name, "status": str(out.termination), "objective": out.objective,
                            "solve_s": out.solve_s + out.compile_s, **extra})

    def remaining(self) -> float | None:
        """Seconds left of the time limit (None: no limit)."""
        return None if self.deadline is None else max(self.deadline - time.perf_counter(), 1e-3)

    def _solve(self, highs_options, build):
        remaining = self.remaining()
        if self.backend == "pyomo":
            model = fg.build_model(self.mx, **build)
            return model, solve_model(model, time_limit_s=remaining, highs_options=highs_options)
        arrays = fg.build_arrays(self.mx, **build)
        out, values = HighsSession(arrays.model, highs_options=highs_options).solve(time_limit_s=remaining)
        out = dataclasses.replace(out, objective=arrays.sense * out.objective, bound=arrays.sense * out.bound)
        return _Solved(arrays, values), out


def solve_gavel(matrix, policy: str = "max_min_fairness", options: dict | None = None) -> FractionResult:
    """Time fractions of one Gavel policy. Shapes: matrix (J, K) -> result.x (J, K), result.pair_x (P, K).

    A packed policy (:data:`~goodopt.gavel.PACKED`) needs the matrix's job
    pairs; the others ignore them.
    """
    opts = check_policy_options(policy, options)
    t0 = time.perf_counter()
    mx = _for_policy(matrix, policy)
    base = PACKED.get(policy, policy)
    run = _Runner(mx, opts["time_limit_s"], opts["backend"], opts["lp_method"])
    eq = mx.equal_share_throughput()
    T = mx.throughput
    w = mx.weights[:, None]
    status = Termination.OPTIMAL
    y = np.zeros((0 if mx.pairs is None else len(mx.pairs), mx.n_types))
    if base == "fifo":
        x = fifo_fractions(mx, aware=opts["aware"])
        fun, status = float((x.sum(axis=1) > 0).sum()), Termination.COMPLETED
    elif base in ("max_min_fairness", "max_min_fairness_agnostic"):
        if base == "max_min_fairness":
            coef = T / (w * eq[:, None])
            gain = T / eq[:, None]
        else:
            f = min(1.0, mx.capacity.sum() / float(mx.scale_factor.sum()))
            coef = np.where(mx.runnable, 1.0, 0.0) / (w * f)
            gain = np.where(mx.runnable, 1.0, 0.0)
        if opts["scale_by_size"]:  # Gavel's code: a job on s GPUs needs 1/s of the time for the same level
            coef = coef * mx.scale_factor[:, None]
        model, out = run.solve("max-min", objective="max_min", coef=coef)
        _require(out, policy, "max-min")
        (x, y), fun = _solution(model, mx), float(out.objective)
        if opts["second_stage"]:
            t_min = fun * (1.0 - opts["tolerance"])
            model2, out2 = run.solve("fill", objective="max_sum", coef=(gain, coef), t_min=t_min)
            _require(out2, policy, "fill")
            x, y = _solution(model2, mx)
    elif base == "max_total_throughput":
        scale = T.max(axis=1, keepdims=True) if opts["normalise"] else 1.0
        model, out = run.solve("max-sum", objective="max_sum", coef=T / scale)
        _require(out, policy, "max-sum")
        (x, y), fun = _solution(model, mx), float(out.objective)
    elif base == "min_cost":
        floor = float(opts["floor"])
        if not 0 <= floor:
            raise ValidationError("options.floor", f"must be >= 0, got {floor}", "1.0 = equal-share throughput")
        model, out = run.solve("min-cost", objective="min_cost", floor=floor * eq)
        _require(out, policy, "min-cost", hint="lower the floor (<= 1 is always feasible)")
        (x, y), fun = _solution(model, mx), float(out.objective)
    elif base == "min_makespan":
        R = _need(mx, "remaining_steps", policy)
        if np.any(R <= 0):
            raise ValidationError("remaining_steps", "must be > 0 for min_makespan", "drop finished jobs")
        model, out = run.solve("makespan", objective="max_min", coef=T / R[:, None])
        _require(out, policy, "makespan")
        (x, y), fun = _solution(model, mx), 1.0 / float(out.objective)
    elif base == "finish_time_fairness":
        x, y, fun, status = _finish_time_fairness(mx, run, eq, opts)
    elif base == "max_min_fairness_water_filling":
        x, y, fun, status = _water_filling(mx, run, eq, opts)
    else:  # pragma: no cover - guarded by _check
        raise AssertionError(policy)
    thr = mx.effective_throughput(x, y)
    return FractionResult(policy=policy, x=x, status=status, fun=fun, message=POLICIES[policy], throughput=thr,
                          normalised=thr / eq, n_lps=len(run.stages), seconds=time.perf_counter() - t0,
                          stages=run.stages, options=opts, pair_x=y)


def _for_policy(matrix, policy):
    """The matrix a policy solves: with its pairs for a packed policy (which needs them), without otherwise."""
    if policy in PACKED:
        if matrix.pairs is None:
            raise ValidationError("pairs", f"policy {policy!r} needs the jobs' pair throughputs (space sharing)",
                                  f"give the matrix pairs and pair_throughput, or use {PACKED[policy]!r}")
        return matrix
    if matrix.pairs is None:
        return matrix
    return dataclasses.replace(matrix, pairs=None, pair_throughput=None)


def _solution(model, mx):
    """``(X, Y)`` of a solved LP of either backend."""
    if isinstance(model, _Solved):
        return model.arrays.fractions(model.values)
    return fg.fractions(model, mx), fg.pair_fractions(model, mx)


def _need(mx, name, policy):
    v = getattr(mx, name)
    if v is None:
        raise ValidationError(name, f"is required by policy {policy!r}",
                              f"give the matrix its {name}; from a scenario (solve, compare): --option "
                              f"{name}={{JOB: VALUE, ...}}" + (" for every job" if name == "remaining_steps" else ""))
    return v


def _require(out, policy, stage, hint="check the throughput matrix"):
    if out.termination == Termination.OPTIMAL and out.has_solution:
        return
    raise SolverError(f"Gavel policy {policy!r}, LP {stage!r}: status {out.termination} ({out.raw_status}), "
                      f"objective {out.objective}, bound {out.bound}; {hint}")


def _finish_time_fairness(mx, run, eq, opts):
    """min max_j rho_j by the scaled-floor LPs (8), each of which bounds the optimum from both sides; the next
    ``r`` is the secant root of ``tau(r) = 1`` through the last two LPs, or the bracket's middle when that
    falls outside it or the bracket shrank less than half.

    With the arrays backend the search's LPs are one HiGHS instance re-solved warm by the dual simplex (``r``
    changes only the epigraph column, :class:`_FtfSearch`), and the answer is the LP at the best ``r`` solved
    once more by ``lp_method`` (an interior point of its optimal face with ``ipm``, as Gavel's solver gives)."""
    R = _need(mx, "remaining_steps", "finish_time_fairness")
    a = _need(mx, "elapsed_s", "finish_time_fairness")
    D = a + R / eq if mx.isolated_s is None else mx.isolated_s
    best = (mx.equal_share(), np.zeros((0 if mx.pairs is None else len(mx.pairs), mx.n_types)))
    hi = _ftf_rho(mx, *best, a, R, D)  # the equal share is feasible
    lo = float(np.max(a / D))
    sel = np.flatnonzero(R > 0)
    search = _FtfSearch(mx, sel, run, R[sel]) if run.backend == "arrays" and len(sel) else None
    status, seen, r, best_r = Termination.OPTIMAL, [], hi, None
    while len(sel) and hi - lo > opts["rel_tol"] * hi:
        if len(run.stages) >= opts["max_lps"]:
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
        _require(out, "finish_time_fairness", f"ftf r={r:.6g}")
        tau = float(out.objective)
        if not tau > 0:  # no job can progress at all: the equal share is as good as any
            break
        # any X feasible at r' lifts every floor by f_j(r') / f_j(r) (f_j(r) = R_j / (r D_j - a_j)), and at
        # least one of those lifts is at most tau
        lo = max(lo, float(np.min((a[sel] + slack / tau) / D[sel])))
        if tau <= 1.0:  # no X lifts every floor: r cannot be beaten
            lo = max(lo, r)
        x, y = _solution(model, mx)
        rho = _ftf_rho(mx, x, y, a, R, D)
        if rho < hi:
            hi, best, best_r = rho, (x, y), r
        seen = [*seen[-1:], (r, tau)]
        r = _ftf_next(seen, lo, hi, shrank=hi - lo <= 0.5 * gap)
    if search is not None and best_r is not None and run.highs_options and status == Termination.OPTIMAL:
        slack = best_r * D[sel] - a[sel]
        model, out = run.solve(f"ftf r={best_r:.6g} ({run.lp_method})", objective="max_min",
                               coef=_ftf_coef(mx, sel, slack, R), rows=sel)
        _require(out, "finish_time_fairness", f"ftf r={best_r:.6g} ({run.lp_method})")
        best = _solution(model, mx)
        hi = _ftf_rho(mx, *best, a, R, D)
    return best[0], best[1], hi, status


def _ftf_coef(mx, sel, slack, R):
    """The max-min coefficients of the scaled-floor LP at ``r`` (``slack = r D - a`` of the jobs ``sel``)."""
    coef = np.zeros_like(mx.throughput)
    coef[sel] = mx.throughput[sel] * (slack / R[sel])[:, None]
    return coef


class _FtfSearch:
    """The scaled-floor LPs of one allocation in one HiGHS instance, re-solved warm by the dual simplex.

    Row ``j`` of the epigraph, ``t <= thr_j * slack_j / R_j``, is kept divided by ``slack_j / R_j``, so that
    ``r`` changes only the epigraph column ``t``: its coefficient in row ``j`` is ``R_j / slack_j``. The LP and
    its optimum ``t`` are the same; the last basis stays valid and the next solve starts from it.
    """

    def __init__(self, mx, sel, run, remaining):
        self.run = run
        self.arrays = fg.build_arrays(mx, objective="max_min", coef=mx.throughput, rows=sel)
        self.session = HighsSession(self.arrays.model)
        m = self.arrays.model
        self.t_col = m.n_columns - 1
        self.rows = np.arange(m.n_rows - len(sel), m.n_rows, dtype=np.int32)
        self.remaining = remaining

    def solve(self, name, slack):
        h = self.session.h
        for row, value in zip(self.rows.tolist(), (self.remaining / slack).tolist()):
            h.changeCoeff(row, self.t_col, value)
        out, values = self.session.solve(time_limit_s=self.run.remaining())
        self.run.record(name, out)
        return _Solved(self.arrays, values), out


def _ftf_next(seen, lo, hi, shrank) -> float:
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


def _ftf_rho(mx, x, y, a, R, D) -> float:
    """``max_j rho_j`` of fractions ``(x, y)``."""
    thr = mx.effective_throughput(x, y)
    with np.errstate(divide="ignore"):
        rem = np.where(R > 0, R / np.maximum(thr, 1e-300), 0.0)
    return float(np.max((a + rem) / D))


def _water_filling(mx, run, eq, opts):
    """Hierarchical weighted max-min fairness (10): freeze bottlenecks level by level."""
    J = mx.n_jobs
    ent = mx.entities if mx.entities is not None else np.arange(J)
    w_ent = mx.entity_weights if mx.entities is not None else mx.weights
    policies = mx.entity_policies if mx.entities is not None else ("fairness",) * J
    T = mx.throughput
    level = np.full(J, np.nan)  # frozen throughputs
    status, t_star, tol = Termination.OPTIMAL, 0.0, opts["tolerance"]
    while np.isnan(level).any():
        if len(run.stages) >= opts["max_lps"]:
            status = Termination.ITERATION_LIMIT
            break
        w = _entity_weights(ent, w_ent, policies, mx.weights, np.isnan(level), mx.arrival_order)
        rows = np.flatnonzero(w > 0)
        coef = T / (eq[:, None] * np.where(w > 0, w, 1.0)[:, None])
        floor = np.nan_to_num(level, nan=0.0) * (1 - tol)
        model, out = run.solve("level", objective="max_min", coef=coef, floor=floor, rows=rows)
        _require(out, "max_min_fairness_water_filling", "level")
        t_star = float(out.objective)
        stuck = [j for j in rows if _bottleneck(mx, run, j, rows, coef, t_star, floor, eq, w[j], tol)]
        for j in stuck or rows:  # numerical ties: freeze the whole level rather than loop
            level[j] = t_star * w[j] * eq[j]
    floor = np.nan_to_num(level, nan=0.0) * (1 - tol)
    model, out = run.solve("fill", objective="max_sum", coef=T / eq[:, None], floor=floor)
    _require(out, "max_min_fairness_water_filling", "fill")
    x, y = _solution(model, mx)
    return x, y, t_star, status


def _bottleneck(mx, run, j, rows, coef, t_star, floor, eq, w_j, tol) -> bool:
    """Whether job ``j`` cannot rise above its level ``t* w_j`` (in ``thr / thr^eq``) while the other weighted
    jobs stay at ``t*`` (one LP)."""
    only = np.zeros_like(coef)
    only[j] = mx.throughput[j] / eq[j]
    model, out = run.solve(f"bottleneck {mx.job_names[j]}", objective="max_sum", coef=(only, coef),
                           t_min=t_star * (1 - tol), floor=floor, rows=rows)
    _require(out, "max_min_fairness_water_filling", "bottleneck")
    return float(out.objective) <= t_star * w_j * (1 + 1e3 * tol)


def _entity_weights(ent, w_ent, policies, job_w, open_, order) -> np.ndarray:
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


def fifo_fractions(matrix, *, aware: bool = True) -> np.ndarray:
    """FIFO: in arrival order each job takes its whole time on one type with room for it.

    Heterogeneity-aware picks the fastest such type, agnostic the first (in
    type order). Jobs that find no room get nothing. Shapes: -> (J, K).
    """
    mx = matrix
    free = mx.capacity.astype(np.int64).copy()
    x = np.zeros((mx.n_jobs, mx.n_types))
    for j in np.argsort(mx.arrival_order, kind="stable"):
        ok = mx.runnable[j] & (free >= mx.scale_factor[j])
        if not ok.any():
            continue
        k = int(np.argmax(np.where(ok, mx.throughput[j], -1.0))) if aware else int(np.argmax(ok))
        x[j, k] = 1.0
        free[k] -= mx.scale_factor[j]
    return x
