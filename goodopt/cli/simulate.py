"""``goodopt simulate``: run workloads under policies; per-run tables and a summary table."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

if TYPE_CHECKING:
    import pandas as pd

    from ..runs.task_types import SimTask

from ..cluster import MAX_GPUS_PER_NODE, MAX_NODES
from ..errors import ValidationError
from .common import (
    SECONDS,
    SEED,
    SEEDS,
    WORKERS,
    AddParser,
    LazyHelp,
    NamesAction,
    console,
    fmt,
    key_values,
    number_in,
    policy_names,
    print_tasks,
    whole_in,
)

log = logging.getLogger("goodopt.cli")


def add_parser(add: AddParser) -> None:
    """The ``simulate`` sub-command's arguments (``add(name, **kw)`` makes its parser)."""
    p = add("simulate", help="simulate workloads under scheduling policies")
    p.add_argument("workloads", nargs="+", help="workload CSVs, folders of them, or generated:LOAD:SEED")
    p.add_argument("--policy", default="pollux", action=NamesAction, known=policy_names,
                   help=LazyHelp(lambda: "policy or comma-separated policies: " + ", ".join(policy_names())))
    p.add_argument("--traces", default=None, help="traces folder (default: $GOODOPT_TRACES or ../shared/traces)")
    p.add_argument("--truth", choices=("auto", "traces", "model"), default="auto",
                   help="ground truth: the traces (auto: when found) or the shipped profiles' model")
    p.add_argument("--preset", default="pollux",
                   help="start the engine settings from this paper's simulator: pollux (the defaults) or sia "
                        "(Sia's per-application restart delays and calibration slowdowns); the options below win")
    p.add_argument("--interval", type=SECONDS, default=None, help="scheduling interval in seconds (default 60)")
    p.add_argument("--restart-delay", type=number_in(0, 1e6, open_low=False), default=None,
                   help="restart delay in seconds (default 30)")
    p.add_argument("--interference", type=number_in(0, 0.99, open_low=False), default=None,
                   help="slowdown of multi-node jobs sharing a node with another (0.25 = 25%%; default 0)")
    p.add_argument("--cluster", default=None,
                   help="take the cluster of a scenario (file, shipped name such as sia-default, or "
                        "family:NAME:SEED); overrides --nodes/--gpus-per-node/--gpu-type")
    p.add_argument("--nodes", type=whole_in(1, MAX_NODES), default=16,
                   help="nodes in the cluster (with --autoscale: the most it may grow to)")
    p.add_argument("--gpus-per-node", type=whole_in(1, MAX_GPUS_PER_NODE), default=4, help="GPUs per node")
    p.add_argument("--gpu-type", default="t4", help="GPU type of the nodes")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the policy's random choices")
    p.add_argument("--seeds", type=SEEDS, default=1, help="number of seeds (seed, seed+1, ...)")
    p.add_argument("--option", action="append",
                   help="policy option KEY=VALUE or POLICY.KEY=VALUE (repeatable), e.g. milp.time_limit_s=2")
    p.add_argument("--autoscale", default="none", choices=("none", "pollux", "throughput", "exact"),
                   help="an elastic cluster sized by this auto-scaler (none: a fixed cluster)")
    p.add_argument("--autoscale-option", action="append",
                   help="auto-scaler option KEY=NUMBER (repeatable), e.g. every_s=600 or gpu_worth=0.3")
    p.add_argument("--min-nodes", type=whole_in(0, MAX_NODES), default=None,
                   help="fewest nodes of an elastic cluster, which starts with these (default 1; with --autoscale)")
    p.add_argument("--provision-delay", type=number_in(0, 1e6, open_low=False), default=None,
                   help="seconds from requesting a node to its joining an elastic cluster (default 180; with "
                        "--autoscale)")
    p.add_argument("--workers", type=WORKERS, default=1, help="parallel processes for several runs")
    p.add_argument("--out", default="sim_out", help="output folder")
    p.add_argument("--force", action="store_true", help="replace an earlier run's folder at --out (by default it is "
                   "kept and the run is refused)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true", help="check every input and list the runs, then stop")
    p.set_defaults(func=run)


