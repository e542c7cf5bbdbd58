"""A rigid-job run's settings (:class:`RigidConfig`, checked once), the checks of its inputs, and what it returns
(:class:`RigidResult`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from goodopt.errors import ValidationError
from goodopt.gavel import GAVEL_SCALE_FACTORS, PACKED, POLICY_NAMES, check_entities
from goodopt.gavel.gavel_mechanism import GAVEL_RESET_INTERVAL_S
from goodopt.gavel.generator import check_scale_factors
from goodopt.validation import check_number, check_whole

from .presets import over_rigid_preset, rigid_preset

if TYPE_CHECKING:
    from goodopt.gavel import GavelThroughputs, RigidJob

#: Round mechanisms of a rigid run (:attr:`RigidConfig.mechanism`).
MECHANISMS = ("goodopt", "gavel")


#: Columns of :attr:`RigidResult.jobs`.
RIGID_JOB_COLUMNS = ("job", "entity", "job_type", "scale_factor", "arrival_s", "completion_s", "jct", "duration_s",
                     "in_window", "gpu_s", "shared_s", "n_type_changes")


@dataclass(frozen=True)
class RigidConfig:
    """What a rigid run simulates: the policy, whether it sees GPU types, rounds and the window."""

    policy: str = "max_min_fairness"
    agnostic: bool = False
    round_s: float = 360.0
    window: tuple[int, int] | None = None
    max_time_s: float = 365 * 86400.0
    options: tuple[tuple[str, Any], ...] = ()  # the policy's LP options as sorted (name, value) pairs
    #: Hierarchical policies: entity -> {"weight": w, "policy": "fairness" | "fifo", "share": s}; jobs carry their
    #: entity (``RigidJob.entity``; a rigid sweep draws it with probability ``share``).
    entities: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    #: ``trace``: the drawn jobs and no more; ``until_window``: as in Gavel's simulator, jobs of the same endless
    #: trace keep arriving until the window has finished (:func:`simulate_rigid_steady`; at an overload that
    #: never ends, the run stops at ``max_time_s``).
    arrivals: str = "trace"
    #: How a sweep draws the jobs: ``gavel`` (Gavel's own generator, draw for draw: a seed gives the jobs Gavel's
    #: simulator runs, :mod:`goodopt.gavel.generator`) or ``numpy`` (the same distributions from numpy's
    #: Generator, :func:`goodopt.gavel.gavel_trace`).
    generator: str = "gavel"
    #: Job sizes (GPUs -> probability); empty: Gavel's 1: 0.7, 2: 0.1, 4: 0.15, 8: 0.05 (continuous-multiple);
    #: ``{1: 1.0}``: Gavel's continuous-single setup.
    scale_factors: tuple[tuple[int, float], ...] = ()
    #: A run whose queue (jobs arrived and unfinished) passes this many jobs stops there, marked saturated:
    #: past saturation the queue only grows, and every further round costs more. None: no cut.
    max_active_jobs: int | None = None
    #: The round mechanism: ``goodopt`` (the allocation recomputed whenever the jobs change, one priority order
    #: across types with lease continuation, :mod:`goodopt.gavel.round_mechanism`) or ``gavel`` (Gavel's own: the
    #: allocation recomputed at most every ``reset_interval_s``, per-type queues, time credits since the last
    #: reset, rounds that end when their last job does, :mod:`goodopt.gavel.gavel_mechanism`).
    mechanism: str = "goodopt"
    #: ``mechanism: gavel``: the least time between two recomputations of the allocation (Gavel: 1,920 s).
    reset_interval_s: float = GAVEL_RESET_INTERVAL_S

    @classmethod
    def preset(cls, name: str, policy: str = "max_min_fairness", **changes: Any) -> RigidConfig:  # Any: field values, checked by the class
        """The settings of a paper's simulator for ``policy`` (:data:`goodopt.sim.presets.RIGID_PRESETS`:
        ``gavel``), with ``changes`` over them (LP ``options`` merged option by option)."""
        return cls(policy=policy, **over_rigid_preset(rigid_preset(name, policy), changes))

    def __post_init__(self) -> None:
        if self.arrivals not in ("trace", "until_window"):
            raise ValidationError("arrivals", f"must be trace or until_window, got {self.arrivals!r}")
        if self.mechanism not in MECHANISMS:
            raise ValidationError("mechanism", f"must be one of {MECHANISMS}, got {self.mechanism!r}",
                                  "goodopt (the default) or gavel (Gavel's simulator's own round mechanism)")
        check_number("reset_interval_s", self.reset_interval_s, minimum=0, error=ValidationError)
        if self.mechanism == "gavel" and self.policy in PACKED:
            raise ValidationError("mechanism", f"mechanism gavel does not schedule shared GPUs ({self.policy!r})",
                                  "use mechanism: goodopt for space sharing")
        if self.generator not in ("gavel", "numpy"):
            raise ValidationError("generator", f"must be gavel or numpy, got {self.generator!r}")
        sizes = check_scale_factors(self.scale_factors)
        object.__setattr__(self, "scale_factors", () if sizes == GAVEL_SCALE_FACTORS else tuple(sizes.items()))
        if self.max_active_jobs is not None:
            object.__setattr__(self, "max_active_jobs", check_whole("max_active_jobs", self.max_active_jobs, 1,
                                                                    error=ValidationError))
        if self.policy not in POLICY_NAMES or self.policy == "max_min_fairness_agnostic":
            raise ValidationError("policy", f"unknown rigid-job policy {self.policy!r}",
                                  f"choose one of {[p for p in POLICY_NAMES if p != 'max_min_fairness_agnostic']} "
                                  "(agnostic: true for the heterogeneity-agnostic variant)")
        if self.agnostic and self.policy in PACKED:
            raise ValidationError("agnostic", f"the packed policy {self.policy!r} has no agnostic variant",
                                  f"use agnostic: false, or {PACKED[self.policy]!r}")
        check_number("round_s", self.round_s, minimum=0, strict=True, error=ValidationError)
        check_number("max_time_s", self.max_time_s, minimum=0, strict=True, error=ValidationError)
        object.__setattr__(self, "options", tuple(sorted(dict(self.options).items())))
        object.__setattr__(self, "entities", check_entities(self.entities))
        if self.window is not None:
            lo, hi = (int(v) for v in self.window)
            if not 0 <= lo < hi:
                raise ValidationError("window", f"must be job indices lo < hi, got {self.window}",
                                      "e.g. (100, 400): the jobs that arrive 101st to 400th")
            object.__setattr__(self, "window", (lo, hi))


@dataclass(frozen=True)
class RigidResult:
    """Per-job outcomes (:data:`RIGID_JOB_COLUMNS`) and a summary over the window."""

    jobs: pd.DataFrame
    summary: dict[str, Any]


def check_inputs(jobs: Sequence[RigidJob], throughputs: GavelThroughputs, types: Sequence[str],
                 capacity: Mapping[str, int]) -> None:
    """Refuse GPU types without throughputs, capacities that are not whole GPUs, jobs named twice and jobs that
    fit on no type."""
    for t in types:
        if t not in throughputs.gpu_types:
            raise ValidationError("capacity", f"no throughputs for GPU type {t!r}",
                                  f"use types of {throughputs.source}: {list(throughputs.gpu_types)}")
        if isinstance(capacity[t], bool) or not isinstance(capacity[t], (int, np.integer)) or capacity[t] < 1:
            raise ValidationError(f"capacity.{t}", f"must be a whole number of GPUs >= 1, got {capacity[t]!r}")
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ValidationError("jobs", "job names must be unique", "name each job once")
    for j in jobs:
        if not any(throughputs.rate(t, j.job_type, j.scale_factor) > 0 and capacity[t] >= j.scale_factor
                   for t in types):
            raise ValidationError(f"jobs[{j.name}]", f"{j.job_type!r} at {j.scale_factor} GPUs runs on no type "
                                  f"of {types} with room for it", "drop the job or add GPUs")
