"""Whether a difference between methods is real: the tests OR and ML papers report (Demšar, JMLR 7, 2006).

Over ``N`` instances (blocks) and ``k`` methods, on one measure (seconds, primal integral: lower is better;
fitness: higher is better):

* the *Friedman test* (:func:`scipy.stats.friedmanchisquare`) of "all methods rank alike", with each method's
  average rank (1 = best) and the *Nemenyi* post-hoc p-values (:func:`scikit_posthocs.posthoc_nemenyi_friedman`)
  and critical difference ``CD = q_alpha sqrt(k (k + 1) / (6 N))`` (``q_alpha`` the studentized range quantile
  over ``sqrt 2``, :data:`scipy.stats.studentized_range`);
* pairwise *Wilcoxon signed-rank tests* (:func:`scipy.stats.wilcoxon`, zero differences split between the
  signs as Demšar ranks them) with *Holm's* correction (:func:`statsmodels.stats.multitest.multipletests`);
* the critical-difference diagram (:func:`scikit_posthocs.critical_difference_diagram`, drawn by
  :func:`goodopt.runs.plots.plot_critical_difference`);
* tables in LaTeX with booktabs rules (pandas' :meth:`~pandas.io.formats.style.Styler.to_latex`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from goodopt.errors import ValidationError

#: Measures where lower is better; the others (fitness) rank higher first.
LOWER_IS_BETTER = ("seconds", "primal_integral", "primal_dual_integral", "primal_gap")


@dataclass(frozen=True)
class FriedmanResult:
    """The Friedman test over a scores matrix, its ranks, Nemenyi's p-values and critical difference."""

    statistic: float
    pvalue: float
    n_instances: int
    average_ranks: pd.Series
    nemenyi: pd.DataFrame
    critical_difference: float
    alpha: float


def scores(table: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Instances x methods: the median of ``measure`` over seeds; instances some method lacks are dropped."""
    if measure not in table.columns:
        raise ValidationError("measure", f"the table has no column {measure!r}", "use seconds, fitness, "
                              "primal_integral or another numeric column")
    wide = table.groupby(["scenario", "method"], sort=False)[measure].median().unstack("method")
    return wide.reindex(columns=list(dict.fromkeys(table["method"]))).dropna()


def _ranked(s: pd.DataFrame, measure: str) -> pd.DataFrame:
    """The matrix oriented so that lower is better (fitness negated)."""
    return s if measure in LOWER_IS_BETTER else -s


def friedman(s: pd.DataFrame, measure: str, alpha: float = 0.05) -> FriedmanResult:
    """The Friedman test with Nemenyi's post-hoc over the scores matrix ``s`` of ``measure``."""
    import scikit_posthocs as sp
    from scipy import stats

    if s.shape[1] < 3 or s.shape[0] < 2:
        raise ValidationError("methods", f"the Friedman test needs 3 methods or more and 2 instances or more, got "
                              f"{s.shape[1]} methods on {s.shape[0]} instances", "compare more methods")
    low = _ranked(s, measure)
    res = stats.friedmanchisquare(*(low[c].to_numpy(float) for c in low.columns))
    ranks = low.rank(axis=1, method="average").mean(axis=0)
    nemenyi = sp.posthoc_nemenyi_friedman(low.to_numpy(float))
    nemenyi.index = nemenyi.columns = list(low.columns)
    k, n = low.shape[1], low.shape[0]
    q = float(stats.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
    return FriedmanResult(statistic=float(res.statistic), pvalue=float(res.pvalue), n_instances=n,
                          average_ranks=ranks, nemenyi=nemenyi, critical_difference=q * math.sqrt(k * (k + 1) / (6 * n)),
                          alpha=alpha)


def wilcoxon_holm(s: pd.DataFrame, measure: str, alpha: float = 0.05) -> pd.DataFrame:
    """Every pair of methods: Wilcoxon's signed-rank statistic and p-value, Holm's adjusted p-value, whether
    the difference is significant at ``alpha``, and which method is better by its median."""
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    low = _ranked(s, measure)
    rows = []
    cols = list(low.columns)
    for i, a in enumerate(cols):
        for b in cols[i + 1:]:
            d = low[a] - low[b]
            if (d == 0).all():
                stat, p = float("nan"), 1.0
            else:
                r = stats.wilcoxon(low[a], low[b], zero_method="zsplit")
                stat, p = float(r.statistic), float(r.pvalue)
            rows.append({"a": a, "b": b, "statistic": stat, "pvalue": p,
                         "better": a if d.median() < 0 else (b if d.median() > 0 else "")})
    out = pd.DataFrame(rows, columns=["a", "b", "statistic", "pvalue", "better"])
    if len(out):
        reject, adjusted, _, _ = multipletests(out["pvalue"].to_numpy(float), alpha=alpha, method="holm")
        out.insert(4, "p_holm", adjusted)
        out.insert(5, "significant", reject)
    return out


def latex_table(df: pd.DataFrame, *, caption: str = "", label: str = "", precision: int = 3) -> str:
    """``df`` as a LaTeX table with booktabs rules (``\\toprule``, ``\\midrule``, ``\\bottomrule``)."""
    styler = df.style.format(precision=precision, na_rep="--").hide(axis="index")
    return styler.to_latex(hrules=True, caption=caption or None, label=label or None, position_float="centering")
