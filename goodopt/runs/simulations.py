"""Several simulations into one output folder: per-run tables and a summary table, all or nothing.

The folder is built beside its final name and exchanged with any previous
output in one step (:func:`goodopt.outputs.atomic_dir`): an interrupted or
failed run leaves the previous folder as it was, and nothing that looks
complete.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pandas as pd

from goodopt.outputs import atomic_dir

from ..records import Record
from .execute import map_tasks
from .tables import frame, write_table
from .task_types import SimTask, workload_stem
from .tasks import run_simulation

if TYPE_CHECKING:
    from goodopt.sim.simulation_result import SimulationResult


def run_folder(task: SimTask) -> str:
    """A run's sub-folder: ``<workload>/<label>-s<seed>``."""
    return f"{workload_stem(task.workload)}/{task.label or task.policy}-s{task.seed}"


def run_simulations(tasks: list[SimTask], out_dir: str | os.PathLike[str], *, workers: int = 1, progress: bool = True,
                    **metadata: Any) -> pd.DataFrame:  # Any: JSON-shaped metadata values
    """Run ``tasks``; write each run's tables under ``out_dir/<workload>/<policy>-s<seed>`` and the
    summary table ``out_dir/sweep.csv`` (+ ``sweep.meta.json``); returns the summary table."""
    rows: dict[int, dict[str, Any]] = {}
    with atomic_dir(out_dir, marker={"kind": "simulations", "n_runs": len(tasks)}) as staging:
        def store(i: int, value: tuple[SimulationResult, Record, list[Record]]) -> None:
            res, row, _ = value
            res.write_into(staging / run_folder(tasks[i]))
            rows[i] = {"label": tasks[i].label, **row}

        map_tasks(run_simulation, tasks, workers=workers, progress=progress, label="simulations",
                  describe=lambda t: t.describe(), on_result=store)
        table = frame(rows[i] for i in range(len(tasks)))
        write_table(table, staging / "sweep.csv", **metadata)
    return table
