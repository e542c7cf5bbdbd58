"""The LPs of one policy solve, in sequence: their log, the time budget, and reading their fractions."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from goodopt.formulations import gavel as fg

from goodopt.arrays import Array
from goodopt.errors import SolverError, ValidationError
from goodopt.gavel import PACKED
from goodopt.gavel.throughput_matrix import ThroughputMatrix

from ..mip_solvers import Limits, adapter
from ..mip_solvers.highs_arrays import HighsSession
from ..mip_solvers.outcome import MilpOutcome
from ..mip_solvers.pyomo_route import solve_model
from ..result import Termination
from .policy_options import LP_METHODS

log = logging.getLogger(__name__)

#: What a policy's solve function returns: ``(X (J, K), Y (P, K) or None, objective, status)``.
PolicyAnswer = tuple[Array, Array | None, float, Termination]


@dataclass(frozen=True)
class Solved:
    """An arrays LP and its column values (None without a solution)."""

    arrays: fg.GavelArrays
    values: Array | None


class Runner:
    """Solves LPs in sequence, keeping their log and the time budget."""

    def __init__(self, matrix: ThroughputMatrix, time_limit_s: float | None, backend: str = "arrays",
                 lp_method: str = "simplex", solver: str = "highs") -> None:
        self.mx = matrix
        self.solver = solver
        self.lp_method = lp_method
        self.highs_options = LP_METHODS[lp_method]
        self.deadline = None if time_limit_s is None else time.perf_counter() + float(time_limit_s)
        self.stages: list[dict[str, Any]] = []
        self.backend = backend

    def solve(self, name: str, **build: Any) -> tuple[Any, MilpOutcome]:  # Any: the builder's options; the model of either route
        model, out = self._solve(self.highs_options, build)
        fallback = bool(self.highs_options) and out.termination not in (Termination.OPTIMAL, Termination.INFEASIBLE,
                                                                        Termination.TIME_LIMIT)
        if fallback:  # the interior point did not conclude (e.g. a feasibility LP): simplex settles it
            log.debug("LP %r: %s without crossover ended %s; solved again by simplex", name,
                      self.highs_options.get("solver"), out.termination)
            model, out = self._solve({}, build)
        self.record(name, out, **({"fallback": "simplex"} if fallback else {}))
        return model, out

    def record(self, name: str, out: MilpOutcome, **extra: Any) -> None:  # Any: JSON-shaped stage details
        """Log one solved LP."""
        self.stages.append({"lp": name, "status": str(out.termination), "objective": out.objective,
                            "solve_s": out.solve_s + out.compile_s, **extra})

    def remaining(self) -> float | None:
        """Seconds left of the time limit (None: no limit)."""
        return None if self.deadline is None else max(self.deadline - time.perf_counter(), 1e-3)

    def _solve(self, highs_options: Mapping[str, Any], build: dict[str, Any]) -> tuple[Any, MilpOutcome]:
        remaining = self.remaining()
        if self.backend == "pyomo":
            model = fg.build_model(self.mx, **build)
            return model, solve_model(model, time_limit_s=remaining, highs_options=highs_options, solver=self.solver)
        arrays = fg.build_arrays(self.mx, **build)
        if self.solver == "highs":
            out, values = HighsSession(arrays.model, highs_options=highs_options).solve(time_limit_s=remaining)
        else:
            out, values = adapter(self.solver).solve(arrays.model, Limits(time_limit_s=remaining))
        out = dataclasses.replace(out, objective=arrays.sense * out.objective, bound=arrays.sense * out.bound)
        return Solved(arrays, values), out


def for_policy(matrix: ThroughputMatrix, policy: str) -> ThroughputMatrix:
    """The matrix a policy solves: with its pairs for a packed policy (which needs them), without otherwise."""
    if policy in PACKED:
        if matrix.pairs is None:
            raise ValidationError("pairs", f"policy {policy!r} needs the jobs' pair throughputs (space sharing)",
                                  f"give the matrix pairs and pair_throughput, or use {PACKED[policy]!r}")
        return matrix
    if matrix.pairs is None:
        return matrix
    return dataclasses.replace(matrix, pairs=None, pair_throughput=None)


def solution(model: Any, mx: ThroughputMatrix) -> tuple[Array, Array]:  # model: a built Gavel model of either route (pyomo or arrays)
    """``(X, Y)`` of a solved LP of either backend."""
    if isinstance(model, Solved):
        return model.arrays.fractions(model.values)
    return fg.fractions(model, mx), fg.pair_fractions(model, mx)


def need(mx: ThroughputMatrix, name: str, policy: str) -> Array:
    v: Array | None = getattr(mx, name)
    if v is None:
        raise ValidationError(name, f"is required by policy {policy!r}",
                              f"give the matrix its {name}; from a scenario (solve, compare): --option "
                              f"{name}={{JOB: VALUE, ...}}" + (" for every job" if name == "remaining_steps" else ""))
    return v


def require(out: MilpOutcome, policy: str, stage: str, hint: str = "check the throughput matrix") -> None:
    if out.termination == Termination.OPTIMAL and out.has_solution:
        return
    raise SolverError(f"Gavel policy {policy!r}, LP {stage!r}: status {out.termination} ({out.raw_status}), "
                      f"objective {out.objective}, bound {out.bound}; {hint}")
