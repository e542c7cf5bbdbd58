"""The figure set: for each figure, its experiment step and its plots with captions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import library_bench as lb
from . import plot_model, plot_pareto, plot_simulation, plot_solvers
from . import steps as ex


@dataclass(frozen=True)
class Plot:
    name: str  # output file stem
    draw: Callable[[Path, Path], list[Path]]  # (tables, out) -> [png, pdf]; reads only tables
    caption: str


@dataclass(frozen=True)
class Figure:
    id: str
    title: str
    experiment: Callable[[ex.Context], list[Path]]  # (Context) -> [table paths]
    plots: tuple[Plot, ...]
    #: (Context) -> the cacheable tasks its experiment runs, so that every figure's run in one pool first
    tasks: Callable[[ex.Context], list[Any]] = lambda ctx: []


def _sweeps(specs_of: Callable[[ex.Context], list[dict[str, Any]]]) -> dict[str, Any]:
    """A figure made of the sweeps ``specs_of(ctx)``: its experiment step and its tasks."""
    return {"experiment": ex.sweep_tables(specs_of), "tasks": lambda ctx: ex.spec_tasks(specs_of(ctx))}


FIGURES: dict[str, Figure] = {f.id: f for f in (
    Figure("fig1", "Pollux's system-throughput, efficiency and goodput models", ex.model_tables, (
        Plot("model_throughput", plot_model.plot_throughput,
             "Throughput vs per-GPU batch size per application on T4 at four placements: fitted model (lines) "
             "and, with the traces, measured points (dots); yolov3 capped at 8 per GPU as in the Pollux paper"),
        Plot("model_efficiency", plot_model.plot_efficiency,
             "Statistical efficiency vs total batch size at five points of training (gradient noise scale "
             "grows as training progresses)"),
        Plot("model_goodput", plot_model.plot_goodput,
             "Goodput-optimal total batch size and speedup over one GPU vs GPU count, early and late in "
             "training (T4, 4 GPUs per node)"),
    )),
    Figure("fig2", "Speedup curves per application and GPU type", ex.speedup_tables, (
        Plot("model_speedup_types", plot_model.plot_speedup_types,
             "Goodput speedup over one GPU of the same type vs GPU count, per application, on the five "
             "profiled GPU types (half-way through training)"),
    )),
    Figure("fig3", "The fairness knob p", plots=(
        Plot("fairness_knob", plot_solvers.plot_fairness,
             "Exact (MILP) allocations and per-job speedups as p goes from 1 (total speedup) to -inf "
             "(max-min) on one contended scenario"),
    ), **_sweeps(ex.fairness_specs)),
    Figure("fig4", "Exact vs heuristic allocation", plots=(
        Plot("exact_vs_heuristic", plot_solvers.plot_exact_vs_heuristic,
             "Fitness relative to the best proven bound and solve time vs cluster size for the exact MILP, "
             "the piecewise-linear MILP at several K, the GA and greedy; crosses mark runs stopped at a limit "
             "(not certified)"),
        Plot("pwl_error", plot_solvers.plot_pwl_error,
             "Piecewise-linear MILP: the solver's a-priori error bound and the fitness actually lost vs the "
             "number of breakpoints K"),
    ), **_sweeps(ex.exact_vs_heuristic_specs)),
    Figure("fig5", "Simulated job completion times", plots=(
        Plot("sim_policies", plot_simulation.plot_policies,
             "Average JCT per policy per workload, and vs job load (Pollux Fig. 8a)"),
        Plot("sim_jct_cdf", plot_simulation.plot_cdf, "Distribution of job completion times per policy"),
        Plot("sim_sensitivity", plot_simulation.plot_sensitivity,
             "Average JCT vs scheduling interval (Pollux Fig. 8b) and vs interference slowdown with and "
             "without interference avoidance (Fig. 8c)"),
    ), **_sweeps(ex.simulation_specs)),
    Figure("fig6", "Heterogeneous cluster", plots=(
        Plot("heterogeneity", plot_simulation.plot_heterogeneity,
             "Average JCT, makespan and finish-time fairness on a heterogeneous cluster (named in the title): "
             "Sia's and Pollux's objectives in the exact MILP, Gavel's max-min and finish-time fairness, and "
             "heterogeneity-unaware Pollux"),
    ), **_sweeps(ex.heterogeneity_specs)),
    Figure("fig7", "Scheduler runtime vs cluster size", plots=(
        Plot("scheduler_runtime", plot_solvers.plot_runtime,
             "Solve time and fitness relative to the best proven bound of one scheduling round vs cluster "
             "size per method, on heterogeneous clusters of two to five GPU types (the families in the title); "
             "crosses mark runs stopped at a limit"),
        Plot("performance_profiles", plot_solvers.plot_profiles,
             "Dolan-Moré performance profiles over the shipped families of Figures 7 and 4 (each scenario an "
             "instance; the methods run on every instance): the fraction of instances each method solves (reaches the best answer found, to 1e-4) "
             "within a factor tau of the fastest, and the fraction within a factor tau of the best fitness; the "
             "legend gives instances solved and shifted geometric mean seconds"),
    ), **_sweeps(ex.runtime_specs)),
    Figure("fig8", "Elastic cloud cluster: cost vs JCT", ex.autoscaling_tables, tasks=ex.autoscaling_tasks, plots=(
        Plot("autoscaling", plot_simulation.plot_autoscaling,
             "Cost and average JCT on an elastic cluster of 1-16 nodes of 4 T4 (on-demand prices) under Pollux's "
             "utility-band auto-scaler, the throughput-only baseline and the exact MILP-per-size auto-scaler, with "
             "the fixed 16-node cluster, for the goodput GA and MILP policies; one job alone: the GPUs Pollux's "
             "auto-scaler bills as training proceeds (its batch grows with the gradient noise scale), and its "
             "cost and time against fixed cluster sizes"),
    )),
    Figure("fig9", "MILP solvers on the same models", plots=(
        Plot("solver_seconds", plot_solvers.plot_solver_seconds,
             "The reference model of each shipped family (seeds 0-2; `formulation: reference`, the same arrays "
             "for every solver) on HiGHS, SCIP, CBC and CP-SAT: seconds of the whole solve per instance (crosses: "
             "not certified); every answer re-scored by the evaluator"),
        Plot("solver_profiles", plot_solvers.plot_solver_profiles,
             "Dolan-Moré performance profiles of the four solvers over the same instances: the fraction each "
             "solves within a factor tau of the fastest, and within a factor tau of the best fitness; the legend "
             "gives instances solved and shifted geometric mean seconds"),
    ), **_sweeps(ex.solver_specs)),
    Figure("fig10", "Benchmark on the shipped library", lb.library_tables, tasks=lb.library_tasks, plots=(
        Plot("library_profiles", lb.plot_library_profiles,
             "Dolan-Moré performance profiles of the methods and MILP solvers over the shipped library's instances "
             "(every family up to 512 GPUs, both objectives): an instance counts as solved when the answer, "
             "re-scored by the evaluator, is within 1e-4 of the library's certified value"),
        Plot("library_ttt", lb.plot_library_ttt,
             "Time-to-target curves: the fraction of the library's instances on which each method's incumbent is "
             "within 0 and 1% of the certified value by time t"),
        Plot("library_ranks", lb.plot_library_ranks,
             "Average ranks on the primal integral (Berthold's, against the certified value) with the Friedman "
             "test and Nemenyi's critical difference: methods joined by a bar do not differ significantly"),
    )),
    Figure("fig11", "Sia's configuration set against every configuration", plots=(
        Plot("sia_configurations", lb.plot_sia_configurations,
             "The certified optimum of each library instance over Sia's configuration set (`configs: sia`: on one "
             "node a power-of-two GPU count, else whole nodes, at most 64 GPUs) relative to the optimum over "
             "every configuration, and the seconds of both solves"),
    ), **_sweeps(lb.sia_specs)),
    Figure("fig12", "Efficiency against fairness: the Pareto front", plot_pareto.pareto_tables, (
        Plot("pareto_fronts", plot_pareto.plot_pareto,
             "The front of efficiency (mean t) and fairness (the worst job's t) of a homogeneous (cluster-64) and a "
             "heterogeneous (hetero-16) instance: the exact front (epsilon-constraint, every point certified "
             "optimal for its level), NSGA-II and NSGA-III from greedy (one seed), and the certified optimum of the "
             "fitness at p = 1, Sia's -0.5, Pollux's -1 and -inf: which points of the front each paper's p picks"),
    )),
)}
