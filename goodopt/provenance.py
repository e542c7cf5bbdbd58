"""Where a result was made: the machine, the date and the code, stamped on every benchmark table.

A number in the documentation is rendered from a table that carries this
stamp, so a reader can tell which machine, day and commit it belongs to.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from pathlib import Path

from ._version import __version__

_REPO = Path(__file__).resolve().parents[1]


def commit() -> str:
    """The git commit goodopt runs from, with ``+changes`` when its files differ from it; ``unknown`` outside a
    checkout (an installed wheel, say)."""
    try:
        head = subprocess.run(["git", "-C", str(_REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(_REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}+changes" if dirty else head


def machine() -> str:
    """The machine in words: host, architecture, core count and processor model."""
    return (f"{platform.node()} ({platform.machine()}, {os.cpu_count()} cores, {_cpu_model()}), "
            f"Python {platform.python_version()}")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def stamp() -> dict[str, str]:
    """``machine``, ``date`` (UTC, ISO 8601), ``commit`` and ``goodopt_version`` of a result made now."""
    return {"machine": machine(), "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "commit": commit(), "goodopt_version": __version__}
