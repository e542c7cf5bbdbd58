"""``goodopt info``: print a scenario's cluster, objective and jobs."""

from __future__ import annotations

import argparse

from rich.table import Table

from .common import AddParser, console, fmt, warn_pinned


def add_parser(add: AddParser) -> None:
    """The ``info`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("info", help="summarise a scenario (file or shipped name)")
    p.add_argument("scenario")
    p.set_defaults(func=run)


# ------------------------------------------------------------------ commands
def run(args: argparse.Namespace) -> int:
    """``goodopt info``: print a scenario's cluster, objective and jobs."""
    from ..sources import load_scenario

    sc = load_scenario(args.scenario)
    pr = sc.problem()
    ev = pr.evaluator()
    con = console()
    con.print(f"[bold]{sc.name}[/bold] {sc.description}".rstrip())
    con.print(f"cluster: {sc.cluster.describe()} = {sc.cluster.n_gpus} GPUs on {sc.cluster.n_nodes} nodes")
    o = sc.objective
    con.print(f"objective: p={o.p:g} eps={o.eps:g} base={o.base} restart_delay_s={o.restart_delay_s:g} "
              f"interference_avoidance={o.interference_avoidance}")
    s = ev.speedups(pr.current)
    t = Table(title=f"{pr.n_jobs} jobs")
    for col in ("job", "application", "age_s", "reallocs", "GPUs now", "speedup now", "realloc factor",
                "base", "phi"):
        t.add_column(col, justify="left" if col in ("job", "application", "base") else "right", overflow="fold")
    for j, job in enumerate(sc.jobs):
        phi = job.phi if job.phi is not None else float(sc.profiles[job.application].phi_at(job.epoch))
        t.add_row(job.name, job.application, f"{job.age_s:g}", str(job.n_reallocs), str(int(pr.current[j].sum())),
                  fmt(s[j]), fmt(pr.realloc[j]),
                  f"{pr.base_gpus[j]} x {pr.type_names[pr.base_type[j]]}", f"{phi:.4g}")
    con.print(t)
    con.print(f"fitness of the current allocation: {fmt(ev.fitness(pr.current), 4)}; "
              f"feasible: {ev.violation(pr.current) == 0}")
    warn_pinned(sc, pr)
    return 0