def _policy_options(args: argparse.Namespace, policies: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``--option`` items per policy: ``POLICY.KEY=VALUE`` for that policy, ``KEY=VALUE`` for every one."""
    options = key_values(args.option)
    per_policy = {p: {k: v for k, v in options.items() if "." not in k} for p in policies}
    for key, value in options.items():
        if "." in key:
            pol, _, name = key.partition(".")
            if pol not in per_policy:
                raise ValidationError("--option", f"{key!r} names policy {pol!r}, which is not run",
                                      f"policies run: {policies}")
            per_policy[pol][name] = value
    return per_policy


def _truth_source(args: argparse.Namespace) -> str:
    from ..traces import traces_dir

    if args.truth == "model":
        return "model"
    try:
        return str(traces_dir(args.traces))
    except FileNotFoundError as exc:
        if args.truth == "traces":
            raise
        log.warning("%s; --truth auto uses the model ground truth of the shipped profiles", exc)
        return "model"


def run(args: argparse.Namespace) -> int:
    """``goodopt simulate``: run workloads under policies; per-run tables and a summary table."""
    from ..outputs import check_output
    from ..runs.simulations import run_simulations
    from ..runs.tasks import check_sim_tasks, cluster_spec, refuse_duplicates, sim_task, task_cluster
    from ..sim.presets import sim_preset
    from ..sim.workload import check_workloads, expand_workloads

    out = check_output(args.out, kind="dir", keep=not args.force)
    policies = args.policy.split(",")
    per_policy = _policy_options(args, policies)
    truth = _truth_source(args)
    if args.cluster:
        cluster = args.cluster
    else:
        from ..cluster import Cluster, NodeGroup

        cluster = cluster_spec(Cluster((NodeGroup(args.gpu_type, args.gpus_per_node, args.nodes),)))
    given = {"interval_s": args.interval, "restart_delay_s": args.restart_delay,
             "interference_slowdown": args.interference}
    config = {**sim_preset(args.preset, "--preset"), **{k: v for k, v in given.items() if v is not None},
              "gpu_type": args.gpu_type, "autoscale": args.autoscale, "min_nodes": 1 if args.min_nodes is None else args.min_nodes,
              "provision_delay_s": 180.0 if args.provision_delay is None else args.provision_delay,
              "autoscale_options": key_values(args.autoscale_option, "--autoscale-option", "every_s=600")}
    workloads = expand_workloads(args.workloads)
    _check_elastic(policies, per_policy, args)
    tasks = refuse_duplicates([sim_task(w, p, cluster, truth=truth, config=config, seed=s, options=per_policy[p])
                               for w in workloads for p in policies for s in range(args.seed, args.seed + args.seeds)])
    check_workloads(workloads, n_gpus=task_cluster(tasks[0].cluster).n_gpus,
                    max_time_s=tasks[0].config["max_time_s"])
    check_sim_tasks(tasks)
    if args.dry_run:
        print_tasks(tasks)
        return 0
    if len(tasks) == 1:
        return _simulate_one(args, tasks[0], out, truth)
    table = run_simulations(tasks, out, workers=args.workers, progress=not args.quiet and not args.json,
                            workloads=workloads, policies=policies, truth=truth, config=config,
                            policy_options=per_policy)
    if args.json:
        print(table.to_json(orient="records", indent=2))
        return 0
    _print_policy_summary(table, len(workloads))
    console().print(f"wrote {out}/sweep.csv (+ sweep.meta.json) and per-run tables under {out}/")
    return 0


def _check_elastic(policies: Sequence[str], per_policy: Mapping[str, Mapping[str, Any]],
                   args: argparse.Namespace) -> None:
    from ..sim.autoscale import check_elastic
    from ..sim.policies import make_policy

    if args.autoscale == "none":
        given = [flag for flag, value in (("--min-nodes", args.min_nodes), ("--provision-delay", args.provision_delay),
                                          ("--autoscale-option", args.autoscale_option)) if value is not None]
        if given:
            raise ValidationError(given[0], "applies to an elastic cluster only, and --autoscale is none",
                                  "add --autoscale pollux|throughput|exact, or drop it")
    for p in policies:
        check_elastic(make_policy(p, **per_policy[p]), args.autoscale, "--autoscale")


def _simulate_one(args: argparse.Namespace, task: SimTask, out: Path, truth: str) -> int:
    from ..runs.tasks import run_simulation

    res, _, _ = run_simulation(task, progress=not args.quiet and not args.json)
    res.write(out)
    if args.json:
        print(json.dumps({**res.summary, "metadata": res.metadata}, indent=2, default=str))
        return 0
    tab = Table(title=f"{res.metadata['workload']} / {task.policy} "
                      f"({truth if truth == 'model' else 'trace'} ground truth)")
    tab.add_column("metric", overflow="fold")
    tab.add_column("value", justify="right", overflow="fold")
    for key in ("n_jobs", "avg_jct", "median_jct", "p99_jct", "makespan", "restarts", "avg_utilisation",
                "avg_ftf_rho", "cost", "gpu_hours", "avg_gpus", "n_rounds", "policy_s_per_round",
                "engine_s_per_round", "wall_s"):
        v = res.summary[key]
        tab.add_row(key + (" (s)" if key.endswith("jct") or key == "makespan" else ""),
                    fmt(v, 3) if isinstance(v, float) else str(v))
    con = console()
    con.print(tab)
    con.print(f"wrote {out}/jobs.csv, rounds.csv, allocations.csv, summary.json")
    return 0




def _count(v: float) -> str:
    """A count (a mean of counts over workloads may not be whole: then one decimal)."""
    v = float(v)
    return str(int(v)) if v.is_integer() else f"{v:.1f}"


def _print_policy_summary(table: pd.DataFrame, n_workloads: int) -> None:
    from ..sim.simulation_result import policy_summary

    summ = policy_summary(table)
    tab = Table(title=f"{n_workloads} workload(s): mean over workloads and seeds")
    for col in summ.columns:
        tab.add_column(str(col), justify="left" if col == "policy" else "right", overflow="fold")
    counts = {c for c in summ.columns if str(c).startswith("n_") or c in ("restarts", "runs")}
    for row in summ.itertuples(index=False):
        tab.add_row(*[v if isinstance(v, str) else _count(v) if col in counts else fmt(float(v), 3)
                      for col, v in zip(summ.columns, row)])
    console().print(tab)
