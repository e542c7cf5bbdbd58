"""``goodopt reproduce``: the papers' headline experiments beside the published numbers; one report."""

from __future__ import annotations

import argparse
import math
import os

from rich.table import Table

from .common import WORKERS, AddParser, console, dask_address, fmt

#: the experiments' names as ``goodopt.reproduce.EXPERIMENTS`` holds them (spelled here so ``--help`` does not import
#: the runs layer; a test keeps the two equal)
EXPERIMENT_NAMES = ("pollux-fig8", "pollux-sensitivity", "sia-table3", "gavel-hetero")


def add_parser(add: AddParser) -> None:
    """The ``reproduce`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("reproduce", help="re-run the papers' headline experiments on the published traces; one report")
    p.add_argument("experiments", nargs="*", default=None,
                   help=f"experiments to run: {', '.join(EXPERIMENT_NAMES)} (default: all)")
    p.add_argument("--quick", action="store_true", help="one workload per setting (minutes; indicative only)")
    p.add_argument("--out", default="reproduce_out", help="report folder (its cache/ makes reruns resume)")
    p.add_argument("--traces", default=None, help="traces folder (default: $GOODOPT_TRACES or ../shared/traces)")
    p.add_argument("--workers", type=WORKERS, default=None, help="local processes (default: one per CPU)")
    p.add_argument("--dask", default=None, metavar="tcp://HOST:PORT", type=dask_address,
                   help="run on this Dask scheduler instead of local processes")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``goodopt reproduce``: the papers' headline experiments beside the published numbers; one report."""

    from ..outputs import check_output
    from ..reproduce import reproduce

    check_output(args.out, kind="dir", option="--out", replaced=False)
    workers = args.workers or (os.cpu_count() or 1)
    rep = reproduce(args.experiments or None, out=args.out, quick=args.quick, traces=args.traces, workers=workers,
                    dask=args.dask, progress=not args.quiet)
    con = console()
    t = Table(title="published vs reproduced" + (" (quick: indicative only)" if args.quick else ""))
    for col in ("experiment", "metric", "setting", "policy", "published", "reproduced", "band", "verdict"):
        t.add_column(col, justify="right" if col in ("published", "reproduced") else "left", overflow="fold")
    for r in rep.results.itertuples(index=False):
        t.add_row(r.experiment, r.metric, r.setting, r.policy, fmt(r.published, 3), fmt(r.reproduced, 3),
                  r.band or "-", r.verdict or "-")
    con.print(t)
    con.print(f"wrote {rep.out / 'report.md'}, results.csv and a figure per experiment; "
              f"{rep.seconds['all']:.0f} s of wall time for every task in one pool"
              + (f", {rep.task_cpu_s:.0f} s of CPU (each task once)" if math.isfinite(rep.task_cpu_s) else "")
              + ("; CPU time of each experiment's tasks: " + ", ".join(f"{k} {v:.0f} s" for k, v in
                                                                      rep.cpu_seconds.items())
                 if rep.cpu_seconds else ""))
    return 0
