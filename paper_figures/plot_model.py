"""Model figures (Pollux paper §2-3 style). Reads only the tables in ``out/tables``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import pandas as pd

from .style import TAB10, save
from .style import plain_log as _plain_log

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

APPS = ["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"]


COLORS = dict(zip(APPS, TAB10))


def _panel(ax: Axes, title: str, xlabel: str, ylabel: str, logy: bool = True) -> None:
    """Common styling of one facet: log x (and y), plain tick labels, grid."""
    ax.set_title(title)
    ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    _plain_log(ax, "both" if logy else "x")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, which="both")


def _finish(fig: Figure, axes: Any, out: Path, name: str) -> list[Path]:
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return save(fig, out, name)


def _grid(title: str) -> tuple[Figure, Any]:
    fig, axes = plt.subplots(2, 3, figsize=(12, 6.8))
    fig.suptitle(title)
    return fig, axes.ravel()


def plot_throughput(tables: Path, out: Path) -> list[Path]:
    """Figure 1a from ``throughput.csv`` (+ ``throughput_measured.csv`` when present)."""
    df = pd.read_csv(tables / "throughput.csv")
    measured_f = tables / "throughput_measured.csv"
    meas = pd.read_csv(measured_f) if measured_f.exists() else None
    fig, axes = _grid("Throughput vs per-GPU batch size (T4; lines: fitted model, dots: measured)")
    for ax, app in zip(axes, APPS):
        for (k, n), grp in df[df.application == app].groupby(["n_gpus", "n_nodes"]):
            line, = ax.plot(grp.local_bsz, grp.throughput, label=f"{k} GPU{'s' if k > 1 else ''} / {n} node{'s' if n > 1 else ''}")
            if meas is not None:
                m = meas[(meas.application == app) & (meas.n_gpus == k) & (meas.n_nodes == n)]
                ax.plot(m.local_bsz, m.throughput, "o", ms=3, color=line.get_color())
        _panel(ax, app, "per-GPU batch size (examples)", "throughput (examples/s)")
    return _finish(fig, axes, out, "model_throughput")


def plot_efficiency(tables: Path, out: Path) -> list[Path]:
    """Figure 1b from ``efficiency.csv``."""
    df = pd.read_csv(tables / "efficiency.csv")
    fig, axes = _grid("Statistical efficiency vs total batch size over training")
    for ax, app in zip(axes, APPS):
        for frac, grp in df[df.application == app].groupby("training_fraction"):
            ax.plot(grp.batch_size, grp.efficiency, label=f"{frac:.0%} trained")
        _panel(ax, app, "total batch size M (examples)", "efficiency E(M)", logy=False)
        ax.set_ylim(0, 1.05)
    return _finish(fig, axes, out, "model_efficiency")


def plot_goodput(tables: Path, out: Path) -> list[Path]:
    """Figure 1c from ``goodput.csv``."""
    df = pd.read_csv(tables / "goodput.csv")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    fig.suptitle("Goodput-optimal batch size and speedup vs GPUs (T4, 4 GPUs/node)")
    for app in APPS:
        for frac, style in ((0.1, "--"), (0.8, "-")):
            grp = df[(df.application == app) & (df.training_fraction == frac)]
            label = app if frac == 0.8 else None
            axes[0].plot(grp.n_gpus, grp.best_batch_size, style, color=COLORS[app], label=label)
            axes[1].plot(grp.n_gpus, grp.speedup_vs_1gpu, style, color=COLORS[app], label=label)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("goodput-optimal total batch (examples)")
    axes[1].set_ylabel("speedup over 1 GPU")
    axes[1].plot([1, 64], [1, 64], ":", color="grey", label="linear")
    for ax in axes:
        ax.set_xlabel("GPUs")
        ax.grid(alpha=0.3)
    axes[1].set_yscale("log")
    axes[1].set_xscale("log")
    _plain_log(axes[1])
    axes[1].legend(fontsize=8, title="solid: 80% trained\ndashed: 10% trained", title_fontsize=8)
    fig.tight_layout()
    return save(fig, out, "model_goodput")


def plot_speedup_types(tables: Path, out: Path) -> list[Path]:
    """Figure 2 from ``speedup_types.csv``."""
    df = pd.read_csv(tables / "speedup_types.csv")
    fig, axes = _grid("Speedup over one GPU of the same type vs GPUs (half-way through training)")
    for ax, app in zip(axes, APPS):
        for gpu, grp in df[df.application == app].groupby("gpu_type"):
            ax.plot(grp.n_gpus, grp.speedup_vs_1gpu, label=gpu)
        ax.plot([1, 64], [1, 64], ":", color="grey")
        _panel(ax, app, "GPUs", "speedup")
    return _finish(fig, axes, out, "model_speedup_types")
