"""The ``milp`` and ``milp-pwl`` methods, as named stages over one :class:`MilpRun`.

``milp`` (``formulation="auto"``, the default):

1. *start*: configurations, a greedy incumbent (and the user's warm start),
   the objective scaled to the incumbent with options pruned against it
   (:mod:`goodopt.formulations.objective`);
2. *configuration level* (aggregate capacity per GPU type, a valid
   relaxation), as arrays into HiGHS or through pyomo, re-scaled until the
   solver's answer is resolved (:func:`_solve_config_model`);
3. *placement*: the optimum's configurations are placed, by the packing
   heuristic and, per GPU type it cannot pack, by the exact node-pattern
   check (:func:`_place_choice`); a type proven unplaceable gets node-pattern
   rows in the configuration level, which is solved again
   (:func:`_placement_rows_loop`; no-good cuts where patterns do not apply);
4. *placement level* (job x node model) only when that did not settle it;
5. *judge*: the status comes from the evaluator's re-score and the loosened
   bound (:func:`judge`), never from the solver alone.

``formulation="placement"`` solves the placement-level model directly;
``formulation="config"`` stops after the relaxation and its (repaired)
placement, reporting the gap to its bound.

``milp-pwl`` solves the piecewise-linear model of
:mod:`goodopt.formulations.pwl` on the same scaled terms, places and repairs
its configurations, and re-scores the allocation with the evaluator. Its
bound adds the total interpolation error to the model's bound, so it is valid
for the true problem; it never certifies.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from goodopt.formulations import node_patterns
from goodopt.formulations.configs import enumerate_configs, fitness_from_sum
from goodopt.formulations.objective import fitness_of_value, reference_fitness, scaled_objective
from goodopt.formulations.placement import place_configs
from goodopt.progress import record_point, report

from .backend import MilpOutcome, solve_model
from .config_model import ArrayModel, PyomoModel
from .heuristics import canonicalize, greedy
from .highs_arrays import HighsSession
from .result import CERTIFIED_GAP, MethodOutcome, Termination
from .rounding import round_choice

log = logging.getLogger(__name__)


def objective_to_fitness(problem, value: float, reference: float | None = None) -> float:
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


def _remaining(deadline):
    return None if deadline is None else max(deadline - time.perf_counter(), 1e-3)


def _expired(deadline):
    return deadline is not None and time.perf_counter() >= deadline


def _config_highs_options(opts):
    """Native options for configuration-level models: presolve off unless the user says otherwise.

    Measured on the families: HiGHS's presolve made these models 10-20x slower
    (e.g. 0.38 s -> 0.02 s at 16 x 4 GPUs, 96 jobs) and never helped.
    """
    if opts["solver"] != "highs":
        return opts["highs_options"]
    return {"presolve": "off", **opts["highs_options"]}


#: Re-scalings of the objective (a new reference fitness) before a resolution problem is reported.
MAX_RESCALES = 8


class MilpRun:
    """State shared by the stages of one exact solve: data, options, clock, incumbents, bound."""

    def __init__(self, problem, evaluator, opts, t_start):
        self.pr, self.ev, self.opts = problem, evaluator, opts
        self.deadline = None if opts["time_limit_s"] is None else t_start + opts["time_limit_s"]
        t0 = time.perf_counter()
        self.cs = enumerate_configs(problem)
        self.build_s = time.perf_counter() - t0
        self.info = {"n_configs": self.cs.n_configs, "stages": []}
        self.candidates = []  # (alloc, source, fitness) of feasible allocations
        self.fit_bound = np.inf
        self.objective = None  # ScaledObjective for finite p
        self.last_model = None  # the configuration or placement model solved last (write_model)

    # ---------------------------------------------------------------- incumbents
    def add_candidate(self, alloc, source):
        """Keep a feasible allocation as a candidate answer; returns its fitness (-inf if infeasible)."""
        if alloc is None or self.ev.violation(alloc) != 0:
            return -np.inf
        fit = float(self.ev.fitness(alloc))
        self.candidates.append((np.asarray(alloc, dtype=np.int64), source, fit))
        return fit

    def best(self):
        """``(alloc, source, fitness)`` of the best candidate, or ``(None, None, -inf)``."""
        if not self.candidates:
            return None, None, -np.inf
        return max(self.candidates, key=lambda c: c[2])

    # ---------------------------------------------------------------- objective
    def scale_objective(self, reference=None):
        """(Re-)scale the finite-p objective to ``reference`` (default: the best incumbent), pruning by it."""
        if not np.isfinite(self.pr.p):
            return None
        inc = self.best()[2]
        inc = inc if np.isfinite(inc) and inc > 0 else None
        r = reference if reference is not None else reference_fitness(self.pr, self.cs, inc)
        self.objective = scaled_objective(self.pr, self.cs, r, inc)
        self.info["objective_scale"] = {"reference": r, "pruned_configs": int(self.objective.forbidden.sum()),
                                        "must_run_jobs": int(self.objective.must_run.sum())}
        return self.objective

    def to_fitness(self, value):
        return objective_to_fitness(self.pr, value, None if self.objective is None else self.objective.reference)

    def model_bound(self, bound):
        """A solver's dual bound made valid: loosened by the gaps the solver was allowed to stop at.

        HiGHS closes nodes whose bound lies within ``mip_abs_gap`` or
        ``mip_rel_gap`` of the incumbent and then reports the incumbent's value
        as its bound, so the reported bound alone can lie below the optimum by
        up to those gaps (seen at p = -inf: 0.1 reported, 0.10000012 reachable).
        """
        return bound + self.gaps["mip_abs_gap"] + self.gaps["mip_rel_gap"] * abs(bound)

    def tighten(self, out):
        """Take a solved model's bound (valid for the placement problem) into the best bound."""
        if out is not None and out.termination not in (Termination.ERROR, Termination.NUMERICAL) \
                and np.isfinite(out.bound):
            f = self.to_fitness(self.model_bound(out.bound))
            if np.isfinite(f):
                self.fit_bound = min(self.fit_bound, f)

    # ---------------------------------------------------------------- solver arguments
    def solve_kwargs(self, *, check=False):
        """Arguments of a model's ``solve``: the time left (capped for placement checks) and the gaps."""
        o = self.opts
        kw = dict(time_limit_s=_remaining(self.deadline), node_limit=o.get("node_limit"))
        if check:
            kw["time_limit_s"] = min(kw["time_limit_s"] or np.inf, o["placement_check_s"])
        kw.update(self.gaps)
        return kw

    @property
    def gaps(self):
        """The gaps the solver may stop at: a tenth of the fitness gap asked for, in the model's units.

        Finite p: an absolute model gap ``d`` moves ``log F`` by about ``d / W``
        (see :mod:`goodopt.formulations.objective`); p = ±inf: the model value
        is the fitness.
        """
        target = 0.1 * max(self.opts["mip_rel_gap"], CERTIFIED_GAP * 1e-2)
        if self.objective is not None:
            return {"mip_rel_gap": 0.0, "mip_abs_gap": target * self.objective.weight_sum}
        return {"mip_rel_gap": target, "mip_abs_gap": 0.0}

    def stage(self, name, out):
        """Record a stage's outcome; ``out`` may be a function that solves it, called after saying so."""
        if callable(out):
            report("stage %s: solving ...", name)
            out = out()
        rec = _stage(name, out, self.objective)
        self.info["stages"].append(rec)
        if not name.startswith("placement-check"):  # those are sub-problems of one GPU type
            record_point(rec["fitness"], rec["fitness_bound"])
        report("stage %s: %s, incumbent %.6g, bound %.6g (%.2f s)", name, rec["status"], rec["fitness"],
               rec["fitness_bound"], rec["solve_s"])
        return out

    def expired(self):
        return _expired(self.deadline)


