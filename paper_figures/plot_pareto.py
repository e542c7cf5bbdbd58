"""Figure 12: the front of efficiency and fairness (the worst job's t) of one homogeneous and one heterogeneous
instance, exact (each point certified) beside NSGA-II and NSGA-III, with the optimum of the fitness at each paper's
p marked on it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from goodopt.families import FAMILIES
from goodopt.pareto.figure import Drawn, draw_panel

from .style import save

if TYPE_CHECKING:
    from .steps import Context

#: (family, seed) of the two panels.
INSTANCES = (("cluster-64", 0), ("hetero-16", 0))


def pareto_tables(ctx: Context) -> list[Path]:
    """The points of every front and the fitness optima at each p, per instance (two tables)."""
    from goodopt.pareto.exact import ExactFrontOptions
    from goodopt.pareto.heuristic import HeuristicFrontOptions
    from goodopt.pareto.study import pareto_study

    from .steps import write_table

    tiny = ctx.scale == "tiny"
    points, powers = [], []
    for family, seed in INSTANCES:
        name = f"{family}:{seed}"
        study = pareto_study(FAMILIES[family].scenario(seed).problem(), "efficiency,fairness", ("exact", "nsga2", "nsga3"),
                             seeds=(0,), exact=ExactFrontOptions(max_points=8 if tiny else 40),
                             heuristic=HeuristicFrontOptions(n_gen=10 if tiny else 100))
        points += [{"scenario": name, **row} for row in study.point_rows()]
        powers += [{"scenario": name, "label": k, "efficiency": v[0], "fairness": v[1]} for k, v in study.powers.items()]
    return [write_table(pd.DataFrame(points), ctx.tables, "pareto_points", scale=ctx.scale),
            write_table(pd.DataFrame(powers), ctx.tables, "pareto_powers", scale=ctx.scale)]


def plot_pareto(tables: Path, out: Path) -> list[Path]:
    """One panel per instance, from the two tables."""
    import matplotlib.pyplot as plt

    points = pd.read_csv(tables / "pareto_points.csv")
    powers = pd.read_csv(tables / "pareto_powers.csv")
    scenarios = list(dict.fromkeys(points["scenario"]))
    fig, axes = plt.subplots(1, len(scenarios), figsize=(5.2 * len(scenarios), 4.2), squeeze=False)
    for ax, name in zip(axes[0], scenarios):
        mine = points[points["scenario"] == name]
        fronts = [Drawn(m, int(s) if pd.notna(s) else None, g[["efficiency", "fairness"]].to_numpy(float),
                        g["certified"].to_numpy(bool))
                  for (m, s), g in mine.groupby(["method", "seed"], dropna=False, sort=False)]
        p = powers[powers["scenario"] == name]
        draw_panel(ax, fronts, {r.label: (r.efficiency, r.fairness) for r in p.itertuples()},
                   ["efficiency", "fairness (worst job)"], [True, True])
        ax.set_title(name)
    fig.tight_layout()
    return save(fig, out, "pareto_fronts")



