"""The papers' headline experiments as sweep specs, with what each compares against the published numbers.

An :class:`Experiment` names the sweeps it runs (on the published workloads
and trace ground truth, with the settings the paper's simulator used) and
turns their tables into :class:`Comparison` rows: a reproduced number beside
the published one, with the band it must fall in. The published numbers are
read from the traces folder (``pollux/published-results.csv``,
``sia/published-results.csv``); nothing published is copied into goodopt.

``quick`` runs one workload per setting and a short Gavel trace at two rates:
its numbers are indicative only (the published ones are means over eight
workloads, or over long traces), so its bands are not judged.
"""

from __future__ import annotations

import csv
import functools
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from goodopt.errors import TraceError
from goodopt.gavel import GAVEL_CLUSTER
from goodopt.sim.engine import SIA_SIM_RESTART_DELAYS_S, SIA_SIM_SLOWDOWNS

H = 3600.0
POLLUX_SOURCE = ("Pollux OSDI'21 artifact, its simulator's results-jobload summaries (means over the 8 "
                 "workloads per load), pollux/published-results.csv")
POLLUX_WORKLOAD_SOURCE = ("Pollux OSDI'21 artifact, its simulator's results-jobload summaries per workload "
                          "(goodopt.scenarios/references/pollux-artifact-jobload.csv)")
SIA_SOURCE = "Sia SOSP'23, Table 3 (Philly trace, 64-GPU heterogeneous cluster), sia/published-results.csv"
GAVEL_SOURCE = ("Gavel OSDI'20, abstract: heterogeneity-aware policies improve average JCT by up to 3.5x over "
                "heterogeneity-agnostic ones")
GAVEL_SIM_SOURCE = ("Gavel's own simulator on the same seed, window and rates (goodopt.scenarios/references/"
                    "gavel-simulator-continuous.csv)")


@dataclass(frozen=True)
class Band:
    """Where a reproduced number must fall: ``relative`` (|reproduced / published - 1| <= tol),
    ``points`` (|reproduced - published| <= tol, for percentages) or ``factor`` (of the same order:
    published / tol <= reproduced <= published * tol)."""

    kind: str
    tol: float

    def holds(self, published: float, reproduced: float) -> bool:
        if not (math.isfinite(published) and math.isfinite(reproduced)):
            return False
        if self.kind == "relative":
            return abs(reproduced / published - 1) <= self.tol + 1e-12
        if self.kind == "factor":
            return published / self.tol <= reproduced <= published * self.tol
        return abs(reproduced - published) <= self.tol + 1e-12

    def __str__(self) -> str:
        return {"relative": f"±{self.tol:.0%}", "factor": f"within {self.tol:g}x"}.get(self.kind,
                                                                                      f"±{self.tol:g} points")


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
    #: The reference was made at exactly this setting (the same workload, seed and window), so even a quick
    #: run is judged against it.
    like_for_like: bool = False


@dataclass(frozen=True)
class TaskBatch:
    """Tasks an experiment runs that no sweep spec describes (e.g. rigid-job runs), under a table name."""

    name: str
    tasks: tuple


@dataclass(frozen=True)
class Experiment:
    """A named experiment: its sweeps (``specs(traces, quick)``: spec mappings or :class:`TaskBatch`) and its
    comparisons (``compare``); ``curve`` names the metric its figure plots against the setting per policy
    (None: bars of published vs reproduced)."""

    name: str
    title: str
    specs: Callable
    compare: Callable
    settings: str
    curve: str | None = None
    published: tuple = ()


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


# ------------------------------------------------------------------ Sia Table 3
#: Sia's Pollux baseline: p = -1 (Pollux's default), planned on 4-GPU virtual nodes, jobs capped at 16 GPUs.
SIA_POLLUX = {"p": -1.0, "virtual_node_gpus": 4, "max_gpus": 16}
#: Sia's Gavel baseline, as its artifact (and Gavel's own code) runs it: the raw sum of the jobs' throughputs,
#: not normalised by each job's equal-share throughput (goodopt's max_total_throughput default).
SIA_GAVEL = {"policy": "max_total_throughput", "round_s": 360.0, "options": {"normalise": False}}
SIA_POLICIES = {"sia": ("sia", {}), "pollux": ("pollux", SIA_POLLUX), "gavel-tunedjobs": ("gavel", SIA_GAVEL)}


