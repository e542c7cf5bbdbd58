"""The front figure: the exact front (certified points filled, others hollow), the heuristic fronts, and the
optimum of the fitness at each paper's p, on the first two criteria's axes."""

from __future__ import annotations

from pathlib import Path

from .study import ParetoStudy

MARKERS = {"nsga2": "^", "nsga3": "s", "moead": "D"}


def draw_front(study: ParetoStudy, path: Path, title: str = "") -> Path:
    """Draw ``study`` to ``path`` (.png, .pdf or .svg); returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    x_name, y_name = study.criteria[0].name, study.criteria[1].name
    for front in study.fronts:
        v = front.values
        if front.method == "exact":
            ok = [p.certified for p in front.points]
            ax.plot(v[:, 0], v[:, 1], "-", color="black", lw=1, zorder=2)
            ax.scatter(v[ok, 0], v[ok, 1], color="black", s=22, zorder=3, label="exact (certified)")
            if not all(ok):
                bad = [not c for c in ok]
                ax.scatter(v[bad, 0], v[bad, 1], facecolors="none", edgecolors="black", s=30, zorder=3,
                           label="exact (limit hit)")
        else:
            ax.scatter(v[:, 0], v[:, 1], marker=MARKERS.get(front.method, "o"), s=16, alpha=0.6,
                       label=f"{front.method} seed {front.seed}")
    for i, (label, values) in enumerate(study.powers.items()):
        ax.scatter([values[0]], [values[1]], marker="*", s=140, color=f"C{i + 4}", edgecolors="black", zorder=4,
                   label=f"fitness optimum, {label}")
    ax.set_xlabel(f"{x_name} (higher is better)")
    direction = "higher" if study.criteria[1].maximise else "lower"
    ax.set_ylabel(f"{y_name} ({direction} is better)")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
