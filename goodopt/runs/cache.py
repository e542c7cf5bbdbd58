"""The task cache: a finished task's result, stored under a key of everything it depends on.

The key (:func:`task_key`) is the SHA-256 of

* the task's inputs with every default filled in (:meth:`SolveTask.inputs`),
* the contents of every file the task reads (:func:`task_files`): a scenario
  file and the profile files it references, a workload CSV, a cluster's
  scenario, the traces folder when the ground truth is the traces,
* the shipped scenarios and profiles (any scenario may fall back on them),
* goodopt's version and the source of its packages (:func:`code_digest`),
* the processor-chosen arithmetic (:func:`goodopt.provenance.math_paths`), so that a result made on other
  code paths (another processor's, or ``GOODOPT_MATH=portable``'s) is computed again, not mixed in.

A stored entry ``<key>.json`` holds the task's inputs and its result; it is
used only if its recorded inputs equal the requested task's and its result
has the expected shape. Anything else -- unreadable bytes, invalid JSON,
another task, a malformed result -- is logged and the task recomputed.
Entries are written under a unique temporary name and renamed into place, so
concurrent sweeps (local or on Dask, whose results the client stores) can
share one cache folder.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from goodopt import sources
from goodopt._version import __version__
from goodopt.outputs import atomic_path, json_default, remove_debris, sha256_file
from goodopt.provenance import math_paths
from goodopt.sources import scenario_inputs

from ..records import Record
from .task_types import ParetoTask, RigidTask, SimTask, SolveTask, Task

log = logging.getLogger(__name__)

#: The packages whose source is part of every key.
CODE_PACKAGES = ("goodopt", "goodopt.formulations", "goodopt.solvers")


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 of goodopt's own source (every ``.py`` file of :data:`CODE_PACKAGES` and their
    sub-packages): a cached result is reused only by the code that computed it."""
    h = hashlib.sha256()
    for pkg in CODE_PACKAGES:
        root = Path(str(importlib.import_module(pkg).__file__)).parent
        for f in sorted(root.rglob("*.py")):
            h.update(f"{pkg}/{f.relative_to(root)}".encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


# ------------------------------------------------------------------ file digests
_DIGESTS: dict[str, tuple[tuple[int, int, int], str]] = {}


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes, recomputed whenever its size or modification time changes."""
    p = Path(path)
    st = p.stat()
    sig = (st.st_size, st.st_mtime_ns, st.st_ino)
    hit = _DIGESTS.get(str(p))
    if hit is not None and hit[0] == sig:
        return hit[1]
    digest = sha256_file(p)
    _DIGESTS[str(p)] = (sig, digest)
    return digest


def folder_digest(root: str | os.PathLike[str]) -> str:
    """SHA-256 over every file under ``root`` (relative names and contents)."""
    root = Path(root)
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(root)).encode())
        h.update(file_digest(f).encode())
    return h.hexdigest()


def shipped_digest() -> str:
    """SHA-256 of the shipped scenarios and profiles."""
    h = hashlib.sha256()
    for f in sources.shipped_data_files():  # looked up on the module: tests swap in their own files
        h.update(f.name.encode())
        h.update(file_digest(f).encode())
    return h.hexdigest()


def task_files(task: Task) -> list[Path]:
    """The files ``task`` reads besides the shipped data (see the module docstring)."""
    if isinstance(task, (SolveTask, ParetoTask)):
        return scenario_inputs(task.scenario)
    if isinstance(task, RigidTask):
        return [task.throughput_file()]
    files = [] if isinstance(task.cluster, Mapping) else scenario_inputs(task.cluster)
    if not str(task.workload).startswith("generated:") and Path(task.workload).is_file():
        files.append(Path(task.workload))
    return files


def task_key(task: Task) -> str:
    """Hash of everything ``task``'s result depends on (see the module docstring)."""
    files = {str(f): file_digest(f) for f in task_files(task)}
    folders = {}
    if isinstance(task, SimTask) and task.truth != "model" and Path(task.truth).is_dir():
        folders[task.truth] = folder_digest(task.truth)
    blob = json.dumps({"task": task.inputs(), "files": files, "folders": folders, "shipped": shipped_digest(),
                       "goodopt": __version__, "code": code_digest(), "math": math_paths()}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


# ------------------------------------------------------------------ the store
class TaskCache:
    """Results by task key in ``folder`` (created when missing)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        remove_debris(self.folder)  # entries cut short by a kill

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, task: Task, key: str) -> Record | None:
        """The stored result of ``task``, or None (missing, unreadable, malformed, or another task's)."""
        f = self.path(key)
        if not f.is_file():
            log.debug("cache miss %s: %s", key[:12], task.describe())
            return None
        try:
            entry = json.loads(f.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            log.warning("cache entry %s is unreadable (%s): computing the task again", f, exc)
            return None
        problem = _entry_problem(entry, task)
        if problem:
            log.warning("cache entry %s %s: computing the task again", f, problem)
            return None
        log.debug("cache hit %s: %s", key[:12], task.describe())
        return entry["result"]

    def put(self, task: Task, key: str, result: Record) -> None:
        """Store ``result`` atomically (unique temporary name, then rename)."""
        text = json.dumps({"task": task.inputs(), "result": result}, default=json_default)
        with atomic_path(self.path(key)) as tmp:
            tmp.write_text(text)


def _entry_problem(entry: object, task: Task) -> str | None:
    """Why ``entry`` cannot serve ``task`` (None when it can)."""
    if not isinstance(entry, dict) or set(entry) != {"task", "result"}:
        return "is not a {task, result} mapping"
    if entry["task"] != task.inputs():
        return "records another task"
    result = entry["result"]
    if not isinstance(result, dict) or not isinstance(result.get("row"), dict) \
            or not isinstance(result.get("jobs"), list) or not all(isinstance(r, dict) for r in result["jobs"]):
        return "holds a malformed result"
    return None
