"""Typed, validated options of every method: one frozen dataclass per method.

Options are checked once, when the object is made (:meth:`MethodOptions.build`
from a user's mapping lists unknown keys); the stages read them as attributes
(:meth:`MethodOptions.as_dict` gives them as a dict for records and logs).
``randomised`` says whether a method needs a seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from goodopt.errors import ValidationError
from goodopt.gavel import POLICY_NAMES, check_entities
from goodopt.problem import AllocationProblem
from goodopt.records import RecordIn
from goodopt.typed_options import TypedOptions
from goodopt.validation import MAX_WHOLE

from .gavel import check_policy_options
from .mip_solvers import SOLVERS
from .option_checks import (  # noqa: F401
    MAX_POPULATION,
    MAX_SECONDS,
    MAX_THREADS,
    check_highs_options,
    check_probe,
    check_solver,
    choice,
    job_numbers,
    seconds,
    whole,
)


@dataclass(frozen=True, kw_only=True)
class MethodOptions(TypedOptions):
    """Options every method takes: ``time_limit_s`` (wall clock, None = none), ``seed``, ``threads``,
    ``solver_log`` (print the solver's own log: HiGHS's, or pymoo's table per generation)."""

    time_limit_s: float | None = None
    seed: int | None = None
    threads: int | None = None
    solver_log: bool = False

    randomised: ClassVar[bool] = False
    method: ClassVar[str] = ""

    def __post_init__(self) -> None:
        seconds("time_limit_s", self.time_limit_s, "omit it for no limit")
        whole("seed", self.seed, 0, none_ok=True)
        whole("threads", self.threads, 1, f"HiGHS starts a thread pool of that size; give at most the machine's "
               f"cores (<= {MAX_THREADS}), or omit it for one thread", none_ok=True, hi=MAX_THREADS)
        choice("solver_log", self.solver_log, (True, False))
        if self.randomised and self.seed is None:
            raise ValidationError("options.seed", f"method {self.method!r} is randomised and needs a seed",
                                  "pass options={'seed': 0} (same seed, same result)")

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.owner, cls.listed_as = f"method {cls.method!r}", cls.method


@dataclass(frozen=True, kw_only=True)
class _MilpBase(MethodOptions):
    mip_rel_gap: float = 1e-6
    solver: str = "highs"
    highs_options: Mapping[str, Any] = field(default_factory=dict)
    #: The chosen solver's own parameters (not HiGHS's: those are ``highs_options``), passed after goodopt's.
    solver_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        g = self.mip_rel_gap
        if isinstance(g, bool) or not isinstance(g, (int, float)) or not 0 <= g < 1:
            raise ValidationError("options.mip_rel_gap", f"must be in [0, 1), got {g!r}")
        check_solver(self.solver, self.threads, self.solver_options)
        check_highs_options(self.highs_options)


@dataclass(frozen=True, kw_only=True)
class MilpOptions(_MilpBase):
    """The exact method (see the README's option list)."""

    method: ClassVar[str] = "milp"
    formulation: str = "auto"
    symmetry: str = "order"
    warm_start: Any = None
    placement_check_s: float = 5.0
    max_placement_pairs: int = 100_000
    placement_cuts: int = 10
    model_route: str = "auto"
    #: ``auto``: start with the LP certificate under every type's node-pattern rows from 2,000 job-node pairs
    #: on; ``True``: always, and round the first configuration LP too; ``False``: never.
    lp_rounding: Any = "auto"
    node_limit: int | None = None
    config_placement: str = "patterns"
    write_model: str | None = None
    #: ``whole``: the problem's reference model (every configuration); ``last-solved``: the model the solve
    #: ended with (the reduced-cost dive's, over its open configurations, say)
    write_model_kind: str = "whole"
    #: ``all``: every configuration; ``sia``: only those of Sia's ILP
    #: (:func:`goodopt.formulations.configs.sia_configs`): the same problem on Sia's restricted set
    configs: str = "all"
    #: The solver that first solves the reduced-cost dive's core in a few nodes (``auto``: SCIP under HiGHS;
    #: ``none``: no probe), see :func:`goodopt.solvers.milp.run.dive_probe`.
    dive_probe: str = "auto"

    def __post_init__(self) -> None:
        super().__post_init__()
        choice("formulation", self.formulation, ("auto", "placement", "config", "reference"))
        check_probe(self.dive_probe)
        if self.write_model is not None and (not isinstance(self.write_model, str)
                                             or not self.write_model.lower().endswith((".mps", ".lp"))):
            raise ValidationError("options.write_model", f"must be a file name ending in .mps or .lp, got "
                                  f"{self.write_model!r}", "e.g. write_model='model.mps'")
        choice("write_model_kind", self.write_model_kind, ("whole", "last-solved"))
        choice("configs", self.configs, ("all", "sia"))
        choice("symmetry", self.symmetry, ("order", "none"))
        choice("model_route", self.model_route, ("auto", "arrays", "pyomo"))
        choice("lp_rounding", self.lp_rounding, ("auto", True, False))
        choice("config_placement", self.config_placement, ("patterns", "cuts"))
        seconds("placement_check_s", self.placement_check_s)
        whole("max_placement_pairs", self.max_placement_pairs, 1)
        whole("placement_cuts", self.placement_cuts, 1)
        whole("node_limit", self.node_limit, 1, "omit it for no limit on branch-and-bound nodes", none_ok=True)


@dataclass(frozen=True, kw_only=True)
class PwlOptions(_MilpBase):
    method: ClassVar[str] = "milp-pwl"
    breakpoints: Any = 8
    spacing: str = "adaptive"
    node_limit: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        whole("node_limit", self.node_limit, 1, "omit it for no limit on branch-and-bound nodes", none_ok=True)
        if SOLVERS[self.solver].integer_only:
            raise ValidationError("options.solver", f"{self.solver} cannot solve the piecewise-linear model: its "
                                  "interpolation weights are continuous columns that no integer relaxation keeps",
                                  "use highs, scip, cbc or gurobi")
        b = self.breakpoints
        if isinstance(b, (list, tuple)):
            if not b or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in b):
                raise ValidationError("options.breakpoints", f"a list must hold GPU counts >= 1, got {b!r}")
        elif isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 2:
            raise ValidationError("options.breakpoints", f"must be an integer >= 2 or a list of GPU counts, got {b!r}")
        choice("spacing", self.spacing, ("adaptive", "uniform"))


