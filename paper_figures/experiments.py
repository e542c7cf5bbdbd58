"""Experiment steps: compute model curves from the shipped profiles into tidy tables."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import numpy as np
import pandas as pd

import goodopt
from goodopt import goodput as gp
from goodopt.profiles import shipped_profile
from goodopt.traces import POLLUX_APPS, measurements, traces_dir

GPU_COUNTS = np.arange(1, 65)


def write_table(df: pd.DataFrame, out: Path, name: str, **meta) -> Path:
    """Write ``name.csv`` and ``name.json`` (metadata) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / f"{name}.csv", index=False)
    meta = {"table": name, "rows": len(df), "columns": list(df.columns), "goodopt": goodopt.__version__,
            "numpy": np.__version__, "python": platform.python_version(), **meta}
    (out / f"{name}.json").write_text(json.dumps(meta, indent=2, sort_keys=True))
    return out / f"{name}.csv"


def throughput_table(gpu_type="t4") -> pd.DataFrame:
    """Throughput vs per-GPU batch at several placements, per application."""
    rows = []
    placements = [(1, 1), (4, 1), (8, 2), (16, 4)]  # (GPUs, nodes)
    for app in POLLUX_APPS:
        prof = shipped_profile(app)
        g = prof.gpu_types[gpu_type]
        m = np.unique(np.geomspace(g.min_local_bsz, g.max_local_bsz, 40).round().astype(int))
        for k, n in placements:
            x = gp.throughput(g.params, m, 0, k, n > 1)
            rows += [{"application": app, "gpu_type": gpu_type, "n_gpus": k, "n_nodes": n,
                      "local_bsz": int(mi), "throughput": float(xi), "source": "model"} for mi, xi in zip(m, x)]
    return pd.DataFrame(rows)


def measured_throughput(traces, gpu_type="t4") -> pd.DataFrame:
    """Measured throughput at the same placements (for overlay), empty without traces."""
    rows = []
    for app in POLLUX_APPS:
        df = measurements(traces, app, gpu_type)
        for k, n in [(1, 1), (4, 1), (8, 2), (16, 4)]:
            sel = df[(df.num_replicas == k) & (df.num_nodes == n)]
            sel = sel.groupby("local_bsz", as_index=False)["step_time"].mean()
            rows += [{"application": app, "gpu_type": gpu_type, "n_gpus": k, "n_nodes": n,
                      "local_bsz": int(r.local_bsz), "throughput": k * r.local_bsz / r.step_time,
                      "source": "measured"} for r in sel.itertuples()]
    return pd.DataFrame(rows)


def efficiency_table() -> pd.DataFrame:
    """Statistical efficiency vs total batch at several points of training."""
    rows = []
    for app in POLLUX_APPS:
        prof = shipped_profile(app)
        batch = np.geomspace(prof.init_batch_size, prof.max_batch_size, 60)
        for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
            epoch = frac * prof.target_epochs
            phi = float(prof.phi_at(epoch))
            e = gp.efficiency(batch, phi, prof.init_batch_size)
            rows += [{"application": app, "training_fraction": frac, "epoch": epoch, "phi": phi,
                      "batch_size": float(b), "efficiency": float(v)} for b, v in zip(batch, e)]
    return pd.DataFrame(rows)


def goodput_table(gpu_type="t4", gpus_per_node=4) -> pd.DataFrame:
    """Goodput-optimal batch and speedup (vs one GPU) against GPU count, early and late in training."""
    rows = []
    k = GPU_COUNTS
    multi = -(-k // gpus_per_node) > 1
    for app in POLLUX_APPS:
        prof = shipped_profile(app)
        g = prof.gpu_types[gpu_type]
        for frac in (0.1, 0.8):
            phi = float(prof.phi_at(frac * prof.target_epochs))
            good, local, accum = gp.best_config(g.params, k, multi, phi, prof.init_batch_size,
                                                prof.max_batch_size, g.min_local_bsz, g.max_local_bsz)
            base = good[0]
            total = k * local * (accum + 1)
            rows += [{"application": app, "gpu_type": gpu_type, "training_fraction": frac, "n_gpus": int(ki),
                      "multi_node": bool(mi), "goodput": float(gi), "best_batch_size": int(ti),
                      "local_bsz": int(li), "accum_steps": int(ai), "speedup_vs_1gpu": float(gi / base)}
                     for ki, mi, gi, ti, li, ai in zip(k, multi, good, total, local, accum)]
    return pd.DataFrame(rows)


def speedup_types_table() -> pd.DataFrame:
    """Speedup (vs one GPU of the same type) against GPU count, per application and GPU type."""
    from goodopt.traces import SIA_CLUSTERS

    rows = []
    k = GPU_COUNTS
    for app in POLLUX_APPS:
        prof = shipped_profile(app)
        phi = float(prof.phi_at(0.5 * prof.target_epochs))
        for gpu, gpn in SIA_CLUSTERS.values():
            g = prof.gpu_types[gpu]
            multi = -(-k // gpn) > 1
            good, _, _ = gp.best_config(g.params, k, multi, phi, prof.init_batch_size, prof.max_batch_size,
                                        g.min_local_bsz, g.max_local_bsz)
            rows += [{"application": app, "gpu_type": gpu, "gpus_per_node": gpn, "n_gpus": int(ki),
                      "goodput": float(gi), "speedup_vs_1gpu": float(gi / good[0])} for ki, gi in zip(k, good)]
    return pd.DataFrame(rows)


def run_model_experiments(out: Path, traces=None) -> list[Path]:
    """Every model table; measured points are added when the traces are available."""
    written = [
        write_table(throughput_table(), out, "throughput", gpu_type="t4", note="model curves, accumulation 0"),
        write_table(efficiency_table(), out, "efficiency", note="E = (phi + M0) / (phi + M)"),
        write_table(goodput_table(), out, "goodput", gpu_type="t4", gpus_per_node=4,
                    note="50 Pollux batch candidates; speedup relative to one GPU"),
        write_table(speedup_types_table(), out, "speedup_types", note="half-way through training"),
    ]
    try:
        root = traces_dir(traces)
    except FileNotFoundError:
        root = None
    if root is not None:
        written.append(write_table(measured_throughput(root), out, "throughput_measured",
                                   traces="pollux/<app>/placements.csv, scalability.csv"))
    return written