#: HiGHS's MIP feasibility tolerance for epigraph (p = +-inf) models, unless the user sets one.
EPIGRAPH_MIP_FEASIBILITY = 1e-9


def _epigraph_tolerance(problem, opts):
    """Options with a tight MIP feasibility tolerance for epigraph models.

    At the default 1e-6, HiGHS 1.16 let the epigraph variable exceed the
    smallest speedup by 1e-6 (tiny_problem seed 259, p = -inf: t = 0.9107305
    for a re-scored 0.9107295), so the certified bound sat 1.2e-6 above an
    optimum that brute force confirms, and the answer was judged
    ``numerical``. At 1e-9 the same model is certified.
    """
    if opts["solver"] != "highs" or np.isfinite(problem.p) or "mip_feasibility_tolerance" in opts["highs_options"]:
        return opts
    return opts.replace(highs_options={"mip_feasibility_tolerance": EPIGRAPH_MIP_FEASIBILITY,
                                       **opts["highs_options"]})


def solve_milp(problem, evaluator, opts, t_start) -> MethodOutcome:
    """Run the exact method; a ``numerical`` verdict gets a second opinion with HiGHS's presolve on.

    HiGHS 1.15 with presolve off (this method's default for configuration
    models) returned a max-min optimum below a known allocation and then
    called a floor under that allocation infeasible (hetero-tiny seed 319,
    p = -inf); with presolve on it solved the same model correctly. The
    second run is judged like the first, and its answer is kept only if it
    is not ``numerical`` itself.
    """
    opts = _epigraph_tolerance(problem, opts)
    out = _solve_milp(problem, evaluator, opts, t_start)
    if (out.status == Termination.NUMERICAL and opts["solver"] == "highs"
            and "presolve" not in opts["highs_options"] and not _expired_from(opts, t_start)):
        log.warning("milp: %s; solving again with HiGHS's presolve on", out.message)
        again = _solve_milp(problem, evaluator,
                            opts.replace(highs_options={**opts["highs_options"], "presolve": "on"}), t_start)
        if again.status != Termination.NUMERICAL:
            again.extra["second_opinion"] = f"first run: {out.message}"
            return again
    return out


def _expired_from(opts, t_start):
    return _expired(None if opts["time_limit_s"] is None else t_start + opts["time_limit_s"])


