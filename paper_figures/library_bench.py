"""Figures 10 and 11: the methods and MILP solvers benchmarked on the shipped library (``scenarios/library``),
and what Sia's restricted configuration set costs.

Each instance is solved by each method (the exact methods under a node budget, so the answers are the same on
every machine); every answer is re-scored by the evaluator and judged against the library's certified value:
performance profiles (solved = within 1e-4 of that value), time-to-target curves (within 0 and 1%, from each
solve's incumbent over time) and the average ranks on the primal integral with the Friedman test's critical
difference. The table ``library_benchmark.csv`` holds every solve with its measures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from goodopt.library import shipped
from goodopt.records import Record
from goodopt.runs.benchmark import library_references
from goodopt.runs.compare import compare, compare_tasks
from goodopt.runs.measures import measures_table, time_to_target_curve
from goodopt.runs.plots import draw_critical_difference, draw_profiles, draw_time_to_target
from goodopt.runs.statistics import friedman, scores

from . import specs
from .steps import Context, write_table
from .style import plain_log, save

TABLE = "library_benchmark"


def _calls(ctx: Context) -> tuple[list[tuple[str, str, dict[str, Any]]], Any, dict[str, Any]]:
    """The benchmark's compare calls: ``(label, method, compare's keywords)`` per method, and the library."""
    spec = specs.library_benchmark(ctx.scale)
    lib = library_references(shipped())
    scenarios = [str(lib.scenarios[n]) for n in spec["instances"]]
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for m in spec["methods"]:
        opts = dict(m["options"])
        if m["method"].startswith("milp"):
            opts["node_limit"] = spec["node_limit"]
        calls.append((m["label"], m["method"], {"scenarios": scenarios, "methods": [m["method"]],
                                                "options": {m["method"]: opts}, "time_limit_s": spec["time_limit_s"]}))
    return calls, lib, spec


def library_tasks(ctx: Context) -> list[Any]:  # Any: tasks of any kind
    """Every solve of :func:`library_tables`."""
    return [task for _, _, call in _calls(ctx)[0] for task in compare_tasks(**call)]


def library_tables(ctx: Context) -> list[Path]:
    """Every method of :func:`specs.library_benchmark` on its instances, with each solve's measures (the solves
    cached as a sweep's are)."""
    calls, lib, spec = _calls(ctx)
    parts = [compare(**call, progress=False, traces=True, workers=ctx.workers, cache_dir=ctx.cache)
             .assign(method=label, solver_method=method) for label, method, call in calls]
    table = pd.concat(parts, ignore_index=True)
    measures = measures_table(table, lib.values, horizon=spec["time_limit_s"])
    table = pd.concat([table.drop(columns="trace"), measures.drop(columns=["scenario", "method", "seed"])], axis=1)
    return [write_table(table, ctx.tables, TABLE, scale=ctx.scale, library=lib.folder.name,
                        node_limit=spec["node_limit"], time_limit_s=spec["time_limit_s"])]


def _table(tables: Path) -> pd.DataFrame:
    return pd.read_csv(tables / f"{TABLE}.csv")


def plot_library_profiles(tables: Path, out: Path) -> list[Path]:
    """Performance profiles against the library's certified values."""
    df = _table(tables)
    reference = df.groupby("scenario")["reference"].first().to_dict()
    return save(draw_profiles(df, reference=reference), out, "library_profiles")


def plot_library_ttt(tables: Path, out: Path) -> list[Path]:
    """Time-to-target curves: the fraction of instances within 0 and 1% of the library value by time t."""
    df = _table(tables)
    curves = {f"within {x:g} of the library's value": time_to_target_curve(df, x) for x in (0.0, 0.01)}
    return save(draw_time_to_target(curves), out, "library_ttt")


def plot_library_ranks(tables: Path, out: Path) -> list[Path]:
    """Average ranks on the primal integral, with Nemenyi's critical difference (Friedman test)."""
    df = _table(tables)
    result = friedman(scores(df, "primal_integral"), "primal_integral")
    return save(draw_critical_difference(result), out, "library_ranks")


def sia_specs(ctx: Context) -> list[Record]:
    """Figure 11: ``milp`` over every configuration and over Sia's set on the library's instances."""
    return [specs.sia_configurations(ctx.scale)]


def plot_sia_configurations(tables: Path, out: Path) -> list[Path]:
    """Per instance: the optimum over Sia's configurations relative to the optimum over all (left), and the
    seconds of both certified solves (right)."""
    import matplotlib.pyplot as plt
    import numpy as np

    df = pd.read_csv(tables / "sia_configurations.csv")
    wide = df.pivot_table(index="scenario", columns="label", values=["fitness", "seconds"], aggfunc="median")
    full, sia = "every configuration", "Sia's configurations"
    ratio = (wide["fitness"][sia] / wide["fitness"][full]).sort_values()
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4.2))
    x = np.arange(len(ratio))
    a.plot(x, ratio.to_numpy(), "o", color="C1")
    a.axhline(1.0, color="0.6", lw=0.8)
    a.set_ylabel("optimum over Sia's set / optimum over all")
    for ax in (a, b):
        ax.set_xticks(x, list(ratio.index), rotation=70, ha="right", fontsize=7)
    for i, (label, mark) in enumerate(((full, "o"), (sia, "s"))):
        b.plot(x, wide["seconds"][label].reindex(ratio.index).to_numpy(), mark, color=f"C{i}", label=label)
    b.set_yscale("log")
    plain_log(b, "y")
    b.set_ylabel("seconds of the certified solve")
    b.legend(fontsize=8)
    a.set_title("what the larger configuration set is worth")
    b.set_title("time of each certified optimum")
    fig.tight_layout()
    return save(fig, out, "sia_configurations")
