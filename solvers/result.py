"""The result of every solver: what came back, and why the solver stopped.

The two are kept apart: :attr:`SolveResult.status` says why the method
stopped (a :class:`Termination`), :attr:`SolveResult.has_solution` whether an
allocation came back. ``fitness`` is always the evaluator's re-score of the
returned allocation, whatever the method believed.
"""

from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, TypeVar

import numpy as np

from goodopt.arrays import Array
from goodopt.errors import SolverError
from goodopt.problem import AllocationProblem
from goodopt.records import Record

from .details import Details, NoDetails

D = TypeVar("D", bound=Details)


class Termination(str, Enum):
    """Why a method stopped."""

    OPTIMAL = "optimal"            # proven optimal (within the certification tolerance)
    GAP_LIMIT = "gap_limit"        # stopped at the requested relative gap
    TIME_LIMIT = "time_limit"
    ITERATION_LIMIT = "iteration_limit"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    COMPLETED = "completed"        # a heuristic ran to its end; no optimality proof
    NUMERICAL = "numerical"        # the solver claimed an answer its numbers do not support (see message)
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


#: Relative gap below which a solver's "optimal" is reported as OPTIMAL.
CERTIFIED_GAP = 1e-6


@dataclass(frozen=True)
class MethodOutcome:
    """What a method hands back to :func:`goodopt.solve`, which re-scores it into a :class:`SolveResult`.

    ``alloc`` (J, N) or None; ``status`` why it stopped; ``bound`` an upper
    bound on the optimal fitness (NaN: none); ``objective``/``objective_bound``
    in the model's own units; the rest feeds :class:`SolverStats`.
    """

    alloc: Any
    status: Termination
    bound: float = float("nan")
    objective: float = float("nan")
    objective_bound: float = float("nan")
    build_s: float = 0.0
    solve_s: float = 0.0
    nodes: int | None = None
    solver: str = ""
    solver_version: str = ""
    raw_status: str = ""
    n_variables: int | None = None
    n_constraints: int | None = None
    n_configs: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    message: str = ""


@dataclass
class SolverStats:
    """Cost and internals of one solve."""

    build_s: float = 0.0
    solve_s: float = 0.0
    total_s: float = 0.0
    n_evaluations: int = 0
    nodes: int | None = None
    solver: str = ""
    solver_version: str = ""
    raw_status: str = ""
    n_variables: int | None = None
    n_constraints: int | None = None
    n_configs: int | None = None
    #: The incumbent and bound over time, ``(seconds, incumbent, bound)`` in fitness units (NaN: none yet): the
    #: exact methods add a point each time their best placed allocation (re-scored) or their proven bound
    #: improves, the GA one per generation (its best fitness, no bound).
    trace: tuple[tuple[float, float, float], ...] = ()


