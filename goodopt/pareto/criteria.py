"""The criteria of a multi-objective allocation problem, as data.

Each criterion is a number per allocation, computed from the evaluator's
speedups (so every front, exact or heuristic, is scored by the one evaluator),
with its direction:

* ``efficiency`` (maximised): the weighted arithmetic mean of the jobs' shifted
  speedups ``t_j = S_j + eps`` (an idle job enters with the problem's idle
  value), i.e. the fitness at ``p = 1``;
* ``fairness`` (maximised): their weighted power mean at ``p`` (``fairness``:
  ``p = -inf``, the worst job's; ``fairness:-1``, Pollux's p-mean), i.e. the
  fitness at that ``p``;
* ``cost`` (minimised): the price of the GPUs the allocation holds, USD per hour,
  by GPU type (:data:`goodopt.prices.PRICES_PER_GPU_H`, or the prices passed in).

In the configuration model each criterion is linear in the choice of
configurations, except the fairness power mean, whose level set is linear:
``Σ_j w_j t_j^p <= W f^p`` for ``p < 0`` (``>=`` for ``p > 0``, logs at
``p = 0``), so an epsilon-constraint on any criterion is one row or a set of
column bounds (:mod:`goodopt.pareto.exact`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..arrays import Array
from ..errors import ValidationError
from ..evaluator import Evaluator
from ..fitness import power_mean
from ..prices import price_per_gpu_h
from ..problem import AllocationProblem

#: The criteria a front may use, each with its direction (True: maximised).
KINDS = {"efficiency": True, "fairness": True, "cost": False}


@dataclass(frozen=True)
class Criterion:
    """One objective: ``kind`` (a key of :data:`KINDS`), the fairness power ``p``, the cost's ``prices`` per GPU
    type (USD per GPU-hour, in the problem's type order)."""

    kind: str
    p: float = -math.inf
    prices: tuple[float, ...] = ()

    @property
    def maximise(self) -> bool:
        return KINDS[self.kind]

    @property
    def name(self) -> str:
        """The column name of the criterion in tables: ``efficiency``, ``fairness`` (min) or ``fairness_p-1``,
        ``cost``."""
        if self.kind == "fairness" and self.p != -math.inf:
            return f"fairness_p{self.p:g}"
        return self.kind

    def values(self, problem: AllocationProblem, pop: Array, speedups: Array) -> Array:
        """The criterion of each allocation. Shapes: pop (P, J, N), speedups (P, J) -> (P,)."""
        if self.kind == "cost":
            per_node = np.asarray(self.prices, float)[problem.node_type]  # (N,)
            return np.einsum("pjn,n->p", pop, per_node)
        t = problem.shifted(speedups)
        p = 1.0 if self.kind == "efficiency" else self.p
        return np.asarray(power_mean(t, p, problem.weights), float)


def parse_criteria(spec: str | Sequence[str], problem: AllocationProblem,
                   prices: Mapping[str, float] | None = None) -> tuple[Criterion, ...]:
    """Criteria from ``"efficiency,fairness[:P],cost"`` (or a list of those names); efficiency comes first (the
    exact front maximises it under the others' levels)."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[Criterion] = []
    for raw in (n.strip() for n in names):
        kind, _, arg = raw.partition(":")
        if kind not in KINDS:
            raise ValidationError("objectives", f"unknown criterion {raw!r}", f"use {', '.join(KINDS)}")
        if arg and kind != "fairness":
            raise ValidationError("objectives", f"{kind} takes no argument, got {raw!r}",
                                  "only fairness takes a power: fairness:-1")
        if kind == "fairness":
            out.append(Criterion("fairness", p=_power(arg, raw)))
        elif kind == "cost":
            out.append(Criterion("cost", prices=_prices(problem, prices or {})))
        else:
            out.append(Criterion("efficiency"))
    kinds = [c.kind for c in out]
    if len(set(kinds)) != len(kinds) or not 2 <= len(out) <= 3:
        raise ValidationError("objectives", f"must name two or three different criteria, got {names!r}",
                              "e.g. efficiency,fairness or efficiency,fairness,cost")
    if "efficiency" not in kinds:
        raise ValidationError("objectives", "must include efficiency (the criterion the exact front maximises)",
                              "e.g. efficiency,fairness")
    return tuple(sorted(out, key=lambda c: list(KINDS).index(c.kind)))


def _power(arg: str, raw: str) -> float:
    if not arg:
        return -math.inf
    try:
        p = float(arg)
    except ValueError:
        raise ValidationError("objectives", f"fairness power must be a number or -inf, got {raw!r}",
                              "e.g. fairness:-1 or fairness:-inf") from None
    if math.isnan(p) or p >= 1:
        raise ValidationError("objectives", f"fairness power must be below 1 (1 is efficiency), got {raw!r}",
                              "e.g. fairness:-1 or fairness:-inf")
    return p


def _prices(problem: AllocationProblem, prices: Mapping[str, float]) -> tuple[float, ...]:
    out = tuple(price_per_gpu_h(t, prices) for t in problem.type_names)
    missing = [t for t, v in zip(problem.type_names, out) if not (math.isfinite(v) and v >= 0)]
    if missing:
        raise ValidationError("prices", f"cost needs a price per GPU-hour >= 0 for {', '.join(missing)}",
                              "pass prices, e.g. --price " + f"{missing[0]}=1.5")
    return out


def evaluate_criteria(problem: AllocationProblem, criteria: Sequence[Criterion], pop: Array,
                      evaluator: Evaluator | None = None) -> tuple[Array, Array]:
    """``(values, feasible)``: each allocation's criteria (P, K) and whether it is feasible (P,), from
    ``evaluator`` (the problem's, built once by callers that score many populations). Shapes: pop (P, J, N)."""
    pop = np.asarray(pop, np.int64).reshape(-1, problem.n_jobs, problem.n_nodes)
    res = (evaluator or problem.evaluator()).evaluate(pop)
    values = np.column_stack([c.values(problem, pop, res.speedups) for c in criteria])
    return values, res.violation == 0
