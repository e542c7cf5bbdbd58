"""Scenarios: a cluster, application profiles, jobs and the objective.

A scenario file is YAML::

    name: small-2node
    cluster:
      node_groups:
        - {gpu_type: t4, gpus_per_node: 4, n_nodes: 2}
    profiles:                     # optional: application -> profile file
      myapp: profiles/myapp.yaml  # (relative to the scenario file)
    objective:                    # every field optional
      p: -1                       # fairness knob (number, or '-inf')
      eps: 0.001
      base: fair-share            # or one-gpu
      base_gpu_type: t4           # default: the most numerous GPU type
      restart_delay_s: 30
      restart_delays_s: {imagenet: 250}   # per-application restart delay (default: restart_delay_s)
      idle_penalty: 1.1           # Sia's penalty for a job left without GPUs (default: none)
      interference_avoidance: true
      n_batch_candidates: 50
    jobs:
      - name: job-0
        application: cifar10      # a shipped or listed profile
        age_s: 600                # seconds since submission (default 0: see below)
        n_reallocs: 1             # re-allocations so far
        allocation: {t4-0: 2}     # current GPUs per node
        weight: 1
        min_gpus: 1               # if running, at least this many GPUs
        max_gpus: 8               # default: no limit
        entity: alice             # the user or group it belongs to (Gavel's hierarchical policies)
        epoch: 3.5                # completed epochs (sets phi) ...
        # phi: 1200               # ... or the gradient noise scale directly

The re-allocation factor ``r = max(age_s - n_reallocs * restart_delay_s, 0) / (age_s + restart_delay_s)``
multiplies a job's speedup whenever its allocation changes. With the default
``age_s: 0`` it is 0: any change scores speedup 0, so such a job is *pinned* to
its current allocation (a job holding no GPUs stays idle, and with every job so
the empty allocation is optimal). Give each job its age; ``goodopt info`` and
``goodopt solve`` warn of pinned jobs.

``objective: {preset: sia}`` starts from Sia's choices (:meth:`Objective.sia`)
and lets the other fields override them.

Applications not listed under ``profiles`` are looked up among the shipped
profiles (``scenarios/profiles``).
"""

from __future__ import annotations

import html
import logging
import math
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from .cluster import Cluster, NodeGroup
from .errors import ScenarioError
from .objective import Objective as Objective  # also importable from here, as documented
from .objective import objective_from_dict
from .outputs import write_text
from .problem import AllocationProblem
from .profiles import AppProfile, ThroughputProfile, load_profile, shipped_profile, shipped_profile_names
from .records import Record
from .validation import Reader, read_yaml, suggest

#: Largest allocation matrix (jobs x nodes): about 58 times the largest family's, so that populations fit in memory.
MAX_ALLOCATION_CELLS = 2 ** 24

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    """One job as the scheduler sees it in a round."""

    name: str
    application: str
    age_s: float = 0.0
    n_reallocs: int = 0
    allocation: Mapping[str, int] = field(default_factory=dict)
    weight: float = 1.0
    min_gpus: int = 1
    max_gpus: int | None = None
    epoch: float = 0.0
    phi: float | None = None
    entity: str = ""  # the user or group it belongs to (hierarchical policies); "" = none

    def __post_init__(self) -> None:
        object.__setattr__(self, "allocation", MappingProxyType(dict(self.allocation)))
        if self.age_s < 0 or not math.isfinite(self.age_s):
            raise ScenarioError("age_s", f"must be a finite number >= 0, got {self.age_s}")
        if self.n_reallocs < 0:
            raise ScenarioError("n_reallocs", f"must be >= 0, got {self.n_reallocs}")
        if not (self.weight > 0 and math.isfinite(self.weight)):
            raise ScenarioError("weight", f"must be a finite number > 0, got {self.weight}")
        if self.min_gpus < 1:
            raise ScenarioError("min_gpus", f"must be >= 1, got {self.min_gpus}")
        if self.max_gpus is not None and self.max_gpus < self.min_gpus:
            raise ScenarioError("max_gpus", f"must be >= min_gpus ({self.min_gpus}), got {self.max_gpus}")
        if self.phi is not None and not self.phi > 0:
            raise ScenarioError("phi", f"must be > 0, got {self.phi}")