@dataclass(frozen=True, kw_only=True)
class _GeneticBase(MethodOptions):
    randomised: ClassVar[bool] = True
    pop_size: int = 100
    n_gen: int = 100
    mutation_rate: float | None = None
    crossover_prob: float = 0.9
    #: Seeds of the first population; ``"auto"``: LP rounding for the configuration engine, LP rounding and
    #: greedy otherwise
    #: (``None``: no warm start, as Pollux's own GA, which the simulator's ``pollux`` policy keeps); the GA
    #: keeps its best member, so it never ends below its seeds.
    warm_start: Any = "auto"
    initial_population: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        whole("pop_size", self.pop_size, 1, hi=MAX_POPULATION)
        whole("n_gen", self.n_gen, 1)
        for name, r in (("mutation_rate", self.mutation_rate), ("crossover_prob", self.crossover_prob)):
            if r is not None and (isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 <= r <= 1):
                raise ValidationError(f"options.{name}", f"must be a number in [0, 1], got {r!r}")


@dataclass(frozen=True, kw_only=True)
class GaOptions(_GeneticBase):
    method: ClassVar[str] = "ga"
    engine: str = "auto"
    #: ``auto``: :data:`CONFIGS_STALL` for the configs engine (whose LP-rounded start leaves little to find),
    #: never for the others.
    stall_generations: Any = "auto"  # a whole number, None or "auto" (checked below)

    def __post_init__(self) -> None:
        super().__post_init__()
        choice("engine", self.engine, ENGINES)
        if self.stall_generations != "auto":
            whole("stall_generations", self.stall_generations, 1, "omit it to always run n_gen generations",
                   none_ok=True)
        if self.stall_generations not in (None, "auto") and self.engine not in ("numpy", "configs"):
            raise ValidationError("options.stall_generations", "is supported by the numpy and configs engines only",
                                  "add engine='numpy' (or 'configs') or drop stall_generations")


#: The ``ga`` method's engines (:mod:`goodopt.solvers.genetic`); ``auto`` picks ``configs`` from
#: :data:`CONFIGS_FROM_CELLS` job-node pairs on, ``pymoo`` below.
ENGINES = ("auto", "pymoo", "numpy", "configs")
#: Job-node pairs (J x N) from which ``engine="auto"`` runs the GA over configurations: the dense
#: population (P x J x N) outgrows memory and time there (five-types-512 has 19,680, cluster-256 3,264).
CONFIGS_FROM_CELLS = 10_000


#: Generations without improvement after which the configs engine stops by default.
CONFIGS_STALL = 20


