"""Simulator speed: per-round time split (policy vs engine) and GA engine ratios.

One generated workload (model ground truth, so no external files) runs under
every policy. The baseline is the Pollux policy with pymoo's GA loop, run in
the same process on the same workload; ratios are ``baseline wall time /
policy wall time``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from goodopt.generate import testbed_cluster
from goodopt.sim import generate_workload, model_truth, simulate

from ..records import Record

#: (label, policy, options). The first is the baseline.
RUNS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("pollux (pymoo GA loop)", "pollux", {"engine": "pymoo"}),
    ("pollux (numpy GA loop, 100 generations)", "pollux", {"stall_generations": None}),
    ("pollux (default: numpy, stall 20)", "pollux", {}),
    ("milp", "milp", {}),
    ("greedy", "greedy", {}),
    ("optimus", "optimus", {}),
    ("tiresias", "tiresias", {}),
)
#: A short workload at load 1.0 without the day-long imagenet/yolov3 jobs, so the pymoo baseline stays affordable.
MIX = {"cifar10": 0.45, "ncf": 0.35, "deepspeech2": 0.1, "bert": 0.1}


def run(seed: int = 0, hours: float = 1.0, progress: Callable[[], None] | None = None) -> list[Record]:
    wl = generate_workload(seed, load=1.0, hours=hours, mix=MIX, name=f"bench-{hours:g}h")
    truth = model_truth(sorted(MIX))
    cluster = testbed_cluster()
    rows = []
    base_wall = None
    for label, policy, opts in RUNS:
        t0 = time.perf_counter()
        res = simulate(wl, cluster, policy, truth=truth, seed=seed, policy_options=opts)
        wall = time.perf_counter() - t0
        base_wall = base_wall or wall
        s = res.summary
        rows.append({
            "policy": label, "n_jobs": wl.n_jobs, "n_rounds": s["n_rounds"], "wall_s": wall,
            "policy_s_per_round": s["policy_s_per_round"], "engine_s_per_round": s["engine_s_per_round"],
            "policy_share": s["policy_s"] / max(s["policy_s"] + s["engine_s"], 1e-12),
            "ratio_to_baseline": base_wall / wall, "avg_jct_s": s["avg_jct"], "restarts": s["restarts"],
        })
        if progress:
            progress()
    return rows
