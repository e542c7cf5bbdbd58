"""The front figure: the exact front (certified points filled, others hollow), the heuristic fronts, their median
attainment surfaces over seeds (two criteria), and the optimum of the fitness at each paper's p, on the first two
criteria's axes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .study import ParetoStudy

MARKERS = {"nsga2": "^", "nsga3": "s", "moead": "D"}


@dataclass(frozen=True)
class Drawn:
    """One front as drawn: its method and seed, its points' two coordinates (n, 2) and which are certified."""

    method: str
    seed: Any
    xy: np.ndarray
    certified: np.ndarray


def draw_panel(ax: Any, fronts: Sequence[Drawn], powers: Mapping[str, Sequence[float]], names: Sequence[str],
               maximise: Sequence[bool], surfaces: Mapping[str, np.ndarray] | None = None) -> None:  # ax: a matplotlib Axes (typed loosely: matplotlib is imported lazily)
    """Draw the fronts, the fitness optima at each p (``label -> (x, y)``) and ``surfaces`` (a label -> an
    attainment surface's points (n, 2), drawn as the staircase bounding what it attains) on ``ax``."""
    for i, (label, xy) in enumerate((surfaces or {}).items()):
        order = np.argsort(xy[:, 0])
        # maximised x: each point attains every x up to its own (a step before it); minimised: from it on
        ax.step(xy[order, 0], xy[order, 1], where="pre" if maximise[0] else "post", ls=":", lw=1.2,
                color=f"C{i}", label=label, zorder=1)
    for f in fronts:
        x, y = f.xy[:, 0], f.xy[:, 1]
        if f.method == "exact":
            ok = f.certified.astype(bool)
            ax.plot(x, y, "-", color="black", lw=1, zorder=2)
            ax.scatter(x[ok], y[ok], color="black", s=22, zorder=3, label="exact (certified)")
            if not ok.all():
                ax.scatter(x[~ok], y[~ok], facecolors="none", edgecolors="black", s=30, zorder=3,
                           label="exact (limit hit)")
        else:
            ax.scatter(x, y, marker=MARKERS.get(f.method, "o"), s=16, alpha=0.6, label=f"{f.method} seed {f.seed}")
    for i, (label, v) in enumerate(powers.items()):
        ax.scatter([v[0]], [v[1]], marker="*", s=140, color=f"C{i + 4}", edgecolors="black", zorder=4,
                   label=f"fitness optimum, {label}")
    for setter, name, up in ((ax.set_xlabel, names[0], maximise[0]), (ax.set_ylabel, names[1], maximise[1])):
        setter(f"{name} ({'higher' if up else 'lower'} is better)")
    ax.legend(fontsize=7, loc="best")


def drawn(study: ParetoStudy) -> list[Drawn]:
    """The study's fronts as drawn (their first two criteria)."""
    return [Drawn(f.method, f.seed, f.values[:, :2], np.array([p.certified for p in f.points], bool))
            for f in study.fronts]


def draw_front(study: ParetoStudy, path: Path, title: str = "") -> Path:
    """Draw ``study`` to ``path`` (.png, .pdf or .svg); returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    medians = {f"{s.method} median of {s.n_seeds} seeds": s.values[:, :2] for s in study.surfaces
               if s.level == "median" and s.n_seeds > 1 and len(s.values)} if len(study.criteria) == 2 else {}
    draw_panel(ax, drawn(study), {k: v[:2] for k, v in study.powers.items()},
               [c.name for c in study.criteria[:2]], [c.maximise for c in study.criteria[:2]], medians)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
