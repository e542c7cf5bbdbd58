"""Sia Table 3: Sia, Pollux and Gavel on the Philly (judged) and Helios (reported) workloads."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..records import Record
from .comparison import SIA_PUBLISHED, Band, Comparison, H, read_published

SIA_SOURCE = "Sia SOSP'23, Table 3 (Philly trace, 64-GPU heterogeneous cluster), sia/published-results.csv"


# ------------------------------------------------------------------ Sia Table 3
#: Sia's Pollux baseline: p = -1 (Pollux's default), planned on 4-GPU virtual nodes, jobs capped at 16 GPUs.
SIA_POLLUX = {"p": -1.0, "virtual_node_gpus": 4, "max_gpus": 16}


#: Sia's Gavel baseline, as its artifact (and Gavel's own code) runs it: the raw sum of the jobs' throughputs,
#: not normalised by each job's equal-share throughput (goodopt's max_total_throughput default).
SIA_GAVEL = {"policy": "max_total_throughput", "round_s": 360.0, "options": {"normalise": False}}


SIA_POLICIES = {"sia": ("sia", {}), "pollux": ("pollux", SIA_POLLUX), "gavel-tunedjobs": ("gavel", SIA_GAVEL)}


#: Sia's traces: Philly (Table 3's published numbers) and Helios (``saturn``, reproduced only); quick runs Philly.
SIA_TRACES = ("philly", "saturn")


def sia_specs(traces: Path, quick: bool) -> list[Record]:
    out = []
    for trace in SIA_TRACES[:1] if quick else SIA_TRACES:
        folder = traces / "sia" / "workloads" / trace
        out.append({"name": f"sia-table3-{trace}", "kind": "simulate",
                    "workloads": [str(folder / "workload-1.csv")] if quick else [str(folder)],
                    "policies": [{"label": label, "policy": pol, "options": opts}
                                 for label, (pol, opts) in SIA_POLICIES.items()],
                    "cluster": "sia-default", "truth": str(traces), "seeds": [1],
                    "preset": "sia"})
    return out


def sia_compare(tables: dict[str, pd.DataFrame], traces: Path) -> list[Comparison]:
    pub = read_published(traces, SIA_PUBLISHED)
    out = []
    for trace in SIA_TRACES:
        if f"sia-table3-{trace}" not in tables:
            continue
        want = pub[pub.trace == trace].set_index("policy")
        got = _sia_metrics(tables[f"sia-table3-{trace}"], tables[f"sia-table3-{trace}-jobs"])
        for label in SIA_POLICIES:
            for metric, col in SIA_METRICS.items():
                published = float(want.at[label, col]) if label in want.index and col in want else math.nan
                band = Band("relative", 0.15) if col == "avg_jct_h" and math.isfinite(published) else None
                out.append(Comparison("sia-table3", metric, trace, label, published,
                                      float(got[col].get(label, math.nan)), band, SIA_SOURCE))
        for other in ("pollux", "gavel-tunedjobs"):
            published = want.at["sia", "avg_jct_h"] / want.at[other, "avg_jct_h"] if len(want) else math.nan
            out.append(Comparison("sia-table3", f"avg JCT ratio sia / {other}", trace, "sia", published,
                                  got["avg_jct_h"].get("sia", math.nan) / got["avg_jct_h"].get(other, math.nan),
                                  Band("relative", 0.10) if math.isfinite(published) else None, SIA_SOURCE))
    return out


#: Table 3's metrics: report name -> column of the published file (restarts are reproduced only).
SIA_METRICS = {"avg JCT (h)": "avg_jct_h", "p99 JCT (h)": "p99_jct_h", "makespan (h)": "makespan_h",
               "GPU-hours per job": "gpu_hours_per_job", "restarts per job": "restarts_per_job"}


def _sia_metrics(runs: pd.DataFrame, jobs: pd.DataFrame) -> dict[str, pd.Series]:
    """Per policy label, each :data:`SIA_METRICS` column as a mean over the workloads."""
    per_run = jobs.groupby(["label", "workload"]).agg(gpu_s=("attained_gpu_s", "mean"),
                                                      restarts=("n_restarts", "mean"))
    got = runs.groupby("label")[["avg_jct", "p99_jct", "makespan"]].mean() / H
    return {"avg_jct_h": got.avg_jct, "p99_jct_h": got.p99_jct, "makespan_h": got.makespan,
            "gpu_hours_per_job": per_run.gpu_s.groupby("label").mean() / H,
            "restarts_per_job": per_run.restarts.groupby("label").mean()}
