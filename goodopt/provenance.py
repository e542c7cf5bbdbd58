"""Where a result was made: the machine, the date and the code, stamped on every benchmark table.

A number in the documentation is rendered from a table that carries this
stamp, so a reader can tell which machine, day and commit it belongs to.

:func:`math_paths` names the floating-point code a result went through: the instruction set numpy's
``exp``, ``log`` and ``power`` dispatch to, the BLAS library and the kernels it picked for this processor,
the C library (whose ``exp``/``log``/``pow`` also pick a variant by processor). Each is chosen at run time
by the processor, and each rounds the last bit differently: with the same lock, a simulation whose agents fit
their models (L-BFGS-B, whose linear algebra is BLAS) and whose policy compares near-equal fitness values can
take another path on another processor. Every table's metadata carries these paths, so two runs' rows can
be compared knowing whether they ran on the same arithmetic.
"""

from __future__ import annotations

import datetime as _dt
import functools
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


@functools.lru_cache(maxsize=1)
def math_paths() -> str:
    """The processor-dependent arithmetic of this process in words (module docstring), for example
    ``numpy exp/log/power: X86_V4; BLAS: openblas 0.3.31 (Haswell); libc: glibc 2.36; CPU: avx2 avx512f fma``.
    A part that cannot be read says ``unknown``."""
    parts = [f"numpy exp/log/power: {_numpy_targets()}", f"BLAS: {_blas()}",
             f"libc: {' '.join(platform.libc_ver()) or 'unknown'}"
             + (f" ({os.environ['GLIBC_TUNABLES']})" if os.environ.get("GLIBC_TUNABLES") else ""),
             f"CPU: {_cpu_flags()}"]
    return "; ".join(parts)


def _numpy_targets() -> str:
    try:
        from numpy.lib.introspect import opt_func_info

        info = opt_func_info(func_name="^(exp|log|power)$", signature="float64")
        targets = sorted({sig["current"] for per in info.values() for sig in per.values()})
    except (ImportError, AttributeError, KeyError, TypeError, ValueError):
        return "unknown"
    return "/".join(targets) or "unknown"


def _blas() -> str:
    try:
        import numpy  # noqa: F401  (numpy's and scipy's BLAS loaded, so that both are listed)
        import scipy.linalg  # noqa: F401
        from threadpoolctl import threadpool_info

        libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    except (ImportError, OSError, RuntimeError):
        return "unknown"
    # sorted: threadpoolctl lists the loaded libraries in no fixed order from one process to the next
    return ", ".join(sorted(f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')})"
                            for i in libs)) or "unknown"


def _cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                have = set(line.split(":", 1)[1].split())
                return " ".join(f for f in ("avx2", "avx512f", "fma", "asimd", "sve") if f in have) or "none"
    except OSError:
        pass
    return platform.machine() or "unknown"


def stamp() -> dict[str, str]:
    """``machine``, ``math`` (:func:`math_paths`), ``date`` (UTC, ISO 8601), ``commit`` and ``goodopt_version``
    of a result made now."""
    return {"machine": machine(), "math": math_paths(),
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"), "commit": commit(),
            "goodopt_version": __version__}
