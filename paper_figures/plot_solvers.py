"""Figures 3, 4 and 7: the fairness knob, exact vs heuristic allocation, scheduler runtime.

Reads only the sweep tables in ``out/tables`` (``fairness``, ``exact_vs_heuristic``,
``runtime_scaling`` and their ``-jobs`` tables).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from goodopt.runs.plots import draw_profiles

from .style import colours, markers, plain_log, save

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def _p_label(p: float) -> str:
    return "-inf" if p == -math.inf else f"{p:g}"


def plot_fairness(tables: Path, out: Path) -> list[Path]:
    """Figure 3 from ``fairness.csv`` and ``fairness-jobs.csv``."""
    jobs = pd.read_csv(tables / "fairness-jobs.csv")
    runs = pd.read_csv(tables / "fairness.csv")
    ps = sorted(jobs.p.unique(), reverse=True)
    order = (jobs[jobs.p == ps[0]].sort_values(["application", "job"]).job.tolist())
    gpus = jobs.pivot_table(index="job", columns="p", values="n_gpus").loc[order, ps]
    speed = jobs.pivot_table(index="job", columns="p", values="speedup").loc[order, ps]
    apps = jobs.drop_duplicates("job").set_index("job").loc[order, "application"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.32 * len(order) + 2.4), gridspec_kw={"width_ratios": [1, 1.15]})
    scen = runs.scenario.iloc[0]
    n_gpus = int(runs.n_gpus.iloc[0])
    fig.suptitle(f"The fairness knob p: exact optima of {scen} ({len(order)} jobs, {n_gpus} GPUs)")
    ax = axes[0]
    im = ax.imshow(gpus.to_numpy(), aspect="auto", cmap="Blues", vmin=0)
    for (i, j), v in np.ndenumerate(gpus.to_numpy()):
        ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=7,
                color="white" if v > 0.6 * gpus.to_numpy().max() else "black")
    ax.set_xticks(range(len(ps)), [_p_label(p) for p in ps])
    ax.set_yticks(range(len(order)), [f"{j} ({a})" if not j.startswith(a) else j for j, a in zip(order, apps)])
    ax.set_xlabel("p (1 = total speedup, -inf = max-min)")
    ax.set_title("GPUs per job")
    fig.colorbar(im, ax=ax, label="GPUs", shrink=0.8)
    ax = axes[1]
    x = np.arange(len(ps))
    col = colours(sorted(apps.unique()))
    for job in order:
        ax.plot(x, speed.loc[job], "-", lw=0.8, alpha=0.6, color=col[apps[job]])
    ax.plot(x, speed.min(axis=0), "k-", lw=2.2, label="smallest speedup")
    ax.plot(x, speed.mean(axis=0), "k--", lw=2.2, label="mean speedup")
    for a, c in col.items():
        ax.plot([], [], color=c, lw=1, label=a)
    ax.set_xticks(x, [_p_label(p) for p in ps])
    ax.set_xlabel("p")
    ax.set_ylabel("scored speedup over the fair share\n(x re-allocation factor where moved)")
    ax.set_title("Per-job speedups (thin: one job, coloured by application)")
    ax.grid(alpha=0.3)
    ax.legend(ncol=2, loc="upper right")
    fig.tight_layout()
    return save(fig, out, "fairness_knob")


def _by_size(df: pd.DataFrame, value: str) -> pd.DataFrame:
    """Mean of ``value`` per (label, n_gpus) over scenarios and seeds, in the table's label order."""
    g = df.groupby(["label", "n_gpus"], sort=False)[value].agg(["mean", "min", "max"]).reset_index()
    return g


#: Statuses of a method that proves bounds, read as "stopped before certifying".
UNCERTIFIED = ("time_limit", "iteration_limit", "gap_limit", "numerical", "error")


def _spread(df: pd.DataFrame) -> str:
    """What a point stands for, from the table: one run, or the mean and range over scenarios and seeds."""
    n_sc = int(df.groupby("n_gpus").scenario.nunique().max())
    n_seed = int(df.groupby(["label", "scenario"]).seed.nunique().max()) if "seed" in df else 1
    if n_sc == 1 and n_seed <= 1:
        return "one scenario per size"
    return f"mean, range over {n_sc} scenario(s) x {max(n_seed, 1)} seed(s) per size"


def _dodge(n_gpus: Any, i: int, n: int) -> Any:
    """Cluster sizes nudged per series on the log2 axis, so that series at equal values stay visible."""
    return n_gpus * 2 ** (0.07 * (i - (n - 1) / 2))