def _solve_milp(problem, evaluator, opts, t_start) -> MethodOutcome:
    run = MilpRun(problem, evaluator, opts, t_start)
    if opts.get("warm_start") is not None:
        run.add_candidate(canonicalize(problem, run.cs, opts["warm_start"])[0], "user")
    reference = _safe_reference(run) if _lp_first(run) else None
    if reference is not None:  # greedy (1-2 s at 2048 GPUs) only when the LP certificate does not conclude
        run.scale_objective(reference)
        certified = _lp_certificate(run, _config_model(run, placement=range(problem.n_gpu_types)),
                                    "config + pattern rows (every type)")
        if certified is not None:
            return _finish(run, certified[1], certified[0])
    run.add_candidate(greedy(problem, run.cs)[0], "greedy")
    run.scale_objective()
    if _nothing_left(run):
        return _nothing_to_choose(run)
    if opts["formulation"] in ("auto", "config"):
        fields = _config_level(run)
        if fields is not None:
            return fields
    return _placement_level(run)


def _safe_reference(run) -> float | None:
    """The objective's reference before greedy's start (the user's start, else every job at its best: an upper
    bound for p <= 0), or None when it is not a finite positive fitness (an idle value of 0, say)."""
    with np.errstate(all="ignore"):
        r = reference_fitness(run.pr, run.cs, run.best()[2] if run.candidates else None)
    return float(r) if np.isfinite(r) and r > 0 else None


def _nothing_left(run) -> bool:
    """No configuration at all, or every one pruned as worse than the incumbent (finite p)."""
    ob = run.objective
    return run.cs.n_configs == 0 or (ob is not None and bool(ob.forbidden.all()) and not ob.must_run.any())


def _nothing_to_choose(run):
    """Nothing to choose: the empty allocation is the only one, or the incumbent is proven optimal.

    With no configuration the empty allocation is the only allocation; when
    every configuration was pruned, none belongs to an allocation better than
    the incumbent (each one's term alone exceeds its whole objective).
    """
    if run.cs.n_configs == 0:
        alloc = np.zeros((run.pr.n_jobs, run.pr.n_nodes), np.int64)
        run.info["proof"] = "no job has a feasible configuration; the empty allocation is the only allocation"
    else:
        alloc = run.best()[0]
        run.info["proof"] = "every configuration is worse on its own than the incumbent's whole objective"
    run.fit_bound = float(run.ev.fitness(alloc))
    return _finish(run, alloc, _stand_in(Termination.OPTIMAL, "nothing to choose"))


def _config_level(run):
    """Configuration relaxation, re-scaled until resolved, then placed; None to go on to the placement level."""
    pr, cs, opts, info = run.pr, run.cs, run.opts, run.info
    model, out = _solve_config_model(run)
    if out.termination == Termination.INFEASIBLE:
        return _finish(run, None, out)
    loop = (_placement_rows_loop if _pattern_rows_apply(run)
            else _placement_cut_loop if opts["placement_cuts"] > 0 else None)
    if opts["formulation"] == "auto" and loop is not None:
        result = loop(run, model, out)
        if result is not None:
            out, placed = result
            if placed is not None:
                run.tighten(out)
                return _finish(run, placed, out)
    run.tighten(out)
    if out.has_solution:
        chosen = model.chosen()
        alloc, failed = place_configs(pr, cs, chosen)
        info["placement_failed_jobs"] = [pr.job_names[j] for j in failed]
        if not failed and out.termination == Termination.OPTIMAL:
            info["proof"] = "configuration relaxation optimum placed exactly"
            return _finish(run, alloc, out)
        if failed and out.termination == Termination.OPTIMAL and opts["formulation"] == "auto" and not run.expired():
            placed = _place_choice(run, chosen)[0]
            if placed is not None:
                info["proof"] = "configuration relaxation optimum placed by an exact placement check"
                return _finish(run, placed, out)
        run.add_candidate(greedy(pr, cs, start=alloc)[0], "relaxation+repair")
    pairs = _placement_pairs(pr, cs) if opts["formulation"] == "auto" else 0
    too_big = pairs > opts["max_placement_pairs"]
    if opts["formulation"] == "config" or run.expired() or too_big:
        if too_big:
            info["skipped"] = f"placement-level model skipped: {pairs} job-node pairs > max_placement_pairs"
        alloc, source, _ = run.best()
        info["incumbent"] = source
        if run.expired() and opts["formulation"] != "config":
            out = _as_time_limit(out)
        return _finish(run, alloc, out, proven=False)
    return None


#: Job-node pairs from which ``lp_rounding: auto`` starts with the LP relaxation under every type's node-pattern
#: rows (on the shipped families from cluster-256 on its rounding is the certified optimum).
LP_FIRST_FROM_PAIRS = 2_000


def _lp_first(run) -> bool:
    """Whether the exact method starts with the LP certificate under every type's pattern rows."""
    o, pr = run.opts, run.pr
    lp = o.get("lp_rounding", "auto")
    if lp is False or o["formulation"] != "auto" or not _pattern_rows_apply(run) or not np.isfinite(pr.p) \
            or run.cs.n_configs == 0:
        return False
    return lp is True or pr.n_jobs * pr.n_nodes >= LP_FIRST_FROM_PAIRS


