"""Tasks: one solve or one simulation, self-contained (the types: :mod:`goodopt.runs.task_types`), and how each
is made and run.

A task holds everything its result depends on (besides files and code, which
:mod:`goodopt.runs.cache` hashes): a :class:`SolveTask` names a scenario, a
method with *every* option (defaults filled in, so equal computations are
equal tasks), the objective ``p`` and the seed; a :class:`SimTask` names a
workload, a cluster, a ground truth, engine settings and a policy with its
options. ``label`` (and a simulation's ``vary``) only name the result.

:func:`expand` turns a :class:`~goodopt.runs.spec.SweepSpec` into tasks;
:func:`run_task` computes one, on any worker, and returns its JSON-ready
mapping ``{"row": {...}, "jobs": [{...}, ...]}``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import ValidationError
from goodopt.families import family
from goodopt.gavel import RigidJob, assign_entities, gavel_trace, read_gavel_throughputs
from goodopt.gavel.generator import gavel_trace_exact
from goodopt.progress import task_named
from goodopt.scenario import Scenario
from goodopt.sim import SimulationResult, simulate
from goodopt.sim.config import SimConfig, check_setup
from goodopt.sim.policies import make_policy
from goodopt.sim.rigid import simulate_rigid, simulate_rigid_steady
from goodopt.sim.rigid_config import RigidConfig
from goodopt.sim.truth import Truth, model_truth, trace_truth
from goodopt.sim.workload import GENERATED_PREFIX, parse_generated, resolve_workload
from goodopt.solvers import solve
from goodopt.solvers.api import METHOD_OPTIONS, RANDOMISED, options_for
from goodopt.solvers.details import MilpDetails
from goodopt.solvers.options import refuse_file_options
from goodopt.sources import load_scenario

from ..records import Record, RecordIn
from .spec import CHOICE_FIELDS, MAPPING_FIELDS, SIM_CONFIG_FIELDS, SWITCH_FIELDS, SweepSpec
from .tables import result_row

# the task types, also importable from here
from .task_types import (  # noqa: F401
    SUMMARY_COLUMNS,
    TIMING_COLUMNS,
    ParetoTask,
    RigidTask,
    SimTask,
    SolveTask,
    Task,
    to_json,
    workload_stem,
)


def rigid_task(throughputs: str | os.PathLike[str], capacity: RecordIn, rate_per_h: float, n_jobs: int, *, seed: int = 0,
               label: str = "", vary: RecordIn | None = None, **config: Any) -> RigidTask:  # Any: a RigidConfig or its fields as a mapping
    """A rigid-job simulation task with its settings checked and every default filled in."""
    cfg = RigidConfig(**config)
    full = {k: (list(v) if isinstance(v, tuple) and k == "window" else dict(v) if k == "options" else v)
            for k, v in cfg.__dict__.items()}
    full["entities"] = {name: dict(s) for name, s in cfg.entities}
    return RigidTask(str(throughputs), to_json(dict(capacity)), float(rate_per_h), int(n_jobs), to_json(full),
                     int(seed), label or cfg.policy + ("-agnostic" if cfg.agnostic else ""), dict(vary or {}))


#: Rough CPU seconds per workload job of a simulation at one round a minute, by policy (pollux, sia and optimus
#: measured on the papers' workloads, 2026-11; milp and greedy on the embedded default's, 2026-12; one core), and
#: per job of a rigid run (finish-time fairness about 1.3 times that). Only to start long tasks first; no result
#: depends on them.
EST_CPU_PER_JOB = {"pollux": 0.6, "sia": 0.3, "milp": 0.45, "greedy": 0.25, "optimus": 0.05}
EST_CPU_PER_JOB_OTHER = 0.02
EST_CPU_PER_RIGID_JOB = 0.006
#: A simulation's rough least CPU seconds (one long job alone still runs many rounds): every simulation is started
#: before the solves, which take about a second each.
EST_CPU_SIM_FLOOR = 5.0


def estimated_cpu_s(task: Task) -> float:
    """A rough estimate of ``task``'s CPU seconds (:data:`EST_CPU_PER_JOB`; rounds scale it by 60 s over the
    interval, an auto-scaler doubles it), for ordering tasks longest first."""
    if isinstance(task, SimTask):
        per_round = EST_CPU_PER_JOB.get(task.policy, EST_CPU_PER_JOB_OTHER) * _workload_jobs(str(task.workload))
        rounds = 60.0 / float(task.config.get("interval_s") or 60.0)
        scaled = 2.0 if task.config.get("autoscale", "none") != "none" else 1.0
        return max(per_round * rounds * scaled, EST_CPU_SIM_FLOOR)
    if isinstance(task, RigidTask):
        return EST_CPU_PER_RIGID_JOB * task.n_jobs * (1.3 if "finish_time" in str(task.config.get("policy")) else 1.0)
    return 1.0


@functools.lru_cache(maxsize=1024)
def _workload_jobs(workload: str) -> int:
    """Rows of a workload CSV (100 for a generated workload or a file that cannot be read); each file is read
    once per process."""
    if str(workload).startswith("generated:"):
        return 100
    try:
        with open(workload, "rb") as fh:
            return max(sum(1 for _ in fh) - 1, 1)
    except OSError:
        return 100


#: Any one kind of task (a list of tasks of one kind stays of that kind).
AnyTask = TypeVar("AnyTask", SolveTask, SimTask, RigidTask, ParetoTask)

# ------------------------------------------------------------------ making tasks
def solve_task(scenario: object, method: str, options: RecordIn | None = None, *, p: float | None = None,
               seed: int | None = None, label: str = "") -> SolveTask:
    """A solve task with the method's options validated and completed with their defaults."""
    opts = dict(options or {})
    refuse_file_options("options", opts)
    if seed is not None:
        opts["seed"] = seed
    full = options_for(method, opts).as_dict()
    return SolveTask(scenario, method, to_json(full), None if p is None else float(p), seed, label or method)