@dataclass(frozen=True)
class Scenario:
    """A validated scheduling scenario. :meth:`problem` turns it into arrays."""

    cluster: Cluster
    jobs: tuple[Job, ...]
    profiles: Mapping[str, AppProfile | ThroughputProfile]
    objective: Objective = Objective()
    name: str = "scenario"
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", tuple(self.jobs))
        object.__setattr__(self, "profiles", MappingProxyType(dict(self.profiles)))
        _check_jobs(self)

    def problem(self) -> AllocationProblem:
        """The allocation problem (validated arrays and speedup tables)."""
        return AllocationProblem.from_scenario(self)

    def with_objective(self, **changes: Any) -> Scenario:  # Any: field values, checked by the class
        """The same scenario with objective fields changed, e.g. ``with_objective(p=-inf)``."""
        return replace(self, objective=replace(self.objective, **changes))

    def __repr__(self) -> str:
        apps = Counter(j.application for j in self.jobs)
        return (f"Scenario({self.name!r}: {self.cluster.describe()}, {self.cluster.n_gpus} GPUs; "
                f"{len(self.jobs)} jobs ({', '.join(f'{n} {a}' for a, n in apps.most_common())}); "
                f"p={self.objective.p:g})")

    def _repr_html_(self) -> str:
        """A notebook's view: the cluster, the objective and the jobs per application."""
        o = self.objective
        held = Counter(j.application for j in self.jobs if j.allocation)
        rows = "".join(f"<tr><td>{html.escape(a)}</td><td>{n}</td><td>{held.get(a, 0)}</td></tr>"
                       for a, n in Counter(j.application for j in self.jobs).most_common())
        return (f"<b>{html.escape(self.name)}</b> {html.escape(self.description)}<br>"
                f"cluster: {html.escape(self.cluster.describe())} = {self.cluster.n_gpus} GPUs on "
                f"{self.cluster.n_nodes} nodes<br>objective: p={o.p:g}, eps={o.eps:g}, base={html.escape(str(o.base))}"
                f"<table><tr><th>application</th><th>jobs</th><th>holding GPUs</th></tr>{rows}</table>")


def _check_jobs(s: Scenario) -> None:
    names = set(s.cluster.node_names)
    cap = dict(zip(s.cluster.node_names, s.cluster.node_capacity.tolist()))
    seen = set()
    if not s.jobs:
        raise ScenarioError("jobs", "must list at least one job")
    if len(s.jobs) * s.cluster.n_nodes > MAX_ALLOCATION_CELLS:
        raise ScenarioError("jobs", f"{len(s.jobs)} jobs x {s.cluster.n_nodes} nodes is more than "
                            f"{MAX_ALLOCATION_CELLS:,} allocation cells", "study fewer jobs or a smaller cluster")
    for i, job in enumerate(s.jobs):
        where = f"jobs[{i}]"
        if job.name in seen:
            raise ScenarioError(f"{where}.name", f"duplicate job name {job.name!r}", "job names must be unique")
        seen.add(job.name)
        if job.application not in s.profiles:
            raise ScenarioError(f"{where}.application", f"no profile for {job.application!r}",
                                f"known: {sorted(s.profiles)}")
        prof = s.profiles[job.application]
        usable = [t for t in s.cluster.gpu_type_names if t in prof.gpu_types]
        if not usable:
            raise ScenarioError(f"{where}.application",
                                f"profile {job.application!r} covers none of the cluster's GPU types "
                                f"{list(s.cluster.gpu_type_names)}", "fit it on one of them")
        types = set()
        for node, gpus in job.allocation.items():
            if node not in names:
                raise ScenarioError(f"{where}.allocation.{node}", "unknown node",
                                    f"nodes are named like {s.cluster.node_names[0]!r}")
            if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0 or gpus > cap[node]:
                raise ScenarioError(f"{where}.allocation.{node}",
                                    f"must be a whole number of GPUs in [0, {cap[node]}], got {gpus!r}")
            if gpus:
                types.add(s.cluster.node_gpu_types[s.cluster.node_names.index(node)])
        if len(types) > 1:
            raise ScenarioError(f"{where}.allocation", f"spans GPU types {sorted(types)}",
                                "a job runs on one GPU type only")
        if s.objective.base_gpu_type is not None and s.objective.base_gpu_type not in s.cluster.gpu_type_names:
            raise ScenarioError("objective.base_gpu_type", f"{s.objective.base_gpu_type!r} is not in the cluster",
                                f"choose one of {list(s.cluster.gpu_type_names)}")
    _check_every_type_is_usable(s)
    known = set(shipped_profile_names()) | set(s.profiles)
    for app in s.objective.restart_delays_s:
        if app not in known:
            raise ScenarioError(f"objective.restart_delays_s.{app}", f"no profile of {app!r} is known, so the "
                                "delay would apply to no job", f"{suggest(app, known)}applications: "
                                f"{', '.join(sorted(known))}")


