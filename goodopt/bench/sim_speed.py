"""Simulator speed as users see it: CPU seconds per simulated hour of every policy, at three scales.

Each scale is a cluster, a generated workload sized to it (Pollux's arrival rate per 64 GPUs, so that every
scale runs at the same load) and the model ground truth on the cluster's GPU types (no external files):

* ``pollux-64``: Pollux's testbed, 16 nodes of 4 T4;
* ``sia-64``: Sia's heterogeneous 64 GPUs (:data:`goodopt.families.FAMILIES` ``sia-64``: T4, A100, RTX 2080 Ti);
* ``cluster-2048``: 256 nodes of 8 T4, the first :data:`LARGE_WINDOW_S` of its workload only.

Per run: CPU seconds of the whole simulation (this process's, policy and engine), the simulated hours (to
the last job's end, or to the window), their ratio, the rounds, the policy's share of the time, and the
ratio of the Pollux policy's CPU per simulated hour at that scale, in the same run, to this policy's (above 1:
faster than Pollux). The baseline is Pollux's policy because it is the one the papers time against.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..blas_threads import one_blas_thread
from ..families import FAMILIES
from ..generate import testbed_cluster
from ..records import Record
from ..sim import SimConfig, generate_workload, model_truth, simulate
from ..sim.engine import Engine
from ..sim.policies.registry import make_policy
from ..sim.workload import APP_MIX

#: Simulated seconds of the 2,048-GPU runs (its workload arrives over an hour; the window is its start).
LARGE_WINDOW_S = 1800.0
#: (scale, cluster maker, hours of arrivals, simulated seconds at most, policies). Pollux first at each scale.
SCALES: tuple[tuple[str, Callable[[], Any], float, float | None, tuple[str, ...]], ...] = (
    ("pollux-64", testbed_cluster, 1.0, None,
     ("pollux", "sia", "milp", "greedy", "optimus", "tiresias", "gavel", "themis")),
    ("sia-64", lambda: FAMILIES["sia-64"].scenario(0).cluster, 1.0, None,
     ("pollux", "sia", "milp", "greedy", "gavel", "themis")),
    ("cluster-2048", lambda: FAMILIES["cluster-2048"].scenario(0).cluster, 1.0, LARGE_WINDOW_S,
     ("pollux", "sia", "greedy", "gavel")),
)


def run(seed: int = 0, progress: Callable[[], None] | None = None) -> list[Record]:
    """One row per (scale, policy) of :data:`SCALES`."""
    rows = []
    for name, make_cluster, hours, window, policies in SCALES:
        cluster = make_cluster()
        load = cluster.n_gpus / 64
        wl = generate_workload(seed, load=load, hours=hours, mix=APP_MIX, name=f"bench-{name}")
        truth = model_truth(sorted({j.application for j in wl.jobs}), gpu_type=cluster.gpu_type_names)
        base = None
        for policy in policies:
            row = _one(name, cluster, wl, truth, window, policy, seed)
            base = base if base is not None else row["cpu_s_per_sim_h"]
            row["ratio_to_pollux"] = base / row["cpu_s_per_sim_h"]
            rows.append(row)
            if progress:
                progress()
    return rows


def _one(scale: str, cluster: Any, wl: Any, truth: Any, window: float | None, policy: str, seed: int) -> dict[str, Any]:
    """One simulation, whole (``window`` None) or its first ``window`` simulated seconds."""
    cpu, wall = time.process_time(), time.perf_counter()
    if window is None:
        res = simulate(wl, cluster, policy, truth=truth, seed=seed)
        s = res.summary
        done, rounds, sim_s = int(len(res.jobs)), int(s["n_rounds"]), float(res.rounds["time_s"].max())
        share = s["policy_s"] / max(s["policy_s"] + s["engine_s"], 1e-12)
    else:
        engine = Engine(wl, cluster, make_policy(policy), truth, SimConfig(), np.random.default_rng(seed))
        with one_blas_thread():  # as simulate() runs
            engine.run(until_s=window)
        done, rounds, sim_s, share = engine.n_done, engine.r, float(engine.t), float("nan")
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sim_h = sim_s / 3600.0
    return {"scale": scale, "n_gpus": int(cluster.n_gpus), "policy": policy, "n_jobs": wl.n_jobs,
            "jobs_done": done, "n_rounds": rounds, "simulated_h": sim_h, "cpu_s": cpu, "wall_s": wall,
            "cpu_s_per_sim_h": cpu / sim_h, "policy_share": share}