def sim_task(workload: object, policy: str, cluster: str | RecordIn, *, truth: str = "model",
             config: RecordIn | None = None, seed: int = 0, options: RecordIn | None = None, label: str = "",
             vary: RecordIn | None = None) -> SimTask:
    """A simulation task with every engine setting explicit and the policy's options checked."""
    cfg = SimConfig(**dict(config or {}))
    described = make_policy(policy, **dict(options or {})).describe()
    return SimTask(str(workload), policy, to_json(cluster) if isinstance(cluster, Mapping) else str(cluster),
                   str(truth), to_json(_config_dict(cfg)), int(seed), to_json(dict(options or {})),
                   to_json(described), label or policy, dict(vary or {}))


def _config_dict(cfg: SimConfig) -> dict[str, Any]:
    return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in cfg.__dict__.items()}


def expand(spec: SweepSpec) -> Sequence[Task]:
    """Every task of ``spec``, in grid order; a task given twice (the same row twice) is refused."""
    if spec.kind == "solve":
        return refuse_duplicates(_expand_solve(spec))
    if spec.kind == "pareto":
        from .pareto_tasks import pareto_tasks

        return refuse_duplicates(pareto_tasks(spec))
    if spec.kind == "rigid":
        return refuse_duplicates([rigid_task(spec.throughputs, spec.capacity, rate, spec.n_jobs, seed=s,
                                             label=v.label, window=spec.window, policy=v.name,
                                             **{**dict(spec.rigid_config), **dict(v.options)})
                                  for rate in spec.rates for v in spec.variants for s in spec.seeds])
    return refuse_duplicates(_expand_simulate(spec))


def refuse_duplicates(tasks: list[AnyTask]) -> list[AnyTask]:
    """``tasks``, or a :class:`ValidationError` naming the first task given twice (it would give two equal rows)."""
    seen: dict[str, int] = {}
    for i, task in enumerate(tasks):
        first = seen.setdefault(repr(task), i)
        if first != i:
            raise ValidationError("tasks", f"{task.describe()!r} is given twice (tasks {first + 1} and {i + 1}): a "
                                  "scenario, workload, seed, p or varied value is listed twice",
                                  "list each value once")
    return tasks


def _expand_solve(spec: SweepSpec) -> list[SolveTask]:
    tasks = []
    for sc in spec.scenarios:
        for p in (spec.p_values or (None,)):
            for v in spec.variants:
                opts = dict(v.options)
                if spec.time_limit_s is not None:
                    opts.setdefault("time_limit_s", spec.time_limit_s)
                if spec.node_limit is not None and "node_limit" in METHOD_OPTIONS[v.name]:
                    opts.setdefault("node_limit", spec.node_limit)
                for s in (spec.seeds if v.name in RANDOMISED else (None,)):
                    tasks.append(solve_task(sc, v.name, opts, p=p, seed=s, label=v.label))
    return tasks


