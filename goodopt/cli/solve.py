"""``goodopt solve``: one method on one scenario; a table or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from rich.table import Table

from ..errors import ValidationError

if TYPE_CHECKING:
    from ..solvers.result import SolveResult

from .common import SECONDS, SEED, AddParser, LazyHelp, NamesAction, console, fmt, key_values, method_names, warn_pinned


def add_parser(add: AddParser) -> None:
    """The ``solve`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("solve", help="solve a scenario's allocation problem with one method")
    p.add_argument("scenario", help="scenario file, shipped name, or family:NAME:SEED")
    p.add_argument("--method", default="milp", action=NamesAction, known=method_names, single=True,
                   help=LazyHelp(lambda: ", ".join(method_names()) + " (goodopt options METHOD lists its options)"))
    p.add_argument("--time-limit", type=SECONDS, default=None, help="time limit in seconds")
    p.add_argument("--seed", type=SEED, default=None, help="seed of randomised methods (0 when not given)")
    p.add_argument("--option", action="append", help="method option KEY=VALUE (repeatable; see docs/options.md)")
    p.add_argument("--solver-log", action="store_true",
                   help="print the solver's own log (HiGHS's, or pymoo's table per generation)")
    p.add_argument("--write-model", default=None, metavar="PATH",
                   help="milp: also write the problem's whole model to PATH (.mps or .lp) for any MILP solver, "
                        "and PATH's stem + .map.json: the objective's transform to the fitness, each column's "
                        "job, configuration, GPU type and nodes, each row's constraint family")
    p.add_argument("--model-kind", choices=("whole", "last-solved"), default=None,
                   help="with --write-model: the whole model (default) or the one the solve ended with "
                        "(e.g. the reduced-cost dive's, over its open configurations)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--quiet", action="store_true", help="no status line while solving")
    p.set_defaults(func=run)


def _method_options(args: argparse.Namespace, method: str) -> dict[str, Any]:
    from ..solvers import METHOD_OPTIONS

    opts: dict[str, Any] = {}
    allowed = METHOD_OPTIONS[method] if method in METHOD_OPTIONS else {}
    if args.time_limit is not None:
        opts["time_limit_s"] = args.time_limit
    if getattr(args, "seed", None) is not None and "seed" in allowed:
        opts["seed"] = args.seed
    opts.update(key_values(getattr(args, "option", None)))
    return opts


def run(args: argparse.Namespace) -> int:
    """``goodopt solve``: one method on one scenario; a table or JSON."""
    from ..progress import status_line
    from ..solvers import solve
    from ..solvers.api import RANDOMISED
    from ..sources import load_scenario

    sc = load_scenario(args.scenario)
    pr = sc.problem()
    warn_pinned(sc, pr)
    opts = _method_options(args, args.method)
    if args.method in RANDOMISED and "seed" not in opts:
        opts["seed"] = 0
    if args.solver_log:
        opts["solver_log"] = True
    if "write_model" in opts:
        raise ValidationError("--option write_model", "writes a file, so it is given as --write-model PATH",
                              "use --write-model PATH (its output is checked before the solve)")
    if args.write_model is not None:
        if args.method != "milp":
            raise ValidationError("--write-model", f"writes the exact method's model; {args.method} has none",
                                  "use --method milp")
        from ..outputs import check_output
        from ..solvers.milp.export import map_path

        check_output(args.write_model, option="--write-model", inputs=[args.scenario])
        check_output(map_path(args.write_model), option="--write-model (its map)", inputs=[args.scenario])
        opts["write_model"] = args.write_model
        if args.model_kind:
            opts["write_model_kind"] = args.model_kind
    elif args.model_kind:
        raise ValidationError("--model-kind", "says which model --write-model writes", "add --write-model PATH")
    with status_line(f"{args.method} on {sc.name}", enabled=not (args.quiet or args.json or args.solver_log)):
        res = solve(pr, args.method, opts)
    if args.write_model is not None:
        _say_model_written(res, args.write_model)
    out = res.to_dict(pr)
    out["scenario"] = sc.name
    if args.json:
        print(json.dumps(out, indent=2))
        return 0 if res.has_solution else 1
    con = console()
    con.print(f"[bold]{sc.name}[/bold]: {args.method} -> {res.status} in {res.stats.total_s:.3f} s")
    con.print(f"fitness {fmt(res.fitness, 6)}  bound {fmt(res.bound, 6)}  gap {fmt(res.gap, 6)}")
    if res.message:
        con.print(res.message)
    if res.has_solution and res.x is not None and res.speedups is not None:
        t = Table(title="allocation")
        for col in ("job", "GPUs", "nodes", "speedup"):
            t.add_column(col, justify="left" if col in ("job", "nodes") else "right", overflow="fold")
        for j, name in enumerate(pr.job_names):
            row = out["allocation"][name]
            t.add_row(name, str(int(res.x[j].sum())), ", ".join(f"{n}:{g}" for n, g in row.items()),
                      fmt(res.speedups[j]))
        con.print(t)
    return 0 if res.has_solution else 1


def _say_model_written(res: SolveResult, path: str) -> None:
    """Where the model went, or why none was written (on stderr: ``--json`` keeps stdout for the JSON)."""
    from ..solvers.details import MilpDetails

    written = res.extra.written_model if isinstance(res.extra, MilpDetails) else None
    if written:
        print(f"wrote the {written['kind']} model ({written.get('stage') or ''}) to {written['path']} and its map to {written['map']}\n"
              f"  maximise V; the fitness is {written['objective_transform']}", file=sys.stderr)
    else:
        print(f"goodopt: warning: no model was solved ({res.message}), so nothing was written to {path}",
              file=sys.stderr)
