"""``goodopt check``: an answer produced anywhere, judged against an instance, trusting nothing in it.

The answer is an allocation file (``{job: {node: GPUs}}``, or ``goodopt solve --json`` output with its
``allocation``) or a solver's solution file for the instance's exported model (:mod:`goodopt.solvers.mip_solvers.solution_files`).
A solution file is checked against the model file itself (bounds, integrality, every row, by name) and mapped
back through the map to an allocation; either way the allocation is checked by the evaluator's rules and
re-scored by it. The report gives the fitness, the solver's claim beside it, and the gap to the library's value
and bound when the instance belongs to a library (its ``library.solu``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ScenarioError, ValidationError
from ..records import Record
from .solu import SoluEntry, read_solu

#: The suffixes of allocation files; any other answer is read as a solver's solution file.
ALLOCATION_SUFFIXES = (".json", ".yaml", ".yml")
SOLU_NAME = "library.solu"


@dataclass(frozen=True)
class Instance:
    """The files of one instance: its scenario, and (when exported) its model file and map."""

    name: str
    scenario: Path
    model: Path | None
    map: Path | None
    solu: Path | None

    @classmethod
    def at(cls, path: str | Path) -> Instance:
        """The instance a path names: its scenario file, its model file, or its name without a suffix (a bare
        name that is no file here: an instance of the shipped library)."""
        p = Path(path)
        base = p.with_suffix("") if p.suffix.lower() == ".gz" else p
        stem = base.with_suffix("") if base.suffix.lower() in (".yaml", ".yml", ".mps", ".lp") else base
        if len(p.parts) == 1 and not stem.with_suffix(".yaml").is_file():  # a name of the shipped library
            from . import shipped

            stem = shipped() / "instances" / stem.name
        scenario = next((q for q in (stem.with_suffix(".yaml"), stem.with_suffix(".yml")) if q.is_file()), None)
        if scenario is None:
            raise ValidationError("instance", f"no scenario file {stem}.yaml", "pass an instance's .yaml, .mps "
                                  "or name in a library folder (goodopt library build writes them)")
        models = [stem.with_name(stem.name + s) for s in (".mps", ".mps.gz", ".lp", ".lp.gz")]
        model = p if base.suffix.lower() in (".mps", ".lp") else next((q for q in models if q.is_file()), None)
        mp = next((q for q in (stem.with_name(stem.name + ".map.json"), stem.with_name(stem.name + ".map.json.gz"))
                   if q.is_file()), stem.with_name(stem.name + ".map.json"))
        solu = next((d / SOLU_NAME for d in (stem.parent, stem.parent.parent) if (d / SOLU_NAME).is_file()), None)
        return cls(name=stem.name, scenario=scenario, model=model, map=mp if mp.is_file() else None, solu=solu)


@dataclass(frozen=True)
class CheckReport:
    """The verdict on one answer. ``violation`` is the first rule it breaks ("" when feasible); ``fitness`` is
    the evaluator's (NaN when the answer maps to no allocation); ``claimed`` the fitness of the objective value
    the solver's file states (NaN if none); ``library`` the library's entry, with its value and bound as
    fitnesses and the answer's gaps to them (relative, NaN without an entry)."""

    instance: str
    answer: str
    kind: str
    feasible: bool
    violation: str
    fitness: float
    claimed: float = math.nan
    library: SoluEntry | None = None
    library_fitness: float = math.nan
    library_bound: float = math.nan
    gap: float = math.nan
    gap_to_bound: float = math.nan
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        """Feasible, and not better than a certified optimum nor than the library's bound (beyond 1e-9)."""
        return self.feasible and not (self.gap_to_bound < -1e-9)

    def to_dict(self) -> Record:
        d = asdict(self)
        d["library"] = None if self.library is None else asdict(self.library)
        d["holds"] = self.holds
        return d


def check(instance: str | Path, answer: str | Path) -> CheckReport:
    """Judge ``answer`` against ``instance`` (see the module's docstring)."""
    from ..solvers.milp.answers import load_map
    from ..sources import load_scenario

    inst = Instance.at(instance)
    pr = load_scenario(str(inst.scenario)).problem()
    mapping = load_map(inst.map) if inst.map is not None else None  # read once: several MB at 512 GPUs
    answer = Path(answer)
    if answer.suffix.lower() in ALLOCATION_SUFFIXES:
        alloc, kind, violation, claimed = _allocation_answer(pr, answer), "allocation", "", math.nan
    else:
        alloc, kind, violation, claimed = _solution_answer(pr, inst, mapping, answer)
    ev = pr.evaluator()
    fitness = math.nan
    if alloc is not None:
        problems = ev.violations(alloc)
        violation = violation or (problems[0] if problems else "")
        fitness = float(ev.fitness(alloc)) if not problems else math.nan
    return _with_library(CheckReport(instance=inst.name, answer=str(answer), kind=kind, feasible=not violation,
                                     violation=violation, fitness=fitness, claimed=claimed), inst, mapping)


def _allocation_answer(pr: Any, path: Path) -> Any:
    from ..validation import read_yaml

    data = read_yaml(path, "answer", ScenarioError) or {}
    if isinstance(data, dict) and isinstance(data.get("allocation"), dict):
        data = data["allocation"]
    return pr.allocation_from_mapping(data)


def _solution_answer(pr: Any, inst: Instance, mapping: dict[str, Any] | None,
                     path: Path) -> tuple[Any, str, str, float]:
    from ..solvers.milp.answers import allocation_of, column_vector, first_violation, model_arrays
    from ..solvers.milp.export import fitness_of
    from ..solvers.mip_solvers.solution_files import read_solution

    if inst.model is None or mapping is None:
        raise ValidationError("instance", f"{inst.name} has no model file and map beside its scenario",
                              "write them with goodopt solve --write-model or goodopt library build")
    sol = read_solution(path)
    model = model_arrays(inst.model)
    if model.col_names != [c["name"] for c in mapping["columns"]]:
        raise ValidationError("map", f"{inst.map} does not describe the columns of {inst.model}",
                              "use the map written with the model file")
    x = column_vector(model, sol.values)
    claimed = fitness_of(mapping["objective"], sol.claimed_objective) if math.isfinite(sol.claimed_objective) \
        else math.nan
    violation = first_violation(model, x)
    if violation:
        return None, sol.format, violation, claimed
    alloc, why = allocation_of(pr, mapping, model.col_names, x)
    return alloc, sol.format, why, claimed


def _with_library(rep: CheckReport, inst: Instance, mapping: dict[str, Any] | None) -> CheckReport:
    if inst.solu is None or mapping is None:
        return rep
    from dataclasses import replace

    from ..solvers.milp.export import fitness_of

    entry = read_solu(inst.solu).get(inst.name)
    if entry is None or not math.isfinite(entry.value):
        return replace(rep, library=entry)
    objective = mapping["objective"]
    value = fitness_of(objective, entry.value)
    bound = fitness_of(objective, entry.bound) if math.isfinite(entry.bound) else math.nan
    return replace(rep, library=entry, library_fitness=value, library_bound=bound,
                   gap=(value - rep.fitness) / abs(value) if value else math.nan,
                   gap_to_bound=(bound - rep.fitness) / abs(bound) if bound else math.nan)
