"""``goodopt check INSTANCE ANSWER``: judge an allocation or a solver's solution file against an instance.

The command face of :mod:`goodopt.library.check` (the library's checker), hence the shared file name."""

from __future__ import annotations

import argparse
import json
import math

from .common import AddParser, console, fmt


def add_parser(add: AddParser) -> None:
    """The ``check`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("check", help="judge an answer (an allocation file, or a solver's .sol for the exported model) "
                          "against an instance, trusting nothing in it")
    p.add_argument("instance", help="the instance's scenario (.yaml), model file (.mps, .mps.gz, .lp) or name "
                                    "in a library folder; its model and .map.json are found beside it")
    p.add_argument("answer", help="allocation (.json/.yaml: job -> {node: GPUs}, or solve --json output), or "
                                  "a solution file of HiGHS, SCIP, CBC or Gurobi")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Exit 0 when the answer is feasible and beats no certified value or bound, 1 otherwise."""
    from ..library.check import check

    rep = check(args.instance, args.answer)
    if args.json:
        print(json.dumps(rep.to_dict(), indent=2, default=str))
        return 0 if rep.holds else 1
    con = console()
    con.print(f"{rep.instance}: {rep.kind} answer {rep.answer}")
    if not rep.feasible:
        con.print(f"[bold red]INFEASIBLE[/bold red]: {rep.violation}")
        return 1
    con.print(f"feasible; fitness {fmt(rep.fitness, 12)}" +
              (f" (the file claims {fmt(rep.claimed, 12)})" if math.isfinite(rep.claimed) else ""))
    if rep.library is not None and math.isfinite(rep.library_fitness):
        con.print(f"library ={rep.library.status}= fitness {fmt(rep.library_fitness, 12)}, bound "
                  f"{fmt(rep.library_bound, 12)}: gap {rep.gap:.3g}, to the bound {rep.gap_to_bound:.3g}")
        if not rep.holds:
            con.print("[bold red]the answer beats the library's bound: the library's row does not hold[/bold red]")
    return 0 if rep.holds else 1