def _config_model(run, placement=()):
    """The configuration level on the chosen route (arrays into HiGHS, or pyomo).

    ``placement``: GPU types whose node-pattern rows are added (array route).
    """
    o = run.opts
    if _route(o) == "arrays":
        model = ArrayModel(run.pr, run.cs, run.objective, threads=o["threads"], highs_options=_config_highs_options(o),
                           placement=placement)
        run.info["pattern_types"] = [run.pr.type_names[g] for g in model.mm.pattern_types]
    else:
        model = PyomoModel(run.pr, run.cs, run.objective, level="config", solver=o["solver"], threads=o["threads"],
                           highs_options=_config_highs_options(o))
    run.build_s += model.build_s
    run.last_model = model
    return model


def _route(opts):
    route = opts.get("model_route", "auto")
    return ("arrays" if opts["solver"] == "highs" else "pyomo") if route == "auto" else route


def _solve_config_model(run):
    """The configuration MILP, warm from the best candidate; re-scaled while its answer is not resolved.

    With ``lp_rounding`` the LP relaxation is solved first and rounded into
    a candidate (and its bound kept); otherwise the MILP's own root is the
    only LP solved.
    """
    pr, cs = run.pr, run.cs
    out = model = None
    for attempt in range(MAX_RESCALES + 1):
        model = _config_model(run)
        kw = run.solve_kwargs()
        if run.opts.get("lp_rounding") is True and attempt == 0 and (_route(run.opts) == "arrays" or run.opts["solver"] == "highs"):
            lp = run.stage("config-lp", lambda: model.solve(relax=True, **kw))
            if lp.termination == Termination.OPTIMAL:
                run.tighten(lp)  # the LP relaxation bounds the configuration level, hence the problem
            if lp.has_solution:
                run.add_candidate(round_choice(pr, cs, model.chosen()), "lp-rounding")
        kw["time_limit_s"] = _remaining(run.deadline)
        out = run.stage("config" if attempt == 0 else f"config rescaled x{attempt}",
                        lambda: model.solve(warm_start=run.best()[0], **kw))
        if run.pr.p in (np.inf, -np.inf) and out.termination == Termination.OPTIMAL:
            out = _certify_epigraph(run, model, out)
        reference = _unresolved(run, out)
        if reference is None or run.expired() or attempt == MAX_RESCALES:
            break
        run.add_candidate(place_configs(pr, cs, model.chosen())[0], "rescaling")
        run.scale_objective(reference)
    run.info["rescales"] = attempt
    return model, out


def _unresolved(run, out):
    """A better reference fitness when the solver stopped "optimal" but the fitness gap is not closed.

    The model's units resolve fitness differences near the reference; a
    solution far from it (e.g. a first reference from a poor greedy at p << 0)
    leaves its neighbours indistinguishable. Returns None when resolved.
    """
    ob = run.objective
    if ob is None or not out.has_solution or out.termination not in (Termination.OPTIMAL, Termination.GAP_LIMIT):
        return None
    f_obj, f_bound = ob.fitness(out.objective), ob.fitness(run.model_bound(out.bound))
    if not (np.isfinite(f_obj) and f_obj > 0):
        return None
    if np.isfinite(f_bound) and f_bound - f_obj <= 0.5 * max(run.opts["mip_rel_gap"], CERTIFIED_GAP) * f_bound:
        return None
    if abs(np.log(f_obj / ob.reference)) < 1e-12:
        return None  # already at the solution's own scale: the gap is the solver's
    return max(f_obj, run.best()[2]) if ob.p < 0 else f_obj


def _placement_model(run, fixed_choice=None):
    o = run.opts
    model = PyomoModel(run.pr, run.cs, run.objective, level="placement", symmetry=o["symmetry"],
                       fixed_choice=fixed_choice, solver=o["solver"], threads=o["threads"],
                       highs_options=o["highs_options"])
    run.build_s += model.build_s
    run.last_model = model
    return model


def _placement_level(run):
    """The placement-level MILP, warm-started from the best candidate."""
    info = run.info
    start_alloc, source, start_fit = run.best()
    model = _placement_model(run)
    info["warm_start"] = source
    if run.expired():
        info["stages"].append({"model": "placement", "status": "skipped: time limit reached before solving",
                               "compile_s": 0.0, "solve_s": 0.0, "nodes": None})
        return _finish(run, start_alloc, _as_time_limit(None), proven=False)
    pout = run.stage("placement", lambda: model.solve(warm_start=start_alloc, **run.solve_kwargs()))
    if run.pr.p in (np.inf, -np.inf) and pout.termination == Termination.OPTIMAL:
        pout = _certify_epigraph(run, model, pout)
    run.tighten(pout)
    if pout.has_solution:
        alloc = model.allocation()
        if run.add_candidate(alloc, "placement") >= start_fit:
            return _finish(run, alloc, pout)
    # the solver returned nothing better: report the best candidate with the solver's status
    return _finish(run, start_alloc, pout)


