"""``python -m paper_figures [--only fig1 fig3 ...] [--scale tiny|default|full]``.

Runs each figure's experiment (tidy tables under ``out/tables``), then its
plotting scripts (which read only those tables), then writes the index
``out/README.md``. Sweep results are cached under ``out/cache`` by input hash:
an interrupted run resumes, and ``--plot-only`` redraws from the tables.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import experiments, specs
from .figures import FIGURES

OUT = Path(__file__).resolve().parent / "out"


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m paper_figures`` argument parser."""
    ap = argparse.ArgumentParser(prog="python -m paper_figures", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: paper_figures/out)")
    ap.add_argument("--only", nargs="+", default=None, choices=list(FIGURES), help="figures to make")
    ap.add_argument("--scale", choices=specs.SCALES, default="default",
                    help="tiny (smoke test), default (embedded data, minutes) or full (paper scale, traces)")
    ap.add_argument("--traces", default=None, help="published traces (default: $GOODOPT_TRACES or ../shared/traces)")
    ap.add_argument("--workers", type=int, default=None, help="local processes (default: one per CPU)")
    ap.add_argument("--plot-only", action="store_true", help="redraw from the existing tables")
    ap.add_argument("--no-cache", action="store_true", help="recompute every sweep task")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap


def main(argv=None) -> int:
    """Run the experiments, then the plots, then the index; returns the exit status."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    con = Console(highlight=False)
    ids = args.only or list(FIGURES)
    tables = args.out / "tables"
    cache = args.out / "cache" / args.scale
    if args.no_cache:
        import tempfile

        cache = Path(tempfile.mkdtemp(prefix="goodopt-figures-"))
    workers = args.workers or (os.cpu_count() or 1)
    start = time.perf_counter()
    timings = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=con, disable=args.quiet, transient=False) as bar:
        ctx = experiments.Context(tables=tables, cache=cache, scale=args.scale,
                                  traces=experiments.find_traces(args.traces), workers=workers,
                                  progress=bar if not args.quiet else False)
        steps = sum(len(FIGURES[i].plots) + (0 if args.plot_only else 1) for i in ids)
        task = bar.add_task("figures", total=steps)
        for fid in ids:
            fig = FIGURES[fid]
            t0 = time.perf_counter()
            if not args.plot_only:
                bar.update(task, description=f"{fid}: experiment")
                fig.experiment(ctx)
                bar.advance(task)
            for plot in fig.plots:
                bar.update(task, description=f"{fid}: {plot.name}")
                plot.draw(tables, args.out)
                bar.advance(task)
            timings[fid] = round(time.perf_counter() - t0, 1)
        bar.update(task, description="figures")
    write_index(args.out, args.scale, ctx.traces is not None)
    wall = time.perf_counter() - start
    if not args.plot_only:
        (tables / f"run-{args.scale}.json").write_text(json.dumps(
            {"scale": args.scale, "figures": timings, "wall_s": round(wall, 1), "workers": workers}, indent=2))
    n = sum(len(FIGURES[i].plots) for i in ids)
    con.print(f"wrote {n} figures ({', '.join(ids)}) to {args.out} in {wall:.1f} s; index: {args.out / 'README.md'}")
    return 0


def write_index(out: Path, scale: str, traces: bool) -> Path:
    """``out/README.md``: every figure with its caption, tables and the command that makes it."""
    full = " FULL=1" if scale == "full" else ""
    lines = ["# goodopt figures", "",
             f"Made with `make figures{full}` (scale `{scale}`; measured trace points "
             f"{'included' if traces else 'absent: traces not found'}). Rebuild one figure with "
             f"`make figN{full}`. Tables (CSV + JSON metadata, with the sweep spec as YAML) are in `tables/`; "
             "the plotting scripts in `paper_figures/` read only those.", ""]
    for fid, fig in FIGURES.items():
        lines += [f"## {fid}: {fig.title}", "", f"Command: `make {fid}{full}`", ""]
        for plot in fig.plots:
            made = (out / f"{plot.name}.png").exists()
            lines.append(f"- [`{plot.name}.png`]({plot.name}.png) / [`.pdf`]({plot.name}.pdf): {plot.caption}."
                         + ("" if made else " *(not made yet)*"))
        lines.append("")
    path = out / "README.md"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    return path


if __name__ == "__main__":
    raise SystemExit(main())
