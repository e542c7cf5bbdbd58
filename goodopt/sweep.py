"""Sweeps: a grid of solves or simulations as one tidy table, cached, local or on Dask.

A sweep is described by a :class:`SweepSpec` (usually a YAML file, see
:func:`load_spec`). It expands to *tasks*: self-contained, JSON-ready inputs
(scenario or workload, method or policy, options, seeds, engine settings).
Each task is hashed (SHA-256 of its canonical JSON, the contents of the files
it reads, the goodopt version and its source code); a finished task is stored as
``<cache>/<hash>.json``, so an interrupted sweep re-run with the same cache
folder only computes what is missing, and identical tasks of different sweeps
are computed once.

Tasks run on a local process pool (``workers``) or on an existing Dask
cluster (``dask="tcp://host:port"``, through ``dask.distributed``'s
``concurrent.futures`` executor). A task's result depends only on its inputs,
so the table does not depend on where or in which order tasks ran (apart from
the timing columns, :data:`TIMING_COLUMNS`).

Two grids:

``kind: solve``
    scenarios x methods x seeds (x objective ``p``); one row per solve with
    fitness, bound, gap, status and times, plus ``best_bound``,
    ``gap_to_bound`` and ``relative_fitness`` within each (scenario, p).
``kind: simulate``
    workloads x policies x seeds (x engine settings in ``vary``); one row per
    run with the run's summary (JCTs, makespan, restarts, utilisation, ...).

Both also give a per-job table (:attr:`SweepResult.jobs`): GPUs and speedup
per job for solves, JCT per job for simulations.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import functools
import hashlib
import json
import logging
import math
import multiprocessing
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from .compare import RANDOMISED
from .errors import ValidationError

log = logging.getLogger(__name__)

KINDS = ("solve", "simulate")
#: Columns that measure time: they differ between runs of the same task.
TIMING_COLUMNS = ("seconds", "build_s", "solve_s", "policy_s", "engine_s", "wall_s")
_SIM_CONFIG_FIELDS = ("interval_s", "restart_delay_s", "interference_slowdown", "max_time_s")


# ------------------------------------------------------------------ spec
@dataclass(frozen=True)
class Variant:
    """A method or policy under a label, with its options (``pwl-8`` = ``milp-pwl`` with 8 breakpoints)."""

    label: str
    name: str
    options: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class SweepSpec:
    """A sweep grid; see the module docstring and :func:`spec_from_dict` for the fields."""

    name: str
    kind: str
    variants: tuple[Variant, ...]
    seeds: tuple[int, ...] = (0,)
    # kind: solve
    scenarios: tuple[str, ...] = ()
    time_limit_s: float | None = None
    node_limit: int | None = None
    p_values: tuple[float, ...] = ()
    # kind: simulate
    workloads: tuple[str, ...] = ()
    cluster: str = "pollux-testbed"
    truth: str = "model"
    config: Mapping = field(default_factory=dict)
    vary: Mapping = field(default_factory=dict)


def load_spec(path) -> SweepSpec:
    """Read a sweep spec from YAML (see :func:`spec_from_dict` for the fields)."""
    p = Path(path)
    if not p.is_file():
        raise ValidationError("spec", f"sweep spec {str(p)!r} not found", "give the path of a YAML file")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise ValidationError("spec", f"{p} is not valid YAML: {exc}") from None
    return spec_from_dict(data, base_dir=p.parent, default_name=p.stem)


def spec_from_dict(d: Mapping, *, base_dir=None, default_name: str = "sweep") -> SweepSpec:
    """Validate a sweep mapping.

    Common fields: ``name``, ``kind`` (``solve`` or ``simulate``), ``seeds``
    (list of ints, or a count ``n`` meaning ``0..n-1``).

    ``kind: solve``: ``scenarios`` (files, shipped names, ``family:NAME:SEED``),
    ``families`` (``{names: [...], seeds: [...]}``, expanded to family
    scenarios), ``methods`` (names or ``{label, method, options}``), ``options``
    (method or label -> options), ``time_limit_s`` (wall clock: results then
    depend on the machine's load), ``node_limit`` (a deterministic budget of
    branch-and-bound nodes per MILP, for every method that takes one; the GA's is ``n_gen``), ``p``
    (objective ``p`` values to sweep; ``-inf`` allowed). Seeds apply to
    randomised methods only.

    ``kind: simulate``: ``workloads`` (CSV files, folders, ``generated:LOAD:SEED[:HOURS]``),
    ``generated`` (``{loads, seeds, hours}``), ``policies`` (names or
    ``{label, policy, options}``), ``options`` (policy or label -> options),
    ``cluster`` (a scenario whose cluster is used; default ``pollux-testbed``),
    ``truth`` (``model``, ``traces`` = ``$GOODOPT_TRACES``, or a folder),
    ``config`` (engine settings: ``interval_s``, ``restart_delay_s``,
    ``interference_slowdown``, ``max_time_s``), ``vary`` (engine setting -> list
    of values, an extra grid axis each).
    """
    if not isinstance(d, Mapping):
        raise ValidationError("spec", f"must be a mapping, got {type(d).__name__}")
    known = {"name", "kind", "seeds", "scenarios", "families", "methods", "options", "time_limit_s", "node_limit", "p",
             "workloads", "generated", "policies", "cluster", "truth", "config", "vary", "description"}
    unknown = sorted(set(d) - known)
    if unknown:
        raise ValidationError(f"spec.{unknown[0]}", "unknown field", f"valid fields: {', '.join(sorted(known))}")
    kind = d.get("kind")
    if kind not in KINDS:
        raise ValidationError("spec.kind", f"must be one of {KINDS}, got {kind!r}")
    seeds = _seeds(d.get("seeds", [0]))
    options = d.get("options") or {}
    if not isinstance(options, Mapping):
        raise ValidationError("spec.options", "must map a method/policy (or label) to its options")
    base = Path(base_dir) if base_dir is not None else None
    name = str(d.get("name", default_name))
    if kind == "solve":
        from .solvers.api import METHODS

        variants = _variants(d.get("methods"), "methods", "method", METHODS, options)
        scenarios = [_local(s, base) for s in _list(d.get("scenarios", []), "spec.scenarios")]
        fam = d.get("families")
        if fam is not None:
            if not isinstance(fam, Mapping) or "names" not in fam:
                raise ValidationError("spec.families", "must be {names: [...], seeds: [...]}")
            scenarios += [f"family:{n}:{s}" for n in _list(fam["names"], "spec.families.names")
                          for s in _seeds(fam.get("seeds", [0]), "spec.families.seeds")]
        if not scenarios:
            raise ValidationError("spec.scenarios", "no scenarios", "list scenarios or families")
        t = d.get("time_limit_s")
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0):
            raise ValidationError("spec.time_limit_s", f"must be a number > 0, got {t!r}", "omit it for no limit")
        nl = d.get("node_limit")
        if nl is not None and (isinstance(nl, bool) or not isinstance(nl, int) or nl < 1):
            raise ValidationError("spec.node_limit", f"must be a whole number >= 1, got {nl!r}",
                                  "omit it for no node budget")
        from .fitness import check_p

        p_values = tuple(check_p(p) for p in _list(d.get("p", []), "spec.p"))
        return SweepSpec(name, kind, variants, seeds, scenarios=tuple(scenarios),
                         time_limit_s=None if t is None else float(t), node_limit=nl, p_values=p_values)
    from .sim.policies import POLICIES

    variants = _variants(d.get("policies"), "policies", "policy", tuple(POLICIES), options)
    workloads = [_local(w, base) for w in _list(d.get("workloads", []), "spec.workloads")]
    gen = d.get("generated")
    if gen is not None:
        if not isinstance(gen, Mapping) or "loads" not in gen:
            raise ValidationError("spec.generated", "must be {loads: [...], seeds: [...], hours: H}")
        hours = gen.get("hours", 8)
        loads = [float(x) for x in _list(gen["loads"], "spec.generated.loads")]
        workloads += [f"generated:{ld:g}:{s}:{hours:g}" for ld in loads
                      for s in _seeds(gen.get("seeds", [0]), "spec.generated.seeds")]
    from .sim.sweep import expand_workloads

    workloads = expand_workloads(workloads)
    if not workloads:
        raise ValidationError("spec.workloads", "no workloads", "list workloads or a generated block")
    config = dict(d.get("config") or {})
    vary = {k: list(_list(v, f"spec.vary.{k}")) for k, v in (d.get("vary") or {}).items()}
    for key in [*config, *vary]:
        if key not in _SIM_CONFIG_FIELDS:
            raise ValidationError(f"spec.config.{key}", "not an engine setting",
                                  f"valid settings: {', '.join(_SIM_CONFIG_FIELDS)}")
    from .sim.engine import SimConfig

    for key, values in vary.items():  # validate every value now, not on a worker
        for v in values:
            SimConfig(**{**config, key: v})
    SimConfig(**config)
    truth = str(d.get("truth", "model"))
    if truth not in ("model", "traces"):
        truth = _local(truth, base)
    return SweepSpec(name, kind, variants, seeds, workloads=tuple(workloads), cluster=_local(
        str(d.get("cluster", "pollux-testbed")), base), truth=truth, config=config, vary=vary)


def _list(v, where) -> list:
    if v is None:
        return []
    if isinstance(v, (str, int, float)):
        return [v]
    if not isinstance(v, Iterable):
        raise ValidationError(where, f"must be a list, got {type(v).__name__}")
    return list(v)


def _seeds(v, where="spec.seeds") -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        if v < 1:
            raise ValidationError(where, f"a count of seeds must be >= 1, got {v}")
        return tuple(range(v))
    out = _list(v, where)
    if not out or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in out):
        raise ValidationError(where, f"must be whole numbers >= 0 (or a count), got {v!r}")
    return tuple(out)


def _local(s, base) -> str:
    """A relative file path is taken relative to the spec's folder (names and families are kept)."""
    s = str(s)
    if base is None or s.startswith(("family:", "generated:")) or Path(s).is_absolute():
        return s
    cand = base / s
    return str(cand) if cand.exists() else s


def _variants(entries, field_name, key, known, options) -> tuple[Variant, ...]:
    entries = _list(entries, f"spec.{field_name}")
    if not entries:
        raise ValidationError(f"spec.{field_name}", "is empty", f"list at least one {key}")
    out = []
    for e in entries:
        if isinstance(e, str):
            label, name, opts = e, e, {}
        elif isinstance(e, Mapping) and key in e:
            name = str(e[key])
            label, opts = str(e.get("label", name)), dict(e.get("options") or {})
        else:
            raise ValidationError(f"spec.{field_name}", f"entry {e!r} is neither a name nor {{label, {key}, options}}")
        if name not in known:
            raise ValidationError(f"spec.{field_name}", f"unknown {key} {name!r}", f"choose from {', '.join(known)}")
        merged = {**dict(options.get(name) or {}), **dict(options.get(label) or {} if label != name else {}), **opts}
        out.append(Variant(label, name, merged))
    labels = [v.label for v in out]
    if len(set(labels)) != len(labels):
        raise ValidationError(f"spec.{field_name}", "labels must be unique", "give each variant its own label")
    return tuple(out)


def spec_to_dict(spec: SweepSpec) -> dict:
    """The YAML-ready mapping of ``spec`` (every field explicit)."""
    key = "methods" if spec.kind == "solve" else "policies"
    inner = "method" if spec.kind == "solve" else "policy"
    out = {"name": spec.name, "kind": spec.kind, "seeds": list(spec.seeds),
           key: [{"label": v.label, inner: v.name, "options": dict(v.options)} for v in spec.variants]}
    if spec.kind == "solve":
        out.update(scenarios=list(spec.scenarios), time_limit_s=spec.time_limit_s, node_limit=spec.node_limit,
                   p=[_p_str(p) for p in spec.p_values])
    else:
        out.update(workloads=list(spec.workloads), cluster=spec.cluster, truth=spec.truth,
                   config=dict(spec.config), vary={k: list(v) for k, v in spec.vary.items()})
    return out


def _p_str(p: float):
    return p if math.isfinite(p) else str(p)


# ------------------------------------------------------------------ tasks
def expand(spec: SweepSpec) -> list[dict]:
    """Every task of ``spec``, as JSON-ready dicts, in grid order."""
    tasks = []
    if spec.kind == "solve":
        from .solvers.api import METHOD_OPTIONS

        for sc in spec.scenarios:
            for p in (spec.p_values or (None,)):
                for v in spec.variants:
                    seeds = spec.seeds if v.name in RANDOMISED else (None,)
                    for s in seeds:
                        opts = dict(v.options)
                        if spec.time_limit_s is not None:
                            opts.setdefault("time_limit_s", spec.time_limit_s)
                        if spec.node_limit is not None and "node_limit" in METHOD_OPTIONS[v.name]:
                            opts.setdefault("node_limit", spec.node_limit)
                        if s is not None:
                            opts["seed"] = s
                        tasks.append({"kind": "solve", "scenario": sc, "p": None if p is None else _p_str(p),
                                      "label": v.label, "method": v.name, "seed": s, "options": opts})
        return tasks
    from .sim.engine import SimConfig

    defaults = {k: getattr(SimConfig(), k) for k in _SIM_CONFIG_FIELDS}  # explicit: equal runs share a key
    axes = list(spec.vary.items())
    combos = [{}]
    for k, values in axes:
        combos = [{**c, k: v} for c in combos for v in values]
    for w in spec.workloads:
        for combo in combos:
            for v in spec.variants:
                for s in spec.seeds:
                    tasks.append({"kind": "simulate", "workload": w, "cluster": spec.cluster, "truth": spec.truth,
                                  "label": v.label, "policy": v.name, "seed": s, "options": dict(v.options),
                                  "config": {k: float(v) for k, v in {**defaults, **dict(spec.config),
                                                                      **combo}.items()}, "vary": combo})
    return tasks


#: Task fields that only name the result (added to its row), not inputs of the computation.
_NAMING = ("label", "vary")


def task_key(task: Mapping) -> str:
    """Hash of a task's inputs: its JSON (without the naming fields), the files it reads, the goodopt version
    and its source (:func:`code_digest`). Tasks of different sweeps that compute the same thing share a key."""
    from . import __version__

    task = {k: v for k, v in task.items() if k not in _NAMING}
    files = {}
    for k in ("scenario", "workload", "cluster"):
        v = task.get(k)
        if v and Path(str(v)).is_file():
            files[k] = hashlib.sha256(Path(str(v)).read_bytes()).hexdigest()
    blob = json.dumps({"task": task, "files": files, "goodopt": __version__, "code": code_digest()}, sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 of goodopt's own source (``goodopt``, ``goodopt.formulations``, ``goodopt.solvers``): a cached
    result is reused only by the code that computed it."""
    import importlib

    h = hashlib.sha256()
    for pkg in ("goodopt", "goodopt.formulations", "goodopt.solvers"):
        root = Path(importlib.import_module(pkg).__file__).parent
        files = sorted(root.glob("*.py")) if pkg != "goodopt" else sorted(root.rglob("*.py"))
        for f in files:
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def run_task(task: Mapping) -> dict:
    """Compute one task (on any worker); returns ``{"row": {...}, "jobs": [{...}, ...]}`` without the
    naming columns (see :func:`_with_names`)."""
    if task["kind"] == "solve":
        return _run_solve(task)
    return _run_simulation(task)


def _run_solve(task) -> dict:
    from .compare import result_row
    from .scenario import load_scenario
    from .solvers import solve

    _warm_up(task["method"])
    sc = load_scenario(task["scenario"])
    if task["p"] is not None:
        sc = sc.with_objective(p=float(task["p"]))
    pr = sc.problem()
    res = solve(pr, task["method"], dict(task["options"]))
    row = {"scenario": sc.name, "p": sc.objective.p, **result_row(pr, task["method"], task["seed"], res)}
    row["pwl_breakpoints"] = task["options"].get("breakpoints") if task["method"] == "milp-pwl" else None
    row["pwl_error_bound"] = res.extra.get("pwl_error_bound")
    row["n_placement_failed"] = len(res.extra.get("placement_failed_jobs", ()))  # jobs a count-level answer
    # could not place on nodes (they run on fewer GPUs)
    jobs = []
    if res.has_solution:
        gpus = res.x.sum(axis=1)
        nodes = (res.x > 0).sum(axis=1)
        for j, name in enumerate(pr.job_names):
            jobs.append({"scenario": sc.name, "p": sc.objective.p, "seed": task["seed"],
                         "job": name, "application": sc.jobs[j].application, "n_gpus": int(gpus[j]),
                         "n_nodes": int(nodes[j]), "speedup": float(res.speedups[j])})
    return {"row": row, "jobs": jobs}


@functools.lru_cache(maxsize=None)
def _warm_up(method: str) -> None:
    """Solve a tiny instance once per process and method, so first-use costs (imports, the solver library's
    set-up) are not charged to the first timed solve of a worker."""
    if method not in ("milp", "milp-pwl", "gavel", "ga", "nsga2"):
        return
    from .families import family
    from .solvers import solve

    opts = {"seed": 0, "pop_size": 8, "n_gen": 2} if method in RANDOMISED else {}
    solve(family("tiny").scenario(0).problem(), method, opts)


def _run_simulation(task) -> dict:
    from .scenario import load_scenario
    from .sim.engine import SimConfig
    from .sim.sweep import SUMMARY_COLUMNS, SimTask, run_task_result
    from .traces import traces_dir

    truth = task["truth"]
    if truth == "traces":
        truth = str(traces_dir(None))
    cluster = load_scenario(task["cluster"]).cluster
    st = SimTask(task["workload"], task["policy"], cluster, SimConfig(**task["config"]), task["seed"], truth,
                 dict(task["options"]))
    res, wl = run_task_result(st)
    load, hours = _generated_load(task["workload"])
    head = {"workload": wl.name, "load": load, "hours": hours, "policy": task["policy"], "seed": task["seed"]}
    row = {**head, **{k: res.summary.get(k) for k in SUMMARY_COLUMNS if k not in head}}
    jobs = [{**head, **r} for r in res.jobs.to_dict(orient="records")]
    return {"row": row, "jobs": jobs}


def _generated_load(spec: str):
    """(load, hours) of ``generated:LOAD:SEED[:HOURS]``; a CSV in a ``load-X`` folder has load X."""
    parts = str(spec).split(":")
    if parts[0] != "generated":
        folder = Path(str(spec)).parent.name
        if folder.startswith("load-"):
            with contextlib.suppress(ValueError):
                return float(folder[5:]), float("nan")
        return float("nan"), float("nan")
    return float(parts[1]), float(parts[3]) if len(parts) > 3 else 8.0


def _with_names(task: Mapping, rows: list[dict]) -> list[dict]:
    """Rows with the task's label (after the first column) and its ``vary`` values."""
    out = []
    for r in rows:
        items = list(r.items())
        named = dict(items[:1] + [("label", task["label"])] + list(task.get("vary", {}).items()) + items[1:])
        out.append(named)
    return out


# ------------------------------------------------------------------ execution
@contextlib.contextmanager
def open_executor(workers: int = 1, dask: str | None = None):
    """A ``concurrent.futures`` executor: a Dask cluster's (``dask`` address), a process pool, or None (inline)."""
    if dask:
        try:
            from distributed import Client
        except ImportError:  # pragma: no cover - dask is a dependency
            raise ValidationError("dask", "dask.distributed is not installed", "pip install 'dask[distributed]'")
        with Client(dask) as client:
            yield client.get_executor()
    elif workers > 1:
        # fresh interpreters, not forks: HiGHS's thread pool does not survive fork (a forked worker's
        # MILP spun forever once the parent had solved one), and nothing else needs the parent's state
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            yield pool
    else:
        yield None


def map_tasks(fn: Callable, items: list, *, workers: int = 1, dask: str | None = None, progress: bool = True,
              label: str = "tasks", describe: Callable | None = None,
              on_result: Callable | None = None) -> list:
    """``[fn(item) for item in items]`` inline, on a process pool or on Dask, with a done/total bar.

    ``on_result(i, result)`` is called as each result arrives (e.g. to cache
    it), so work finished before an interruption is kept. ``progress`` is a
    flag, or a live ``rich.progress.Progress`` to which a row is added.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValidationError("workers", f"must be a whole number >= 1, got {workers!r}")
    items = list(items)
    workers = max(1, min(workers, len(items), os.cpu_count() or 1))
    results: dict[int, object] = {}
    from rich.progress import Progress

    shared = isinstance(progress, Progress)  # a caller's live bar: add a row to it
    with (contextlib.nullcontext(progress) if shared else progress_bar(progress)) as bar, \
            open_executor(workers, dask) as ex:
        t = bar.add_task(label, total=len(items))
        if ex is None:
            for i, item in enumerate(items):
                if describe is not None:
                    bar.update(t, description=describe(item))
                results[i] = fn(item)
                if on_result is not None:
                    on_result(i, results[i])
                bar.advance(t)
        else:
            futures = {ex.submit(fn, item): i for i, item in enumerate(items)}
            for fut in cf.as_completed(futures):
                i = futures[fut]
                results[i] = fut.result()
                if on_result is not None:
                    on_result(i, results[i])
                bar.advance(t)
        if shared:
            bar.remove_task(t)
    return [results[i] for i in range(len(items))]


def progress_bar(enabled: bool = True):
    """A rich progress bar showing description, done / total and elapsed time."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    disable=not enabled, transient=True)


@dataclass
class SweepResult:
    """The sweep's tidy tables and how many tasks were computed now vs read from the cache."""

    table: pd.DataFrame
    jobs: pd.DataFrame
    spec: SweepSpec
    n_computed: int
    n_cached: int

    def write(self, path, **metadata) -> Path:
        """``path`` (CSV), ``path``.json (metadata incl. the spec) and ``<stem>-jobs.csv``."""
        from .compare import write_table

        path = Path(path)
        meta = {"sweep": spec_to_dict(self.spec), "n_tasks": self.n_computed + self.n_cached, **metadata}
        write_table(self.table, path, **meta)
        write_table(self.jobs, path.with_name(f"{path.stem}-jobs.csv"), **meta)
        return path


def run_sweep(spec: SweepSpec | Mapping | str | Path, *, cache_dir=None, workers: int = 1,
              dask: str | None = None, progress: bool = True) -> SweepResult:
    """Run every task of ``spec`` not yet in ``cache_dir``; returns the tables.

    ``cache_dir=None`` disables caching. ``workers`` local processes, or a
    Dask cluster at ``dask`` (``tcp://host:port``).
    """
    if isinstance(spec, (str, Path)):
        spec = load_spec(spec)
    elif isinstance(spec, Mapping):
        spec = spec_from_dict(spec)
    tasks = expand(spec)
    keys = [task_key(t) for t in tasks]
    cache = Path(cache_dir) if cache_dir is not None else None
    done: dict[int, dict] = {}
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        for i, k in enumerate(keys):
            f = cache / f"{k}.json"
            if f.is_file():
                try:
                    done[i] = json.loads(f.read_text())["result"]
                except (json.JSONDecodeError, KeyError):
                    log.warning("ignoring unreadable cache entry %s", f)
    todo = [i for i in range(len(tasks)) if i not in done]
    log.info("sweep %s: %d tasks, %d cached, %d to run", spec.name, len(tasks), len(done), len(todo))

    def store(n, result):
        i = todo[n]
        done[i] = result = json.loads(json.dumps(result, default=_json_default))  # same types as a cache read
        if cache is not None:
            tmp = cache / f"{keys[i]}.json.tmp"
            tmp.write_text(json.dumps({"task": tasks[i], "result": result}, default=_json_default))
            tmp.replace(cache / f"{keys[i]}.json")

    map_tasks(run_task, [tasks[i] for i in todo], workers=workers, dask=dask, progress=progress,
              label=spec.name, describe=_describe, on_result=store)
    rows = [_with_names(tasks[i], [done[i]["row"]])[0] for i in range(len(tasks))]
    jobs = [r for i in range(len(tasks)) for r in _with_names(tasks[i], done[i]["jobs"])]
    table = pd.DataFrame(rows)
    if spec.kind == "solve":
        from .compare import add_reference_columns

        table = add_reference_columns(table, by=["scenario", "p"])
    return SweepResult(table, pd.DataFrame(jobs), spec, len(todo), len(tasks) - len(todo))


def _describe(task) -> str:
    if task["kind"] == "solve":
        return f"{task['scenario']}: {task['label']}"
    return f"{Path(str(task['workload'])).stem} / {task['label']}"


def _json_default(obj):
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return str(obj)
