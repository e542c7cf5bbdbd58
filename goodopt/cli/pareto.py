"""``goodopt pareto``: the front of one scenario, exact and heuristic, with indicators and a figure."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .common import SEEDS, AddParser, check_figure_path, console, key_values


def add_parser(add: AddParser) -> None:
    """The ``pareto`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("pareto", help="the Pareto front of one scenario: exact points and heuristic fronts; writes a tidy CSV")
    p.add_argument("scenario", help="a scenario file, a shipped name, or family:NAME:SEED")
    p.add_argument("--objectives", default="efficiency,fairness",
                   help="two or three of efficiency, fairness[:P] (P: the power mean's p, default -inf: the worst "
                        "job), cost")
    p.add_argument("--methods", default="exact,nsga2,nsga3", help="exact and any of nsga2, nsga3, moead")
    p.add_argument("--seeds", type=SEEDS, default=1, help="seeds per heuristic")
    p.add_argument("--generations", type=int, default=100, help="generations of each heuristic")
    p.add_argument("--pop-size", type=int, default=100, help="population of each heuristic")
    p.add_argument("--max-points", type=int, default=40, help="exact points per bi-objective front (0: every point)")
    p.add_argument("--cost-levels", type=int, default=6, help="cost budgets with three criteria (0: every reachable cost)")
    p.add_argument("--price", action="append", help="TYPE=USD per GPU-hour for the cost (repeatable), e.g. rtx6000=1.2")
    p.add_argument("--out", default="pareto.csv", help="the points' CSV (NAME.indicators.csv and, the heuristics' "
                   "best, median and worst attainment surfaces over their seeds, NAME.attainment.csv beside it)")
    p.add_argument("--figure", default=None, metavar="PATH", help="also draw the front to PATH (.png, .pdf, .svg)")
    p.add_argument("--force", action="store_true", help="replace the results of an earlier run at --out and --figure")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``goodopt pareto``."""
    from ..outputs import check_output, output_set
    from ..pareto.exact import ExactFrontOptions
    from ..pareto.figure import draw_front
    from ..pareto.heuristic import HeuristicFrontOptions
    from ..pareto.study import pareto_study
    from ..runs.tables import table_outputs, write_table_into
    from ..sources import load_scenario

    out = Path(args.out)
    ind = out.with_name(out.stem + ".indicators.csv")
    att = out.with_name(out.stem + ".attainment.csv")
    keep = not args.force
    for f in (*table_outputs(out), *table_outputs(ind), *table_outputs(att)):
        check_output(f, inputs=[args.scenario], keep=keep, option="--out")
    if args.figure:
        check_figure_path(Path(args.figure), "--figure", [args.scenario, out, ind, att], keep=keep)
    problem = load_scenario(args.scenario).problem()
    prices = {k: float(v) for k, v in key_values(args.price).items()}
    exact = ExactFrontOptions(max_points=args.max_points or None, cost_levels=args.cost_levels or None)
    heuristic = HeuristicFrontOptions(pop_size=args.pop_size, n_gen=args.generations)
    study = pareto_study(problem, args.objectives, args.methods.split(","), list(range(args.seeds)), exact,
                         heuristic, prices)
    import pandas as pd

    with output_set() as outputs:
        meta = {"scenario": args.scenario, "objectives": args.objectives, "methods": args.methods}
        write_table_into(outputs, pd.DataFrame(study.point_rows()), out, **meta)
        write_table_into(outputs, pd.DataFrame(list(study.indicator_rows)), ind, **meta)
        write_table_into(outputs, pd.DataFrame(_surface_rows(study)), att, **meta)
    if args.figure:
        draw_front(study, Path(args.figure), title=args.scenario)
    con = console()
    for front in study.fronts:
        certified = sum(p.certified for p in front.points)
        con.print(f"{front.method:6s} seed {front.seed if front.seed is not None else '-'}: {len(front.points)} "
                  "points" + (f", {certified} certified, {front.solves} MILPs" if front.method == "exact" else "")
                  + f", {front.cpu_s:.1f} s of CPU")
    for r in study.indicator_rows:
        con.print(f"{r['method']:6s} seed {r['seed']}: hv ratio {r['hv_ratio']:.4f}, IGD+ {r['igd_plus']:.4f}, "
                  f"eps+ {r['eps_additive']:.4f}, attained {r['attained']:.2f}")
    for r in study.attainment_rows:
        con.print(f"{r['method']:6s} {r['level']} of {r['seeds']} seed(s): hv ratio {r['hv_ratio']:.4f}, "
                  f"IGD+ {r['igd_plus']:.4f}, eps+ {r['eps_additive']:.4f}")
    con.print(f"wrote {', '.join(str(f) for f in [out, ind, att, *([args.figure] if args.figure else [])])}")
    return 0


def _surface_rows(study: Any) -> list[dict[str, Any]]:  # study: a pareto.study.ParetoStudy
    """The attainment table: one row per surface point (method, level, percentile, seeds, criteria), then,
    where there is an exact front, the surface's indicators joined on (method, level)."""
    from ..pareto.indicators import JUDGED

    judged = {(r["method"], r["level"]): r for r in study.attainment_rows}
    rows = []
    for s in study.surfaces:
        extra = {k: v for k, v in judged.get((s.method, s.level), {}).items()
                 if k in JUDGED}
        rows += [{"method": s.method, "level": s.level, "percentile": s.percentile, "seeds": s.n_seeds, "point": i,
                  **{c.name: float(v) for c, v in zip(study.criteria, values)}, **extra}
                 for i, values in enumerate(s.values)]
    return rows
