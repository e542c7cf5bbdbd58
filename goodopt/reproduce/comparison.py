"""What an experiment is and what it yields: :class:`Experiment`, :class:`Comparison` rows judged by a
:class:`Band`, and the published-results files they read (nothing published is copied into goodopt)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from goodopt.errors import TraceError

H = 3600.0


@dataclass(frozen=True)
class Band:
    """Where a reproduced number must fall: ``relative`` (|reproduced / published - 1| <= tol),
    ``points`` (|reproduced - published| <= tol, for percentages) or ``factor`` (of the same order:
    published / tol <= reproduced <= published * tol)."""

    kind: str
    tol: float

    def holds(self, published: float, reproduced: float) -> bool:
        if not (math.isfinite(published) and math.isfinite(reproduced)):
            return False
        if self.kind == "relative":
            return abs(reproduced / published - 1) <= self.tol + 1e-12
        if self.kind == "factor":
            return published / self.tol <= reproduced <= published * self.tol
        return abs(reproduced - published) <= self.tol + 1e-12

    def __str__(self) -> str:
        return {"relative": f"±{self.tol:.0%}", "factor": f"within {self.tol:g}x"}.get(self.kind,
                                                                                      f"±{self.tol:g} points")


@dataclass(frozen=True)
class Comparison:
    """One reproduced number beside the published one."""

    experiment: str
    metric: str
    setting: str
    policy: str
    published: float
    reproduced: float
    band: Band | None
    source: str
    #: The reference was made at exactly this setting (the same workload, seed and window), so even a quick
    #: run is judged against it.
    like_for_like: bool = False


@dataclass(frozen=True)
class TaskBatch:
    """Tasks an experiment runs that no sweep spec describes (e.g. rigid-job runs), under a table name."""

    name: str
    tasks: tuple[Any, ...]  # tasks of goodopt.runs.task_types, any kind


@dataclass(frozen=True)
class Experiment:
    """A named experiment: its sweeps (``specs(traces, quick)``: spec mappings or :class:`TaskBatch`) and its
    comparisons (``compare``); ``curve`` names the metric its figure plots against the setting per policy
    (None: bars of published vs reproduced); ``note`` is what a reader of its table should know about a band that
    depends on more than the code (printed after the table)."""

    name: str
    title: str
    specs: Callable[[Path, bool], list[Any]]  # spec mappings or TaskBatch
    compare: Callable[[dict[str, pd.DataFrame], Path], list[Comparison]]
    settings: str
    curve: str | None = None
    published: tuple[PublishedFile, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class PublishedFile:
    """A file of published numbers in the traces folder: its key columns (unique per row) and its value
    columns (finite and positive)."""

    path: str
    keys: tuple[str, ...]
    values: tuple[str, ...]


POLLUX_PUBLISHED = PublishedFile("pollux/published-results.csv", ("experiment", "setting", "policy"),
                                 ("mean_avg_jct_s",))


SIA_PUBLISHED = PublishedFile("sia/published-results.csv", ("experiment", "trace", "policy"),
                              ("avg_jct_h", "p99_jct_h", "makespan_h", "gpu_hours_per_job"))


def read_published(traces: Path, spec: PublishedFile) -> pd.DataFrame:
    """The published numbers of ``spec``, every row checked; a bad file raises :class:`TraceError` naming
    ``file:line`` and what is wrong (run before the first task, so a bad file is found in seconds)."""
    path = traces / spec.path
    text = _published_text(path)
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise TraceError(f"{path}: empty file; it must have a header line {','.join(spec.keys + spec.values)}")
    header = [c.strip() for c in rows[0]]
    missing = [c for c in spec.keys + spec.values if c not in header]
    if missing:
        raise TraceError(f"{path}:1: column {missing[0]!r} is missing (header: {','.join(header)}); restore the "
                         "published file")
    seen: dict[tuple[Any, ...], int] = {}
    records: list[dict[str, str | float]] = []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise TraceError(f"{path}:{line}: {len(row)} fields where the header has {len(header)}")
        rec: dict[str, str | float] = dict(zip(header, (c.strip() for c in row)))
        key = tuple(rec[k] for k in spec.keys)
        if any(not k for k in key):
            raise TraceError(f"{path}:{line}: an empty key field ({', '.join(spec.keys)})")
        if key in seen:
            raise TraceError(f"{path}:{line}: the row for {key} is given twice (first at line {seen[key]})")
        seen[key] = line
        for col in spec.values:
            rec[col] = _published_value(path, line, col, str(rec[col]))
        records.append(rec)
    if not records:
        raise TraceError(f"{path}: no rows under the header; restore the published file")
    return pd.DataFrame.from_records(records, columns=header)


def _published_text(path: Path) -> str:
    if not path.is_file():
        raise TraceError(f"published results {str(path)!r} not found: point GOODOPT_TRACES or --traces at the "
                         "published traces")
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise TraceError(f"{path}:{line}: byte 0x{data[exc.start]:02x} is not UTF-8 text") from None


def _published_value(path: Path, line: int, col: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise TraceError(f"{path}:{line}: {col} must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise TraceError(f"{path}:{line}: {col} must be a finite number > 0, got {text!r}")
    return value
