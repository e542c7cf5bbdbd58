"""``python -m paper_figures [--only NAME ...]``: run experiments, then plots, then the index."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from . import experiments, plot_model

OUT = Path(__file__).resolve().parent / "out"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--traces", default=None, help="published traces (default: $GOODOPT_TRACES or ../shared/traces)")
    ap.add_argument("--only", nargs="*", default=None, choices=sorted(plot_model.FIGURES))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    con = Console(highlight=False)
    tables = args.out / "tables"
    names = args.only or list(plot_model.FIGURES)
    start = time.perf_counter()
    with Progress(console=con) as bar:
        task = bar.add_task("figures", total=1 + len(names))
        experiments.run_model_experiments(tables, traces=args.traces)
        bar.advance(task)
        for name in names:
            plot_model.FIGURES[name][0](tables, args.out)
            bar.advance(task)
    lines = ["# goodopt figures", "", "Regenerate all with `make figures`; one with "
             "`.venv/bin/python -m paper_figures --only NAME`. Tables (CSV + JSON metadata) are in `tables/`.", ""]
    for name, (_, caption) in plot_model.FIGURES.items():
        lines.append(f"- `{name}.png` / `.pdf`: {caption}. (`python -m paper_figures --only {name}`)")
    (args.out / "README.md").write_text("\n".join(lines) + "\n")
    con.print(f"wrote {len(names)} figures to {args.out} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
