"""Gavel's policies by name, what each one's ``fun`` means, and their options (defaults and checks)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from goodopt.errors import ValidationError
from goodopt.gavel import PACKED, POLICY_NAMES
from goodopt.records import Record, RecordIn
from goodopt.typed_options import TypedOptions

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


def _check_lp_solver(solver: Any, lp_method: str) -> None:
    """An installed solver that solves LPs; ``lp_method`` other than simplex is HiGHS's own."""
    from ..mip_solvers import SOLVERS, missing

    if solver not in SOLVERS:
        raise ValidationError("options.solver", f"must be one of {tuple(SOLVERS)}, got {solver!r}",
                              "highs (the default), scip, cbc or gurobi")
    if not SOLVERS[solver].solves_lps:
        raise ValidationError("options.solver", f"{solver} does not solve LPs (Gavel's policies are LPs)",
                              "use highs, scip, cbc or gurobi")
    why = missing(solver)
    if why is not None:
        raise ValidationError("options.solver", why, SOLVERS[solver].install)
    if solver != "highs" and lp_method != "simplex":
        raise ValidationError("options.lp_method", f"{lp_method!r} is HiGHS's interior point without crossover",
                              "use solver highs for it, or lp_method simplex")


@dataclass(frozen=True, kw_only=True)
class PolicyOptions(TypedOptions):
    """Options every Gavel policy takes: ``time_limit_s`` (None: none), ``backend`` (:data:`BACKENDS`),
    ``lp_method`` (:data:`LP_METHODS`) and ``solver`` (the LP solver). Each policy's own options are the fields of its subclass, each checked
    by its kind when the object is made (:func:`check_policy_options` makes it from a user's mapping)."""

    time_limit_s: float | None = None
    backend: str = "arrays"
    lp_method: str = "simplex"
    #: The LP solver (:data:`goodopt.solvers.mip_solvers.SOLVERS`, those that solve LPs).
    solver: str = "highs"

    def __post_init__(self) -> None:
        for key in self.own():  # the policy's own options first, each by its kind
            _check_kind(key, getattr(self, key))
        _check_lp_solver(self.solver, self.lp_method)
        if self.backend not in BACKENDS:
            raise ValidationError("options.backend", f"must be one of {BACKENDS}, got {self.backend!r}",
                                  "arrays (HiGHS directly, the default) or pyomo (the reference model)")
        if self.lp_method not in LP_METHODS:
            raise ValidationError("options.lp_method", f"must be one of {tuple(LP_METHODS)}, got {self.lp_method!r}",
                                  "simplex (a vertex of the optimal face, the default) or ipm (an interior point of "
                                  "it, as Gavel's interior-point solver returns)")
        t = self.time_limit_s
        if t is not None and (isinstance(t, bool) or not isinstance(t, int | float) or not 0 < t <= 1e6):
            raise ValidationError("options.time_limit_s", f"must be a number of seconds in (0, 1e6], got {t!r}",
                                  "omit it for no limit")

    @classmethod
    def own(cls) -> Record:
        """The policy's own options (not the common four) with their defaults."""
        common = {f.name for f in fields(PolicyOptions)}
        return {f.name: f.default for f in fields(cls) if f.name not in common}

    def as_dict(self) -> Record:
        """Every option by name: the policy's own first, then the common four."""
        common = [f.name for f in fields(PolicyOptions)]
        return {**{k: getattr(self, k) for k in self.own()}, **{k: getattr(self, k) for k in common}}


@dataclass(frozen=True, kw_only=True)
class MaxMinOptions(PolicyOptions):
    second_stage: bool = True
    tolerance: float = 1e-6
    scale_by_size: bool = False


@dataclass(frozen=True, kw_only=True)
class ThroughputOptions(PolicyOptions):
    normalise: bool = True


@dataclass(frozen=True, kw_only=True)
class MinCostOptions(PolicyOptions):
    floor: float = 1.0


@dataclass(frozen=True, kw_only=True)
class FinishTimeOptions(PolicyOptions):
    rel_tol: float = 1e-4
    max_lps: int = 60


@dataclass(frozen=True, kw_only=True)
class FifoOptions(PolicyOptions):
    aware: bool = True


@dataclass(frozen=True, kw_only=True)
class WaterFillingOptions(PolicyOptions):
    tolerance: float = 1e-6
    max_lps: int = 2000


#: Policy name -> its options class.
POLICY_OPTION_CLASSES: dict[str, type[PolicyOptions]] = {
    "max_min_fairness": MaxMinOptions,
    "max_min_fairness_agnostic": MaxMinOptions,
    "max_total_throughput": ThroughputOptions,
    "min_cost": MinCostOptions,
    "finish_time_fairness": FinishTimeOptions,
    "min_makespan": PolicyOptions,
    "fifo": FifoOptions,
    "max_min_fairness_water_filling": WaterFillingOptions,
}
POLICY_OPTION_CLASSES.update({packed: POLICY_OPTION_CLASSES[base] for packed, base in PACKED.items()})
#: Options per policy with their defaults (the common four not listed).
POLICY_OPTIONS: dict[str, dict[str, Any]] = {name: cls.own() for name, cls in POLICY_OPTION_CLASSES.items()}


#: How each policy option is checked: bool, or ``(kind, lo, hi, open_low)`` for a number (``whole`` or not) in
#: ``[lo, hi]`` (``(lo, hi]`` when ``open_low``).
_OPTION_KINDS = {"second_stage": bool, "normalise": bool, "aware": bool, "scale_by_size": bool,
                 "tolerance": ("number", 0.0, 1.0, True), "rel_tol": ("number", 0.0, 1.0, True),
                 "floor": ("number", 0.0, 1e6, False), "max_lps": ("whole", 1, 1_000_000, False)}


def check_policy_options(policy: str, options: RecordIn | PolicyOptions | None) -> PolicyOptions:
    """The typed options of Gavel policy ``policy`` (defaults filled in), each checked by its kind; an error
    names the option (``options.NAME``) and what it takes. The policy's own options object (checked when it
    was made, and frozen) is taken as it is: a caller solving many times checks once."""
    if policy not in POLICY_OPTIONS:
        raise ValidationError("policy", f"unknown Gavel policy {policy!r}", f"choose one of {sorted(POLICIES)}")
    if type(options) is POLICY_OPTION_CLASSES[policy]:
        return options
    if options is not None and not isinstance(options, Mapping):
        raise ValidationError("options", f"must map option -> value, got {options!r}",
                              f"e.g. {{{', '.join(f'{k}: {v}' for k, v in POLICY_OPTIONS[policy].items())}}}")
    return POLICY_OPTION_CLASSES[policy].build(options, owner=f"policy {policy!r}", listed_as="gavel")


def _check_kind(key: str, value: Any) -> None:
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