def _expand_simulate(spec: SweepSpec) -> list[SimTask]:
    combos: list[dict[str, Any]] = [{}]
    for k, values in spec.vary.items():
        combos = [{**c, k: v} for c in combos for v in values]
    tasks = []
    for w in spec.workloads:
        for combo in combos:
            kept = MAPPING_FIELDS + SWITCH_FIELDS + CHOICE_FIELDS
            config = {k: (v if k in kept else float(v)) for k, v in {**dict(spec.config), **combo}.items()
                      if k in SIM_CONFIG_FIELDS + kept}
            for v in spec.variants:
                for s in spec.seeds:
                    tasks.append(sim_task(w, v.name, spec.cluster, truth=spec.truth, config=config, seed=s,
                                          options=v.options, label=v.label, vary=combo))
    return tasks


# ------------------------------------------------------------------ running tasks
def run_task(task: Task) -> Record:
    """Compute one task (on any worker): ``{"row": {...}, "jobs": [{...}, ...]}`` as plain JSON types,
    without the naming columns (:func:`named_rows` adds them). The row's ``cpu_s`` is the CPU time the
    task took in its process (every thread)."""
    t0 = time.process_time()
    with task_named(task.describe()):
        if isinstance(task, SolveTask):
            out = _run_solve(task)
        elif isinstance(task, RigidTask):
            out = _run_rigid(task)
        elif isinstance(task, ParetoTask):
            from .pareto_tasks import run_pareto_task

            out = run_pareto_task(task)
        else:
            res, row, jobs = run_simulation(task)
            out = {"row": row, "jobs": jobs}
    out["row"]["cpu_s"] = time.process_time() - t0
    return to_json(out)


def _run_solve(task: SolveTask) -> dict[str, Any]:
    warm_up(task.method)
    sc = task.scenario if isinstance(task.scenario, Scenario) else load_scenario(task.scenario)
    if task.p is not None:
        sc = sc.with_objective(p=float(task.p))
    pr = sc.problem()
    res = solve(pr, task.method, dict(task.options))
    row = {"scenario": sc.name, "p": sc.objective.p, **result_row(pr, task.method, task.seed, res)}
    row["pwl_breakpoints"] = task.options.get("breakpoints") if task.method == "milp-pwl" else None
    exact = res.extra if isinstance(res.extra, MilpDetails) else MilpDetails()
    row["pwl_error_bound"] = exact.pwl_error_bound
    # jobs a count-level answer could not place on nodes (they run on fewer GPUs)
    row["n_placement_failed"] = len(exact.placement_failed_jobs or ())
    jobs = []
    if res.has_solution and res.x is not None and res.speedups is not None:
        gpus, nodes = res.x.sum(axis=1), (res.x > 0).sum(axis=1)
        for j, name in enumerate(pr.job_names):
            jobs.append({"scenario": sc.name, "p": sc.objective.p, "seed": task.seed, "job": name,
                         "application": sc.jobs[j].application, "n_gpus": int(gpus[j]),
                         "n_nodes": int(nodes[j]), "speedup": float(res.speedups[j])})
    return {"row": row, "jobs": jobs, "trace": [list(point) for point in res.stats.trace]}


@functools.cache
def warm_up(method: str) -> None:
    """Solve a tiny instance once per process and method, so first-use costs (imports, the solver library's
    set-up) are not charged to the first timed solve of a process."""
    if method not in ("milp", "milp-pwl", "gavel", "ga", "nsga2"):
        return
    opts = {"seed": 0, "pop_size": 8, "n_gen": 2} if method in RANDOMISED else {}
    solve(family("tiny").scenario(0).problem(), method, opts)


def _run_rigid(task: RigidTask) -> dict[str, Any]:
    import numpy as np

    thr = read_gavel_throughputs(task.throughputs)
    cfg = dict(task.config)
    config = RigidConfig(**{**cfg, "window": None if cfg.get("window") is None else tuple(cfg["window"])})
    sizes = dict(config.scale_factors)  # {} for Gavel's own scale factors
    shares = {name: dict(spec)["share"] for name, spec in config.entities}

    def trace(n: int) -> Sequence[RigidJob]:  # one endless trace per seed: jobs from one stream, entities another
        if config.generator == "gavel":
            jobs = gavel_trace_exact(thr, task.rate_per_h, n, task.seed, sizes)
        else:
            jobs = gavel_trace(thr, task.rate_per_h, n, np.random.default_rng(task.seed), sizes or None)
        if shares:
            jobs = assign_entities(jobs, shares, np.random.default_rng([task.seed, 1]))
        return jobs

    if config.arrivals == "until_window":
        res = simulate_rigid_steady(trace, task.n_jobs, thr, dict(task.capacity), config, seed=task.seed)
    else:
        res = simulate_rigid(trace(task.n_jobs), thr, dict(task.capacity), config, seed=task.seed)
    lo, hi = config.window or (0, res.summary["n_jobs"])
    head = {"rate_per_h": task.rate_per_h, "policy": config.policy, "agnostic": config.agnostic,
            "mechanism": config.mechanism, "seed": task.seed, "window_lo": lo, "window_hi": hi}
    return {"row": {**head, **res.summary}, "jobs": [{**head, **r} for r in res.jobs.to_dict(orient="records")]}


