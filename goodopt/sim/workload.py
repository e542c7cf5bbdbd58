"""Workloads: jobs arriving over time (the Pollux CSV format) and a seeded generator.

A workload CSV has columns ``name,time,application,num_replicas,batch_size``:
arrival second, job type, and the GPU count / total batch a user asked for
(what fixed-size baselines such as Tiresias and Optimus use).

:func:`generate_workload` draws Pollux-style workloads without any external
file. Its tables were derived from the 32 published Pollux workloads (8 per
load 0.5/1.0/1.5/2.0, all sampled from the Microsoft Philly trace):

* the application mix (:data:`APP_MIX`, fraction of jobs);
* per application, the (GPUs, batch) requests users made and how often
  (:data:`REQUESTS`);
* arrivals: at load 1.0, 160 jobs in 8 hours; the hourly arrival weights
  (:data:`HOURLY_WEIGHTS`) are the published workloads' arrivals per hour
  (relative to the mean); arrivals within an hour are uniform. Longer
  windows repeat the 8-hour pattern.

``load`` scales the number of jobs (``n_jobs = round(160 * load * hours / 8)``),
as the published loads do.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from goodopt.errors import ValidationError
from goodopt.profiles import shipped_profile
from goodopt.traces import POLLUX_APPS, WORKLOAD_COLUMNS
from goodopt.validation import MAX_WHOLE, read_text, suggest, usable_path

log = logging.getLogger(__name__)
#: Columns a workload CSV may add: ``entity`` (the job's user or group, for hierarchical policies).
OPTIONAL_COLUMNS = ("entity",)

#: Fraction of jobs per application in the published Pollux workloads.
APP_MIX = {"ncf": 0.3966, "cifar10": 0.3823, "deepspeech2": 0.0895, "bert": 0.0670, "yolov3": 0.0470,
           "imagenet": 0.0175}
#: Per application: (num_replicas, batch_size) requests and their counts in the published workloads.
REQUESTS = {
    "bert": [((6, 384), 105), ((8, 384), 93), ((12, 384), 101), ((16, 384), 130)],
    "cifar10": [((6, 2048), 645), ((8, 2048), 595), ((12, 4096), 647), ((16, 4096), 560)],
    "deepspeech2": [((6, 320), 180), ((8, 320), 187), ((12, 640), 206)],
    "imagenet": [((24, 3200), 39), ((32, 6400), 40), ((48, 6400), 33)],
    "ncf": [((1, 32768), 2538)],
    "yolov3": [((4, 64), 301)],
}
#: Relative arrival rate in each hour of the published 8-hour workloads (mean 1).
HOURLY_WEIGHTS = (0.91, 0.85, 0.55, 0.94, 1.24, 1.81, 0.92, 0.79)
#: Jobs per hour at load 1.0.
JOBS_PER_HOUR = 20.0
#: Most jobs a generated workload may have (load x hours is bounded by it).
MAX_GENERATED_JOBS = 100_000


@dataclass(frozen=True)
class WorkloadJob:
    """One job of a workload."""

    name: str
    arrival_s: float
    application: str
    num_replicas: int
    batch_size: int
    #: Where the job was read: ``file:line`` (empty for generated jobs).
    source: str = field(default="", compare=False)
    #: The user or group the job belongs to (optional column ``entity``; hierarchical policies).
    entity: str = ""

    @property
    def where(self) -> str:
        return self.source or f"workload[{self.name}]"


@dataclass(frozen=True)
class Workload:
    """Jobs in order of arrival."""

    jobs: tuple[WorkloadJob, ...]
    name: str = "workload"

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", tuple(sorted(self.jobs, key=lambda j: (j.arrival_s, j.name))))
        if not self.jobs:
            raise ValidationError("workload", "has no jobs", "give at least one row")
        names = [j.name for j in self.jobs]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})[0]
            raise ValidationError("workload.name", f"duplicate job name {dup!r}", "job names must be unique")
        for j in self.jobs:
            if j.num_replicas < 1 or j.batch_size < 1:
                raise ValidationError(f"workload[{j.name}]", "num_replicas and batch_size must be >= 1")
            if not np.isfinite(j.arrival_s) or j.arrival_s < 0:
                raise ValidationError(f"workload[{j.name}].time", f"must be a finite second >= 0, got {j.arrival_s}")

    @property
    def n_jobs(self) -> int:
        return len(self.jobs)

    def to_frame(self) -> pd.DataFrame:
        """The workload as a DataFrame with the CSV columns (and ``entity`` when any job has one)."""
        df = pd.DataFrame([(j.name, j.arrival_s, j.application, j.num_replicas, j.batch_size) for j in self.jobs],
                          columns=list(WORKLOAD_COLUMNS))
        if any(j.entity for j in self.jobs):
            df["entity"] = [j.entity for j in self.jobs]
        return df

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the workload CSV to ``path``; returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.to_frame().to_csv(path, index=False)
        return path


def load_workload(path: str | os.PathLike[str]) -> Workload:
    """Read a workload CSV (Pollux format), every row checked.

    All bad rows are reported at once (up to 10), each as ``file:line``: a
    missing or unknown column, a ragged row, an empty or duplicate name, an
    arrival that is not a finite second >= 0, a GPU count or batch size that is
    not a whole number >= 1 (``2.7`` is refused, not rounded).
    """
    path = Path(path)
    text = read_text(path, "workload")
    if not text.strip():
        raise ValidationError(str(path), "is empty", f"the first line is the header {','.join(WORKLOAD_COLUMNS)}, "
                              "then one row per job")
    rows = csv.reader(io.StringIO(text), strict=True)
    try:
        header = [h.strip() for h in next(rows, [])]
        _check_header(path, header)
        jobs, problems = [], []
        for cells in rows:
            if not any(c.strip() for c in cells):
                continue
            where = f"{path}:{rows.line_num}"
            try:
                jobs.append(_job(dict(zip(header, cells)), len(cells), len(header), where))
            except ValidationError as exc:
                problems.append(str(exc))
    except csv.Error as exc:
        raise ValidationError(f"{path}:{rows.line_num}", f"not valid CSV: {exc}",
                              "check the quotes and separators on that line") from None
    if problems:
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise ValidationError(str(path), f"{len(problems)} bad row(s):\n  " + "\n  ".join(problems[:10]) + more)
    if not jobs:
        raise ValidationError(str(path), "has no jobs", f"add rows under the header {','.join(WORKLOAD_COLUMNS)}")
    seen = set()
    for j in jobs:
        if j.name in seen:
            raise ValidationError(j.where, f"duplicate job name {j.name!r}", "job names must be unique")
        seen.add(j.name)
    return Workload(tuple(jobs), name=path.stem)


def _check_header(path: Path, header: list[str]) -> None:
    missing = [c for c in WORKLOAD_COLUMNS if c not in header]
    unknown = [c for c in header if c not in WORKLOAD_COLUMNS + OPTIONAL_COLUMNS]
    if not (missing or unknown or len(set(header)) != len(header)):
        return
    hint = suggest(unknown[0], WORKLOAD_COLUMNS + OPTIONAL_COLUMNS) if unknown else ""
    problem = (f"unknown column {unknown[0]!r}" if unknown else
               f"missing column(s) {', '.join(missing)}" if missing else "a column appears twice")
    raise ValidationError(f"{path}:1", problem, f"{hint}the header is {','.join(WORKLOAD_COLUMNS)} "
                          f"(optionally also {', '.join(OPTIONAL_COLUMNS)})")


def _job(row: dict[str, str], n_cells: int, n_columns: int, where: str) -> WorkloadJob:
    """One checked row."""
    if n_cells != n_columns:
        raise ValidationError(where, f"{n_cells} cells for {n_columns} columns", "give one value per column")
    name, app = row["name"].strip(), row["application"].strip()
    if not name or not app:
        raise ValidationError(where, f"{'name' if not name else 'application'}: is empty", "give a value")
    try:
        arrival = float(row["time"])
    except ValueError:
        arrival = math.nan
    if not (math.isfinite(arrival) and arrival >= 0):
        raise ValidationError(where, f"time: must be a finite second >= 0, got {row['time']!r}")
    return WorkloadJob(name, arrival, app, _whole(row, "num_replicas", where), _whole(row, "batch_size", where),
                       source=where, entity=row.get("entity", "").strip())


def _whole(row: dict[str, str], key: str, where: str) -> int:
    text = row[key].strip()
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value.is_integer() and 1 <= value <= MAX_WHOLE):
        raise ValidationError(where, f"{key}: must be a whole number in [1, {MAX_WHOLE}], got {text!r}",
                              "values are not rounded")
    return int(value)


def check_workloads(specs: Iterable[str], *, n_gpus: int, max_time_s: float) -> None:
    """Read and check every workload of ``specs`` (files and ``generated:`` specs) before any simulation."""
    for spec in specs:
        check_workload(resolve_workload(spec), n_gpus=n_gpus, max_time_s=max_time_s)


def check_workload(workload: Workload, *, n_gpus: int, max_time_s: float) -> None:
    """Refuse jobs that can never run (an unknown application, a batch above the application's maximum, an
    arrival after the simulation's end); warn of a GPU request larger than the cluster (fixed-size policies
    refuse it)."""
    largest: dict[str, int] = {}  # each application's profile is read once, not once per job
    too_big = [j for j in workload.jobs if j.num_replicas > n_gpus]
    if too_big:
        log.warning("%s: %d job(s) request more GPUs than the cluster's %d (first: %s, num_replicas %d); "
                    "fixed-size policies will refuse them", workload.name, len(too_big), n_gpus, too_big[0].where,
                    too_big[0].num_replicas)
    for j in workload.jobs:
        if j.application not in POLLUX_APPS:
            raise ValidationError(j.where, f"application: unknown {j.application!r}",
                                  f"{suggest(j.application, POLLUX_APPS)}simulated applications: "
                                  f"{', '.join(POLLUX_APPS)}")
        if j.application not in largest:
            largest[j.application] = shipped_profile(j.application).max_batch_size
        top = largest[j.application]
        if j.batch_size > top:
            raise ValidationError(j.where, f"batch_size: {j.batch_size} is above {j.application}'s maximum {top}",
                                  f"use a batch size <= {top}")
        if j.arrival_s > max_time_s:
            raise ValidationError(j.where, f"time: arrival {j.arrival_s:g} s is after the simulation's end "
                                  f"(max_time_s = {max_time_s:g})", "raise max_time_s or drop the row")


def generate_workload(seed: int | np.random.Generator, *, load: float = 1.0, hours: float = 8.0,
                      mix: Mapping[str, float] | None = None,
                      name: str | None = None) -> Workload:
    """A Pollux-style workload drawn with ``numpy.random.default_rng(seed)``.

    ``mix`` overrides :data:`APP_MIX` (application -> weight); applications
    without a :data:`REQUESTS` entry are requested with 1 GPU and their
    initial batch size is left to the simulator (batch 0 is not allowed, so
    such mixes must list requests).
    """
    if not load > 0 or not np.isfinite(load):
        raise ValidationError("load", f"must be a number > 0, got {load!r}")
    if not hours > 0 or not np.isfinite(hours):
        raise ValidationError("hours", f"must be a number > 0, got {hours!r}")
    mix = dict(mix or APP_MIX)
    unknown = sorted(set(mix) - set(REQUESTS))
    if unknown:
        raise ValidationError("mix", f"no request table for {unknown}", f"use applications of {sorted(REQUESTS)}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    n_jobs = max(1, int(round(JOBS_PER_HOUR * load * hours)))
    if n_jobs > MAX_GENERATED_JOBS:
        raise ValidationError("load", f"load {load:g} over {hours:g} hours gives {n_jobs} jobs, more than "
                              f"{MAX_GENERATED_JOBS}", "use a lower load or fewer hours")
    n_hours = int(np.ceil(hours))
    weights = np.resize(np.asarray(HOURLY_WEIGHTS, dtype=float), n_hours)
    hour = rng.choice(n_hours, size=n_jobs, p=weights / weights.sum())
    arrival = np.minimum((hour + rng.random(n_jobs)) * 3600.0, hours * 3600.0)
    arrival = np.sort(np.floor(arrival))
    apps = sorted(mix)
    p = np.array([mix[a] for a in apps], dtype=float)
    app_idx = rng.choice(len(apps), size=n_jobs, p=p / p.sum())
    jobs = []
    for i, (t, a) in enumerate(zip(arrival, app_idx)):
        app = apps[a]
        reqs, counts = zip(*REQUESTS[app])
        r = reqs[rng.choice(len(reqs), p=np.array(counts, float) / sum(counts))]
        jobs.append(WorkloadJob(f"{app}-{i}", float(t), app, int(r[0]), int(r[1])))
    return Workload(tuple(jobs), name=name or f"generated-load{load:g}-seed{str(seed) if np.isscalar(seed) else 'rng'}")


GENERATED_PREFIX = "generated:"


def resolve_workload(spec: str | os.PathLike[str]) -> Workload:
    """A workload from a CSV path or ``generated:LOAD:SEED[:HOURS]`` (Pollux-style generator, 8 hours
    by default)."""
    if isinstance(spec, Workload):
        return spec
    s = str(spec)
    if not s.startswith(GENERATED_PREFIX):
        return load_workload(s)
    load, seed, hours, explicit_hours = parse_generated(s)
    suffix = f"-{hours:g}h" if explicit_hours else ""
    return generate_workload(seed, load=load, hours=hours, name=f"generated-{load:g}-{seed}{suffix}")


def parse_generated(spec: str) -> tuple[float, int, float, bool]:
    """``(load, seed, hours, hours given)`` of ``generated:LOAD:SEED[:HOURS]``."""
    parts = str(spec).split(":")
    try:
        if len(parts) not in (3, 4):
            raise ValueError
        load, seed = float(parts[1]), int(parts[2])
        hours = float(parts[3]) if len(parts) > 3 else 8.0
        if not (parts[2].isascii() and 0 <= seed < 2 ** 32 and 0 < load < math.inf and 0 < hours < math.inf):
            raise ValueError
    except ValueError:
        raise ValidationError("workload", f"bad generated workload {spec!r}",
                              "write generated:LOAD:SEED or generated:LOAD:SEED:HOURS with LOAD and HOURS > 0 and "
                              "SEED a whole number >= 0, e.g. generated:1.0:0") \
            from None
    return load, seed, hours, len(parts) > 3


def expand_workloads(specs: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Workload specs with folders expanded to their ``*.csv`` files (sorted)."""
    out = []
    for spec in specs:
        if str(spec).startswith(GENERATED_PREFIX):
            out.append(str(spec))
            continue
        p = usable_path(str(spec), "workload")
        if p.is_dir():
            files = sorted(p.glob("*.csv"), key=lambda f: (len(f.stem), f.stem))
            if not files:
                raise ValidationError("workload", f"folder {str(p)!r} holds no .csv workloads")
            out.extend(str(f) for f in files)
        else:
            out.append(str(spec))
    return out