def _check_every_type_is_usable(s: Scenario) -> None:
    """A GPU type of the cluster that no job's profile covers would be listed and never used: an error naming
    the node group, the type and the profiles that lack it."""
    apps = sorted({job.application for job in s.jobs})
    for k, group in enumerate(s.cluster.groups):
        if not any(group.gpu_type in s.profiles[a].gpu_types for a in apps):
            lacking = ", ".join(f"{a} ({', '.join(sorted(s.profiles[a].gpu_types))})" for a in apps)
            raise ScenarioError(f"cluster.node_groups[{k}].gpu_type",
                                f"no job can run on {group.gpu_type!r}: the profiles of its jobs cover only "
                                f"other types: {lacking}",
                                f"add {group.gpu_type} measurements to a profile (goodopt fit), or remove the group")


# --------------------------------------------------------------------- loading
def scenario_from_dict(data: object, base_dir: Path | str = ".") -> Scenario:  # data: checked as it is read
    """Build and validate a :class:`Scenario` from a parsed YAML mapping."""
    base_dir = Path(base_dir)
    r = Reader(data, "")
    c = r.sub("cluster")
    groups = []
    for i, g in enumerate(c.items("node_groups")):
        gr = Reader(g, f"cluster.node_groups[{i}]")
        try:
            groups.append(NodeGroup(
                gpu_type=gr.string("gpu_type"),
                gpus_per_node=gr.integer("gpus_per_node", minimum=1),
                n_nodes=gr.integer("n_nodes", minimum=1),
                prefix=gr.optional("name", None),
            ))
        except ScenarioError as exc:
            if exc.field.startswith("cluster."):
                raise
            raise ScenarioError(gr.path(exc.field), exc.problem, exc.fix) from None
        gr.done()
    c.done()
    cluster = Cluster(tuple(groups))

    profiles = {}
    if r.has("profiles"):
        pr = r.sub("profiles")
        for app in pr.keys():
            rel = pr.string(app)
            path = (base_dir / rel).resolve()
            if not path.is_file():
                raise ScenarioError(pr.path(app), f"profile file {str(path)!r} not found",
                                    "paths are relative to the scenario file")
            profiles[app] = load_profile(path)
        pr.done()

    objective = objective_from_dict(r.optional("objective", {}) or {})

    jobs, problems = [], []
    for i, j in enumerate(r.items("jobs")):
        try:
            jobs.append(_job_from_dict(Reader(j, f"jobs[{i}]"), profiles))
        except ScenarioError as exc:  # every bad job is reported, not only the first
            problems.append(exc)
    if len(problems) == 1:
        raise problems[0]
    if problems:
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise ScenarioError("jobs", f"{len(problems)} bad jobs:\n  " + "\n  ".join(map(str, problems[:10])) + more)
    name = r.name("name", "scenario")
    description = str(r.optional("description", ""))
    r.done()
    sc = Scenario(cluster=cluster, jobs=tuple(jobs), profiles=profiles, objective=objective,
                  name=name, description=description)
    for warning in scenario_warnings(sc):
        log.warning("%s: %s", name, warning)
    return sc


def scenario_warnings(s: Scenario) -> list[str]:
    """What a valid scenario holds that is probably not meant: a job that can never get ``min_gpus`` GPUs of a
    type it runs on, and a node that current allocations over-fill; each names the field."""
    out = []
    cl = s.cluster
    cap = dict(zip(cl.node_names, cl.node_capacity.tolist()))
    for i, job in enumerate(s.jobs):
        usable = [t for t in cl.gpu_type_names if t in s.profiles[job.application].gpu_types]
        most = max(sum(g.gpus_per_node * g.n_nodes for g in cl.groups if g.gpu_type == t) for t in usable)
        if job.min_gpus > most:
            out.append(f"jobs[{i}].min_gpus: {job.min_gpus} is more than the {most} GPUs of any one type it can "
                       "use, so the job can never run")
    for node in cl.node_names:
        used = sum(job.allocation.get(node, 0) for job in s.jobs)
        if used > cap[node]:
            holders = [f"jobs[{i}]" for i, job in enumerate(s.jobs) if job.allocation.get(node)]
            out.append(f"{', '.join(holders)}.allocation.{node}: {used} GPUs allocated on a {cap[node]}-GPU node, "
                       "so the current allocation is infeasible")
    return out


