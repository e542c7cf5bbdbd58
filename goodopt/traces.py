"""Readers for the published measurement traces (Pollux, Sia, Gavel).

The traces are read from a directory (``GOODOPT_TRACES``, default
``../shared/traces`` beside the checkout, wherever the command runs) and
never copied into the project. Layout and column
meanings follow the traces' own README:

* ``pollux/<app>/placements.csv`` and ``scalability.csv`` (T4 nodes);
* ``pollux/<app>/validation-<B>.csv`` (training curves at total batch ``B``);
* ``sia/<app>/placements-<cluster>.csv`` / ``scalability-<cluster>.csv``;
* ``pollux/workloads/load-X/workload-N.csv`` and ``sia/workloads/...``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import TraceError

#: Sia cluster name -> (GPU type, GPUs per node).
SIA_CLUSTERS: dict[str, tuple[str, int]] = {
    "aws": ("t4", 4),
    "azure": ("v100", 8),
    "dgx-ext": ("a100", 8),
    "quad": ("rtx6000", 4),
    "rtx": ("rtx2080ti", 8),
}
#: GPU type -> the Sia cluster whose measurements describe it.
GPU_TYPE_CLUSTER = {gpu: cluster for cluster, (gpu, _) in SIA_CLUSTERS.items()}
#: The six applications of the Pollux paper.
POLLUX_APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
#: Epoch targets used by the Pollux paper's simulator.
TARGET_EPOCHS = {"bert": 2, "cifar10": 100, "ncf": 10, "imagenet": 90, "deepspeech2": 80, "yolov3": 50}

_PLACEMENT_COLUMNS = ("placement", "local_bsz", "step_time", "sync_time")
_SCALABILITY_COLUMNS = ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")
_VALIDATION_COLUMNS = ("progress", "iteration", "metric", "grad_sqr", "grad_var")
WORKLOAD_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")


#: The default traces folder: ``../shared/traces`` next to the checkout (not the current directory), so a
#: command finds the same traces wherever it is run from.
DEFAULT_TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"


def traces_dir(path: str | os.PathLike[str] | None = None, *, must_exist: bool = True) -> Path:
    """Resolve the traces directory: ``path``, else ``$GOODOPT_TRACES``, else :data:`DEFAULT_TRACES`.

    Raises :class:`TraceError` naming what was tried when it does not exist.
    """
    candidate = Path(path or os.environ.get("GOODOPT_TRACES") or DEFAULT_TRACES)
    if must_exist and not candidate.is_dir():
        raise TraceError(
            f"traces directory {str(candidate)!r} not found: set GOODOPT_TRACES or pass --traces "
            "pointing at the published traces (folders pollux/, sia/, gavel/)"
        )
    return candidate


def _read_csv(path: Path, columns: Iterable[str], dtype: Any = None) -> pd.DataFrame:  # dtype: pandas's
    if not path.is_file():
        raise TraceError(f"trace file {str(path)!r} not found")
    df = pd.read_csv(path, dtype=dtype)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise TraceError(f"{path}: missing columns {missing}; found {list(df.columns)}")
    return df


def read_placements(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Measured step/sync times at exact placements.

    Returns columns ``placement`` (digit string, GPUs per node), ``num_nodes``,
    ``num_replicas``, ``local_bsz``, ``step_time``, ``sync_time``.
    """
    df = _read_csv(Path(path), _PLACEMENT_COLUMNS, dtype={"placement": str})
    df = df.loc[:, list(_PLACEMENT_COLUMNS)].copy()
    digits = df["placement"].str.strip()
    if not digits.str.fullmatch(r"[0-9]+").all():
        raise TraceError(f"{path}: column 'placement' must be digit strings (GPUs per node)")
    df["placement"] = digits
    df["num_nodes"] = digits.str.len()
    df["num_replicas"] = digits.map(lambda s: sum(int(c) for c in s))
    return df


def read_scalability(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Measured step/sync times by (nodes, GPUs, per-GPU batch)."""
    df = _read_csv(Path(path), _SCALABILITY_COLUMNS)
    return df.loc[:, list(_SCALABILITY_COLUMNS)].copy()


def read_validation(app_dir: str | os.PathLike[str]) -> dict[int, pd.DataFrame]:
    """Training curves of one application: total batch -> per-epoch table.

    Each table has columns ``epoch`` (1-based), ``progress``, ``iteration``,
    ``metric``, ``grad_sqr``, ``grad_var``. Keys are sorted ascending; the
    smallest is the initial batch size M0, the largest the maximum.
    """
    app_dir = Path(app_dir)
    out = {}
    for f in app_dir.glob("validation-*.csv"):
        m = re.fullmatch(r"validation-(\d+)\.csv", f.name)
        if not m:
            continue
        df = _read_csv(f, _VALIDATION_COLUMNS).loc[:, list(_VALIDATION_COLUMNS)].copy()
        df.insert(0, "epoch", np.arange(1, len(df) + 1))
        out[int(m.group(1))] = df
    if not out:
        raise TraceError(f"no validation-<B>.csv curves in {str(app_dir)!r}")
    return dict(sorted(out.items()))


def measurements(traces: str | os.PathLike[str] | None, app: str, gpu_type: str) -> pd.DataFrame:
    """All step-time measurements of ``app`` on ``gpu_type``.

    Placements and scalability rows together, with a ``source`` column. T4 data
    comes from ``pollux/`` (identical to Sia's ``aws``), other types from ``sia/``.
    """
    root = traces_dir(traces)
    if gpu_type not in GPU_TYPE_CLUSTER:
        raise TraceError(f"no traces for GPU type {gpu_type!r}; known: {sorted(GPU_TYPE_CLUSTER)}")
    cluster = GPU_TYPE_CLUSTER[gpu_type]
    if gpu_type == "t4" and (root / "pollux" / app).is_dir():
        pl, sc = root / "pollux" / app / "placements.csv", root / "pollux" / app / "scalability.csv"
    else:
        pl = root / "sia" / app / f"placements-{cluster}.csv"
        sc = root / "sia" / app / f"scalability-{cluster}.csv"
    frames = []
    if pl.is_file():
        frames.append(read_placements(pl).assign(source=str(pl.relative_to(root))))
    if sc.is_file():
        frames.append(read_scalability(sc).assign(placement=None, source=str(sc.relative_to(root))))
    if not frames:
        raise TraceError(f"no measurements of {app!r} on {gpu_type!r} under {str(root)!r}")
    return pd.concat(frames, ignore_index=True)


def validation_dir(traces: str | os.PathLike[str] | None, app: str) -> Path:
    """Folder holding ``app``'s validation curves (``pollux/<app>`` or ``sia/<app>``)."""
    root = traces_dir(traces)
    for sub in ("pollux", "sia"):
        d = root / sub / app
        if any(d.glob("validation-*.csv")):
            return d
    raise TraceError(f"no validation curves for {app!r} under {str(root)!r}")