def _certify_epigraph(run, model, out, max_rounds: int = 5):
    """Re-check an "optimal" epigraph (p = +-inf) solution by asking for a strictly better one.

    HiGHS 1.15 returned a sub-optimal point as optimal (bound = incumbent) on
    small two-type max-min models, with and without a warm start (e.g. 1.0359
    against the brute-force 1.0409; regression examples in
    ``tests/test_solvers.py``). Each round raises the lower bound of ``t`` just
    above the claimed optimum and solves again without a warm start: an
    infeasible answer confirms the claim (to the certification gap), a
    solution replaces it.
    """
    for _ in range(max_rounds):
        if run.expired():
            return _as_time_limit(out)
        claimed = model.epigraph_value()
        snap = model.snapshot()
        # ask for a solution better by more than the certification gap (solver tolerances are ~1e-7)
        model.set_floor(claimed + max(CERTIFIED_GAP * abs(claimed), 1e-9))
        # warm from the best known allocation: if it beats the claim, the solver cannot call the floor
        # infeasible (HiGHS 1.15 did so on a two-type max-min model, seed 319 of hetero-tiny)
        best_alloc, _, best_fit = run.best()
        start = best_alloc if best_fit > claimed * (1 + 1e-9) else None
        chk = run.stage("epigraph-certify", lambda: model.solve(warm_start=start, **run.solve_kwargs()))
        model.set_floor(None)
        if chk.has_solution and model.epigraph_value() > claimed * (1 + 1e-9) + 1e-12:
            log.warning("the MILP solver's optimum %.9g was improved to %.9g by re-solving",
                        claimed, model.epigraph_value())
            run.info["certify_improved"] = run.info.get("certify_improved", 0) + 1
            out = replace(chk, objective=model.epigraph_value())
            continue
        model.restore(snap)
        if chk.termination == Termination.INFEASIBLE or chk.has_solution:
            return out  # no solution better by more than the gap (beyond solver tolerances)
        return replace(out, termination=Termination.TIME_LIMIT if chk.termination == Termination.TIME_LIMIT
                       else Termination.GAP_LIMIT)
    return out


def _place_choice(run, chosen):
    """Place a choice of configurations exactly, type by type.

    The heuristic packer first; each GPU type it could not pack is decided by
    the node-pattern model (:mod:`goodopt.formulations.node_patterns`), or by
    the job x node model where patterns do not apply. Returns ``(alloc,
    unplaceable, undecided)``: the allocation when every type placed (types
    share no nodes, so their rows combine), the configuration sets proven
    unplaceable, and whether some type stayed undecided (time limit).
    """
    pr, cs = run.pr, run.cs
    alloc, failed = place_configs(pr, cs, chosen)
    if not failed:
        return alloc, [], False
    bad_types = sorted({int(cs.gpu_type[chosen[j]]) for j in failed if chosen[j] >= 0})
    unplaceable, undecided = [], False
    for g in bad_types:
        of_type = (chosen >= 0) & (cs.gpu_type[np.maximum(chosen, 0)] == g)
        sub = np.where(of_type, chosen, -1)
        rows, verdict = _place_type(run, sub, g)
        if verdict == "infeasible":
            unplaceable.append(sub[sub >= 0])
        elif verdict == "undecided":
            undecided = True
        else:
            alloc[of_type] = rows[of_type]
    if unplaceable or undecided or run.ev.violation(alloc) != 0:
        return None, unplaceable, undecided
    return alloc, [], False


def _place_type(run, sub, g):
    """Rows (J, N) placing ``sub``'s configurations of type ``g``, and ``"placed"``, ``"infeasible"`` or ``"undecided"``."""
    pr = run.pr
    name = f"placement-check type {pr.type_names[g]}"
    pm = node_patterns.pattern_model(pr, run.cs, sub, g)
    if pm == "infeasible":
        return None, "infeasible"
    if pm is not None:
        session = HighsSession(pm.matrix, threads=run.opts["threads"])
        kw = run.solve_kwargs(check=True)
        out, x = session.solve(time_limit_s=kw["time_limit_s"], node_limit=kw["node_limit"])
        run.stage(f"{name} (node patterns)", replace(out, compile_s=out.compile_s + session.setup_s))
        if out.termination == Termination.INFEASIBLE:
            return None, "infeasible"
        if x is None:
            return None, "undecided"
        return node_patterns.decode_patterns(pm, x), "placed"
    check = _placement_model(run, fixed_choice=sub)
    chk = run.stage(name, lambda: check.solve(**run.solve_kwargs(check=True)))
    if chk.termination == Termination.INFEASIBLE:
        return None, "infeasible"
    if not chk.has_solution:
        return None, "undecided"
    return check.allocation(), "placed"


def _pattern_rows_apply(run):
    o = run.opts
    return (o.get("config_placement", "patterns") == "patterns" and _route(o) == "arrays"
            and run.pr.interference_avoidance)


