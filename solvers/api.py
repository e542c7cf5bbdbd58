"""``goodopt.solve``: one entry point for every allocation method.

Methods are dispatched through :data:`REGISTRY` (name -> options class and
runner); options are validated once, by the method's frozen options class
(:mod:`goodopt.solvers.options`; :data:`METHOD_OPTIONS` lists every option
with its default). Every runner returns a :class:`MethodOutcome`, which
:func:`solve` re-scores with the evaluator into the :class:`SolveResult`.
Adding a method is one entry in :data:`REGISTRY`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from goodopt.arrays import Array
from goodopt.blas_threads import one_blas_thread
from goodopt.errors import GoodoptError, SolverError, ValidationError
from goodopt.evaluator import Evaluator
from goodopt.plugins import METHOD_GROUP, PluginRegistry
from goodopt.problem import AllocationProblem
from goodopt.progress import tracing
from goodopt.records import RecordIn
from goodopt.scenario import Scenario
from goodopt.validation import check_label

from .details import details_of
from .gavel.gavel_method import solve_gavel_round
from .judging import verdict
from .milp import solve_milp, solve_pwl
from .options import (
    BruteForceOptions,
    EqualShareOptions,
    GaOptions,
    GavelOptions,
    GreedyOptions,
    MethodOptions,
    MilpOptions,
    Nsga2Options,
    PwlOptions,
    ga_engine,
)
from .result import MethodOutcome, SolveResult, SolverStats
from .rounding import lp_rounding
from .simple_methods import run_brute_force, run_equal_share, run_greedy

log = logging.getLogger(__name__)

#: A method's options class.
O = TypeVar("O", bound=MethodOptions)

#: Methods whose solution may be named as another method's warm start.
_WARM_BY_NAME = {"milp": ("greedy", "ga"), "ga": ("greedy", "milp", "lp"), "nsga2": ("greedy", "milp", "lp")}


def _warm_starts(problem: AllocationProblem, evaluator: Evaluator, spec: Any, opts: MethodOptions,
                 method: str) -> list[Array]:
    """Allocations named by a ``warm_start`` option. Shapes: -> list of (J, N)."""
    if spec is None:
        return []
    specs = spec if isinstance(spec, list) else [spec]
    out: list[Array] = []
    for s in specs:
        if isinstance(s, str):
            names = _WARM_BY_NAME[method]
            if s not in names:
                raise ValidationError("options.warm_start", f"unknown warm start {s!r} for method {method!r}",
                                      f"use one of {names}, an allocation (J, N) or a list of them")
            if s == "lp":
                rounded = lp_rounding(problem, evaluator, time_limit_s=opts.time_limit_s)  # one LP, one thread
                if rounded is not None:
                    out.append(rounded)
                continue
            sub: dict[str, Any] = {"time_limit_s": opts.time_limit_s} if s == "milp" else {}
            if s == "ga":
                sub = {"seed": opts.seed if opts.seed is not None else 0}
            res = solve(problem, method=s, options=sub)
            if res.has_solution:
                out.append(res.x)
        else:
            a = problem.check_allocation(s)
            if a.ndim != 2:
                raise ValidationError("options.warm_start", f"an allocation must have shape (J, N), got {a.shape}")
            if evaluator.violation(a) != 0:
                raise ValidationError("options.warm_start", "the warm-start allocation is infeasible: "
                                      + "; ".join(evaluator.violations(a)[:3]), "repair it first")
            out.append(np.asarray(a, dtype=np.int64))
    return out


def solve(problem: AllocationProblem | Scenario, method: str = "milp",
          options: RecordIn | None = None) -> SolveResult:
    """Solve one allocation problem with ``method`` and re-score the answer.

    Methods: ``milp`` (exact, certified), ``milp-pwl``, ``ga``, ``nsga2``,
    ``greedy``, ``equal-share``, ``brute-force``, ``gavel`` (a Gavel policy's
    time fractions, realised for one round; the fractions are in
    ``extra["fractions"]``). See :data:`METHOD_OPTIONS`.
    The returned :class:`SolveResult` always carries the evaluator's fitness of
    the allocation, the termination status, and the bound and gap where the
    method gives one. BLAS libraries run one thread during the solve
    (:mod:`goodopt.blas_threads`).
    """
    if not isinstance(problem, AllocationProblem):
        if hasattr(problem, "problem"):
            problem = problem.problem()
        else:
            raise ValidationError("problem", f"must be an AllocationProblem or a Scenario, got {type(problem).__name__}")
    base, options = _with_solver(method, options)
    entry = REGISTRY[base]
    opts = entry.options.build(options)
    _check_allocations(problem, opts)
    log.debug("%s on %d jobs x %d nodes with options %s", method, problem.n_jobs, problem.n_nodes, opts.as_dict())
    t_start = time.perf_counter()
    with one_blas_thread():  # see goodopt.blas_threads
        ev = problem.evaluator()
        with tracing() as points:
            outcome = _run(base, entry, problem, ev, _with_solver_log(opts), t_start)
        return _result(problem, ev, method, opts, outcome, t_start, tuple(points))


def _run(method: str, entry: Method[O], problem: AllocationProblem, ev: Evaluator, opts: O,
         t_start: float) -> MethodOutcome:
    """Run a method; a plug-in that raises, or returns something other than a :class:`MethodOutcome`, fails
    with a :class:`~goodopt.errors.SolverError` naming it (its own traceback chained), so that one task fails,
    not the run."""
    if method in BUILT_IN:
        return entry.run(problem, ev, opts, t_start)
    try:
        outcome = entry.run(problem, ev, opts, t_start)
    except GoodoptError:
        raise
    except Exception as exc:  # noqa: BLE001 -- someone else's code: its failure is its task's, not goodopt's
        log.debug("plug-in method %r raised", method, exc_info=True)
        raise SolverError(f"plug-in method {method!r} raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(outcome, MethodOutcome):
        raise SolverError(f"plug-in method {method!r} returned {type(outcome).__name__}, not a MethodOutcome "
                          "(see docs/extending.md)")
    return outcome


def _check_allocations(problem: AllocationProblem, opts: MethodOptions) -> None:
    """Options that hold allocations (``warm_start``, ``initial_population``): whole GPU counts >= 0 of the
    problem's shape, one (J, N) or several (P, J, N) -- the shape is known only with the problem. Method
    names among warm starts are checked by the method."""
    shape = (problem.n_jobs, problem.n_nodes)
    named: list[tuple[str, Any]] = []
    if isinstance(opts, (MilpOptions, GaOptions, Nsga2Options)):
        named.append(("warm_start", opts.warm_start))
    if isinstance(opts, (GaOptions, Nsga2Options)):
        named.append(("initial_population", opts.initial_population))
    for name, value in named:
        items = value if isinstance(value, list) and name == "warm_start" else [value]
        for item in items:
            if item is None or (name == "warm_start" and isinstance(item, str)):
                continue
            try:
                arr = np.asarray(item, dtype=float)
            except (TypeError, ValueError):
                arr = np.zeros(0)
            if arr.ndim not in (2, 3) or arr.shape[-2:] != shape or not np.all(np.isfinite(arr)) \
                    or np.any(arr < 0) or np.any(arr != np.round(arr)):
                raise ValidationError(f"options.{name}", f"must be whole GPU counts >= 0 of shape {shape} (jobs x "
                                      "nodes), or several of them", "e.g. problem.current, or a previous result's x")


def _with_solver_log(opts: MethodOptions) -> MethodOptions:
    """``solver_log`` as HiGHS's own switches (the GA passes it to pymoo itself)."""
    if not opts.solver_log or not isinstance(opts, (MilpOptions, PwlOptions)):
        return opts
    return opts.replace(highs_options={"output_flag": True, "log_to_console": True, **opts.highs_options})


