"""Figures 5 and 6: simulated job completion times (Pollux Fig. 8 style) and heterogeneity.

Reads only the sweep tables in ``out/tables`` (``sim_policies``, ``sim_loads``,
``sim_interval``, ``sim_interference``, ``heterogeneity`` and ``-jobs`` tables).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from goodopt.sources import load_scenario

from .style import colours, markers, plain_log, save

if TYPE_CHECKING:
    from matplotlib.axes import Axes

H = 3600.0


def _read(tables: Path, name: str) -> pd.DataFrame | None:
    """An optional table (None when the sweep did not write it)."""
    f = tables / f"{name}.csv"
    return pd.read_csv(f) if f.exists() else None


def _need(tables: Path, name: str) -> pd.DataFrame:
    """A table the figure cannot be drawn without."""
    df = _read(tables, name)
    if df is None:
        raise FileNotFoundError(f"{tables / (name + '.csv')}: this figure's table is missing; run its sweep first "
                                "(make figures runs every one)")
    return df


def _cluster_of(tables: Path, name: str) -> str:
    """The cluster a simulation table was run on, from its metadata (``name (64 GPUs: 6 x 4 t4 + ...)``)."""
    import json


    meta = json.loads((tables / f"{name}.meta.json").read_text())
    source = meta.get("sweep", {}).get("cluster", "?")
    cluster = load_scenario(source).cluster
    return f"{source} ({cluster.n_gpus} GPUs: {cluster.describe()})"


def _short(workload: str) -> str:
    return workload.replace("workload-", "w").replace("generated-", "g")


def _bars(ax: Axes, df: pd.DataFrame, value: str, scale: float, ylabel: str, labels: Sequence[str],
          col: Mapping[str, str]) -> None:
    """Grouped bars: one group per workload, one bar per policy label; the mean as the last group."""
    wls = list(dict.fromkeys(df.workload))
    width = 0.8 / len(labels)
    groups = wls + ["mean"]
    for i, lab in enumerate(labels):
        a = df[df.label == lab].groupby("workload")[value].mean() / scale
        vals = [a.get(w, np.nan) for w in wls] + [a.mean()]
        ax.bar(np.arange(len(groups)) + (i - (len(labels) - 1) / 2) * width, vals, width, color=col[lab], label=lab)
    ax.set_xticks(range(len(groups)), [_short(w) for w in wls] + ["mean"], rotation=30 if len(groups) > 6 else 0,
                  ha="right" if len(groups) > 6 else "center")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, axis="y")


def plot_policies(tables: Path, out: Path) -> list[Path]:
    """Figure 5a from ``sim_policies.csv`` and ``sim_loads.csv``."""
    df = _need(tables, "sim_policies")
    loads = _read(tables, "sim_loads")
    both = pd.concat([df, loads]) if loads is not None else df
    labels = list(dict.fromkeys(df.label))
    col, mk = colours(labels), markers(labels)
    base_load = 1.0 if (df.load == 1.0).any() else df.load.iloc[0]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), gridspec_kw={"width_ratios": [1.4, 1]})
    fig.suptitle(f"Average job completion time per policy on {_cluster_of(tables, 'sim_policies')} "
                 "(cf. Pollux Fig. 8a)")
    _bars(axes[0], df[df.load == base_load], "avg_jct", H, "average JCT (h)", labels, col)
    axes[0].set_title(f"per workload at load {base_load:g}")
    axes[0].set_xlabel("workload")
    axes[0].legend(ncol=len(labels), fontsize=7, loc="upper left")
    for lab in labels:
        a = both[both.label == lab].groupby("load")["avg_jct"].agg(["mean", "min", "max"]) / H
        axes[1].errorbar(a.index, a["mean"], yerr=[a["mean"] - a["min"], a["max"] - a["mean"]], marker=mk[lab],
                         color=col[lab], label=lab, capsize=2)
    runs = both.groupby("load").workload.nunique()
    for load, n in runs.items():  # how many workloads stand behind each load's points
        axes[1].annotate(f"n={n}", (load, 0), xycoords=("data", "axes fraction"), xytext=(0, 3),
                         textcoords="offset points", ha="center", fontsize=7, color="dimgrey")
    axes[1].set_xlabel("relative job load (jobs per hour / 20)")
    axes[1].set_ylabel("average JCT (h)")
    axes[1].set_title("vs job load (mean, range over workloads; n = workloads per load)")
    axes[1].set_xticks(sorted(both.load.unique()))
    axes[1].grid(alpha=0.3)
    fig.tight_layout()
    return save(fig, out, "sim_policies")


def plot_cdf(tables: Path, out: Path) -> list[Path]:
    """Figure 5b from ``sim_policies-jobs.csv``."""
    jobs = _need(tables, "sim_policies-jobs")
    base_load = 1.0 if (jobs.load == 1.0).any() else jobs.load.iloc[0]
    jobs = jobs[jobs.load == base_load]
    labels = list(dict.fromkeys(jobs.label))
    col = colours(labels)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for lab in labels:
        v = np.sort(jobs[jobs.label == lab].jct_s.to_numpy() / H)
        ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", color=col[lab], label=lab)
    ax.set_xscale("log")
    plain_log(ax, "x")
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("fraction of jobs")
    n_wl = jobs.workload.nunique()
    ax.set_title(f"JCT distribution, {n_wl} workload{'s' if n_wl > 1 else ''} at load {base_load:g}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return save(fig, out, "sim_jct_cdf")


def plot_sensitivity(tables: Path, out: Path) -> list[Path]:
    """Figure 5c from ``sim_interval.csv`` and ``sim_interference.csv``."""
    iv, itf = _need(tables, "sim_interval"), _need(tables, "sim_interference")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    fig.suptitle("Sensitivity (cf. Pollux Fig. 8b, 8c)")
    a = iv.groupby("interval_s")["avg_jct"].agg(["mean", "min", "max"]) / H
    axes[0].errorbar(a.index, a["mean"], yerr=[a["mean"] - a["min"], a["max"] - a["mean"]], marker="o", capsize=2,
                     color="C0", label=iv.label.iloc[0])
    axes[0].set_xscale("log", base=2)
    axes[0].set_xticks(a.index, [f"{v:g}" for v in a.index])
    axes[0].set_xlabel("scheduling interval (s)")
    axes[0].set_ylabel("average JCT (h)")
    axes[0].set_title("scheduling interval")
    axes[0].legend()
    labels = list(dict.fromkeys(itf.label))
    col, mk = colours(labels), markers(labels)
    for lab in labels:
        b = itf[itf.label == lab].groupby("interference_slowdown")["avg_jct"].mean() / H
        axes[1].plot(100 * b.index, b.to_numpy(), marker=mk[lab], color=col[lab], label=lab)
    axes[1].set_xlabel("slowdown of co-located multi-node jobs (%)")
    axes[1].set_ylabel("average JCT (h)")
    axes[1].set_title("interference avoidance")
    axes[1].legend()
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    return save(fig, out, "sim_sensitivity")


def plot_heterogeneity(tables: Path, out: Path) -> list[Path]:
    """Figure 6 from ``heterogeneity.csv``."""
    df = _need(tables, "heterogeneity")
    labels = list(dict.fromkeys(df.label))
    col = colours(labels)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4))
    fig.suptitle(f"{len(labels)} policies on a heterogeneous cluster: {_cluster_of(tables, 'heterogeneity')}")
    for ax, (value, scale, ylabel) in zip(axes, [("avg_jct", H, "average JCT (h)"), ("makespan", H, "makespan (h)"),
                                                 ("avg_ftf_rho", 1.0, "mean finish-time fairness rho")]):
        means = [df[df.label == lab][value].mean() / scale for lab in labels]
        x = np.arange(len(labels))
        ax.bar(x, means, color=[col[lab] for lab in labels], alpha=0.85)
        for i, lab in enumerate(labels):
            pts = df[df.label == lab][value].to_numpy() / scale
            ax.plot(np.full(len(pts), i) + np.linspace(-0.15, 0.15, len(pts)), pts, "k.", ms=4)
        ax.set_xticks(x, labels, rotation=25, ha="right")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, axis="y")
    axes[2].axhline(1.0, color="grey", ls=":", lw=1)
    n = df.workload.nunique()
    axes[0].set_title(f"bars: mean over {n} workload{'s' if n > 1 else ''}; dots: each", fontsize=9)
    fig.tight_layout()
    return save(fig, out, "heterogeneity")


def plot_autoscaling(tables: Path, out: Path) -> list[Path]:
    """Figure 8 from ``autoscaling.csv``, ``autoscaling_exact.csv``, ``autoscaling_single.csv`` and
    ``autoscaling_timeline.csv``."""
    df = pd.concat([d for d in (_read(tables, "autoscaling"), _read(tables, "autoscaling_exact")) if d is not None],
                   ignore_index=True)
    single, timeline = _need(tables, "autoscaling_single"), _need(tables, "autoscaling_timeline")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    policies, scalers = list(dict.fromkeys(df.label)), list(dict.fromkeys(df.autoscale))
    col, mk = colours(policies), markers(scalers)
    ax = axes[0]
    for (pol, sc), g in df.groupby(["label", "autoscale"], sort=False):
        ax.plot(g["avg_jct"].mean() / H, g["cost"].mean(), marker=mk[sc], color=col[pol], ls="none", ms=8,
                label=f"{pol}, {'fixed cluster' if sc == 'none' else sc + ' auto-scaler'}")
    ax.set_xlabel("average JCT (h)")
    ax.set_ylabel("cluster cost (USD)")
    ax.set_title(f"elastic 1-16 x 4 T4, {df.workload.nunique()} workload(s)", fontsize=9)
    ax.legend(fontsize=7)
    app = single.workload.iloc[0].removesuffix("-alone")
    ax = axes[1]
    t = timeline.time_s / H
    ax.step(t, 4 * timeline.nodes_billed, where="post", label="GPUs billed")
    ax.step(t, timeline.gpus_allocated, where="post", label="GPUs used", ls="--")
    ax.set_xlabel("time (h)")
    ax.set_ylabel("GPUs")
    ax.set_title(f"{app} alone: Pollux's auto-scaler", fontsize=9)
    twin = ax.twinx()
    twin.plot(t, timeline.batch_size, color="grey", lw=1, label="batch size")
    twin.set_ylabel("total batch size", color="grey")
    ax.legend(loc="upper left", fontsize=7)
    ax = axes[2]
    fixed = single[single.label.str.startswith("fixed")]
    ax.plot(fixed.avg_jct / H, fixed.cost, "o-", color="C0", label="fixed sizes")
    for r in fixed.itertuples():
        ax.annotate(f"{int(r.max_nodes)}", (r.avg_jct / H, r.cost), textcoords="offset points", xytext=(4, 4),
                    fontsize=8)
    auto = single[~single.label.str.startswith("fixed")]
    ax.plot(auto.avg_jct / H, auto.cost, "*", color="C3", ms=14, label="Pollux auto-scaling")
    ax.set_xlabel("JCT (h)")
    ax.set_ylabel("cost (USD)")
    ax.set_title(f"{app} alone: cost and time (labels: nodes of 4 T4)", fontsize=9)
    ax.legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return save(fig, out, "autoscaling")