def _placement_rows_loop(run, model, out):
    """Add node-pattern rows for every GPU type whose optimum did not place, and re-solve.

    The configuration level is first solved with aggregate capacity rows only
    (fast, and usually placeable). A type proven unplaceable gets the exact
    placement rows of :func:`goodopt.formulations.node_patterns.pattern_block`,
    after which no choice on it is unplaceable: at most one re-solve per type,
    where no-good cuts found neighbouring unplaceable optima one at a time.
    Returns ``(outcome, allocation)``, ``(outcome, None)`` when undecided, or None.
    """
    pr, info = run.pr, run.info
    with_rows: set[int] = set()
    for _ in range(pr.n_gpu_types + 1):
        if out.termination != Termination.OPTIMAL or not out.has_solution or run.expired():
            return out, None
        chosen = model.chosen()
        placed, unplaceable, undecided = _place_choice(run, chosen)
        if placed is not None:
            info["proof"] = (f"configuration optimum placed exactly (node-pattern rows on "
                             f"{sorted(pr.type_names[g] for g in with_rows) or 'no type'})")
            return out, placed
        bad = {int(run.cs.gpu_type[sub[0]]) for sub in unplaceable if len(sub)}
        if undecided or not bad or bad <= with_rows:
            return out, None
        with_rows |= bad
        start = run.best()[0]
        model = _config_model(run, placement=sorted(with_rows))
        missing = set(with_rows) - set(model.mm.pattern_types)
        if missing:  # too many patterns for a type: fall back to no-good cuts there
            info["pattern_rows_skipped"] = sorted(pr.type_names[g] for g in missing)
            return _placement_cut_loop(run, model, model.solve(warm_start=start, **run.solve_kwargs()))
        others = (chosen >= 0) & ~np.isin(run.cs.gpu_type[np.maximum(chosen, 0)], sorted(bad))
        if run.objective is not None and others.any():  # finite p, and some job stays fixed on another type
            repaired = _repair_on_types(run, model, out, chosen, bad)
            if repaired is not None:
                return repaired
            start = run.best()[0]
        names = ", ".join(pr.type_names[g] for g in sorted(with_rows))
        certified = _lp_certificate(run, model, f"config + pattern rows ({names})")
        if certified is not None:
            return certified
        start = run.best()[0]
        out = run.stage(f"config + pattern rows ({names})", lambda: model.solve(warm_start=start, **run.solve_kwargs()))
        if pr.p in (np.inf, -np.inf) and out.termination == Termination.OPTIMAL:
            out = _certify_epigraph(run, model, out)
    return out, None


def _placement_cut_loop(run, model, out):
    """Re-solve the configuration level with placement cuts (C1) until its optimum places.

    Returns ``(outcome, allocation)`` with the certified allocation, ``(outcome, None)``
    when the loop stopped without one (the caller continues with the last
    outcome), or ``None`` when nothing was tried.
    """
    pr, info = run.pr, run.info
    n_cuts = 0
    for _ in range(int(run.opts["placement_cuts"])):
        if out.termination != Termination.OPTIMAL or not out.has_solution or run.expired():
            break
        chosen = model.chosen()
        placed, unplaceable, undecided = _place_choice(run, chosen)
        info["placement_cuts"] = n_cuts
        if placed is not None:
            info["proof"] = f"configuration optimum placed exactly after {n_cuts} placement cut(s)"
            return out, placed
        if undecided or not unplaceable:
            return out, None  # undecided (time limit): leave it to the placement level
        for sub in unplaceable:
            model.exclude(sub)
            n_cuts += 1
        heuristic = place_configs(pr, run.cs, chosen)[0]
        start = heuristic if run.ev.violation(heuristic) == 0 else None
        out = run.stage(f"config + {n_cuts} cut(s)", lambda: model.solve(warm_start=start, **run.solve_kwargs()))
        if pr.p in (np.inf, -np.inf) and out.termination == Termination.OPTIMAL:
            out = _certify_epigraph(run, model, out)
    info["placement_cuts"] = n_cuts
    return out, None


def _lp_certificate(run, model, name):
    """Solve ``model``'s LP relaxation, place its (rounded) choice exactly, or else round it into an allocation
    (:func:`round_choice`), and keep that as a candidate. The LP bounds the model, hence the problem: when the
    best candidate reaches that bound within the gap the MILP would stop at, it is certified without the MILP.
    Returns ``(outcome, allocation)`` then, else None (the bound is kept either way)."""
    kw = run.solve_kwargs()
    lp = run.stage(f"{name}, LP relaxation", lambda: model.solve(relax=True, **kw))
    if lp.termination != Termination.OPTIMAL or not lp.has_solution:
        return None
    run.tighten(lp)
    chosen = model.chosen()
    placed = _place_choice(run, chosen)[0]  # an integral LP optimum places exactly under its pattern rows
    run.add_candidate(placed if placed is not None else round_choice(run.pr, run.cs, chosen), "lp-rounding")
    alloc, _, fit = run.best()
    bound = run.fit_bound
    tolerance = max(run.opts["mip_rel_gap"], CERTIFIED_GAP) * abs(bound)
    if not (np.isfinite(fit) and np.isfinite(bound)) or bound - fit > tolerance:
        return None
    run.info["proof"] = f"a rounding of the LP relaxation of the {name} model reaches its bound"
    return replace(lp, objective=lp.bound), alloc


