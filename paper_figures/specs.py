"""The sweep specs behind the figures, at three scales.

``tiny``
    seconds per figure; the test suite's smoke run.
``default``
    what ``make figures`` runs from the embedded defaults (shipped profiles,
    generated workloads, model ground truth), within minutes on 2 cores.
``full``
    paper scale on the published traces (``make figures FULL=1``): the
    Pollux and Sia workloads, trace ground truth, cluster sizes up to 2048
    GPUs, more seeds, longer time limits. Hours, not minutes.

Every spec is a plain mapping accepted by :func:`goodopt.runs.spec_from_dict`;
the experiments write each one next to its table (``tables/<name>.spec.yaml``)
so a figure's data can be recomputed with ``goodopt sweep``.
"""

from __future__ import annotations

import os
from typing import Any

from goodopt.records import Record

SCALES = ("tiny", "default", "full")

#: p values of the fairness knob (figure 3), from utilitarian to max-min.
P_KNOB = (1, 0.5, 0, -0.5, -1, -2, -4, -10, "-inf")

#: Applications of the generated workloads on heterogeneous clusters: imagenet asks for 24-48 GPUs,
#: more than any one GPU type of Sia's 64-GPU cluster holds, and jobs do not span types.
HETERO_APPS = ("bert", "cifar10", "deepspeech2", "ncf", "yolov3")
TINY_HETERO_APPS = ("ncf", "yolov3")  # requests of 1 and 4 GPUs fit the tiny 8 + 8 GPU cluster


#: Deterministic budget of every exact solve in the figures (branch-and-bound nodes per MILP; the GA's
#: budget is its generation count): the same command gives the same table on a busy or an idle machine.
NODE_LIMIT = 20_000


def fairness(scale: str) -> Record:
    """Figure 3: one contended scenario solved exactly for each p."""
    scenario = "family:tiny:0" if scale == "tiny" else "family:knob-32:0"
    p = [1, -1, "-inf"] if scale == "tiny" else list(P_KNOB)
    return {"name": "fairness", "kind": "solve", "scenarios": [scenario], "methods": ["milp"], "p": p,
            "node_limit": NODE_LIMIT}


def _solver_methods(scale: str, pwl_k: Any) -> list[str | dict[str, Any]]:
    ga = {"label": "ga", "method": "ga", "options": {"pop_size": 20, "n_gen": 10} if scale == "tiny" else {}}
    return (["milp"] + [{"label": f"milp-pwl K={k}", "method": "milp-pwl", "options": {"breakpoints": k}}
                        for k in pwl_k] + [ga, "greedy"])


def exact_vs_heuristic(scale: str) -> Record:
    """Figure 4: homogeneous clusters of 16 to 2048 GPUs, exact vs piecewise-linear vs heuristics."""
    sizes = {"tiny": [16], "default": [16, 64, 256], "full": [16, 64, 256, 1024, 2048]}[scale]
    pwl_k = {"tiny": [4], "default": [2, 4, 8, 16], "full": [2, 4, 8, 16, 32]}[scale]
    return {"name": "exact_vs_heuristic", "kind": "solve",
            "families": {"names": [f"cluster-{n}" for n in sizes], "seeds": [0, 1, 2] if scale == "full" else [0]},
            "methods": _solver_methods(scale, pwl_k), "seeds": 3 if scale == "full" else 1,
            "node_limit": NODE_LIMIT}


def runtime_scaling(scale: str) -> Record:
    """Figure 7: scheduler runtime vs cluster size on heterogeneous clusters (the Sia paper's scaling axis)."""
    fams = {"tiny": ["hetero-tiny"], "default": ["hetero-16", "sia-64", "five-types-512"],
            "full": ["hetero-16", "sia-64", "five-types-512", "five-types-2048"]}[scale]
    ga_opts = {"pop_size": 20, "n_gen": 10} if scale == "tiny" else {}
    return {"name": "runtime_scaling", "kind": "solve",
            "families": {"names": fams, "seeds": [0, 1] if scale == "full" else [0]},
            "methods": ["milp", {"label": "milp (configuration level)", "method": "milp",
                                 "options": {"formulation": "config"}},
                        {"label": "ga", "method": "ga", "options": ga_opts}, "greedy",
                        {"label": "gavel max-min", "method": "gavel", "options": {"policy": "max_min_fairness"}}],
            "node_limit": NODE_LIMIT}


