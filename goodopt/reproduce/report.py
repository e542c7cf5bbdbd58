"""The reproduction report: a Markdown page and a figure per experiment, from the comparison rows.

Each is written to the path it is given (the caller stages it; see :class:`goodopt.outputs.OutputSet`)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from goodopt._version import __version__
from goodopt.provenance import math_paths

from .comparison import Experiment


def _num(v: float) -> str:
    return "n/a" if not math.isfinite(v) else f"{v:,.1f}" if abs(v) >= 100 else f"{v:.3g}"


def write_report(results: pd.DataFrame, experiments: Iterable[Experiment], seconds: dict[str, float], quick: bool,
                 path: Path, cpu_seconds: dict[str, float] | None = None, task_cpu_s: float = math.nan) -> Path:
    """``report.md``: per experiment its settings, then published vs reproduced with bands and verdicts."""
    lines = ["# Reproducing the papers' headline numbers", "",
             f"goodopt {__version__}; " + ("**quick mode**: one workload per setting and a short Gavel trace, so the "
                                          "numbers are indicative and the bands are not judged (the published ones "
                                          "are means over eight workloads, or over long traces), except against "
                                          "references made at the very same setting (one workload's own artifact "
                                          "result, Gavel's simulator on the same window)." if quick else "full mode."), "",
             f"Wall time of the whole run: {seconds.get('all', math.nan):.0f} s (every experiment's tasks in one pool, "
             "the longest first)"
             + (f"; CPU time of all tasks, each counted once: {task_cpu_s:.0f} s (an experiment's own figure "
                "below counts again the tasks it shares with another)." if math.isfinite(task_cpu_s) else "."), "",
             f"Arithmetic (what this process's code paths were; GOODOPT_MATH=portable pins them): {math_paths()}. "
             "The rows repeat to the last digit only on the same arithmetic.", ""]
    for exp in experiments:
        rows = results[results.experiment == exp.name]
        judged = rows[rows.verdict.isin(["pass", "FAIL"])]
        lines += [f"## {exp.name}: {exp.title}", "", f"Settings: {exp.settings}.", "",
                  (f"CPU time of its tasks: {cpu_seconds[exp.name]:.0f} s (tasks served from the cache count "
                   "what they took when computed). " if cpu_seconds and exp.name in cpu_seconds else "")
                  + (f"Bands held: {int((judged.verdict == 'pass').sum())} of {len(judged)}." if len(judged) else ""),
                  "", "| metric | setting | policy | published | reproduced | ratio | band | verdict |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in rows.itertuples(index=False):
            ratio = r.reproduced / r.published if r.published else math.nan
            lines.append(f"| {r.metric} | {r.setting} | {r.policy} | {_num(r.published)} | {_num(r.reproduced)} | "
                         f"{_num(ratio)} | {r.band or '-'} | {r.verdict or '-'} |")
        lines += ["", f"Note: {exp.note}"] if exp.note else []
        lines += ["", "Sources: " + "; ".join(sorted(set(rows.source))), "",
                  f"![{exp.name}]({exp.name}.png)", ""]
    Path(path).write_text("\n".join(lines))
    return path


def _band_edges(data: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The lowest and highest reproduced value each row's band accepts (NaN where no band is judged)."""
    lo: list[float] = []
    hi: list[float] = []
    for r in data.itertuples(index=False):
        band = r.band or ""
        p = float(r.published)
        if band.startswith("±") and band.endswith("%"):
            tol = float(band[1:-1]) / 100
            lo.append(p * (1 - tol))
            hi.append(p * (1 + tol))
        elif band.startswith("±") and "points" in band:
            tol = float(band[1:].split()[0])
            lo.append(p - tol)
            hi.append(p + tol)
        elif band.startswith("within ") and band.endswith("x"):
            f = float(band[7:-1])
            lo.append(p / f)
            hi.append(p * f)
        else:
            lo.append(math.nan)
            hi.append(math.nan)
    return np.array(lo), np.array(hi)


def _setting_value(setting: str) -> float:
    """The number of a setting such as ``rate=4.8/h`` or ``load=1`` (NaN when it has none)."""
    text = setting.split("=", 1)[-1].removesuffix("/h")
    try:
        return float(text)
    except ValueError:
        return math.nan


def write_figure(rows: pd.DataFrame, exp: Experiment, path: Path, quick: bool = False) -> Path:
    """The experiment's ``curve`` metric against the setting, a line per policy; else published vs reproduced for
    its first metric, per setting and policy (grouped bars), each published bar with the band the reproduced
    one must fall in. A quick run is marked as indicative on the figure itself."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if exp.curve is not None:
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        data = rows[rows.metric == exp.curve]
        for policy, d in data.groupby("policy", sort=False):
            # settings such as "rate=4.8/h" are drawn at their value, so curves of different rates share an axis
            x = [_setting_value(s) for s in d.setting]
            ax.plot(x, d.reproduced, marker="o", ms=4, label=policy,
                    linestyle="--" if "agnostic" in policy else "-")
        first = data.setting.iloc[0]
        ax.set_xlabel(first.split("=", 1)[0] + (" (jobs per hour)" if first.endswith("/h") else ""))
        ax.set_ylabel(exp.curve)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        metric = rows.metric.iloc[0]
        data = rows[rows.metric == metric]
        labels = [f"{s}\n{p}" for s, p in zip(data.setting, data.policy)]
        pos = np.arange(len(data))
        fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(data) + 2), 4))
        ax.bar(pos - 0.2, data.published, 0.4, label="published", color="#999999")
        ax.bar(pos + 0.2, data.reproduced, 0.4, label="goodopt", color="#1f77b4")
        lo, hi = _band_edges(data)
        judged = np.isfinite(lo)
        if judged.any():
            ax.errorbar(pos[judged] + 0.2, ((lo + hi) / 2)[judged], yerr=((hi - lo) / 2)[judged], fmt="none",
                        ecolor="black", capsize=4, lw=1, label="band it must fall in")
        ax.set_xticks(pos, labels, fontsize=7)
        ax.set_ylabel(metric)
    ax.set_title(textwrap.fill(exp.title, 80) + ("\nquick run: one workload per setting, indicative only (bands "
                                                 "not judged)" if quick else ""), fontsize=9)
    if quick:
        ax.text(0.5, 0.5, "QUICK\nindicative", transform=ax.transAxes, ha="center", va="center", fontsize=40,
                color="red", alpha=0.12, rotation=20)
    if exp.curve is None:
        ax.legend()
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    try:
        fig.savefig(path, format="png", dpi=120, metadata={"Software": None})
    finally:
        plt.close(fig)
    return path
