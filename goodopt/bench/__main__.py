"""``python -m goodopt.bench``: run the benchmarks, print tables, save CSVs.

Every benchmark reports ratios against a baseline run in the same process.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from .. import provenance
from ..errors import ValidationError
from ..provenance import stamp
from ..runs.tables import write_table
from . import (
    beside_pollux,
    core_backends,
    evaluator_speed,
    mip_solvers,
    pareto_fronts,
    sia_backends,
    sia_ilp,
    sim_speed,
    simulation,
    solvers,
)


def _table(title: str, df: pd.DataFrame, cols: Sequence[str], digits: int = 1) -> Table:
    t = Table(title=title)
    for c in cols:
        t.add_column(c, justify="left" if df[c].dtype == object else "right")
    for _, row in df.iterrows():
        t.add_row(*[f"{row[c]:,.{digits}f}" if isinstance(row[c], (float, np.floating)) else str(row[c])
                    for c in cols])
    return t


def _save(out: Path, name: str, rows: list[dict[str, Any]], seed: int, baseline: str) -> pd.DataFrame:
    """``out/NAME.csv`` and its ``NAME.meta.json`` (the seed, the baseline, the machine, date and commit), put in
    place together."""
    df = pd.DataFrame(rows)
    write_table(df, out / f"{name}.csv", seed=seed, numpy=np.__version__, baseline=baseline, **stamp())
    return df


def _part_exact(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    seed, against = args.seed, args.against
    task = bar.add_task("exact solves", total=len(solvers.EXACT_FAMILIES) * len(solvers.EXACT_OBJECTIVES))
    rows = solvers.exact_solves(seed, progress=lambda: bar.advance(task))
    cols = ["family", "objective", "seeds", "slowest_seed", "n_gpus", "n_jobs", "n_configs", "build_solve_s",
            "cpu_s", "median_cpu_s", "cpu_runs", "status", "gap", "lp_iterations", "nodes", "sia_ilp_cpu_s", "ratio_to_sia",
            "pyomo_total_s", "ratio_pyomo_to_arrays", "same_fitness"]
    if against is not None:
        solvers.against_previous(rows, against)
        cols += ["previous_cpu_s", "ratio_to_previous", "work_ratio_to_previous"]
    df = _save(out, "exact", rows, seed, "the same model through pyomo's standard-form compiler (model_route='pyomo'); "
               "Sia's ILP time as measured beside goodopt (not in this run)"
               + (f"; CPU seconds of the earlier run in {against}" if against is not None else ""))
    con.print(_table(f"Exact solves (budget {solvers.EXACT_NODE_LIMIT} B&B nodes, seed {seed}; a row over several "
                     "seeds shows the slowest, and the median CPU seconds over them): build + solve "
                     f"seconds, CPU seconds of the whole solve (the least of {solvers.EXACT_REPEATS} where one takes "
                     f"under {solvers.REPEAT_BELOW_S:g} s), status, gap, LP iterations and B&B nodes of every "
                     "stage over the row's seeds (the solver's work, which the machine's load does not move); "
                     "Sia's ILP (CBC, 1 thread, Sia's "
                     "objective, measured elsewhere) and the ratio to it; the pyomo route in the same run", df,
                     cols, digits=3))
    for _, row in df.iterrows():
        con.print(f"  {row['family']} ({row['objective']}): {row['stages']}")
    first = solvers.first_solve_overhead()
    con.print(f"  first solve in a fresh process ({first['family']}): {first['first_s']:.3f} s, "
              f"steady state {first['steady_s']:.3f} s, overhead {first['overhead_s']:.3f} s")


def _part_evaluator(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    seed = args.seed
    task = bar.add_task("evaluator", total=len(evaluator_speed.CASES))
    df = _save(out, "evaluator", evaluator_speed.run(seed=seed, progress=lambda: bar.advance(task)),
               seed, "per-job speedup-function loop (Pollux artifact style)")
    con.print(_table("Evaluator: evaluations/s (population of 100) and ratio to the per-job loop", df,
                     ["case", "vectorised_evals_per_s", "with_violation_evals_per_s",
                      "per_job_loop_evals_per_s", "speedup_ratio", "table_build_s"]))


def _part_ga(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    seed = args.seed
    task = bar.add_task("GA rounds", total=len(solvers.GA_JOBS))
    df = _save(out, "ga_round", solvers.ga_rounds(seed, progress=lambda: bar.advance(task)),
               seed, "same GA and seed with the per-job loop evaluator")
    con.print(_table("GA round (population 100, 100 generations): seconds, ratio to the per-job loop",
                     df, ["case", "ga_round_s", "loop_ga_round_s", "ratio", "evaluation_share", "fitness",
                          "same_result"], digits=3))


def _part_milp(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    seed = args.seed
    task = bar.add_task("MILP scaling", total=len(solvers.MILP_CASES))
    df = _save(out, "milp", solvers.milp_scaling(seed, progress=lambda: bar.advance(task)),
               seed, "greedy on the same problem")
    con.print(_table("Exact MILP: seconds, proven gap, ratio to greedy", df,
                     ["case", "n_configs", "build_s", "solve_s", "total_s", "status", "gap", "stages",
                      "greedy_s", "ratio_to_greedy", "greedy_relative_fitness"], digits=4))


def _part_simulation(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    seed = args.seed
    task = bar.add_task("simulations", total=len(simulation.RUNS))
    df = _save(out, "simulation", simulation.run(seed, progress=lambda: bar.advance(task)),
               seed, "Pollux policy with pymoo's GA loop on the same workload")
    con.print(_table("Simulator: seconds per round (policy / engine) and wall-time ratio to pymoo-GA Pollux",
                     df, ["policy", "n_jobs", "n_rounds", "wall_s", "policy_s_per_round",
                          "engine_s_per_round", "policy_share", "ratio_to_baseline", "avg_jct_s",
                          "restarts"], digits=3))


def _part_choices(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    seed = args.seed
    task = bar.add_task("model choices", total=6)
    df = _save(out, "model_choices", solvers.model_choices(seed, progress=lambda: bar.advance(task)),
               seed, "the other setting on the same model")
    con.print(_table("Model choices: solve seconds and ratio (baseline / variant)", df,
                     ["choice", "instance", "baseline", "baseline_s", "variant", "variant_s", "ratio",
                      "note"], digits=3))


def _part_quality(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    seed = args.seed
    task = bar.add_task("quality", total=len(solvers.QUALITY_FAMILIES) * 3)
    df = _save(out, "quality", solvers.quality(progress=lambda: bar.advance(task)), seed,
               "certified optimum or best proven bound of the exact MILP")
    summ = df.groupby("family", sort=False).agg(
        milp_status=("milp_status", lambda s: ",".join(sorted(set(s)))), milp_gap=("milp_gap", "max"),
        milp_s=("milp_s", "mean"), greedy=("greedy_rel", "mean"), greedy_min=("greedy_rel", "min"),
        ga=("ga_rel", "mean"), ga_min=("ga_rel", "min"), pwl4=("pwl_k4_rel", "mean"),
        pwl8=("pwl_k8_rel", "mean"), pwl16=("pwl_k16_rel", "mean"), ga_s=("ga_s", "mean"),
        greedy_s=("greedy_s", "mean")).reset_index()
    con.print(_table("Quality: fitness / certified optimum (or best bound), mean over 3 seeds", summ,
                     list(summ.columns), digits=4))


def _part_ga_scale(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    seed = args.seed
    task = bar.add_task("GA at scale", total=len(solvers.GA_SCALE_FAMILIES))
    df = _save(out, "ga_scale", solvers.ga_at_scale(seed, progress=lambda: bar.advance(task)),
               seed, "certified optimum of the exact MILP on the same instance")
    con.print(_table("GA at scale (default options): fitness / optimum, CPU s, peak MB (tracemalloc)", df,
                     ["family", "n_gpus", "engine", "ga_rel", "ga_cpu_s", "ga_peak_mb", "lp_rounding_rel",
                      "lp_rounding_cpu_s", "generations"], digits=4))


def _part_solvers(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    names = mip_solvers.solvers_here()
    task = bar.add_task("MILP solvers", total=len(mip_solvers.INSTANCES) * 2 * len(names))
    rows = mip_solvers.solver_table(progress=lambda: bar.advance(task))
    df = _save(out, "solvers", rows, args.seed, "HiGHS on the same reference model in this run")
    machine = provenance.machine()
    (out / "solvers.md").write_text(mip_solvers.markdown(rows, machine))
    con.print(_table(f"MILP solvers x families (formulation: reference, 1 thread, "
                     f"{mip_solvers.TIME_LIMIT_S:g} s limit): CPU seconds (CBC's program included), ratio to HiGHS "
                     "in this run, status, B&B nodes, gap, the same optimum as HiGHS", df,
                     ["family", "seed", "objective", "solver", "cpu_s", "ratio_to_highs", "status", "nodes", "gap",
                      "same_optimum"], digits=3))


def _part_sim_speed(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    task = bar.add_task("simulator speed", total=sum(len(s[-1]) for s in sim_speed.SCALES))
    df = _save(out, "sim_speed", sim_speed.run(args.seed, progress=lambda: bar.advance(task)), args.seed,
               "the Pollux policy at the same scale in this run")
    con.print(_table("Simulator speed: CPU seconds per simulated hour per policy (the whole simulation, one "
                     "process), at Pollux's and Sia's 64 GPUs and at 2,048 GPUs (its first "
                     f"{sim_speed.LARGE_WINDOW_S / 60:g} minutes); ratio: Pollux's CPU per simulated hour at "
                     "that scale over the policy's", df,
                     ["scale", "n_gpus", "policy", "n_jobs", "jobs_done", "n_rounds", "simulated_h", "cpu_s",
                      "cpu_s_per_sim_h", "policy_share", "ratio_to_pollux"], digits=2))


def _part_beside_pollux(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    if args.pollux_artifact is None:
        con.print("beside-pollux: skipped (give --pollux-artifact DIR, the Pollux artifact's simulator/ folder, and "
                  "--pollux-python PY, a Python with its requirements)")
        return
    task = bar.add_task("beside the Pollux artifact's simulator (minutes)", total=1)
    rows = beside_pollux.beside_table(args.pollux_artifact, args.pollux_python)
    bar.advance(task)
    df = _save(out, "beside_pollux", rows, args.seed, "goodopt's simulation of the same workload in this run")
    con.print(_table("goodopt's simulator beside the Pollux artifact's (the Pollux policy, the same workload, one "
                     "process each): CPU seconds, simulated hours, CPU per simulated hour, average JCT, and each "
                     "one's CPU per simulated hour over goodopt's", df,
                     ["simulator", "workload", "cpu_s", "wall_s", "simulated_h", "cpu_s_per_sim_h", "avg_jct_s",
                      "n_rounds", "ratio_to_goodopt"], digits=2))


def _part_sia(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    instances = args.sia_instances or sia_ilp.INSTANCES
    task = bar.add_task("beside a Sia-style ILP", total=sum(len(s) for _, s in instances))
    rows, summary = sia_ilp.sia_table(instances, progress=lambda: bar.advance(task))
    _save(out, "sia_ilp", rows, args.seed, "a Sia-style ILP over Sia's configuration set, built by goodopt, on CBC "
          "and HiGHS in this run (not Sia's artifact)")
    df = _save(out, "sia_ilp_summary", summary, args.seed, "the same")
    con.print(_table("goodopt's certified milp (every configuration) beside a Sia-style ILP over Sia's set (Sia's "
                     "objective, 1 thread, CPU s with CBC's program): per family the median and worst ratio of "
                     "goodopt's CPU seconds to the baseline's, over its seeds", df, list(df.columns), digits=3))


def _seeds_and_summary(out: Path, name: str, rows: list[dict[str, Any]], summary: list[dict[str, Any]], seed: int,
                       baseline: str) -> pd.DataFrame:
    """``NAME_seeds`` (every row) and ``NAME`` (the summary, returned) with their baseline said once."""
    _save(out, f"{name}_seeds", rows, seed, baseline)
    return _save(out, name, summary, seed, "the same")


def _part_sia_backends(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    task = bar.add_task("milp on each MILP backend", total=len(sia_backends.SEEDS))
    rows = sia_backends.backend_rows(progress=lambda: bar.advance(task))
    df = _seeds_and_summary(out, "sia_backends", rows, sia_backends.backend_summary(rows), args.seed,
                            "a Sia-style ILP over Sia's configuration set on HiGHS, per seed in this run")
    con.print(_table(f"goodopt's certified milp on each MILP backend ({sia_backends.FAMILY}, seeds "
                     f"{sia_backends.SEEDS[0]}-{sia_backends.SEEDS[-1]}, Sia's objective, 1 thread, the LP stages "
                     "on HiGHS): median and worst CPU s, the worst ratio to a Sia-style ILP on HiGHS in the same "
                     "run, whether every seed was certified and every backend found the same fitness", df,
                     list(df.columns), digits=3))


def _part_core_backends(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    task = bar.add_task("the dive's core on each MILP backend", total=len(core_backends.SEEDS))
    rows = core_backends.core_rows(progress=lambda: bar.advance(task))
    df = _seeds_and_summary(out, "core_backends", rows, core_backends.core_summary(rows), args.seed,
                            "the reduced-cost dive's own objective on the same model, and goodopt's whole "
                            "certified solve, in this run")
    con.print(_table(f"The reduced-cost dive's core MILP ({core_backends.FAMILY}, seeds {core_backends.SEEDS[0]}-"
                     f"{core_backends.SEEDS[-1]}, Sia's objective; the model file the solve wrote) on each MILP "
                     "backend: one thread, no start, the dive's node budget and gap; median and worst CPU s, cores "
                     "closed within the budget, whether every objective was the dive's", df, list(df.columns),
                     digits=3))


def _part_pareto(con: Console, bar: Progress, out: Path, args: argparse.Namespace) -> None:
    task = bar.add_task("Pareto fronts", total=len(pareto_fronts.INSTANCES) * len(pareto_fronts.ALGORITHMS) * len(pareto_fronts.SEEDS))
    df = _save(out, "pareto", pareto_fronts.pareto_table(progress=lambda: bar.advance(task)), args.seed,
               "the exact front of the same instance (epsilon-constraint, each point certified) in this run")
    con.print(_table(f"Heuristic fronts ({pareto_fronts.OBJECTIVES}, population 100, 100 generations, from greedy) against "
                     "the exact front: hypervolume ratio, IGD+, additive epsilon and attained share on criteria "
                     "scaled by the exact front; CPU s of each and of the exact front; surface: the best, median "
                     "and worst attainment surface over the seeds", df,
                     ["family", "method", "run_seed", "surface", "points", "cpu_s", "hv_ratio", "igd_plus", "eps_additive",
                      "attained", "exact_points", "exact_certified", "exact_cpu_s", "ratio_to_exact_cpu"], digits=3))


#: The benchmark's parts, in the order they run by default.
PARTS = {
    "exact": _part_exact,
    "evaluator": _part_evaluator,
    "ga": _part_ga,
    "milp": _part_milp,
    "simulation": _part_simulation,
    "sim-speed": _part_sim_speed,
    "beside-pollux": _part_beside_pollux,
    "choices": _part_choices,
    "quality": _part_quality,
    "ga-scale": _part_ga_scale,
    "solvers": _part_solvers,
    "sia": _part_sia,
    "sia-backends": _part_sia_backends,
    "core-backends": _part_core_backends,
    "pareto": _part_pareto,
}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="bench_out", help="folder for the CSV results")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--against", default=None, metavar="DIR",
                    help="an earlier run's --out folder (a release's, say): the exact-solve table adds the ratio "
                         "of this run's CPU seconds to that run's")
    ap.add_argument("--pollux-artifact", default=None, metavar="DIR",
                    help="the Pollux OSDI'21 artifact's simulator/ folder: beside-pollux runs it on the same "
                         "workload as goodopt's simulator (skipped without it)")
    ap.add_argument("--pollux-python", default=None, metavar="PY",
                    help="a Python interpreter with the artifact's simulator/requirements.txt installed")
    ap.add_argument("--sia-instances", nargs="+", default=None, metavar="FAMILY:SEEDS",
                    help="the sia part's instances instead of its own set, e.g. mixed-2048:5-9 sia-64:10,11")
    ap.add_argument("--only", nargs="*",
                    choices=list(PARTS),
                    help="run only these parts")
    args = ap.parse_args(argv)
    try:  # checked before any part runs
        args.sia_instances = sia_ilp.parse_instances(args.sia_instances or ())
    except ValidationError as e:
        ap.error(str(e))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    con = Console(highlight=False, width=160)
    parts = [name for name in PARTS if name in (args.only or PARTS)]
    con.print(f"machine: {provenance.machine()}")
    with Progress(console=con, transient=True) as bar:
        for name in parts:
            PARTS[name](con, bar, out, args)
    con.print(f"wrote CSV + JSON to {out}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
