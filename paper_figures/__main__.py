"""``python -m paper_figures [--only fig1 fig3 ...] [--scale tiny|default|full]``.

Runs every figure's cacheable tasks (sweeps, solves, simulations) in one pool, the longest first, then
each figure's experiment (tidy tables under ``out/tables``, read from those tasks' cache), then its
plotting scripts (which read only those tables), then writes the index
``out/README.md``, which says for each figure at which scale it was made. Task
results are cached under ``out/cache`` by input hash: an interrupted run
resumes, and ``--plot-only`` redraws from the tables. The tiny and full scales
write to their own folders (``out-tiny``, ``out-full``) by default.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from goodopt.errors import GoodoptError, Interrupted
from goodopt.outputs import write_json, write_text
from goodopt.progress import PROGRESS, plain_progress
from goodopt.records import Record
from goodopt.runs.execute import kept_workers
from goodopt.runs.sweep import longest_first, run_cached

from . import specs, steps
from .figures import FIGURES

log = logging.getLogger(__name__)
_HERE = Path(__file__).resolve().parent
#: Default output: ``paper_figures/out`` in a checkout; ``goodopt-figures/`` in the current folder when run
#: from an installed copy (``goodopt-figures``), never inside the installation.
OUT = _HERE / "out" if (_HERE.parent / "pyproject.toml").is_file() else Path.cwd() / "goodopt-figures" / "out"


def default_out(scale: str) -> Path:
    """``paper_figures/out`` for the default scale, ``paper_figures/out-<scale>`` for the others, so that a
    smoke run never replaces the default figures."""
    return OUT if scale == "default" else OUT.with_name(f"out-{scale}")


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m paper_figures`` argument parser."""
    ap = argparse.ArgumentParser(prog="python -m paper_figures", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None,
                    help="output folder (default: paper_figures/out, or paper_figures/out-<scale> for the "
                         "tiny and full scales)")
    ap.add_argument("--only", nargs="+", default=None, choices=list(FIGURES), help="figures to make")
    ap.add_argument("--scale", choices=specs.SCALES, default="default",
                    help="tiny (smoke test), default (embedded data, minutes) or full (paper scale, traces)")
    ap.add_argument("--traces", default=None, help="published traces (default: $GOODOPT_TRACES or ../shared/traces)")
    ap.add_argument("--workers", type=int, default=None, help="local processes (default: one per CPU)")
    ap.add_argument("--plot-only", action="store_true", help="redraw from the existing tables")
    ap.add_argument("--no-cache", action="store_true", help="recompute every sweep task")
    ap.add_argument("--quiet", action="store_true", help="no progress bar, no progress lines")
    ap.add_argument("-v", "--verbose", action="count", default=0,
                    help="without a terminal, every progress record (default: one line per 30 s)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the experiments, then the plots, then the index; returns the exit status (130 on Ctrl-C)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # without a terminal (nohup, CI): plain progress lines, one per 30 s unless -v
    throttle = None if args.quiet else plain_progress(args.verbose)
    con = Console(highlight=False)
    out = args.out or default_out(args.scale)
    try:
        return _run(args, out, con)
    except Interrupted as exc:
        con.print(f"paper_figures: {exc}; figures finished before it are in {out}")
        return 130
    except KeyboardInterrupt:
        con.print(f"paper_figures: interrupted; figures finished before it are in {out}")
        return 130
    except GoodoptError as exc:
        con.print(f"paper_figures: error: {exc}")
        return 2
    finally:
        if throttle is not None:
            PROGRESS.removeFilter(throttle)


def _run(args: argparse.Namespace, out: Path, con: Console) -> int:
    ids = args.only or list(FIGURES)
    tables = out / "tables"
    cache = out / "cache" / args.scale
    if args.no_cache:
        import tempfile

        cache = Path(tempfile.mkdtemp(prefix="goodopt-figures-"))
    workers = args.workers or (os.cpu_count() or 1)
    start = time.perf_counter()
    timings = {}
    # one pool of workers for every experiment's tasks, not one started per sweep
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=con, disable=args.quiet, transient=False) as bar, \
            kept_workers(1 if args.plot_only else workers):
        ctx = steps.Context(tables=tables, cache=cache, scale=args.scale,
                                  traces=steps.find_traces(args.traces), workers=workers,
                                  progress=bar if not args.quiet else False)
        if not args.plot_only:
            run_all_tasks(ctx, ids)
        tasks_s = round(time.perf_counter() - start, 1)
        n_steps = sum(len(FIGURES[i].plots) + (0 if args.plot_only else 1) for i in ids)
        task = bar.add_task("figures", total=n_steps)
        for fid in ids:
            fig = FIGURES[fid]
            t0 = time.perf_counter()
            if not args.plot_only:
                bar.update(task, description=f"{fid}: experiment")
                fig.experiment(ctx)
                bar.advance(task)
            for plot in fig.plots:
                bar.update(task, description=f"{fid}: {plot.name}")
                plot.draw(tables, out)
                bar.advance(task)
            timings[fid] = round(time.perf_counter() - t0, 1)
            record_figure(out, fid, scale=args.scale, traces=ctx.traces is not None, seconds=timings[fid],
                          plot_only=args.plot_only)
            write_index(out)  # after every figure: an interrupted run's index lists what it finished
        bar.update(task, description="figures")
    wall = time.perf_counter() - start
    if not args.plot_only:
        write_json(tables / f"run-{args.scale}.json",
                   {"scale": args.scale, "tasks_s": tasks_s, "figures": timings, "wall_s": round(wall, 1),
                    "workers": workers})
    n = sum(len(FIGURES[i].plots) for i in ids)
    con.print(f"wrote {n} figures ({', '.join(ids)}) to {out} in {wall:.1f} s; index: {out / 'README.md'}")
    return 0