def _repair_on_types(run, model, first, chosen, types):
    """Re-choose only the jobs on the unplaced GPU ``types`` under their node-pattern rows, every other job
    fixed to ``first``'s choice (presolve stays off, as for every configuration model: with it on, mixed-2048
    under Sia's objective took 26 s here instead of 1.3 s).

    ``first`` solved a relaxation of this model, so its bound holds here: when the repaired choice reaches it
    (within the solver's gap), it is optimal and places by construction, and the full re-solve is skipped.
    Returns ``(outcome, allocation)`` then, else None (a placed repair stays as a candidate, the full re-solve's
    warm start). Finite p only.
    """
    names = ", ".join(run.pr.type_names[g] for g in sorted(types))
    model.fix_outside(chosen, types)
    try:
        out = run.stage(f"pattern rows ({names}), only their jobs re-chosen",
                        lambda: model.solve(**run.solve_kwargs()))
    finally:
        model.unfix()
    if out.termination != Termination.OPTIMAL or not out.has_solution:
        return None
    placed = _place_choice(run, model.chosen())[0]
    if placed is None:
        return None
    run.add_candidate(placed, "pattern-row repair")
    if not (np.isfinite(first.bound) and out.objective >= first.bound - run.gaps["mip_abs_gap"]):
        return None
    run.info["proof"] = (f"the configuration optimum without pattern rows, its jobs on {names} re-chosen under "
                         "their node-pattern rows, reaches that optimum's bound and places")
    gap = (first.bound - out.objective) / max(abs(first.bound), 1e-300)
    return replace(out, bound=first.bound, mip_gap=max(gap, 0.0)), placed


def _placement_pairs(problem, cs):
    """Number of (job, node) placement variables of the placement-level model."""
    nodes_per_type = np.bincount(problem.node_type, minlength=problem.n_gpu_types)
    pairs = 0
    for j in range(problem.n_jobs):
        types = np.unique(cs.gpu_type[cs.job_start[j]:cs.job_start[j + 1]])
        pairs += int(nodes_per_type[types].sum())
    return pairs


def _stand_in(termination, raw):
    """An outcome for a stage where no model was solved."""
    nan = float("nan")
    return MilpOutcome(termination, False, nan, nan, float("inf"), None, 0.0, 0.0, raw, "none", "", 0, 0)


def _as_time_limit(out):
    """``out`` with the time-limit status; a stand-in outcome when no model was solved yet."""
    if out is None:
        return _stand_in(Termination.TIME_LIMIT, "time limit reached before solving")
    return replace(out, termination=Termination.TIME_LIMIT)


def _stage(name, out, objective=None):
    """One stage's record; ``fitness``/``fitness_bound`` read the model's values as fitness."""
    conv = objective.fitness if objective is not None else (lambda v: v)
    return {"model": name, "status": str(out.termination), "raw_status": out.raw_status,
            "objective": out.objective, "bound": out.bound,
            "fitness": conv(out.objective) if np.isfinite(out.objective) else float("nan"),
            "fitness_bound": conv(out.bound) if np.isfinite(out.bound) else float("nan"),
            "mip_gap": out.mip_gap, "nodes": out.nodes,
            "solve_s": out.solve_s, "compile_s": out.compile_s, "n_variables": out.n_variables,
            "n_constraints": out.n_constraints}


_SOLVER_CLAIMS = (Termination.OPTIMAL, Termination.GAP_LIMIT)


def judge(fitness, bound, claimed, proven, mip_rel_gap):
    """The status of an answer, from its re-scored fitness and bound — never from the solver's claim alone.

    ``claimed`` is the last solver status; ``proven`` whether the answer is
    the model's own optimum (else at most ``completed``). Returns
    ``(status, message or "")``: ``optimal`` when the fitness is within
    :data:`CERTIFIED_GAP` of the bound, ``gap_limit`` within ``mip_rel_gap``,
    ``numerical`` when the solver claimed either but the numbers disagree
    (including a bound below a feasible fitness).
    """
    tol = CERTIFIED_GAP * max(abs(bound), 1e-12) if np.isfinite(bound) else 0.0
    if np.isfinite(fitness) and np.isfinite(bound) and fitness > bound + tol:
        return Termination.NUMERICAL, (f"the bound {bound:.9g} lies below the re-scored fitness {fitness:.9g}: "
                                       "the solver's numbers are inconsistent")
    if claimed not in _SOLVER_CLAIMS:
        return claimed, ""
    if not proven:
        return Termination.COMPLETED, ""
    if not (np.isfinite(fitness) and np.isfinite(bound)):
        return Termination.NUMERICAL, "the solver claimed optimality but no finite fitness bound resulted"
    gap = bound - fitness
    if gap <= tol:
        return Termination.OPTIMAL, ""
    if gap <= max(mip_rel_gap, CERTIFIED_GAP) * abs(bound):
        return Termination.GAP_LIMIT, ""
    return Termination.NUMERICAL, (f"the solver claimed optimality but the re-scored fitness {fitness:.9g} is "
                                   f"{gap / abs(bound):.3g} below the bound {bound:.9g}")