def _run_milp(problem: AllocationProblem, ev: Evaluator, opts: MilpOptions, t_start: float) -> MethodOutcome:
    starts = _warm_starts(problem, ev, opts.warm_start, opts, "milp")
    return solve_milp(problem, ev, opts.replace(warm_start=max(starts, key=ev.fitness) if starts else None), t_start)


def _run_pwl(problem: AllocationProblem, ev: Evaluator, opts: PwlOptions, t_start: float) -> MethodOutcome:
    return solve_pwl(problem, ev, opts, t_start)


def _run_ga(problem: AllocationProblem, ev: Evaluator, opts: GaOptions, t_start: float) -> MethodOutcome:
    engine = ga_engine(problem, opts.engine)
    return _run_genetic(problem, ev, opts.replace(engine=engine), t_start, engine, two_objectives=False)


def _run_nsga2(problem: AllocationProblem, ev: Evaluator, opts: Nsga2Options, t_start: float) -> MethodOutcome:
    return _run_genetic(problem, ev, opts, t_start, ga_engine(problem, "pymoo", True), two_objectives=True)


def _run_genetic(problem: AllocationProblem, ev: Evaluator, opts: GaOptions | Nsga2Options, t_start: float,
                 engine: str, *, two_objectives: bool) -> MethodOutcome:
    from .genetic import solve_ga  # loads pymoo (about 1.4 s), which no other method needs

    warm = opts.warm_start
    if isinstance(warm, str) and warm == "auto":
        warm = "lp" if engine == "configs" else ["lp", "greedy"]
    seeds = _warm_starts(problem, ev, warm, opts, "nsga2" if two_objectives else "ga")
    return solve_ga(problem, ev, opts, t_start, seeds=seeds, two_objectives=two_objectives)


