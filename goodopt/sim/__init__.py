"""Trace-driven cluster simulation: workloads, ground truth, job agents, policies.

``simulate(workload, cluster, policy, ...)`` runs one workload under one
policy and returns a :class:`SimulationResult`. The engine
(:mod:`goodopt.sim.engine`) is apart from the policies
(:mod:`goodopt.sim.policies`); what really happens comes from
:mod:`goodopt.sim.truth`, what the scheduler believes from the job agents
(:mod:`goodopt.sim.agent`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from goodopt.blas_threads import one_blas_thread
from goodopt.cluster import Cluster
from goodopt.errors import ValidationError
from goodopt.placement import packed_placement
from goodopt.progress import task_progress
from goodopt.provenance import math_paths

from ..records import Record
from .config import FIXED_APPS, SimConfig
from .engine import Engine
from .policies import POLICIES, Policy, make_policy
from .simulation_result import ALLOCATION_COLUMNS, JOB_COLUMNS, SimulationResult, summarise
from .truth import Truth, model_truth, trace_truth
from .workload import Workload, generate_workload, load_workload

log = logging.getLogger(__name__)

__all__ = ["FIXED_APPS", "POLICIES", "Policy", "SimConfig", "SimulationResult", "Truth", "Workload",
           "generate_workload", "load_workload", "make_policy", "model_truth", "simulate", "trace_truth"]


def simulate(workload: Workload | str | os.PathLike[str], cluster: Cluster, policy: str | Policy, *,
             truth: Truth | None = None, config: SimConfig | None = None, seed: int | np.random.Generator = 0,
             policy_options: Record | None = None, progress: bool = False) -> SimulationResult:
    """Run ``workload`` on ``cluster`` under ``policy`` (a name or a :class:`Policy`).

    ``truth`` defaults to the model ground truth of the shipped profiles; pass
    :func:`trace_truth` for the published measurements. ``seed`` drives every
    random choice of the policy (same seed, same run). ``progress`` shows a bar
    of simulated time and jobs done.
    """
    if not isinstance(workload, Workload):
        workload = load_workload(workload)
    if not isinstance(cluster, Cluster):
        raise ValidationError("cluster", f"must be a Cluster, got {type(cluster).__name__}",
                              "use goodopt.generate.testbed_cluster() or a scenario's cluster")
    config = config or SimConfig()
    truth = truth or model_truth(sorted({j.application for j in workload.jobs}), gpu_type=cluster.gpu_type_names)
    missing = sorted({j.application for j in workload.jobs} - set(truth.apps))
    if missing:
        raise ValidationError("workload.application", f"no ground truth for {missing}",
                              f"known applications: {sorted(truth.apps)}")
    pol = make_policy(policy, **(policy_options or {}))
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    engine = Engine(workload, cluster, pol, truth, config, rng)
    t0 = time.perf_counter()
    label = f"{workload.name} / {pol.name}"
    with _bar(progress, workload, pol.name) as update:
        def on_round(t: float, done: int, total: int) -> None:
            task_progress(label, t, done, total)
            if update is not None:
                update(t, done, total)

        # one BLAS thread: a round is many tiny fits and solves, where BLAS threads only spin (measured: 40%
        # less CPU per agent fit); parallel work comes from simulations side by side (--workers, Dask)
        with one_blas_thread():
            engine.run(progress=on_round)
    wall = time.perf_counter() - t0
    result = _collect(engine, workload, cluster, truth, config)
    result.summary["wall_s"] = wall
    result.metadata.update({
        "workload": workload.name, "policy": pol.describe(), "cluster": cluster.describe(),
        "truth": truth.source, "seed": seed if not isinstance(seed, np.random.Generator) else "generator",
        "config": {k: (dict(v) if k == "fixed_apps" else v) for k, v in config.__dict__.items()},
        "math": math_paths(),  # a trajectory is bit-identical only on the same arithmetic (goodopt.provenance)
    })
    log.info("%s / %s: avg JCT %.0f s, makespan %.0f s, %d rounds in %.1f s", workload.name, pol.name,
             result.summary["avg_jct"], result.summary["makespan"], result.summary["n_rounds"], wall)
    return result


def _collect(engine: Engine, workload: Workload, cluster: Cluster, truth: Truth, config: SimConfig) -> SimulationResult:
    # isolated run: on the truth's primary GPU type, packed on that type's nodes
    primary = truth.gpu_types[0]
    per_node = cluster.max_gpus_per_node(primary) if primary in cluster.gpu_type_names \
        else int(cluster.node_capacity.max())
    rows = []
    for job in engine.jobs:
        app = truth[job.application]
        k = job.fixed_gpus or min(job.num_replicas, cluster.n_gpus)
        isolated = app.remaining_time(0.0, 0, packed_placement(k, per_node), job.batch_size)
        # run() returns once every job completed (it raises past max_time_s): NaN is for the type only
        jct = job.completion_s - job.arrival_s if job.completion_s is not None else np.nan
        rows.append((job.name, job.application, job.arrival_s, job.start_s, job.completion_s, jct,
                     job.num_replicas, job.batch_size, job.n_restarts, job.attained_gpu_s, job.cost, isolated,
                     jct / isolated if isolated > 0 else np.nan))
    jobs = pd.DataFrame(rows, columns=list(JOB_COLUMNS))
    rounds = pd.DataFrame(engine.rounds)
    allocs = pd.DataFrame(engine.alloc_log, columns=list(ALLOCATION_COLUMNS))
    cost, gpu_hours = engine.pool.totals(float(jobs["arrival_s"].min()), float(jobs["completion_s"].max()))
    summary = summarise(jobs, rounds, engine.policy_s, engine.engine_s, cost, gpu_hours)
    summary["n_gpus"] = cluster.n_gpus
    return SimulationResult(jobs=jobs, rounds=rounds, allocations=allocs, summary=summary)


class _bar:
    """A rich progress bar over simulated hours and jobs done (no-op when disabled)."""

    def __init__(self, enabled: bool, workload: Workload, policy_name: str) -> None:
        self.enabled = enabled
        self.label = f"{workload.name} / {policy_name}"
        self.n_jobs = workload.n_jobs

    def __enter__(self) -> Callable[[float, int, int], None] | None:
        if not self.enabled:
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("jobs done, {task.fields[hours]:.1f} h simulated"),
                                 TimeElapsedColumn(), transient=True)
        self.progress.__enter__()
        self.task = self.progress.add_task(self.label, total=self.n_jobs, hours=0.0)

        def update(t: float, done: int, total: int) -> None:
            self.progress.update(self.task, completed=done, hours=t / 3600.0)

        return update

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self.progress.__exit__(*exc)