def run_simulation(task: SimTask,
                   progress: bool = False) -> tuple[SimulationResult, Record, list[Record]]:
    """Run one simulation task: ``(SimulationResult, row, job rows)``; ``progress`` shows the run's bar."""
    wl = resolve_workload(task.workload)
    cluster = task_cluster(task.cluster)
    truth = cached_truth(task.truth, tuple(sorted({j.application for j in wl.jobs})), cluster.gpu_type_names)
    res = simulate(wl, cluster, task.policy, truth=truth, config=_sim_config(task.config), seed=task.seed,
                   policy_options=dict(task.options), progress=progress)
    load, hours = generated_load(task.workload)
    head = {"workload": wl.name, "load": load, "hours": hours, "policy": task.policy, "seed": task.seed}
    row = {**head, **{k: res.summary.get(k) for k in SUMMARY_COLUMNS}}
    jobs = [{**head, **r} for r in res.jobs.to_dict(orient="records")]
    return res, row, jobs


def check_sim_tasks(tasks: Iterable[Any]) -> None:  # Any: tasks of any kind (only simulation tasks are checked)
    """Every check a simulation makes before its first round (:func:`goodopt.sim.config.check_setup`), for
    each distinct workload, cluster, policy and settings among ``tasks`` (simulation tasks; others skipped)."""
    seen = set()
    for t in tasks:
        ident = (t.workload, repr(t.cluster), repr(t.config), t.policy, repr(t.options)) \
            if isinstance(t, SimTask) else None
        if ident is None or ident in seen:
            continue
        seen.add(ident)
        try:
            check_setup(resolve_workload(t.workload), task_cluster(t.cluster),
                        make_policy(t.policy, **dict(t.options)), _sim_config(t.config))
        except ValidationError as exc:
            raise ValidationError(f"task {t.describe()}: {exc.field}", exc.problem, exc.fix) from None


def _sim_config(config: Mapping[str, Any]) -> SimConfig:
    return SimConfig(**dict(config))


def task_cluster(spec: RecordIn | str | os.PathLike[str]) -> Cluster:
    """The cluster of a task: a scenario's (by any spelling) or ``{"node_groups": [...]}``."""
    if isinstance(spec, Mapping):
        return Cluster(tuple(NodeGroup(g["gpu_type"], int(g["gpus_per_node"]), int(g["n_nodes"]),
                                       g.get("name", "")) for g in spec["node_groups"]))
    return load_scenario(spec).cluster


def cluster_spec(cluster: Cluster) -> Record:
    """The mapping form of a :class:`~goodopt.cluster.Cluster` that :func:`task_cluster` reads back."""
    return {"node_groups": [{"gpu_type": g.gpu_type, "gpus_per_node": g.gpus_per_node, "n_nodes": g.n_nodes,
                             **({"name": g.prefix} if g.prefix else {})} for g in cluster.groups]}


@functools.lru_cache(maxsize=4)
def cached_truth(source: str, apps: tuple[str, ...], gpu_types: tuple[str, ...] = ("t4",)) -> Truth:
    """Ground truth by source (``"model"`` or a traces folder), built once per process."""
    if source == "model":
        return model_truth(apps, gpu_type=gpu_types)
    return trace_truth(source, apps, gpu_types=gpu_types)


def generated_load(spec: str) -> tuple[float, float]:
    """(load, hours) of ``generated:LOAD:SEED[:HOURS]``; a CSV in a ``load-X`` folder has load X."""
    if str(spec).startswith(GENERATED_PREFIX):
        load, _, hours, _ = parse_generated(str(spec))
        return load, hours
    folder = Path(str(spec)).parent.name
    if folder.startswith("load-"):
        with contextlib.suppress(ValueError):
            return float(folder[5:]), math.nan
    return math.nan, math.nan


def named_rows(task: Task, rows: list[Record]) -> list[Record]:
    """Rows with the task's label (after the first column) and its ``vary`` values."""
    extra = [("label", task.label)] + list(getattr(task, "vary", {}).items())
    out = []
    for r in rows:
        items = list(r.items())
        out.append(dict(items[:1] + extra + items[1:]))
    return out