@dataclass
class SolveResult:
    """Allocation, fitness, bound and gap of one method on one problem.

    Guaranteed fields: ``x`` (J, N) allocation (zeros when ``has_solution`` is
    false), ``fun`` = ``fitness`` (the evaluator's re-score; NaN without a
    solution), ``status`` (:class:`Termination`), ``message``, ``bound`` (an
    upper bound on the optimal fitness, NaN when unknown), ``gap`` (relative,
    ``(bound - fitness) / bound``, NaN when unknown), ``stats``.
    """

    method: str
    x: Array
    fitness: float
    status: Termination
    has_solution: bool
    message: str = ""
    bound: float = float("nan")
    objective: float = float("nan")
    objective_bound: float = float("nan")
    feasible: bool = True
    violations: list[str] = field(default_factory=list)
    speedups: Array | None = None
    stats: SolverStats = field(default_factory=SolverStats)
    options: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    #: What the method reports beyond these fields: its record (:mod:`goodopt.solvers.details`), typed
    #: attributes that also read as a mapping of the fields it set.
    extra: Details = field(default_factory=NoDetails)
    #: The problem's job and node names (rows and columns of ``x``), for the notebook view.
    job_names: tuple[str, ...] = ()
    node_names: tuple[str, ...] = ()

    def details(self, kind: type[D]) -> D:
        """``extra`` as the record ``kind`` its method reports (:mod:`goodopt.solvers.details`); another
        method's record is refused."""
        if not isinstance(self.extra, kind):
            raise SolverError(f"method {self.method!r} reports {type(self.extra).__name__}, not {kind.__name__}")
        return self.extra

    @property
    def fun(self) -> float:
        return self.fitness

    def _repr_html_(self) -> str:
        """A notebook's view: why it stopped and what came back, then the allocation (each job's GPUs per node
        and its speedup)."""
        cells = [("method", self.method), ("status", str(self.status)), ("fitness", f"{self.fitness:.6g}"),
                 ("bound", f"{self.bound:.6g}"), ("gap", f"{self.gap:.3g}"),
                 ("seconds", f"{self.stats.total_s:.3g}"), ("feasible", str(self.feasible)),
                 ("message", html.escape(self.message))]
        head = "".join(f"<th>{k}</th>" for k, _ in cells)
        body = "".join(f"<td>{html.escape(v) if k != 'message' else v}</td>" for k, v in cells)
        return f"<table><tr>{head}</tr><tr>{body}</tr></table>{self._allocation_html()}"

    def _allocation_html(self) -> str:
        names, nodes = self.job_names, self.node_names
        if not self.has_solution or self.x is None or np.size(self.x) == 0:
            return ""
        x = np.asarray(self.x)
        jobs = names if len(names) == x.shape[0] else tuple(f"job {j}" for j in range(x.shape[0]))
        cols = nodes if len(nodes) == x.shape[1] else tuple(f"node {n}" for n in range(x.shape[1]))
        rows = []
        for j, name in enumerate(jobs):
            held = ", ".join(f"{html.escape(str(cols[n]))}: {int(x[j, n])}" for n in np.flatnonzero(x[j]))
            s = "" if self.speedups is None else f"{float(self.speedups[j]):.4g}"
            rows.append(f"<tr><td>{html.escape(str(name))}</td><td>{int(x[j].sum())}</td><td>{held or 'idle'}</td>"
                        f"<td>{s}</td></tr>")
        return ("<table><tr><th>job</th><th>GPUs</th><th>nodes</th><th>speedup</th></tr>" + "".join(rows)
                + "</table>")

    @property
    def allocation(self) -> Array:
        return self.x

    @property
    def success(self) -> bool:
        return self.has_solution and self.feasible

    @property
    def gap(self) -> float:
        if not (self.has_solution and np.isfinite(self.bound) and np.isfinite(self.fitness)):
            return float("nan")
        if self.bound == 0:
            return 0.0 if self.fitness == 0 else float("inf")
        return max(0.0, (self.bound - self.fitness) / abs(self.bound))

    def to_dict(self, problem: AllocationProblem | None = None) -> Record:
        """JSON-ready summary; ``allocation`` as job -> {node: GPUs} when ``problem`` is given."""
        out: dict[str, Any] = {
            "method": self.method,
            "status": str(self.status),
            "has_solution": self.has_solution,
            "fitness": _num(self.fitness),
            "bound": _num(self.bound),
            "gap": _num(self.gap),
            "seconds": self.stats.total_s,
            "feasible": self.feasible,
            "violations": self.violations,
            "message": self.message,
            "seed": self.seed,
            "options": _jsonable(self.options),
            "stats": asdict(self.stats),
            "extra": _jsonable(self.extra.as_dict()),
        }
        if problem is not None and self.has_solution and self.speedups is not None:
            out["allocation"] = problem.allocation_to_mapping(self.x)
            out["speedups"] = {n: float(s) for n, s in zip(problem.job_names, self.speedups)}
        return out

    def __repr__(self) -> str:
        return (f"SolveResult(method={self.method!r}, status={self.status.value}, fitness={self.fitness:.6g}, "
                f"bound={self.bound:.6g}, gap={self.gap:.3g}, seconds={self.stats.total_s:.3g})")


def _num(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


#: Arrays larger than this are summarised in :meth:`SolveResult.to_dict` (they stay whole on the result object).
MAX_JSON_ARRAY = 64


def _jsonable(obj: Any) -> Any:
    def default(o: Any) -> Any:  # Any: json.dumps's fallback for any object
        if isinstance(o, np.ndarray):
            return o.tolist() if o.size <= MAX_JSON_ARRAY else f"array of shape {o.shape} (see the result object)"
        return str(o)

    return json.loads(json.dumps(obj, default=default))