def _run_gavel(problem: AllocationProblem, ev: Evaluator, opts: GavelOptions, t_start: float) -> MethodOutcome:
    return solve_gavel_round(problem, opts)


def _result(problem: AllocationProblem, ev: Evaluator, method: str, opts: MethodOptions, f: MethodOutcome,
            t_start: float, trace: tuple[tuple[float, float, float], ...] = ()) -> SolveResult:
    n_before = ev.n_evaluations  # the method's own evaluations, not the re-score's
    v = verdict(problem, ev, opts, f)
    x, has, fitness, violations = v.x, v.has_solution, v.fitness, list(v.violations)
    speedups = ev.speedups(x) if has else None
    stats = SolverStats(
        build_s=f.build_s, solve_s=f.solve_s, total_s=time.perf_counter() - t_start,
        n_evaluations=n_before, nodes=f.nodes, solver=f.solver, solver_version=f.solver_version,
        raw_status=f.raw_status, n_variables=f.n_variables, n_constraints=f.n_constraints,
        n_configs=f.n_configs, trace=trace,
    )
    if v.why:
        log.warning("%s: %s", method, v.why)
    res = SolveResult(
        method=method, x=x, fitness=fitness, status=v.status, has_solution=has, message=v.message,
        bound=v.bound, objective=f.objective, objective_bound=f.objective_bound, feasible=not violations,
        violations=violations, speedups=speedups, stats=stats,
        options={k: v for k, v in opts.as_dict().items() if not isinstance(v, np.ndarray)}, seed=opts.seed,
        extra=details_of(method, f.extra), job_names=tuple(problem.job_names),
        node_names=tuple(problem.node_names),
    )
    log.info("%s", res)
    return res


@dataclass(frozen=True)
class Method(Generic[O]):
    """A registered method: its options class and its runner ``(problem, evaluator, options, t_start) ->
    MethodOutcome``, typed together (the runner takes that class's options)."""

    options: type[O]
    run: Callable[[AllocationProblem, Evaluator, O, float], MethodOutcome]


#: Every method by name (plug-ins of the ``goodopt.methods`` entry points are added when it is first read).
#: (``Method[Any]``: each entry's runner and options class agree, which the constructor checks per entry.)
REGISTRY: dict[str, Method[Any]] = PluginRegistry(METHOD_GROUP, lambda name, method: register_method(name, method), {
    "milp": Method(MilpOptions, _run_milp),
    "milp-pwl": Method(PwlOptions, _run_pwl),
    "ga": Method(GaOptions, _run_ga),
    "nsga2": Method(Nsga2Options, _run_nsga2),
    "greedy": Method(GreedyOptions, run_greedy),
    "equal-share": Method(EqualShareOptions, run_equal_share),
    "brute-force": Method(BruteForceOptions, run_brute_force),
    "gavel": Method(GavelOptions, _run_gavel),
})


#: goodopt's own methods (the others are plug-ins, whose failures are their tasks' own: see :func:`_run`).
BUILT_IN = frozenset(dict.keys(REGISTRY))