def _quality_and_time(df: pd.DataFrame, title: str, name: str, out: Path) -> list[Path]:
    df = df.copy()
    df["relative"] = df.fitness / df.best_bound
    labels = list(dict.fromkeys(df.label))
    col, mk = colours(labels), markers(labels)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    fig.suptitle(f"{title} ({_spread(df)})")
    q, t = _by_size(df, "relative"), _by_size(df, "seconds")
    for i, lab in enumerate(labels):
        a = q[q.label == lab]
        axes[0].errorbar(_dodge(a.n_gpus, i, len(labels)), a["mean"], yerr=[a["mean"] - a["min"],
                         a["max"] - a["mean"]], marker=mk[lab], color=col[lab], label=lab, capsize=2, lw=1.2, ms=6,
                         mfc="none", mew=1.4)
        b = t[t.label == lab]
        axes[1].plot(_dodge(b.n_gpus, i, len(labels)), b["mean"], marker=mk[lab], color=col[lab], label=lab, lw=1.2,
                     ms=6, mfc="none", mew=1.4)
    _mark_uncertified(axes[0], df, labels)
    limit = df.attrs.get("time_limit_s")
    if limit:
        axes[1].axhline(limit, color="grey", ls=":", lw=1, label=f"time limit ({limit:g} s)")
    axes[0].set_ylabel("fitness / best proven bound (1 = certified optimum)")
    axes[1].set_ylabel("solve time (s)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(df.n_gpus.unique()), [str(v) for v in sorted(df.n_gpus.unique())])
        ax.set_xlabel("cluster size (GPUs)")
        ax.grid(alpha=0.3, which="both")
    axes[1].set_yscale("log")
    plain_log(axes[1], "y")
    lo = float(np.nanmin(q["min"]))
    axes[0].set_ylim(max(0.0, min(lo, 0.99) - 0.02), 1.005)
    handles, names = axes[1].get_legend_handles_labels()
    extra = [(h, n) for h, n in zip(*axes[0].get_legend_handles_labels()) if n not in names]
    handles, names = handles + [h for h, _ in extra], names + [n for _, n in extra]
    fig.legend(handles, names, loc="lower center", ncol=min(len(names), 7), frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return save(fig, out, name)


def _mark_uncertified(ax: Axes, df: pd.DataFrame, labels: list[str]) -> None:
    """Runs that stopped at a limit (or were judged numerical) are crossed out, so they are not read as optima."""
    bounded = df[df.method.isin(["milp", "brute-force"])] if "method" in df else df.iloc[:0]
    stopped = bounded[bounded.status.isin(UNCERTIFIED)] if "status" in bounded else bounded.iloc[:0]
    if "stopped_by_clock" in df:
        stopped = pd.concat([stopped, df[df["stopped_by_clock"].astype(bool)]]).drop_duplicates()
    if len(stopped):
        x = [_dodge(n, labels.index(lab), len(labels)) for n, lab in zip(stopped.n_gpus, stopped.label)]
        ax.scatter(x, stopped["relative"], marker="x", color="black", s=45, zorder=5,
                   label="stopped at a time or node limit (not certified)")


def _time_limit(tables: Path, name: str) -> float | None:
    import json

    meta = json.loads((tables / f"{name}.meta.json").read_text())
    return meta.get("sweep", {}).get("time_limit_s")


def plot_exact_vs_heuristic(tables: Path, out: Path) -> list[Path]:
    """Figure 4a from ``exact_vs_heuristic.csv``."""
    df = pd.read_csv(tables / "exact_vs_heuristic.csv")
    df.attrs["time_limit_s"] = _time_limit(tables, "exact_vs_heuristic")
    ps = ", ".join(f"p = {_p_label(p)}" for p in sorted(df.p.unique())) if "p" in df else ""
    return _quality_and_time(df, f"Exact vs heuristic allocation on {_clusters(df)} ({ps})", "exact_vs_heuristic", out)


def _clusters(df: pd.DataFrame) -> str:
    """The clusters of a table's scenarios, from their names (``family:cluster-16:0`` -> cluster-16)."""
    fams = sorted({str(s).split(":")[1] if str(s).startswith("family:") else str(s) for s in df.scenario},
                  key=lambda f: (len(f), f))
    return ", ".join(fams[:4]) + (" ..." if len(fams) > 4 else "")


def plot_pwl_error(tables: Path, out: Path) -> list[Path]:
    """Figure 4b from the ``milp-pwl`` rows of ``exact_vs_heuristic.csv``."""
    df = pd.read_csv(tables / "exact_vs_heuristic.csv")
    pwl = df[df.method == "milp-pwl"].copy()
    pwl["relative_loss"] = 1 - pwl.fitness / pwl.best_bound
    sizes = sorted(pwl.n_gpus.unique())
    col = colours([str(s) for s in sizes])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    fig.suptitle("Piecewise-linear MILP: error vs number of breakpoints K")
    floors = (1e-4, 1e-6)
    for s in sizes:
        a = pwl[pwl.n_gpus == s].groupby("pwl_breakpoints")[["pwl_error_bound", "relative_loss"]].mean()
        n = pwl[pwl.n_gpus == s].scenario.nunique()
        for ax, value, floor in zip(axes, (a.pwl_error_bound, a.relative_loss), floors):
            ax.plot(a.index, value.where(value > floor), "o-", color=col[str(s)],
                    label=f"{s} GPUs (mean of {n} instance{'s' if n > 1 else ''})")
            zero = value[value <= floor]  # exact (or below the floor): hollow markers on the floor line
            ax.plot(zero.index, np.full(len(zero), floor), "v", mfc="none", color=col[str(s)], ms=7)
    for ax, floor, what in zip(axes, floors, ("0 (exact)", "below 1e-6")):
        ax.axhline(floor, color="grey", ls=":", lw=0.8)
        ax.plot([], [], "v", mfc="none", color="grey", label=f"{what}: hollow, on the dotted line")
    axes[0].set_ylabel("largest interpolation error of a job's term\n(S + eps)^p, in the term's own units")
    axes[1].set_ylabel("1 - fitness / best proven bound")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ks = sorted(pwl.pwl_breakpoints.dropna().unique())
        ax.set_xticks(ks, [f"{k:g}" for k in ks])
        ax.set_xlabel("breakpoints K")
        ax.set_yscale("log")
        plain_log(ax, "y")
        ax.grid(alpha=0.3, which="both")
        ax.legend()
    axes[1].set_title("fitness lost by decoding the PWL optimum", fontsize=9)
    axes[1].text(0.02, 0.02, "a line that stays flat as K grows: the loss is not interpolation error but the\n"
                 "model's GPU counts, which do not pack on the nodes as they are (decoded, then re-scored)",
                 transform=axes[1].transAxes, fontsize=7, va="bottom", color="dimgrey")
    axes[0].set_title("a-priori error bound reported by the solver", fontsize=9)
    fig.tight_layout()
    return save(fig, out, "pwl_error")


def plot_runtime(tables: Path, out: Path) -> list[Path]:
    """Figure 7 from ``runtime_scaling.csv``."""
    df = pd.read_csv(tables / "runtime_scaling.csv")
    df.attrs["time_limit_s"] = _time_limit(tables, "runtime_scaling")
    return _quality_and_time(df, f"Scheduler runtime vs cluster size, one scheduling round on {_clusters(df)}",
                             "scheduler_runtime", out)


def plot_profiles(tables: Path, out: Path) -> list[Path]:
    """Performance profiles over every instance of Figure 7 (and Figure 4's, when its table is there)."""
    parts = [pd.read_csv(tables / "runtime_scaling.csv")]
    if (tables / "exact_vs_heuristic.csv").is_file():
        parts.append(pd.read_csv(tables / "exact_vs_heuristic.csv"))
    df = pd.concat(parts, ignore_index=True)
    if "label" in df:
        df = df.assign(method=df["label"])
    # a profile compares methods on the same instances: keep the methods run on every one of them
    runs = df.groupby("method")["scenario"].nunique()
    df = df[df["method"].isin(runs[runs == df["scenario"].nunique()].index)]
    return save(draw_profiles(df), out, "performance_profiles")


def _solver_table(tables: Path) -> pd.DataFrame:
    df = pd.read_csv(tables / "solver_comparison.csv")
    return df.assign(method=df["label"]) if "label" in df else df


def plot_solver_profiles(tables: Path, out: Path) -> list[Path]:
    """Figure 9's performance profiles of the solvers (time and fitness) from ``solver_comparison.csv``."""
    return save(draw_profiles(_solver_table(tables)), out, "solver_profiles")


def plot_solver_seconds(tables: Path, out: Path) -> list[Path]:
    """Figure 9: seconds of every instance per solver (log scale), instances in the order of HiGHS's time; a
    cross marks a solve that is not ``optimal``."""
    df = _solver_table(tables)
    methods = list(dict.fromkeys(df["method"]))  # the spec's order (HiGHS first), as the profiles' colours
    wide = df.pivot_table(index="scenario", columns="method", values="seconds", aggfunc="median")[methods]
    order = wide[methods[0]].sort_values().index
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    cols, marks = colours(list(wide.columns)), markers(list(wide.columns))
    status = df.set_index(["scenario", "method"])["status"]
    for m in wide.columns:
        ys = wide.loc[order, m].to_numpy()
        ok = np.array([status.get((sc, m), "") == "optimal" for sc in order])
        x = np.arange(len(order))
        ax.plot(x[ok], ys[ok], marks[m], color=cols[m], label=m, linestyle="none")
        ax.plot(x[~ok], ys[~ok], "x", color=cols[m], linestyle="none")
    ax.set_yscale("log")
    plain_log(ax, "y")
    ax.set_xticks(np.arange(len(order)), [sc.replace("family:", "") for sc in order], rotation=60, ha="right",
                  fontsize=7)
    ax.set_ylabel("seconds (whole solve)")
    ax.set_title("The same reference model on each MILP solver (x: not certified)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, out, "solver_seconds")