#: Sia's traces: Philly (Table 3's published numbers) and Helios (``saturn``, reproduced only); quick runs Philly.
SIA_TRACES = ("philly", "saturn")


def _sia_specs(traces: Path, quick: bool) -> list[dict]:
    out = []
    for trace in SIA_TRACES[:1] if quick else SIA_TRACES:
        folder = traces / "sia" / "workloads" / trace
        out.append({"name": f"sia-table3-{trace}", "kind": "simulate",
                    "workloads": [str(folder / "workload-1.csv")] if quick else [str(folder)],
                    "policies": [{"label": label, "policy": pol, "options": opts}
                                 for label, (pol, opts) in SIA_POLICIES.items()],
                    "cluster": "sia-default", "truth": str(traces), "seeds": [1],
                    "config": {"restart_delays_s": SIA_SIM_RESTART_DELAYS_S, "slowdowns": SIA_SIM_SLOWDOWNS}})
    return out


def _sia_compare(tables: dict, traces: Path) -> list[Comparison]:
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


def _sia_metrics(runs: pd.DataFrame, jobs: pd.DataFrame) -> dict:
    """Per policy label, each :data:`SIA_METRICS` column as a mean over the workloads."""
    per_run = jobs.groupby(["label", "workload"]).agg(gpu_s=("attained_gpu_s", "mean"),
                                                      restarts=("n_restarts", "mean"))
    got = runs.groupby("label")[["avg_jct", "p99_jct", "makespan"]].mean() / H
    return {"avg_jct_h": got.avg_jct, "p99_jct_h": got.p99_jct, "makespan_h": got.makespan,
            "gpu_hours_per_job": per_run.gpu_s.groupby("label").mean() / H,
            "restarts_per_job": per_run.restarts.groupby("label").mean()}


# ------------------------------------------------------------------ Gavel: aware vs agnostic
#: Gavel's policies compared, each heterogeneity-aware and -agnostic: label -> policy (LAS is max-min fairness).
GAVEL_FAMILIES = {"las": "max_min_fairness", "ftf": "finish_time_fairness"}
#: Gavel's two continuous-trace setups: one-GPU jobs (its Figure 8) and 1/2/4/8-GPU jobs (its Figure 9).
GAVEL_SETUPS = {"single": {1: 1.0}, "multiple": {}}
#: Input job rates (jobs per hour) per setup, up to and past saturation of the 36 + 36 + 36 GPU cluster.
GAVEL_RATES = {"full": {"single": (1.0, 2.0, 3.0, 4.0, 4.8, 5.2, 5.6, 6.0), "multiple": (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)},
               "quick": {"single": (2.0, 4.8), "multiple": (1.0,)}}
#: The measured window of job indices (Gavel's sweeps measure jobs 4000 to 4999); jobs keep arriving until
#: every job of it has finished, as in Gavel's simulator.
GAVEL_WINDOW = {"full": (4000, 5000), "quick": (100, 200)}
#: A run whose queue passes this many jobs is cut and marked saturated (its JCTs are then lower bounds).
GAVEL_MAX_ACTIVE = 1000
#: How the runs schedule, as Gavel's simulator does: its round mechanism (:mod:`goodopt.solvers.gavel_rounds`)
#: and one LP per allocation, solved by an interior-point method (Gavel: cvxpy with ECOS), with no second stage.
GAVEL_SEMANTICS = {"mechanism": "gavel"}
GAVEL_LP_OPTIONS = {"las": {"second_stage": False, "lp_method": "ipm", "scale_by_size": True},
                    "ftf": {"lp_method": "ipm"}}
#: Where the LP's choice among its optima moves the answer: the continuous-multiple LAS runs near saturation are
#: also run with the LP ending at a vertex (simplex) instead of near the centre of the optimal face (Gavel's
#: ECOS, goodopt's interior point). Reported beside the judged rows, never judged: at 2.5 jobs/h that choice
#: alone moved the average JCT by 12% (aware) and 14% (agnostic), more than the band.
GAVEL_TIE_RATES = {"full": (2.5,), "quick": ()}
#: A rate is sustained while the window's average JCT stays within this factor of the lowest rate's.
SUSTAIN_FACTOR = 2.0


