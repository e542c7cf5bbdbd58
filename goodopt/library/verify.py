"""``goodopt library verify``: every row of a library re-checked, nothing in it trusted.

1. Files: each file the manifest lists has its sha256, and no file is there that it does not list.
2. Rows: each ``.solu`` row has its instance's files and a ``values.csv`` row saying the same; the stored
   answer is judged by :func:`goodopt.library.check.check` (feasible by the evaluator's rules, re-scored):
   its fitness must equal the =opt= / =best= value's (1e-9 relative) and lie within the bound.
3. With ``solve=True``, a fresh certified solve of each instance (``milp`` on HiGHS, or any method given)
   must reach the same optimum and never beat a bound.

A row that does not hold is reported by name with what failed; :func:`verify` returns them all.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ValidationError
from ..outputs import sha256_file
from ..outputs.names import MARKER
from .check import SOLU_NAME, check
from .solu import SoluEntry, read_solu

#: How close a re-scored fitness must be to a library value.
REL_TOL = 1e-9


@dataclass(frozen=True)
class Failure:
    """One thing in the library that does not hold: the row (instance) or file, and why."""

    where: str
    why: str

    def __str__(self) -> str:
        return f"{self.where}: {self.why}"


def verify(folder: str | Path, *, solve: bool = False, method: str = "milp",
           progress: Callable[[str], None] | None = None) -> list[Failure]:
    """Re-check the library in ``folder`` (see the module's docstring); returns what does not hold."""
    root = Path(folder)
    manifest_path = root / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text())
        files = dict(manifest["files"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValidationError("library", f"{root} has no readable manifest.json ({e})",
                              "pass a folder written by goodopt library build") from e
    failures = _files(root, files)
    entries = read_solu(root / SOLU_NAME)
    values = _values(root)
    for name, entry in entries.items():
        failures += _row(root, entry, values.get(name), solve, method)
        if progress is not None:
            progress(name)
    failures += [Failure(name, "values.csv has it but library.solu does not") for name in values
                 if name not in entries]
    return failures


def _files(root: Path, files: dict[str, str]) -> list[Failure]:
    out = []
    for rel, digest in sorted(files.items()):
        p = root / rel
        if not p.is_file():
            out.append(Failure(rel, "listed in the manifest but missing"))
        elif sha256_file(p) != digest:
            out.append(Failure(rel, "its sha256 is not the manifest's: the file was changed"))
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_file() and rel not in files and rel not in ("manifest.json", MARKER) and not p.name.startswith("."):
            out.append(Failure(rel, "not listed in the manifest"))
    return out


def _values(root: Path) -> dict[str, dict[str, str]]:
    try:
        with open(root / "values.csv", newline="") as f:
            return {r["name"]: r for r in csv.DictReader(f)}
    except OSError:
        return {}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b), 1e-300)


def _row(root: Path, entry: SoluEntry, row: dict[str, str] | None, solve: bool, method: str) -> list[Failure]:
    name = entry.name
    inst = root / "instances" / name
    answer = root / "answers" / f"{name}.json"
    if row is None:
        return [Failure(name, "library.solu has it but values.csv does not")]
    if entry.status not in ("opt", "best"):
        return []
    if row["status"] != entry.status or not _close(float(row["value"]), entry.value):
        return [Failure(name, f"library.solu says ={entry.status}= {entry.value!r}, values.csv "
                              f"{row['status']} {row['value']}")]
    if not answer.is_file():
        return [Failure(name, f"no stored answer {answer.relative_to(root)}")]
    rep = check(inst.with_suffix(".yaml"), answer)
    if not rep.feasible:
        return [Failure(name, f"the stored answer is infeasible: {rep.violation}")]
    out = []
    if not _close(rep.fitness, rep.library_fitness):
        out.append(Failure(name, f"the stored answer's fitness {rep.fitness!r} is not the library value's "
                                 f"{rep.library_fitness!r} (={entry.status}= {entry.value!r})"))
    if math.isfinite(rep.library_bound) and rep.fitness > rep.library_bound * (1 + REL_TOL) + 1e-300:
        out.append(Failure(name, f"the stored answer's fitness {rep.fitness!r} beats the library's bound "
                                 f"{rep.library_bound!r}"))
    if solve:
        out += _fresh(inst.with_suffix(".yaml"), name, method, entry, rep.library_fitness, rep.library_bound)
    return out


def _fresh(scenario: Path, name: str, method: str, entry: SoluEntry, value: float, bound: float) -> list[Failure]:
    from ..solvers import solve
    from ..sources import load_scenario

    res = solve(load_scenario(str(scenario)).problem(), method)
    if not res.has_solution:
        return [Failure(name, f"a fresh {method} solve found no answer ({res.status}: {res.message})")]
    if math.isfinite(bound) and res.fitness > bound * (1 + REL_TOL):
        return [Failure(name, f"a fresh {method} solve found fitness {res.fitness!r}, above the library's "
                              f"bound {bound!r}")]
    if entry.status == "opt" and res.status == "optimal" and not _close(res.fitness, value):
        return [Failure(name, f"a fresh {method} solve certified {res.fitness!r}, not the library's "
                              f"=opt= {value!r}")]
    if entry.status == "opt" and math.isfinite(res.bound) and res.bound < value * (1 - REL_TOL):
        return [Failure(name, f"a fresh {method} solve proved the bound {res.bound!r}, below the library's "
                              f"=opt= {value!r}")]
    return []
