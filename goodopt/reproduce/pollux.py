"""Pollux Fig. 8: average JCT against job load, per load and per workload, beside the artifact's numbers."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pandas as pd

from ..records import Record
from .comparison import POLLUX_PUBLISHED, Band, Comparison, read_published

POLLUX_SOURCE = ("Pollux OSDI'21 artifact, its simulator's results-jobload summaries (means over the 8 "
                 "workloads per load), pollux/published-results.csv")


POLLUX_WORKLOAD_SOURCE = ("Pollux OSDI'21 artifact, its simulator's results-jobload summaries per workload "
                          "(goodopt.scenarios/references/pollux-artifact-jobload.csv)")


# ------------------------------------------------------------------ Pollux Fig. 8 (job load)
POLLUX_LOADS = ("0.5", "1.0", "1.5", "2.0")


POLLUX_POLICIES = ("pollux", "optimus", "tiresias")


def pollux_specs(traces: Path, quick: bool) -> list[Record]:
    folder = traces / "pollux" / "workloads"
    loads = POLLUX_LOADS[:2] if quick else POLLUX_LOADS
    workloads = [str(folder / f"load-{ld}" / "workload-1.csv") if quick else str(folder / f"load-{ld}")
                 for ld in loads]
    return [{"name": "pollux-fig8", "kind": "simulate", "workloads": workloads, "policies": list(POLLUX_POLICIES),
             "cluster": "pollux-testbed", "truth": str(traces), "seeds": [1]}]


def pollux_compare(tables: dict[str, pd.DataFrame], traces: Path) -> list[Comparison]:
    pub = read_published(traces, POLLUX_PUBLISHED)
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
        out += _pollux_per_workload(df[df.load == load], float(load))
        for base in ("optimus", "tiresias"):
            out.append(Comparison("pollux-fig8", f"pollux's improvement over {base} (%)", setting, "pollux",
                                  100 * (1 - want.get("pollux", math.nan) / want.get(base, math.nan)),
                                  100 * (1 - got.get("pollux", math.nan) / got.get(base, math.nan)),
                                  Band("points", 3.0), POLLUX_SOURCE))
    return out


@functools.lru_cache(maxsize=1)
def pollux_artifact_jcts() -> pd.DataFrame:
    """The Pollux artifact's average JCT per (policy, load, workload), seconds (shipped reference table, read
    once)."""
    from importlib import resources

    with resources.as_file(resources.files("goodopt.scenarios") / "references" / "pollux-artifact-jobload.csv") as f:
        return pd.read_csv(f)


def _pollux_per_workload(df: pd.DataFrame, load: float) -> list[Comparison]:
    ref = pollux_artifact_jcts()
    ref = ref[ref.load == load].set_index(["policy", "workload"]).avg_jct_s
    out = []
    for row in df.itertuples(index=False):
        name = str(row.workload).rsplit("/", 1)[-1].removesuffix(".csv")
        if (row.policy, name) not in ref.index:
            continue
        band = Band("relative", 0.08) if row.policy == "pollux" else None
        out.append(Comparison("pollux-fig8", "avg JCT per workload (s)", f"load={load:g} {name}", row.policy,
                              float(ref[(row.policy, name)]), float(row.avg_jct), band, POLLUX_WORKLOAD_SOURCE,
                              like_for_like=True))
    return out


# ------------------------------------------------------------------ Pollux Fig. 8b-c (sensitivity)
#: Scheduling intervals of Fig. 8b (s) and the co-location slowdowns of Fig. 8c, at load 1.0.
POLLUX_INTERVALS = (30, 60, 120, 240, 480)
POLLUX_SLOWDOWNS = (0.0, 0.25, 0.5)
#: The label of Pollux with interference avoidance off.
AVOIDANCE_OFF = "pollux (avoidance off)"


def pollux_sensitivity_specs(traces: Path, quick: bool) -> list[Record]:
    """Fig. 8b (the scheduling interval) and 8c (interference avoidance off, with a slowdown for jobs sharing a
    node) on the load-1.0 workloads; quick: workload 1, two intervals, one slowdown."""
    folder = traces / "pollux" / "workloads" / "load-1.0"
    one = {"kind": "simulate", "workloads": [str(folder / "workload-1.csv") if quick else str(folder)],
           "cluster": "pollux-testbed", "truth": str(traces), "seeds": [1]}
    intervals = [60, 240] if quick else list(POLLUX_INTERVALS)
    slowdowns = [0.5] if quick else list(POLLUX_SLOWDOWNS)
    return [{"name": "pollux-interval", "policies": ["pollux"], "vary": {"interval_s": intervals}, **one},
            {"name": "pollux-interference", "vary": {"interference_slowdown": slowdowns},
             "policies": [{"label": AVOIDANCE_OFF, "policy": "pollux",
                           "options": {"interference_avoidance": False}}], **one}]


def pollux_sensitivity_compare(tables: dict[str, pd.DataFrame], traces: Path) -> list[Comparison]:
    """Per setting Pollux's mean average JCT over the workloads (band 5%, as Fig. 8a's per load) and its ratio
    to the 60-s run with avoidance on (band 5%), beside the artifact's."""
    pub = read_published(traces, POLLUX_PUBLISHED).set_index(["experiment", "setting"]).mean_avg_jct_s
    iv = tables["pollux-interval"].groupby("interval_s").avg_jct.mean()
    base_got, base_pub = float(iv.get(60, math.nan)), float(pub.get(("interval", "60 s (load=1.0)"), math.nan))
    rows = [(f"interval {int(s)} s", float(iv[s]), ("interval", f"{int(s)} s (load=1.0)")) for s in iv.index]
    itf = tables["pollux-interference"].groupby("interference_slowdown").avg_jct.mean()
    rows += [(f"avoidance off, slowdown {x:g}", float(itf[x]),
              ("interference", f"avoidance off slowdown {x * 100:.0f}{'%' if x else ''} (load=1.0)"))
             for x in itf.index]
    out = []
    for setting, got, key in rows:
        want = float(pub.get(key, math.nan))
        out.append(Comparison("pollux-sensitivity", "avg JCT (s)", setting, "pollux", want, got,
                              Band("relative", 0.05), POLLUX_SOURCE))
        if setting != "interval 60 s":
            out.append(Comparison("pollux-sensitivity", "avg JCT / the 60-s run with avoidance on", setting,
                                  "pollux", want / base_pub, got / base_got, Band("relative", 0.05), POLLUX_SOURCE))
    return out
