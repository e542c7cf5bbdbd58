"""The objective of an allocation problem: how allocations are scored (the fairness knob ``p``, ``eps``, the
goodput a job's speedups are relative to, restart delays, Sia's idle penalty), and its reading from a scenario's
``objective`` mapping."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .errors import ScenarioError
from .fitness import check_p
from .validation import Reader, check_number

BASES = ("fair-share", "one-gpu", "min-config")


#: Finest batch-size search (Pollux uses 50 candidates; each adds a column to every speedup table).
MAX_BATCH_CANDIDATES = 4096


PRESETS = ("pollux", "sia")


#: Checkpoint-restore delays per application measured by Sia's authors (seconds).
SIA_RESTART_DELAYS_S = {"cifar10": 30.0, "deepspeech2": 25.0, "imagenet": 250.0, "bert": 120.0, "yolov3": 45.0}


@dataclass(frozen=True)
class Objective:
    """How allocations are scored (see :mod:`goodopt.fitness`).

    ``base`` is the goodput a job's speedups are relative to: its fair share
    (Pollux), one GPU of the base type, or ``min-config`` — its smallest
    positive goodput over every GPU type and count (Sia's normalisation).
    ``restart_delays_s`` overrides ``restart_delay_s`` per application in the
    re-allocation factor (Sia measured one per application). ``idle_penalty``
    (Sia's ``λ_n``) is the value ``h(S)`` a job holding no GPUs adds to the
    objective sum in place of ``h(eps)``; it is entered into the power mean as
    the speedup ``h^{-1}(idle_penalty)``, so a job is given GPUs only where its
    ``h(S + eps)`` beats the penalty.
    """

    p: float = -1.0
    eps: float = 1e-3
    base: str = "fair-share"
    base_gpu_type: str | None = None
    restart_delay_s: float = 30.0
    interference_avoidance: bool = True
    n_batch_candidates: int = 50
    restart_delays_s: Mapping[str, float] = field(default_factory=dict)
    idle_penalty: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", check_p(self.p))
        check_number("objective.eps", self.eps, minimum=0, strict=True)
        check_number("objective.restart_delay_s", self.restart_delay_s, minimum=0)
        if self.base not in BASES:
            raise ScenarioError("objective.base", f"unknown base {self.base!r}", f"choose one of {list(BASES)}")
        if not 2 <= int(self.n_batch_candidates) <= MAX_BATCH_CANDIDATES:
            raise ScenarioError("objective.n_batch_candidates", f"must lie in [2, {MAX_BATCH_CANDIDATES}]")
        delays = dict(self.restart_delays_s or {})
        for app, d in delays.items():
            check_number(f"objective.restart_delays_s.{app}", d, minimum=0)
        object.__setattr__(self, "restart_delays_s", MappingProxyType({k: float(v) for k, v in delays.items()}))
        if self.idle_penalty is not None:
            check_number("objective.idle_penalty", self.idle_penalty)
            if not math.isfinite(self.p):
                raise ScenarioError("objective.idle_penalty", f"needs a finite p, got p={self.p}",
                                    "drop idle_penalty or choose a finite p")
            if self.p != 0 and not self.idle_penalty > 0:
                raise ScenarioError("objective.idle_penalty", f"must be > 0 for p={self.p:g}",
                                    "Sia uses 1.1 with p=-0.5")

    @classmethod
    def sia(cls, **changes: Any) -> Objective:  # Any: field values, checked by the class
        """Sia's choices: p = -0.5, min-config normalisation, idle penalty 1.1, per-app restart delays."""
        base = dict(p=-0.5, base="min-config", idle_penalty=1.1, restart_delays_s=dict(SIA_RESTART_DELAYS_S))
        return cls(**{**base, **changes})

    def restart_delay_of(self, application: str) -> float:
        """Restart delay of one application (its override or ``restart_delay_s``)."""
        return float(self.restart_delays_s.get(application, self.restart_delay_s))

    def idle_value(self) -> float | None:
        """Speedup an idle job enters the power mean with (None: ``eps``)."""
        if self.idle_penalty is None:
            return None
        if self.p == 0:
            return float(math.exp(self.idle_penalty))
        return float(self.idle_penalty ** (1.0 / self.p))


def objective_from_dict(data: Any) -> Objective:  # Any: parsed YAML, checked here
    """An :class:`Objective` from a scenario's ``objective`` mapping (``preset`` first, then fields)."""
    o = Reader(data, "objective")
    preset = o.string("preset", "pollux", choices=PRESETS)
    d = Objective.sia() if preset == "sia" else Objective()
    delays = {}
    if o.has("restart_delays_s"):
        dr = o.sub("restart_delays_s")
        delays = {app: dr.number(app, minimum=0) for app in dr.keys()}
        dr.done()
    objective = Objective(
        p=o.number("p", d.p, allow_inf=True),
        eps=o.number("eps", d.eps, minimum=0, strict=True),
        base=o.string("base", d.base, choices=BASES),
        base_gpu_type=o.optional("base_gpu_type", d.base_gpu_type),
        restart_delay_s=o.number("restart_delay_s", d.restart_delay_s, minimum=0),
        interference_avoidance=o.boolean("interference_avoidance", d.interference_avoidance),
        n_batch_candidates=o.integer("n_batch_candidates", d.n_batch_candidates, minimum=2,
                                     maximum=MAX_BATCH_CANDIDATES),
        restart_delays_s=delays if o.has("restart_delays_s") else d.restart_delays_s,
        idle_penalty=o.number("idle_penalty", d.idle_penalty) if o.has("idle_penalty") else d.idle_penalty,
    )
    o.done()
    return objective
