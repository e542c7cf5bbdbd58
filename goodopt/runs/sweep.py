"""Sweeps: a grid of solves or simulations as one tidy table, cached, local or on Dask.

A sweep is described by a :class:`~goodopt.runs.spec.SweepSpec` (usually a
YAML file). It expands to tasks (:mod:`goodopt.runs.tasks`); a finished task
is stored in the cache folder under a key of everything it depends on
(:mod:`goodopt.runs.cache`), so an interrupted sweep re-run with the same
cache only computes what is missing, and identical tasks of different sweeps
are computed once.

A task's result depends only on its inputs, so the table does not depend on
where or in which order tasks ran (apart from the timing columns,
:data:`~goodopt.runs.tasks.TIMING_COLUMNS`).

Two grids:

``kind: solve``
    scenarios x methods x seeds (x objective ``p``); one row per solve with
    fitness, bound, gap, status and times, plus ``best_bound``,
    ``gap_to_bound`` and ``relative_fitness`` within each (scenario, p).
``kind: simulate``
    workloads x policies x seeds (x engine settings in ``vary``); one row per
    run with the run's summary (JCTs, makespan, restarts, utilisation, ...).
``kind: pareto``
    scenarios x criteria x front methods (x seeds for the heuristics); one
    row per front with its indicators against the exact front, and one per
    heuristic's attainment surface (:mod:`goodopt.runs.pareto_tasks`).

Each also gives a per-job table (:attr:`SweepResult.jobs`): GPUs and speedup
per job for solves, JCT per job for simulations, the points of each front.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from goodopt.outputs import OutputSet, output_set

from ..records import Record, RecordIn
from .cache import TaskCache, task_key
from .execute import map_tasks
from .spec import SweepSpec, load_spec, spec_from_dict, spec_to_dict
from .tables import add_reference_columns, frame, table_outputs, write_table_into
from .task_types import Task
from .tasks import check_sim_tasks, estimated_cpu_s, expand, named_rows, run_task

log = logging.getLogger(__name__)


def sweep_outputs(path: str | os.PathLike[str]) -> list[Path]:
    """Every file :meth:`SweepResult.write` writes for ``path``."""
    path = Path(path)
    return table_outputs(path) + table_outputs(jobs_path(path))


def jobs_path(path: str | os.PathLike[str]) -> Path:
    """The per-job table beside ``path``: ``res.csv`` -> ``res-jobs.csv``."""
    path = Path(path)
    return path.with_name(f"{path.stem}-jobs{path.suffix or '.csv'}")


@dataclass
class SweepResult:
    """The sweep's tidy tables and how many tasks were computed now vs read from the cache."""

    table: pd.DataFrame
    jobs: pd.DataFrame
    spec: SweepSpec
    n_computed: int
    n_cached: int

    def write(self, path: str | os.PathLike[str], **metadata: Any) -> Path:  # Any: JSON-shaped metadata values
        """``path`` (CSV), ``<stem>-jobs.csv`` and their ``.meta.json`` (metadata incl. the spec and one
        run id), put in place together."""
        with output_set() as out:
            self.write_into(out, path, **metadata)
        return Path(path)

    def write_into(self, out: OutputSet, path: str | os.PathLike[str], **metadata: Any) -> Path:  # Any: JSON-shaped metadata values
        """:meth:`write` as part of the output set ``out``."""
        path = Path(path)
        meta = {"sweep": spec_to_dict(self.spec), "n_tasks": self.n_computed + self.n_cached, **metadata}
        write_table_into(out, self.table, path, **meta)
        write_table_into(out, self.jobs, jobs_path(path), **meta)
        return path


def as_spec(spec: SweepSpec | RecordIn | str | Path) -> SweepSpec:
    """A :class:`SweepSpec` from a spec, a mapping or a YAML path."""
    if isinstance(spec, SweepSpec):
        return spec
    if isinstance(spec, Mapping):
        return spec_from_dict(spec)
    return load_spec(spec)


