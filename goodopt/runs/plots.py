"""Figures of a comparison: performance profiles and the incumbent and bound over time.

matplotlib is imported when a figure is drawn; every figure is written
atomically (a reader never sees half a file), in the format of the path's
suffix (png, pdf, svg) unless ``fmt`` names one.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from goodopt.outputs import atomic_path

from .measures import closed_trace
from .performance import method_summary, performance_profile

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .statistics import FriedmanResult


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Figure, path: Path, fmt: str | None) -> Path:
    plt = _pyplot()
    fmt = fmt or path.suffix.lstrip(".").lower() or "png"
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=130, bbox_inches="tight", metadata={"Software": None} if fmt == "png" else None)
    finally:
        plt.close(fig)
    return path


def _step(ax: Axes, prof: pd.DataFrame, tau_max: float, log_x: bool) -> None:
    for method in prof.columns:
        taus = np.append(prof.index.to_numpy(), tau_max)
        rho = np.append(prof[method].to_numpy(), prof[method].iloc[-1])
        ax.step(taus, rho, where="post", label=method)
    if log_x:  # times span decades; fitness ratios stay near 1 and read better on a linear axis
        ax.set_xscale("log")
    ax.set_xlim(1.0, tau_max)
    ax.set_ylim(-0.02, 1.02)


def plot_profiles(table: pd.DataFrame, path: str | os.PathLike[str], shift: float = 1.0, fmt: str | None = None,
                  reference: Any = None) -> Path:  # reference: a profile of any kind
    """Dolan-Moré performance profiles of ``table`` (a compare table): time to the best answer (left) and
    fitness relative to the best (right); the legend gives each method's shifted geometric mean seconds.
    ``reference``: scenario -> certified fitness (a library's), the answer to reach instead of the best found."""
    return _save(draw_profiles(table, shift, reference), Path(path), fmt)


def draw_profiles(table: pd.DataFrame, shift: float = 1.0, reference: Any = None) -> Figure:  # reference: a profile of any kind
    """The figure of :func:`plot_profiles` (a matplotlib Figure, for callers that save it their own way)."""
    plt = _pyplot()
    summ = method_summary(table, shift=shift, reference=reference).set_index("method")
    n = int(summ["instances"].max()) if len(summ) else 0
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, measure, label in ((axes[0], "seconds", "time / best time, tau"),
                               (axes[1], "fitness", "best fitness / fitness, tau")):
        prof = performance_profile(table, measure, reference=reference)
        finite = prof.index.to_numpy()
        floor = 2.0 if measure == "seconds" else 1.05
        tau_max = max(floor, 1 + (float(finite.max()) - 1) * 1.2) if finite.size else floor
        _step(ax, prof, tau_max, log_x=measure == "seconds")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel(f"fraction of the {n} instances")
    axes[0].set_title("time to the library's value (within 1e-4)" if reference else
                      "time to the best answer (within 1e-4)")
    axes[1].set_title("fitness")
    fig.suptitle(f"performance profiles over {n} instances: fraction within a factor tau of the best method",
                 fontsize=10)
    handles, labels = axes[0].get_legend_handles_labels()
    sgm = f"sgm_seconds_shift_{shift:g}"
    labels = [f"{m}: {summ.loc[m, 'solved']}/{summ.loc[m, 'instances']} solved, {summ.loc[m, sgm]:.3g} s"
              for m in labels]
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(3, len(labels)),
               title=f"solved instances and shifted geometric mean seconds (shift {shift:g} s)")
    return fig


