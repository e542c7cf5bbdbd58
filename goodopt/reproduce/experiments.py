"""The papers' headline experiments as sweep specs, with what each compares against the published numbers.

An :class:`Experiment` names the sweeps it runs (on the published workloads
and trace ground truth, with the settings the paper's simulator used) and
turns their tables into :class:`Comparison` rows: a reproduced number beside
the published one, with the band it must fall in. The published numbers are
read from the traces folder (``pollux/published-results.csv``,
``sia/published-results.csv``); nothing published is copied into goodopt.

``quick`` runs one workload per setting: its numbers are indicative only (the
published ones are means over eight workloads), so its bands are not judged.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from goodopt.errors import TraceError
from goodopt.sim.engine import SIA_SIM_RESTART_DELAYS_S, SIA_SIM_SLOWDOWNS

H = 3600.0
POLLUX_SOURCE = ("Pollux OSDI'21 artifact, its simulator's results-jobload summaries (means over the 8 "
                 "workloads per load), pollux/published-results.csv")
SIA_SOURCE = "Sia SOSP'23, Table 3 (Philly trace, 64-GPU heterogeneous cluster), sia/published-results.csv"


@dataclass(frozen=True)
class Band:
    """Where a reproduced number must fall: ``relative`` (|reproduced / published - 1| <= tol) or
    ``points`` (|reproduced - published| <= tol, for percentages)."""

    kind: str
    tol: float

    def holds(self, published: float, reproduced: float) -> bool:
        if not (math.isfinite(published) and math.isfinite(reproduced)):
            return False
        if self.kind == "relative":
            return abs(reproduced / published - 1) <= self.tol + 1e-12
        return abs(reproduced - published) <= self.tol + 1e-12

    def __str__(self) -> str:
        return f"±{self.tol:.0%}" if self.kind == "relative" else f"±{self.tol:g} points"


@dataclass(frozen=True)
class Comparison:
    """One reproduced number beside the published one."""

    experiment: str
    metric: str
    setting: str
    policy: str
    published: float
    reproduced: float
    band: Band | None
    source: str


@dataclass(frozen=True)
class Experiment:
    """A named experiment: its sweeps (``specs(traces, quick)``) and its comparisons (``compare``)."""

    name: str
    title: str
    specs: Callable
    compare: Callable
    settings: str


# ------------------------------------------------------------------ Pollux Fig. 8 (job load)
POLLUX_LOADS = ("0.5", "1.0", "1.5", "2.0")
POLLUX_POLICIES = ("pollux", "optimus", "tiresias")


def _pollux_specs(traces: Path, quick: bool) -> list[dict]:
    folder = traces / "pollux" / "workloads"
    loads = POLLUX_LOADS[:2] if quick else POLLUX_LOADS
    workloads = [str(folder / f"load-{ld}" / "workload-1.csv") if quick else str(folder / f"load-{ld}")
                 for ld in loads]
    return [{"name": "pollux-fig8", "kind": "simulate", "workloads": workloads, "policies": list(POLLUX_POLICIES),
             "cluster": "pollux-testbed", "truth": str(traces), "seeds": [1]}]


def _pollux_compare(tables: dict, traces: Path) -> list[Comparison]:
    pub = _published(traces / "pollux" / "published-results.csv")
    pub = pub[pub.experiment == "jobload"]
    df = tables["pollux-fig8"]
    out = []
    for load in sorted(df.load.dropna().unique()):
        setting = f"load={load:g}"
        got = df[df.load == load].groupby("policy").avg_jct.mean()
        want = pub[pub.setting == f"load={float(load):.1f}"].set_index("policy").mean_avg_jct_s
        for pol in POLLUX_POLICIES:
            band = Band("relative", 0.05) if pol == "pollux" else None
            out.append(Comparison("pollux-fig8", "avg JCT (s)", setting, pol, float(want.get(pol, math.nan)),
                                  float(got.get(pol, math.nan)), band, POLLUX_SOURCE))
        for base in ("optimus", "tiresias"):
            out.append(Comparison("pollux-fig8", f"pollux's improvement over {base} (%)", setting, "pollux",
                                  100 * (1 - want.get("pollux", math.nan) / want.get(base, math.nan)),
                                  100 * (1 - got.get("pollux", math.nan) / got.get(base, math.nan)),
                                  Band("points", 3.0), POLLUX_SOURCE))
    return out


# ------------------------------------------------------------------ Sia Table 3
SIA_POLICIES = {"sia": ("sia", {}), "pollux": ("pollux", {}),
                "gavel-tunedjobs": ("gavel", {"policy": "max_total_throughput", "round_s": 360.0})}


def _sia_specs(traces: Path, quick: bool) -> list[dict]:
    philly = traces / "sia" / "workloads" / "philly"
    return [{"name": "sia-table3", "kind": "simulate",
             "workloads": [str(philly / "workload-1.csv")] if quick else [str(philly)],
             "policies": [{"label": label, "policy": pol, "options": opts}
                          for label, (pol, opts) in SIA_POLICIES.items()],
             "cluster": "sia-default", "truth": str(traces), "seeds": [1],
             "config": {"restart_delays_s": SIA_SIM_RESTART_DELAYS_S, "slowdowns": SIA_SIM_SLOWDOWNS}}]


def _sia_compare(tables: dict, traces: Path) -> list[Comparison]:
    pub = _published(traces / "sia" / "published-results.csv")
    pub = pub[pub.trace == "philly"].set_index("policy")
    df, jobs = tables["sia-table3"], tables["sia-table3-jobs"]
    gpu_h = jobs.groupby(["label", "workload"]).attained_gpu_s.mean().groupby("label").mean() / H
    got = df.groupby("label")[["avg_jct", "p99_jct", "makespan"]].mean() / H
    out = []
    for label in SIA_POLICIES:
        for metric, col, value in (("avg JCT (h)", "avg_jct_h", got.avg_jct.get(label, math.nan)),
                                   ("p99 JCT (h)", "p99_jct_h", got.p99_jct.get(label, math.nan)),
                                   ("makespan (h)", "makespan_h", got.makespan.get(label, math.nan)),
                                   ("GPU-hours per job", "gpu_hours_per_job", gpu_h.get(label, math.nan))):
            band = Band("relative", 0.15) if col == "avg_jct_h" else None
            out.append(Comparison("sia-table3", metric, "philly", label, float(pub.at[label, col]), float(value),
                                  band, SIA_SOURCE))
    for other in ("pollux", "gavel-tunedjobs"):
        out.append(Comparison("sia-table3", f"avg JCT ratio sia / {other}", "philly", "sia",
                              pub.at["sia", "avg_jct_h"] / pub.at[other, "avg_jct_h"],
                              got.avg_jct.get("sia", math.nan) / got.avg_jct.get(other, math.nan),
                              Band("relative", 0.10), SIA_SOURCE))
    return out


def _published(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise TraceError(f"published results {str(path)!r} not found: point GOODOPT_TRACES or --traces at the "
                         "published traces")
    return pd.read_csv(path)


EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    Experiment("pollux-fig8", "Pollux Fig. 8a: average JCT vs job load on 16 x 4 T4", _pollux_specs,
               _pollux_compare,
               "the 8 published workloads per load, trace ground truth, seed 1; Pollux's simulator settings: 60 s "
               "rounds, 30 s restarts, the job agents' optimism regulariser, baselines placed smallest first on "
               "the freest node"),
    Experiment("sia-table3", "Sia Table 3: Philly workloads on Sia's 64-GPU heterogeneous cluster", _sia_specs,
               _sia_compare,
               "the 8 Philly workloads, trace ground truth per GPU type, seed 1; Sia's simulator settings: "
               "per-application restart delays and calibration slowdowns (SimConfig.sia); Pollux as a "
               "heterogeneity-unaware baseline (Sia's 4-GPU virtual nodes and 16-GPU cap are not modelled); "
               "Gavel maximising total throughput in 6-minute rounds at the workload's batch and GPU count"),
)}