def _gavel_specs(traces: Path, quick: bool) -> list:
    from goodopt.runs.tasks import rigid_task

    mode = "quick" if quick else "full"
    window = GAVEL_WINDOW[mode]
    capacity = {t: g * n for t, g, n in GAVEL_CLUSTER}
    tasks = [rigid_task(traces, capacity, rate, window[1], seed=0, window=window, policy=policy, agnostic=agnostic,
                        round_s=360.0, generator="gavel", scale_factors=GAVEL_SETUPS[setup], arrivals="until_window",
                        max_active_jobs=GAVEL_MAX_ACTIVE, max_time_s=gavel_max_time_s(window, rate),
                        options=GAVEL_LP_OPTIONS[fam], **GAVEL_SEMANTICS,
                        label=f"{setup}/{fam}-{'agnostic' if agnostic else 'aware'}")
             for setup in GAVEL_SETUPS for rate in GAVEL_RATES[mode][setup]
             for fam, policy in GAVEL_FAMILIES.items() for agnostic in (False, True)]
    tasks += [rigid_task(traces, capacity, rate, window[1], seed=0, window=window, policy=GAVEL_FAMILIES["las"],
                         agnostic=agnostic, round_s=360.0, generator="gavel", scale_factors=GAVEL_SETUPS["multiple"],
                         arrivals="until_window", max_active_jobs=GAVEL_MAX_ACTIVE,
                         max_time_s=gavel_max_time_s(window, rate),
                         options={**GAVEL_LP_OPTIONS["las"], "lp_method": "simplex"}, **GAVEL_SEMANTICS,
                         label=f"multiple/las-{'agnostic' if agnostic else 'aware'}{VERTEX}")
              for rate in GAVEL_TIE_RATES[mode] for agnostic in (False, True)]
    return [TaskBatch("gavel-hetero", tuple(tasks))]


#: Label suffix of the sensitivity runs whose LP ends at a vertex (:data:`GAVEL_TIE_RATES`).
VERTEX = " (LP at a vertex)"


def gavel_max_time_s(window: tuple, rate_per_h: float) -> float:
    """A run's time limit: a year (for the window's jobs to run, some take days) after three times the expected
    arrival of its last job, so that neither a slow rate nor long jobs are cut (saturation is caught by
    :data:`GAVEL_MAX_ACTIVE` instead)."""
    return 365 * 24 * H + 3.0 * window[1] / rate_per_h * H


def _gavel_compare(tables: dict, traces: Path) -> list[Comparison]:
    df = tables["gavel-hetero"]
    window = (int(df.window_lo.iloc[0]), int(df.window_hi.iloc[0])) if len(df) else None
    ref = gavel_simulator_jcts(window)
    out = []
    for setup in GAVEL_SETUPS:
        for fam in GAVEL_FAMILIES:
            jct = {v: df[df.label == f"{setup}/{fam}-{v}"].set_index("rate_per_h").avg_jct / H
                   for v in ("aware", "agnostic")}
            want = {v: ref.get((setup, fam, v), pd.Series(dtype=float)) / H for v in jct}
            for v, series in jct.items():
                for rate, value in series.items():
                    published = float(want[v].get(rate, math.nan))
                    out.append(Comparison("gavel-hetero", "avg JCT (h)", f"rate={rate:g}/h", f"{setup}/{fam}-{v}",
                                          published, float(value), GAVEL_BAND if math.isfinite(published) else None,
                                          GAVEL_SIM_SOURCE, like_for_like=True))
                out.append(Comparison("gavel-hetero", "sustained rate (jobs/h)", "all rates", f"{setup}/{fam}-{v}",
                                      math.nan, sustained(series), None, GAVEL_SOURCE))
            ratio = (jct["agnostic"] / jct["aware"]).dropna()
            want_ratio = want["agnostic"] / want["aware"] if len(want["aware"]) else pd.Series(dtype=float)
            for rate, value in ratio.items():
                published = float(want_ratio.get(rate, math.nan))
                out.append(Comparison("gavel-hetero", "avg JCT ratio agnostic / aware", f"rate={rate:g}/h",
                                      f"{setup}/{fam}", published, float(value),
                                      GAVEL_BAND if math.isfinite(published) else None, GAVEL_SIM_SOURCE,
                                      like_for_like=True))
            out.append(Comparison("gavel-hetero", "best avg JCT ratio agnostic / aware", "all rates",
                                  f"{setup}/{fam}", 3.5, float(ratio.max()) if len(ratio) else math.nan,
                                  None, GAVEL_SOURCE))
    return out + _tie_sensitivity(df, ref)


