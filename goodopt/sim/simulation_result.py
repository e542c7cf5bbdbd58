"""What a simulation run returns and writes: tidy tables and a summary.

* ``jobs`` — one row per job: arrival, start, completion, JCT, restarts,
  attained GPU-seconds, isolated run time and finish-time fairness ``rho``;
* ``rounds`` — one row per scheduling round: active/running/queued jobs, GPUs
  allocated, utilisation (of the provisioned GPUs), nodes provisioned and
  billed, GPUs billed, their price per hour, the auto-scaler's target, the
  policy's wall time and its own statistics;
* ``allocations`` — one row per (round, active job): GPUs, nodes, per-GPU batch,
  accumulation steps, total batch, progress and epoch at the end of the round;
* ``summary`` — average/median/p99 JCT, makespan, utilisation, restarts,
  finish-time fairness and the time split policy vs engine.

Finish-time fairness (Themis' rho) is ``JCT / isolated time``, the isolated
time being the job's run alone on the cluster with its requested GPUs and
batch, packed, without restarts (oracle step times).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from goodopt.outputs import atomic_dir, json_default

from ..records import Record

JOB_COLUMNS = ("job", "application", "arrival_s", "start_s", "completion_s", "jct_s", "num_replicas",
               "batch_size", "n_restarts", "attained_gpu_s", "cost", "isolated_s", "ftf_rho")
ALLOCATION_COLUMNS = ("time_s", "job", "n_gpus", "n_nodes", "local_bsz", "accum_steps", "batch_size",
                      "progress", "epoch")


@dataclass
class SimulationResult:
    """Tables and summary of one run (see the module docstring)."""

    jobs: pd.DataFrame
    rounds: pd.DataFrame
    allocations: pd.DataFrame
    summary: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def avg_jct(self) -> float:
        return self.summary["avg_jct"]

    def write(self, out_dir: str | os.PathLike[str]) -> Path:
        """Write ``jobs.csv``, ``rounds.csv``, ``allocations.csv`` and ``summary.json`` as the folder
        ``out_dir``, atomically: a kill leaves the old folder or the new one, never a mix."""
        with atomic_dir(out_dir, marker={"kind": "simulation", "metadata": self.metadata}) as staging:
            self.write_into(staging)
        return Path(out_dir)

    def write_into(self, folder: Path) -> Path:
        """Write the four files into ``folder`` (created when missing), without the atomic exchange."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        self.jobs.to_csv(out / "jobs.csv", index=False)
        self.rounds.to_csv(out / "rounds.csv", index=False)
        self.allocations.to_csv(out / "allocations.csv", index=False)
        (out / "summary.json").write_text(json.dumps({**self.summary, "metadata": self.metadata}, indent=2,
                                                     default=json_default))
        return out


def summarise(jobs: pd.DataFrame, rounds: pd.DataFrame, policy_s: float, engine_s: float,
              cost: float = float("nan"), gpu_hours: float = float("nan")) -> Record:
    """Run-level metrics from the job and round tables (times in seconds, costs in USD).

    ``cost`` and ``gpu_hours`` are what the billed nodes cost from the first
    arrival to the last completion (:meth:`goodopt.sim.elastic.NodePool.totals`);
    ``used_cost`` and ``used_gpu_hours`` count only the GPU-seconds jobs held."""
    jct = jobs["jct_s"].to_numpy(float)
    span_h = float(jobs["completion_s"].max() - jobs["arrival_s"].min()) / 3600.0
    return {
        "cost": cost,
        "cost_per_job": cost / max(len(jobs), 1),
        "used_cost": float(jobs["cost"].sum()),
        "gpu_hours": gpu_hours,
        "avg_gpus": gpu_hours / span_h if span_h > 0 else float("nan"),
        "used_gpu_hours": float(jobs["attained_gpu_s"].sum()) / 3600.0,
        "n_jobs": int(len(jobs)),
        "avg_jct": float(jct.mean()),
        "median_jct": float(np.median(jct)),
        "p99_jct": float(np.percentile(jct, 99)),
        "max_jct": float(jct.max()),
        "makespan": float(jobs["completion_s"].max() - jobs["arrival_s"].min()),
        "restarts": int(jobs["n_restarts"].sum()),
        "avg_restarts": float(jobs["n_restarts"].mean()),
        "avg_utilisation": float(rounds["utilisation"].mean()),  # over rounds with active jobs
        "avg_ftf_rho": float(jobs["ftf_rho"].mean()),
        "max_ftf_rho": float(jobs["ftf_rho"].max()),
        "frac_ftf_rho_above_1": float((jobs["ftf_rho"] > 1).mean()),
        "n_rounds": int(len(rounds)),
        "policy_s": float(policy_s),
        "engine_s": float(engine_s),
        "policy_s_per_round": float(policy_s / max(len(rounds), 1)),
        "engine_s_per_round": float(engine_s / max(len(rounds), 1)),
    }


def policy_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per policy (in first-seen order), the mean over runs of a simulations table: runs, average and p99
    JCT, makespan (hours), restarts, utilisation, policy seconds, and the JCT relative to the first policy."""
    summ = table.groupby("policy", sort=False).agg(
        runs=("avg_jct", "size"), avg_jct_h=("avg_jct", lambda x: x.mean() / 3600),
        p99_jct_h=("p99_jct", lambda x: x.mean() / 3600), makespan_h=("makespan", lambda x: x.mean() / 3600),
        restarts=("restarts", "mean"), utilisation=("avg_utilisation", "mean"),
        policy_s=("policy_s", "mean")).reset_index()
    summ[f"jct_vs_{summ['policy'].iloc[0]}"] = summ["avg_jct_h"] / summ["avg_jct_h"].iloc[0]
    return summ