#: The open MILP solvers Figure 9 compares (Gurobi is optional and size-limited under pip's licence).
MILP_SOLVERS = ("highs", "scip", "cbc", "cpsat")


def solver_comparison(scale: str) -> Record:
    """Figure 9: the reference model of each shipped family on every open MILP solver (the same arrays)."""
    fams = {"tiny": ["tiny", "hetero-tiny"], "default": ["tiny", "hetero-tiny", "hetero-16", "testbed-over", "sia-64"],
            "full": ["tiny", "hetero-tiny", "hetero-16", "testbed-over", "sia-64", "five-types-512"]}[scale]
    return {"name": "solver_comparison", "kind": "solve",
            "families": {"names": fams, "seeds": [0] if scale == "tiny" else [0, 1, 2]},
            "methods": [{"label": s, "method": f"milp@{s}", "options": {"formulation": "reference"}}
                        for s in MILP_SOLVERS],
            # the node budget (CP-SAT: its conflicts) keeps the figure the same on every machine
            "node_limit": NODE_LIMIT, "time_limit_s": 120}


def library_benchmark(scale: str) -> Record:
    """Figure 10: methods and solvers on the shipped library's instances, judged against its certified values."""
    from goodopt.library.build import instance_name, tiers

    small = tiers()["small"]
    fams = {"tiny": ["tiny", "hetero-tiny"],
            "default": [f for f in small.families if f not in ("five-types-512",)],
            "full": list(small.families)}[scale]
    reference = [{"label": f"{s} (reference model)", "method": f"milp@{s}", "options": {"formulation": "reference"}}
                 for s in MILP_SOLVERS]
    heuristics: list[dict[str, Any]] = [{"label": m, "method": m, "options": {}} for m in ("greedy", "ga", "milp-pwl")]
    methods = [{"label": "milp (HiGHS, staged)", "method": "milp", "options": {}}, *reference, *heuristics]
    if scale == "tiny":
        methods = methods[:2] + heuristics[:1]
    return {"name": "library_benchmark",
            "instances": [instance_name(f, s, o) for f in fams for s in small.seeds for o in small.objectives],
            "methods": methods, "node_limit": NODE_LIMIT, "time_limit_s": 120}


def sia_configurations(scale: str) -> Record:
    """Figure 11: the exact optimum over every configuration and over Sia's set, on the shipped library."""
    from goodopt.library import shipped

    names = library_benchmark(scale)["instances"]
    return {"name": "sia_configurations", "kind": "solve",
            "scenarios": [str(shipped() / "instances" / f"{n}.yaml") for n in names],
            "methods": [{"label": "every configuration", "method": "milp", "options": {}},
                        {"label": "Sia's configurations", "method": "milp", "options": {"configs": "sia"}}],
            "node_limit": NODE_LIMIT, "time_limit_s": 120}


def _pollux_workloads(scale: str, traces: str | os.PathLike[str] | None) -> dict[str, Any]:
    """Workload fields of the homogeneous simulations."""
    if scale == "full":
        return {"workloads": [f"{traces}/pollux/workloads/load-{x}" for x in ("0.5", "1.0", "1.5", "2.0")],
                "truth": "traces"}
    if scale == "tiny":
        return {"generated": {"loads": [0.5], "seeds": [0], "hours": 0.5}}
    return {"generated": {"loads": [1.0], "seeds": [0, 1, 2], "hours": 2}}