class _LiveNames(Sequence[str]):
    """The names in :data:`REGISTRY` (those passing ``keep``), in registration order, as they are now."""

    def __init__(self, keep: Callable[[Method[Any]], bool] = lambda method: True) -> None:
        self._keep = keep

    def _names(self) -> tuple[str, ...]:
        return tuple(name for name, m in REGISTRY.items() if self._keep(m))

    def __getitem__(self, i: Any) -> Any:
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        """A registered name, or one with the MILP solver it runs on (``milp@scip``, see :func:`split_method`)."""
        if isinstance(name, str) and "@" in name:
            try:
                base, solver = split_method(name)
            except ValidationError:
                return False
            from .mip_solvers import SOLVERS

            return solver in SOLVERS and self._keep(REGISTRY[base])
        return name in REGISTRY and self._keep(REGISTRY[name])

    def __repr__(self) -> str:
        return repr(self._names())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and not isinstance(other, str) and self._names() == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # equal to tuples, so not hashable


#: Every method's name (plug-ins included, as they are registered).
METHODS = _LiveNames()
#: Methods that need a seed.
RANDOMISED = _LiveNames(lambda m: m.options.randomised)


class _Defaults(Mapping[str, dict[str, Any]]):
    """Each registered method's options with their defaults, as the registry is now."""

    def __getitem__(self, name: str) -> dict[str, Any]:
        """The options of ``name`` (``milp@scip``: milp's, its solver that one)."""
        base, solver = split_method(name) if isinstance(name, str) and "@" in name else (name, None)
        defaults = REGISTRY[base].options.defaults()
        return defaults if solver is None else {**defaults, "solver": solver}

    def __contains__(self, name: object) -> bool:
        return name in METHODS

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)


#: Options each method accepts, with their defaults.
METHOD_OPTIONS: Mapping[str, dict[str, Any]] = _Defaults()


def register_method(name: str, method: Method[Any] | Callable[[], Method[Any]]) -> None:  # any options class: checked below
    """Add an allocation method under ``name`` (a :class:`Method`, or a function returning one): from then on
    :func:`solve`, ``compare``, ``sweep`` and the command line take it. Its options class checks its options
    as goodopt's own do."""
    if callable(method) and not isinstance(method, Method):
        method = method()
    if not isinstance(method, Method) or not (isinstance(method.options, type)
                                              and issubclass(method.options, MethodOptions)):
        raise ValidationError(f"method {name!r}", "a plug-in must be a Method(options class, runner)",
                              "see docs/extending.md")
    check_label(f"method {name!r}", name, "name a method by a plain label such as my-heuristic (it names "
                "output columns and run folders)")
    if name in REGISTRY:
        raise ValidationError(f"method {name!r}", "the name is taken", "choose another name")
    REGISTRY[name] = method


def options_for(method: str, options: RecordIn | None = None) -> MethodOptions:
    """The validated, typed options object of ``method`` with ``options`` (a mapping; defaults filled in), as
    :func:`solve` checks them: an error names the option and the fix. For callers that keep or compare a
    method's full options, or run its stages directly."""
    base, options = _with_solver(method, options)
    return REGISTRY[base].options.build(options)


def split_method(name: str) -> tuple[str, str | None]:
    """A method's name and the MILP solver it names: ``"milp@scip"`` -> ``("milp", "scip")``, ``"ga"`` ->
    ``("ga", None)``. Only a method with a ``solver`` option takes ``@SOLVER``; an unknown method is an error."""
    base, at, solver = name.partition("@") if isinstance(name, str) else (name, "", "")
    if base not in REGISTRY:
        raise ValidationError("method", f"unknown method {name!r}", f"choose one of {', '.join(METHODS)}")
    if at and "solver" not in {f.name for f in dataclasses.fields(REGISTRY[base].options)}:
        raise ValidationError("method", f"{name!r}: method {base!r} has no MILP solver to choose",
                              f"use {base!r} alone; '@SOLVER' goes with milp and milp-pwl")
    return base, (solver if at else None)


def _with_solver(method: str, options: Mapping[str, Any] | None) -> tuple[str, Mapping[str, Any] | None]:
    """``method``'s base name and ``options`` with the solver its ``@SOLVER`` names (the same solver given
    twice is fine; two different ones are an error)."""
    base, solver = split_method(method)
    if solver is None:
        return base, options
    given = (options or {}).get("solver", solver)
    if given != solver:
        raise ValidationError("options.solver", f"method {method!r} names solver {solver!r}, the options "
                              f"{given!r}", f"give the solver once: {base}@{given} or solver={solver!r}")
    return base, {**(options or {}), "solver": solver}