def _tie_sensitivity(df, ref) -> list[Comparison]:
    """The unjudged rows of the runs whose LP ends at a vertex, beside Gavel's numbers at their rates."""
    out = []
    jct = {v: df[df.label == f"multiple/las-{v}{VERTEX}"].set_index("rate_per_h").avg_jct / H
           for v in ("aware", "agnostic")}
    want = {v: ref.get(("multiple", "las", v), pd.Series(dtype=float)) / H for v in jct}
    for v, series in jct.items():
        for rate, value in series.items():
            out.append(Comparison("gavel-hetero", "avg JCT (h), LP at a vertex (sensitivity, not judged)",
                                  f"rate={rate:g}/h", f"multiple/las-{v}", float(want[v].get(rate, math.nan)),
                                  float(value), None, GAVEL_SIM_SOURCE))
    for rate, value in (jct["agnostic"] / jct["aware"]).dropna().items():
        published = float(want["agnostic"].get(rate, math.nan) / want["aware"].get(rate, math.nan))
        out.append(Comparison("gavel-hetero", "avg JCT ratio agnostic / aware, LP at a vertex (sensitivity, "
                              "not judged)", f"rate={rate:g}/h", "multiple/las", published, float(value), None,
                              GAVEL_SIM_SOURCE))
    return out


#: Each rate's average JCT, and the ratio agnostic / aware, within 10% of Gavel's own simulator.
GAVEL_BAND = Band("relative", 0.10)


@functools.lru_cache(maxsize=4)
def gavel_simulator_jcts(window: tuple | None) -> dict:
    """Gavel's simulator's average JCT (s) for the measured ``window``: (setup, family, variant) -> Series by
    rate (shipped reference table, read once; rates Gavel's run did not finish are left out)."""
    from importlib import resources

    with resources.as_file(resources.files("goodopt.scenarios") / "references"
                           / "gavel-simulator-continuous.csv") as f:
        ref = pd.read_csv(f)
    if window is not None:
        ref = ref[(ref.window_lo == window[0]) & (ref.window_hi == window[1])]
    ref = ref[np.isfinite(ref.avg_jct_s)]
    return {key: g.set_index("rate_per_h").avg_jct_s for key, g in ref.groupby(["setup", "family", "variant"])}


def sustained(avg_jct: pd.Series) -> float:
    """The highest rate up to which the average JCT stays within :data:`SUSTAIN_FACTOR` of the lowest rate's
    (``avg_jct`` indexed by rate; NaN when even the lowest rate is not finite)."""
    s = avg_jct.sort_index()
    if not len(s) or not math.isfinite(s.iloc[0]):
        return math.nan
    ok = s <= SUSTAIN_FACTOR * s.iloc[0]
    last = s.index[0]
    for rate, good in ok.items():
        if not good:
            break
        last = rate
    return float(last)


@dataclass(frozen=True)
class PublishedFile:
    """A file of published numbers in the traces folder: its key columns (unique per row) and its value
    columns (finite and positive)."""

    path: str
    keys: tuple[str, ...]
    values: tuple[str, ...]


POLLUX_PUBLISHED = PublishedFile("pollux/published-results.csv", ("experiment", "setting", "policy"),
                                 ("mean_avg_jct_s",))
SIA_PUBLISHED = PublishedFile("sia/published-results.csv", ("experiment", "trace", "policy"),
                              ("avg_jct_h", "p99_jct_h", "makespan_h", "gpu_hours_per_job"))


