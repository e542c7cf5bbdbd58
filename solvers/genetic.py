"""The ``ga`` and ``nsga2`` methods (pymoo 0.6).

Pollux's settings are the defaults: population 100, 100 generations, the
problem's p and re-allocation factors, interference avoidance. The initial
population holds the current allocation, any warm starts (``warm_start``:
``"greedy"``, ``"milp"``, an allocation, or a list of them) and the
``initial_population`` of a previous round, then mutated copies, all repaired
to feasibility. All randomness comes from ``seed``.

Two engines run the same operators (:mod:`goodopt.solvers.ga_operators`):

* ``engine="pymoo"`` (default): pymoo's ``GA`` / ``NSGA2`` loop;
* ``engine="numpy"`` (single objective): the same generational scheme —
  binary tournament on fitness, row crossover with ``crossover_prob``,
  mutation, repair, and survival of the best ``pop_size`` of parents and
  offspring — written as whole-population array operations, without pymoo's
  per-individual bookkeeping. It is the fast path of the simulator's Pollux
  policy; for the same seed it does not reproduce pymoo's random stream.
  Option ``stall_generations`` stops it once the best fitness has not
  improved for that many generations.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any, cast

import numpy as np
from goodopt.formulations.ga import AllocationGAProblem
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.algorithms.soo.nonconvex.ga import GA
from pymoo.core.callback import Callback
from pymoo.core.termination import TerminateIfAny
from pymoo.optimize import minimize
from pymoo.termination.max_gen import MaximumGenerationTermination
from pymoo.termination.max_time import TimeBasedTermination

from goodopt.arrays import Array
from goodopt.evaluator import Evaluator
from goodopt.problem import AllocationProblem
from goodopt.progress import record_point, report, reported

from .config_ga import evolve
from .ga_breeding import children_rows, gather
from .ga_kernels import byte_cells
from .ga_operators import (
    AllocationMutation,
    AllocationRepair,
    AllocationSampling,
    RepairData,
    RowCrossover,
    initial_population,
)
from .options import GaOptions, Nsga2Options, stall_for
from .result import MethodOutcome, Termination

log = logging.getLogger(__name__)


def solve_ga(problem: AllocationProblem, evaluator: Evaluator, opts: GaOptions | Nsga2Options, t_start: float, *,
             seeds: Iterable[Array] = (), two_objectives: bool = False) -> MethodOutcome:
    """Run the GA. ``seeds`` are (J, N) allocations for the initial population."""
    t0 = time.perf_counter()
    seeds = list(seeds)
    if getattr(opts, "initial_population", None) is not None:
        init = np.asarray(opts.initial_population, dtype=np.int64)
        seeds.extend(init.reshape(-1, problem.n_jobs, problem.n_nodes))
    pop_size = opts.pop_size
    seeds = seeds[: max(pop_size - 1, 0)]
    engine = getattr(opts, "engine", "pymoo")
    if engine == "configs" and not two_objectives:
        return _solve_configs(problem, evaluator, opts, t_start, seeds, t0)
    data = RepairData(problem)
    if engine == "numpy" and not two_objectives:
        return _solve_numpy(problem, evaluator, opts, t_start, data, seeds, t0)
    gaprob = AllocationGAProblem(problem, evaluator, two_objectives=two_objectives)
    operators = dict(
        pop_size=pop_size,
        sampling=AllocationSampling(data, seeds),
        crossover=RowCrossover(data, prob=opts.crossover_prob),
        mutation=AllocationMutation(data, opts.mutation_rate),
        repair=AllocationRepair(data),
        eliminate_duplicates=False,
    )
    algorithm = NSGA2(**operators) if two_objectives else GA(**operators)
    limits = [MaximumGenerationTermination(opts.n_gen)]
    if opts.time_limit_s is not None:
        remaining = max(opts.time_limit_s - (time.perf_counter() - t_start), 1e-3)
        limits.append(TimeBasedTermination(remaining))
    termination = TerminateIfAny(*limits)
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    res = minimize(gaprob, algorithm, termination, seed=opts.seed, verbose=bool(getattr(opts, "solver_log", None)),
                   save_history=False, callback=_GenerationReport(opts.n_gen))
    solve_s = time.perf_counter() - t1
    n_gen = res.algorithm.n_gen - 1  # pymoo counts the initial population as generation 1
    status = Termination.COMPLETED if n_gen >= opts.n_gen else Termination.TIME_LIMIT
    final = res.pop.get("X").reshape(-1, problem.n_jobs, problem.n_nodes).astype(np.int64)
    ev = evaluator.evaluate(final)
    fit = np.where(ev.violation == 0, ev.fitness, -np.inf)
    best = int(np.argmax(fit))
    alloc = final[best] if np.isfinite(fit[best]) else None
    extra = {"generations": int(n_gen), "evaluations": int(res.algorithm.evaluator.n_eval), "engine": "pymoo",
             "final_population": final}
    if two_objectives:
        front = res.X.reshape(-1, problem.n_jobs, problem.n_nodes).astype(np.int64)
        fe = evaluator.evaluate(front)
        nodes_used = (front.sum(axis=1) > 0).sum(axis=1)
        order = np.lexsort((-fe.fitness, nodes_used))
        extra["pareto"] = [{"nodes_used": int(nodes_used[i]), "fitness": float(fe.fitness[i])}
                           for i in order if fe.violation[i] == 0]
        extra["pareto_allocations"] = front[order]
    return MethodOutcome(alloc=alloc, status=status, bound=np.nan, objective=np.nan, objective_bound=np.nan,
                build_s=build_s, solve_s=solve_s, nodes=None, solver="pymoo-" + ("nsga2" if two_objectives else "ga"),
                solver_version=_pymoo_version(), raw_status=f"{n_gen} generations", n_variables=gaprob.n_var,
                n_constraints=1, n_configs=None, extra=extra,
                message=f"{n_gen} generations of population {pop_size}")


def _report_generation(gen: int, n_gen: int, best: float) -> None:
    """A progress record per generation (a milestone every tenth of the run), and a trace point."""
    record_point(best)
    detail = gen % max(1, n_gen // 10) != 0
    if reported(detail):
        report("generation %d/%d, best fitness %s", gen, n_gen,
               f"{best:.6g}" if np.isfinite(best) else "none feasible", detail=detail)


class _GenerationReport(Callback):  # type: ignore[misc]  # pymoo publishes no types
    """pymoo callback: :func:`_report_generation` after each generation."""

    def __init__(self, n_gen: int) -> None:
        super().__init__()
        self.n_gen = n_gen

    def notify(self, algorithm: Any) -> None:  # algorithm: pymoo's algorithm object (pymoo ships no type stubs)
        opt = algorithm.opt
        feasible = opt.get("CV")[:, 0] <= 0 if opt is not None and len(opt) else np.zeros(0, bool)
        best = -float(opt.get("F")[feasible, 0].min()) if feasible.any() else -np.inf
        _report_generation(algorithm.n_gen - 1, self.n_gen, best)


def _pymoo_version() -> str:
    from importlib.metadata import version

    return version("pymoo")


def _solve_configs(problem: AllocationProblem, evaluator: Evaluator, opts: GaOptions | Nsga2Options, t_start: float,
                   seeds: list[Array], t0: float) -> MethodOutcome:
    """The GA over configurations (:mod:`goodopt.solvers.config_ga`), for large clusters."""
    rng = np.random.default_rng(opts.seed)
    deadline = None if opts.time_limit_s is None else t_start + opts.time_limit_s
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    alloc, pop, gen, timed_out = evolve(
        problem, evaluator, seeds, pop_size=opts.pop_size, n_gen=opts.n_gen,
        crossover_prob=opts.crossover_prob, rng=rng, deadline=deadline,
        stall=stall_for("configs", getattr(opts, "stall_generations", "auto")),
        on_generation=lambda g, p: _report_generation(g, opts.n_gen, float(p.score[0])))
    status = Termination.TIME_LIMIT if timed_out else Termination.COMPLETED
    P = len(pop.score)
    return MethodOutcome(alloc=alloc, status=status, bound=np.nan, objective=np.nan, objective_bound=np.nan,
                         build_s=build_s, solve_s=time.perf_counter() - t1, nodes=None, solver="goodopt-config-ga",
                         solver_version=np.__version__, raw_status=f"{gen} generations", n_variables=problem.n_jobs,
                         n_constraints=1, n_configs=pop.cs.n_configs,
                         extra={"generations": gen, "evaluations": P * (gen + 1), "engine": "configs"},
                         message=f"{gen} generations of population {P} over job configurations")


class KnownScores:
    """Each individual's score (its fitness, ``-inf`` when infeasible), evaluated once per distinct allocation.

    Most offspring of a converging population repeat an individual already scored in the run (three in four
    in a Pollux simulation's rounds); their scores are looked up by their bytes instead of evaluated again.
    The evaluator scores each allocation on its own (every reduction runs along that allocation's own axes),
    so a looked-up score is the one a new evaluation would give, to the last bit. Shapes: (P, J, N) -> (P,).
    """

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator
        self.known: dict[bytes, float] = {}

    def __call__(self, pop: Array) -> Array:
        keys = _row_bytes(pop)
        known = self.known
        scores = list(map(known.get, keys))  # None: not scored yet
        unknown = [i for i, score in enumerate(scores) if score is None]
        if unknown:
            new: dict[bytes, int] = {}  # each key not scored yet, at its first member
            for i in unknown:
                new.setdefault(keys[i], i)
            known.update(zip(new, self.evaluator.ranked_fitness(pop[list(new.values())]).tolist()))
            for i in unknown:
                scores[i] = known[keys[i]]
        return np.array(scores, dtype=float)


def _children(pop: Array, fit: Array, data: RepairData, rng: np.random.Generator, crossover_prob: float,
              rate: float) -> Array:
    """One generation's children, repaired: binary tournaments, row crossover
    (:func:`~goodopt.solvers.ga_operators.row_crossover`'s draws), mutation
    (:func:`~goodopt.solvers.ga_operators.mutate`'s), then :func:`~goodopt.solvers.ga_operators.repair`'s, as one
    compiled call (:func:`goodopt.solvers.ga_breeding.children_rows`), the same draws in the same order.
    Shapes: pop (P, J, N), fit (P,) -> (P, J, N)."""
    return children_rows(pop, fit, rng, crossover_prob, rate, *data.repair_args)


def _row_bytes(pop: Array) -> list[bytes]:
    """Each member's cells as bytes, made in one call through a view of each member as one opaque item: one
    byte a cell when every cell of ``pop`` lies in 0..255 (as after repair; hashing the keys was most of a
    look-up's cost), else the cells' own bytes. Keys of the two kinds differ in length, so no two allocations
    share a key. Shapes: (P, J, N) -> P."""
    if pop.size == 0:
        return [row.tobytes() for row in pop]
    rows = np.ascontiguousarray(pop).reshape(len(pop), -1)
    if pop.dtype.kind in "iu" and pop.itemsize > 1 and pop.ndim == 3:
        small, fits = byte_cells(pop)  # one compiled pass instead of a minimum, a maximum and a cast
        if fits:
            rows = small
    # a void item's tolist() is its bytes (numpy types it as bytes or a tuple, the tuple being for structured items)
    return cast(list[bytes], rows.view(np.dtype((np.void, rows.shape[1] * rows.itemsize))).ravel().tolist())


def _solve_numpy(problem: AllocationProblem, evaluator: Evaluator, opts: GaOptions | Nsga2Options, t_start: float,
                 data: RepairData, seeds: list[Array], t0: float) -> MethodOutcome:
    """The single-objective GA as whole-population array operations (see the module docstring)."""
    rng = np.random.default_rng(opts.seed)
    P, J = opts.pop_size, problem.n_jobs
    rate = opts.mutation_rate if opts.mutation_rate is not None else min(1.0, 2.0 / max(J, 1))
    deadline = None if opts.time_limit_s is None else t_start + opts.time_limit_s

    score = KnownScores(evaluator)
    build_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    pop = initial_population(data, seeds, P, rng)
    fit = score(pop)
    n_eval, gen, since_best = P, 0, 0
    stall = stall_for("numpy", getattr(opts, "stall_generations", None))
    status = Termination.COMPLETED
    while gen < opts.n_gen:
        if stall is not None and since_best >= stall:
            break
        if deadline is not None and time.perf_counter() >= deadline:
            status = Termination.TIME_LIMIT
            break
        kids = _children(pop, fit, data, rng, opts.crossover_prob, rate)
        merged_fit = np.concatenate([fit, score(kids)])
        best = np.argsort(-merged_fit, kind="stable")[:P]
        since_best = 0 if merged_fit[best[0]] > fit[0] else since_best + 1
        pop, fit = gather(pop, kids, best), merged_fit[best]
        n_eval += len(kids)
        gen += 1
        _report_generation(gen, opts.n_gen, fit[0])
    solve_s = time.perf_counter() - t1
    alloc = pop[0] if np.isfinite(fit[0]) else None
    return MethodOutcome(alloc=alloc, status=status, bound=np.nan, objective=np.nan, objective_bound=np.nan,
                build_s=build_s, solve_s=solve_s, nodes=None, solver="numpy-ga", solver_version=np.__version__,
                raw_status=f"{gen} generations", n_variables=J * problem.n_nodes, n_constraints=1, n_configs=None,
                extra={"generations": gen, "evaluations": n_eval, "final_population": pop, "engine": "numpy"},
                message=f"{gen} generations of population {P}")
