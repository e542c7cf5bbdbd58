"""Solution files of MILP solvers, read as column values by name.

The formats, each told by its own marks:

- HiGHS (``writeSolution`` / ``--solution_file``, its raw style): ``# Columns N`` then ``N`` lines ``name value``
  (``Objective V`` above them);
- CBC (``-solution FILE``): a first line ``STATUS - objective value V``, then ``index name value cost`` (a
  leading ``**`` marks a value CBC itself finds infeasible; with ``-printingOptions all`` the rows come first,
  and are told apart by their names);
- SCIP (``write solution``) and Gurobi (``.sol``): ``name value`` lines under a header (``objective value: V``,
  ``# Objective value = V``); SCIP leaves out zeros, and so does CBC.

A column a file does not list is 0. Nothing in a file is trusted: the values are checked against the model
(:mod:`goodopt.solvers.milp.answers`) and the allocation they map to is re-scored by the evaluator.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from goodopt.errors import ValidationError


@dataclass(frozen=True)
class SolutionFile:
    """Values by name as a file gives them, the format it was read as and the objective it claims (NaN if
    none)."""

    values: dict[str, float]
    format: str
    claimed_objective: float


_CBC_HEAD = re.compile(r"^(?P<status>.*?) - objective value (?P<obj>\S+)")
_CLAIMS = (re.compile(r"^Objective\s+(\S+)$"), re.compile(r"^objective value:\s*(\S+)"),
           re.compile(r"^#\s*Objective value\s*=\s*(\S+)"))


def read_solution(path: str | Path) -> SolutionFile:
    """The values a solution file of HiGHS, CBC, SCIP or Gurobi gives (see the module's docstring)."""
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ValidationError("answer", f"cannot read the solution file {p}: {e}",
                              "pass a solution file a solver wrote for the exported model") from e
    if any(line.startswith("# Columns ") for line in lines):
        return _highs(lines, p)
    if lines and _CBC_HEAD.match(lines[0]):
        return _pairs(lines[1:], p, "cbc", _number(_CBC_HEAD.match(lines[0])["obj"]), cbc=True)  # type: ignore[index]
    claimed = next((_number(m[1]) for line in lines[:5] for pat in _CLAIMS if (m := pat.match(line.strip()))),
                   math.nan)
    fmt = "gurobi" if any(line.startswith("# Objective value") for line in lines[:5]) else "scip"
    return _pairs(lines, p, fmt, claimed)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _highs(lines: list[str], p: Path) -> SolutionFile:
    start = next(i for i, line in enumerate(lines) if line.startswith("# Columns "))
    n = int(lines[start].split()[2])
    claimed = next((_number(m[1]) for line in lines[:start] if (m := _CLAIMS[0].match(line.strip()))), math.nan)
    return _pairs(lines[start + 1:start + 1 + n], p, "highs", claimed)


def _pairs(lines: list[str], p: Path, fmt: str, claimed: float, cbc: bool = False) -> SolutionFile:
    values: dict[str, float] = {}
    for number, line in enumerate(lines, 1):
        tokens = line.split()
        if not tokens or tokens[0].startswith("#") or line.startswith(("objective value", "solution status")):
            continue
        if cbc:
            tokens = tokens[1:] if tokens[0] == "**" else tokens
            tokens = tokens[1:]  # the index
        if len(tokens) < 2:
            raise ValidationError("answer", f"{p}: line {number} {line!r} is not 'name value'",
                                  "pass the solver's solution file unchanged")
        value = _number(tokens[1])
        if not math.isfinite(value):
            raise ValidationError("answer", f"{p}: {tokens[0]} has value {tokens[1]!r}, not a finite number",
                                  "pass the solver's solution file unchanged")
        if tokens[0] in values:
            raise ValidationError("answer", f"{p}: {tokens[0]} is given twice",
                                  "pass the solver's solution file unchanged")
        values[tokens[0]] = value
    return SolutionFile(values=values, format=fmt, claimed_objective=claimed)
