"""``python -m goodopt.bench``: run the benchmarks, print tables, save CSVs.

Every benchmark reports ratios against a baseline run in the same process.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from . import evaluator


def _table(title, df, cols):
    t = Table(title=title)
    for c in cols:
        t.add_column(c, justify="right" if c != "case" else "left")
    for _, row in df.iterrows():
        t.add_row(*[f"{row[c]:,.1f}" if isinstance(row[c], (float, np.floating)) else str(row[c]) for c in cols])
    return t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="bench_out", help="folder for the CSV results")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    con = Console(highlight=False, width=160)
    with Progress(console=con, transient=True) as bar:
        task = bar.add_task("evaluator benchmark", total=len(evaluator.CASES))
        rows = evaluator.run(seed=args.seed, progress=lambda: bar.advance(task))
    df = pd.DataFrame(rows)
    df.to_csv(out / "evaluator.csv", index=False)
    (out / "evaluator.json").write_text(json.dumps(
        {"seed": args.seed, "python": platform.python_version(), "numpy": np.__version__,
         "machine": platform.machine(), "baseline": "per-job speedup-function loop (Pollux artifact style)"},
        indent=2))
    con.print(_table("Evaluator: evaluations/s (population of 100) and ratio to the per-job loop", df,
                     ["case", "vectorised_evals_per_s", "with_violation_evals_per_s",
                      "per_job_loop_evals_per_s", "speedup_ratio", "table_build_s"]))
    con.print(f"wrote {out / 'evaluator.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
