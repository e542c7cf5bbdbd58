"""The checks every method's options class shares: whole numbers, seconds, choices, declared types, per-job
numbers and HiGHS's own options, each failing with an error that names the option and the fix."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from goodopt.errors import ValidationError
from goodopt.validation import MAX_WHOLE

from .mip_solvers.highs_run import accepts_option

#: Longest time limit accepted (about 11.6 days).
MAX_SECONDS = 1e6


#: Largest population of the genetic methods (a population is P x jobs x nodes whole numbers in memory).
MAX_POPULATION = 100_000


#: Most solver threads an option may ask for (HiGHS allocates its pool up front: 1e8 threads ended in
#: ``std::bad_alloc``).
MAX_THREADS = 1024


def whole(name: str, v: Any, lo: int, fix: str | None = None, none_ok: bool = False, hi: int = MAX_WHOLE) -> None:  # Any: a user's value, checked here
    if v is None and none_ok:
        return
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
        raise ValidationError(f"options.{name}", f"must be a whole number in [{lo}, {hi}], got {v!r}", fix)


def seconds(name: str, v: Any, fix: str | None = None) -> None:  # Any: a user's value, checked here
    if v is None:
        return
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= MAX_SECONDS:
        raise ValidationError(f"options.{name}", f"must be a number of seconds in (0, {MAX_SECONDS:.0e}], "
                              f"got {v!r}", fix)


def choice(name: str, v: Any, choices: Iterable[Any]) -> None:  # Any: a user's value and the allowed ones
    choices = tuple(choices)
    if v not in choices:
        close = difflib.get_close_matches(v, [c for c in choices if isinstance(c, str)], n=1) \
            if isinstance(v, str) else []
        raise ValidationError(f"options.{name}", f"must be one of {choices}, got {v!r}",
                              f"did you mean {close[0]!r}?" if close else None)


def job_numbers(name: str, value: Any, strict: bool) -> None:  # Any: a user's value, checked here
    """A mapping job name -> finite number (> 0 when ``strict``, else >= 0)."""
    if not isinstance(value, Mapping):
        raise ValidationError(f"options.{name}", f"must map job -> number, got {value!r}", "e.g. {job-0: 5000}")
    for job, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0 or (strict and v == 0):
            raise ValidationError(f"options.{name}.{job}", f"must be a finite number {'>' if strict else '>='} 0, "
                                  f"got {v!r}")


def check_solver(solver: Any, threads: int | None, solver_options: Any) -> None:  # Any: a user's values, checked here
    """A MILP solver goodopt knows (:data:`goodopt.solvers.mip_solvers.SOLVERS`), installed here, on threads it can
    use, with its own parameters as a mapping. Anything else -- a pyomo plug-in or a program's path
    (``asl:/path/prog``) above all -- is refused, from the command line and from a sweep spec alike."""
    from .mip_solvers import SOLVERS, missing

    choice("solver", solver, tuple(SOLVERS))
    why = missing(solver)
    if why is not None:
        raise ValidationError("options.solver", why, SOLVERS[solver].install)
    if threads is not None and threads > 1 and not SOLVERS[solver].multithreaded:
        raise ValidationError("options.threads", f"{solver} solves on one thread, got threads={threads}",
                              "omit threads (or give 1) with this solver")
    if not isinstance(solver_options, Mapping) or not all(isinstance(k, str) for k in solver_options):
        raise ValidationError("options.solver_options", f"must map parameter name -> value, got {solver_options!r}",
                              "e.g. {'limits/maxorigsol': 5} for SCIP, {MIPFocus: 1} for Gurobi")
    for key, value in solver_options.items():
        if not isinstance(value, (bool, int, float, str)):
            raise ValidationError(f"options.solver_options.{key}", f"must be a number, true/false or text, got "
                                  f"{value!r}")
    if solver_options and solver == "highs":
        raise ValidationError("options.solver_options", "HiGHS's own options are highs_options",
                              "give them as highs_options={...}")


def check_probe(probe: Any) -> None:  # Any: a user's value, checked here
    """``dive_probe``: ``auto``, ``none`` or a MILP solver installed here."""
    from .mip_solvers import SOLVERS, missing

    choice("dive_probe", probe, ("auto", "none", *SOLVERS))
    why = None if probe in ("auto", "none") else missing(probe)
    if why is not None:
        raise ValidationError("options.dive_probe", why, f"{SOLVERS[probe].install}, or give dive_probe='none'")


def check_highs_options(options: Any) -> None:  # Any: a user's values, checked here
    """Native HiGHS options: a mapping whose every name HiGHS knows and whose every value it accepts."""
    if not isinstance(options, Mapping):
        raise ValidationError("options.highs_options", f"must map HiGHS option -> value, got {options!r}",
                              "e.g. {presolve: 'off', mip_heuristic_effort: 0.1}")
    for key, value in options.items():
        try:
            ok = isinstance(key, str) and isinstance(value, (bool, int, float, str)) and accepts_option(key, value)
        except (TypeError, ValueError, RuntimeError):
            ok = False
        if not ok:
            raise ValidationError(f"options.highs_options.{key}", f"HiGHS does not accept {key}={value!r}",
                                  "see HiGHS's option list for its name, type and range")
