"""The state of one exact solve (:class:`MilpRun`: data, options, deadline, incumbents, bound) and the small
records its stages share."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
from goodopt.formulations.configs import enumerate_configs, sia_configs
from goodopt.formulations.scaled_objective import (
    ScaledObjective,
    fitness_from_sum,
    fitness_of_value,
    reference_fitness,
    scaled_objective,
)

from goodopt.arrays import Array
from goodopt.evaluator import Evaluator
from goodopt.problem import AllocationProblem
from goodopt.progress import record_point, report
from goodopt.records import Record, RecordIn

from ..mip_solvers.outcome import MilpOutcome
from ..options import MilpOptions, PwlOptions
from ..result import CERTIFIED_GAP, Termination


def objective_to_fitness(problem: AllocationProblem, value: float, reference: float | None = None) -> float:
    """Fitness of a model objective value (or bound).

    Finite p: ``reference`` is the reference fitness ``r`` the model was
    scaled to (``SolveResult.extra["objective_scale"]["reference"]``); without
    it the value is read as ``Σ_j w_j h(S_j + eps)`` in natural units.
    p = ±inf: the value is the fitness.
    """
    if not np.isfinite(value):
        return float("nan")
    if not np.isfinite(problem.p):
        return float(value)
    if reference is not None:
        return fitness_of_value(value, problem.p, float(problem.weights.sum()), reference)
    return fitness_from_sum(value, float(problem.weights.sum()), problem.p)


def solver_record(opts: MilpOptions | PwlOptions, problem: AllocationProblem) -> Record:
    """The MILP solver of a run as a result records it: name, version and the parameters every MILP of the run
    gets (the gaps, set per model in its own units, and the time left are in each stage's record)."""
    from ..mip_solvers import Limits, adapter, parameters

    tol = None if opts.solver == "highs" else other_solver_feasibility(problem)
    limits = Limits(node_limit=getattr(opts, "node_limit", None), feasibility_tol=tol, threads=opts.threads,
                    native=opts.highs_options if opts.solver == "highs" else opts.solver_options)
    return {"name": opts.solver, "version": adapter(opts.solver).version(),
            "parameters": parameters(opts.solver, limits),
            "lp_stages": "highs" if opts.solver != "highs" else "highs (the same solver)",
            "dive_probe": dive_probe(opts) if isinstance(opts, MilpOptions) else None}


def remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(deadline - time.perf_counter(), 1e-3)


def expired(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() >= deadline


#: HiGHS's pseudo-cost reliability in configuration-level MILPs (the dives and the configuration MILP): how many
#: strong-branching looks at a column before its pseudo-cost is trusted (HiGHS's default 8), unless the user's
#: ``highs_options`` set it. These models branch on a few hundred to a few thousand 0/1 configuration columns, and
#: strong branching was most of a deep search's work (five-types-2048 seed 3, its own objective: 4,514 of 7,511
#: LP iterations in the dive's 112 nodes). Measured (CPU s of the whole solve, one process, the two settings
#: alternating; the same optima on all 190 instances below): five-types-2048 own seeds 0-9 26.4 s against 27.6 (seed 3
#: 3.54 against 4.42, the rest within 0.1 s), Sia's 16.0 against 16.1; mixed-2048 Sia's seeds 0-9 11.7 against
#: 12.1 (seeds 6 and 7 2.24 and 2.16 against 2.43 and 2.37), its own 6.2 against 6.3; sia-64 seeds 0-39 Sia's
#: 1.05 against 1.08, its own 1.95 against 2.10 (seeds 0-129: Sia's 4.45 against 4.62, seed 53 0.13 against 0.19);
#: five-types-512, cluster-2048 (seeds 0-4) and mixed-64 (seeds 0-19), both objectives, within 4%. At 0 (no strong
#: branching) mixed-2048 Sia's took 17.4 s against 11.9; 1 and 4 gave about what 2 gives. Sia's policy (the
#: reproduction's Philly workloads 1-3) took 32.8 s against 32.8, the same rounds; the full reproduction's rows
#: are the same to the last digit.
PSCOST_RELIABLE = ("mip_pscost_minreliable", 2)


def config_highs_options(opts: MilpOptions | PwlOptions, *, staged: bool = True) -> RecordIn:
    """Native options for configuration-level models: presolve off, and :data:`PSCOST_RELIABLE` in the staged
    method's (``staged``; the reference model, the ground for comparing solvers, keeps HiGHS's branching),
    unless the user says otherwise.

    Measured on the families: HiGHS's presolve made these models 10-20x slower
    (e.g. 0.38 s -> 0.02 s at 16 x 4 GPUs, 96 jobs) and never helped.
    """
    if opts.solver != "highs":
        return opts.highs_options
    own: dict[str, Any] = {"presolve": "off"}
    if staged:
        own[PSCOST_RELIABLE[0]] = PSCOST_RELIABLE[1]
    return {**own, **opts.highs_options}


def without_restart(opts: MilpOptions | PwlOptions, options: RecordIn) -> Record:
    """Native ``options`` for the reduced-cost dive (presolve on, a MIP start, a bound that may end the solve),
    with HiGHS's restart off unless the user sets it.

    HiGHS 1.16 with presolve on, a MIP start and its restart returned a wrong
    optimum: on a 153-column dive model of sia-64 (seed 0, under every type's
    pattern rows) its feasibility jump found 0.0119775, the root restart
    followed, and HiGHS reported "optimal" at that value with the dual bound
    equal to it, where the same model has 0.0121756 (presolve off, no start,
    or no restart: each finds it). One wrong bound in 143 such dives over five
    families and 25 seeds; none with the restart off. Applied where that was
    measured only: HiGHS has had wrong answers with the restart off too
    (ERGO-Code/HiGHS issue 2320), and the placement level and the second
    opinion keep its defaults, which the brute-force suites check.
    """
    out = dict(options)
    if opts.solver == "highs" and "mip_allow_restart" not in opts.highs_options:
        out["mip_allow_restart"] = False
    return out


def model_route(opts: MilpOptions | PwlOptions) -> str:
    route: str = getattr(opts, "model_route", "auto")
    return "arrays" if route == "auto" else route


def pattern_rows_apply(run: MilpRun) -> bool:
    o = run.opts
    return (getattr(o, "config_placement", "patterns") == "patterns" and model_route(o) == "arrays"
            and run.pr.interference_avoidance)


#: The share of a time limit the first LP stage may use while the run has no candidate answer: the rest is kept
#: for greedy's start, which then runs to its end (five-types-2048 seed 5: the LP needs 1.0 s, greedy 0.75 s on
#: the bench machine; at a limit of 1 s the answer was a partial greedy of 32 of 819 jobs, 0.05% of the optimum).
START_SHARE = 0.75

#: HiGHS's default MIP feasibility tolerance (its option ``mip_feasibility_tolerance``).
HIGHS_MIP_FEASIBILITY = 1e-6

#: The MIP feasibility tolerance for epigraph (p = +-inf) models, unless the user sets one (HiGHS's; every other
#: solver's feasibility and integrality tolerance).
EPIGRAPH_MIP_FEASIBILITY = 1e-9
#: The MIP feasibility tolerance for the scaled finite-p models, unless the user sets one.
SCALED_MIP_FEASIBILITY = 1e-7


def other_solver_feasibility(problem: AllocationProblem) -> float:
    """The feasibility and integrality tolerance a solver other than HiGHS is given (and its bound loosened by):
    the one ``milp`` gives HiGHS for the model (see :func:`goodopt.solvers.milp.method.solve_milp`)."""
    return SCALED_MIP_FEASIBILITY if np.isfinite(problem.p) else EPIGRAPH_MIP_FEASIBILITY


#: Re-scalings of the objective (a new reference fitness) before a resolution problem is reported.
MAX_RESCALES = 8
#: A feasible allocation kept as a candidate answer: (allocation, where it came from, fitness).
Candidate = tuple[Array, str, float]


class MilpRun:
    """State shared by the stages of one exact solve: data, options, clock, incumbents, bound."""

    def __init__(self, problem: AllocationProblem, evaluator: Evaluator, opts: MilpOptions | PwlOptions,
                 t_start: float) -> None:
        self.pr, self.ev = problem, evaluator
        # MilpOptions or PwlOptions: the stages that read the milp-only options run for milp only
        self.opts: Any = opts
        self.deadline = None if opts.time_limit_s is None else t_start + opts.time_limit_s
        t0 = time.perf_counter()
        # configs='sia': the same problem over Sia's configuration set (MilpOptions.configs)
        self.cs = sia_configs(problem) if getattr(opts, 'configs', 'all') == 'sia' else enumerate_configs(problem)
        self.build_s = time.perf_counter() - t0
        self.info: dict[str, Any] = {"n_configs": self.cs.n_configs, "stages": []}
        self.candidates: list[Candidate] = []  # (alloc, source, fitness) of feasible allocations
        self.fit_bound = np.inf
        # a bound on every allocation using a configuration dropped from ``cs`` (reduced-cost fixing)
        self.dropped_bound = -np.inf
        self.objective: ScaledObjective | None = None  # for finite p
        self.last_model: Any = None  # the configuration or placement model solved last (write_model)
        # configurations open in the reduced-cost dive under every type's pattern rows (0: none ran)
        self.dive_open = 0
        self.info["solver"] = solver_record(opts, problem)

    # ---------------------------------------------------------------- incumbents
    def add_candidate(self, alloc: Array | None, source: str) -> float:
        """Keep a feasible allocation as a candidate answer; returns its fitness (-inf if infeasible)."""
        if alloc is None or self.ev.violation(alloc) != 0:
            return -np.inf
        fit = float(self.ev.fitness(alloc))
        improves = fit > self.best()[2]
        self.candidates.append((np.asarray(alloc, dtype=np.int64), source, fit))
        if improves:
            self.record()
        return fit

    def best(self) -> tuple[Array | None, str | None, float]:
        """``(alloc, source, fitness)`` of the best candidate, or ``(None, None, -inf)``."""
        if not self.candidates:
            return None, None, -np.inf
        return max(self.candidates, key=lambda c: c[2])

    # ---------------------------------------------------------------- objective
    def scale_objective(self, reference: float | None = None) -> ScaledObjective | None:
        """(Re-)scale the finite-p objective to ``reference`` (default: the best incumbent), pruning by it."""
        if not np.isfinite(self.pr.p):
            return None
        best = self.best()[2]
        inc = best if np.isfinite(best) and best > 0 else None
        r = reference if reference is not None else reference_fitness(self.pr, self.cs, inc)
        self.objective = scaled_objective(self.pr, self.cs, r, inc)
        self.info["objective_scale"] = {"reference": r, "pruned_configs": int(self.objective.forbidden.sum()),
                                        "must_run_jobs": int(self.objective.must_run.sum())}
        return self.objective

    def to_fitness(self, value: float) -> float:
        return objective_to_fitness(self.pr, value, None if self.objective is None else self.objective.reference)

    def model_bound(self, bound: float, *, floor_checked: bool = True) -> float:
        """A solver's dual bound made valid: loosened by the gaps the solver was allowed to stop at.

        HiGHS closes nodes whose bound lies within ``mip_abs_gap`` or
        ``mip_rel_gap`` of the incumbent and then reports the incumbent's value
        as its bound, so the reported bound alone can lie below the optimum by
        up to those gaps (seen at p = -inf: 0.1 reported, 0.10000012 reachable).
        ``floor_checked=False``: an epigraph model (p = +-inf) whose optimum no
        floor re-solve checks (the piecewise-linear model's) is loosened by the
        pruning tolerance too (:attr:`solver_feasibility`).
        """
        prune = self.pruning_tolerance if floor_checked else self.solver_feasibility
        return bound + self.gaps["mip_abs_gap"] + self.gaps["mip_rel_gap"] * abs(bound) + prune

    @property
    def solver_feasibility(self) -> float:
        """How far below the optimum HiGHS may close nodes besides the gaps: its MIP feasibility tolerance.

        HiGHS prunes a node whose bound comes within that (absolute) tolerance
        of the incumbent, so its final bound can lie below the optimum by it
        even with both gaps at 0 (p = -50, eps = 0.01: bound 0.05999959, an
        allocation worth 0.06 - 1.4e-12 in the same units; p = -inf, the
        piecewise-linear model: optimum and bound 0.1, an allocation worth
        0.10000012; 1e-6 by default). Another solver is given goodopt's tolerance for the model
        (:func:`other_solver_feasibility`) as its own feasibility and integrality tolerance, and its bound is
        loosened by it alike: whether it prunes so or not, the bound stays valid.
        """
        if self.opts.solver != "highs":
            return other_solver_feasibility(self.pr)
        return float(self.opts.highs_options.get("mip_feasibility_tolerance", HIGHS_MIP_FEASIBILITY))

    @property
    def pruning_tolerance(self) -> float:
        """:attr:`solver_feasibility` for models with finite p; 0 for epigraph models (p = +-inf), whose optimum
        is proven by the floor re-solve of :func:`~goodopt.solvers.milp.certify.certify_epigraph` (an
        infeasibility, not a pruned node), and whose objective is the fitness itself, which may be far below 1.
        """
        return self.solver_feasibility if np.isfinite(self.pr.p) else 0.0

    def tighten(self, out: MilpOutcome | None) -> None:
        """Take a solved model's bound (valid for the placement problem) into the best bound.

        A model built after configurations were dropped bounds only the allocations without them; those
        with them are bounded by :attr:`dropped_bound`.
        """
        if out is not None and out.termination not in (Termination.ERROR, Termination.NUMERICAL) \
                and np.isfinite(out.bound):
            self.tighten_fitness(self.to_fitness(self.model_bound(out.bound)))

    def tighten_fitness(self, bound: float) -> None:
        """Take a bound already in fitness (valid for the placement problem) into the best bound."""
        if np.isfinite(bound) and max(bound, self.dropped_bound) < self.fit_bound:
            self.fit_bound = max(bound, self.dropped_bound)
            self.record()

    def record(self) -> None:
        """A trace point (:attr:`goodopt.solvers.result.SolverStats.trace`): the best placed candidate's fitness and the best bound."""
        best, bound = self.best()[2], self.fit_bound
        record_point(best if np.isfinite(best) else np.nan, bound if np.isfinite(bound) else np.nan)

    # ---------------------------------------------------------------- solver arguments
    def solve_kwargs(self, *, check: bool = False) -> Record:
        """Arguments of a model's ``solve``: the time left (capped for placement checks) and the gaps."""
        o = self.opts
        kw: dict[str, Any] = dict(time_limit_s=remaining(self.deadline), node_limit=getattr(o, "node_limit", None))
        if check:
            kw["time_limit_s"] = min(kw["time_limit_s"] or np.inf, getattr(o, "placement_check_s", np.inf))
        kw.update(self.gaps)
        return kw

    @property
    def gaps(self) -> dict[str, float]:
        """The gaps the solver may stop at: a tenth of the fitness gap asked for, in the model's units.

        Finite p: an absolute model gap ``d`` moves ``log F`` by about ``d / W``
        (see :mod:`goodopt.formulations.scaled_objective`); p = ±inf: the model value
        is the fitness.
        """
        return model_gaps(self.opts.mip_rel_gap, None if self.objective is None else self.objective.weight_sum)

    def stage(self, name: str, out: MilpOutcome | Callable[[], MilpOutcome],
              objective: ScaledObjective | None = None) -> MilpOutcome:
        """Record a stage's outcome; ``out`` may be a function that solves it, called after saying so.
        ``objective``: the units of a model scaled apart from the run's."""
        if callable(out):
            report("stage %s: solving ...", name)
            out = out()
        rec = stage_record(name, out, objective or self.objective)
        self.info["stages"].append(rec)
        report("stage %s: %s, incumbent %.6g, bound %.6g (%.2f s)", name, rec["status"], rec["fitness"],
               rec["fitness_bound"], rec["solve_s"])
        return out

    def expired(self) -> bool:
        return expired(self.deadline)

    @contextlib.contextmanager
    def leaving_time_for_a_start(self) -> Iterator[None]:
        """Within the block, a deadline :data:`START_SHARE` of the way to the run's own, when the run has a time
        limit and no candidate yet: what is left is kept for greedy's start (see :func:`goodopt.solvers.milp.method.solve_milp`)."""
        whole = self.deadline
        if whole is not None and not self.candidates:
            now = time.perf_counter()
            self.deadline = now + START_SHARE * max(whole - now, 0.0)
        try:
            yield
        finally:
            self.deadline = whole


def model_gaps(mip_rel_gap: float, weight_sum: float | None) -> dict[str, float]:
    """The gaps a model's solver may stop at for a fitness gap ``mip_rel_gap`` (:attr:`MilpRun.gaps`): absolute,
    in model units, for a scaled objective of weights ``weight_sum`` (finite p); relative for p = +-inf (None)."""
    target = 0.1 * max(mip_rel_gap, CERTIFIED_GAP * 1e-2)
    if weight_sum is not None:
        return {"mip_rel_gap": 0.0, "mip_abs_gap": target * weight_sum}
    return {"mip_rel_gap": target, "mip_abs_gap": 0.0}


def stage_record(name: str, out: MilpOutcome, objective: ScaledObjective | None = None) -> Record:
    """One stage's record; ``fitness``/``fitness_bound`` read the model's values as fitness."""
    conv: Callable[[float], float] = objective.fitness if objective is not None else (lambda v: v)
    return {"model": name, "status": str(out.termination), "raw_status": out.raw_status,
            "objective": out.objective, "bound": out.bound,
            "fitness": conv(out.objective) if np.isfinite(out.objective) else float("nan"),
            "fitness_bound": conv(out.bound) if np.isfinite(out.bound) else float("nan"),
            "mip_gap": out.mip_gap, "nodes": out.nodes, "solver": out.solver, "lp_iterations": out.lp_iterations,
            "solve_s": out.solve_s, "compile_s": out.compile_s, "n_variables": out.n_variables,
            "n_constraints": out.n_constraints}


def stand_in(termination: Termination, raw: str) -> MilpOutcome:
    """An outcome for a stage where no model was solved."""
    return MilpOutcome.without_solve(termination, raw)


def as_time_limit(out: MilpOutcome | None) -> MilpOutcome:
    """``out`` with the time-limit status; a stand-in outcome when no model was solved yet."""
    if out is None:
        return stand_in(Termination.TIME_LIMIT, "time limit reached before solving")
    return replace(out, termination=Termination.TIME_LIMIT)


def reaches_bound(run: MilpRun) -> bool:
    """Whether the best candidate is within the gap the MILP would stop at of the best bound."""
    fit, bound = run.best()[2], run.fit_bound
    tolerance = max(run.opts.mip_rel_gap, CERTIFIED_GAP) * abs(bound)
    return bool(np.isfinite(fit) and np.isfinite(bound) and bound - fit <= tolerance)


def dive_probe(opts: MilpOptions) -> str | None:
    """The solver that first solves the reduced-cost dive's core in a few nodes, or None: ``dive_probe``'s choice;
    ``auto`` is SCIP when the chosen solver is HiGHS and SCIP is installed (see
    :data:`goodopt.solvers.milp.dive.PROBE_NODE_LIMIT`)."""
    from ..mip_solvers import missing

    probe = opts.dive_probe
    if probe == "auto":
        probe = "scip" if opts.solver == "highs" and missing("scip") is None else "none"
    return None if probe in ("none", opts.solver) else probe
