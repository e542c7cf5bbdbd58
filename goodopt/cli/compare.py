"""``goodopt compare``: methods x scenarios x seeds into one tidy CSV.

The command face of :mod:`goodopt.runs.compare` (the comparison runner), hence the shared file name."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    import pandas as pd

    from ..runs.benchmark import Library
    from ..runs.statistics import FriedmanResult

    Stats = tuple[FriedmanResult, pd.DataFrame, str]

from ..records import Record
from .common import (
    SECONDS,
    SEEDS,
    AddParser,
    LazyHelp,
    NamesAction,
    check_figure_path,
    console,
    fmt,
    key_values,
    method_names,
)


def add_parser(add: AddParser) -> None:
    """The ``compare`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("compare", help="compare methods on scenarios; writes a tidy CSV")
    p.add_argument("scenarios", nargs="*", help="scenario files, shipped names, or family:NAME:SEED (with "
                                                "--library: its instance names; none: all of them)")
    p.add_argument("--methods", default="milp,milp-pwl,ga,greedy", action=NamesAction, known=method_names,
                   help=LazyHelp(lambda: "comma-separated, from: " + ", ".join(method_names())))
    p.add_argument("--seeds", type=SEEDS, default=1, help="seeds per randomised method")
    p.add_argument("--time-limit", type=SECONDS, default=None, help="time limit per solve in seconds")
    p.add_argument("--option", action="append",
                   help="method option KEY=VALUE (every method that takes it) or METHOD.KEY=VALUE (repeatable), "
                        "e.g. formulation=reference or milp@cbc.node_limit=1000")
    p.add_argument("--out", default="compare.csv", help="output CSV (NAME.meta.json with metadata is written beside it)")
    p.add_argument("--force", action="store_true", help="replace the results of an earlier run at --out and the "
                   "figure and text paths (by default they are kept and the run is refused)")
    p.add_argument("--profile", default=None, metavar="PATH",
                   help="also draw Dolan-More performance profiles (time and fitness) to PATH (.png, .pdf, .svg)")
    p.add_argument("--convergence", default=None, metavar="PATH",
                   help="also draw each solve's incumbent and bound over time to PATH (.png, .pdf, .svg)")
    p.add_argument("--library", default=None, metavar="DIR",
                   help="benchmark on a library (goodopt library build; 'shipped' for the small tier): its values "
                        "are the reference of the profiles, primal integrals and time-to-target curves")
    p.add_argument("--import", dest="import_", default=None, metavar="CSV",
                   help="add external runs: a CSV of instance, solver, seconds, status, answer (an allocation or "
                        "a solver's .sol for the exported model), each answer judged by goodopt check")
    p.add_argument("--permutations", type=SEEDS, default=None, metavar="K",
                   help="also solve each instance K more times with jobs and nodes permuted and other solver "
                        "seeds; writes NAME.variability.csv (a certified optimum must not move)")
    p.add_argument("--ttt", default=None, metavar="PATH",
                   help="also draw time-to-target curves (within 0 and 1%% of the reference) to PATH")
    p.add_argument("--stats", default=None, metavar="MEASURE",
                   help="Friedman test with Nemenyi's post-hoc and Wilcoxon-Holm pairs on MEASURE (seconds, "
                        "fitness, primal_integral, ...)")
    p.add_argument("--cd", default=None, metavar="PATH", help="with --stats: the critical-difference diagram")
    p.add_argument("--latex", default=None, metavar="PATH",
                   help="also write the per-method summary (and --stats tables) as LaTeX with booktabs rules")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def method_options(items: Sequence[str] | None, methods: Sequence[str]) -> dict[str, Record]:
    """``--option`` items per method: ``METHOD.KEY=VALUE`` for that method, ``KEY=VALUE`` for every method whose
    options take ``KEY`` (at least one must)."""
    from ..errors import ValidationError
    from ..solvers.api import METHOD_OPTIONS

    options = key_values(items)
    per_method: dict[str, dict[str, Any]] = {m: {} for m in methods}
    for key, value in options.items():
        method, dot, name = key.rpartition(".")
        if dot:
            if method not in per_method:
                raise ValidationError("--option", f"{key!r} names method {method!r}, which is not compared",
                                      f"methods compared: {', '.join(methods)}")
            per_method[method][name] = value
            continue
        takers = [m for m in methods if key in METHOD_OPTIONS[m]]
        if not takers:
            raise ValidationError("--option", f"no method compared takes {key!r}",
                                  "see goodopt options METHOD for each method's options")
        for m in takers:
            per_method[m].setdefault(key, value)
    return per_method


def run(args: argparse.Namespace) -> int:
    """``goodopt compare``: methods x scenarios x seeds into one tidy CSV."""
    from ..errors import ValidationError
    from ..outputs import check_output
    from ..runs.tables import table_outputs

    methods = args.methods.split(",")  # checked as it was parsed (NamesAction)
    lib = _library(args.library)
    scenarios = _scenarios(args.scenarios, lib)
    path = Path(args.out)
    figures = {opt: Path(f) for opt, f in (("--profile", args.profile), ("--convergence", args.convergence),
                                           ("--ttt", args.ttt), ("--cd", args.cd)) if f}
    if args.cd and not args.stats:
        raise ValidationError("--cd", "draws the --stats test's ranks", "add --stats MEASURE")
    texts = {opt: Path(f) for opt, f in (("--latex", args.latex),) if f}
    if args.permutations:
        texts["--permutations"] = path.with_name(path.stem + ".variability.csv")
    inputs = [*scenarios, *([args.import_] if args.import_ else [])]
    keep = not args.force
    for opt, f in [*(("--out", f) for f in table_outputs(path)), *texts.items()]:
        check_output(f, inputs=inputs, keep=keep, option=opt)
    for opt, f in figures.items():
        check_figure_path(f, opt, [*inputs, path, *texts.values(), *(g for o, g in figures.items() if o != opt)],
                          keep=keep)
    options = method_options(args.option, methods)
    table, variability = _run_all(args, scenarios, methods, options, lib, traces=bool(figures or args.stats or lib
                                                                                       or args.import_))
    stats = _stats(table, args.stats) if args.stats else None
    _write(args, table, variability, stats, lib, path, figures, texts, scenarios, methods, options)
    _print(args, table, variability, stats, lib)
    con = console()
    con.print(f"wrote {', '.join(str(f) for f in [path, table_outputs(path)[1], *figures.values(), *texts.values()])}")
    return 0


def _library(folder: str | None) -> Library | None:
    """The library ``--library`` names (``shipped``: the small tier), or None."""
    if folder is None:
        return None
    from ..library import shipped
    from ..runs.benchmark import library_references

    return library_references(shipped() if folder == "shipped" else folder)


def _scenarios(names: Sequence[str], lib: Library | None) -> list[str]:
    """The scenarios to compare: as given, a library's instances by name, or all of them."""
    from ..errors import ValidationError

    if lib is None:
        if not names:
            raise ValidationError("scenarios", "none given", "name scenarios, or pass --library DIR")
        return list(names)
    return [str(lib.scenarios.get(n, n)) for n in names] if names else [str(p) for p in lib.scenarios.values()]


def _run_all(args: argparse.Namespace, scenarios: list[str], methods: list[str],
             options: Mapping[str, Mapping[str, Any]], lib: Library | None,
             traces: bool) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The compare table (with the imported runs and each row's measures) and the variability table."""
    import pandas as pd

    from ..runs.benchmark import import_runs, variability
    from ..runs.compare import compare
    from ..runs.measures import measures_table

    table = compare(scenarios, methods, n_seeds=args.seeds, time_limit_s=args.time_limit, options=options,
                    progress=not args.quiet, traces=traces)
    if args.import_:
        from ..runs.tables import add_reference_columns

        table = add_reference_columns(pd.concat([table, import_runs(args.import_, lib)], ignore_index=True),
                                      by=["scenario"])
    if traces:
        m = measures_table(table, lib.values if lib else None, horizon=args.time_limit)
        table = pd.concat([table, m.drop(columns=["scenario", "method", "seed"])], axis=1)
    var = None
    if args.permutations:
        var = variability(scenarios, methods, args.permutations, options=options, time_limit_s=args.time_limit)
    return table, var


def _write(args: argparse.Namespace, table: pd.DataFrame, var: pd.DataFrame | None, stats: Stats | None,
           lib: Library | None, path: Path, figures: dict[str, Path], texts: dict[str, Path], scenarios: list[str],
           methods: list[str], options: Mapping[str, Mapping[str, Any]]) -> None:
    from ..outputs import output_set
    from ..runs.plots import plot_convergence, plot_critical_difference, plot_profiles, plot_time_to_target
    from ..runs.tables import write_table_into

    reference = lib.values if lib else None
    with output_set() as out:
        write_table_into(out, table.drop(columns="trace", errors="ignore"), path, scenarios=scenarios,
                         methods=methods, n_seeds=args.seeds, time_limit_s=args.time_limit, options=options,
                         library=str(lib.folder) if lib else None, imported=args.import_)
        if "--profile" in figures:
            plot_profiles(table, out.path(figures["--profile"]), fmt=figures["--profile"].suffix[1:],
                          reference=reference)
        if "--convergence" in figures:
            plot_convergence(table, out.path(figures["--convergence"]), fmt=figures["--convergence"].suffix[1:])
        if "--ttt" in figures:
            from ..runs.measures import time_to_target_curve

            curves = {f"within {x:g} of the reference": time_to_target_curve(table, x) for x in (0.0, 0.01)}
            plot_time_to_target(curves, out.path(figures["--ttt"]), fmt=figures["--ttt"].suffix[1:])
        if "--cd" in figures and stats is not None:
            plot_critical_difference(stats[0], out.path(figures["--cd"]), fmt=figures["--cd"].suffix[1:])
        if "--latex" in texts:
            out.path(texts["--latex"]).write_text(_latex(table, stats, reference))
        if var is not None:
            var.to_csv(out.path(texts["--permutations"]), index=False)


def _stats(table: pd.DataFrame, measure: str) -> Stats:
    from ..runs.statistics import friedman, scores, wilcoxon_holm

    s = scores(table, measure)
    return friedman(s, measure), wilcoxon_holm(s, measure), measure


def _latex(table: pd.DataFrame, stats: Stats | None, reference: Any) -> str:
    from ..runs.performance import method_summary
    from ..runs.statistics import latex_table

    parts = [latex_table(method_summary(table, reference=reference), caption="Per method over all instances",
                         label="tab:methods")]
    if stats is not None:
        fr, wh, measure = stats
        ranks = fr.average_ranks.rename("average rank").reset_index().rename(columns={"index": "method"})
        parts.append(latex_table(ranks, caption=f"Average ranks on {measure} (Friedman p = {fr.pvalue:.3g}, "
                                               f"CD = {fr.critical_difference:.2f})", label="tab:ranks"))
        parts.append(latex_table(wh, caption=f"Wilcoxon signed-rank tests on {measure}, Holm-corrected",
                                 label="tab:wilcoxon"))
    return "\n".join(parts)


def _print(args: argparse.Namespace, table: pd.DataFrame, var: pd.DataFrame | None, stats: Stats | None,
           lib: Library | None) -> None:
    from ..runs.performance import method_summary
    from ..runs.tables import summary

    con = console()
    _rich(con, "comparison (fitness per method; gap to the best proven bound, nan = no bound)",
          summary(table))
    if args.profile or lib is not None:
        what = "the library's value" if lib is not None else "the best answer"
        _rich(con, f"per method over all instances (solved: feasible and within 1e-4 of {what})",
              method_summary(table, reference=lib.values if lib else None))
    if stats is not None:
        fr, wh, measure = stats
        con.print(f"Friedman test on {measure}: chi2 = {fr.statistic:.4g}, p = {fr.pvalue:.3g} over "
                  f"{fr.n_instances} instances; critical difference {fr.critical_difference:.3f} at alpha "
                  f"{fr.alpha:g}")
        _rich(con, "average ranks (1 = best)", fr.average_ranks.rename("rank").reset_index())
        _rich(con, "Wilcoxon signed-rank, Holm-corrected", wh)
    if var is not None:
        from ..runs.benchmark import variability_summary

        _rich(con, "variability over permutations of jobs and nodes (and solver seeds)", variability_summary(var))


def _rich(con: Console, title: str, df: pd.DataFrame) -> None:
    t = Table(title=title)
    for col in df.columns:
        t.add_column(str(col), justify="left" if df[col].dtype == object else "right", overflow="fold")
    for row in df.itertuples(index=False):
        t.add_row(*[v if isinstance(v, str) else str(v) if isinstance(v, (bool, int, np.integer, np.bool_))
                    else fmt(v, 4) for v in row])
    con.print(t)