def _job_from_dict(jr: Reader, profiles: dict[str, AppProfile | ThroughputProfile]) -> Job:
    """One job of a scenario mapping (its application's shipped profile is added to ``profiles``)."""
    app = jr.string("application")
    if app not in profiles:
        try:
            profiles[app] = shipped_profile(app)
        except ScenarioError as exc:
            raise ScenarioError(jr.path("application"), exc.problem, exc.fix) from None
    alloc = jr.optional("allocation", {}) or {}
    if not isinstance(alloc, dict):
        raise ScenarioError(jr.path("allocation"), "must map node name -> GPUs", "e.g. {t4-0: 2}")
    if jr.has("phi") and jr.has("epoch"):
        raise ScenarioError(jr.path("phi"), "give either phi or epoch, not both")
    try:
        job = Job(
            name=jr.name("name"),
            application=app,
            age_s=jr.number("age_s", 0.0, minimum=0),
            n_reallocs=jr.integer("n_reallocs", 0, minimum=0),
            allocation=alloc,
            weight=jr.number("weight", 1.0, minimum=0, strict=True),
            min_gpus=jr.integer("min_gpus", 1, minimum=1),
            max_gpus=jr.integer("max_gpus", None, minimum=1),
            epoch=jr.number("epoch", 0.0, minimum=0),
            phi=jr.number("phi", None, minimum=0, strict=True),
            entity=jr.string("entity") if jr.has("entity") else "",
        )
    except ScenarioError as exc:
        if exc.field.startswith("jobs["):
            raise
        raise ScenarioError(jr.path(exc.field), exc.problem, exc.fix) from None
    jr.done()
    return job


def scenario_from_file(path: str | os.PathLike[str]) -> Scenario:
    """Read a scenario from a YAML file (profile paths are relative to the file).

    Shipped names and ``family:`` members are resolved by
    :func:`goodopt.sources.load_scenario`, which also accepts files.
    """
    p = Path(path)
    data = read_yaml(p, "scenario", ScenarioError)
    return scenario_from_dict(data, base_dir=p.parent)


def scenario_to_dict(s: Scenario, profile_paths: Mapping[str, str] | None = None) -> Record:
    """The YAML-ready mapping of a scenario (shipped profiles are referenced by name)."""
    o = s.objective
    out: dict[str, object] = {
        "name": s.name,
        "description": s.description,
        "cluster": {"node_groups": [
            {"gpu_type": g.gpu_type, "gpus_per_node": g.gpus_per_node, "n_nodes": g.n_nodes,
             **({"name": g.prefix} if g.prefix else {})} for g in s.cluster.groups]},
        "objective": {"p": o.p if math.isfinite(o.p) else str(o.p), "eps": o.eps, "base": o.base,
                      **({"base_gpu_type": o.base_gpu_type} if o.base_gpu_type else {}),
                      "restart_delay_s": o.restart_delay_s,
                      "interference_avoidance": o.interference_avoidance,
                      "n_batch_candidates": o.n_batch_candidates,
                      **({"restart_delays_s": dict(o.restart_delays_s)} if o.restart_delays_s else {}),
                      **({"idle_penalty": o.idle_penalty} if o.idle_penalty is not None else {})},
    }
    jobs: list[dict[str, Any]] = []
    out["jobs"] = jobs
    if profile_paths:
        out["profiles"] = dict(profile_paths)
    for job in s.jobs:
        d = {"name": job.name, "application": job.application, "age_s": job.age_s,
             "n_reallocs": job.n_reallocs}
        if job.allocation:
            d["allocation"] = {k: int(v) for k, v in job.allocation.items() if v}
        if job.weight != 1.0:
            d["weight"] = job.weight
        d["min_gpus"] = job.min_gpus
        if job.max_gpus is not None:
            d["max_gpus"] = job.max_gpus
        if job.entity:
            d["entity"] = job.entity
        if job.phi is not None:
            d["phi"] = job.phi
        else:
            d["epoch"] = job.epoch
        jobs.append(d)
    return out


def save_scenario(s: Scenario, path: str | os.PathLike[str], profile_paths: Mapping[str, str] | None = None) -> None:
    """Write a scenario as YAML (readable back with :func:`goodopt.sources.load_scenario`)."""
    write_text(path, yaml.safe_dump(scenario_to_dict(s, profile_paths), sort_keys=False,
                                         default_flow_style=None, width=100))