def run_all_tasks(ctx: steps.Context, ids: Sequence[str]) -> int:
    """Every cacheable task of the figures ``ids`` in one pool, the longest first, into the cache the
    experiments then read: the workers stay busy to the end instead of idling through each sweep's last
    task. Returns how many were computed now."""
    tasks = longest_first(task for fid in ids for task in FIGURES[fid].tasks(ctx))
    log.info("%d distinct tasks of %d figure(s)", len(tasks), len(ids))
    _, computed = run_cached(tasks, "figures' tasks", cache_dir=ctx.cache, workers=ctx.workers,
                             progress=ctx.progress)
    return computed


def record_figure(out: Path, fid: str, *, scale: str, traces: bool, seconds: float, plot_only: bool) -> None:
    """Add one finished figure to ``out/index.json`` (how each figure in the folder was made)."""
    entries = read_entries(out)
    prev = entries.get(fid, {})
    entries[fid] = {"scale": prev.get("scale", scale) if plot_only else scale,
                    "traces": prev.get("traces", traces) if plot_only else traces,
                    "made": datetime.datetime.now().isoformat(timespec="seconds"), "seconds": seconds}
    write_json(out / "index.json", entries)


def read_entries(out: Path) -> Record:
    """``out/index.json``: figure id -> {scale, traces, made, seconds}; empty when missing or unreadable."""
    try:
        data = json.loads((out / "index.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_index(out: Path) -> Path:
    """``out/README.md``: every figure with how it was made (its own scale), its caption and its command."""
    entries = read_entries(out)
    lines = ["# goodopt figures", "",
             "Each figure below says at which scale it was made and whether the published traces were found. "
             "Rebuild one figure with its command. Tables (CSV + `.meta.json` metadata, with the sweep spec as "
             "YAML) are in `tables/`; the plotting scripts in `paper_figures/` read only those.", ""]
    for fid, fig in FIGURES.items():
        e = entries.get(fid)
        full = " FULL=1" if e and e.get("scale") == "full" else ""
        lines += [f"## {fid}: {fig.title}", ""]
        if e:
            lines.append(f"Made {e.get('made', '?')} at scale `{e.get('scale', '?')}`; published traces "
                         f"{'found' if e.get('traces') else 'not found'}. "
                         f"Command: `make {fid}{full}`" + (" (tiny: `python -m paper_figures --only "
                                                            f"{fid} --scale tiny`)" if e.get("scale") == "tiny"
                                                           else ""))
        else:
            lines.append(f"*Not made yet.* Command: `make {fid}`")
        lines.append("")
        for plot in fig.plots:
            made = e is not None and (out / f"{plot.name}.png").exists()
            lines.append(f"- [`{plot.name}.png`]({plot.name}.png) / [`.pdf`]({plot.name}.pdf): {plot.caption}."
                         + ("" if made else " *(not made yet)*"))
        lines.append("")
    return write_text(out / "README.md", "\n".join(lines))


if __name__ == "__main__":
    from goodopt.portable_math import restart_if_asked

    restart_if_asked()  # GOODOPT_MATH=portable: the same arithmetic on every x86-64 processor
    raise SystemExit(main())