def _finish(run, alloc, out, proven=True):
    """Result fields of the exact methods; the status is judged from the evaluator's fitness and the bound."""
    info = run.info
    fit_bound = run.fit_bound if np.isfinite(run.fit_bound) else float("nan")
    fitness = float(run.ev.fitness(alloc)) if alloc is not None else float("nan")
    status, why = judge(fitness, fit_bound, out.termination, proven, run.opts["mip_rel_gap"])
    if status == Termination.NUMERICAL and fitness > fit_bound:
        fit_bound = float("nan")  # provably wrong: report no bound
    stages = info["stages"]
    if run.opts.get("write_model") and run.last_model is not None:
        info["written_model"] = _write_model(run.last_model, run.opts["write_model"], stages)
    message = f"{stages[-1]['model']} model: {out.raw_status}" if stages else out.raw_status
    if why:
        message = f"{message}; {why}"
        log.warning("milp: %s", why)
    return MethodOutcome(
        alloc=alloc, status=status, bound=fit_bound, objective=out.objective, objective_bound=out.bound,
        build_s=run.build_s + sum(s.get("compile_s", 0.0) for s in stages),
        solve_s=sum(s.get("solve_s", 0.0) for s in stages),
        nodes=sum(s.get("nodes") or 0 for s in stages), solver=out.solver, solver_version=out.solver_version,
        raw_status=out.raw_status, n_variables=out.n_variables, n_constraints=out.n_constraints,
        n_configs=info["n_configs"], extra=info, message=message,
    )


def _write_model(model, path, stages) -> dict:
    """Write the model solved last to ``path`` (.mps or .lp, for any MILP solver), whole or not at all; returns
    what was written: the file, the stage that solved it and the objective value that stage found."""
    import shutil
    import tempfile

    from goodopt.outputs import atomic_path

    path = Path(path)
    # the solver names the format by the suffix: written under the real name in a private folder, then put in
    # place by goodopt's atomic write (no partial file beside the output, no temporary of another naming)
    with tempfile.TemporaryDirectory(prefix="goodopt-model-") as folder, atomic_path(path) as tmp:
        staged = Path(folder) / path.name
        if hasattr(model, "session"):
            model.session.h.writeModel(str(staged))
        else:
            model.model.write(str(staged), io_options={"symbolic_solver_labels": True})
        shutil.copyfile(staged, tmp)
    last = next((st for st in reversed(stages) if not st["model"].startswith("placement-check")), {})
    log.info("milp: wrote the %s model to %s", last.get("model", ""), path)
    return {"path": str(path), "stage": last.get("model"), "objective": last.get("objective"),
            "sense": "maximise"}


def solve_pwl(problem, evaluator, opts, t_start):
    """Run the piecewise-linear method. Returns result fields like :func:`solve_milp`.

    Never certifies: the decoded counts are placed and repaired heuristically.
    Its bound is the model's bound loosened by the total interpolation error,
    valid for the allocation problem at every p.
    """
    from goodopt.formulations import pwl as fp

    run = MilpRun(problem, evaluator, opts, t_start)
    pr, cs, info = run.pr, run.cs, run.info
    run.add_candidate(greedy(pr, cs)[0], "greedy")  # scales the objective; not returned
    run.scale_objective()
    t0 = time.perf_counter()
    classes = fp.pwl_classes(pr, cs, opts["breakpoints"], opts["spacing"], objective=run.objective)
    per_job = np.zeros(pr.n_jobs)
    for cl in classes:
        per_job[cl.job] = max(per_job[cl.job], cl.error)
    slack = float(per_job.max(initial=0.0)) if pr.p == -np.inf else float(per_job.sum())
    info.update({"n_classes": len(classes), "pwl_error_bound": float(per_job.max(initial=0.0)),
                 "pwl_error_bound_total": slack, "breakpoints": opts["breakpoints"], "spacing": opts["spacing"]})
    if _nothing_left(run):
        return _nothing_to_choose(run)
    model = fp.build_model(pr, cs, classes, objective=run.objective)
    run.build_s += time.perf_counter() - t0
    kw = run.solve_kwargs()
    native = dict(opts["highs_options"])
    if kw.pop("node_limit") is not None and opts["solver"] == "highs":
        native.setdefault("mip_max_nodes", int(opts["node_limit"]))
    out = run.stage("pwl", lambda: solve_model(model, solver=opts["solver"], threads=opts["threads"],
                                               highs_options=native, **kw))
    if not out.has_solution:
        return _finish(run, None, out, proven=False)
    if np.isfinite(out.bound):  # valid for the true problem: the model's bound plus the interpolation error
        f = run.to_fitness(run.model_bound(out.bound) + slack)
        if np.isfinite(f):
            run.fit_bound = f
    chosen = fp.decode(model, pr, cs, classes)
    alloc, failed = place_configs(pr, cs, chosen)
    info["placement_failed_jobs"] = [pr.job_names[j] for j in failed]
    alloc, _, _ = greedy(pr, cs, start=alloc)
    return _finish(run, alloc, out, proven=False)
