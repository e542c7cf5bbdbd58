"""The task types: one solve (:class:`SolveTask`), one simulation (:class:`SimTask`), one rigid-job run
(:class:`RigidTask`) or one front (:class:`ParetoTask`), each self-contained and keyed by its inputs (see
:mod:`goodopt.runs.tasks`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from goodopt.outputs import json_default

from ..records import Record
from .spec_fields import p_to_json

#: Columns that measure time: they differ between runs of the same task.
TIMING_COLUMNS = ("seconds", "build_s", "solve_s", "policy_s", "engine_s", "wall_s", "cpu_s")


#: Run-level columns of a simulation row (after the workload, load, hours, policy and seed).
SUMMARY_COLUMNS = ("n_jobs", "avg_jct", "median_jct", "p99_jct", "makespan", "restarts", "avg_utilisation",
                   "avg_ftf_rho", "max_ftf_rho", "cost", "cost_per_job", "gpu_hours", "used_gpu_hours", "avg_gpus",
                   "n_rounds", "policy_s", "engine_s", "wall_s")


def to_json(value: Any) -> Any:  # Any: any value, made JSON-shaped
    """``value`` as plain JSON types (tuples as lists, numpy scalars as numbers, ``inf`` kept)."""
    return json.loads(json.dumps(value, default=json_default))


@dataclass(frozen=True)
class SolveTask:
    """One solve: ``method`` with ``options`` (all of them) on ``scenario`` (at objective ``p`` if given).

    ``scenario`` is a file, a shipped name or ``family:NAME:SEED``; in-process
    runs may pass a :class:`~goodopt.scenario.Scenario` object instead (such
    tasks are not cached).
    """

    scenario: object
    method: str
    options: Mapping[str, Any]
    p: float | None = None
    seed: int | None = None
    label: str = ""
    kind: ClassVar[str] = "solve"

    def inputs(self) -> Record:
        """The task's inputs as canonical JSON (the naming field ``label`` left out)."""
        return to_json({"kind": self.kind, "scenario": str(self.scenario), "method": self.method,
                        "options": dict(sorted(self.options.items())),
                        "p": None if self.p is None else p_to_json(self.p), "seed": self.seed})

    def describe(self) -> str:
        name = getattr(self.scenario, "name", self.scenario)
        return (f"{name} / {self.label or self.method}" + (f" p={self.p:g}" if self.p is not None else "")
                + (f" seed {self.seed}" if self.seed is not None else ""))


@dataclass(frozen=True)
class SimTask:
    """One simulation: ``workload`` on the cluster of ``cluster`` under ``policy``.

    ``workload`` is a CSV file or ``generated:LOAD:SEED[:HOURS]``; ``cluster``
    a scenario (file, shipped name, family member) whose cluster is used, or a
    mapping ``{"node_groups": [...]}``; ``truth`` is ``"model"`` or a traces
    folder; ``config`` holds every engine setting; ``policy_described`` the
    policy's own description of itself with these options (defaults included).
    """

    workload: str
    policy: str
    cluster: str | Mapping[str, Any]
    truth: str = "model"
    config: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    policy_described: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    vary: Mapping[str, Any] = field(default_factory=dict)
    kind: ClassVar[str] = "simulate"

    def inputs(self) -> Record:
        """The task's inputs as canonical JSON (the naming fields ``label`` and ``vary`` left out)."""
        return to_json({"kind": self.kind, "workload": str(self.workload), "policy": self.policy,
                        "cluster": self.cluster, "truth": self.truth, "config": dict(sorted(self.config.items())),
                        "seed": self.seed, "options": dict(sorted(self.options.items())),
                        "policy_described": self.policy_described})

    def describe(self) -> str:
        varied = "".join(f" {k}={v:g}" if isinstance(v, float) else f" {k}={v}" for k, v in sorted(self.vary.items()))
        return f"{workload_stem(self.workload)} / {self.label or self.policy}{varied} seed {self.seed}"


@dataclass(frozen=True)
class RigidTask:
    """One simulation of rigid throughput-only jobs (:mod:`goodopt.sim.rigid`), Gavel's kind.

    ``n_jobs`` jobs drawn by Gavel's generator (:func:`~goodopt.gavel.gavel_trace`)
    at ``rate_per_h`` with ``seed``, on ``capacity`` (GPU type -> GPUs, in the
    order the round mechanism considers the types: a part of the task), with the
    throughputs of ``throughputs`` (a traces folder or Gavel's JSON file);
    ``config`` holds every :class:`~goodopt.sim.rigid.RigidConfig` field.
    """

    throughputs: str
    capacity: Mapping[str, Any]
    rate_per_h: float
    n_jobs: int
    config: Mapping[str, Any]
    seed: int = 0
    label: str = ""
    vary: Mapping[str, Any] = field(default_factory=dict)
    kind: ClassVar[str] = "rigid"

    def inputs(self) -> Record:
        """The task's inputs as canonical JSON (the naming fields ``label`` and ``vary`` left out). ``capacity``
        as (type, GPUs) pairs in its order, which the answer follows (Gavel's cluster given v100 first ran
        heterogeneity-aware LAS at 1 job/h to an average JCT of 17.7 h, given k80 first to 47.8 h), so that two
        orders are two tasks."""
        return to_json({"kind": self.kind, "throughputs": str(self.throughputs),
                        "capacity": [[t, n] for t, n in self.capacity.items()], "rate_per_h": float(self.rate_per_h),
                        "n_jobs": int(self.n_jobs), "config": dict(sorted(self.config.items())), "seed": self.seed})

    def describe(self) -> str:
        return f"rate {self.rate_per_h:g}/h / {self.label or self.config.get('policy')} seed {self.seed}"

    def throughput_file(self) -> Path:
        p = Path(self.throughputs)
        return p / "gavel" / "simulation_throughputs.json" if p.is_dir() else p


@dataclass(frozen=True)
class ParetoTask:
    """One front (:mod:`goodopt.pareto`): front method ``method`` (``exact`` or a heuristic, with ``seed``) on
    ``scenario`` over the criteria ``objectives`` (``efficiency,fairness[,cost]``), with the method's
    ``options`` and the GPU ``prices`` of the cost criterion."""

    scenario: str
    objectives: str
    method: str
    options: Mapping[str, Any] = field(default_factory=dict)
    prices: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    label: str = ""
    kind: ClassVar[str] = "pareto"

    def inputs(self) -> Record:
        """The task's inputs as canonical JSON (the naming field ``label`` left out)."""
        return to_json({"kind": self.kind, "scenario": self.scenario, "objectives": self.objectives,
                        "method": self.method, "options": dict(sorted(self.options.items())),
                        "prices": dict(sorted(self.prices.items())), "seed": self.seed})

    def describe(self) -> str:
        return (f"{self.scenario} / {self.label or self.method} {self.objectives}"
                + (f" seed {self.seed}" if self.seed is not None else ""))


def workload_stem(workload: object) -> str:
    """A short name of a workload spec: ``generated-1.0-0`` or ``<folder>-<file stem>``."""
    w = str(workload)
    if w.startswith("generated:"):
        return w.replace(":", "-")
    p = Path(w)
    return f"{p.parent.name}-{p.stem}" if p.parent.name else p.stem


Task = SolveTask | SimTask | RigidTask | ParetoTask
