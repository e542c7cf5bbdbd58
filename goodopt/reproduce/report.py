"""The reproduction report: a Markdown page and a figure per experiment, from the comparison rows.

Each is written to the path it is given (the caller stages it; see :class:`goodopt.outputs.OutputSet`)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from goodopt._version import __version__


def _num(v: float) -> str:
    return "n/a" if not math.isfinite(v) else f"{v:,.1f}" if abs(v) >= 100 else f"{v:.3g}"


def write_report(results: pd.DataFrame, experiments, seconds: dict, quick: bool, path: Path) -> Path:
    """``report.md``: per experiment its settings, then published vs reproduced with bands and verdicts."""
    lines = ["# Reproducing the papers' headline numbers", "",
             f"goodopt {__version__}; " + ("**quick mode**: one workload per setting and a short Gavel trace, so the "
                                          "numbers are indicative and the bands are not judged (the published ones "
                                          "are means over eight workloads, or over long traces)." if quick else "full mode."), ""]
    for exp in experiments:
        rows = results[results.experiment == exp.name]
        judged = rows[rows.verdict.isin(["pass", "FAIL"])]
        lines += [f"## {exp.name}: {exp.title}", "", f"Settings: {exp.settings}.", "",
                  f"Wall time: {seconds[exp.name]:.0f} s. "
                  + (f"Bands held: {int((judged.verdict == 'pass').sum())} of {len(judged)}." if len(judged) else ""),
                  "", "| metric | setting | policy | published | reproduced | ratio | band | verdict |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in rows.itertuples(index=False):
            ratio = r.reproduced / r.published if r.published else math.nan
            lines.append(f"| {r.metric} | {r.setting} | {r.policy} | {_num(r.published)} | {_num(r.reproduced)} | "
                         f"{_num(ratio)} | {r.band or '-'} | {r.verdict or '-'} |")
        lines += ["", "Sources: " + "; ".join(sorted(set(rows.source))), "",
                  f"![{exp.name}]({exp.name}.png)", ""]
    Path(path).write_text("\n".join(lines))
    return path


def write_figure(rows: pd.DataFrame, exp, path: Path) -> Path:
    """The experiment's ``curve`` metric against the setting, a line per policy; else published vs reproduced for
    its first metric, per setting and policy (grouped bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    if exp.curve is not None:
        fig, ax = plt.subplots(figsize=(6.5, 4))
        data = rows[rows.metric == exp.curve]
        for policy, d in data.groupby("policy", sort=False):
            ax.plot(range(len(d)), d.reproduced, marker="o", ms=4, label=policy,
                    linestyle="--" if "agnostic" in policy else "-")
        ax.set_xticks(range(len(d)), [s.split("=", 1)[-1] for s in d.setting], fontsize=8)
        ax.set_xlabel(d.setting.iloc[0].split("=", 1)[0])
        ax.set_ylabel(exp.curve)
    else:
        metric = rows.metric.iloc[0]
        data = rows[rows.metric == metric]
        labels = [f"{s}\n{p}" for s, p in zip(data.setting, data.policy)]
        x = np.arange(len(data))
        fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(data) + 2), 4))
        ax.bar(x - 0.2, data.published, 0.4, label="published", color="#999999")
        ax.bar(x + 0.2, data.reproduced, 0.4, label="goodopt", color="#1f77b4")
        ax.set_xticks(x, labels, fontsize=7)
        ax.set_ylabel(metric)
    ax.set_title(exp.title, fontsize=10)
    ax.legend()
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    try:
        fig.savefig(path, format="png", dpi=120, metadata={"Software": None})
    finally:
        plt.close(fig)
    return path
