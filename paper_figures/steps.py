"""Experiment steps: each writes tidy tables (CSV + JSON metadata) that the plotting scripts read.

The model figures (1, 2) evaluate the shipped profiles directly; the others
run sweeps (:mod:`goodopt.runs`) from the specs in :mod:`goodopt.paper_figures.specs`,
cached by input hash under the output folder so a rerun only computes what
changed.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from goodopt import goodput as gp
from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import TraceError
from goodopt.outputs import meta_path, write_text
from goodopt.profiles import shipped_profile
from goodopt.records import Record
from goodopt.runs import run_sweep, spec_from_dict, spec_to_dict
from goodopt.runs.sweep import checked_tasks, run_tasks
from goodopt.runs.tables import write_table as _write_csv
from goodopt.runs.tasks import sim_task
from goodopt.sim import SimConfig, simulate
from goodopt.sim.workload import APP_MIX, Workload, WorkloadJob, generate_workload
from goodopt.traces import POLLUX_APPS, SIA_CLUSTERS, measurements, traces_dir

from . import specs

GPU_COUNTS = np.arange(1, 65)


@dataclass(frozen=True)
class Context:
    """Where and how the experiments run."""

    tables: Path
    cache: Path
    scale: str = "default"
    traces: str | None = None  # the traces folder when found, else None
    workers: int = 1
    progress: object = False  # False, True or a live rich Progress


def write_table(df: pd.DataFrame, out: Path, name: str, **meta: Any) -> Path:  # Any: JSON-shaped metadata values
    """Write ``name.csv`` and ``name.meta.json`` (metadata) under ``out``, atomically."""
    return _write_csv(df, Path(out) / f"{name}.csv", table_name=name, numpy=np.__version__,
                      python=platform.python_version(), **meta)


def throughput_table(gpu_type: str = "t4") -> pd.DataFrame:
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


def measured_throughput(traces: str | os.PathLike[str] | None, gpu_type: str = "t4") -> pd.DataFrame:
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


def goodput_table(gpu_type: str = "t4", gpus_per_node: int = 4) -> pd.DataFrame:
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


def find_traces(traces: str | os.PathLike[str] | None = None) -> str | None:
    """The traces folder (argument, ``$GOODOPT_TRACES`` or ``../shared/traces``), or None when absent."""
    try:
        return str(traces_dir(traces))
    except FileNotFoundError:
        return None


def model_tables(ctx: Context) -> list[Path]:
    """Figure 1: model curves; measured throughput points when the traces are available."""
    out = ctx.tables
    written = [
        write_table(throughput_table(), out, "throughput", gpu_type="t4", note="model curves, accumulation 0"),
        write_table(efficiency_table(), out, "efficiency", note="E = (phi + M0) / (phi + M)"),
        write_table(goodput_table(), out, "goodput", gpu_type="t4", gpus_per_node=4,
                    note="50 Pollux batch candidates; speedup relative to one GPU"),
    ]
    measured = out / "throughput_measured.csv"
    if ctx.traces is not None:
        written.append(write_table(measured_throughput(Path(ctx.traces)), out, "throughput_measured",
                                   traces="pollux/<app>/placements.csv, scalability.csv"))
    elif measured.exists():  # a stale overlay from an earlier run with traces must not be plotted
        measured.unlink()
        meta_path(measured).unlink(missing_ok=True)
    return written


def speedup_tables(ctx: Context) -> list[Path]:
    """Figure 2: speedup curves per application and GPU type."""
    return [write_table(speedup_types_table(), ctx.tables, "speedup_types", note="half-way through training")]


def sweep_tables(specs_of: Callable[[Context], list[Record]]) -> Callable[[Context], list[Path]]:
    """The experiment step that runs the sweeps ``specs_of(ctx)`` gives (cached) and writes their tables."""
    def experiment(ctx: Context) -> list[Path]:
        return [sweep_table(ctx, spec) for spec in specs_of(ctx)]

    experiment.__doc__ = specs_of.__doc__
    return experiment


def sweep_table(ctx: Context, spec: Record, base_dir: Path | None = None) -> Path:
    """Run one sweep spec (cached) and write its tables, its spec (YAML) and metadata."""
    sp = spec_from_dict(spec, base_dir=base_dir)
    res = run_sweep(sp, cache_dir=ctx.cache, workers=ctx.workers, progress=ctx.progress)
    write_text(ctx.tables / f"{sp.name}.spec.yaml", yaml.safe_dump(spec_to_dict(sp), sort_keys=False))
    return res.write(ctx.tables / f"{sp.name}.csv", scale=ctx.scale,
                     truth="traces" if spec.get("truth") == "traces" else "model",
                     computed=res.n_computed, from_cache=res.n_cached)


def spec_tasks(sweeps: list[Record]) -> list[Any]:  # Any: tasks of any kind
    """Every task of the sweep specs ``sweeps``, checked as :func:`goodopt.runs.run_sweep` checks them."""
    return [task for spec in sweeps for task in checked_tasks(spec_from_dict(spec))]


def fairness_specs(ctx: Context) -> list[Record]:
    """Figure 3: the exact optimum for each p of the fairness knob."""
    return [specs.fairness(ctx.scale)]


def exact_vs_heuristic_specs(ctx: Context) -> list[Record]:
    """Figure 4: every method on homogeneous clusters of growing size."""
    return [specs.exact_vs_heuristic(ctx.scale)]


def runtime_specs(ctx: Context) -> list[Record]:
    """Figure 7: every method on heterogeneous clusters of growing size."""
    return [specs.runtime_scaling(ctx.scale)]


def solver_specs(ctx: Context) -> list[Record]:
    """Figure 9: the open MILP solvers on the reference model of the shipped families."""
    return [specs.solver_comparison(ctx.scale)]


def _need_traces(ctx: Context, what: str) -> str:
    if ctx.traces is None:
        raise TraceError(f"the full-scale {what} runs on the published traces, which were not found: "
                         "set GOODOPT_TRACES to the traces folder, or drop FULL=1")
    return ctx.traces


def simulation_specs(ctx: Context) -> list[Record]:
    """Figure 5: the simulation sweeps (policies x workloads x loads; interval; interference)."""
    traces = _need_traces(ctx, "simulation") if ctx.scale == "full" else None
    return specs.simulation(ctx.scale, traces)


def hetero_workloads(ctx: Context) -> list[str]:
    """Generated workloads for the heterogeneous cluster, written as inputs next to the tables."""
    apps = specs.TINY_HETERO_APPS if ctx.scale == "tiny" else specs.HETERO_APPS
    mix = {a: APP_MIX[a] for a in apps}
    load, hours, seeds = (0.5, 0.5, [0]) if ctx.scale == "tiny" else (1.0, 2.0, [0, 1, 2])
    folder = ctx.tables / "workloads"
    paths = []
    for s in seeds:
        wl = generate_workload(s, load=load, hours=hours, mix=mix, name=f"hetero-{load:g}-{s}")
        paths.append(str(wl.save(folder / f"{wl.name}.csv")))
    return paths


def heterogeneity_specs(ctx: Context) -> list[Record]:
    """Figure 6: heterogeneity-aware and unaware policies on Sia's cluster (the default scale's workloads written
    first)."""
    if ctx.scale == "full":
        return [specs.heterogeneity("full", _need_traces(ctx, "heterogeneity"))]
    return [specs.heterogeneity(ctx.scale, workloads=hetero_workloads(ctx))]


def autoscaling_specs(ctx: Context) -> list[Record]:
    """Figure 8's sweeps: cost vs JCT of the auto-scalers on the embedded default."""
    traces = _need_traces(ctx, "auto-scaling") if ctx.scale == "full" else None
    return specs.autoscaling(ctx.scale, traces)


