"""Many simulations at once on a local process pool: workloads x policies x seeds.

Each task is self-contained (workload, policy, options, engine settings,
ground-truth source, seed), so results do not depend on the number of workers
or their order. The tidy table has one row per task with the run's summary.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import pandas as pd

from goodopt.cluster import Cluster
from goodopt.errors import ValidationError

from .engine import SimConfig
from .workload import Workload, generate_workload, load_workload

log = logging.getLogger(__name__)

SUMMARY_COLUMNS = ("workload", "policy", "seed", "n_jobs", "avg_jct", "median_jct", "p99_jct", "makespan",
                   "restarts", "avg_utilisation", "avg_ftf_rho", "max_ftf_rho", "n_rounds", "policy_s",
                   "engine_s", "wall_s")


@dataclass(frozen=True)
class SimTask:
    """One simulation: what to run and where to write it (``out_dir`` may be None)."""

    workload: str  # a CSV path or ``generated:LOAD:SEED``
    policy: str
    cluster: Cluster
    config: SimConfig = SimConfig()
    seed: int = 0
    truth: str = "model"  # "model" or a traces directory
    policy_options: dict = field(default_factory=dict)
    out_dir: str | None = None


def resolve_workload(spec) -> Workload:
    """A workload from a CSV path or ``generated:LOAD:SEED[:HOURS]`` (Pollux-style generator, 8 hours
    by default)."""
    if isinstance(spec, Workload):
        return spec
    s = str(spec)
    if s.startswith("generated:"):
        parts = s.split(":")
        try:
            load, seed = float(parts[1]), int(parts[2])
            hours = float(parts[3]) if len(parts) > 3 else 8.0
            if len(parts) > 4:
                raise ValueError
        except (IndexError, ValueError):
            raise ValidationError("workload", f"bad generated workload {s!r}",
                                  "write generated:LOAD:SEED or generated:LOAD:SEED:HOURS, e.g. generated:1.0:0") \
                from None
        suffix = f"-{hours:g}h" if len(parts) > 3 else ""
        return generate_workload(seed, load=load, hours=hours, name=f"generated-{load:g}-{seed}{suffix}")
    return load_workload(s)


def expand_workloads(specs) -> list[str]:
    """Workload specs with folders expanded to their ``*.csv`` files (sorted)."""
    out = []
    for spec in specs:
        p = Path(str(spec))
        if not str(spec).startswith("generated:") and p.is_dir():
            files = sorted(p.glob("*.csv"), key=lambda f: (len(f.stem), f.stem))
            if not files:
                raise ValidationError("workload", f"folder {str(p)!r} holds no .csv workloads")
            out.extend(str(f) for f in files)
        else:
            out.append(str(spec))
    return out


@lru_cache(maxsize=4)
def cached_truth(source: str, apps: tuple[str, ...], gpu_types: tuple[str, ...] = ("t4",)):
    """Ground truth by source (``"model"`` or a traces folder), built once per process."""
    from .truth import model_truth, trace_truth

    if source == "model":
        return model_truth(apps, gpu_type=gpu_types)
    return trace_truth(source, apps, gpu_types=gpu_types)


def run_task_result(task: SimTask):
    """Run one task; returns ``(SimulationResult, Workload)`` (tables written when ``out_dir`` is set)."""
    from . import simulate

    wl = resolve_workload(task.workload)
    truth = cached_truth(task.truth, tuple(sorted({j.application for j in wl.jobs})), task.cluster.gpu_type_names)
    res = simulate(wl, task.cluster, task.policy, truth=truth, config=task.config, seed=task.seed,
                   policy_options=task.policy_options)
    if task.out_dir:
        res.write(task.out_dir)
    return res, wl


def run_task(task: SimTask) -> dict:
    """Run one task; returns its summary row (and writes its tables when ``out_dir`` is set)."""
    res, _ = run_task_result(task)
    row = {"workload": _stem(str(task.workload)), "policy": task.policy, "seed": task.seed}
    row.update({k: res.summary.get(k) for k in SUMMARY_COLUMNS if k not in row})
    return row


def run_tasks(tasks, *, workers: int = 1, dask: str | None = None, progress: bool = True) -> pd.DataFrame:
    """Run ``tasks`` (on a process pool when ``workers > 1``, or on a Dask cluster at ``dask``);
    one tidy row per task, in task order."""
    from goodopt.sweep import map_tasks

    rows = map_tasks(run_task, list(tasks), workers=workers, dask=dask, progress=progress, label="simulations",
                     describe=lambda t: f"{Path(t.workload).stem} / {t.policy}")
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def grid(workloads, policies, cluster: Cluster, *, seeds=(0,), config: SimConfig = SimConfig(), truth="model",
         policy_options=None, out_dir=None) -> list[SimTask]:
    """Tasks for every (workload, policy, seed); outputs under ``out_dir/<workload>/<policy>-s<seed>``."""
    policy_options = policy_options or {}
    tasks = []
    for w in expand_workloads(workloads):
        for p in policies:
            for s in seeds:
                od = None
                if out_dir is not None:
                    od = str(Path(out_dir) / _stem(w) / f"{p}-s{s}")
                tasks.append(SimTask(w, p, cluster, config, s, truth, dict(policy_options.get(p, {})), od))
    return tasks


def _stem(spec: str) -> str:
    p = Path(spec)
    if spec.startswith("generated:"):
        return spec.replace(":", "-")
    return f"{p.parent.name}-{p.stem}" if p.parent.name else p.stem


def with_config(tasks, **changes) -> list[SimTask]:
    """The same tasks with changed engine settings."""
    return [replace(t, config=replace(t.config, **changes)) for t in tasks]