def simulation(scale: str, traces: str | os.PathLike[str] | None = None) -> list[Record]:
    """Figure 5: JCT per policy across workloads and loads, the JCT CDF, interval and interference."""
    policies: list[str | dict[str, Any]]
    if scale == "tiny":
        policies = ["greedy", "tiresias"]
        sensitive = "greedy"
    else:
        policies = ["pollux", {"label": "milp", "policy": "milp",
                                "options": {"time_limit_s": None, "node_limit": NODE_LIMIT}},
                    "greedy", "optimus", "tiresias"]
        sensitive = "pollux"
    base = _pollux_workloads(scale, traces)
    specs = [{"name": "sim_policies", "kind": "simulate", "policies": policies, **base}]
    if scale == "default":  # the load axis: one more workload per extra load
        specs.append({"name": "sim_loads", "kind": "simulate", "policies": policies,
                      "generated": {"loads": [0.5, 1.5], "seeds": [0], "hours": 2}})
    one = dict(base)
    if scale == "default":
        one = {"generated": {"loads": [1.0], "seeds": [0], "hours": 2}}
    elif scale == "full":
        one = {"workloads": [f"{traces}/pollux/workloads/load-1.0"], "truth": "traces"}
    intervals = {"tiny": [60, 240], "default": [30, 60, 120, 240], "full": [30, 60, 120, 240, 480]}[scale]
    specs.append({"name": "sim_interval", "kind": "simulate", "policies": [sensitive],
                  "vary": {"interval_s": intervals}, **one})
    specs.append({"name": "sim_interference", "kind": "simulate",
                  "policies": [{"label": f"{sensitive} (avoidance on)", "policy": sensitive},
                               {"label": f"{sensitive} (avoidance off)", "policy": sensitive,
                                "options": {"interference_avoidance": False}}],
                  "vary": {"interference_slowdown": [0.0, 0.25, 0.5]}, **one})
    return specs


def heterogeneity(scale: str, traces: str | os.PathLike[str] | None = None, workloads: Any = ()) -> Record:  # Any: workload paths or objects
    """Figure 6: Gavel's policies vs the goodput MILP (Sia's and Pollux's objective) vs unaware Pollux."""
    if scale == "tiny":
        return {"name": "heterogeneity", "kind": "simulate", "cluster": "family:hetero-16:0",
                "workloads": list(workloads), "policies": [
                    "greedy", {"label": "gavel max-min", "policy": "gavel", "options": {"round_s": 120}}]}
    fields = ({"workloads": [f"{traces}/sia/workloads/philly"], "truth": "traces"} if scale == "full"
              else {"workloads": list(workloads)})
    return {"name": "heterogeneity", "kind": "simulate", "cluster": "sia-default", **fields, "policies": [
        {"label": "sia", "policy": "sia", "options": {"time_limit_s": None, "node_limit": NODE_LIMIT}},
        {"label": "milp (Pollux objective)", "policy": "milp",
         "options": {"time_limit_s": None, "node_limit": NODE_LIMIT}},
        {"label": "pollux (unaware)", "policy": "pollux"},
        {"label": "gavel max-min", "policy": "gavel", "options": {"policy": "max_min_fairness"}},
        {"label": "gavel finish-time", "policy": "gavel", "options": {"policy": "finish_time_fairness"}}]}


def autoscaling(scale: str, traces: str | os.PathLike[str] | None = None) -> list[Record]:
    """Figure 8: an elastic cluster of up to 16 x 4 T4 under each auto-scaler, and the fixed cluster: Pollux's
    GA with no auto-scaler (the fixed runs of figure 5), Pollux's and the throughput one; the MILP policy with
    the exact auto-scaler (size and allocation both by the MILP)."""
    if scale == "tiny":
        return [{"name": "autoscaling", "kind": "simulate", "policies": ["greedy"],
                 "generated": {"loads": [0.5], "seeds": [0], "hours": 0.5},
                 "config": {"autoscale_options": {"every_s": 600}},
                 "vary": {"autoscale": ["none", "pollux", "throughput", "exact"]}}]
    fields = ({"workloads": [f"{traces}/pollux/workloads/load-1.0"], "truth": "traces"} if scale == "full"
              else {"generated": {"loads": [1.0], "seeds": [0], "hours": 2}})
    milp = {"label": "milp", "policy": "milp", "options": {"time_limit_s": None, "node_limit": NODE_LIMIT}}
    return [{"name": "autoscaling", "kind": "simulate", **fields, "policies": ["pollux"],
             "vary": {"autoscale": ["none", "pollux", "throughput"]}},
            {"name": "autoscaling_exact", "kind": "simulate", **fields, "policies": [milp],
             "vary": {"autoscale": ["none", "exact"]}}]


def single_job(scale: str) -> tuple[str, list[int]]:
    """Figure 8's lone job (Pollux's cloud auto-scaling case): its application and the fixed sizes (nodes) it is
    compared with; the elastic cluster may grow to the largest."""
    return ("cifar10", [1, 2]) if scale == "tiny" else ("imagenet", [1, 2, 4, 8, 16])