def plot_convergence(table: pd.DataFrame, path: str | os.PathLike[str], fmt: str | None = None) -> Path:
    """The incumbent (solid line, dots) and proven bound (dashed, paler, triangles) over time of every solve in
    ``table`` (a compare table with a ``trace`` column: ``compare(..., traces=True)``), one panel per scenario,
    in fitness units. Each trace is closed by the solve's answer at its end (:func:`closed_trace`), so a method
    that records no course (greedy) is its answer, one point."""
    plt = _pyplot()
    from matplotlib.lines import Line2D

    scenarios = list(dict.fromkeys(table["scenario"]))
    cols = min(3, len(scenarios))
    rows = math.ceil(len(scenarios) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    colours = {m: f"C{i}" for i, m in enumerate(dict.fromkeys(table["method"]))}
    for ax, sc in zip(axes.flat, scenarios):
        for _, r in table[table["scenario"] == sc].iterrows():
            _draw_course(ax, r, colours[r["method"]])
        ax.set_xscale("log")
        ax.set_title(sc, fontsize=9)
        ax.set_xlabel("seconds since the solve started")
        ax.set_ylabel("fitness")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(scenarios):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=c, lw=2, label=m) for m, c in colours.items()]
    handles += [Line2D([], [], color="0.3", marker="o", ms=3, label="incumbent (one line per seed)"),
                Line2D([], [], color="0.3", marker="v", ms=3, ls="--", alpha=0.55, label="proven bound")]
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, len(handles)),
               fontsize=8)
    fig.suptitle("incumbent and proven bound over time", fontsize=10)
    fig.tight_layout()
    return _save(fig, Path(path), fmt)


def _draw_course(ax: Axes, row: pd.Series, colour: str) -> None:
    """One solve's closed trace on ``ax``: its incumbent, and its bound where it proved one."""
    fitness = float(row["fitness"]) if bool(row.get("feasible", True)) else math.nan
    pts = np.asarray(closed_trace(row["trace"] or [], row["seconds"], fitness, row["bound"]), dtype=float)
    t = np.maximum(pts[:, 0], 1e-4)  # a log time axis: points recorded at 0 s are drawn at 0.1 ms
    found = np.isfinite(pts[:, 1])
    if found.any():
        f = pts[found, 1]
        moved = np.flatnonzero(np.r_[True, f[1:] != f[:-1]])  # a dot where the incumbent changes, and at the end
        ax.step(t[found], f, where="post", color=colour, marker="o", ms=3, markevery=list(moved) + [len(f) - 1])
    proved = np.isfinite(pts[:, 2])
    if proved.any():
        ax.step(t[proved], pts[proved, 2], where="post", color=colour, marker="v", ms=3, ls="--", lw=1,
                alpha=0.55)


def plot_time_to_target(curves: dict[str, pd.DataFrame], path: str | os.PathLike[str], fmt: str | None = None) -> Path:
    """Time-to-target curves (:func:`goodopt.runs.measures.time_to_target_curve`), one panel per target: the
    fraction of instances each method has within the target of the reference value by time t."""
    return _save(draw_time_to_target(curves), Path(path), fmt)


def draw_time_to_target(curves: dict[str, pd.DataFrame]) -> Figure:
    """The figure of :func:`plot_time_to_target`."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(curves), figsize=(5.2 * len(curves), 3.6), squeeze=False)
    for ax, (label, curve) in zip(axes[0], curves.items()):
        t_max = max(float(curve.index.max()), 1e-3) * 1.5
        for method in curve.columns:
            ts = np.append(np.maximum(curve.index.to_numpy(), 1e-4), t_max)
            ax.step(ts, np.append(curve[method].to_numpy(), curve[method].iloc[-1]), where="post", label=method)
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("seconds")
        ax.set_ylabel("fraction of instances")
        ax.set_title(label)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def plot_critical_difference(result: FriedmanResult, path: str | os.PathLike[str], fmt: str | None = None,
                             title: str = "") -> Path:
    """The critical-difference diagram of a :class:`~goodopt.runs.statistics.FriedmanResult` (Nemenyi's
    p-values at its alpha; :func:`scikit_posthocs.critical_difference_diagram`)."""
    return _save(draw_critical_difference(result, title), Path(path), fmt)


def draw_critical_difference(result: FriedmanResult, title: str = "") -> Figure:
    """The figure of :func:`plot_critical_difference`."""
    import scikit_posthocs as sp

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 0.35 * len(result.average_ranks) + 1.2))
    palette = {m: f"C{i}" for i, m in enumerate(result.average_ranks.index)}  # the profiles' colours
    sp.critical_difference_diagram(result.average_ranks, result.nemenyi, alpha=result.alpha, ax=ax,
                                   color_palette=palette)
    ax.set_title(title or f"average ranks: Friedman p = {result.pvalue:.3g}, CD = {result.critical_difference:.2f} "
                          f"(alpha {result.alpha:g}, N = {result.n_instances})", fontsize=9)
    return fig
