"""One front study: the exact front, heuristic fronts over seeds (warm from greedy), the optima of the fitness at
each paper's p on the same axes, and the indicators of every heuristic front against the exact one."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import ValidationError
from ..problem import AllocationProblem
from ..records import Record, RecordIn
from .attainment import AttainmentSurface, attainment_surfaces, surface_front
from .criteria import Criterion, evaluate_criteria, parse_criteria
from .exact import ExactFrontOptions, exact_front
from .front import Front
from .heuristic import ALGORITHMS, HeuristicFrontOptions, heuristic_front
from .indicators import indicators

log = logging.getLogger(__name__)

#: The methods that find a front: the exact one and pymoo's algorithms.
FRONT_METHODS = ("exact", *ALGORITHMS)

#: The fitness powers drawn beside the front: efficiency's, Sia's, Pollux's, and the worst job's.
PAPER_POWERS = {"p=1": 1.0, "Sia p=-0.5": -0.5, "Pollux p=-1": -1.0, "p=-inf": -np.inf}


@dataclass(frozen=True)
class ParetoStudy:
    """The fronts (exact first), the certified ``milp`` optimum at each of :data:`PAPER_POWERS` (``label ->
    criteria values``), one indicator row per heuristic front, each heuristic's attainment surfaces over its
    seeds (:mod:`~goodopt.pareto.attainment`) and one indicator row per surface (``level``, ``percentile``,
    ``seeds``)."""

    criteria: tuple[Criterion, ...]
    fronts: tuple[Front, ...]
    powers: dict[str, tuple[float, ...]] = field(default_factory=dict)
    indicator_rows: tuple[dict[str, Any], ...] = ()
    surfaces: tuple[AttainmentSurface, ...] = ()
    attainment_rows: tuple[dict[str, Any], ...] = ()

    def point_rows(self) -> list[Record]:
        return [row for f in self.fronts for row in f.rows()]


def pareto_study(problem: AllocationProblem, objectives: str | Sequence[str] = "efficiency,fairness",
                 methods: Sequence[str] = ("exact", "nsga2", "nsga3"), seeds: Sequence[int] = (0,),
                 exact: ExactFrontOptions | None = None, heuristic: HeuristicFrontOptions | None = None,
                 prices: Mapping[str, float] | None = None) -> ParetoStudy:
    """The study of ``problem``'s front (see the module). Heuristics start from greedy's allocation."""
    criteria = parse_criteria(objectives, problem, prices)
    unknown = [m for m in methods if m != "exact" and m not in ALGORITHMS]
    if unknown or not methods:
        raise ValidationError("methods", f"unknown front method(s) {unknown or methods!r}",
                              f"use exact and any of {', '.join(ALGORITHMS)}")
    fronts: list[Front] = []
    reference = None
    if "exact" in methods:
        reference = exact_front(problem, criteria, exact)
        fronts.append(reference)
        log.info("exact front: %d points, %d MILPs, %.1f s of CPU", len(reference.points), reference.solves,
                 reference.cpu_s)
    start = [greedy_start(problem)]
    rows: list[dict[str, Any]] = []
    surfaces: list[AttainmentSurface] = []
    for name in (m for m in methods if m != "exact"):
        own = [heuristic_front(problem, criteria, name, replace(heuristic or HeuristicFrontOptions(), seed=seed),
                               seeds=start) for seed in seeds]
        fronts += own
        surfaces += attainment_surfaces(own) if own else ()
        if reference is not None:
            rows += [{"method": name, "seed": f.seed, "points": len(f.points), "cpu_s": f.cpu_s,
                      **vars(indicators(f, reference))} for f in own]
    return ParetoStudy(criteria=criteria, fronts=tuple(fronts), powers=_powers(problem, criteria),
                       indicator_rows=tuple(rows), surfaces=tuple(surfaces),
                       attainment_rows=_attainment_rows(surfaces, reference))


def _attainment_rows(surfaces: Sequence[AttainmentSurface], reference: Front | None) -> tuple[dict[str, Any], ...]:
    """One indicator row per attainment surface against the exact front (none without it)."""
    if reference is None:
        return ()
    return tuple({"method": s.method, "level": s.level, "percentile": s.percentile, "seeds": s.n_seeds,
                  "points": len(s.values), **vars(indicators(surface_front(s, reference), reference))}
                 for s in surfaces)


def front_options(method: str, options: RecordIn | None = None,
                  seed: int = 0) -> ExactFrontOptions | HeuristicFrontOptions:
    """The checked options of front method ``method`` (:data:`FRONT_METHODS`): the exact front's
    (:class:`ExactFrontOptions`) or a heuristic's (:class:`HeuristicFrontOptions`, with ``seed``)."""
    options = dict(options or {})
    cls = ExactFrontOptions if method == "exact" else HeuristicFrontOptions
    known = [f for f in cls.__dataclass_fields__ if f != "seed"]
    unknown = [k for k in options if k not in known]
    if method not in FRONT_METHODS or unknown:
        raise ValidationError("options" if unknown else "method", f"unknown option {unknown[0]!r}" if unknown
                              else f"unknown front method {method!r}",
                              f"{method}'s options: {', '.join(known)}" if unknown else
                              f"use one of {', '.join(FRONT_METHODS)}")
    if method == "exact":
        return ExactFrontOptions(**options)
    return HeuristicFrontOptions(**options, seed=seed)


def greedy_start(problem: AllocationProblem) -> np.ndarray:
    """Greedy's allocation of ``problem``, the heuristics' start."""
    from ..formulations.configs import enumerate_configs
    from ..solvers.heuristics import greedy

    return greedy(problem, enumerate_configs(problem))[0]


def _powers(problem: AllocationProblem, criteria: tuple[Criterion, ...]) -> dict[str, tuple[float, ...]]:
    """The criteria of the certified optimum of the fitness at each paper's p (uncertified ones left out)."""
    from ..solvers.api import solve

    out = {}
    for label, p in PAPER_POWERS.items():
        res = solve(replace(problem, p=p), "milp")
        if str(res.status) != "optimal":
            log.warning("milp at %s stopped %s: left out of the front's figure", label, res.status)
            continue
        values, _ = evaluate_criteria(problem, criteria, res.x[None])
        out[label] = tuple(float(v) for v in values[0])
    return out
