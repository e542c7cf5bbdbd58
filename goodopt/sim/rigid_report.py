"""What a rigid run (:mod:`goodopt.sim.rigid`) reports: its job table and its window statistics."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from ..records import Record
from .rigid_config import RIGID_JOB_COLUMNS

log = logging.getLogger("goodopt.sim.rigid")


def job_table(run: Any, window: tuple[int, int]) -> pd.DataFrame:  # run: rigid._Run (which imports this)
    """One row per job of ``run``: times, GPU-seconds, shared seconds, type changes; whether it is in the window."""
    end = run.t
    rows = []
    for i, j in enumerate(run.jobs):
        done = not np.isnan(run.completion[i])
        rows.append({"job": j.name, "entity": j.entity, "job_type": j.job_type, "scale_factor": j.scale_factor,
                     "arrival_s": j.arrival_s, "completion_s": run.completion[i] if done else np.nan,
                     "jct": (run.completion[i] if done else max(end, j.arrival_s)) - j.arrival_s
                     if j.arrival_s <= end else np.nan,
                     "duration_s": j.duration_s, "in_window": window[0] <= i < window[1],
                     "gpu_s": run.gpu_s[i], "shared_s": run.shared_s[i],
                     "n_type_changes": int(run.changes[i])})
    return pd.DataFrame(rows, columns=list(RIGID_JOB_COLUMNS))


def run_summary(run: Any, window: tuple[int, int], wall_s: float) -> Record:  # run: rigid._Run
    """Window statistics; an unfinished job counts at its age so far (a lower bound), and a window job that
    had not even arrived when the run stopped makes them undefined (NaN: the run ended too early)."""
    w = slice(*window)
    arrival = np.array([j.arrival_s for j in run.jobs[w]])
    jct = np.where(np.isnan(run.completion[w]), run.t, run.completion[w]) - arrival
    unarrived = int((arrival > run.t).sum())
    if unarrived:
        log.warning("rigid run stopped at %g s, before %d job(s) of the window arrived: its JCTs are "
                    "undefined (raise max_time_s)", run.t, unarrived)
        jct = np.full_like(jct, np.nan)
    unfinished = int(np.isnan(run.completion[w]).sum())
    return {"n_jobs": len(run.jobs), "n_window": window[1] - window[0], "avg_jct": float(jct.mean()),
            "median_jct": float(np.median(jct)), "p99_jct": float(np.percentile(jct, 99)),
            "saturated": unfinished > 0, "n_unfinished": unfinished, "n_unarrived": unarrived, "end_s": run.t,
            "n_rounds": run.n_rounds, "n_solves": run.n_solves, "policy_s": run.lp_s, "wall_s": wall_s}
