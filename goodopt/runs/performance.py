"""Solver comparison as operations researchers report it: performance profiles and shifted geometric means.

A *performance profile* (Dolan and Moré, Math. Programming 91, 2002) of a
method ``s`` is the fraction of instances it solves within a factor ``tau`` of
the best method on that instance::

    r[i, s]   = t[i, s] / min_s' t[i, s']        (inf when s did not solve i)
    rho_s(tau) = |{i : r[i, s] <= tau}| / n_instances

For **time**, ``t`` is the solve's seconds and an instance counts as solved
when the method's answer is feasible and within ``rtol`` of the best fitness
any method found on it (a heuristic that stops early with a worse answer has
not solved it). For **fitness** (maximised), the ratio is ``best / fitness``,
so ``rho_s(1)`` is the fraction of instances where ``s`` found the best
answer. An *instance* is one scenario; a randomised method's seeds are
summarised by their median (seconds and fitness) and its solve counts only
when the median seed solved it.

The *shifted geometric mean* of times ``exp(mean(log(t + shift))) - shift``
damps the influence of the tiniest times (Mittelmann's benchmarks use it
with a shift of 10 s for MILP; goodopt's default of 1 s suits sub-second
solves). Unsolved instances enter at their seconds and are counted apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from goodopt.errors import ValidationError

#: Relative distance to an instance's best fitness within which a solve counts as solving it.
SOLVED_RTOL = 1e-4


def instance_table(table: pd.DataFrame, rtol: float = SOLVED_RTOL,
                   reference: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per (scenario, method): median ``seconds`` and ``fitness`` over seeds and ``solved``.

    ``table`` is a :func:`~goodopt.runs.compare.compare` table. ``reference`` (scenario -> fitness, e.g. a
    library's certified values) replaces the best fitness found in the table as the value a solve must
    reach, where it has one."""
    missing = {"scenario", "method", "seconds", "fitness", "feasible"} - set(table.columns)
    if missing:
        raise ValidationError("table", f"is missing the columns {sorted(missing)}", "pass a compare table")
    t = table.assign(fitness=table["fitness"].where(table["feasible"].astype(bool)))
    g = t.groupby(["scenario", "method"], sort=False)
    per = g.agg(seconds=("seconds", "median"), fitness=("fitness", "median")).reset_index()
    best = per.groupby("scenario")["fitness"].transform("max")
    if reference:
        known = per["scenario"].map(pd.Series(dict(reference), dtype=float))
        best = known.where(known.notna(), best)
    per["solved"] = per["fitness"].notna() & (per["fitness"] >= best - rtol * best.abs())
    per["reference"] = best
    return per


def performance_ratios(table: pd.DataFrame, measure: str = "seconds", rtol: float = SOLVED_RTOL,
                       reference: Mapping[str, float] | None = None) -> pd.DataFrame:
    """The ratios ``r[i, s]`` as an instances x methods frame (``inf`` where the method did not solve it).

    ``measure`` is ``"seconds"`` (ratio to the fastest solve) or ``"fitness"`` (best fitness over the
    method's fitness; against ``reference`` where given: its value over the method's fitness)."""
    per = instance_table(table, rtol, reference)
    if measure == "seconds":  # lower is better; a 0 s solve would make every other ratio inf
        value = per["seconds"].where(per["solved"]).clip(lower=1e-9)
    elif measure == "fitness":  # higher is better: the ratio of inverses is best / own
        value = 1.0 / per["fitness"].where(per["fitness"] > 0)
    else:
        raise ValidationError("measure", f"unknown measure {measure!r}", "choose seconds or fitness")
    wide = per.assign(v=value).pivot(index="scenario", columns="method", values="v")
    floor = wide.min(axis=1)
    if measure == "fitness" and reference:  # the certified value is the best there is
        ref = 1.0 / per.groupby("scenario")["reference"].first()
        floor = ref.reindex(floor.index).where(lambda r: r.notna(), floor)
    ratio = wide.div(floor, axis=0)
    methods = list(dict.fromkeys(per["method"]))
    return ratio.reindex(columns=methods).fillna(np.inf)


def performance_profile(table: pd.DataFrame, measure: str = "seconds", taus: Iterable[float] | None = None,
                        rtol: float = SOLVED_RTOL, reference: Mapping[str, float] | None = None) -> pd.DataFrame:
    """``rho_s(tau)``: a frame indexed by ``tau`` with one column per method.

    ``taus`` default to every distinct finite ratio (the profile's steps) and 1."""
    ratios = performance_ratios(table, measure, rtol, reference)
    if taus is None:
        finite = ratios.to_numpy()[np.isfinite(ratios.to_numpy())]
        taus = np.unique(np.concatenate([[1.0], finite]))
    taus = np.asarray(taus, dtype=float)
    sorted_ratios = np.sort(ratios.to_numpy(), axis=0)  # per method: how many ratios are <= tau, by bisection
    data = {m: np.searchsorted(sorted_ratios[:, i], taus, side="right") / len(ratios)
            for i, m in enumerate(ratios.columns)}
    return pd.DataFrame(data, index=pd.Index(taus, name="tau"))


def shifted_geometric_mean(values: Iterable[float] | np.ndarray, shift: float = 1.0) -> float:
    """``exp(mean(log(v + shift))) - shift`` of non-negative ``values`` (NaN when there are none)."""
    if not (shift > 0):
        raise ValidationError("shift", f"must be > 0, got {shift!r}")
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan")
    if (v < 0).any():
        raise ValidationError("values", "must be >= 0 (times)")
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


def method_summary(table: pd.DataFrame, shift: float = 1.0, rtol: float = SOLVED_RTOL,
                   reference: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Per method: instances, how many it solved, shifted geometric mean seconds and mean relative fitness
    (to the best found, or to ``reference`` where given)."""
    per = instance_table(table, rtol, reference)
    per = per.assign(relative=per["fitness"] / per["reference"])
    rows = []
    for method, g in per.groupby("method", sort=False):
        rows.append({"method": method, "instances": len(g), "solved": int(g["solved"].sum()),
                     f"sgm_seconds_shift_{shift:g}": shifted_geometric_mean(g["seconds"], shift),
                     "mean_relative_fitness": float(g["relative"].mean())})
    return pd.DataFrame(rows)
