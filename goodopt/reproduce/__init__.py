"""``goodopt reproduce``: re-run the papers' headline experiments and put each published number beside ours.

:func:`reproduce` runs the named experiments of
:data:`~goodopt.reproduce.experiments.EXPERIMENTS` through the sweep runner
(cached under ``OUT/cache``: a rerun computes only what is missing; local
processes or Dask) and writes, all together when every experiment has run
(a run interrupted or killed leaves the previous report whole):

* ``OUT/report.md``: per experiment its settings and a table of published vs
  reproduced numbers with the band each must fall in and a pass/fail mark
  (quick runs are marked indicative), each number's source, and the wall time;
* ``OUT/results.csv`` (+ ``.meta.json``): the same as a tidy table;
* ``OUT/<experiment>.png``: published vs reproduced, per setting and policy;
* ``OUT/tables/``: the sweeps' own tables.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from goodopt.errors import ValidationError
from goodopt.outputs import OutputSet, check_output, output_set
from goodopt.provenance import stamp
from goodopt.runs.sweep import checked_tasks, jobs_path, longest_first, run_sweep, run_tasks
from goodopt.runs.tables import write_table_into
from goodopt.runs.tasks import check_sim_tasks, estimated_cpu_s
from goodopt.traces import traces_dir
from goodopt.validation import suggest

from .comparison import Comparison, Experiment, TaskBatch, read_published
from .experiments import EXPERIMENTS
from .report import write_figure, write_report

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reproduction:
    """What :func:`reproduce` ran and found: one row per comparison, and wall times (``seconds["all"]``: every
    task, in one pool; per experiment: reading its tables and comparing); ``cpu_seconds``: per experiment, the
    CPU time its tasks took (tasks served from the cache count what they took when computed; a task two
    experiments share counts in both); ``task_cpu_s``: the CPU time of every distinct task, each counted once."""

    results: pd.DataFrame
    seconds: dict[str, float]
    quick: bool
    out: Path
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    task_cpu_s: float = math.nan


def reproduce(names: Iterable[str] | None = None, *, out: str | os.PathLike[str] = "reproduce_out",
              quick: bool = False, traces: str | os.PathLike[str] | None = None, workers: int = 1,
              dask: str | None = None, progress: bool = True) -> Reproduction:
    """Run the experiments ``names`` (default: all) and write the report under ``out``."""
    names = list(names or EXPERIMENTS)
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise ValidationError("experiment", f"unknown experiment {unknown[0]!r}",
                              f"{suggest(unknown[0], EXPERIMENTS)}choose from {', '.join(EXPERIMENTS)}")
    out = check_output(out, kind="dir", option="out", replaced=False)
    root = traces_dir(traces)
    for name in names:  # every published file checked before the first task, not after hours
        for published in EXPERIMENTS[name].published:
            read_published(root, published)
    rows: list[dict[str, Any]] = []
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    t0 = time.perf_counter()
    task_cpu_s = _compute_all(names, root, out, quick, workers=workers, dask=dask, progress=progress)
    seconds["all"] = time.perf_counter() - t0
    with output_set() as files:
        for name in names:
            t0 = time.perf_counter()
            tables = _run_experiment(EXPERIMENTS[name], root, out, files, quick=quick, workers=workers, dask=dask,
                                     progress=progress)
            comparisons = EXPERIMENTS[name].compare(tables, root)
            seconds[name] = time.perf_counter() - t0
            cpu[name] = float(sum(t["cpu_s"].fillna(0).sum() for key, t in tables.items()
                                  if not key.endswith("-jobs") and "cpu_s" in t))
            rows += [_row(c, quick) for c in comparisons]
            log.info("%s: %d comparisons in %.0f s", name, len(comparisons), seconds[name])
        results = pd.DataFrame(rows)
        # stamped (machine, date, commit) as a benchmark table is: docs/data/reproduce.csv is this file
        write_table_into(files, results, out / "results.csv", experiments=names, quick=quick, seconds=seconds,
                         cpu_seconds=cpu, task_cpu_s=task_cpu_s, **stamp())
        for name in names:
            write_figure(results[results.experiment == name], EXPERIMENTS[name], files.path(out / f"{name}.png"),
                         quick=quick)
        write_report(results, [EXPERIMENTS[n] for n in names], seconds, quick, files.path(out / "report.md"), cpu,
                     task_cpu_s)
    return Reproduction(results, seconds, quick, out, cpu, task_cpu_s)


def all_tasks(names: Iterable[str], root: Path, quick: bool) -> list[Any]:  # Any: tasks of every kind the experiments run
    """The distinct tasks of the experiments ``names``, checked, the longest (estimated) first."""
    tasks: list[Any] = []
    for name in names:
        for spec in EXPERIMENTS[name].specs(root, quick):
            if isinstance(spec, TaskBatch):
                check_sim_tasks(spec.tasks)
                tasks += spec.tasks
            else:
                tasks += checked_tasks(spec)
    return longest_first(tasks)


def _compute_all(names: list[str], root: Path, out: Path, quick: bool, **run: Any) -> float:
    """Every task of the experiments ``names`` in one pool, the longest first (by
    :func:`~goodopt.runs.tasks.estimated_cpu_s`), into the cache ``out/cache``, from which the experiments then
    read their tables: the workers stay busy to the end instead of idling through each sweep's last task.
    Returns the CPU time of these tasks, each counted once (cached ones count what they took when computed)."""
    ordered = all_tasks(names, root, quick)
    log.info("%d tasks of %d experiment(s), estimated %.0f s of CPU", len(ordered), len(names),
             sum(map(estimated_cpu_s, ordered)))
    table, _, _ = run_tasks(ordered, "all experiments", cache_dir=out / "cache", **run)
    return float(table["cpu_s"].fillna(0).sum()) if "cpu_s" in table else math.nan


def _run_experiment(exp: Experiment, root: Path, out: Path, files: OutputSet, **run: Any) -> dict[str, pd.DataFrame]:
    """Run ``exp``'s sweeps (cached under ``out/cache``); their tables staged in ``files``; name -> table."""
    quick = run.pop("quick")
    tables: dict[str, pd.DataFrame] = {}
    for spec in exp.specs(root, quick):
        if isinstance(spec, TaskBatch):
            table, jobs, _ = run_tasks(list(spec.tasks), spec.name, cache_dir=out / "cache", **run)
            path = out / "tables" / f"{spec.name}.csv"
            write_table_into(files, table, path, quick=quick)
            write_table_into(files, jobs, jobs_path(path), quick=quick)
            tables[spec.name], tables[f"{spec.name}-jobs"] = table, jobs
            continue
        res = run_sweep(spec, cache_dir=out / "cache", **run)
        res.write_into(files, out / "tables" / f"{spec['name']}.csv", quick=quick)
        tables[spec["name"]], tables[f"{spec['name']}-jobs"] = res.table, res.jobs
    return tables


def _row(c: Comparison, quick: bool) -> dict[str, Any]:
    row = {k: v for k, v in asdict(c).items() if k != "band"}
    row["band"] = "" if c.band is None else str(c.band)
    row["verdict"] = ("" if c.band is None else "indicative" if quick and not c.like_for_like
                      else "pass" if c.band.holds(c.published, c.reproduced) else "FAIL")
    return row


__all__ = ["EXPERIMENTS", "Reproduction", "reproduce"]
