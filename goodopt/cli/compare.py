"""``goodopt compare``: methods x scenarios x seeds into one tidy CSV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.table import Table

from .common import (
    SECONDS,
    SEEDS,
    LazyHelp,
    NamesAction,
    check_figure_path,
    console,
    fmt,
    key_values,
    method_names,
)


def add_parser(add) -> None:
    """The ``compare`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("compare", help="compare methods on scenarios; writes a tidy CSV")
    p.add_argument("scenarios", nargs="+", help="scenario files, shipped names, or family:NAME:SEED")
    p.add_argument("--methods", default="milp,milp-pwl,ga,greedy", action=NamesAction, known=method_names,
                   help=LazyHelp(lambda: "comma-separated, from: " + ", ".join(method_names())))
    p.add_argument("--seeds", type=SEEDS, default=1, help="seeds per randomised method")
    p.add_argument("--time-limit", type=SECONDS, default=None, help="time limit per solve in seconds")
    p.add_argument("--option", action="append",
                   help="method option KEY=VALUE (every method that takes it) or METHOD.KEY=VALUE (repeatable), "
                        "e.g. formulation=reference or milp@cbc.node_limit=1000")
    p.add_argument("--out", default="compare.csv", help="output CSV (NAME.meta.json with metadata is written beside it)")
    p.add_argument("--profile", default=None, metavar="PATH",
                   help="also draw Dolan-More performance profiles (time and fitness) to PATH (.png, .pdf, .svg)")
    p.add_argument("--convergence", default=None, metavar="PATH",
                   help="also draw each solve's incumbent and bound over time to PATH (.png, .pdf, .svg)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def method_options(items, methods) -> dict:
    """``--option`` items per method: ``METHOD.KEY=VALUE`` for that method, ``KEY=VALUE`` for every method whose
    options take ``KEY`` (at least one must)."""
    from ..errors import ValidationError
    from ..solvers.api import METHOD_OPTIONS

    options = key_values(items)
    per_method: dict = {m: {} for m in methods}
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


def run(args) -> int:
    """``goodopt compare``: methods x scenarios x seeds into one tidy CSV."""
    from ..outputs import check_output, output_set
    from ..runs.compare import compare
    from ..runs.performance import method_summary
    from ..runs.plots import plot_convergence, plot_profiles
    from ..runs.tables import summary, table_outputs, write_table_into

    methods = args.methods.split(",")  # checked as it was parsed (NamesAction)
    path = Path(args.out)
    figures = {opt: Path(f) for opt, f in (("--profile", args.profile), ("--convergence", args.convergence)) if f}
    for f in table_outputs(path):
        check_output(f, inputs=args.scenarios)
    for opt, f in figures.items():
        check_figure_path(f, opt, [*args.scenarios, path, *(g for o, g in figures.items() if o != opt)])
    options = method_options(args.option, methods)
    table = compare(args.scenarios, methods, n_seeds=args.seeds, time_limit_s=args.time_limit,
                    options=options, progress=not args.quiet,
                    traces="--convergence" in figures)
    with output_set() as out:
        write_table_into(out, table.drop(columns="trace", errors="ignore"), path, scenarios=args.scenarios,
                         methods=methods, n_seeds=args.seeds, time_limit_s=args.time_limit, options=options)
        if "--profile" in figures:
            plot_profiles(table, out.path(figures["--profile"]), fmt=figures["--profile"].suffix[1:])
        if "--convergence" in figures:
            plot_convergence(table, out.path(figures["--convergence"]), fmt=figures["--convergence"].suffix[1:])
    con = console()
    t = Table(title="comparison (fitness per method; gap to the best proven bound, nan = no bound)")
    summ = summary(table)
    for col in summ.columns:
        t.add_column(str(col), justify="left" if col in ("scenario", "method", "status") else "right", overflow="fold")
    for row in summ.itertuples(index=False):
        t.add_row(*[v if isinstance(v, str) else fmt(v, 4) for v in row])
    con.print(t)
    if "--profile" in figures:
        t = Table(title="per method over all instances (solved: feasible and within 1e-4 of the best answer)")
        msum = method_summary(table)
        for col in msum.columns:
            t.add_column(str(col), justify="left" if col == "method" else "right", overflow="fold")
        for row in msum.itertuples(index=False):
            t.add_row(*[str(v) if isinstance(v, (str, int, np.integer)) else fmt(v, 4) for v in row])
        con.print(t)
    con.print(f"wrote {', '.join(str(f) for f in [path, table_outputs(path)[1], *figures.values()])}")
    return 0