def autoscaling_tables(ctx: Context) -> list[Path]:
    """Figure 8: cost vs JCT of the auto-scalers; one job alone on an elastic cluster."""
    return [*(sweep_table(ctx, spec) for spec in autoscaling_specs(ctx)), *single_job_tables(ctx)]


def autoscaling_tasks(ctx: Context) -> list[Any]:  # Any: tasks of any kind
    """Every task of figure 8: its sweeps' and the lone job's on fixed clusters."""
    return [*spec_tasks(autoscaling_specs(ctx)), *single_job_tasks(ctx)[1]]


def _t4_nodes(n: int) -> dict[str, Any]:
    return {"node_groups": [{"gpu_type": "t4", "gpus_per_node": 4, "n_nodes": n}]}


def single_job_tasks(ctx: Context) -> tuple[Workload, list[Any]]:  # Any: tasks of any kind
    """The lone job (ImageNet at the default scale; its workload file written) and its runs on fixed clusters of
    several sizes."""
    app, sizes = specs.single_job(ctx.scale)
    job = WorkloadJob(app, 0.0, app, 4, shipped_profile(app).init_batch_size)
    wl = Workload((job,), name=f"{app}-alone")
    path = str(wl.save(ctx.tables / "workloads" / f"{wl.name}.csv"))
    return wl, [sim_task(path, "pollux", _t4_nodes(n), label=f"fixed {n} node{'s' if n > 1 else ''}")
                for n in sizes]


def single_job_tables(ctx: Context) -> list[Path]:
    """One job alone: fixed clusters of several sizes (cached tasks) and an elastic cluster under Pollux's
    auto-scaler, whose rounds give how its size follows the job's training."""
    app, sizes = specs.single_job(ctx.scale)
    wl, tasks = single_job_tasks(ctx)
    table, _, computed = run_tasks(tasks, "autoscaling_single", cache_dir=ctx.cache, workers=ctx.workers,
                                   progress=ctx.progress)
    table.insert(2, "max_nodes", sizes)
    largest = Cluster((NodeGroup("t4", 4, max(sizes)),))
    res = simulate(wl, largest, "pollux", config=SimConfig(autoscale="pollux"), seed=0)
    row = {"workload": wl.name, "label": "pollux auto-scaling", "max_nodes": max(sizes), "policy": "pollux",
           "seed": 0, **{k: res.summary[k] for k in table.columns if k in res.summary}}
    table = pd.concat([table, pd.DataFrame([row])], ignore_index=True)
    rounds = res.rounds[["time_s", "nodes_up", "nodes_billed", "gpus_allocated", "cost_per_h"]]
    batch = res.allocations[["time_s", "batch_size", "epoch", "progress"]]
    timeline = rounds.merge(batch, on="time_s", how="left")
    note = f"{app} alone on up to {max(sizes)} x 4 T4; Pollux's policy and auto-scaler (utility band [0.35, 0.65])"
    return [write_table(table, ctx.tables, "autoscaling_single", note=note, computed=computed),
            write_table(timeline, ctx.tables, "autoscaling_timeline", note=note)]
