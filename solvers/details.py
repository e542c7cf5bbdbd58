"""What a method reports beyond a result's guaranteed fields: one frozen record per kind of method.

:attr:`goodopt.solvers.result.SolveResult.extra` is one of these records: code reads its typed attributes
(``res.extra.stages``, ``res.extra.final_population``); it is also a read-only mapping of the fields a run
set (``res.extra["proof"]``, ``res.extra.get("pareto")``, ``dict(res.extra)``), the form results files keep.
A method's runner hands its details over as a mapping (:attr:`goodopt.solvers.result.MethodOutcome.extra`) and :func:`details_of`
turns it into the method's record, refusing a key the record does not declare; a plug-in method's details
stay a mapping (:class:`PluginDetails`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Self

from goodopt.errors import SolverError
from goodopt.records import Record


@dataclass(frozen=True)
class Details(Mapping[str, Any]):
    """Base of the records: a read-only mapping of the fields that are set (not None)."""

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Self:  # Any: each field's value, typed by the record
        """The record from a runner's mapping; a key the record does not declare is a defect of the method."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise SolverError(f"{cls.__name__}: the method reported {unknown}, which its record does not declare")
        return cls(**values)

    def _set(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None]

    def __getitem__(self, key: str) -> Any:  # Any: the field's value
        if key in self._set():
            return getattr(self, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._set())

    def __len__(self) -> int:
        return len(self._set())

    def as_dict(self) -> Record:
        """The fields that are set, by name (what results files keep)."""
        return {k: getattr(self, k) for k in self._set()}


@dataclass(frozen=True)
class NoDetails(Details):
    """A method that reports nothing beyond the result's fields (equal share)."""


@dataclass(frozen=True)
class GreedyDetails(Details):
    #: Moves the greedy heuristic made.
    steps: int | None = None


@dataclass(frozen=True)
class BruteForceDetails(Details):
    #: Allocations enumerated.
    n_allocations: int | None = None


@dataclass(frozen=True)
class GeneticDetails(Details):
    """The genetic methods (``ga``, ``nsga2``; every engine)."""

    generations: int | None = None
    evaluations: int | None = None
    engine: str | None = None
    #: The last population (P, J, N), which the simulator's Pollux policy seeds its next round with.
    final_population: Any = None  # Any: an integer array, kept as the engine returned it
    #: ``nsga2``: the front, fewest nodes first, as (nodes used, fitness) rows and as allocations (F, J, N).
    pareto: list[Record] | None = None
    pareto_allocations: Any = None  # Any: an integer array of the front's allocations


@dataclass(frozen=True)
class GavelDetails(Details):
    """The ``gavel`` method: the policy's time fractions and how they were realised."""

    fractions: Record | None = None
    policy: str | None = None
    policy_objective: float | None = None
    lp_stages: list[Record] | None = None
    unplaced_jobs: list[str] | None = None
    pair_fractions: Record | None = None


@dataclass(frozen=True)
class MilpDetails(Details):
    """The exact methods (``milp``, ``milp-pwl``): their stages, proof and what each stage reported."""

    n_configs: int | None = None
    #: Every model solved, in order, as its stage record (model, status, objective, bound, times, sizes).
    stages: list[Record] | None = None
    solver: Record | None = None
    objective_scale: Record | None = None
    #: Why the answer is optimal (which stage's bound meets which incumbent), when it is.
    proof: str | None = None
    incumbent: str | None = None
    warm_start: str | None = None
    rescales: int | None = None
    placement_rescales: int | None = None
    certify_improved: int | None = None
    pattern_types: list[str] | None = None
    pattern_rows_skipped: list[str] | None = None
    placement_cuts: int | None = None
    placement_failed_jobs: list[str] | None = None
    skipped: str | None = None
    lp_pricing: Record | None = None
    reduced_cost_fixing: Record | None = None
    written_model: Record | None = None
    second_opinion: str | None = None
    #: ``configs: sia``: the status and bound of the restricted problem (not the problem's).
    restricted_status: str | None = None
    restricted_bound: float | None = None
    #: ``milp-pwl``: its classes, breakpoints and the error bound of its linearisation.
    n_classes: int | None = None
    pwl_error_bound: float | None = None
    pwl_error_bound_total: float | None = None
    breakpoints: int | None = None
    spacing: str | None = None


@dataclass(frozen=True)
class PluginDetails(Details):
    """A plug-in method's details, kept as the mapping it gave."""

    reported: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Self:  # Any: whatever the plug-in reports
        return cls(reported=dict(values))

    def _set(self) -> list[str]:
        return [k for k, v in self.reported.items() if v is not None]

    def __getitem__(self, key: str) -> Any:  # Any: the plug-in's value
        if key in self.reported and self.reported[key] is not None:
            return self.reported[key]
        raise KeyError(key)

    def as_dict(self) -> Record:
        return {k: v for k, v in self.reported.items() if v is not None}


#: Method name -> its details record (a method not listed -- a plug-in's -- keeps a mapping).
DETAILS: dict[str, type[Details]] = {
    "milp": MilpDetails, "milp-pwl": MilpDetails, "ga": GeneticDetails, "nsga2": GeneticDetails,
    "gavel": GavelDetails, "brute-force": BruteForceDetails, "greedy": GreedyDetails, "equal-share": NoDetails,
}


def details_of(method: str, values: Mapping[str, Any] | Details) -> Details:  # Any: the runner's values
    """The details record of ``method`` from what its runner reported."""
    if isinstance(values, Details):
        return values
    return DETAILS.get(method, PluginDetails).of(values)
