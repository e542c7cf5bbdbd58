"""``goodopt evaluate``: score an allocation file on a scenario."""

from __future__ import annotations

import argparse
import json

from rich.table import Table

from .common import AddParser, console, fmt


def add_parser(add: AddParser) -> None:
    """The ``evaluate`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("evaluate", help="score an allocation of a scenario")
    p.add_argument("scenario")
    p.add_argument("--allocation", required=True, help="YAML/JSON file: job -> {node: GPUs}")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``goodopt evaluate``: score an allocation file on a scenario."""
    from ..errors import ScenarioError
    from ..sources import load_scenario
    from ..validation import read_yaml

    sc = load_scenario(args.scenario)
    pr = sc.problem()
    mapping = read_yaml(args.allocation, "allocation", ScenarioError) or {}
    alloc = pr.allocation_from_mapping(mapping)
    ev = pr.evaluator()
    fit = ev.fitness(alloc)
    speed = ev.speedups(alloc)
    problems = ev.violations(alloc)
    out = {
        "fitness": fit,
        "speedups": {name: float(v) for name, v in zip(pr.job_names, speed)},
        "feasible": not problems,
        "violations": problems,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    con = console()
    t = Table(title=f"{sc.name}: allocation {args.allocation}")
    t.add_column("job", overflow="fold")
    t.add_column("GPUs", justify="right", overflow="fold")
    t.add_column("speedup", justify="right", overflow="fold")
    for j, name in enumerate(pr.job_names):
        t.add_row(name, str(int(alloc[j].sum())), fmt(speed[j]))
    con.print(t)
    con.print(f"fitness (p={pr.p:g}): {fmt(fit, 4)}")
    con.print("feasible" if not problems else "INFEASIBLE:\n  " + "\n  ".join(problems))
    return 0