def read_published(traces: Path, spec: PublishedFile) -> pd.DataFrame:
    """The published numbers of ``spec``, every row checked; a bad file raises :class:`TraceError` naming
    ``file:line`` and what is wrong (run before the first task, so a bad file is found in seconds)."""
    path = traces / spec.path
    text = _published_text(path)
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise TraceError(f"{path}: empty file; it must have a header line {','.join(spec.keys + spec.values)}")
    header = [c.strip() for c in rows[0]]
    missing = [c for c in spec.keys + spec.values if c not in header]
    if missing:
        raise TraceError(f"{path}:1: column {missing[0]!r} is missing (header: {','.join(header)}); restore the "
                         "published file")
    seen: dict[tuple, int] = {}
    records = []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise TraceError(f"{path}:{line}: {len(row)} fields where the header has {len(header)}")
        rec = dict(zip(header, (c.strip() for c in row)))
        key = tuple(rec[k] for k in spec.keys)
        if any(not k for k in key):
            raise TraceError(f"{path}:{line}: an empty key field ({', '.join(spec.keys)})")
        if key in seen:
            raise TraceError(f"{path}:{line}: the row for {key} is given twice (first at line {seen[key]})")
        seen[key] = line
        for col in spec.values:
            rec[col] = _published_value(path, line, col, rec[col])
        records.append(rec)
    if not records:
        raise TraceError(f"{path}: no rows under the header; restore the published file")
    return pd.DataFrame.from_records(records, columns=header)


def _published_text(path: Path) -> str:
    if not path.is_file():
        raise TraceError(f"published results {str(path)!r} not found: point GOODOPT_TRACES or --traces at the "
                         "published traces")
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise TraceError(f"{path}:{line}: byte 0x{data[exc.start]:02x} is not UTF-8 text") from None


def _published_value(path: Path, line: int, col: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise TraceError(f"{path}:{line}: {col} must be a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise TraceError(f"{path}:{line}: {col} must be a finite number > 0, got {text!r}")
    return value


EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in (
    Experiment("pollux-fig8", "Pollux Fig. 8a: average JCT vs job load on 16 x 4 T4", _pollux_specs,
               _pollux_compare,
               "the 8 published workloads per load, trace ground truth, seed 1; Pollux's simulator settings: 60 s "
               "rounds, 30 s restarts, the job agents' optimism regulariser, baselines placed smallest first on "
               "the freest node", published=(POLLUX_PUBLISHED,)),
    Experiment("sia-table3", "Sia Table 3: Philly and Helios workloads on Sia's 64-GPU heterogeneous cluster",
               _sia_specs,
               _sia_compare,
               "the 8 Philly workloads (Table 3's published numbers) and the 10 Helios (saturn) workloads "
               "(reproduced only; quick mode: Philly workload 1), trace ground truth per GPU type, seed 1; Sia's "
               "simulator settings: "
               "per-application restart delays and calibration slowdowns (SimConfig.sia); Pollux as Sia ran it: "
               "heterogeneity-unaware, p = -1, planned on 4-GPU virtual nodes, jobs capped at 16 GPUs; "
               "Gavel maximising the raw sum of throughputs (not normalised, as Sia's artifact and Gavel's code do) in "
               "6-minute rounds at the workload's batch and GPU count",
               published=(SIA_PUBLISHED,)),
    Experiment("gavel-hetero", "Gavel Figs. 8-9: heterogeneity-aware vs agnostic LAS and finish-time fairness on "
               "36 V100 + 36 P100 + 36 K80", _gavel_specs, _gavel_compare,
               "Gavel's own jobs for seed 0 (its generator draw for draw: random.Random(seed + 2) for jobs, "
               "random.Random(seed + 3) for Poisson arrivals), in its continuous-single (1-GPU jobs) and "
               "continuous-multiple (1/2/4/8 GPUs with probability 0.70/0.10/0.15/0.05) setups; Gavel's measured "
               "throughputs, 6-minute rounds; average JCT of the jobs "
               f"{GAVEL_WINDOW['full'][0]} to {GAVEL_WINDOW['full'][1] - 1} (quick: {GAVEL_WINDOW['quick'][0]} to "
               f"{GAVEL_WINDOW['quick'][1] - 1}) with jobs arriving until all of them have finished, as Gavel's "
               "simulator runs; scheduled by Gavel's own round mechanism (the allocation recomputed at most every "
               "1,920 s, per-type queues, priority = fraction / share of the type's time since the last reset) "
               "and one interior-point LP per allocation (LAS with each job's term scaled by its GPU count, as in "
               "Gavel's code); "
               f"a queue of over {GAVEL_MAX_ACTIVE} jobs marks the rate saturated; the agnostic "
               "variants solve the same policy with every GPU type seen as one; a rate is sustained while the "
               f"average JCT stays within {SUSTAIN_FACTOR:g}x of the lowest rate's", curve="avg JCT (h)"),
)}