def stall_for(engine: str, stall: int | str | None) -> int | None:
    """The ``stall_generations`` an engine runs with (``auto`` resolved)."""
    if not isinstance(stall, str):
        return stall
    return CONFIGS_STALL if engine == "configs" else None


def ga_engine(problem: AllocationProblem, engine: str, two_objectives: bool = False) -> str:
    """The engine ``engine`` stands for on ``problem`` (``auto`` resolved; NSGA-II runs on pymoo)."""
    if two_objectives:
        return "pymoo"
    if engine != "auto":
        return engine
    return "configs" if problem.n_jobs * problem.n_nodes >= CONFIGS_FROM_CELLS else "pymoo"


@dataclass(frozen=True, kw_only=True)
class Nsga2Options(_GeneticBase):
    method: ClassVar[str] = "nsga2"


@dataclass(frozen=True, kw_only=True)
class GreedyOptions(MethodOptions):
    method: ClassVar[str] = "greedy"
    start: str = "empty"

    def __post_init__(self) -> None:
        super().__post_init__()
        choice("start", self.start, ("empty", "current"))


@dataclass(frozen=True, kw_only=True)
class EqualShareOptions(MethodOptions):
    method: ClassVar[str] = "equal-share"


@dataclass(frozen=True, kw_only=True)
class BruteForceOptions(MethodOptions):
    method: ClassVar[str] = "brute-force"
    max_allocations: int = 2_000_000

    def __post_init__(self) -> None:
        super().__post_init__()
        whole("max_allocations", self.max_allocations, 1)


@dataclass(frozen=True, kw_only=True)
class GavelOptions(MethodOptions):
    method: ClassVar[str] = "gavel"
    policy: str = "max_min_fairness"
    n_gpus: Any = "min_gpus"
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    #: Entity -> {weight, policy: fairness | fifo} for the hierarchical policy; jobs name theirs (``entity``).
    entities: Mapping[str, Any] = field(default_factory=dict)
    #: Job -> work left, in the throughput matrix's units (work / throughput = seconds): every job, for
    #: finish_time_fairness and min_makespan (and their packed forms).
    remaining_steps: Mapping[str, Any] = field(default_factory=dict)
    #: Job -> seconds it has run so far (finish_time_fairness; a job left out: 0, it arrives now).
    elapsed_s: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        choice("policy", self.policy, POLICY_NAMES)
        if not isinstance(self.entities, Mapping):
            raise ValidationError("options.entities", f"must map entity -> {{weight, policy}}, got {self.entities!r}",
                                  "e.g. {alice: {weight: 2}, bob: {policy: fifo}}")
        try:
            check_entities(self.entities)
            check_policy_options(self.policy, self.policy_options)
        except ValidationError as exc:
            field_name = exc.field if exc.field.startswith("entities") else \
                f"policy_options{exc.field.removeprefix('options')}"
            raise ValidationError(f"options.{field_name}", exc.problem, exc.fix) from None
        job_numbers("remaining_steps", self.remaining_steps, strict=True)
        job_numbers("elapsed_s", self.elapsed_s, strict=False)
        n = self.n_gpus
        if n not in ("min_gpus", "base") and (isinstance(n, bool) or not isinstance(n, int)
                                              or not 1 <= n <= MAX_WHOLE):
            raise ValidationError("options.n_gpus", f"must be 'min_gpus', 'base' or a whole number in "
                                  f"[1, {MAX_WHOLE}], got {n!r}")


#: Options that write a file of their own: taken only by ``goodopt solve`` (``--write-model``, whose output is
#: checked like every other), never from a sweep spec, ``compare`` or a policy, where every task or round would
#: write the same unchecked file.
FILE_OPTIONS = ("write_model",)


def refuse_file_options(where: str, options: RecordIn | None) -> None:
    """Refuse :data:`FILE_OPTIONS` among ``options`` (of many tasks or rounds), naming ``where`` and the fix."""
    for name in FILE_OPTIONS:
        if options and name in options:
            raise ValidationError(f"{where}.{name}", "writes a file, once per task or round, outside goodopt's "
                                  "output checks", "write one model with goodopt solve SCENARIO --method milp "
                                  "--write-model model.mps")


#: The options class of every method, in the order methods are listed.
OPTIONS: dict[str, type[MethodOptions]] = {cls.method: cls for cls in (
    MilpOptions, PwlOptions, GaOptions, Nsga2Options, GreedyOptions, EqualShareOptions, BruteForceOptions,
    GavelOptions)}