def run_sweep(spec: SweepSpec | RecordIn | str | Path, *, cache_dir: str | os.PathLike[str] | None = None,
              workers: int = 1, dask: str | None = None, progress: Any = True) -> SweepResult:  # progress: True, False or a rich Progress
    """Run every task of ``spec`` not yet in ``cache_dir``; returns the tables.

    ``cache_dir=None`` disables caching. ``workers`` local processes, or a
    Dask cluster at ``dask`` (``tcp://host:port``). A failed task raises
    :class:`~goodopt.errors.TaskError` after the others ran (and were
    cached); Ctrl-C raises :class:`~goodopt.errors.Interrupted`.
    """
    spec = as_spec(spec)
    tasks = checked_tasks(spec)
    table, jobs, n_computed = run_tasks(tasks, spec.name, cache_dir=cache_dir, workers=workers, dask=dask,
                                        progress=progress)
    n_cached = len(table) - n_computed
    if spec.kind == "solve":
        table = add_reference_columns(table, by=["scenario", "p"])
    elif spec.kind == "pareto":
        from .pareto_tasks import judged

        table = judged(table, jobs, spec)
    return SweepResult(table, jobs, spec, n_computed, n_cached)


def checked_tasks(spec: SweepSpec | RecordIn | str | Path) -> list[Task]:
    """Every task of ``spec`` (:func:`~goodopt.runs.tasks.expand`), each simulation's setup checked before any
    runs (:func:`~goodopt.runs.tasks.check_sim_tasks`), as :func:`run_sweep` runs them."""
    tasks = list(expand(as_spec(spec)))
    check_sim_tasks(tasks)
    return tasks


def run_tasks(tasks: Sequence[Task], name: str, *, cache_dir: str | os.PathLike[str] | None = None, workers: int = 1,
              dask: str | None = None, progress: Any = True) -> tuple[pd.DataFrame, pd.DataFrame, int]:  # progress: True, False or a rich Progress
    """Run ``tasks`` (any kinds of :mod:`goodopt.runs.tasks`) with the cache of ``cache_dir`` as
    :func:`run_sweep` does: ``(table, per-job table, number computed now)``, one table row per task."""
    results, n_computed = run_cached(tasks, name, cache_dir=cache_dir, workers=workers, dask=dask,
                                     progress=progress)
    rows = [named_rows(task, [res["row"]])[0] for task, res in zip(tasks, results)]
    jobs = [r for task, res in zip(tasks, results) for r in named_rows(task, res["jobs"])]
    return frame(rows), frame(jobs), n_computed


def run_cached(tasks: Sequence[Task], name: str, *, cache_dir: str | os.PathLike[str] | None = None, workers: int = 1,
               dask: str | None = None, progress: Any = True) -> tuple[list[Record], int]:  # progress: True, False or a rich Progress
    """Every result of ``tasks`` (:func:`~goodopt.runs.tasks.run_task`'s), in their order: those found in the
    cache of ``cache_dir`` read from it, the others computed and stored as each arrives; with how many were
    computed now. ``cache_dir=None`` computes them all."""
    cache = TaskCache(cache_dir) if cache_dir is not None else None
    keys: list[str] = [task_key(t) for t in tasks] if cache is not None else [""] * len(tasks)
    done: dict[int, dict[str, Any]] = {}
    if cache is not None:
        for i, (task, key) in enumerate(zip(tasks, keys)):
            hit = cache.get(task, key)
            if hit is not None:
                done[i] = hit
    todo = [i for i in range(len(tasks)) if i not in done]
    log.info("%s: %d tasks, %d cached, %d to run", name, len(tasks), len(done), len(todo))

    def store(n: int, result: Record) -> None:
        i = todo[n]
        done[i] = result
        if cache is not None:
            cache.put(tasks[i], keys[i], result)

    map_tasks(run_task, [tasks[i] for i in todo], workers=workers, dask=dask, progress=progress,
              label=name, describe=lambda t: t.describe(), on_result=store, n_before=len(done),
              cached=cache is not None)
    return [done[i] for i in range(len(tasks))], len(todo)


def longest_first(tasks: Iterable[Task]) -> list[Task]:
    """``tasks`` once each (tasks with the same cache key are one), the longest first by
    :func:`~goodopt.runs.tasks.estimated_cpu_s`: run in one pool in this order, the workers stay busy to the end
    instead of idling through each batch's last task."""
    distinct: dict[str, Task] = {}
    for task in tasks:
        distinct.setdefault(task_key(task), task)
    return sorted(distinct.values(), key=estimated_cpu_s, reverse=True)
