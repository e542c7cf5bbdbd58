"""Shared figure style: byte-stable saving, log axes with plain labels, one colour per method."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from goodopt.outputs import atomic_path  # noqa: E402
from goodopt.records import Record

#: The ten colours of matplotlib's "tab10" palette, in order.
TAB10: tuple[Any, ...] = tuple(cast(ListedColormap, plt.get_cmap("tab10")).colors)  # type: ignore[arg-type]

#: PDF metadata that would change from run to run (dates, versions) is left out: same table, same bytes.
PDF_META = {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None}

plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8, "svg.hashsalt": "goodopt",
                     "pdf.compression": 6})


def save(fig: Figure, out: Path, name: str) -> list[Path]:
    """Write ``name.png`` (130 dpi) and a byte-stable ``name.pdf`` under ``out``, each atomically; closes ``fig``."""
    png, pdf = out / f"{name}.png", out / f"{name}.pdf"
    try:
        with atomic_path(png) as tmp:
            fig.savefig(tmp, format="png", dpi=130, bbox_inches="tight", metadata={"Software": None})
        with atomic_path(pdf) as tmp:
            fig.savefig(tmp, format="pdf", bbox_inches="tight", metadata=PDF_META)
    finally:
        plt.close(fig)
    return [png, pdf]


def plain_log(ax: Axes, axis: str = "both") -> None:
    """Log axis with plain major labels and unlabeled minor ticks (no overlapping text)."""
    for a in ([ax.xaxis, ax.yaxis] if axis == "both" else [getattr(ax, f"{axis}axis")]):
        lo, hi = a.get_view_interval()
        wide = hi / max(lo, 1e-12) > 300  # more than ~2.5 decades: label only powers of ten
        a.set_major_locator(LogLocator(base=10, subs=(1.0,) if wide else (1.0, 2.0, 5.0)))
        powers = lo < 1e-3 or hi >= 1e5  # one style per axis: all plain, or all powers of ten
        a.set_major_formatter(FuncFormatter(lambda v, _, powers=powers: tick_label(v, powers)))
        a.set_minor_formatter(NullFormatter())


def tick_label(v: float, powers: bool = False) -> str:
    """A log-axis tick: a plain number (``0.01``, ``1,000``), or with ``powers`` a power of ten (``10^5``)."""
    if v <= 0:
        return "0"
    if not powers:
        return f"{v:,.0f}" if v >= 1 and float(v).is_integer() else f"{v:g}"
    exp = math.floor(math.log10(v) + 1e-9)
    mant = v / 10 ** exp
    return f"$10^{{{exp}}}$" if abs(mant - 1) < 1e-9 else f"${mant:g}\\times10^{{{exp}}}$"


def colours(labels: Iterable[str]) -> Record:  # label -> a matplotlib colour
    """A fixed colour per label, in the given order (tab10)."""
    cmap = TAB10
    return {lab: cmap[i % len(cmap)] for i, lab in enumerate(labels)}


def markers(labels: Iterable[str]) -> dict[str, str]:
    """A fixed marker per label, in the given order."""
    return {lab: "osD^vP*Xh<>"[i % 11] for i, lab in enumerate(labels)}
